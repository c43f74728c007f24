//! Latency samples: each per-request metric's values (TTFT, TPOT, E2EL...)
//! and the pooled per-token (ITL) and per-chunk (ICL) gaps of the measured
//! phase's completed requests, and their distributions.

use std::collections::BTreeMap;

use crate::metrics::pooled::Pooled;
use crate::metrics::samples::{Samples, View};
use crate::metrics::{Metric, RequestMetrics};
use crate::stats::{Distribution, Level};

/// Every distribution of a run, by metric.
pub type Distributions = BTreeMap<Metric, Distribution>;

#[derive(Debug, Default)]
pub(super) struct LatencySamples {
    /// Per-request values of each non-pooled metric (ms).
    values: BTreeMap<Metric, Samples>,
    itl: Pooled,
    icl: Pooled,
}

impl LatencySamples {
    /// A completed request's values.
    pub(super) fn add(&mut self, m: &RequestMetrics) {
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
    /// [`crate::metrics::pooled`]).
    pub(super) fn pooled_bounded(&self) -> bool {
        self.itl.bounded() || self.icl.bounded()
    }

    /// Whether per-request values went past their exact limit (see
    /// [`crate::metrics::samples`]).
    pub(super) fn values_bounded(&self) -> bool {
        self.values.values().any(Samples::is_bounded)
    }

    /// Every metric's distribution, its intervals at `level`.
    pub(super) fn finish(&self, percentiles: &[f64], level: Level) -> Distributions {
        let mut distributions = Distributions::new();
        for (m, v) in &self.values {
            if let Some(d) = v.describe(percentiles, level) {
                distributions.insert(*m, d);
            }
        }
        let itl = self.itl.describe(percentiles, level);
        // With one token per event ICL equals ITL: do not compute it twice.
        let icl = if self.icl.same_as(&self.itl) {
            itl.clone()
        } else {
            self.icl.describe(percentiles, level)
        };
        for (m, d) in [(Metric::Itl, itl), (Metric::Icl, icl)] {
            if let Some(d) = d {
                distributions.insert(m, d);
            }
        }
        distributions
    }
}
