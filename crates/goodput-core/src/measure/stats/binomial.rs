//! Binomial order-statistic ranks: which order statistics bound a quantile.
//!
//! For n values from a continuous distribution, the number B of values at or
//! below the true q-quantile is Binomial(n, q), so the order statistics
//! `[x(l), x(u)]` cover it with probability `P(l <= B <= u − 1)`.
//! [`binomial_ci_ranks`] chooses `(l, u)` so each tail has probability at
//! most `(1 − confidence)/2`. Every interval on a per-request percentile
//! (the 95 % intervals of a distribution, a verdict, an early look at a
//! sweep point) takes its ranks from this one function.

/// 1-based ranks `(l, u)` of the order statistics bounding the `q`-quantile
/// of `n` values with coverage at least `confidence`, each tail at most
/// `(1 − confidence)/2`; a rank outside `1..=n` means that side is open.
///
/// The rule: the largest `l` with `P(B <= l−1) <= tail` and the smallest
/// `u` with `P(B <= u−1) >= 1 − tail`, B ~ Binomial(n, q). The distribution
/// is summed only over the window around its mode where the probability is
/// at least `tail · e^−40` times the mode's; the terms left out decay
/// geometrically and are negligible against `tail`, so the cost is O(√n)
/// instead of O(n) (the tests check it against the full sum).
/// Invalid arguments (`n == 0`, `q` or `confidence` outside (0, 1)) give
/// `(0, n + 1)`: both sides open.
pub fn binomial_ci_ranks(n: usize, q: f64, confidence: f64) -> (usize, usize) {
    if n == 0 || !(q > 0.0 && q < 1.0) || !(confidence > 0.0 && confidence < 1.0) {
        return (0, n + 1);
    }
    let tail = (1.0 - confidence) / 2.0;
    let (first, cdf) = binomial_cdf_window(n, q, -tail.ln() + 40.0);
    // P(B <= j): 0 below the window, 1 above it.
    let cdf_at = |j: usize| -> f64 {
        if j < first {
            0.0
        } else {
            cdf.get(j - first).copied().unwrap_or(1.0)
        }
    };
    // cdf is non-decreasing: l is the first j in 0..n with cdf(j) > tail
    // (n if none), u − 1 the first with cdf(j) >= 1 − tail (u = n + 1 if none).
    let (mut l, mut u) = (None, n + 1);
    for j in first..n {
        let c = cdf_at(j);
        if l.is_none() && c > tail {
            l = Some(j);
        }
        if c >= 1.0 - tail {
            u = j + 1;
            break;
        }
    }
    (l.unwrap_or(n), u)
}

/// `(first, cdf)` with `cdf[i] = P(B <= first + i)`, B ~ Binomial(n, q),
/// over the window of k whose probability is within `e^−cut` of the mode's.
fn binomial_cdf_window(n: usize, q: f64, cut: f64) -> (usize, Vec<f64>) {
    let mode = (((n + 1) as f64 * q).floor() as usize).min(n);
    // ln of pmf(k−1)/pmf(k) = ln(k/(n−k+1)) + ln((1−q)/q), and its inverse.
    let lr = (1.0 - q).ln() - q.ln();
    let mut down = Vec::new();
    let (mut w, mut k) = (0.0, mode);
    while k > 0 {
        w += (k as f64).ln() - ((n - k + 1) as f64).ln() + lr;
        if w < -cut {
            break;
        }
        down.push(w);
        k -= 1;
    }
    let mut up = Vec::new();
    let (mut w, mut k) = (0.0, mode);
    while k < n {
        w += ((n - k) as f64).ln() - ((k + 1) as f64).ln() - lr;
        if w < -cut {
            break;
        }
        up.push(w);
        k += 1;
    }
    let first = mode - down.len();
    let pmf: Vec<f64> = down
        .iter()
        .rev()
        .copied()
        .chain(std::iter::once(0.0))
        .chain(up)
        .map(f64::exp)
        .collect();
    let total: f64 = pmf.iter().sum();
    let mut acc = 0.0;
    let cdf = pmf
        .iter()
        .map(|p| {
            acc += p;
            (acc / total).min(1.0)
        })
        .collect();
    (first, cdf)
}

/// The full distribution, term by term: `cdf[k] = P(B <= k)` for every k in
/// `0..=n`, accumulated from the pmf's ratio in log space. O(n): the
/// reference the windowed sum is tested against.
#[cfg(test)]
pub(crate) fn binomial_cdf_full(n: usize, q: f64) -> Vec<f64> {
    let (lq, l1q) = (q.ln(), (1.0 - q).ln());
    let mut log_pmf = n as f64 * l1q;
    let mut cdf = Vec::with_capacity(n + 1);
    let mut acc = 0.0;
    for k in 0..=n {
        if k > 0 {
            log_pmf += ((n - k + 1) as f64).ln() - (k as f64).ln() + lq - l1q;
        }
        acc += log_pmf.exp();
        cdf.push(acc.min(1.0));
    }
    cdf
}

/// Exact coverage `P(l <= B <= u−1)`, B ~ Binomial(n, q), of ranks `(l, u)`.
#[cfg(test)]
pub(crate) fn exact_coverage(n: usize, q: f64, (l, u): (usize, usize)) -> f64 {
    let (first, cdf) = binomial_cdf_window(n, q, 80.0);
    let cdf_at = |j: isize| -> f64 {
        if j < first as isize {
            0.0
        } else {
            cdf.get(j as usize - first).copied().unwrap_or(1.0)
        }
    };
    cdf_at(u as isize - 1) - cdf_at(l as isize - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rule of [`binomial_ci_ranks`] applied to the full sum, every term.
    fn brute_force_ranks(n: usize, q: f64, confidence: f64) -> (usize, usize) {
        let tail = (1.0 - confidence) / 2.0;
        let cdf = binomial_cdf_full(n, q);
        // Largest l with P(B <= l-1) <= tail; smallest u with P(B <= u-1) >= 1 - tail.
        let l = (1..=n)
            .take_while(|&k| cdf[k - 1] <= tail)
            .last()
            .unwrap_or(0);
        let u = (1..=n).find(|&k| cdf[k - 1] >= 1.0 - tail).unwrap_or(n + 1);
        (l, u)
    }

    #[test]
    fn ranks_match_the_full_sum() {
        let qs = [0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999];
        let sizes = (1..=400)
            .chain((401..=5000).step_by(37))
            .chain([20_000, 100_000]);
        for n in sizes {
            for &q in &qs {
                for confidence in [0.9, 0.95, 0.99] {
                    assert_eq!(
                        binomial_ci_ranks(n, q, confidence),
                        brute_force_ranks(n, q, confidence),
                        "n={n} q={q} confidence={confidence}"
                    );
                }
            }
        }
        assert_eq!(binomial_ci_ranks(0, 0.5, 0.95), (0, 1));
        assert_eq!(binomial_ci_ranks(10, 1.0, 0.95), (0, 11));
        assert_eq!(binomial_ci_ranks(10, 0.0, 0.95), (0, 11));
        assert_eq!(binomial_ci_ranks(10, 0.5, 1.0), (0, 11));
    }

    #[test]
    fn ranks_known_values() {
        // Median of 10: the classical interval is [x(2), x(9)] (coverage 97.9 %).
        assert_eq!(binomial_ci_ranks(10, 0.5, 0.95), (2, 9));
        // p99 needs about 367 samples for a finite upper bound.
        assert!(binomial_ci_ranks(300, 0.99, 0.95).1 > 300);
        let (l, u) = binomial_ci_ranks(1000, 0.99, 0.95);
        assert!(
            (980..990).contains(&l) && (991..=1000).contains(&u),
            "{l} {u}"
        );
    }

    #[test]
    fn ranks_at_higher_confidence_are_wider_and_cover() {
        for (n, q) in [(200, 0.5), (1000, 0.99), (5000, 0.9), (1_000_000, 0.99)] {
            let (l95, u95) = binomial_ci_ranks(n, q, 0.95);
            let (l99, u99) = binomial_ci_ranks(n, q, 0.99);
            assert!(l99 <= l95 && u99 >= u95, "n={n} q={q}");
            for conf in [0.9, 0.95, 0.99, 0.999] {
                let r = binomial_ci_ranks(n, q, conf);
                let c = exact_coverage(n, q, r);
                assert!(c >= conf - 1e-12, "n={n} q={q} conf={conf}: {c}");
            }
        }
    }
}
