//! A mean's interval: its half-width from the values (independent, or by
//! batch means where neighbours are alike) and its lower end.

use super::{batch, Level};

/// A mean's lower end, never below 0 when no value is: the mean of values
/// that cannot be negative cannot be either (a duration's interval read
/// `[-858, 5364]` ms from two tasks).
pub(super) fn not_below_zero(lo: f64, min: f64) -> f64 {
    if min >= 0.0 {
        lo.max(0.0)
    } else {
        lo
    }
}

/// The half-width at `level` of a mean of `n` values with standard
/// deviation `std`: the independent `t · std / √n` (Student's t on `n − 1`
/// degrees of freedom), or the batch-means one
/// from the values in time order when wider.
pub fn mean_half_width(
    n: usize,
    std: f64,
    in_time: Option<&[f64]>,
    mean: f64,
    level: Level,
) -> f64 {
    if n < 2 {
        return 0.0;
    }
    // Student's t, not the normal z: a handful of values (a run's two
    // agent tasks, six sessions) is no large sample.
    let independent = level.t(n - 1) * std / (n as f64).sqrt();
    let Some(in_time) = in_time else {
        return independent;
    };
    let items: Vec<(f64, f64)> = in_time.iter().map(|&x| (x - mean, 1.0)).collect();
    match batch::spread(&items) {
        // The spread of the values read, scaled to all n: a mean's variance
        // falls as 1/n.
        Some(s) => {
            let read = in_time.len() as f64;
            independent.max(s.ratio_half_width(level) * (read / n as f64).sqrt())
        }
        None => independent,
    }
}
