//! What the reference ([`crate::reference`]) and the forecast
//! ([`crate::forecast`]) share: the checks of an SLO and a plan's counts,
//! the bisection of the offered rate, and the pooled percentiles of a point.
//! It imports neither.

use crate::error::SimError;

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
    slo: impl IntoIterator<Item = (f64, f64)>,
    requests_per_point: usize,
    seeds: u64,
    max_error_rate: f64,
) -> Result<(), SimError> {
    for (percentile, threshold_s) in slo {
        if !(0.0..=100.0).contains(&percentile) {
            return Err(SimError::invalid(
                "slo",
                format!("percentile {percentile} must be between 0 and 100"),
            ));
        }
        if threshold_s.is_nan() || threshold_s < 0.0 {
            return Err(SimError::invalid(
                "slo",
                format!("threshold {threshold_s} s must be a non-negative number"),
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

/// Each term's percentile (0–100, one per list of values) of its pooled
/// values (sorted in place).
pub(crate) fn pooled_percentiles(
    samples: &mut [Vec<f64>],
    percentiles: impl IntoIterator<Item = f64>,
) -> Vec<Option<f64>> {
    samples
        .iter_mut()
        .zip(percentiles)
        .map(|(values, p)| {
            values.sort_by(f64::total_cmp);
            percentile_sorted(values, p)
        })
        .collect()
}

/// Percentile `p` (0–100) of sorted data, numpy's default linear
/// interpolation between the closest ranks.
///
/// A copy of its own on purpose, not `goodput_common::percentile`, which
/// goodput's metrics and benchmarks share: this module is the independent
/// reference the tests check goodput's measured goodput against, so it is
/// written from the definition (`docs/metrics.md`) alone. Were both sides to
/// call the same function, a defect in it would agree with itself and the
/// comparison could not catch it. [`crate::forecast`] uses this one, so
/// that its fixed-length case is the reference's answer bit for bit.
pub(crate) fn percentile_sorted(sorted: &[f64], p: f64) -> Option<f64> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let rank = (p / 100.0).clamp(0.0, 1.0) * (n - 1) as f64;
    let lo = rank.floor() as usize;
    let hi = (rank.ceil() as usize).min(n - 1);
    Some(sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo as f64))
}
