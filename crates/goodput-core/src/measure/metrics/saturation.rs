//! Saturation, detected and said in words — both ways: every point whose
//! queue grows is flagged, however long its requests take relative to the
//! point, and no point is flagged because the client machine was busy or a
//! Poisson sample bunched up.
//!
//! A point is **saturated** when either queue signal shows growth:
//!
//! - **Requests waiting for a first token pile up.** Each request counts as
//!   waiting from its send to its first token (or its end without one):
//!   outside the server, that is the server's queue (a continuous-batching
//!   engine admits a request and starts its prefill, or it waits). Its mean
//!   over the last third of the sending window is compared with the first
//!   third; growth must be material (≥ 5 requests and ≥ 4 × the square root
//!   of the first third's level, so a Poisson fluctuation of a small queue
//!   is not growth) and large (the last third at least twice the first, plus
//!   2). It needs no completion and no fill time: past capacity the queue
//!   grows from the first second, so a 6 s point at twice capacity is
//!   caught as surely as a 30 s one, while a point whose requests are long
//!   but served at once (long answers) has a short, flat queue.
//! - **Requests stay longer and longer in flight** (the engine admits
//!   everything and slows every request down, so nothing waits for a first
//!   token): each block's mean in-flight count divided by its arrivals
//!   per second is, by Little's law, the time a request spends in the
//!   system, and it must rise — an ordinary least-squares slope over the
//!   block means whose 95 % interval excludes zero and whose rise over the
//!   window is material (at least 20 % of the level and 5 ms). In-flight
//!   counts alone would mistake a burst of arrivals for saturation. The
//!   window starts once the pipeline has filled twice (fastest
//!   TTFT + median generation, twice: a request's time in flight grows with
//!   the batch, which grows for one more time in flight) and ends at the
//!   last send; it must hold at least [`MIN_TREND_BLOCKS`] blocks, so a
//!   short exploring point is judged by its waiting queue alone. A block
//!   is one fill in whole seconds, at least 1 ([`block_seconds`]).
//!
//! Two more findings are reported, neither of which is saturation:
//! **sending fell behind the schedule** (the achieved send rate below 95 %
//! of the rate the run's *own* seeded schedule intended: the client or
//! `--max-concurrency` held requests back, see schedule lag), and **TTFT
//! rose through the run** (a trend in block means, as above). The TTFT
//! trend used to decide saturation; it also rises with longer prompts late
//! in a run, with CPU contention on the client, or with one late burst of a
//! short Poisson sample (it flagged a point at 62 % of capacity), so it is
//! now said, not concluded from. The collector adds a third saturation
//! signal: most requests still running when the run ended.

use serde::{Deserialize, Serialize};

/// An OLS slope with its 95 % interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Slope {
    /// Units of y per second.
    pub per_s: f64,
    pub lo: f64,
    pub hi: f64,
    /// The fitted rise over the window (slope × window length).
    pub rise: f64,
    /// The series' mean over the window.
    pub level: f64,
    pub points: usize,
}

/// Whole blocks the in-flight trend needs before it can call a point
/// saturated.
pub const MIN_TREND_BLOCKS: usize = 6;

/// Means of the points in each whole block of `block_s` seconds of the
/// window, each at its block's middle.
pub fn blocks(points: &[(f64, f64)], window: (f64, f64), block_s: f64) -> Vec<(f64, f64)> {
    let n = ((window.1 - window.0).max(0.0) / block_s).floor() as usize;
    let mut sums = vec![(0.0, 0usize); n];
    for &(x, y) in points {
        if x < window.0 {
            continue;
        }
        if let Some(b) = sums.get_mut(((x - window.0) / block_s) as usize) {
            b.0 += y;
            b.1 += 1;
        }
    }
    sums.iter()
        .enumerate()
        .filter(|(_, b)| b.1 > 0)
        .map(|(i, b)| (window.0 + (i as f64 + 0.5) * block_s, b.0 / b.1 as f64))
        .collect()
}

/// The sum of the points' y in each whole block of `block_s` seconds of
/// the window (one entry per block, zeros included).
pub fn block_sums(points: &[(f64, f64)], window: (f64, f64), block_s: f64) -> Vec<f64> {
    let n = ((window.1 - window.0).max(0.0) / block_s).floor() as usize;
    let mut sums = vec![0.0; n];
    for &(x, y) in points {
        if x >= window.0 {
            if let Some(b) = sums.get_mut(((x - window.0) / block_s) as usize) {
                *b += y;
            }
        }
    }
    sums
}

/// Fit y = a + b·x; None with fewer than 4 points or no spread in x.
pub fn slope(points: &[(f64, f64)]) -> Option<Slope> {
    let n = points.len();
    if n < 4 {
        return None;
    }
    let nf = n as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / nf;
    let my = points.iter().map(|p| p.1).sum::<f64>() / nf;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let b = sxy / sxx;
    let a = my - b * mx;
    let residuals: Vec<f64> = points.iter().map(|p| p.1 - a - b * p.0).collect();
    let rss: f64 = residuals.iter().map(|r| r * r).sum();
    // Neighbouring blocks are alike (a queue near capacity wanders for many
    // seconds): with the residuals' lag-1 autocorrelation ρ > 0 the slope's
    // variance is (1 + ρ)/(1 − ρ) times the independent one and the blocks
    // count as n (1 − ρ)/(1 + ρ) (AR(1) errors). Read as independent, a
    // wandering queue at 80–95 % of capacity looked like a rising one in 5–17 %
    // of 40 s points (virtual time, the README's deployment).
    let lag1: f64 = residuals.windows(2).map(|w| w[0] * w[1]).sum();
    let rho = if rss > 0.0 {
        (lag1 / rss).clamp(0.0, 0.9)
    } else {
        0.0
    };
    let inflate = (1.0 + rho) / (1.0 - rho);
    let se = (rss / (nf - 2.0) / sxx * inflate).sqrt();
    // Student t at 97.5 % on the effective blocks' degrees of freedom.
    let effective = ((nf / inflate).floor() as usize).max(3);
    let t = crate::measure::stats::t_975(effective - 2);
    let (x0, x1) = points.iter().fold((f64::MAX, f64::MIN), |(lo, hi), p| {
        (lo.min(p.0), hi.max(p.0))
    });
    Some(Slope {
        per_s: b,
        lo: b - t * se,
        hi: b + t * se,
        rise: b * (x1 - x0),
        level: my,
        points: n,
    })
}

impl Slope {
    /// Rising, significantly and materially (see the module comment).
    pub fn rising(&self, min_abs_rise: f64) -> bool {
        self.lo > 0.0 && self.rise >= (0.2 * self.level.abs()).max(min_abs_rise)
    }
}

/// What a run's saturation checks found.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Saturation {
    /// Arrivals per second the run's own schedule intended (open loop).
    pub intended_rate: Option<f64>,
    /// Achieved send rate / intended rate (open loop).
    pub send_ratio: Option<f64>,
    /// Slope of the residence time (mean in flight / arrivals per second), s per s.
    pub in_flight_slope: Option<Slope>,
    pub ttft_slope: Option<Slope>,
    pub behind_schedule: bool,
    /// Mean requests waiting for a first token over the first and the last
    /// third of the sending window.
    #[serde(default)]
    pub waiting: Option<(f64, f64)>,
    /// The waiting queue grew through the sending window.
    #[serde(default)]
    pub queue_growing: bool,
    pub in_flight_rising: bool,
    /// TTFT rose through the run: reported, not saturation on its own.
    pub ttft_rising: bool,
    /// Queues grew through the run: the server (or a cap) could not keep up.
    pub saturated: bool,
    /// What was found, in words.
    pub findings: Vec<String>,
}

/// What the checks read; series are (bucket start s, value) pairs.
#[derive(Debug, Clone, Copy, Default)]
pub struct Inputs<'a> {
    /// The run's own schedule's rate, and the achieved send rate (open loop).
    pub intended_rate: Option<f64>,
    pub achieved_rate: Option<f64>,
    /// Requests in flight.
    pub in_flight: &'a [(f64, f64)],
    /// Requests sent and still waiting for their first token.
    pub waiting: &'a [(f64, f64)],
    /// Sends per bucket.
    pub sends: &'a [(f64, f64)],
    /// (send s, TTFT ms) of requests.
    pub ttft: &'a [(f64, f64)],
    /// The window the trends are fitted over (after the fill).
    pub window: (f64, f64),
    /// The whole sending window (first send to last send).
    pub sending: (f64, f64),
    /// The trends' block length, seconds: whole seconds of one fill of the
    /// pipeline, at least 1 ([`block_seconds`]).
    pub block_s: f64,
}

/// The trends' block length for a pipeline that fills in `fill_s`: its
/// whole seconds, at least 1. A request's time in flight is how long the
/// count in flight remembers; blocks shorter than it are alike far past
/// their neighbours (on a server 20 times slower than the README's, 1 s
/// blocks of 20 s answers called a third of the points at 85 % of its
/// goodput saturated, the slope's lag-1 correction capped at 0.9).
pub fn block_seconds(fill_s: f64) -> f64 {
    if fill_s.is_finite() {
        fill_s.floor().max(1.0)
    } else {
        1.0
    }
}

/// Growth of the waiting queue: (first third's mean, last third's mean),
/// when the sending window has at least 1.5 s.
fn waiting_thirds(waiting: &[(f64, f64)], sending: (f64, f64)) -> Option<(f64, f64)> {
    let (a, b) = sending;
    let third = (b - a) / 3.0;
    if third < 0.5 {
        return None;
    }
    let mean = |lo: f64, hi: f64| {
        let v: Vec<f64> = waiting
            .iter()
            .filter(|p| p.0 >= lo && p.0 < hi)
            .map(|p| p.1)
            .collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    };
    Some((mean(a, a + third)?, mean(b - third, b)?))
}

/// Run the checks (see the module comment).
pub fn assess(i: &Inputs) -> Saturation {
    let mut s = Saturation {
        intended_rate: i.intended_rate,
        ..Default::default()
    };
    if let (Some(want), Some(a)) = (i.intended_rate, i.achieved_rate) {
        if want.is_finite() && want > 0.0 {
            let ratio = a / want;
            s.send_ratio = Some(ratio);
            if ratio < 0.95 {
                s.behind_schedule = true;
                s.findings.push(format!(
                    "sending fell behind the schedule: {a:.2} req/s sent of the {want:.2} req/s this run's own schedule intended ({:.0}%): the client or --max-concurrency held requests back (see schedule lag)",
                    ratio * 100.0
                ));
            }
        }
    }
    if let Some((first, last)) = waiting_thirds(i.waiting, i.sending) {
        s.waiting = Some((first, last));
        let grew = last - first;
        if grew >= 5.0_f64.max(4.0 * (first + 1.0).sqrt()) && last >= 2.0 * first + 2.0 {
            s.queue_growing = true;
            s.findings.push(format!(
                "the queue grew: requests waiting for their first token rose from {first:.1} to {last:.1} on average between the first and the last third of the sending window: the server is not keeping up with the offered load"
            ));
        }
    }
    // Per 1 s block: mean in flight / sends in the block (= arrivals per
    // second) is the mean time in the system (Little's law). (Over a
    // trailing window of one fill instead, the divisor was too noisy at low
    // rates: 4 arrivals a second flagged a point at 16 % of capacity.)
    let window = i.window;
    let block_s = if i.block_s >= 1.0 { i.block_s } else { 1.0 };
    let arrivals = block_sums(i.sends, window, block_s);
    let residence: Vec<(f64, f64)> = blocks(i.in_flight, window, block_s)
        .into_iter()
        .filter_map(|(x, l)| {
            // Pair each block with its own arrivals (by its index).
            let a = *arrivals.get(((x - window.0) / block_s) as usize)?;
            (a >= 2.0).then_some((x, l * block_s / a))
        })
        .collect();
    s.in_flight_slope = slope(&residence);
    s.ttft_slope = slope(&blocks(i.ttft, window, block_s));
    // A trend needs blocks enough to be one: over 4 or 5 the approach to
    // the steady batch reads as growth (a point at 55 % of capacity did).
    if let Some(sl) = s
        .in_flight_slope
        .filter(|sl| sl.points >= MIN_TREND_BLOCKS && sl.rising(0.005))
    {
        s.in_flight_rising = true;
        s.findings.push(format!(
            "requests stayed longer and longer in flight (in flight / arrivals per second rose {:.2} s over {:.1} s, from a mean of {:.2} s): the server is not keeping up with the offered load",
            sl.rise,
            window.1 - window.0,
            sl.level
        ));
    }
    if let Some(sl) = s.ttft_slope.filter(|sl| sl.rising(5.0)) {
        s.ttft_rising = true;
        s.findings.push(format!(
            "TTFT rose through the run (+{:.0} ms over {:.1} s, slope {:.1} ms/s [{:.1}, {:.1}]); the queue did not grow, so longer prompts, a busy client or a late burst of arrivals are as likely as the server",
            sl.rise,
            window.1 - window.0,
            sl.per_s,
            sl.lo,
            sl.hi
        ));
    }
    s.saturated = s.queue_growing || s.in_flight_rising;
    if s.saturated && s.ttft_rising {
        // The TTFT trend is then the queue's; say it once, as the queue.
        if let Some(f) = s.findings.last_mut() {
            *f = format!(
                "TTFT rose through the run (+{:.0} ms over {:.1} s) as the queue grew",
                s.ttft_slope.map_or(0.0, |sl| sl.rise),
                window.1 - window.0
            );
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slopes_of_known_lines() {
        let pts: Vec<(f64, f64)> = (0..50)
            .map(|i| (i as f64 * 0.1, 3.0 + 2.0 * i as f64 * 0.1))
            .collect();
        let s = slope(&pts).unwrap();
        assert!((s.per_s - 2.0).abs() < 1e-9 && (s.rise - 9.8).abs() < 1e-9);
        assert!(s.lo <= 2.0 && s.hi >= 2.0);
        assert!(slope(&pts[..3]).is_none());
        let b = blocks(&pts, (0.0, 5.0), 1.0);
        assert_eq!(b.len(), 5);
        assert!((b[0].1 - 3.9).abs() < 1e-9, "{b:?}");
        // Blocks of 2.5 s: two, their means and middles.
        let b = blocks(&pts, (0.0, 5.0), 2.5);
        assert_eq!(b.len(), 2);
        assert!(
            (b[0].0 - 1.25).abs() < 1e-9 && (b[0].1 - 5.4).abs() < 1e-9,
            "{b:?}"
        );
        assert_eq!(block_sums(&pts, (0.0, 5.0), 2.5).len(), 2);
        assert_eq!((block_seconds(0.4), block_seconds(23.7)), (1.0, 23.0));
    }

    /// The slope's interval is Student's t for n − 2 degrees of freedom,
    /// the one table of [`crate::measure::stats::t_975`] (past 10 degrees of freedom
    /// too, where a rougher approximation used to stand in).
    #[test]
    fn the_slope_interval_uses_the_one_t_quantile() {
        for n in [5usize, 12, 22, 60] {
            // A line with alternating noise of ±0.5.
            let pts: Vec<(f64, f64)> = (0..n)
                .map(|i| {
                    (
                        i as f64,
                        1.0 + 0.3 * i as f64 + if i % 2 == 0 { 0.5 } else { -0.5 },
                    )
                })
                .collect();
            let s = slope(&pts).unwrap();
            let nf = n as f64;
            let mx = (nf - 1.0) / 2.0;
            let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
            let a = pts.iter().map(|p| p.1).sum::<f64>() / nf - s.per_s * mx;
            let rss: f64 = pts.iter().map(|p| (p.1 - a - s.per_s * p.0).powi(2)).sum();
            let se = (rss / (nf - 2.0) / sxx).sqrt();
            let t = (s.hi - s.per_s) / se;
            assert!(
                (t - crate::measure::stats::t_975(n - 2)).abs() < 1e-9,
                "n {n}: t {t}"
            );
            assert!((s.per_s - s.lo - (s.hi - s.per_s)).abs() < 1e-12);
        }
        assert_eq!(crate::measure::stats::t_975(20), 2.086);
    }

    fn inputs<'a>(
        in_flight: &'a [(f64, f64)],
        waiting: &'a [(f64, f64)],
        sends: &'a [(f64, f64)],
        ttft: &'a [(f64, f64)],
        window: (f64, f64),
    ) -> Inputs<'a> {
        Inputs {
            intended_rate: Some(10.0),
            achieved_rate: Some(10.0),
            in_flight,
            waiting,
            sends,
            ttft,
            window,
            sending: window,
            block_s: 1.0,
        }
    }

    fn series(n: usize, mut f: impl FnMut(usize) -> f64) -> Vec<(f64, f64)> {
        (0..n).map(|i| (i as f64 * 0.1, f(i))).collect()
    }

    /// Flat noisy series are not saturation, even long; a TTFT trend alone
    /// is a finding, not saturation; a growing queue is.
    #[test]
    fn flat_noise_is_not_saturation_and_a_growing_queue_is() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        let mut false_alarms = 0;
        for _ in 0..200 {
            let flat = series(600, |_| 20.0 + rng.random_range(-5.0..5.0));
            let waiting = series(600, |_| rng.random_range(0..6) as f64);
            let ttft = series(600, |_| 100.0 + rng.random_range(-30.0..30.0));
            let sends = series(600, |_| 1.0);
            if assess(&inputs(&flat, &waiting, &sends, &ttft, (0.0, 60.0))).saturated {
                false_alarms += 1;
            }
        }
        assert_eq!(false_alarms, 0);
        let growing = series(100, |i| 10.0 + i as f64 * 0.5);
        let waiting = series(100, |i| i as f64 * 0.4);
        let ttft = series(100, |i| 100.0 + i as f64 * 20.0);
        let sends = series(100, |_| 1.0);
        let s = assess(&inputs(&growing, &waiting, &sends, &ttft, (0.0, 10.0)));
        assert!(
            s.saturated && s.queue_growing && s.in_flight_rising && s.ttft_rising,
            "{s:?}"
        );
        assert_eq!(s.findings.len(), 3, "{:?}", s.findings);
        assert!(
            s.findings[2].contains("as the queue grew"),
            "{:?}",
            s.findings
        );
        // TTFT rising with a flat queue and flat residence: said, not concluded.
        let flat = series(100, |_| 10.0);
        let waiting = series(100, |_| 2.0);
        let s = assess(&inputs(&flat, &waiting, &sends, &ttft, (0.0, 10.0)));
        assert!(!s.saturated && s.ttft_rising, "{s:?}");
        assert!(s.findings[0].contains("busy client"), "{:?}", s.findings);
    }

    /// Past capacity the waiting queue grows from the first second: a 6 s
    /// point at twice capacity (12 req/s more than served) is flagged as
    /// surely as a 30 s one, with no completion needed.
    #[test]
    fn a_queue_growing_past_capacity_is_caught_in_short_and_long_points() {
        for secs in [6usize, 30] {
            let n = secs * 10;
            let waiting = series(n, |i| 1.2 * i as f64);
            let s = assess(&Inputs {
                waiting: &waiting,
                sending: (0.0, secs as f64),
                ..Default::default()
            });
            assert!(s.saturated && s.queue_growing, "{secs} s: {s:?}");
        }
        // Half a request a second more than served, over 6 s: not yet
        // distinguishable from a fluctuation; over 60 s it is.
        let slow = |secs: usize| {
            let waiting = series(secs * 10, |i| 2.0 + 0.05 * i as f64);
            assess(&Inputs {
                waiting: &waiting,
                sending: (0.0, secs as f64),
                ..Default::default()
            })
            .queue_growing
        };
        assert!(!slow(6) && slow(60));
    }

    /// Arrivals bunched at the end of a run raise the in-flight count but not
    /// the time requests spend in flight, and a late burst of a few waiting
    /// requests is not a growing queue: not saturation.
    #[test]
    fn a_burst_of_arrivals_is_not_saturation() {
        // 10 blocks; arrivals per block rise from 5 to 14, each request stays 1 s.
        let sends = series(100, |i| (5.0 + (i / 10) as f64) / 10.0);
        let in_flight = series(100, |i| 5.0 + (i / 10) as f64);
        let waiting = series(100, |i| if i >= 80 { 6.0 } else { 2.0 });
        let ttft = series(100, |i| 100.0 + (i % 3) as f64);
        let s = assess(&inputs(&in_flight, &waiting, &sends, &ttft, (0.0, 10.0)));
        assert!(!s.saturated, "{s:?}");
    }

    #[test]
    fn behind_schedule_is_judged_against_the_schedules_own_rate() {
        // The nominal rate was 0.16/s but the seeded schedule itself ran at 0.143/s.
        let judged = |want: f64, got: f64| {
            assess(&Inputs {
                intended_rate: Some(want),
                achieved_rate: Some(got),
                ..Default::default()
            })
        };
        assert!(!judged(0.143, 0.1428).behind_schedule);
        let s = judged(100.0, 80.0);
        assert!(
            s.behind_schedule && !s.saturated && s.findings[0].contains("80%"),
            "{:?}",
            s.findings
        );
    }
}
