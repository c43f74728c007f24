//! Latency samples: each per-request metric's values (TTFT, TPOT, E2EL...)
//! and the pooled per-token (ITL) and per-chunk (ICL) gaps of the measured
//! phase's completed requests, and their distributions.

use std::collections::BTreeMap;

use crate::measure::metrics::pooled::Pooled;
use crate::measure::metrics::samples::{Samples, View};
use crate::measure::metrics::{Metric, RequestMetrics};
use crate::measure::stats::{Distribution, Level};

/// Every distribution of a run, by metric.
pub type Distributions = BTreeMap<Metric, Distribution>;

#[derive(Debug, Default)]
pub(super) struct LatencySamples {
    /// Per-request values of each non-pooled metric (ms).
    values: BTreeMap<Metric, Samples>,
    itl: Pooled,
    icl: Pooled,
    drain: Drain,
}

/// The measured completions that finished after the latest send seen: at
/// the run's end, its drain ([`crate::measure::stats::read_before_drain`]). Only
/// those after the latest send are kept, so it holds about as many as are
/// in flight.
#[derive(Debug, Default)]
struct Drain {
    last_send_ns: u64,
    done_after: Vec<u64>,
}

impl Drain {
    fn sent(&mut self, t_send_ns: u64) {
        if t_send_ns > self.last_send_ns {
            self.last_send_ns = t_send_ns;
            let last = t_send_ns;
            self.done_after.retain(|&t| t > last);
        }
    }
}

impl LatencySamples {
    /// A measured request was sent at `t_send_ns` (completed or not).
    pub(super) fn sent(&mut self, t_send_ns: u64) {
        self.drain.sent(t_send_ns);
    }

    /// The run's drain: the completions since its last send.
    pub(super) fn drain(&self) -> usize {
        self.drain.done_after.len()
    }

    /// A completed request's values; it finished at `t_done_ns`.
    pub(super) fn add(&mut self, m: &RequestMetrics, t_done_ns: u64) {
        if t_done_ns > self.drain.last_send_ns {
            self.drain.done_after.push(t_done_ns);
        }
        for metric in Metric::ALL {
            if metric.info().pooled {
                continue;
            }
            if let Some(x) = metric.value(m) {
                self.values.entry(metric).or_default().push(x);
            }
        }
        self.itl.add(&m.itl_ms);
        self.icl.add(&m.icl_ms);
    }

    /// A per-request metric's values, when it has any.
    pub(super) fn values(&self, metric: Metric) -> Option<&Samples> {
        self.values.get(&metric)
    }

    /// A per-request metric's values in ascending order (none: empty).
    pub(super) fn view(&self, metric: Metric) -> View<'_> {
        self.values
            .get(&metric)
            .map(Samples::view)
            .unwrap_or(View::Sorted(Vec::new()))
    }

    /// Whether the pooled ITL or ICL went past its exact limit (see
    /// [`crate::measure::metrics::pooled`]).
    pub(super) fn pooled_bounded(&self) -> bool {
        self.itl.bounded() || self.icl.bounded()
    }

    /// Whether per-request values went past their exact limit (see
    /// [`crate::measure::metrics::samples`]).
    pub(super) fn values_bounded(&self) -> bool {
        self.values.values().any(Samples::is_bounded)
    }

    /// Every metric's distribution, its intervals at `level`.
    pub(super) fn finish(&self, percentiles: &[f64], level: Level) -> Distributions {
        let mut distributions = Distributions::new();
        let drain = self.drain();
        for (m, v) in &self.values {
            if let Some(d) = v.describe(percentiles, level, drain) {
                distributions.insert(*m, d);
            }
        }
        let itl = self.itl.describe(percentiles, level, drain);
        // With one token per event ICL equals ITL: do not compute it twice.
        let icl = if self.icl.same_as(&self.itl) {
            itl.clone()
        } else {
            self.icl.describe(percentiles, level, drain)
        };
        for (m, d) in [(Metric::Itl, itl), (Metric::Icl, icl)] {
            if let Some(d) = d {
                distributions.insert(m, d);
            }
        }
        distributions
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ten requests sent 10 ns apart, each finished 35 ns after its send,
    /// seen in the order they finished: the last send is at 90, and the
    /// four that finished after it (at 95, 105, 115, 125) are the drain.
    #[test]
    fn the_drain_is_the_completions_after_the_last_send() {
        let mut l = LatencySamples::default();
        let m = RequestMetrics {
            tpot_ms: Some(10.0),
            ..Default::default()
        };
        for i in 0..10u64 {
            l.sent(i * 10);
            l.add(&m, i * 10 + 35);
        }
        assert_eq!(l.drain(), 4);
        // A closed loop's drain holds about its users; mid-run the tracker
        // holds only what finished since the latest send.
        assert!(l.drain.done_after.capacity() < 16);
    }
}
