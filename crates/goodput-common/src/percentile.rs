//! Percentiles, defined once for every crate that reports one: numpy's
//! default (`numpy.percentile`, method `linear`), which is also what
//! `vllm bench serve` reports. The `p`-th percentile of n values in
//! ascending order sits at the fractional 0-based rank `p/100 · (n − 1)`,
//! and between two ranks it is interpolated linearly
//! (`docs/metrics.md`, percentiles).
//!
//! goodput's metrics (`goodput-core`) read their percentiles through
//! [`percentile_by_rank`], over sorted values or a histogram; the benchmarks
//! of goodput itself (`goodput-bench`) through [`percentile_sorted`]. The
//! simulator's reference goodput keeps a copy of its own on purpose: it is
//! the independent computation the measured figures are checked against.

/// The `p`-th percentile (`p` in 0–100, clamped) of `n` values in ascending
/// order, where `at(i)` is the value at 0-based position `i`; `None` when
/// `n == 0`. Reads at most two positions, so `at` may be a histogram's
/// lookup as well as a slice's index.
pub fn percentile_by_rank(n: usize, p: f64, at: impl Fn(usize) -> f64) -> Option<f64> {
    if n == 0 {
        return None;
    }
    let rank = (p / 100.0).clamp(0.0, 1.0) * (n - 1) as f64;
    let lo = rank.floor() as usize;
    let hi = rank.ceil() as usize;
    let frac = rank - lo as f64;
    let a = at(lo);
    Some(a + (at(hi) - a) * frac)
}

/// The `p`-th percentile (0–100) of `sorted` (ascending); `None` when empty.
pub fn percentile_sorted(sorted: &[f64], p: f64) -> Option<f64> {
    percentile_by_rank(sorted.len(), p, |i| sorted[i])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_match_numpy_linear() {
        let v = [1.0, 2.0, 3.0, 4.0];
        // numpy.percentile([1,2,3,4], [0, 25, 50, 90, 99, 100]) = [1, 1.75, 2.5, 3.7, 3.97, 4]
        for (p, want) in [
            (0.0, 1.0),
            (25.0, 1.75),
            (50.0, 2.5),
            (90.0, 3.7),
            (99.0, 3.97),
            (100.0, 4.0),
        ] {
            let got = percentile_sorted(&v, p).unwrap();
            assert!((got - want).abs() < 1e-12, "p{p}: {got} vs {want}");
        }
        assert_eq!(percentile_sorted(&[7.0], 99.0), Some(7.0));
        assert_eq!(percentile_sorted(&[], 50.0), None);
        // 1..=100: p90 = 90.1, p99 = 99.01
        let h: Vec<f64> = (1..=100).map(f64::from).collect();
        assert!((percentile_sorted(&h, 90.0).unwrap() - 90.1).abs() < 1e-9);
        assert!((percentile_sorted(&h, 99.0).unwrap() - 99.01).abs() < 1e-9);
        // Out-of-range percentiles are clamped to the minimum and maximum.
        assert_eq!(percentile_sorted(&v, -5.0), Some(1.0));
        assert_eq!(percentile_sorted(&v, 150.0), Some(4.0));
    }

    /// Positions read through `at` are those of the ascending order: the
    /// same answer from a slice and from any lookup of the same values.
    #[test]
    fn by_rank_reads_the_lookup() {
        let v = [10.0, 20.0, 30.0];
        let got = percentile_by_rank(3, 75.0, |i| v[i]);
        assert_eq!(got, percentile_sorted(&v, 75.0));
        assert_eq!(got, Some(25.0));
        assert_eq!(percentile_by_rank(0, 50.0, |_| unreachable!()), None);
    }
}
