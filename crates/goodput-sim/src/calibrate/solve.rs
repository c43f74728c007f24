//! Weighted least squares for one assignment of `max()` sides: which
//! parameters the rows can tell apart at all, then the fit with every
//! coefficient kept at 0 or above (a negative one is fixed at 0 and the rest
//! refitted, one at a time).

use serde::{Deserialize, Serialize};

use super::linalg::{cholesky, cholesky_inverse, cholesky_solve, zeros, Matrix};
use super::model::{dot, Theta, A, B, D, G, K, P, R, THETA_LEN};

/// What the fit could say about one parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ParameterStatus {
    /// Fitted, with a standard error.
    Fitted,
    /// The observations cannot tell it apart from the others (its column is
    /// zero or a combination of theirs): fixed at its fallback, 0, and its
    /// effect carried by the parameters it is confounded with.
    Unidentified,
    /// Its unconstrained estimate was negative: fixed at 0.
    AtZero,
}

/// Which parameter to keep when several are confounded, most wanted first:
/// the weight floor and token cost shape every prediction; the per-sequence
/// cost is the first to give way (it then folds into the floor and the
/// request latency).
const PRIORITY: [usize; THETA_LEN] = [D, G, R, K, A, P, B];

/// A column whose part not explained by the columns before it is below this
/// share of its norm is a combination of them.
const COLLINEAR: f64 = 1e-7;

/// The least-squares solution of one assignment.
#[derive(Debug, Clone)]
pub(crate) struct Solution {
    pub theta: Theta,
    /// `(Xᵀ W X)⁻¹` over the fitted parameters, zero elsewhere (not yet
    /// scaled by the reduced chi-square).
    pub covariance: Matrix,
    pub status: [ParameterStatus; THETA_LEN],
    /// `Σ wᵢ (yᵢ − xᵢ·θ)²`.
    pub chi_square: f64,
}

impl Solution {
    /// Parameters fitted.
    pub fn free(&self) -> usize {
        self.status
            .iter()
            .filter(|&&s| s == ParameterStatus::Fitted)
            .count()
    }
}

/// Solve `rows · θ ≈ y` with weights `w` (1 / variance).
pub(crate) fn solve(rows: &[Theta], y: &[f64], w: &[f64]) -> Solution {
    let mut status = [ParameterStatus::Fitted; THETA_LEN];
    for j in unidentified(rows, w) {
        status[j] = ParameterStatus::Unidentified;
    }
    loop {
        let free: Vec<usize> = PRIORITY
            .into_iter()
            .filter(|&j| status[j] == ParameterStatus::Fitted)
            .collect();
        let Some((beta, scale, cov)) = weighted_least_squares(rows, y, w, &free) else {
            // Numerically singular despite the rank check: give up the
            // least wanted parameter and try again.
            if let Some(&j) = free.last() {
                status[j] = ParameterStatus::Unidentified;
                continue;
            }
            return finish(rows, y, w, [0.0; THETA_LEN], zeros(THETA_LEN), status);
        };
        // The most negative coefficient, in units of its column's size.
        let worst = (0..free.len())
            .filter(|&i| beta[i] < 0.0)
            .min_by(|&a, &b| (beta[a] * scale[a]).total_cmp(&(beta[b] * scale[b])));
        if let Some(i) = worst {
            status[free[i]] = ParameterStatus::AtZero;
            continue;
        }
        let mut theta = [0.0; THETA_LEN];
        let mut covariance = zeros(THETA_LEN);
        for (a, &ja) in free.iter().enumerate() {
            theta[ja] = beta[a];
            for (b, &jb) in free.iter().enumerate() {
                covariance[ja][jb] = cov[a][b];
            }
        }
        return finish(rows, y, w, theta, covariance, status);
    }
}

fn finish(
    rows: &[Theta],
    y: &[f64],
    w: &[f64],
    theta: Theta,
    covariance: Matrix,
    status: [ParameterStatus; THETA_LEN],
) -> Solution {
    let chi_square = rows
        .iter()
        .zip(y)
        .zip(w)
        .map(|((x, y), w)| w * (y - dot(x, &theta)).powi(2))
        .sum();
    Solution {
        theta,
        covariance,
        status,
        chi_square,
    }
}

/// The parameters the rows cannot tell apart from those wanted more
/// ([`PRIORITY`]): Gram–Schmidt on the weighted, normalized columns.
fn unidentified(rows: &[Theta], w: &[f64]) -> Vec<usize> {
    let column =
        |j: usize| -> Vec<f64> { rows.iter().zip(w).map(|(x, w)| x[j] * w.sqrt()).collect() };
    let norm = |v: &[f64]| dot(v, v).sqrt();
    let mut basis: Vec<Vec<f64>> = Vec::new();
    let mut out = Vec::new();
    for j in PRIORITY {
        let mut v = column(j);
        let n0 = norm(&v);
        if n0 == 0.0 || !n0.is_finite() {
            out.push(j);
            continue;
        }
        v.iter_mut().for_each(|x| *x /= n0);
        // Twice, for a residual that is orthogonal to working precision.
        for _ in 0..2 {
            for q in &basis {
                let c = dot(&v, q);
                v.iter_mut().zip(q).for_each(|(x, q)| *x -= c * q);
            }
        }
        let n = norm(&v);
        if n < COLLINEAR.sqrt() {
            out.push(j);
            continue;
        }
        v.iter_mut().for_each(|x| *x /= n);
        basis.push(v);
    }
    out
}

/// Weighted least squares over the columns `free`: the coefficients, the
/// columns' weighted norms, and `(Xᵀ W X)⁻¹`; `None` when singular.
#[allow(clippy::type_complexity)]
fn weighted_least_squares(
    rows: &[Theta],
    y: &[f64],
    w: &[f64],
    free: &[usize],
) -> Option<(Vec<f64>, Vec<f64>, Matrix)> {
    let m = free.len();
    // Columns scaled to unit weighted norm, so that a token's microseconds
    // and a pair's picoseconds meet the solver on equal terms.
    let scale: Vec<f64> = free
        .iter()
        .map(|&j| {
            rows.iter()
                .zip(w)
                .map(|(x, w)| w * x[j] * x[j])
                .sum::<f64>()
                .sqrt()
        })
        .collect();
    let mut normal = zeros(m);
    let mut rhs = vec![0.0; m];
    for ((x, &y), &w) in rows.iter().zip(y).zip(w) {
        for a in 0..m {
            let za = x[free[a]] / scale[a];
            rhs[a] += w * za * y;
            for b in 0..m {
                normal[a][b] += w * za * x[free[b]] / scale[b];
            }
        }
    }
    let l = cholesky(&normal)?;
    let scaled = cholesky_solve(&l, &rhs);
    let inverse = cholesky_inverse(&l);
    let beta = (0..m).map(|a| scaled[a] / scale[a]).collect();
    let cov = (0..m)
        .map(|a| {
            (0..m)
                .map(|b| inverse[a][b] / (scale[a] * scale[b]))
                .collect()
        })
        .collect();
    Some((beta, scale, cov))
}
