//! Saturation, detected and said in words — without false alarms.
//!
//! Three signals per run, each judged against the right baseline:
//!
//! - **Sending fell behind the schedule**: the achieved send rate against the
//!   rate the run's *own* seeded schedule intended (its t_sched times), not
//!   the nominal `--request-rate`: a Poisson schedule of 32 arrivals at
//!   0.16/s may itself run at 0.143/s, and that is sampling, not lag.
//!   Flagged below 95 %.
//! - **Requests staying longer in flight** and **TTFT rising** through the
//!   run. In-flight requests alone would mistake a burst of arrivals for
//!   saturation (a Poisson sample bunched at the end of a short run raises
//!   them too), so each block's mean in-flight count is divided by the
//!   block's arrivals per second — by Little's law, the time a request
//!   spends in the system — and it is that residence time that must rise;
//!   blocks with fewer than 2 sends are skipped. Each trend is an
//!   ordinary least-squares slope over time whose 95 % interval excludes
//!   zero *and* whose rise over the window is material (at least 20 % of the
//!   level, and 2 requests or 5 ms), so that a long stable run, where any
//!   tiny slope is "significant", is not flagged. The window starts once the
//!   pipeline has filled (first send + median E2EL) and ends at the last
//!   send: the fill at the start and the drain at the end are not trends.
//!   A queue that grows without bound (past capacity) shows both.
//!   Both series are first averaged over 1-second blocks and the slope is
//!   fitted to the block means: neighbouring requests' latencies are
//!   correlated (they queue together), which would make a per-request fit's
//!   interval far too narrow; block means are close to independent. At least
//!   4 blocks are needed, else no trend is judged.

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

/// Means of the points in each whole 1-second block of the window.
pub fn blocks(points: &[(f64, f64)], window: (f64, f64)) -> Vec<(f64, f64)> {
    let n = (window.1 - window.0).max(0.0).floor() as usize;
    let mut sums = vec![(0.0, 0usize); n];
    for &(x, y) in points {
        if x < window.0 {
            continue;
        }
        if let Some(b) = sums.get_mut((x - window.0) as usize) {
            b.0 += y;
            b.1 += 1;
        }
    }
    sums.iter()
        .enumerate()
        .filter(|(_, b)| b.1 > 0)
        .map(|(i, b)| (window.0 + i as f64 + 0.5, b.0 / b.1 as f64))
        .collect()
}

/// The sum of the points' y in each whole 1-second block of the window
/// (one entry per block, zeros included).
pub fn block_sums(points: &[(f64, f64)], window: (f64, f64)) -> Vec<f64> {
    let n = (window.1 - window.0).max(0.0).floor() as usize;
    let mut sums = vec![0.0; n];
    for &(x, y) in points {
        if x >= window.0 {
            if let Some(b) = sums.get_mut((x - window.0) as usize) {
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
    let rss: f64 = points.iter().map(|p| (p.1 - a - b * p.0).powi(2)).sum();
    let se = (rss / (nf - 2.0) / sxx).sqrt();
    // Student t at 97.5 % for n − 2 degrees of freedom.
    const T975: [f64; 10] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    ];
    let df = n - 2;
    let t = T975.get(df - 1).copied().unwrap_or(1.96 + 2.4 / df as f64);
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
    pub in_flight_rising: bool,
    pub ttft_rising: bool,
    /// Queues grew through the run: the server (or a cap) could not keep up.
    pub saturated: bool,
    /// What was found, in words.
    pub findings: Vec<String>,
}

/// Inputs: the schedule's intended rate and the achieved one (open loop);
/// the in-flight series (bucket start s, count); (send s, TTFT ms) pairs;
/// the window to fit over.
pub fn assess(
    intended_rate: Option<f64>,
    achieved_rate: Option<f64>,
    in_flight: &[(f64, f64)],
    sends: &[(f64, f64)],
    ttft: &[(f64, f64)],
    window: (f64, f64),
) -> Saturation {
    let mut s = Saturation {
        intended_rate,
        ..Default::default()
    };
    if let (Some(i), Some(a)) = (intended_rate, achieved_rate) {
        if i.is_finite() && i > 0.0 {
            let ratio = a / i;
            s.send_ratio = Some(ratio);
            if ratio < 0.95 {
                s.behind_schedule = true;
                s.findings.push(format!(
                    "sending fell behind the schedule: {a:.2} req/s sent of the {i:.2} req/s this run's own schedule intended ({:.0}%): the client or --max-concurrency held requests back (see schedule lag)",
                    ratio * 100.0
                ));
            }
        }
    }
    // Per 1 s block: mean in flight / sends in the block (= arrivals per
    // second) is the mean time in the system (Little's law).
    let arrivals = block_sums(sends, window);
    let residence: Vec<(f64, f64)> = blocks(in_flight, window)
        .into_iter()
        .filter_map(|(x, l)| {
            // Pair each block with its own arrivals (by its index).
            let a = *arrivals.get((x - window.0) as usize)?;
            (a >= 2.0).then_some((x, l / a))
        })
        .collect();
    s.in_flight_slope = slope(&residence);
    s.ttft_slope = slope(&blocks(ttft, window));
    if let Some(sl) = s.in_flight_slope.filter(|sl| sl.rising(0.005)) {
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
            "TTFT rose through the run (+{:.0} ms over {:.1} s, slope {:.1} ms/s [{:.1}, {:.1}]): requests are queueing",
            sl.rise,
            window.1 - window.0,
            sl.per_s,
            sl.lo,
            sl.hi
        ));
    }
    s.saturated = s.in_flight_rising || s.ttft_rising;
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
        let b = blocks(&pts, (0.0, 5.0));
        assert_eq!(b.len(), 5);
        assert!((b[0].1 - 3.9).abs() < 1e-9, "{b:?}");
    }

    /// A flat noisy series is not rising, even when long; a growing queue is.
    #[test]
    fn flat_noise_is_not_saturation_and_a_growing_queue_is() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        let mut false_alarms = 0;
        for _ in 0..200 {
            let flat: Vec<(f64, f64)> = (0..600)
                .map(|i| (i as f64 * 0.1, 20.0 + rng.random_range(-5.0..5.0)))
                .collect();
            let ttft: Vec<(f64, f64)> = (0..600)
                .map(|i| (i as f64 * 0.1, 100.0 + rng.random_range(-30.0..30.0)))
                .collect();
            let sends: Vec<(f64, f64)> = (0..600).map(|i| (i as f64 * 0.1, 1.0)).collect();
            if assess(Some(10.0), Some(9.9), &flat, &sends, &ttft, (0.0, 60.0)).saturated {
                false_alarms += 1;
            }
        }
        assert_eq!(false_alarms, 0);
        let growing: Vec<(f64, f64)> = (0..100)
            .map(|i| (i as f64 * 0.1, 10.0 + i as f64 * 0.5))
            .collect();
        let ttft: Vec<(f64, f64)> = (0..100)
            .map(|i| (i as f64 * 0.1, 100.0 + i as f64 * 20.0))
            .collect();
        let sends: Vec<(f64, f64)> = (0..100).map(|i| (i as f64 * 0.1, 1.0)).collect();
        let s = assess(Some(10.0), Some(10.0), &growing, &sends, &ttft, (0.0, 10.0));
        assert!(s.saturated && s.in_flight_rising && s.ttft_rising, "{s:?}");
        assert_eq!(s.findings.len(), 2);
    }

    /// Arrivals bunched at the end of a run raise the in-flight count but not
    /// the time requests spend in flight: not saturation.
    #[test]
    fn a_burst_of_arrivals_is_not_saturation() {
        // 10 blocks; arrivals per block rise from 5 to 14, each request stays 1 s.
        let sends: Vec<(f64, f64)> = (0..100)
            .map(|i| (i as f64 * 0.1, (5.0 + (i / 10) as f64) / 10.0))
            .collect();
        let in_flight: Vec<(f64, f64)> = (0..100)
            .map(|i| (i as f64 * 0.1, 5.0 + (i / 10) as f64))
            .collect();
        let ttft: Vec<(f64, f64)> = (0..100)
            .map(|i| (i as f64 * 0.1, 100.0 + (i % 3) as f64))
            .collect();
        let s = assess(Some(9.5), Some(9.5), &in_flight, &sends, &ttft, (0.0, 10.0));
        assert!(!s.saturated, "{s:?}");
    }

    #[test]
    fn behind_schedule_is_judged_against_the_schedules_own_rate() {
        // The nominal rate was 0.16/s but the seeded schedule itself ran at 0.143/s.
        assert!(!assess(Some(0.143), Some(0.1428), &[], &[], &[], (0.0, 1.0)).behind_schedule);
        let s = assess(Some(100.0), Some(80.0), &[], &[], &[], (0.0, 1.0));
        assert!(
            s.behind_schedule && s.findings[0].contains("80%"),
            "{:?}",
            s.findings
        );
    }
}
