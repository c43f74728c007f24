//! What the reference ([`crate::reference`]) and the forecast
//! ([`crate::forecast`]) share: the checks of an SLO and a plan's counts,
//! the bisection of the offered rate, and the pooled percentiles of a point.

use crate::error::SimError;
use crate::reference::{percentile_sorted, RefTerm};

/// `v` is a rate: finite and above 0.
pub(crate) fn positive(field: &str, v: f64) -> Result<(), SimError> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(SimError::invalid(
            field,
            format!("{v} must be a positive number (per second)"),
        ))
    }
}

/// `[lo, hi]` is a range of rates.
pub(crate) fn check_range(lo: f64, hi: f64) -> Result<(), SimError> {
    positive("lo", lo)?;
    positive("hi", hi)?;
    if hi <= lo {
        return Err(SimError::invalid(
            "hi",
            format!("{hi} must be greater than lo ({lo})"),
        ));
    }
    Ok(())
}

/// Every SLO term's percentile in 0–100 and threshold a non-negative
/// number, at least one measured request and one schedule, an error-rate
/// bound in 0–1.
pub(crate) fn check_terms_and_counts(
    slo: &[RefTerm],
    requests_per_point: usize,
    seeds: u64,
    max_error_rate: f64,
) -> Result<(), SimError> {
    for t in slo {
        if !(0.0..=100.0).contains(&t.percentile) {
            return Err(SimError::invalid(
                "slo",
                format!("percentile {} must be between 0 and 100", t.percentile),
            ));
        }
        if t.threshold_s.is_nan() || t.threshold_s < 0.0 {
            return Err(SimError::invalid(
                "slo",
                format!(
                    "threshold {} s must be a non-negative number",
                    t.threshold_s
                ),
            ));
        }
    }
    if requests_per_point == 0 {
        return Err(SimError::invalid(
            "requests_per_point",
            "must be at least 1",
        ));
    }
    if seeds == 0 {
        return Err(SimError::invalid("seeds", "must be at least 1"));
    }
    if !(0.0..=1.0).contains(&max_error_rate) {
        return Err(SimError::invalid(
            "max_error_rate",
            format!("{max_error_rate} must be between 0 and 1"),
        ));
    }
    Ok(())
}

/// The goodput in `[lo, hi]`: 0 (first failing `lo`) when `lo` fails, `hi`
/// (no failing rate) when `hi` passes, else the bisection's bracket.
pub(crate) fn search(
    meets: &mut impl FnMut(f64) -> Result<bool, SimError>,
    lo: f64,
    hi: f64,
    precision: f64,
) -> Result<(f64, Option<f64>), SimError> {
    if !meets(lo)? {
        Ok((0.0, Some(lo)))
    } else if meets(hi)? {
        Ok((hi, None))
    } else {
        let (pass, fail) = bisect(meets, lo, hi, precision)?;
        Ok((pass, Some(fail)))
    }
}

/// Bisect a passing and a failing rate at their geometric mean until
/// `(fail − pass) / fail < precision`: the final (pass, fail).
pub(crate) fn bisect(
    meets: &mut impl FnMut(f64) -> Result<bool, SimError>,
    mut pass: f64,
    mut fail: f64,
    precision: f64,
) -> Result<(f64, f64), SimError> {
    while (fail - pass) / fail >= precision {
        let mid = (pass * fail).sqrt();
        if !(mid > pass && mid < fail) {
            break; // No representable rate in between.
        }
        if meets(mid)? {
            pass = mid;
        } else {
            fail = mid;
        }
    }
    Ok((pass, fail))
}

/// Each term's percentile of its pooled values (sorted in place).
pub(crate) fn pooled_percentiles(samples: &mut [Vec<f64>], slo: &[RefTerm]) -> Vec<Option<f64>> {
    samples
        .iter_mut()
        .zip(slo)
        .map(|(values, term)| {
            values.sort_by(f64::total_cmp);
            percentile_sorted(values, term.percentile)
        })
        .collect()
}
