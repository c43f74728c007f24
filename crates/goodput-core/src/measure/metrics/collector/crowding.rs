//! Crowding: whether the run's requests queue behind each other for longer
//! than the run can see.
//!
//! Requests that do not delay each other (an infinite-server queue) under
//! Poisson arrivals are in flight in a Poisson number: its variance equals
//! its mean. Requests that share a server's batch or queue do delay each
//! other, and the count in flight then varies more than that: a burst of
//! arrivals lengthens every request in flight, which keeps more in flight.
//! The **crowding index** is the count's variance over its mean, sampled
//! every bucket over the steady part of the sending window, divided by what
//! independent requests under the run's own arrival process would show
//! (1 for Poisson, the gaps' squared coefficient of variation for burstier
//! gamma arrivals).
//!
//! Near a server's capacity the long-run latency is set by congestion
//! episodes rarer than a run is long. A run that met none reads low, and
//! its batches look independent, so no interval from inside it can reach
//! the long-run value (the coverage study, `examples/coverage`, measured
//! mean E2EL covered in 75 % of 2,000-request runs at 95 % of capacity, in
//! 86 % at 70 %, nearly all misses below). The crowding index does see the
//! regime: over those runs it read 1.1–1.3 at a fifth of capacity, 1.9–3.3
//! at 70 % and 2.9–6.8 at 95 % (10th to 90th percentile), the runs whose
//! intervals missed among them.
//! Above [`LIMIT`] the latency intervals keep their lower end and leave the
//! upper one open: the run bounds the long-run value from below only.
//!
//! The count in flight stays alike for about one fill of the pipeline (a
//! request's unqueued time in flight), so the index is read from a steady
//! window of at least [`MIN_FILLS`] fills (and [`MIN_SAMPLES`] samples, 2 s):
//! over fewer, a queue that wanders slowly looks calm. A run too short for
//! that while it kept at least one request in flight on average is short
//! against the server's memory whatever its index: it is taken as long
//! memory (without an index).
//!
//! Only for open loops at a constant rate (Poisson, gamma, constant gaps):
//! a closed loop holds its count fixed, and a replayed trace's count follows
//! the trace, not the server.

use serde::{Deserialize, Serialize};

use crate::load::schedule::{Arrival, Load};

/// Crowding index above which the upper sides are opened. Light loads read
/// 1.0–1.47 in the study (400- and 2,000-request runs, 10th to 90th
/// percentile), 70 % of capacity 1.2–3.3.
pub const LIMIT: f64 = 1.5;

/// Fewest in-flight samples (buckets, 0.1 s) the index is read from: with a
/// pipeline that fills in less than a bucket, samples are the independent
/// stretches [`MIN_FILLS`] counts.
pub const MIN_SAMPLES: usize = 20;

/// Fewest fills of the pipeline the steady window must span. An index read
/// from `k` nearly independent stretches has a relative error of about
/// √(2/k): 32 % at 20, enough to tell 1 from 2. In the coverage study,
/// 400-request runs at 70 % and 95 % of capacity spanned 5–10 fills and
/// read an index below 1.5 in a quarter to a third of runs, their intervals
/// under-covering; at a fifth of capacity they spanned about 55.
pub const MIN_FILLS: usize = 20;

/// The crowding of a run (read by the collector; docs/metrics.md "Crowding").
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Crowding {
    /// Variance over mean of the requests in flight, over `independent`;
    /// `None` when the steady window was too short to read it.
    pub index: Option<f64>,
    /// Variance over mean that requests not delaying each other would show
    /// under the run's arrivals: at least 1.
    pub independent: f64,
    /// Mean requests in flight over the samples.
    pub mean_in_flight: f64,
    /// In-flight samples the index was read from.
    pub samples: usize,
    /// `index` above [`LIMIT`], or a run too short to read it: the latency
    /// intervals' upper sides are open.
    pub long_memory: bool,
}

impl Crowding {
    /// The note a report prints for a long-memory run; `None` otherwise.
    pub fn note(&self) -> Option<String> {
        let (why, remedy) = match self.index {
            Some(index) if self.long_memory => (
                format!(
                    "requests in flight varied {index:.1}x as much as requests that do not wait for each other would (above {LIMIT}): the server's queue remembers longer than this run"
                ),
                "a lighter load (a longer run at this load reads the same crowding)",
            ),
            Some(_) => return None,
            None => (
                format!(
                    "the run was too short after its pipeline filled to tell whether its requests wait for each other: {:.1} s of steady sending with {:.1} in flight on average, where the count needs {MIN_FILLS} times a request's unqueued time in flight (and 2 s) to be read",
                    self.samples as f64 * super::BUCKET_S,
                    self.mean_in_flight
                ),
                "a longer run",
            ),
        };
        Some(format!(
            "{why}; so its latency intervals bound the long-run values from below only (upper ends '-'), and {remedy} bounds them"
        ))
    }
}

/// What independent requests' count in flight would vary by under `load`'s
/// arrivals (variance over mean); `None` where the index does not apply.
pub fn independent_dispersion(load: &Load) -> Option<f64> {
    match *load {
        Load::Open { rate, arrival, .. } if rate.is_finite() && rate > 0.0 => match arrival {
            Arrival::Poisson | Arrival::Constant => Some(1.0),
            Arrival::Gamma(k) if k > 0.0 => Some((1.0 / k).max(1.0)),
            _ => None,
        },
        _ => None,
    }
}

/// The crowding index of the in-flight samples `in_flight[from..to]`, given
/// a fill's length in samples, what independent requests would show and the
/// run's mean in flight over its whole duration (Little's law); `None` for
/// a run that held less than one request in flight on average.
pub fn assess(
    in_flight: &[f64],
    (from, to): (usize, usize),
    fill: usize,
    independent: f64,
    run_mean_in_flight: f64,
) -> Option<Crowding> {
    if run_mean_in_flight < 1.0 {
        return None;
    }
    let to = to.min(in_flight.len());
    let samples = in_flight.get(from.min(to)..to).unwrap_or_default();
    if samples.len() < MIN_SAMPLES.max(MIN_FILLS * fill) {
        return Some(Crowding {
            index: None,
            independent,
            mean_in_flight: run_mean_in_flight,
            samples: samples.len(),
            long_memory: true,
        });
    }
    let n = samples.len() as f64;
    let mean = samples.iter().sum::<f64>() / n;
    if mean < 1.0 {
        return None;
    }
    let var = samples.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    let index = var / mean / independent;
    Some(Crowding {
        index: Some(index),
        independent,
        mean_in_flight: mean,
        samples: samples.len(),
        long_memory: index > LIMIT,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_steady_count_is_not_crowded_and_a_wandering_one_is() {
        // Poisson-like: variance about the mean.
        let calm: Vec<f64> = (0..200).map(|i| 10.0 + [-3.0, 3.0][i % 2]).collect();
        let c = assess(&calm, (0, 200), 1, 1.0, 10.0).unwrap();
        assert!(
            !c.long_memory && (c.index.unwrap() - 0.9).abs() < 0.05,
            "{c:?}"
        );
        assert!(c.note().is_none());
        // A queue that wanders from 5 to 45 and back.
        let wandering: Vec<f64> = (0..200)
            .map(|i| 25.0 + 20.0 * (i as f64 / 30.0).sin())
            .collect();
        let c = assess(&wandering, (0, 200), 1, 1.0, 25.0).unwrap();
        assert!(c.long_memory && c.index.unwrap() > 5.0, "{c:?}");
        assert!(c.note().unwrap().contains("remembers longer than this run"));
        // Burstier arrivals explain more of it.
        let c = assess(&wandering, (0, 200), 1, 10.0, 25.0).unwrap();
        assert!(!c.long_memory, "{c:?}");
    }

    #[test]
    fn a_run_too_short_to_read_is_long_memory_unless_it_was_idle() {
        for c in [
            assess(&[3.0; 19], (0, 19), 1, 1.0, 3.0).unwrap(),
            assess(&[3.0; 100], (85, 200), 1, 1.0, 3.0).unwrap(),
            assess(&[3.0; 10], (30, 20), 1, 1.0, 3.0).unwrap(),
            // 100 samples, but only 10 fills of 10.
            assess(&[3.0; 100], (0, 100), 10, 1.0, 3.0).unwrap(),
        ] {
            assert!(c.long_memory && c.index.is_none(), "{c:?}");
            assert!(c.note().unwrap().contains("too short"), "{c:?}");
        }
        assert!(assess(&[3.0; 19], (0, 19), 1, 1.0, 0.9).is_none());
        assert!(assess(&[0.2; 100], (0, 100), 1, 1.0, 1.5).is_none());
        assert!(assess(&[3.0; 400], (0, 400), 10, 1.0, 3.0)
            .unwrap()
            .index
            .is_some());
    }

    #[test]
    fn only_constant_rate_open_loops_have_an_index() {
        let open = |arrival| Load::Open {
            rate: 10.0,
            arrival,
            max_concurrency: None,
        };
        assert_eq!(independent_dispersion(&open(Arrival::Poisson)), Some(1.0));
        assert_eq!(
            independent_dispersion(&open(Arrival::Gamma(0.25))),
            Some(4.0)
        );
        assert_eq!(
            independent_dispersion(&open(Arrival::Gamma(4.0))),
            Some(1.0)
        );
        assert_eq!(independent_dispersion(&open(Arrival::Trace)), None);
        assert_eq!(
            independent_dispersion(&Load::Closed { concurrency: 8 }),
            None
        );
        let inf = Load::Open {
            rate: f64::INFINITY,
            arrival: Arrival::Poisson,
            max_concurrency: None,
        };
        assert_eq!(independent_dispersion(&inf), None);
    }
}
