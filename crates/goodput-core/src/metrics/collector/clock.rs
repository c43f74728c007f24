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
//! So, by batch means ([`crate::stats::batch`]):
//!
//! - **open loop** (a finite rate, no cap on requests in flight): the ratio
//!   of completions (or output tokens) to the gaps between their scheduled
//!   sends, in send order;
//! - **closed loop** (without multi-turn sessions, whose think time is not
//!   in the E2EL): the ratio of completions to their E2ELs, in completion
//!   order. The output rate's is the larger of that and the tokens' ratio
//!   to the E2ELs (which misses the start and the drain, and alone
//!   under-covered), or the blocks' where they are narrower.
//!
//! The relative half-width of that ratio is the throughput's. Any other
//! load (a capped or infinite-rate open loop, sessions), and a run in which
//! a measured request failed or did not finish (a stalled server's time is
//! in the duration but in no ratio), keeps the blocks' interval. Only the first [`EXACT_LIMIT`] completed requests are kept
//! (16 bytes each); past them the half-width is scaled by √(kept / all).
//! Neither side is nearer the figure than one request's share of it.

use crate::metrics::samples::EXACT_LIMIT;
use crate::record::RequestRecord;
use crate::schedule::Load;
use crate::stats::{batch, Level};

use super::super::RequestMetrics;

/// What sets a run's duration, as far as its throughput interval goes.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub enum Clock {
    /// The arrival process: an open loop at a finite rate, uncapped.
    Arrivals,
    /// The server at a fixed population: a closed loop.
    Service,
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
            Load::Closed { .. } => Clock::Service,
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

/// The completed requests' (scheduled send, E2EL, output tokens), in the
/// order they finished.
#[derive(Debug, Default)]
pub(super) struct ClockItems {
    pub(super) clock: Clock,
    items: Vec<(u64, f32, u32)>,
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
        let e2el_s = m.e2el_ms.unwrap_or(0.0) / 1e3;
        self.items
            .push((rec.t_sched, e2el_s as f32, m.output_tokens));
    }

    /// A measured request that did not complete.
    pub(super) fn not_completed(&mut self) {
        self.unfinished = true;
    }

    /// The relative 95 % half-widths of the request and output-token
    /// throughputs; `None` where the blocks' interval stands.
    pub(super) fn relative_half_widths(&self) -> Option<Relative> {
        let mut items = self.items.clone();
        if self.unfinished {
            return None;
        }
        let pairs: Vec<((f64, f64), (f64, f64))> = match self.clock {
            Clock::Blocks => return None,
            Clock::Service if self.sessions => return None,
            Clock::Service => items
                .iter()
                .map(|&(_, e2el, tokens)| ((1.0, e2el as f64), (tokens as f64, e2el as f64)))
                .collect(),
            Clock::Arrivals => {
                items.sort_by_key(|x| x.0);
                let first = items.first()?.0;
                let mut prev = first;
                items
                    .iter()
                    .map(|&(sched, _, tokens)| {
                        let gap = sched.saturating_sub(prev) as f64 / 1e9;
                        prev = sched;
                        ((1.0, gap), (tokens as f64, gap))
                    })
                    .collect()
            }
        };
        let (requests, tokens): (Vec<_>, Vec<_>) = pairs.into_iter().unzip();
        let scale = (items.len() as f64 / self.completed.max(1) as f64).sqrt();
        // Never finer than one request of the run: a clock that ran like
        // clockwork still counted whole requests.
        let floor = 1.0 / self.completed.max(1) as f64;
        let rel = |v: &[(f64, f64)]| -> Option<f64> {
            let s = batch::spread(v)?;
            let ratio = s.amount / s.weight;
            (ratio.is_finite() && ratio > 0.0)
                .then(|| (scale * s.ratio_half_width(Level::TwoSided) / ratio).max(floor))
        };
        let (req, out) = (rel(&requests)?, rel(&tokens)?);
        Some(match self.clock {
            // A closed loop's token ratio reads the tokens' time but not the
            // run's start and drain, and alone covered 85 % of 400-request
            // runs at 6 users: the output rate is taken no surer than the
            // request rate, and no wider than the blocks.
            Clock::Service => Relative {
                request: req,
                output: out.max(req),
                output_within_blocks: true,
            },
            _ => Relative {
                request: req,
                output: out,
                output_within_blocks: false,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::Arrival;

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
        let r = c.relative_half_widths().unwrap();
        let expected = 1.96 / 2000f64.sqrt();
        let (req, out) = (r.request, r.output);
        assert!((req / expected - 1.0).abs() < 0.3, "{req} vs {expected}");
        assert!((out / req - 1.0).abs() < 1e-9, "equal answers: {out} {req}");
        assert!(!r.output_within_blocks);
        c.not_completed();
        assert_eq!(c.relative_half_widths(), None);
    }

    /// A closed loop whose every request took the same time: nothing
    /// varies but the count, so one request's share.
    #[test]
    fn a_clockwork_closed_loop_is_one_request_wide() {
        let mut c = ClockItems {
            clock: Clock::Service,
            ..ClockItems::default()
        };
        for i in 0..500 {
            c.add(&record(i * 1_000_000), &metrics(250.0, 64));
        }
        let r = c.relative_half_widths().unwrap();
        assert!((r.request - 1.0 / 500.0).abs() < 1e-12, "{r:?}");
        assert_eq!(r.output, r.request, "equal answers: the same ratio");
        assert!(r.output_within_blocks);
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
        assert_eq!(Clock::of(&Load::Closed { concurrency: 4 }), Clock::Service);
    }
}
