//! Percentiles of samples, defined as numpy's default (linear interpolation
//! between closest ranks), which is what `vllm bench serve` reports: the
//! one definition goodput's own metrics use
//! ([`goodput_common::percentile`]).

/// The `p`-th percentile (0..=100) of `sorted` (ascending); NaN when empty.
pub fn percentile_sorted(sorted: &[f64], p: f64) -> f64 {
    goodput_common::percentile::percentile_sorted(sorted, p).unwrap_or(f64::NAN)
}

/// Sorted copy of `samples`, NaNs dropped.
pub fn sorted(samples: &[f64]) -> Vec<f64> {
    let mut out: Vec<f64> = samples.iter().copied().filter(|v| !v.is_nan()).collect();
    out.sort_by(f64::total_cmp);
    out
}

/// Median, 99th percentile and maximum of a sample.
#[derive(Debug, Clone, Copy)]
pub struct Spread {
    /// Number of samples.
    pub n: usize,
    /// 50th percentile.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Largest sample.
    pub max: f64,
}

impl Spread {
    /// Summarizes `samples` (any order).
    pub fn of(samples: &[f64]) -> Self {
        let s = sorted(samples);
        Self {
            n: s.len(),
            p50: percentile_sorted(&s, 50.0),
            p99: percentile_sorted(&s, 99.0),
            max: s.last().copied().unwrap_or(f64::NAN),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_numpy_linear_interpolation() {
        // numpy.percentile([1, 2, 3, 4], [50, 99, 25]) == [2.5, 3.97, 1.75]
        let s = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile_sorted(&s, 50.0), 2.5);
        assert!((percentile_sorted(&s, 99.0) - 3.97).abs() < 1e-12);
        assert_eq!(percentile_sorted(&s, 25.0), 1.75);
        assert_eq!(percentile_sorted(&s, 100.0), 4.0);
        assert_eq!(percentile_sorted(&[7.0], 99.0), 7.0);
        assert!(percentile_sorted(&[], 50.0).is_nan());
    }

    #[test]
    fn spread_sorts_its_input() {
        let spread = Spread::of(&[5.0, 1.0, 3.0, f64::NAN]);
        assert_eq!(spread.n, 3);
        assert_eq!(spread.p50, 3.0);
        assert_eq!(spread.max, 5.0);
    }
}
