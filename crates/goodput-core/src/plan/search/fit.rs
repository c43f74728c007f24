//! The margin's line near the edge: weighted least squares of each point's
//! SLO margin on `ln(rate)`, and Fieller's interval for where it crosses
//! zero.
//!
//! Exploring points near the edge read optimistic (a short point that
//! starts idle ends before its queue builds), and the line runs through
//! them with the measuring points. A line that gave them an offset of
//! their own (the slope from all points, the level from the measuring
//! ones) was tried on 2026-11-28: in virtual time, 100 searches of the
//! README's job, its interval covered the sustained goodput in 88 of 96
//! searches and 2,000 requests at its lower end held in 97 of 100, against
//! 91 of 97 and 100 of 100 for this line (the measuring points alone,
//! within ±10 % of the edge, rarely tell the slope through the noise). It
//! was not kept.

/// One point: `ln(rate)`, margin, weight.
pub(super) type Point = (f64, f64, f64);

/// Weighted least squares of margin `m` on `x = ln(rate)`: `m = a + b (x − x̄)`.
pub(super) struct Fit {
    pub a: f64,
    pub b: f64,
    pub xbar: f64,
    /// Σ w and Σ w (x − x̄)².
    pub sw: f64,
    pub sxx: f64,
    /// Residual variance per unit weight, and its degrees of freedom.
    pub s2: f64,
    pub df: usize,
}

impl Fit {
    /// (x, m, weight) points; None without two distinct rates.
    pub fn new(points: &[Point]) -> Option<Fit> {
        let sw: f64 = points.iter().map(|p| p.2).sum();
        if points.len() < 2 || sw <= 0.0 {
            return None;
        }
        let xbar = points.iter().map(|p| p.2 * p.0).sum::<f64>() / sw;
        let mbar = points.iter().map(|p| p.2 * p.1).sum::<f64>() / sw;
        let sxx: f64 = points.iter().map(|p| p.2 * (p.0 - xbar).powi(2)).sum();
        if sxx <= 1e-12 * sw {
            return None;
        }
        let sxm: f64 = points
            .iter()
            .map(|p| p.2 * (p.0 - xbar) * (p.1 - mbar))
            .sum();
        let b = sxm / sxx;
        let df = points.len().saturating_sub(2);
        let rss: f64 = points
            .iter()
            .map(|p| p.2 * (p.1 - mbar - b * (p.0 - xbar)).powi(2))
            .sum();
        Some(Fit {
            a: mbar,
            b,
            xbar,
            sw,
            sxx,
            s2: if df > 0 { rss / df as f64 } else { f64::NAN },
            df,
        })
    }

    /// Where the line crosses zero (`ln rate`), when it rises.
    pub fn zero(&self) -> Option<f64> {
        (self.b > 0.0).then(|| self.xbar - self.a / self.b)
    }

    /// Fieller's 95 % interval of the zero: the x where
    /// `|a + b (x − x̄)| <= t · s · sqrt(1/Σw + (x − x̄)²/Sxx)`. None when
    /// the fit has no degrees of freedom, or the slope is not significant
    /// (the set is then unbounded).
    pub fn interval(&self) -> Option<(f64, f64)> {
        if self.df == 0 || !self.s2.is_finite() {
            return None;
        }
        let t = crate::measure::stats::t_975(self.df);
        let g = t * t * self.s2;
        // (a + b d)² − g (1/Σw + d²/Sxx) = 0 in d = x − x̄.
        let qa = self.b * self.b - g / self.sxx;
        if qa <= 0.0 {
            return None;
        }
        let qb = 2.0 * self.a * self.b;
        let qc = self.a * self.a - g / self.sw;
        let disc = qb * qb - 4.0 * qa * qc;
        if disc < 0.0 {
            return None;
        }
        let r = disc.sqrt();
        let d1 = (-qb - r) / (2.0 * qa);
        let d2 = (-qb + r) / (2.0 * qa);
        Some((self.xbar + d1.min(d2), self.xbar + d1.max(d2)))
    }
}

/// What to know about an interval that reaches past the fitted points
/// (they lie within half to twice the edge): Fieller's set widens without
/// bound as the slope's own interval nears zero, so an end far from the
/// answer is the fit barely telling its slope through the margins' noise,
/// not a rate any point ran (a one-thread llama.cpp search answered 4.73
/// req/s with an interval of 0.016–5.34).
pub fn wide_interval(rate: f64, interval: Option<(f64, f64)>) -> Option<String> {
    let (lo, hi) = interval?;
    if rate.is_nan() || rate <= 0.0 || (lo >= rate / 2.0 && hi <= rate * 2.0) {
        return None;
    }
    Some(format!(
        "the interval ({lo:.3}–{hi:.3} req/s) reaches past the points near the edge: their margins hardly tell the fit's slope through their noise, so its {} end is an extrapolation; a longer --measure-time or --search-time narrows it",
        match (lo < rate / 2.0, hi > rate * 2.0) {
            (true, true) => "either",
            (true, false) => "lower",
            _ => "upper",
        }
    ))
}

#[cfg(test)]
mod tests {
    use super::wide_interval;

    #[test]
    fn an_interval_past_the_fitted_points_is_said_to_be() {
        assert_eq!(wide_interval(4.73, Some((3.9, 5.34))), None);
        assert_eq!(wide_interval(4.73, None), None);
        let note = wide_interval(4.73, Some((0.016, 5.34))).unwrap();
        assert!(
            note.contains("0.016–5.340") && note.contains("lower end"),
            "{note}"
        );
        let note = wide_interval(1.0, Some((0.9, 2.5))).unwrap();
        assert!(note.contains("upper end"), "{note}");
    }
}
