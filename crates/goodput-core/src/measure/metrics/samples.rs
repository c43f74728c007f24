//! Per-request values of one metric (TTFT, TPOT, E2EL...), in memory that
//! stays flat in long runs.
//!
//! Up to [`EXACT_LIMIT`] values are kept exactly; past that, a
//! [`LogHistogram`] with 0.1 % bins (`docs/metrics.md#long-runs` allows 0.1 %
//! relative error) whose count, sum, sum of squares, min and max stay
//! exact. Percentiles, their binomial intervals and SLO verdicts read the
//! same order statistics either way ([`Ordered`]).

use crate::measure::stats::{self, Distribution, LogHistogram, Ordered};
use crate::measure::verdict::{self, TermJudgement};

/// Values kept exactly (512 KiB a metric): runs under 65,536 requests are
/// exact.
pub const EXACT_LIMIT: usize = 1 << 16;

/// Exact values in the order they were pushed (the order requests
/// finished), or past the limit a histogram and the first [`EXACT_LIMIT`]
/// values in that order, from which the intervals read how alike
/// neighbouring requests are.
#[derive(Debug, Clone)]
pub enum Samples {
    Exact(Vec<f64>),
    Bounded(LogHistogram, Vec<f64>),
}

impl Default for Samples {
    fn default() -> Self {
        Samples::Exact(Vec::new())
    }
}

/// A sample in ascending order, to read order statistics from.
pub enum View<'a> {
    Sorted(Vec<f64>),
    Hist(&'a LogHistogram),
}

impl Ordered for View<'_> {
    fn count(&self) -> usize {
        match self {
            View::Sorted(v) => v.len(),
            View::Hist(h) => h.count(),
        }
    }
    fn at(&self, i: usize) -> f64 {
        match self {
            View::Sorted(v) => v[i],
            View::Hist(h) => h.at(i),
        }
    }
    fn count_le(&self, x: f64) -> usize {
        match self {
            View::Sorted(v) => v.as_slice().count_le(x),
            View::Hist(h) => h.count_le(x),
        }
    }
}

impl Samples {
    pub fn push(&mut self, x: f64) {
        match self {
            Samples::Exact(v) => {
                v.push(x);
                if v.len() > EXACT_LIMIT {
                    let mut h = LogHistogram::default();
                    for &y in v.iter() {
                        h.add(y);
                    }
                    let mut head = std::mem::take(v);
                    head.truncate(EXACT_LIMIT);
                    *self = Samples::Bounded(h, head);
                }
            }
            Samples::Bounded(h, _) => h.add(x),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Samples::Exact(v) => v.len(),
            Samples::Bounded(h, _) => h.count(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn is_bounded(&self) -> bool {
        matches!(self, Samples::Bounded(..))
    }

    /// The values in ascending order (sorted on each call when exact).
    pub fn view(&self) -> View<'_> {
        match self {
            Samples::Exact(v) => {
                let mut v = v.clone();
                v.sort_by(f64::total_cmp);
                View::Sorted(v)
            }
            Samples::Bounded(h, _) => View::Hist(h),
        }
    }

    /// The distribution, its intervals at `level`; the mean's spread read
    /// before the last `drain` values (the run's drain:
    /// [`stats::read_before_drain`]).
    pub fn describe(
        &self,
        percentiles: &[f64],
        level: stats::Level,
        drain: usize,
    ) -> Option<Distribution> {
        match self {
            Samples::Exact(v) => stats::describe_read(
                v.clone(),
                stats::read_before_drain(v.len(), drain),
                percentiles,
                level,
            ),
            Samples::Bounded(h, head) if h.count() > 0 => {
                let (mean, std) = h.mean_std();
                Some(stats::describe_ordered(
                    h,
                    Some(head),
                    mean,
                    std,
                    percentiles,
                    level,
                ))
            }
            Samples::Bounded(..) => None,
        }
    }

    /// The SLO verdict of the `q`-quantile against `threshold`.
    pub fn judge(&self, q: f64, threshold: f64) -> TermJudgement {
        verdict::judge(&self.view(), Some(self.in_time()), q, threshold)
    }

    /// The values (all, or the first [`EXACT_LIMIT`]) in the order they
    /// were pushed.
    pub fn in_time(&self) -> &[f64] {
        match self {
            Samples::Exact(v) => v,
            Samples::Bounded(_, head) => head,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn past_the_limit_percentiles_and_verdicts_stay_within_a_tenth_of_a_percent() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        let mut s = Samples::default();
        let mut all = Vec::new();
        for _ in 0..200_000 {
            let x = 20.0 * (1.0 + rng.random::<f64>().powi(6) * 50.0);
            all.push(x);
            s.push(x);
        }
        assert!(s.is_bounded());
        let ps = [50.0, 90.0, 99.0, 99.9];
        let d = s.describe(&ps, stats::Level::TwoSided, 0).unwrap();
        // The exact description that reads dependence from the same first
        // EXACT_LIMIT values the bounded one keeps.
        let full = stats::describe(all.clone(), &ps, stats::Level::TwoSided).unwrap();
        let mut sorted = all.clone();
        sorted.sort_by(f64::total_cmp);
        let e = stats::describe_ordered(
            sorted.as_slice(),
            Some(&all[..EXACT_LIMIT]),
            full.mean.value,
            full.std,
            &ps,
            stats::Level::TwoSided,
        );
        for ((p, a), (_, b)) in d.percentiles.iter().zip(&e.percentiles) {
            for (x, y) in [
                (a.value, b.value),
                (a.lo.unwrap(), b.lo.unwrap()),
                (a.hi.unwrap(), b.hi.unwrap()),
            ] {
                assert!((x - y).abs() <= 1e-3 * y, "p{p}: {x} vs {y}");
            }
        }
        assert!((d.mean.value - e.mean.value).abs() < 1e-9 * e.mean.value);
        assert_eq!((d.min, d.max, d.count), (e.min, e.max, e.count));
        let exact = verdict::judge(sorted.as_slice(), Some(&all[..EXACT_LIMIT]), 0.99, 400.0);
        let approx = s.judge(0.99, 400.0);
        assert_eq!(exact.verdict, approx.verdict);
        assert!(
            (exact.estimate.value - approx.estimate.value).abs() <= 1e-3 * exact.estimate.value
        );
    }
}
