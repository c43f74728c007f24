//! Whether a change between two runs is larger than their noise, by one of
//! three tests, each two-sided at α = [`ALPHA`]:
//!
//! - [`mann_whitney`]: the Mann–Whitney U (Wilcoxon rank-sum) test on the
//!   per-request values of both runs, normal approximation with midranks for
//!   ties, the tie correction of the variance and a continuity correction
//!   (the same p-value as SciPy's `mannwhitneyu(method="asymptotic")`). It
//!   asks whether a request of one run tends to be slower than one of the
//!   other — a shift of the whole distribution — so its verdict is shared by
//!   a metric's mean and every percentile.
//! - [`intervals_apart`]: the two saved 95 % intervals do not overlap. An
//!   open bound (too few samples) is taken as unbounded on that side. Apart
//!   intervals are strong evidence (for two intervals of equal width the
//!   false-alarm rate is well under 1 %), overlapping ones do not prove there
//!   is no change: the test is conservative.
//! - [`two_proportions`]: the pooled two-proportion z-test, for the error
//!   rate (failed of finished requests).

use serde::Serialize;

/// Significance level of every test.
pub const ALPHA: f64 = 0.05;

/// How a figure's significance was decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Mann–Whitney rank test on the per-request values of both records files.
    MannWhitney,
    /// Whether the saved 95 % intervals overlap.
    Intervals,
    /// Two-proportion z-test on the failed and finished counts.
    TwoProportions,
    /// No interval, no records: not known.
    None,
}

/// A figure's significance: `significant` is `None` when it is not known.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Significance {
    pub method: Method,
    pub significant: Option<bool>,
    /// The p-value of a rank or proportion test.
    pub p_value: Option<f64>,
}

impl Significance {
    pub const NOT_AVAILABLE: Significance = Significance {
        method: Method::None,
        significant: None,
        p_value: None,
    };

    fn from_p(method: Method, p: f64) -> Significance {
        Significance {
            method,
            significant: Some(p < ALPHA),
            p_value: Some(p),
        }
    }

    /// How it was decided: `rank test, p = 0.003`, `intervals overlap`.
    pub fn reason(&self) -> String {
        match (self.method, self.p_value, self.significant) {
            (Method::MannWhitney, Some(p), _) => format!("rank test, {}", format_p(p)),
            (Method::TwoProportions, Some(p), _) => format!("proportions, {}", format_p(p)),
            (Method::Intervals, _, Some(true)) => "intervals apart".into(),
            (Method::Intervals, _, Some(false)) => "intervals overlap".into(),
            _ => "no interval and no per-request values".into(),
        }
    }

    /// `yes (rank test, p = 0.003)`, `no (intervals overlap)`, `n/a`.
    pub fn describe(&self) -> String {
        match self.significant {
            None => "n/a".into(),
            Some(sig) => format!("{} ({})", if sig { "yes" } else { "no" }, self.reason()),
        }
    }
}

/// `p = 0.034`, `p < 0.001`.
pub fn format_p(p: f64) -> String {
    if p < 0.001 {
        "p < 0.001".into()
    } else {
        format!("p = {p:.3}")
    }
}

/// The result of a rank test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RankTest {
    /// U of the first sample: the number of (a, b) pairs with a > b, ties counting ½.
    pub u: f64,
    /// The continuity-corrected z (≥ 0).
    pub z: f64,
    /// Two-sided p-value.
    pub p_value: f64,
}

/// Two-sided Mann–Whitney U test of `a` against `b` (normal approximation,
/// tie and continuity corrections). Non-finite values are left out; `None`
/// when either sample is then empty. Every value tied (no spread) gives p = 1.
pub fn mann_whitney(a: &[f64], b: &[f64]) -> Option<RankTest> {
    let mut all: Vec<(f64, bool)> = a
        .iter()
        .filter(|x| x.is_finite())
        .map(|&x| (x, true))
        .chain(b.iter().filter(|x| x.is_finite()).map(|&x| (x, false)))
        .collect();
    let n1 = all.iter().filter(|x| x.1).count() as f64;
    let n2 = all.len() as f64 - n1;
    if n1 == 0.0 || n2 == 0.0 {
        return None;
    }
    all.sort_by(|x, y| x.0.total_cmp(&y.0));
    let n = all.len();
    // Midranks: a run of t tied values at 0-based positions i..j shares the
    // rank (i + 1 + j) / 2; Σ (t³ − t) corrects the variance for them.
    let (mut rank_sum_a, mut ties) = (0.0, 0.0);
    let mut i = 0;
    while i < n {
        let j = i + all[i..].iter().take_while(|x| x.0 == all[i].0).count();
        let rank = (i + 1 + j) as f64 / 2.0;
        rank_sum_a += rank * all[i..j].iter().filter(|x| x.1).count() as f64;
        let t = (j - i) as f64;
        ties += t * t * t - t;
        i = j;
    }
    let nf = n as f64;
    let u = rank_sum_a - n1 * (n1 + 1.0) / 2.0;
    let mean = n1 * n2 / 2.0;
    let var = n1 * n2 / 12.0 * ((nf + 1.0) - ties / (nf * (nf - 1.0)));
    if var <= 0.0 || !var.is_finite() {
        return Some(RankTest {
            u,
            z: 0.0,
            p_value: 1.0,
        });
    }
    let z = ((u - mean).abs() - 0.5).max(0.0) / var.sqrt();
    Some(RankTest {
        u,
        z,
        p_value: two_sided_p(z),
    })
}

/// The rank test's verdict, or `None` when a sample is empty.
pub fn by_rank_test(base: &[f64], new: &[f64]) -> Option<Significance> {
    mann_whitney(base, new).map(|t| Significance::from_p(Method::MannWhitney, t.p_value))
}

/// Two 95 % intervals `(lo, hi)`, `None` bounds open: significant when they
/// do not overlap; not available when either has no bound at all.
pub fn intervals_apart(
    base: (Option<f64>, Option<f64>),
    new: (Option<f64>, Option<f64>),
) -> Significance {
    let bounded = |(lo, hi): (Option<f64>, Option<f64>)| lo.is_some() || hi.is_some();
    if !bounded(base) || !bounded(new) {
        return Significance::NOT_AVAILABLE;
    }
    let below = |a: (Option<f64>, Option<f64>), b: (Option<f64>, Option<f64>)| matches!((a.1, b.0), (Some(hi), Some(lo)) if hi < lo);
    Significance {
        method: Method::Intervals,
        significant: Some(below(base, new) || below(new, base)),
        p_value: None,
    }
}

/// Pooled two-proportion z-test: `x` of `n` in each run. Not available when
/// either run has no trials; p = 1 when neither has a success (no variance).
pub fn two_proportions(x_base: u64, n_base: u64, x_new: u64, n_new: u64) -> Significance {
    if n_base == 0 || n_new == 0 {
        return Significance::NOT_AVAILABLE;
    }
    let (x1, n1, x2, n2) = (x_base as f64, n_base as f64, x_new as f64, n_new as f64);
    let pooled = (x1 + x2) / (n1 + n2);
    let se = (pooled * (1.0 - pooled) * (1.0 / n1 + 1.0 / n2)).sqrt();
    let p = if se > 0.0 {
        two_sided_p((x2 / n2 - x1 / n1).abs() / se)
    } else {
        1.0
    };
    Significance::from_p(Method::TwoProportions, p)
}

/// P(|Z| ≥ z) for a standard normal Z.
fn two_sided_p(z: f64) -> f64 {
    if z <= 0.0 {
        return 1.0;
    }
    erfc(z / std::f64::consts::SQRT_2).min(1.0)
}

/// The complementary error function, to a relative error below 1.2e-7
/// (the Chebyshev fit of Numerical Recipes' `erfcc`): ample for a test at 5 %.
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-6
    }

    #[test]
    fn erfc_known_values() {
        // erfc(0) = 1, erfc(1) = 0.157299207, erfc(-1) = 1.842700793, erfc(2) = 0.004677735.
        assert!(close(erfc(0.0), 1.0));
        assert!(close(erfc(1.0), 0.157_299_207));
        assert!(close(erfc(-1.0), 1.842_700_793));
        assert!(close(erfc(2.0), 0.004_677_735));
        // 1.96 is the two-sided 5 % point.
        assert!((two_sided_p(1.959_964) - 0.05).abs() < 1e-6);
    }

    /// By hand: a = [1, 2, 3], b = [4, 5, 6]. Ranks of a are 1, 2, 3, so
    /// R = 6 and U = R − 3·4/2 = 0; E[U] = 9/2 = 4.5; Var U = 9/12 · 7 = 5.25;
    /// z = (4.5 − 0.5) / √5.25 = 1.745743; p = erfc(z/√2) = 0.080856
    /// (SciPy's `mannwhitneyu(..., method="asymptotic")` gives the same).
    #[test]
    fn mann_whitney_without_ties() {
        let t = mann_whitney(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]).unwrap();
        assert_eq!(t.u, 0.0);
        assert!(close(t.z, 1.745_743), "{t:?}");
        assert!(close(t.p_value, 0.080_856), "{t:?}");
        // Symmetric: swapping the samples gives U' = n1·n2 − U and the same p.
        let s = mann_whitney(&[4.0, 5.0, 6.0], &[1.0, 2.0, 3.0]).unwrap();
        assert_eq!(s.u, 9.0);
        assert!(close(s.p_value, t.p_value));
    }

    /// By hand, with ties: a = [1, 2, 2, 3], b = [2, 3, 4, 5]. Sorted:
    /// 1a 2a 2a 2b 3a 3b 4b 5b; the three 2s share rank 3, the two 3s rank
    /// 5.5. R = 1 + 3 + 3 + 5.5 = 12.5, U = 12.5 − 10 = 2.5, E[U] = 8.
    /// Ties: (3³ − 3) + (2³ − 2) = 30, so Var U = 16/12 · (9 − 30/56) =
    /// 11.285714; z = (5.5 − 0.5) / 3.359422 = 1.488351; p = 0.136658.
    #[test]
    fn mann_whitney_with_ties() {
        let t = mann_whitney(&[1.0, 2.0, 2.0, 3.0], &[2.0, 3.0, 4.0, 5.0]).unwrap();
        assert_eq!(t.u, 2.5);
        assert!(close(t.z, 1.488_351), "{t:?}");
        assert!(close(t.p_value, 0.136_658), "{t:?}");
    }

    #[test]
    fn mann_whitney_decides_at_five_percent() {
        // 1..=20 against the same shifted by 5.5: U = 105, p = 0.010581.
        let a: Vec<f64> = (1..=20).map(f64::from).collect();
        let b: Vec<f64> = a.iter().map(|x| x + 5.5).collect();
        let t = mann_whitney(&a, &b).unwrap();
        assert_eq!(t.u, 105.0);
        assert!(close(t.p_value, 0.010_581), "{t:?}");
        assert_eq!(by_rank_test(&a, &b).unwrap().significant, Some(true));
        // Interleaved samples: no shift, p near 1.
        let c: Vec<f64> = a.iter().map(|x| x + 0.5).collect();
        let s = by_rank_test(&a, &c).unwrap();
        assert_eq!(s.significant, Some(false));
        assert!(s.p_value.unwrap() > 0.5, "{s:?}");
    }

    #[test]
    fn mann_whitney_degenerate_samples() {
        // Everything tied: no evidence of a change.
        let t = mann_whitney(&[5.0; 4], &[5.0; 3]).unwrap();
        assert_eq!((t.u, t.p_value), (6.0, 1.0));
        assert!(mann_whitney(&[], &[1.0]).is_none());
        // Non-finite values are left out.
        assert!(mann_whitney(&[f64::NAN], &[1.0]).is_none());
        let t = mann_whitney(&[1.0, f64::INFINITY], &[2.0]).unwrap();
        assert_eq!(t.u, 0.0);
    }

    #[test]
    fn intervals_decide_by_overlap_with_open_bounds_unbounded() {
        let apart = intervals_apart((Some(1.0), Some(2.0)), (Some(2.5), Some(3.0)));
        assert_eq!(apart.significant, Some(true));
        assert_eq!(apart.method, Method::Intervals);
        // Either order.
        let apart = intervals_apart((Some(2.5), Some(3.0)), (Some(1.0), Some(2.0)));
        assert_eq!(apart.significant, Some(true));
        let overlap = intervals_apart((Some(1.0), Some(2.6)), (Some(2.5), Some(3.0)));
        assert_eq!(overlap.significant, Some(false));
        // Touching is overlapping.
        let touch = intervals_apart((Some(1.0), Some(2.5)), (Some(2.5), Some(3.0)));
        assert_eq!(touch.significant, Some(false));
        // An open upper bound of BASE reaches any higher NEW...
        let open = intervals_apart((Some(1.0), None), (Some(9.0), Some(10.0)));
        assert_eq!(open.significant, Some(false));
        // ...but NEW wholly below BASE's lower bound is still apart.
        let below = intervals_apart((Some(5.0), None), (Some(1.0), Some(2.0)));
        assert_eq!(below.significant, Some(true));
        // No bound at all on one side: not known.
        let none = intervals_apart((None, None), (Some(1.0), Some(2.0)));
        assert_eq!(none, Significance::NOT_AVAILABLE);
        assert_eq!(none.describe(), "n/a");
    }

    #[test]
    fn proportions() {
        // 1 of 600 against 30 of 600: z = 5.28, clearly significant.
        let s = two_proportions(1, 600, 30, 600);
        assert_eq!(s.significant, Some(true));
        assert!(s.p_value.unwrap() < 1e-6);
        // 3 of 600 against 4 of 600: noise.
        assert_eq!(two_proportions(3, 600, 4, 600).significant, Some(false));
        // No failures anywhere: no evidence, p = 1.
        assert_eq!(two_proportions(0, 60, 0, 60).p_value, Some(1.0));
        assert_eq!(two_proportions(0, 0, 0, 60), Significance::NOT_AVAILABLE);
        // By hand: 10/100 against 20/100: pooled 0.15, se = √(0.15·0.85·0.02)
        // = 0.050498, z = 1.980295, p = 0.047670.
        let s = two_proportions(10, 100, 20, 100);
        assert!(close(s.p_value.unwrap(), 0.047_670), "{s:?}");
        assert_eq!(s.describe(), "yes (proportions, p = 0.048)");
    }
}
