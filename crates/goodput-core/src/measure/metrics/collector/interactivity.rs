//! Interactivity: how fast the answer reaches one user, tokens a second,
//! the two ways the field defines it (they differ on the same run):
//!
//! - **MLPerf Endpoints' `e2e_interactivity`**: Σ output tokens / Σ E2EL
//!   over the completed requests (a ratio of sums: long answers weigh
//!   more);
//! - **InferenceX's `e2e_norm_intvty`**: 1 / the p90 of each request's
//!   E2EL per output token (the slowest tenth of requests sets it).
//!
//! Each with a 95 % interval: the ratio's by batch means over the requests
//! in the order they completed ([`crate::measure::stats::batch`]), the
//! p90's by the dependence-aware order statistics every percentile gets,
//! inverted. Only the first [`EXACT_LIMIT`] completed requests are kept (8
//! bytes each); past them the ratio's variance is scaled by kept / all.

use serde::{Deserialize, Serialize};

use crate::measure::metrics::samples::EXACT_LIMIT;
use crate::measure::metrics::RequestMetrics;
use crate::measure::stats::{self, batch, Estimate, Level};

/// The two interactivity figures of a run, tokens/s for one user.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Interactivity {
    /// MLPerf Endpoints' `e2e_interactivity`: Σ output tokens / Σ E2EL (s).
    pub mlperf_e2e_interactivity: Estimate,
    /// InferenceX's `e2e_norm_intvty`: 1 / p90 of E2EL (s) per output token.
    pub inferencex_e2e_norm_intvty: Estimate,
}

/// Completed requests' output tokens and E2EL (s), in completion order.
#[derive(Debug, Default)]
pub(super) struct InteractivityItems {
    items: Vec<(f32, f32)>,
    completed: u64,
}

impl InteractivityItems {
    /// A completed request (one with output tokens and an E2EL).
    pub(super) fn add(&mut self, m: &RequestMetrics) {
        let Some(e2el_ms) = m.e2el_ms.filter(|e| *e > 0.0) else {
            return;
        };
        if m.output_tokens == 0 {
            return;
        }
        self.completed += 1;
        if self.items.len() < EXACT_LIMIT {
            self.items
                .push((m.output_tokens as f32, (e2el_ms / 1e3) as f32));
        }
    }

    /// The figures; `None` without a completed request.
    pub(super) fn finish(&self) -> Option<Interactivity> {
        if self.items.is_empty() {
            return None;
        }
        let pairs: Vec<(f64, f64)> = self
            .items
            .iter()
            .map(|&(t, e)| (f64::from(t), f64::from(e)))
            .collect();
        let (tokens, seconds) = pairs
            .iter()
            .fold((0.0, 0.0), |(a, b), &(t, e)| (a + t, b + e));
        let ratio = tokens / seconds;
        let kept = self.items.len() as f64 / self.completed.max(1) as f64;
        let half = batch::spread(&pairs).map(|s| s.ratio_half_width(Level::TwoSided) * kept.sqrt());
        let mlperf = Estimate {
            value: ratio,
            lo: half.map(|h| (ratio - h).max(0.0)),
            hi: half.map(|h| ratio + h),
        };
        let per_token: Vec<f64> = pairs.iter().map(|&(t, e)| e / t).collect();
        let p90 = stats::describe(per_token, &[90.0], Level::TwoSided)
            .and_then(|d| d.percentiles.first().map(|(_, e)| *e))?;
        let invert = |x: f64| (x > 0.0).then(|| 1.0 / x);
        let inferencex = Estimate {
            value: 1.0 / p90.value,
            // A slower p90 is a lower interactivity: the ends swap.
            lo: p90.hi.and_then(invert),
            hi: p90.lo.and_then(invert),
        };
        Some(Interactivity {
            mlperf_e2e_interactivity: mlperf,
            inferencex_e2e_norm_intvty: inferencex,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(tokens: u32, e2el_ms: f64) -> RequestMetrics {
        RequestMetrics {
            output_tokens: tokens,
            e2el_ms: Some(e2el_ms),
            ..RequestMetrics::default()
        }
    }

    /// Ten requests: nine of 100 tokens in 1 s and one of 10 tokens in 1 s.
    /// MLPerf's ratio of sums: 910 tokens / 10 s = 91 tok/s. InferenceX's:
    /// the p90 of nine 10 ms and one 100 ms per token (numpy's linear
    /// percentile, as every goodput percentile: 10 + 0.1 × 90) is 19 ms,
    /// so 52.6 tok/s: the two figures differ on one run.
    #[test]
    fn the_two_figures_as_defined() {
        let mut it = InteractivityItems::default();
        for i in 0..10 {
            it.add(&request(if i == 4 { 10 } else { 100 }, 1000.0));
        }
        let f = it.finish().unwrap();
        assert!((f.mlperf_e2e_interactivity.value - 91.0).abs() < 1e-9);
        let v = f.inferencex_e2e_norm_intvty.value;
        assert!((v - 1.0 / 0.019).abs() < 1e-3, "{v}");
        // An interval on the ratio (10 requests: batch means), ends ordered.
        let m = f.mlperf_e2e_interactivity;
        assert!(m.lo.unwrap() <= 91.0 && 91.0 <= m.hi.unwrap(), "{m:?}");
        let n = f.inferencex_e2e_norm_intvty;
        if let (Some(lo), Some(hi)) = (n.lo, n.hi) {
            assert!(lo <= v && v <= hi, "{n:?}");
        }
    }

    #[test]
    fn nothing_completed_is_no_figure() {
        let mut it = InteractivityItems::default();
        it.add(&request(0, 1000.0));
        assert_eq!(it.finish(), None);
    }
}
