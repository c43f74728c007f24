//! Whether a change between two runs is larger than their noise, two-sided
//! at α = [`ALPHA`] for the whole comparison:
//!
//! - [`by_intervals`]: a z-test on the difference of two estimates, each
//!   one's standard error read from its saved 95 % interval. The intervals
//!   are batch-means intervals (`crate::measure::stats::batch`), so the test does
//!   not treat a run's requests as independent draws: in a queue they are
//!   not, and a rank test that assumed they were called ten of ten pairs of
//!   runs of the same plan different (the coverage study,
//!   `examples/coverage`).
//! - [`by_batch_means`]: with both runs' per-request values (records), the
//!   means' difference with each mean's standard error from batch means.
//! - [`two_proportions`]: the pooled two-proportion z-test, for the error
//!   rate (failed of finished requests).
//! - [`super::repeats::welch`]: two `--repeat` results, Welch's t-test on
//!   their repeats' values.
//!
//! A comparison judges some twenty figures at once; [`holm`] corrects the
//! family, so that two runs of the same plan have at most an α chance of
//! any figure being called significant.

use serde::Serialize;

use crate::measure::stats::{batch, Estimate};

/// Significance level of every test.
pub const ALPHA: f64 = 0.05;

/// How a figure's significance was decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// A z-test on two estimates' saved 95 % (batch-means) intervals.
    Intervals,
    /// A z-test on two means, each standard error from batch means over
    /// the records' per-request values.
    BatchMeans,
    /// Two-proportion z-test on the failed and finished counts.
    TwoProportions,
    /// Welch's t-test on two `--repeat` results' per-repeat values
    /// ([`super::repeats`]).
    Repeats,
    /// No interval, no records: not known.
    None,
}

/// A figure's significance: `significant` is `None` when it is not known.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Significance {
    pub method: Method,
    pub significant: Option<bool>,
    /// The p-value of the figure's own test.
    pub p_value: Option<f64>,
    /// The p-value after Holm's correction over the comparison's figures
    /// ([`holm`]); `significant` is decided on it.
    pub p_adjusted: Option<f64>,
    /// How many figures the correction was over.
    pub family: usize,
}

impl Significance {
    pub const NOT_AVAILABLE: Significance = Significance {
        method: Method::None,
        significant: None,
        p_value: None,
        p_adjusted: None,
        family: 0,
    };

    pub(super) fn from_p(method: Method, p: f64) -> Significance {
        Significance {
            method,
            significant: Some(p < ALPHA),
            p_value: Some(p),
            p_adjusted: None,
            family: 1,
        }
    }

    /// How it was decided: `intervals, p = 0.003, Holm 0.061 of 23`.
    pub fn reason(&self) -> String {
        let test = match self.method {
            Method::Intervals => "intervals",
            Method::BatchMeans => "batch means",
            Method::TwoProportions => "proportions",
            Method::Repeats => "repeats",
            Method::None => return "no interval and no per-request values".into(),
        };
        match (self.p_value, self.p_adjusted) {
            (Some(p), Some(a)) if self.family > 1 => {
                format!(
                    "{test}, {} ({} over {} figures)",
                    format_p(p),
                    p_value(a),
                    self.family
                )
            }
            (Some(p), _) => format!("{test}, {}", format_p(p)),
            _ => test.into(),
        }
    }

    /// `yes (intervals, p < 0.001, Holm < 0.001 of 23)`, `n/a`.
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
        format!("p {}", p_value(p))
    } else {
        format!("p = {}", p_value(p))
    }
}

/// `0.034`, `< 0.001`: a p-value without its name.
fn p_value(p: f64) -> String {
    if p < 0.001 {
        "< 0.001".into()
    } else {
        format!("{p:.3}")
    }
}

/// Two estimates with 95 % intervals: a two-sided z-test on their
/// difference, each side's standard error read from the half of its
/// interval that faces the other estimate (half-width / 1.96; the
/// intervals are batch-means intervals, which already carry the
/// dependence between a run's requests, and whose Student's t exceeds
/// 1.96, so the error read is if anything too large). Not available when
/// an open side faces the other estimate: the data cannot say whether the
/// figure moved (and a gate then goes by the point change).
pub fn by_intervals(base: &Estimate, new: &Estimate) -> Significance {
    let bounded = |e: &Estimate| e.lo.is_some() || e.hi.is_some();
    if !bounded(base) || !bounded(new) {
        return Significance::NOT_AVAILABLE;
    }
    let up = new.value >= base.value;
    // The half of each interval between the two estimates.
    let facing = |e: &Estimate, upward: bool| {
        if upward {
            e.hi.map(|h| h - e.value)
        } else {
            e.lo.map(|l| e.value - l)
        }
    };
    let p = match (facing(base, up), facing(new, !up)) {
        (Some(hb), Some(hn)) => {
            let se = ((hb / 1.96).powi(2) + (hn / 1.96).powi(2)).sqrt();
            let diff = (new.value - base.value).abs();
            if se > 0.0 {
                two_sided_p(diff / se)
            } else if diff > 0.0 {
                0.0
            } else {
                1.0
            }
        }
        // An open side between them: the data cannot say (not "no change").
        _ => return Significance::NOT_AVAILABLE,
    };
    Significance::from_p(Method::Intervals, p)
}

/// The mean of per-request values of two runs, each in the order its
/// requests finished: a two-sided z-test on the difference of the means
/// with each mean's standard error from batch means ([`batch::spread`]),
/// or `None` when either run has too few values for batches.
pub fn by_batch_means(base: &[f64], new: &[f64]) -> Option<Significance> {
    let se = |v: &[f64]| {
        let v: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
        let mean = v.iter().sum::<f64>() / v.len().max(1) as f64;
        let items: Vec<(f64, f64)> = v.iter().map(|&x| (x - mean, 1.0)).collect();
        batch::spread(&items).map(|s| (mean, s.variance.sqrt() / s.weight))
    };
    let ((mb, sb), (mn, sn)) = (se(base)?, se(new)?);
    let s = (sb * sb + sn * sn).sqrt();
    let p = if s > 0.0 {
        two_sided_p((mn - mb).abs() / s)
    } else if mn != mb {
        0.0
    } else {
        1.0
    };
    Some(Significance::from_p(Method::BatchMeans, p))
}

/// Holm's step-down correction over every figure that has a p-value: the
/// k-th smallest of m is compared with α / (m − k + 1), and a figure is
/// significant only if it and every smaller p-value pass. The chance that
/// *any* figure of a comparison is called significant when nothing changed
/// is then at most α, whatever the dependence between the figures — the
/// error rate a CI gate acts on. Each figure keeps its own p-value and
/// gains its adjusted one.
pub fn holm(sigs: &mut [&mut Significance]) {
    let mut order: Vec<usize> = (0..sigs.len())
        .filter(|&i| sigs[i].p_value.is_some())
        .collect();
    order.sort_by(|&a, &b| {
        sigs[a]
            .p_value
            .unwrap_or(1.0)
            .total_cmp(&sigs[b].p_value.unwrap_or(1.0))
    });
    let m = order.len();
    let mut running: f64 = 0.0;
    for (k, &i) in order.iter().enumerate() {
        let p = sigs[i].p_value.unwrap_or(1.0);
        running = running.max(((m - k) as f64 * p).min(1.0));
        sigs[i].p_adjusted = Some(running);
        sigs[i].significant = Some(running < ALPHA);
        sigs[i].family = m;
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

    #[test]
    fn intervals_give_a_z_test_from_their_facing_halves() {
        let e = |value: f64, lo: Option<f64>, hi: Option<f64>| Estimate { value, lo, hi };
        // Halves of 1.96 each: se 1 each side, √2 together; a change of
        // 1.96·√2 is at p = 0.05.
        let d = 1.959_964 * 2f64.sqrt();
        let s = by_intervals(
            &e(10.0, Some(8.04), Some(11.96)),
            &e(10.0 + d, Some(10.0 + d - 1.96), Some(20.0)),
        );
        assert!((s.p_value.unwrap() - 0.05).abs() < 1e-3, "{s:?}");
        // The same values: p = 1.
        let same = by_intervals(&e(5.0, Some(4.0), Some(6.0)), &e(5.0, Some(4.0), Some(6.0)));
        assert_eq!(same.significant, Some(false));
        assert!((same.p_value.unwrap() - 1.0).abs() < 1e-9);
        // An open side between them: not known.
        let open = by_intervals(&e(5.0, Some(4.0), None), &e(50.0, Some(40.0), Some(60.0)));
        assert_eq!(open, Significance::NOT_AVAILABLE);
        assert_eq!(
            by_intervals(&e(5.0, None, None), &e(6.0, Some(5.5), None)),
            Significance::NOT_AVAILABLE
        );
    }

    #[test]
    fn holm_controls_the_family() {
        let mut sigs: Vec<Significance> = [0.001, 0.02, 0.04, 0.3]
            .iter()
            .map(|&p| Significance::from_p(Method::Intervals, p))
            .collect();
        sigs.push(Significance::NOT_AVAILABLE);
        // Uncorrected, three are below 0.05.
        assert_eq!(
            sigs.iter().filter(|s| s.significant == Some(true)).count(),
            3
        );
        holm(&mut sigs.iter_mut().collect::<Vec<_>>());
        // 0.001·4 = 0.004 passes; 0.02·3 = 0.06 does not, nor anything after.
        let adj: Vec<Option<f64>> = sigs.iter().map(|s| s.p_adjusted).collect();
        assert_eq!(adj[0], Some(0.004));
        assert!((adj[1].unwrap() - 0.06).abs() < 1e-12);
        assert!((adj[2].unwrap() - 0.08).abs() < 1e-12);
        assert!((adj[3].unwrap() - 0.3).abs() < 1e-12);
        let yes: Vec<Option<bool>> = sigs.iter().map(|s| s.significant).collect();
        assert_eq!(
            yes,
            [Some(true), Some(false), Some(false), Some(false), None]
        );
        assert_eq!(sigs[0].family, 4);
    }

    #[test]
    fn batch_means_test_sees_a_shift_and_not_noise() {
        let a: Vec<f64> = (0..400).map(|i| 100.0 + (i % 17) as f64).collect();
        let b: Vec<f64> = a.iter().map(|x| x + 3.0).collect();
        assert_eq!(by_batch_means(&a, &b).unwrap().significant, Some(true));
        let c: Vec<f64> = (0..400).map(|i| 100.0 + ((i + 5) % 17) as f64).collect();
        assert_eq!(by_batch_means(&a, &c).unwrap().significant, Some(false));
        assert!(by_batch_means(&a[..3], &c).is_none());
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
