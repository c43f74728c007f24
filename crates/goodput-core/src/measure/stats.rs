//! Statistics: exact percentiles and their confidence intervals.
//!
//! Percentiles are order statistics with linear interpolation between the
//! closest ranks (numpy's default), computed on sorted data. Intervals are
//! 95 %: order-statistic bounds for per-request metrics, the binomial ranks
//! ([`binomial_ci_ranks`]) widened by batch means where neighbouring
//! requests are alike ([`quantile_ranks`]; a bound is `None` — open — when
//! there are too few samples), and batch means ([`batch`]) over whole
//! requests for pooled per-token values and over time blocks for
//! throughputs. Requests of a benchmark are not independent draws: every
//! interval reads the dependence from the values in the order they happened.

use serde::{Deserialize, Serialize};

pub mod batch;
mod binomial;
mod level;
mod mean;
mod ranks;
pub(crate) mod student;

pub use binomial::binomial_ci_ranks;
#[cfg(test)]
pub(crate) use binomial::exact_coverage;
pub use level::Level;
pub use mean::mean_half_width;
use mean::not_below_zero;
use ranks::dependent_ranks;
pub use ranks::quantile_ranks;

/// Percentile `p` (0–100) of sorted data, numpy's linear interpolation
/// (the one definition, in [`goodput_common::percentile`]).
pub use goodput_common::percentile::percentile_sorted;

/// A sample in ascending order: exactly (a sorted slice), or within a
/// bounded relative error (a [`LogHistogram`]), for the order statistics the
/// percentiles and their binomial intervals read.
pub trait Ordered {
    fn count(&self) -> usize;
    /// The value at 0-based position `i` of the ascending order.
    fn at(&self, i: usize) -> f64;
    /// How many values are at most `x`.
    fn count_le(&self, x: f64) -> usize;
}

impl Ordered for [f64] {
    fn count(&self) -> usize {
        self.len()
    }
    fn at(&self, i: usize) -> f64 {
        self[i]
    }
    fn count_le(&self, x: f64) -> usize {
        self.partition_point(|&v| v <= x)
    }
}

impl Ordered for Vec<f64> {
    fn count(&self) -> usize {
        self.len()
    }
    fn at(&self, i: usize) -> f64 {
        self[i]
    }
    fn count_le(&self, x: f64) -> usize {
        self.as_slice().count_le(x)
    }
}

/// The `p`-th percentile by linear interpolation between order statistics
/// ([`goodput_common::percentile::percentile_by_rank`]).
pub fn percentile_of(o: &(impl Ordered + ?Sized), p: f64) -> Option<f64> {
    goodput_common::percentile::percentile_by_rank(o.count(), p, |i| o.at(i))
}

/// Values in bins 0.1 % wide on a log scale: every order statistic within
/// 0.1 % of the exact one; count, sum, sum of squares, min and max exact.
/// Memory is bounded by the range of values (about 2,300 bins a decade),
/// never by their number.
#[derive(Debug, Clone, Default)]
pub struct LogHistogram {
    bins: Vec<u64>,
    count: u64,
    sum: f64,
    sum_sq: f64,
    min: f64,
    max: f64,
}

impl LogHistogram {
    /// The relative width of a bin.
    pub const REL_ERROR: f64 = 0.001;
    /// Smallest value binned apart from zero (1 ns in ms).
    const FLOOR: f64 = 1e-6;

    fn bin_of(v: f64) -> usize {
        if v.is_nan() || v < Self::FLOOR {
            return 0;
        }
        1 + ((v / Self::FLOOR).ln() / Self::REL_ERROR.ln_1p()).floor() as usize
    }

    fn value_of(b: usize) -> f64 {
        if b == 0 {
            return 0.0;
        }
        Self::FLOOR * ((b as f64 - 0.5) * Self::REL_ERROR.ln_1p()).exp()
    }

    pub fn add(&mut self, v: f64) {
        let b = Self::bin_of(v);
        if b >= self.bins.len() {
            self.bins.resize(b + 1, 0);
        }
        self.bins[b] += 1;
        if self.count == 0 {
            self.min = v;
            self.max = v;
        }
        self.count += 1;
        self.sum += v;
        self.sum_sq += v * v;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    #[cfg(test)]
    pub fn bins(&self) -> usize {
        self.bins.len()
    }

    pub fn min(&self) -> f64 {
        self.min
    }

    pub fn max(&self) -> f64 {
        self.max
    }

    /// Mean and sample standard deviation, exact.
    pub fn mean_std(&self) -> (f64, f64) {
        let n = self.count as f64;
        let mean = self.sum / n;
        let std = if self.count > 1 {
            ((self.sum_sq - n * mean * mean) / (n - 1.0))
                .max(0.0)
                .sqrt()
        } else {
            0.0
        };
        (mean, std)
    }
}

impl Ordered for LogHistogram {
    fn count(&self) -> usize {
        self.count as usize
    }
    fn at(&self, i: usize) -> f64 {
        let mut acc = 0u64;
        for (b, &n) in self.bins.iter().enumerate() {
            acc += n;
            if acc > i as u64 {
                return Self::value_of(b).clamp(self.min, self.max);
            }
        }
        self.max
    }
    fn count_le(&self, x: f64) -> usize {
        let last = Self::bin_of(x);
        self.bins.iter().take(last + 1).sum::<u64>() as usize
    }
}

/// A figure with its 95 % interval; `None` bounds are open (too few samples).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// The point estimate, in the figure's unit.
    pub value: f64,
    /// Lower bound of the 95 % interval; `None` when open.
    pub lo: Option<f64>,
    /// Upper bound of the 95 % interval; `None` when open.
    pub hi: Option<f64>,
}

impl Estimate {
    /// An interval is open on a side where the data cannot bound it.
    pub fn inconclusive(&self) -> bool {
        self.lo.is_none() || self.hi.is_none()
    }
}

/// How a distribution's intervals were computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CiMethod {
    /// Distribution-free binomial order-statistic intervals (per-request values).
    Binomial,
    /// Batch means over whole requests in the order they finished (pooled
    /// per-token values).
    #[serde(alias = "bootstrap")]
    BatchMeans,
    /// Too few requests to resample.
    None,
}

/// Summary of one per-request (or pooled) metric, in its unit (ms).
/// Serialized as `{count, mean_ms, std_ms, min_ms, max_ms, median_ms,
/// p90_ms, ..., ci: {mean: [lo, hi], p90: [lo, hi], ...}, ci_method,
/// quantiles_ms: [p0, ..., p100]}` (an open bound is `null`; `quantiles_ms`
/// only when known), and read back from the same.
#[derive(Debug, Clone, PartialEq)]
pub struct Distribution {
    /// How many values (requests, or pooled per-token values) it summarizes.
    pub count: usize,
    /// The mean with its interval (`mean_ms`, `ci.mean`).
    pub mean: Estimate,
    /// Sample standard deviation, n − 1 (`std_ms`).
    pub std: f64,
    /// Smallest value (`min_ms`).
    pub min: f64,
    /// Largest value (`max_ms`).
    pub max: f64,
    /// `(percentile, estimate)` in the order requested.
    pub percentiles: Vec<(f64, Estimate)>,
    /// How the intervals were computed (`ci_method`).
    pub ci_method: CiMethod,
    /// The whole distribution's shape, for a CDF drawn without the records:
    /// [`QUANTILE_COUNT`] values, p0 (the minimum) to p100 (the maximum) in
    /// steps of one percentile, rounded to 1 µs. Empty in results written
    /// before it existed (`quantiles_ms` absent).
    pub quantiles: Vec<f64>,
}

/// How many quantiles a [`Distribution`] keeps: p0, p1, ..., p100.
pub const QUANTILE_COUNT: usize = 101;

/// The `QUANTILE_COUNT` quantiles of sorted data, to 1 µs (values in ms):
/// bounded in size whatever the sample count, and at a resolution finer
/// than any latency goodput measures.
fn quantiles_sorted(sorted: &(impl Ordered + ?Sized)) -> Vec<f64> {
    (0..QUANTILE_COUNT)
        .filter_map(|i| percentile_of(sorted, i as f64 * 100.0 / (QUANTILE_COUNT - 1) as f64))
        .map(|x| (x * 1000.0).round() / 1000.0)
        .collect()
}

/// `99` → `"99"`, `99.9` → `"99.9"`, as vLLM spells percentile keys.
pub fn pct_label(p: f64) -> String {
    if p.fract() == 0.0 {
        format!("{}", p as i64)
    } else {
        let s = format!("{p}");
        s.trim_end_matches('0').to_string()
    }
}

impl Serialize for Distribution {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde_json::{json, Map, Value};
        let interval = |e: &Estimate| json!([e.lo, e.hi]);
        let mut o = Map::new();
        o.insert("count".into(), json!(self.count));
        o.insert("mean_ms".into(), json!(self.mean.value));
        o.insert("std_ms".into(), json!(self.std));
        o.insert("min_ms".into(), json!(self.min));
        o.insert("max_ms".into(), json!(self.max));
        let mut ci = Map::new();
        ci.insert("mean".into(), interval(&self.mean));
        for (p, e) in &self.percentiles {
            if *p == 50.0 {
                o.insert("median_ms".into(), json!(e.value));
            }
            o.insert(format!("p{}_ms", pct_label(*p)), json!(e.value));
            ci.insert(format!("p{}", pct_label(*p)), interval(e));
        }
        o.insert("ci".into(), Value::Object(ci));
        o.insert("ci_method".into(), json!(self.ci_method));
        if !self.quantiles.is_empty() {
            o.insert("quantiles_ms".into(), json!(self.quantiles));
        }
        Value::Object(o).serialize(s)
    }
}

impl<'de> Deserialize<'de> for Distribution {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let v = serde_json::Value::deserialize(d)?;
        let num = |k: &str| {
            v.get(k)
                .and_then(|x| x.as_f64())
                .ok_or_else(|| D::Error::custom(format!("distribution: missing number '{k}'")))
        };
        let bounds = |k: &str| -> (Option<f64>, Option<f64>) {
            let b = &v["ci"][k];
            (b[0].as_f64(), b[1].as_f64())
        };
        let (lo, hi) = bounds("mean");
        let mut percentiles: Vec<(f64, Estimate)> = Vec::new();
        if let Some(o) = v.as_object() {
            for (k, x) in o {
                let Some(p) = k
                    .strip_prefix('p')
                    .and_then(|r| r.strip_suffix("_ms"))
                    .and_then(|p| p.parse::<f64>().ok())
                else {
                    continue;
                };
                let (plo, phi) = bounds(&format!("p{}", pct_label(p)));
                let value = x.as_f64().ok_or_else(|| {
                    D::Error::custom(format!("distribution: '{k}' is not a number"))
                })?;
                percentiles.push((
                    p,
                    Estimate {
                        value,
                        lo: plo,
                        hi: phi,
                    },
                ));
            }
        }
        percentiles.sort_by(|a, b| a.0.total_cmp(&b.0));
        Ok(Distribution {
            count: num("count")? as usize,
            mean: Estimate {
                value: num("mean_ms")?,
                lo,
                hi,
            },
            std: num("std_ms")?,
            min: num("min_ms")?,
            max: num("max_ms")?,
            percentiles,
            ci_method: serde_json::from_value(v["ci_method"].clone()).map_err(D::Error::custom)?,
            // Absent in results written before quantiles were kept.
            quantiles: match v.get("quantiles_ms") {
                None | Some(serde_json::Value::Null) => Vec::new(),
                Some(q) => serde_json::from_value(q.clone())
                    .map_err(|e| D::Error::custom(format!("distribution: 'quantiles_ms': {e}")))?,
            },
        })
    }
}

fn mean_std(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = if v.len() > 1 {
        v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    (mean, var.sqrt())
}

/// Describe per-request values given in the order they happened (the
/// order the aggregator received them): exact percentiles, and intervals
/// that respect dependence between neighbouring requests ([`quantile_ranks`],
/// [`mean_half_width`]).
pub fn describe(values: Vec<f64>, percentiles: &[f64], level: Level) -> Option<Distribution> {
    let n = values.len();
    describe_read(values, n, percentiles, level)
}

/// [`describe`] for a run whose last `len − read` values are its drain
/// ([`read_before_drain`]): the mean's interval reads its spread before the
/// drain and spans both the mean of those values and the mean of all.
pub fn describe_read(
    values: Vec<f64>,
    read: usize,
    percentiles: &[f64],
    level: Level,
) -> Option<Distribution> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.clone();
    sorted.sort_by(f64::total_cmp);
    let (mean, std) = mean_std(&sorted);
    let mut d = describe_ordered(
        sorted.as_slice(),
        Some(&values),
        mean,
        std,
        percentiles,
        level,
    );
    if read < values.len() && d.count > 1 {
        let before = &values[..read];
        let steady = before.iter().sum::<f64>() / read as f64;
        let half = mean_half_width(values.len(), std, Some(before), steady, level);
        d.mean.lo = Some(not_below_zero(mean.min(steady) - half, d.min));
        d.mean.hi = Some(mean.max(steady) + half);
    }
    Some(d)
}

/// [`describe`] from order statistics (sorted values or a histogram), with
/// the mean and standard deviation given, and `in_time` the values (all of
/// them, or the first of them when `o` is a histogram) in the order they
/// happened, from which the dependence between neighbours is read.
/// Without `in_time` the intervals treat the values as independent.
pub fn describe_ordered(
    o: &(impl Ordered + ?Sized),
    in_time: Option<&[f64]>,
    mean: f64,
    std: f64,
    percentiles: &[f64],
    level: Level,
) -> Distribution {
    let n = o.count();
    let pct = percentiles
        .iter()
        .map(|&p| {
            let value = percentile_of(o, p).unwrap_or(f64::NAN);
            let (l, u) = quantile_ranks(o, in_time, p / 100.0, level);
            let lo = (l >= 1).then(|| o.at(l - 1));
            let hi = (u <= n).then(|| o.at(u - 1));
            (p, Estimate { value, lo, hi })
        })
        .collect();
    let half = mean_half_width(n, std, in_time, mean, level);
    Distribution {
        count: n,
        mean: Estimate {
            value: mean,
            lo: (n > 1).then(|| not_below_zero(mean - half, o.at(0))),
            hi: (n > 1).then_some(mean + half),
        },
        std,
        min: o.at(0),
        max: o.at(n - 1),
        percentiles: pct,
        ci_method: CiMethod::Binomial,
        quantiles: quantiles_sorted(o),
    }
}

/// How many of `n` values in time order a mean's spread is read from when
/// the last `drain` of them finished after the run's last send (the drain).
/// After the last send the engine's batch only shrinks, so the drain's
/// values are off the run's (a closed loop of 64 users at 92 % of capacity:
/// its last 64 TPOTs 4 to 5 batch standard deviations under the others), the
/// same shape in every run: a bias, not noise. Read as noise it made a mean
/// TPOT's batch variance 5 times what the runs' own spread is. The drain is
/// left unread only where at least half the values remain.
pub fn read_before_drain(n: usize, drain: usize) -> usize {
    if drain.saturating_mul(2) <= n {
        n - drain
    } else {
        n
    }
}

/// Describe pooled values (ITL, ICL) grouped by request, requests in the
/// order they finished: exact percentiles over all values; intervals by
/// batch means over whole requests ([`batch::spread`]: values within a
/// request are alike, and so are neighbouring requests, which shared the
/// engine's steps). `groups[r]` is the end offset of request r's values in
/// `values`. Fewer than [`batch::MIN_BATCHES`] requests: no interval. The
/// mean's spread is read from the first `read` requests (the rest are the
/// run's drain: [`read_before_drain`]), as [`describe_read`] reads it.
pub fn describe_pooled(
    values: &[f32],
    groups: &[u32],
    read: usize,
    percentiles: &[f64],
    level: Level,
) -> Option<Distribution> {
    if values.is_empty() {
        return None;
    }
    let mut sorted: Vec<f64> = values.iter().map(|&v| v as f64).collect();
    sorted.sort_by(f64::total_cmp);
    let (mean, std) = mean_std(&sorted);
    let mut d = describe_ordered(sorted.as_slice(), None, mean, std, percentiles, level);
    d.ci_method = CiMethod::BatchMeans;
    let by_request = |groups: &[u32], f: &dyn Fn(&[f32]) -> f64| -> Vec<(f64, f64)> {
        groups
            .iter()
            .scan(0usize, |start, &end| {
                let r = &values[*start..end as usize];
                *start = end as usize;
                Some((f(r), r.len() as f64))
            })
            .collect()
    };
    let sum = |r: &[f32]| r.iter().map(|&v| v as f64).sum::<f64>();
    let Some(all) = batch::spread(&by_request(groups, &sum)) else {
        d.ci_method = CiMethod::None;
        d.mean.lo = None;
        d.mean.hi = None;
        for (_, e) in d.percentiles.iter_mut() {
            e.lo = None;
            e.hi = None;
        }
        return Some(d);
    };
    // The mean: its spread read before the drain, scaled to all values,
    // the interval spanning the mean before it and the mean of all.
    let before = batch::spread(&by_request(&groups[..read.min(groups.len())], &sum))
        .filter(|_| read < groups.len())
        .unwrap_or(all);
    let scale = all.weight / before.weight;
    let steady = before.amount / before.weight;
    let half =
        (before.ratio_half_width(level) / scale.sqrt()).max(d.mean.hi.map_or(0.0, |h| h - mean));
    d.mean.lo = Some(mean.min(steady) - half);
    d.mean.hi = Some(mean.max(steady) + half);
    let n = sorted.len();
    for (p, e) in d.percentiles.iter_mut() {
        let q = *p / 100.0;
        let binomial = binomial_ci_ranks(n, q, level.two_sided_confidence());
        let spread_below = |v: f64| {
            batch::spread(&by_request(groups, &|r| {
                r.iter().filter(|&&x| (x as f64) < v).count() as f64
            }))
        };
        let (l, u) = dependent_ranks(binomial, n, q, level, 1.0, |k| sorted[k - 1], spread_below);
        e.lo = (l >= 1).then(|| sorted[l - 1]);
        e.hi = (u <= n).then(|| sorted[u - 1]);
    }
    Some(d)
}

/// A rate (per second) with a 95 % interval by batch means over equal time
/// blocks: `blocks[i]` is the amount in block i, each `block_s` long, in
/// time order. The blocks must cover the whole window the rate is over, a
/// block in which nothing happened included as a 0: leaving the empty
/// blocks out describes a shorter, busier run than the one measured.
/// Neighbouring blocks are alike (a queue drains over many of them), so
/// the spread comes from batches of consecutive blocks ([`batch::spread`]),
/// not from the blocks as independent draws.
///
/// Amounts are whole units (requests, tokens), and blocks that all hold the
/// same count give an interval of width 0 that no run deserves (a steady
/// closed loop completes 3 requests in every second). So neither side
/// is ever narrower than what the counts can resolve: when none of `n`
/// blocks came out one unit off, a share of up to `1 − 0.025^(1/n)`
/// (≈ 3.7/n) of blocks that would have can still go unseen at 97.5 %, and
/// the mean moves by that many units per block. With nothing counted the
/// upper bound is then about the exact Poisson one, `−ln 0.025 / T`.
/// Fewer than 5 blocks: both sides open.
pub fn rate_with_ci(total: f64, duration_s: f64, blocks: &[f64], block_s: f64) -> Estimate {
    let value = if duration_s > 0.0 {
        total / duration_s
    } else {
        0.0
    };
    if blocks.len() < 5 || block_s <= 0.0 {
        return Estimate {
            value,
            lo: None,
            hi: None,
        };
    }
    let n = blocks.len();
    let items: Vec<(f64, f64)> = blocks.iter().map(|&x| (x, 1.0)).collect();
    // Fewer blocks than batch means needs: each block its own batch.
    let half = match batch::spread(&items) {
        Some(s) => s.ratio_half_width(Level::TwoSided) / block_s,
        None => {
            let mean = blocks.iter().sum::<f64>() / n as f64;
            let var = blocks.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n as f64 - 1.0);
            t_975(n - 1) * (var / n as f64).sqrt() / block_s
        }
    };
    let resolution = (1.0 - 0.025_f64.powf(1.0 / n as f64)) / block_s;
    let half = half.max(resolution);
    Estimate {
        value,
        lo: Some((value - half).max(0.0)),
        hi: Some(value + half),
    }
}

/// The two-sided 95 % quantile of Student's t with `df` degrees of freedom.
pub fn t_975(df: usize) -> f64 {
    Level::TwoSided.t(df)
}

#[cfg(test)]
mod tests {
    use super::*;

    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    /// Values in time order whose neighbours are alike (a level that holds
    /// for 40 values, as a queue holds its length): the batch-means ranks
    /// cover the true median of the process about 95 % of the time, where
    /// the binomial ranks alone cover it far less often.
    #[test]
    fn dependent_values_get_intervals_that_cover() {
        let mut rng = StdRng::seed_from_u64(11);
        let (mut widened, mut binomial) = (0, 0);
        for _ in 0..300 {
            let mut v = Vec::with_capacity(2000);
            while v.len() < 2000 {
                let level: f64 = rng.random();
                for _ in 0..40 {
                    v.push(level + rng.random::<f64>());
                }
            }
            // The sum of two uniforms: median 1.
            let d = describe(v.clone(), &[50.0], Level::TwoSided).unwrap();
            let e = d.percentiles[0].1;
            widened += usize::from(e.lo.unwrap() <= 1.0 && 1.0 <= e.hi.unwrap());
            let mut sorted = v;
            sorted.sort_by(f64::total_cmp);
            let (l, u) = binomial_ci_ranks(2000, 0.5, 0.95);
            binomial += usize::from(sorted[l - 1] <= 1.0 && 1.0 <= sorted[u - 1]);
        }
        assert!(
            (276..=297).contains(&widened),
            "batch means covered {widened} of 300"
        );
        assert!(binomial < 200, "binomial ranks covered {binomial} of 300");
    }

    /// A run whose last 64 values are its drain, 2 standard deviations
    /// under the rest (a closed loop of 64 users whose batch empties): read
    /// as noise, the drain makes the mean's interval several times wider
    /// than the runs' own spread; read before it, the interval is about the
    /// independent one and spans the mean before the drain and the mean of
    /// all.
    #[test]
    fn a_runs_drain_is_not_read_as_noise() {
        let mut rng = StdRng::seed_from_u64(21);
        let mut v: Vec<f64> = (0..2000).map(|_| rng.random::<f64>()).collect();
        let sd = (1.0f64 / 12.0).sqrt();
        for x in &mut v[1936..] {
            *x -= 2.0 * sd;
        }
        let width = |d: &Distribution| d.mean.hi.unwrap() - d.mean.lo.unwrap();
        let all = describe(v.clone(), &[50.0], Level::TwoSided).unwrap();
        let read = read_before_drain(2000, 64);
        assert_eq!(read, 1936);
        let before = describe_read(v.clone(), read, &[50.0], Level::TwoSided).unwrap();
        let independent = 2.0 * 1.96 * sd / 2000f64.sqrt();
        assert!(width(&all) > 2.0 * independent, "{}", width(&all));
        let steady = v[..read].iter().sum::<f64>() / read as f64;
        let shift = steady - before.mean.value;
        assert!(
            width(&before) - shift < 1.3 * independent,
            "{} (shift {shift})",
            width(&before)
        );
        let lo = before.mean.lo.unwrap();
        let hi = before.mean.hi.unwrap();
        assert!(lo < before.mean.value && before.mean.value < steady && steady < hi);
        // The percentiles read all values either way.
        assert_eq!(all.percentiles, before.percentiles);
        // A drain longer than half the run is read with it.
        assert_eq!(read_before_drain(100, 64), 100);
    }

    #[test]
    fn coverage_is_at_least_95_percent() {
        // Uniform(0,1) samples: the true median is 0.5.
        let mut rng = StdRng::seed_from_u64(9);
        let (mut hits, mut open) = (0, 0);
        for _ in 0..400 {
            let v: Vec<f64> = (0..50).map(|_| rng.random::<f64>()).collect();
            let d = describe(v, &[50.0], Level::TwoSided).unwrap();
            let e = d.percentiles[0].1;
            // An open side covers. For independent values it is rare: the
            // batches merge to four on a lag-1 autocorrelation seen by
            // chance, one time in twenty at eight batches.
            open += usize::from(e.lo.is_none() || e.hi.is_none());
            if e.lo.unwrap_or(f64::MIN) <= 0.5 && 0.5 <= e.hi.unwrap_or(f64::MAX) {
                hits += 1;
            }
        }
        assert!(hits >= 372, "coverage {hits}/400");
        assert!(open <= 4, "{open} of 400 open");
    }

    /// Two durations, far apart: Student's t on one degree of freedom
    /// (12.7, not 1.96), and a lower end at 0, not below it.
    #[test]
    fn a_mean_of_few_values_takes_t_and_stays_non_negative() {
        let d = describe(vec![650.0, 3650.0], &[50.0], Level::TwoSided).unwrap();
        let half = d.mean.hi.unwrap() - d.mean.value;
        // std 2121.3, √2: 12.706 × 1500 = 19,059.
        assert!((half - 12.706 * 1500.0).abs() < 1.0, "{half}");
        assert_eq!(d.mean.lo, Some(0.0));
    }

    #[test]
    fn describe_and_pooled() {
        let d = describe(vec![3.0, 1.0, 2.0], &[50.0, 99.0], Level::TwoSided).unwrap();
        assert_eq!((d.min, d.max, d.count), (1.0, 3.0, 3));
        assert_eq!(d.mean.value, 2.0);
        assert!((d.std - 1.0).abs() < 1e-12);
        assert!(d.percentiles[1].1.inconclusive());
        // p0 is the minimum, p50 the median, p100 the maximum.
        assert_eq!(d.quantiles.len(), QUANTILE_COUNT);
        assert_eq!(
            (d.quantiles[0], d.quantiles[50], d.quantiles[100]),
            (1.0, 2.0, 3.0)
        );
        assert_eq!(d.quantiles[25], 1.5);
        let values: Vec<f32> = (0..400)
            .map(|i| ((i * 37 + (i / 20) * 11) % 101) as f32)
            .collect();
        let groups: Vec<u32> = (1..=20).map(|r| r * 20).collect();
        let p = describe_pooled(
            &values,
            &groups,
            groups.len(),
            &[50.0, 90.0],
            Level::TwoSided,
        )
        .unwrap();
        assert_eq!(p.count, 400);
        assert_eq!(p.ci_method, CiMethod::BatchMeans);
        let e = p.percentiles[0].1;
        assert!(e.lo.unwrap() <= e.value && e.value <= e.hi.unwrap());
    }

    #[test]
    fn pooled_intervals_follow_the_spread_between_requests() {
        // 3,000 requests x 100 values, each request around its own level.
        let mut rng = StdRng::seed_from_u64(5);
        let mut values = Vec::new();
        let mut groups = Vec::new();
        for _ in 0..3000 {
            let base: f32 = rng.random_range(8.0..12.0);
            for _ in 0..100 {
                values.push(base + rng.random_range(-1.0..1.0f32));
            }
            groups.push(values.len() as u32);
        }
        let p = describe_pooled(
            &values,
            &groups,
            groups.len(),
            &[50.0, 99.0],
            Level::TwoSided,
        )
        .unwrap();
        let (v, lo, hi) = (
            p.percentiles[0].1.value,
            p.percentiles[0].1.lo.unwrap(),
            p.percentiles[0].1.hi.unwrap(),
        );
        assert!(lo < v && v < hi, "{lo} {v} {hi}");
        // Per-request offsets dominate: the median's interval is about
        // ±1.96 * sd(base)/sqrt(3000) = ±0.04 wide, far from zero or one.
        assert!(hi - lo > 0.02 && hi - lo < 0.3, "width {}", hi - lo);
        assert!(p.mean.lo.unwrap() < p.mean.value && p.mean.value < p.mean.hi.unwrap());
    }

    #[test]
    fn rate_interval_brackets_the_rate() {
        let blocks = vec![10.0, 12.0, 9.0, 11.0, 10.0, 8.0, 12.0, 10.0];
        let e = rate_with_ci(82.0, 8.0, &blocks, 1.0);
        assert!((e.value - 10.25).abs() < 1e-9);
        assert!(e.lo.unwrap() < 10.25 && e.hi.unwrap() > 10.25);
        assert!(rate_with_ci(5.0, 2.0, &[2.0, 3.0], 1.0).lo.is_none());
    }

    /// Blocks that all hold the same count (a steady closed loop) do not
    /// make a zero-width interval: each side is at least the counts'
    /// resolution, 1 − 0.025^(1/n) units per block.
    #[test]
    fn identical_block_counts_still_have_an_interval() {
        let blocks = vec![3.0; 60];
        let e = rate_with_ci(179.4, 60.0, &blocks, 1.0);
        let resolution = 1.0 - 0.025_f64.powf(1.0 / 60.0);
        assert!((resolution - 0.0597).abs() < 1e-3, "{resolution}");
        assert!((e.value - 2.99).abs() < 1e-9);
        let (lo, hi) = (e.lo.unwrap(), e.hi.unwrap());
        assert!((lo - (2.99 - resolution)).abs() < 1e-9, "{lo}");
        assert!((hi - (2.99 + resolution)).abs() < 1e-9, "{hi}");
        // Nothing counted: about the exact Poisson upper bound, −ln 0.025 / T.
        let none = rate_with_ci(0.0, 60.0, &[0.0; 60], 1.0);
        assert_eq!(none.lo, Some(0.0));
        let poisson = -(0.025_f64.ln()) / 60.0;
        assert!(
            (none.hi.unwrap() / poisson - 1.0).abs() < 0.05,
            "{:?}",
            none.hi
        );
        // Blocks that vary keep their batch-means interval, wider than the floor.
        let varied = [1.0, 5.0, 2.0, 6.0, 3.0, 4.0, 1.0, 6.0, 2.0, 5.0];
        let v = rate_with_ci(35.0, 10.0, &varied, 1.0);
        assert!(v.hi.unwrap() - v.value > 0.5, "{v:?}");
    }
}
