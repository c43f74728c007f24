//! Student's t distribution's two-sided tail, for tests on a handful of
//! values (`compare` across `--repeat` results: a few runs a side, so the
//! normal's tail would call noise significant).
//!
//! P(|T| ≥ t) with ν degrees of freedom is the regularized incomplete beta
//! function I_x(ν/2, 1/2) at x = ν / (ν + t²), evaluated by its continued
//! fraction (modified Lentz), with ln Γ from Lanczos' approximation
//! (g = 7, nine terms; relative error under 1e-13 for positive arguments).
//! ν need not be whole: Welch's test gives fractional degrees of freedom.

/// ln Γ(x) for x > 0.
fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x) Γ(1 − x) = π / sin(πx).
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let t = x + G + 0.5;
    let sum = C[1..]
        .iter()
        .enumerate()
        .fold(C[0], |s, (i, c)| s + c / (x + i as f64 + 1.0));
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

/// The continued fraction of the incomplete beta function (x below its mean).
fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..=300 {
        let m = m as f64;
        let m2 = 2.0 * m;
        for aa in [
            m * (b - m) * x / ((qam + m2) * (a + m2)),
            -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)),
        ] {
            d = 1.0 + aa * d;
            if d.abs() < TINY {
                d = TINY;
            }
            c = 1.0 + aa / c;
            if c.abs() < TINY {
                c = TINY;
            }
            d = 1.0 / d;
            h *= d * c;
        }
        if (d * c - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// The regularized incomplete beta function I_x(a, b), 0 ≤ x ≤ 1.
fn incomplete_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_fraction(a, b, x) / a
    } else {
        1.0 - front * beta_fraction(b, a, 1.0 - x) / b
    }
}

/// P(|T| ≥ |t|) for Student's T with `df` (> 0, not necessarily whole)
/// degrees of freedom.
pub fn two_sided_p(t: f64, df: f64) -> f64 {
    if !t.is_finite() {
        return if t.is_nan() { 1.0 } else { 0.0 };
    }
    if df <= 0.0 || !df.is_finite() {
        return 1.0;
    }
    incomplete_beta(df / 2.0, 0.5, df / (df + t * t)).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_agrees_with_the_tables() {
        // The two-sided 5 % points of the printed tables (Level::t).
        for (df, t) in [(1.0, 12.706), (2.0, 4.303), (4.0, 2.776), (10.0, 2.228)] {
            let p = two_sided_p(t, df);
            assert!((p - 0.05).abs() < 2e-4, "df {df}: {p}");
        }
        // The 1 % point with 5 degrees of freedom, 4.032.
        assert!((two_sided_p(4.032, 5.0) - 0.01).abs() < 1e-4);
        // One degree of freedom is Cauchy: P(|T| ≥ 1) = 1/2 exactly.
        assert!((two_sided_p(1.0, 1.0) - 0.5).abs() < 1e-12);
        // Two: P(|T| ≥ t) = 1 − t / √(2 + t²).
        for t in [0.3, 1.7, 6.0] {
            let exact = 1.0 - t / (2.0f64 + t * t).sqrt();
            assert!((two_sided_p(t, 2.0) - exact).abs() < 1e-12, "{t}");
        }
        // Many degrees of freedom approach the normal: 1.96 → 0.05.
        assert!((two_sided_p(1.959_964, 1e6) - 0.05).abs() < 1e-5);
        assert_eq!(two_sided_p(0.0, 3.0), 1.0);
        assert_eq!(two_sided_p(f64::INFINITY, 3.0), 0.0);
        // A fractional df lies between its neighbours.
        let (lo, mid, hi) = (
            two_sided_p(3.0, 4.0),
            two_sided_p(3.0, 4.5),
            two_sided_p(3.0, 5.0),
        );
        assert!(lo > mid && mid > hi, "{lo} {mid} {hi}");
    }

    #[test]
    fn ln_gamma_at_known_points() {
        assert!(ln_gamma(1.0).abs() < 1e-13);
        assert!(ln_gamma(2.0).abs() < 1e-13);
        assert!((ln_gamma(0.5) - std::f64::consts::PI.sqrt().ln()).abs() < 1e-13);
        assert!((ln_gamma(10.0) - 362_880f64.ln()).abs() < 1e-11);
    }
}
