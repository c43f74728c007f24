//! The throughputs' intervals from what sets a run's duration.
//!
//! A run of N requests lasts as long as its clock takes: in an open loop the
//! arrival process sends the N-th request (the drain after it is short), in
//! a closed loop the server's service of N requests at a fixed population
//! (Little's law: the duration is Σ E2EL / concurrency). Counting
//! completions in 1 s blocks reads neither: a closed loop's completions come
//! in waves that cancel over the run, and the run's start (no completion
//! before the first E2EL) and drain are shapes, not noise. The coverage
//! study measured block intervals 3 to 14 times wider than the
//! replications' spread in closed loops and at 95 % of capacity in open
//! loop (`bench-results/2026-11-29-throughput-alternatives/`).
//!
//! So:
//!
//! - **open loop** (a finite rate, no cap on requests in flight): by batch
//!   means ([`crate::measure::stats::batch`]), the ratio of completions (or output
//!   tokens) to the gaps between their scheduled sends, in send order;
//! - **closed loop** (without multi-turn sessions, whose think time is not
//!   in the E2EL): from the work each request brought. With c users the
//!   duration is Σ E2EL / c, and what moves it from one run to the next is
//!   the workload's draw, independent request by request. A request's
//!   share of Σ E2EL is its cost: its decode occupies its own slot for one
//!   undisturbed step a token (the median gap between tokens); its prompt's
//!   prefill stalls every stream in flight, c · (TTFT's slope per prompt
//!   token). The request rate is the ratio of completions to those costs,
//!   with an iid variance, plus the run's two ends (the first wave's start
//!   and the drain: each one E2EL's spread over c). Batch means over the
//!   E2ELs read the batches' waves, which cancel over the run, as noise
//!   (1.3 to 2.9 times too wide near capacity). The output rate is the
//!   request rate times the mean tokens of a request; the two move against
//!   each other, so the sum of their relative variances bounds it (no model
//!   of the tokens' own cost held across the engines studied: a KV-cache
//!   term fitted one preset and was twice too wide on another).
//!
//! The relative half-width of that ratio is the throughput's. Any other
//! load (a capped or infinite-rate open loop, sessions), and a run in which
//! a measured request failed or did not finish (a stalled server's time is
//! in the duration but in no ratio), keeps the blocks' interval. Only the
//! first [`EXACT_LIMIT`] completed requests are kept (24 bytes each); past
//! them the variance is scaled by kept / all. Neither side is nearer the
//! figure than one request's share of it.

use crate::load::schedule::Load;
use crate::measure::metrics::samples::EXACT_LIMIT;
use crate::measure::stats::{batch, Level};
use crate::request::record::RequestRecord;

use super::super::RequestMetrics;

/// What sets a run's duration, as far as its throughput interval goes.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub enum Clock {
    /// The arrival process: an open loop at a finite rate, uncapped.
    Arrivals,
    /// The server at a fixed population of `users`: a closed loop.
    Service { users: u32 },
    /// Neither read: the 1 s blocks' interval.
    #[default]
    Blocks,
}

impl Clock {
    pub fn of(load: &Load) -> Clock {
        match *load {
            Load::Open {
                rate,
                max_concurrency: None,
                ..
            } if rate.is_finite() && rate > 0.0 => Clock::Arrivals,
            Load::Closed { concurrency } => Clock::Service {
                users: concurrency.max(1) as u32,
            },
            _ => Clock::Blocks,
        }
    }
}

/// The throughputs' relative 95 % half-widths from the clock.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Relative {
    pub(super) request: f64,
    pub(super) output: f64,
    /// The output rate's interval is the narrower of this and the blocks'.
    pub(super) output_within_blocks: bool,
}

/// A completed request as the clock reads it.
#[derive(Debug, Clone, Copy)]
struct Item {
    t_sched: u64,
    /// Seconds.
    e2el: f32,
    /// Seconds; the E2EL where no token came.
    ttft: f32,
    output: u32,
    input: u32,
}

/// The completed requests, in the order they finished.
#[derive(Debug, Default)]
pub(super) struct ClockItems {
    pub(super) clock: Clock,
    items: Vec<Item>,
    completed: u64,
    /// A request of a multi-turn session was seen: think time is outside
    /// the E2EL, so Little's ratio does not hold.
    sessions: bool,
    /// A measured request failed or did not finish: its time is in the
    /// run's duration but in no ratio here, so the blocks read the run.
    unfinished: bool,
}

impl ClockItems {
    pub(super) fn add(&mut self, rec: &RequestRecord, m: &RequestMetrics) {
        self.completed += 1;
        self.sessions |= rec.session.is_some();
        if self.clock == Clock::Blocks || self.items.len() >= EXACT_LIMIT {
            return;
        }
        let e2el = m.e2el_ms.unwrap_or(0.0) / 1e3;
        self.items.push(Item {
            t_sched: rec.t_sched,
            e2el: e2el as f32,
            ttft: (m.ttft_ms.map_or(e2el, |t| t / 1e3)) as f32,
            output: m.output_tokens,
            input: m.input_tokens.unwrap_or(0),
        });
    }

    /// A measured request that did not complete.
    pub(super) fn not_completed(&mut self) {
        self.unfinished = true;
    }

    /// The relative 95 % half-widths of the request and output-token
    /// throughputs; `None` where the blocks' interval stands. `step_s` is
    /// an undisturbed decode step, the median gap between tokens (seconds).
    pub(super) fn relative_half_widths(&self, step_s: Option<f64>) -> Option<Relative> {
        if self.unfinished || self.items.len() < batch::MIN_BATCHES {
            return None;
        }
        let kept = self.items.len() as f64 / self.completed.max(1) as f64;
        let (request, output) = match self.clock {
            Clock::Blocks => return None,
            Clock::Service { .. } if self.sessions => return None,
            Clock::Service { users } => {
                let w = work(&self.items, users as f64, step_s)?;
                let t = Level::TwoSided.t(self.items.len() - 1);
                let request = w.request * kept + w.ends * kept * kept;
                // The output rate is the request rate times the mean output
                // tokens of a request. No model of the tokens' cost held
                // across the engines studied (docs/metrics.md), but the two
                // factors move against each other in a closed loop (longer
                // answers, fewer requests a second), so the sum of their
                // variances bounds the product's from above; no wider than
                // the blocks either (where the caller checks).
                let output = request + w.mean_tokens * kept;
                let half = |v: f64| t * v.max(0.0).sqrt();
                (half(request), half(output))
            }
            Clock::Arrivals => {
                let (request, output) = arrivals(&self.items)?;
                (request * kept.sqrt(), output * kept.sqrt())
            }
        };
        // Never finer than one request of the run: a clock that ran like
        // clockwork still counted whole requests.
        let floor = 1.0 / self.completed.max(1) as f64;
        Some(Relative {
            request: request.max(floor),
            output: output.max(floor),
            output_within_blocks: matches!(self.clock, Clock::Service { .. }),
        })
    }
}

/// An open loop: the relative half-widths of the ratios of completions and
/// of output tokens to the scheduled sends' gaps, by batch means.
fn arrivals(items: &[Item]) -> Option<(f64, f64)> {
    let mut sends: Vec<(u64, u32)> = items.iter().map(|i| (i.t_sched, i.output)).collect();
    sends.sort_by_key(|x| x.0);
    let mut prev = sends.first()?.0;
    type Items = Vec<(f64, f64)>;
    let (requests, tokens): (Items, Items) = sends
        .iter()
        .map(|&(sched, tokens)| {
            let gap = sched.saturating_sub(prev) as f64 / 1e9;
            prev = sched;
            ((1.0, gap), (tokens as f64, gap))
        })
        .unzip();
    let rel = |v: &[(f64, f64)]| -> Option<f64> {
        let s = batch::spread(v)?;
        let ratio = s.amount / s.weight;
        (ratio.is_finite() && ratio > 0.0).then(|| s.ratio_half_width(Level::TwoSided) / ratio)
    };
    Some((rel(&requests)?, rel(&tokens)?))
}

/// A closed loop's relative variances (see the module's text).
struct Work {
    /// The request rate's, from the work.
    request: f64,
    /// The start and the drain, relative to the duration squared.
    ends: f64,
    /// The mean output tokens of a request, independent draws.
    mean_tokens: f64,
}

/// Sample covariance of two equally long series.
fn cov(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len() as f64;
    let (ma, mb) = (a.iter().sum::<f64>() / n, b.iter().sum::<f64>() / n);
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - ma) * (y - mb))
        .sum::<f64>()
        / (n - 1.0)
}

/// The least-squares slope of `y` on `x`; 0 where `x` does not vary.
fn slope(x: &[f64], y: &[f64]) -> f64 {
    let sxx = cov(x, x);
    let b = if sxx > 0.0 { cov(x, y) / sxx } else { 0.0 };
    if b.is_finite() {
        b
    } else {
        0.0
    }
}

/// The relative variances of a closed loop of `users` users' two rates
/// from the work its requests brought.
fn work(items: &[Item], users: f64, step_s: Option<f64>) -> Option<Work> {
    let n = items.len() as f64;
    let col = |f: &dyn Fn(&Item) -> f64| items.iter().map(f).collect::<Vec<f64>>();
    let input = col(&|i| i.input as f64);
    let output = col(&|i| i.output as f64);
    let e2el = col(&|i| i.e2el as f64);
    let ttft = col(&|i| i.ttft as f64);
    let decode: Vec<f64> = e2el.iter().zip(&ttft).map(|(e, t)| e - t).collect();
    let prefill = slope(&input, &ttft).max(0.0);
    let step = step_s
        .filter(|s| s.is_finite() && *s > 0.0)
        .unwrap_or_else(|| slope(&output, &decode).max(0.0));
    let cost: Vec<f64> = (0..items.len())
        .map(|i| users * prefill * input[i] + step * output[i])
        .collect();
    let (sum_e2el, sum_out) = (e2el.iter().sum::<f64>(), output.iter().sum::<f64>());
    if sum_e2el <= 0.0 || sum_out <= 0.0 {
        return None;
    }
    let (mean_e2el, mean_out) = (sum_e2el / n, sum_out / n);
    Some(Work {
        request: cov(&cost, &cost) / (n * mean_e2el * mean_e2el),
        ends: 2.0 * users * cov(&e2el, &e2el) / (sum_e2el * sum_e2el),
        mean_tokens: cov(&output, &output) / (n * mean_out * mean_out),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::schedule::Arrival;

    fn record(sched_ns: u64) -> RequestRecord {
        RequestRecord {
            t_sched: sched_ns,
            ..RequestRecord::default()
        }
    }

    fn metrics(e2el_ms: f64, tokens: u32) -> RequestMetrics {
        RequestMetrics {
            e2el_ms: Some(e2el_ms),
            output_tokens: tokens,
            ..RequestMetrics::default()
        }
    }

    /// Poisson sends: the request rate's relative half-width is about
    /// 1.96 / √N, the arrival process's own spread.
    #[test]
    fn an_open_loop_reads_its_arrival_clock() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        let mut c = ClockItems {
            clock: Clock::Arrivals,
            ..ClockItems::default()
        };
        let mut t = 0.0f64;
        for _ in 0..2000 {
            t += -(1.0 - rng.random::<f64>()).ln() / 10.0;
            c.add(&record((t * 1e9) as u64), &metrics(100.0, 50));
        }
        let r = c.relative_half_widths(None).unwrap();
        let expected = 1.96 / 2000f64.sqrt();
        let (req, out) = (r.request, r.output);
        assert!((req / expected - 1.0).abs() < 0.3, "{req} vs {expected}");
        assert!((out / req - 1.0).abs() < 1e-9, "equal answers: {out} {req}");
        c.not_completed();
        assert_eq!(c.relative_half_widths(None), None);
    }

    /// A closed loop whose every request took the same time: nothing
    /// varies but the count, so one request's share.
    #[test]
    fn a_clockwork_closed_loop_is_one_request_wide() {
        let mut c = ClockItems {
            clock: Clock::Service { users: 8 },
            ..ClockItems::default()
        };
        for i in 0..500 {
            c.add(&record(i * 1_000_000), &metrics(250.0, 64));
        }
        let r = c.relative_half_widths(Some(0.003)).unwrap();
        assert!((r.request - 1.0 / 500.0).abs() < 1e-12, "{r:?}");
        assert_eq!(r.output, r.request, "equal answers: the same ratio");
    }

    /// A closed loop whose duration is the work its requests drew: a
    /// request's prefill stalls every user (its own TTFT, and the same
    /// wait in the E2EL of each of the others), its decode takes one step
    /// a token, and Σ E2EL / users is the duration. The intervals cover the
    /// request rate over many draws as often as it says.
    #[test]
    fn a_closed_loop_reads_the_work_its_requests_drew() {
        use rand::seq::SliceRandom;
        use rand::{Rng, SeedableRng};
        let (users, n) = (16u32, 400usize);
        let (prefill, step) = (1e-4, 0.02);
        let mut rng = rand::rngs::StdRng::seed_from_u64(9);
        let mut runs = Vec::new();
        for _ in 0..400 {
            let mut c = ClockItems {
                clock: Clock::Service { users },
                ..ClockItems::default()
            };
            let lengths: Vec<(u32, u32)> = (0..n)
                .map(|_| (rng.random_range(256..768u32), rng.random_range(32..96u32)))
                .collect();
            // The stalls each request waits out: other requests' prefills.
            let mut stalls: Vec<f64> = lengths
                .iter()
                .flat_map(|&(input, _)| {
                    std::iter::repeat_n(prefill * input as f64, users as usize - 1)
                })
                .collect();
            stalls.shuffle(&mut rng);
            let (mut sum_e2el, mut tokens) = (0.0, 0.0);
            for (i, &(input, output)) in lengths.iter().enumerate() {
                let ttft = prefill * input as f64;
                let waits: f64 = stalls[i * (users as usize - 1)..(i + 1) * (users as usize - 1)]
                    .iter()
                    .sum();
                let e2el = ttft + step * output as f64 + waits;
                sum_e2el += e2el;
                tokens += output as f64;
                let m = RequestMetrics {
                    ttft_ms: Some(ttft * 1e3),
                    input_tokens: Some(input),
                    ..metrics(e2el * 1e3, output)
                };
                c.add(&record(i as u64), &m);
            }
            let duration = sum_e2el / users as f64;
            let r = c.relative_half_widths(Some(step)).unwrap();
            runs.push((n as f64 / duration, r.request, tokens / duration, r.output));
        }
        for (name, value, rel) in [
            (
                "request",
                (|r: &(f64, f64, f64, f64)| r.0) as fn(&_) -> f64,
                (|r: &(f64, f64, f64, f64)| r.1) as fn(&_) -> f64,
            ),
            ("output", |r| r.2, |r| r.3),
        ] {
            let n = runs.len() as f64;
            let truth = runs.iter().map(value).sum::<f64>() / n;
            let covered = runs
                .iter()
                .filter(|r| (value(r) - truth).abs() <= rel(r) * value(r))
                .count() as f64
                / n;
            // The output rate's interval is kept conservative (no surer
            // than the request rate's): it must cover at least as often.
            let band = if name == "request" {
                0.92..=0.98
            } else {
                0.92..=1.0
            };
            assert!(band.contains(&covered), "{name}: {covered}");
        }
    }

    #[test]
    fn the_clock_of_each_load() {
        let open = |rate: f64, cap| Load::Open {
            rate,
            arrival: Arrival::Poisson,
            max_concurrency: cap,
        };
        assert_eq!(Clock::of(&open(5.0, None)), Clock::Arrivals);
        assert_eq!(Clock::of(&open(5.0, Some(8))), Clock::Blocks);
        assert_eq!(Clock::of(&open(f64::INFINITY, None)), Clock::Blocks);
        assert_eq!(
            Clock::of(&Load::Closed { concurrency: 4 }),
            Clock::Service { users: 4 }
        );
    }
}
