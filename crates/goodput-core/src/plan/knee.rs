//! Knees: where a sweep's latency–throughput curve bends.
//!
//! A sweep runs the server at increasing offered load and records, per load
//! point, the achieved throughput and the latency percentiles. Two published
//! definitions of "the knee" are offered; both return an *index* into the
//! sweep's points (sorted by load), never an interpolated load, so the knee is
//! always a load that was actually measured.
//!
//! - [`kneedle`] follows **Kneedle** (V. Satopää, J. Albrecht, D. Irwin,
//!   B. Raghavan, "Finding a 'Kneedle' in a Haystack: Detecting Knee Points in
//!   System Behavior", ICDCS Workshops 2011), in its offline, single-knee
//!   form: normalise both axes to [0, 1], take the difference curve
//!   `y_n − x_n` (concave, increasing case), and return the index of its
//!   maximum — the point farthest above the chord from the first to the last
//!   point. It applies to achieved throughput against offered load: the knee
//!   is where throughput stops following load.
//! - [`degradation_knee`] is the threshold rule of NVIDIA AIPerf's
//!   `degradation_knee_detect` post-processing step: the first load whose
//!   latency (typically p99) exceeds the lowest-load baseline by more than a
//!   factor (default [`DEFAULT_DEGRADATION_FACTOR`] = 20 %).
//!
//! Guarantees: both functions are pure, never panic, and return `None` rather
//! than a misleading index on inputs they cannot judge (too few points,
//! unsorted or non-finite loads, a non-positive or non-finite baseline, a
//! curve with no bend).

/// Smallest maximum of the normalised difference curve `y_n − x_n` that
/// counts as a knee.
///
/// This replaces Kneedle's sensitivity parameter `S` (which, in the online
/// algorithm, sets how far the difference curve must fall after a local
/// maximum before that maximum is declared a knee). Sweeps have few points
/// (5–20), each already the average of a whole run, so there is nothing to
/// smooth and a single global maximum is wanted; what remains to decide is
/// whether there is a bend at all. A straight line has `y_n − x_n = 0`
/// everywhere; measured throughput that tracks load within a few per cent of
/// its range stays below 0.05. A bend of at least 5 % of the normalised range
/// is therefore required: lower values would call measurement noise on a
/// linear curve a knee, higher values would miss gentle saturation.
pub const KNEEDLE_MIN_BEND: f64 = 0.05;

/// AIPerf's default degradation threshold: latency more than 20 % above the
/// lowest-load baseline.
pub const DEFAULT_DEGRADATION_FACTOR: f64 = 0.2;

/// Kneedle knee of a concave, increasing curve: `y` (achieved throughput)
/// against `x` (offered load), the points sorted by `x`.
///
/// Returns the index of the point where the normalised difference curve
/// `y_n − x_n` is largest (the first such index on ties, i.e. the lowest
/// load), or `None` when there are fewer than 3 points, the slices differ in
/// length, `x` is not sorted ascending with a positive range, any value is
/// not finite, `y` is constant, or the curve is (near) linear: the maximum
/// of the difference curve is below [`KNEEDLE_MIN_BEND`].
///
/// `y` need not be monotone (throughput may fall past saturation); it is
/// normalised by its own minimum and maximum.
pub fn kneedle(x: &[f64], y: &[f64]) -> Option<usize> {
    if x.len() < 3 || x.len() != y.len() {
        return None;
    }
    if x.iter().chain(y).any(|v| !v.is_finite()) || x.windows(2).any(|w| w[1] < w[0]) {
        return None;
    }
    let (x0, x1) = (x[0], x[x.len() - 1]);
    let y0 = y.iter().copied().fold(f64::INFINITY, f64::min);
    let y1 = y.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if x1 <= x0 || y1 <= y0 {
        return None;
    }
    let mut best: Option<(usize, f64)> = None;
    for (i, (&xi, &yi)) in x.iter().zip(y).enumerate() {
        let d = (yi - y0) / (y1 - y0) - (xi - x0) / (x1 - x0);
        if best.is_none_or(|(_, b)| d > b) {
            best = Some((i, d));
        }
    }
    best.filter(|&(_, d)| d >= KNEEDLE_MIN_BEND).map(|(i, _)| i)
}

/// AIPerf's degradation knee: the index of the first load whose latency
/// (`values[i]`, e.g. p99 TTFT at the i-th load, loads ascending) exceeds
/// `floor × (1 + factor)`, strictly. `floor` is the baseline latency —
/// AIPerf uses the lowest load's value, i.e. `values[0]`.
///
/// `None` when no value exceeds the cutoff, or when `floor` is not a finite
/// positive number or `factor` not a finite non-negative one (a zero or
/// non-finite baseline would make every or no value "degraded", which would
/// read as a finding about the server rather than about the data).
/// Non-finite entries of `values` never count as exceeding.
pub fn degradation_knee(floor: f64, values: &[f64], factor: f64) -> Option<usize> {
    if !(floor.is_finite() && floor > 0.0 && factor.is_finite() && factor >= 0.0) {
        return None;
    }
    let cutoff = floor * (1.0 + factor);
    values.iter().position(|&v| v.is_finite() && v > cutoff)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kneedle_finds_the_saturation_point() {
        // y = min(x, 10) at x = 1..=16. Normalised: x_n = (x−1)/15,
        // y_n = (min(x,10)−1)/9. The difference curve is
        //   x = 9: 8/9 − 8/15 = 0.356, x = 10: 1 − 9/15 = 0.400,
        //   x = 11: 1 − 10/15 = 0.333,
        // increasing up to x = 10 (slope 1/9 − 1/15 > 0) and decreasing after
        // (slope −1/15), so the maximum is exactly at x = 10, index 9: the
        // last load throughput still follows.
        let x: Vec<f64> = (1..=16).map(f64::from).collect();
        let y: Vec<f64> = x.iter().map(|&v| v.min(10.0)).collect();
        assert_eq!(kneedle(&x, &y), Some(9));
        assert_eq!(x[9], 10.0);

        // A smooth saturating curve, y = 1 − e^(−x/3) at x = 0..=15, bends
        // early; its knee is where the difference curve peaks, at x = 5:
        // with y_n = y / (1 − e^−5), d(4) = 0.741 − 0.267 = 0.475,
        // d(5) = 0.817 − 0.333 = 0.483, d(6) = 0.871 − 0.400 = 0.471.
        let x: Vec<f64> = (0..=15).map(f64::from).collect();
        let y: Vec<f64> = x.iter().map(|&v| 1.0 - (-v / 3.0).exp()).collect();
        assert_eq!(kneedle(&x, &y), Some(5));

        // Throughput that falls past saturation still has its knee at the peak.
        let x = [1.0, 2.0, 4.0, 8.0, 16.0];
        let y = [1.0, 2.0, 4.0, 6.0, 5.0];
        assert_eq!(kneedle(&x, &y), Some(3));
    }

    #[test]
    fn kneedle_none_on_linear_short_or_bad_input() {
        let x: Vec<f64> = (1..=16).map(f64::from).collect();
        // Exactly linear, and linear with ±1 % noise: no knee.
        assert_eq!(kneedle(&x, &x), None);
        let noisy: Vec<f64> = x
            .iter()
            .enumerate()
            .map(|(i, &v)| v * if i % 2 == 0 { 1.01 } else { 0.99 })
            .collect();
        assert_eq!(kneedle(&x, &noisy), None);
        // Convex (throughput accelerating) has y_n − x_n <= 0: no knee.
        let convex: Vec<f64> = x.iter().map(|&v| v * v).collect();
        assert_eq!(kneedle(&x, &convex), None);
        assert_eq!(kneedle(&[1.0, 2.0], &[1.0, 2.0]), None);
        assert_eq!(kneedle(&[1.0, 2.0, 3.0], &[1.0, 2.0]), None);
        assert_eq!(kneedle(&[3.0, 2.0, 1.0], &[1.0, 2.0, 2.0]), None);
        assert_eq!(kneedle(&[1.0, 1.0, 1.0], &[1.0, 2.0, 2.0]), None);
        assert_eq!(kneedle(&[1.0, 2.0, 3.0], &[5.0, 5.0, 5.0]), None);
        assert_eq!(kneedle(&[1.0, 2.0, 3.0], &[1.0, f64::NAN, 2.0]), None);
    }

    #[test]
    fn degradation_knee_first_point_past_the_cutoff() {
        // p99 TTFT (ms) at increasing load; baseline 100 ms, cutoff 120 ms.
        let p99 = [100.0, 104.0, 111.0, 120.0, 135.0, 300.0, 900.0];
        let f = DEFAULT_DEGRADATION_FACTOR;
        // 120.0 is not *above* the cutoff (strict, as in AIPerf); 135 is.
        assert_eq!(degradation_knee(p99[0], &p99, f), Some(4));
        assert_eq!(degradation_knee(p99[0], &p99, 0.05), Some(2));
        assert_eq!(degradation_knee(p99[0], &p99, 10.0), None);
        assert_eq!(degradation_knee(100.0, &[], f), None);
        assert_eq!(degradation_knee(100.0, &[f64::NAN, 130.0], f), Some(1));
        assert_eq!(degradation_knee(0.0, &p99, f), None);
        assert_eq!(degradation_knee(f64::NAN, &p99, f), None);
        assert_eq!(degradation_knee(100.0, &p99, -0.5), None);
    }
}
