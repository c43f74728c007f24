//! Pooled per-token values (ITL, ICL), grouped by request, in memory that
//! stays flat in long runs.
//!
//! Up to [`EXACT_LIMIT`] values are kept exactly (4 bytes each), and the
//! distribution is [`stats::describe_pooled`]'s: exact percentiles, and
//! batch means over whole requests, in the order they finished, for the
//! intervals. Past that — 10 minutes
//! at 80,000 tokens/s would hold 190 MB — the pool becomes bounded:
//!
//! - a log histogram whose bins are 0.1 % wide (`LogHistogram::REL_ERROR`): every
//!   percentile within 0.1 % relative of the exact one (`docs/metrics.md#long-runs`
//!   allows it), with the count, sum, sum of squares, min and max kept
//!   exactly, so the mean and standard deviation are exact;
//! - a uniform reservoir of whole requests (Algorithm R over requests, at
//!   most [`RESERVOIR_VALUES`] values), on which the batch means run (its
//!   order is not time order, so neighbours' likeness is not seen there);
//!   the spread is rescaled to the full number of requests and centred on
//!   the histogram's estimate.
//!
//! The result says so: [`Pooled::bounded`] is true, and the run adds a note.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::measure::stats::{self, Distribution, LogHistogram, Ordered};

/// Values kept exactly before the pool becomes bounded (4 MiB).
pub const EXACT_LIMIT: usize = 1 << 20;
/// Values the request reservoir holds at most (2 MiB).
pub const RESERVOIR_VALUES: usize = 1 << 19;
/// The histogram's relative bin width: a percentile is within this share of
/// the exact value.
#[cfg(test)]
const REL_ERROR: f64 = LogHistogram::REL_ERROR;

#[derive(Debug, Default)]
pub struct Pooled {
    /// Exact values, or (bounded) the reservoir's values.
    values: Vec<f32>,
    /// End offsets of each request's values in `values`.
    groups: Vec<u32>,
    bounded: Option<Bounded>,
}

#[derive(Debug)]
struct Bounded {
    hist: LogHistogram,
    requests: u64,
    /// The reservoir: whole requests.
    reservoir: Vec<Box<[f32]>>,
    reservoir_values: usize,
    rng: StdRng,
}

impl Bounded {
    fn add(&mut self, request: &[f32]) {
        for &v in request {
            self.hist.add(v as f64);
        }
        self.requests += 1;
        // Algorithm R over requests: every request equally likely to be in
        // the reservoir, which stays under its value budget.
        if self.reservoir_values + request.len() <= RESERVOIR_VALUES {
            self.reservoir_values += request.len();
            self.reservoir.push(request.into());
        } else {
            let j = self.rng.random_range(0..self.requests) as usize;
            if j < self.reservoir.len() {
                self.reservoir_values =
                    self.reservoir_values + request.len() - self.reservoir[j].len();
                self.reservoir[j] = request.into();
            }
        }
    }

    /// The value at quantile `q` (0..=1), interpolated as the exact path does.
    fn quantile(&self, q: f64) -> f64 {
        stats::percentile_of(&self.hist, q * 100.0).unwrap_or(f64::NAN)
    }
}

impl Pooled {
    /// Add one request's values.
    pub fn add(&mut self, request: &[f32]) {
        if request.is_empty() {
            return;
        }
        if let Some(b) = &mut self.bounded {
            b.add(request);
            return;
        }
        self.values.extend_from_slice(request);
        self.groups.push(self.values.len() as u32);
        if self.values.len() > EXACT_LIMIT {
            self.make_bounded();
        }
    }

    /// Whether the pool went past [`EXACT_LIMIT`] and became bounded.
    pub fn bounded(&self) -> bool {
        self.bounded.is_some()
    }

    fn make_bounded(&mut self) {
        let mut b = Bounded {
            hist: LogHistogram::default(),
            requests: 0,
            reservoir: Vec::new(),
            reservoir_values: 0,
            rng: StdRng::seed_from_u64(0x0b0d_1e5e),
        };
        let mut start = 0usize;
        for &end in &self.groups {
            b.add(&self.values[start..end as usize]);
            start = end as usize;
        }
        self.values = Vec::new();
        self.groups = Vec::new();
        self.bounded = Some(b);
    }

    /// Whether both pools hold the same values (ITL equals ICL when every
    /// event carries one token).
    pub fn same_as(&self, other: &Pooled) -> bool {
        self.bounded.is_none()
            && other.bounded.is_none()
            && self.values == other.values
            && self.groups == other.groups
    }

    /// The distribution, with intervals at `level` from batch means over
    /// requests; the mean's spread read before the last `drain` requests
    /// (the run's drain: [`stats::read_before_drain`]).
    pub fn describe(
        &self,
        percentiles: &[f64],
        level: stats::Level,
        drain: usize,
    ) -> Option<Distribution> {
        let Some(b) = &self.bounded else {
            let read = stats::read_before_drain(self.groups.len(), drain);
            return stats::describe_pooled(&self.values, &self.groups, read, percentiles, level);
        };
        // The reservoir's own distribution and bootstrap...
        let mut values = Vec::with_capacity(b.reservoir_values);
        let mut groups = Vec::with_capacity(b.reservoir.len());
        for r in &b.reservoir {
            values.extend_from_slice(r);
            groups.push(values.len() as u32);
        }
        // (The reservoir is not in time order: no drain to leave unread.)
        let mut d = stats::describe_pooled(&values, &groups, groups.len(), percentiles, level)?;
        // ...re-centred on the whole pool's figures, and its spread scaled
        // from the reservoir's requests to all of them.
        let scale = (b.reservoir.len() as f64 / b.requests.max(1) as f64).sqrt();
        let recentre = |e: &mut stats::Estimate, full: f64| {
            let old = e.value;
            e.value = full;
            e.lo = e.lo.map(|lo| full - (old - lo) * scale);
            e.hi = e.hi.map(|hi| full + (hi - old) * scale);
        };
        let (mean, std) = b.hist.mean_std();
        recentre(&mut d.mean, mean);
        for (p, e) in d.percentiles.iter_mut() {
            recentre(e, b.quantile(*p / 100.0));
        }
        d.count = b.hist.count();
        d.std = std;
        d.min = b.hist.min();
        d.max = b.hist.max();
        d.quantiles = (0..stats::QUANTILE_COUNT)
            .map(|i| {
                (b.quantile(i as f64 / (stats::QUANTILE_COUNT - 1) as f64) * 1e3).round() / 1e3
            })
            .collect();
        Some(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Past the limit: percentiles within 0.1 % of the exact ones, mean and
    /// extremes exact, intervals around the estimate, memory bounded.
    #[test]
    fn a_bounded_pool_keeps_percentiles_within_a_tenth_of_a_percent() {
        let mut rng = StdRng::seed_from_u64(3);
        let mut pooled = Pooled::default();
        let mut all: Vec<f64> = Vec::new();
        for _ in 0..12_000 {
            let base: f64 = rng.random_range(5.0..50.0);
            let req: Vec<f32> = (0..200)
                .map(|_| (base * (1.0 + rng.random::<f64>().powi(8) * 20.0)) as f32)
                .collect();
            all.extend(req.iter().map(|&v| v as f64));
            pooled.add(&req);
        }
        assert!(pooled.bounded());
        let b = pooled.bounded.as_ref().unwrap();
        assert!(b.reservoir_values <= RESERVOIR_VALUES);
        assert!(b.hist.bins() < 30_000, "{} bins", b.hist.bins());
        let ps = [50.0, 90.0, 99.0, 99.9];
        let d = pooled.describe(&ps, stats::Level::TwoSided, 0).unwrap();
        let exact = stats::describe(all.clone(), &ps, stats::Level::TwoSided).unwrap();
        for ((p, e), (_, x)) in d.percentiles.iter().zip(&exact.percentiles) {
            let rel = (e.value - x.value).abs() / x.value;
            assert!(rel <= REL_ERROR, "p{p}: {} vs {} ({rel})", e.value, x.value);
            let (lo, hi) = (e.lo.unwrap(), e.hi.unwrap());
            assert!(
                lo <= e.value && e.value <= hi,
                "p{p}: [{lo}, {hi}] around {}",
                e.value
            );
        }
        assert!((d.mean.value - exact.mean.value).abs() < 1e-6 * exact.mean.value);
        assert!((d.std - exact.std).abs() < 1e-6 * exact.std);
        assert_eq!((d.min, d.max, d.count), (exact.min, exact.max, all.len()));
        assert_eq!(d.quantiles.len(), stats::QUANTILE_COUNT);
    }

    #[test]
    fn below_the_limit_the_pool_is_exact() {
        let mut pooled = Pooled::default();
        pooled.add(&[1.0, 2.0, 3.0]);
        pooled.add(&[4.0]);
        assert!(!pooled.bounded());
        let d = pooled.describe(&[50.0], stats::Level::TwoSided, 0).unwrap();
        assert_eq!(d.count, 4);
    }
}
