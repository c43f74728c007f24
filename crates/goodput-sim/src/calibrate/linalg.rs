//! The few dense linear-algebra steps a seven-parameter fit needs: a
//! Cholesky factorization (strict, for solving; tolerant, for drawing from a
//! covariance that has fixed parameters), and the inverse of a symmetric
//! positive-definite matrix. Matrices are small row-major `Vec<Vec<f64>>`.

/// A square matrix, row-major.
pub type Matrix = Vec<Vec<f64>>;

/// An `n × n` matrix of zeros.
pub fn zeros(n: usize) -> Matrix {
    vec![vec![0.0; n]; n]
}

/// The lower-triangular `L` with `L Lᵀ = a`, or `None` when `a` is not
/// positive definite.
pub fn cholesky(a: &Matrix) -> Option<Matrix> {
    let n = a.len();
    let mut l = zeros(n);
    for i in 0..n {
        for j in 0..=i {
            let s: f64 = (0..j).map(|k| l[i][k] * l[j][k]).sum();
            if i == j {
                let d = a[i][i] - s;
                if !(d > 0.0 && d.is_finite()) {
                    return None;
                }
                l[i][i] = d.sqrt();
            } else {
                l[i][j] = (a[i][j] - s) / l[j][j];
            }
        }
    }
    Some(l)
}

/// A Cholesky factor of a positive *semi*-definite `a`: a pivot at or below
/// `1e-12` of its diagonal entry (a parameter with no variance of its own,
/// such as a fixed one) gets a zero column instead of failing.
pub fn cholesky_semidefinite(a: &Matrix) -> Matrix {
    let n = a.len();
    let mut l = zeros(n);
    for i in 0..n {
        for j in 0..=i {
            let s: f64 = (0..j).map(|k| l[i][k] * l[j][k]).sum();
            if i == j {
                let d = a[i][i] - s;
                l[i][i] = if d > 1e-12 * a[i][i].abs() && d.is_finite() {
                    d.sqrt()
                } else {
                    0.0
                };
            } else if l[j][j] > 0.0 {
                l[i][j] = (a[i][j] - s) / l[j][j];
            }
        }
    }
    l
}

/// Solve `L Lᵀ x = b` given the Cholesky factor `L`.
pub fn cholesky_solve(l: &Matrix, b: &[f64]) -> Vec<f64> {
    let n = l.len();
    let mut y = vec![0.0; n];
    for i in 0..n {
        let s: f64 = (0..i).map(|k| l[i][k] * y[k]).sum();
        y[i] = (b[i] - s) / l[i][i];
    }
    let mut x = vec![0.0; n];
    for i in (0..n).rev() {
        let s: f64 = (i + 1..n).map(|k| l[k][i] * x[k]).sum();
        x[i] = (y[i] - s) / l[i][i];
    }
    x
}

/// The inverse of `a` given its Cholesky factor `L`.
pub fn cholesky_inverse(l: &Matrix) -> Matrix {
    let n = l.len();
    let mut inv = zeros(n);
    for j in 0..n {
        let mut e = vec![0.0; n];
        e[j] = 1.0;
        let col = cholesky_solve(l, &e);
        for i in 0..n {
            inv[i][j] = col[i];
        }
    }
    inv
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::needless_range_loop)]
    fn solves_and_inverts_a_small_system() {
        let a = vec![
            vec![4.0, 2.0, 0.4],
            vec![2.0, 5.0, 1.0],
            vec![0.4, 1.0, 3.0],
        ];
        let l = cholesky(&a).unwrap();
        let x = cholesky_solve(&l, &[1.0, 2.0, 3.0]);
        for (i, row) in a.iter().enumerate() {
            let ax: f64 = row.iter().zip(&x).map(|(p, q)| p * q).sum();
            assert!((ax - [1.0, 2.0, 3.0][i]).abs() < 1e-12);
        }
        let inv = cholesky_inverse(&l);
        for i in 0..3 {
            for j in 0..3 {
                let p: f64 = (0..3).map(|k| a[i][k] * inv[k][j]).sum();
                assert!((p - f64::from(u8::from(i == j))).abs() < 1e-12);
            }
        }
    }

    #[test]
    fn a_singular_matrix_has_no_strict_factor_but_a_tolerant_one() {
        let a = vec![vec![1.0, 0.0], vec![0.0, 0.0]];
        assert!(cholesky(&a).is_none());
        let l = cholesky_semidefinite(&a);
        assert_eq!(l, vec![vec![1.0, 0.0], vec![0.0, 0.0]]);
    }
}
