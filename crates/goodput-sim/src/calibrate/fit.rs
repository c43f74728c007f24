//! The fit: assign each observation's `max()` sides from the current θ,
//! solve, reassign, until the sides stop changing; then the step model,
//! its standard errors, residuals and notes, and draws from its
//! uncertainty.

use rand::{Rng, SeedableRng};
use rand_distr::StandardNormal;
use serde::{Deserialize, Serialize};

use super::linalg::{cholesky_semidefinite, Matrix};
use super::model::{
    branches, knees, predict, row, sides_at_knee, steps, Observation, ObservationKind, Theta, A, B,
    D, G, K, P, R, THETA_LEN,
};
use super::solve::{solve, ParameterStatus, Solution};
use crate::error::SimError;
use crate::roofline::StepModel;

/// The profile field each entry of θ sets (`gemm_half_tokens` is P / g).
pub const PROFILE_FIELDS: [&str; THETA_LEN] = [
    "request_latency_ms",
    "weights_ms",
    "per_seq_us",
    "token_us",
    "gemm_half_tokens",
    "context_token_ns",
    "attention_pair_ps",
];

/// What observations would identify each parameter (for notes).
const NEEDS: [&str; THETA_LEN] = [
    "prefill (TTFT) observations and decodes at two or more batch sizes",
    "a weight-bound observation (decodes at small batches)",
    "decodes at two or more batch sizes",
    "compute-bound prefills at two or more lengths (e.g. 1024 and 4096 tokens)",
    "compute-bound prefills at two or more lengths (e.g. 1024 and 4096 tokens)",
    "decodes at two or more context lengths",
    "prefills at three or more lengths, some compute-bound",
];

/// Inputs of the fit besides the observations.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FitOptions {
    /// The server's token budget per step (vLLM's
    /// `max_num_batched_tokens`): longer prompts are prefilled in chunks.
    pub max_num_batched_tokens: u64,
}

impl Default for FitOptions {
    /// vLLM's default budget, 8192 tokens.
    fn default() -> Self {
        FitOptions {
            max_num_batched_tokens: 8192,
        }
    }
}

/// Standard errors in the units of the profile's fields; `None` where the
/// parameter was not fitted (unidentified or fixed at 0).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepErrors {
    /// Standard error of `request_latency_ms`, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_latency_ms: Option<f64>,
    /// Standard error of `weights_ms`, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weights_ms: Option<f64>,
    /// Standard error of `per_seq_us`, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_seq_us: Option<f64>,
    /// Standard error of `token_us`, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_us: Option<f64>,
    /// Standard error of `gemm_half_tokens`, tokens (from P's and g's by the delta method).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gemm_half_tokens: Option<f64>,
    /// Standard error of `context_token_ns`, ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_token_ns: Option<f64>,
    /// Standard error of `attention_pair_ps`, ps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attention_pair_ps: Option<f64>,
    /// Standard error of `held_token_ns`, ns (the held queue's, not θ's:
    /// drawn on its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_token_ns: Option<f64>,
}

/// How the fit meets one observation.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Residual {
    /// What was measured, and at what shape.
    #[serde(flatten)]
    pub observation: ObservationKind,
    /// The observation's median, seconds.
    pub observed_s: f64,
    /// The fitted model's prediction for it, seconds.
    pub predicted_s: f64,
    /// `(predicted − observed) / observed`.
    pub relative_error: f64,
}

/// The fitted step model and what is known of its uncertainty.
#[derive(Debug, Clone, PartialEq)]
pub struct Fit {
    /// The coefficients, with `overhead_ms` 0 and no communication terms.
    pub step: StepModel,
    /// Time from a request's arrival to the engine's queue (θ's `r`), ms.
    pub request_latency_ms: f64,
    /// θ, seconds ([`super::THETA_NAMES`]).
    pub theta: Theta,
    /// Covariance of θ, seconds², scaled by the reduced chi-square when the
    /// model fits worse than the observations' spreads say.
    pub covariance: Matrix,
    /// Standard errors in the profile's units; `None` where not fitted.
    pub standard_errors: StepErrors,
    /// What became of each parameter, in θ's order.
    pub status: [ParameterStatus; THETA_LEN],
    /// One per observation, in the order given.
    pub residuals: Vec<Residual>,
    /// Root mean square of the residuals' relative errors.
    pub rms_relative_error: f64,
    /// `χ² / dof` with each observation weighed by its standard error;
    /// `None` with no degrees of freedom.
    pub reduced_chi_square: Option<f64>,
    /// Observations minus fitted parameters.
    pub degrees_of_freedom: usize,
    /// Unidentified or bounded parameters, convergence, observations that
    /// do not fit.
    pub notes: Vec<String>,
}

/// Fit the step model to `observations`.
pub fn fit(observations: &[Observation], options: &FitOptions) -> Result<Fit, SimError> {
    if observations.is_empty() {
        return Err(SimError::invalid(
            "observations",
            "the fit needs at least one prefill or decode observation",
        ));
    }
    for (i, o) in observations.iter().enumerate() {
        o.validate(i)?;
    }
    let kinds: Vec<ObservationKind> = observations.iter().map(|o| o.kind).collect();
    let steps: Vec<_> = kinds
        .iter()
        .map(|k| steps(k, options.max_num_batched_tokens))
        .collect();
    let y: Vec<f64> = observations.iter().map(|o| o.median_s).collect();
    let w: Vec<f64> = observations
        .iter()
        .map(|o| o.standard_error_s().powi(-2))
        .collect();
    let mut notes = Vec::new();
    // Every assignment of sides a θ can make is a knee in the step sizes
    // (`sides_at_knee`): solve each, keep those whose θ puts every step on
    // the side it was solved with, and of those the one with the least χ²
    // (the first on a tie). This is the fixed point that iterating
    // assign–solve–reassign looks for, found without its cycles. The
    // assignment with every step compute-bound (no weight floor, D
    // unidentified) comes last ([`knees`]), so it is kept only when it
    // fits strictly better: a CPU engine's.
    let mut best: Option<(bool, f64, Solution, bool)> = None;
    for knee in knees(&steps) {
        let sides = sides_at_knee(&steps, knee);
        let rows: Vec<Theta> = kinds
            .iter()
            .zip(&steps)
            .zip(&sides)
            .map(|((k, s), c)| row(k, s, c))
            .collect();
        let s = solve(&rows, &y, &w);
        // A compute-bound side whose time does not grow with its tokens
        // (g not fitted) is a weight-bound one under another name.
        let any_compute = sides.iter().flatten().any(|&c| c);
        let consistent = branches(&steps, &s.theta) == sides
            && (!any_compute || s.status[G] == ParameterStatus::Fitted);
        let score = s.chi_square;
        let better = match &best {
            None => true,
            Some((c, b, ..)) => (consistent, -score) > (*c, -*b),
        };
        if better {
            best = Some((consistent, score, s, knee == 0.0));
        }
    }
    let Some((consistent, _, solution, all_compute)) = best else {
        return Err(SimError::invalid("observations", "no step to fit"));
    };
    if !consistent {
        notes.push(
            "no assignment of weight- and compute-bound steps agrees with its own fit; \
             kept the best-fitting one (some predictions fall on the other side)"
                .to_string(),
        );
    }
    if all_compute {
        notes.push(
            "every step fitted compute-bound: a one-token decode pays a token's compute like a \
             prefill token and no weight floor shows (a CPU engine's shape), so weights_ms is 0"
                .to_string(),
        );
    }
    Ok(assemble(observations, &steps, solution, all_compute, notes))
}

fn assemble(
    observations: &[Observation],
    steps: &[Vec<super::model::Step>],
    s: Solution,
    all_compute: bool,
    mut notes: Vec<String>,
) -> Fit {
    let n = observations.len();
    let dof = n.saturating_sub(s.free());
    let reduced = (dof > 0).then(|| s.chi_square / dof as f64);
    let inflate = reduced.map_or(1.0, |r| r.max(1.0));
    let covariance: Matrix = s
        .covariance
        .iter()
        .map(|r| r.iter().map(|c| c * inflate).collect())
        .collect();
    for (j, status) in s.status.iter().enumerate() {
        let field = PROFILE_FIELDS[j];
        match status {
            ParameterStatus::Fitted => {}
            // No weight-bound step: said above.
            ParameterStatus::Unidentified if all_compute && j == D => {}
            ParameterStatus::Unidentified => notes.push(format!(
                "{field} is not identifiable from these observations (fixed at 0, its effect \
                 carried by the parameters it is confounded with); it needs {}",
                NEEDS[j]
            )),
            ParameterStatus::AtZero => notes.push(format!(
                "{field} fitted below 0 and was fixed at 0 (too small to measure here)"
            )),
        }
    }
    if dof == 0 {
        notes.push("no degrees of freedom: as many parameters as observations".into());
    } else if inflate > 1.0 {
        notes.push(format!(
            "the model fits worse than the observations' spreads (reduced chi-square {inflate:.2}); \
             standard errors scaled by its square root"
        ));
    }
    let mut residuals = Vec::with_capacity(n);
    for (o, st) in observations.iter().zip(steps) {
        let predicted_s = predict(&o.kind, st, &s.theta);
        let relative_error = (predicted_s - o.median_s) / o.median_s;
        let z = (predicted_s - o.median_s).abs() / (o.standard_error_s() * inflate.sqrt());
        if z > 4.0 && dof > 0 {
            notes.push(format!(
                "the {} does not fit: observed {:.3} ms, predicted {:.3} ms ({:+.1} %, {z:.1} standard errors)",
                o.label(),
                o.median_s * 1e3,
                predicted_s * 1e3,
                relative_error * 100.0
            ));
        }
        residuals.push(Residual {
            observation: o.kind,
            observed_s: o.median_s,
            predicted_s,
            relative_error,
        });
    }
    let rms_relative_error = (residuals
        .iter()
        .map(|r| r.relative_error.powi(2))
        .sum::<f64>()
        / n as f64)
        .sqrt();
    let (step, request_latency_ms) = step_from_theta(&s.theta);
    Fit {
        step,
        request_latency_ms,
        theta: s.theta,
        standard_errors: standard_errors(&s.theta, &covariance, &s.status),
        covariance,
        status: s.status,
        residuals,
        rms_relative_error,
        reduced_chi_square: reduced,
        degrees_of_freedom: dof,
        notes,
    }
}

/// Standard errors in the profile's units (`gemm_half_tokens = P / g` by
/// the delta method).
fn standard_errors(theta: &Theta, cov: &Matrix, status: &[ParameterStatus]) -> StepErrors {
    let fitted = |j: usize| status[j] == ParameterStatus::Fitted;
    let se = |j: usize, unit: f64| fitted(j).then(|| cov[j][j].max(0.0).sqrt() * unit);
    let gemm_half = (fitted(G) && fitted(P) && theta[G] > 0.0).then(|| {
        let (p, g) = (theta[P], theta[G]);
        let var =
            cov[P][P] / (g * g) + (p * p / g.powi(4)) * cov[G][G] - 2.0 * p / g.powi(3) * cov[P][G];
        var.max(0.0).sqrt()
    });
    StepErrors {
        request_latency_ms: se(R, 1e3),
        weights_ms: se(D, 1e3),
        per_seq_us: se(B, 1e6),
        token_us: se(G, 1e6),
        gemm_half_tokens: gemm_half,
        context_token_ns: se(K, 1e9),
        attention_pair_ps: se(A, 1e12),
        held_token_ns: None,
    }
}

/// The step model and request latency (ms) θ stands for. With g = 0 the
/// compute-bound side cannot be written as `token × (tokens + gemm_half)`,
/// so `gemm_half_tokens` is 0 and P is dropped.
pub(crate) fn step_from_theta(theta: &Theta) -> (StepModel, f64) {
    let t = theta.map(|v| v.max(0.0));
    let step = StepModel {
        overhead_ms: 0.0,
        per_seq_us: t[B] * 1e6,
        weights_ms: t[D] * 1e3,
        token_us: t[G] * 1e6,
        gemm_half_tokens: if t[G] > 0.0 { t[P] / t[G] } else { 0.0 },
        context_token_ns: t[K] * 1e9,
        attention_pair_ps: t[A] * 1e12,
        comm_step_us: 0.0,
        comm_token_ns: 0.0,
        held_token_ns: 0.0,
    };
    (step, t[R] * 1e3)
}

/// θ of a step model and request latency (ms): the floor and the
/// compute-bound intercept each carry `overhead_ms`. Communication terms,
/// which a fit does not have, are left out.
pub(crate) fn theta_from_step(step: &StepModel, request_latency_ms: f64) -> Theta {
    let mut t = [0.0; THETA_LEN];
    t[R] = request_latency_ms * 1e-3;
    t[D] = (step.overhead_ms + step.weights_ms) * 1e-3;
    t[B] = step.per_seq_us * 1e-6;
    t[G] = step.token_us * 1e-6;
    t[P] = step.overhead_ms * 1e-3 + step.token_us * 1e-6 * step.gemm_half_tokens;
    t[K] = step.context_token_ns * 1e-9;
    t[A] = step.attention_pair_ps * 1e-12;
    t
}

/// `k` draws of θ from the normal with mean `theta` and covariance `cov`,
/// each coefficient clamped at 0; the same `seed` gives the same draws.
pub(crate) fn draw_thetas(theta: &Theta, cov: &Matrix, k: usize, seed: u64) -> Vec<Theta> {
    let l = cholesky_semidefinite(cov);
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..k)
        .map(|_| {
            let z: Vec<f64> = (0..THETA_LEN).map(|_| rng.sample(StandardNormal)).collect();
            let mut t = *theta;
            for (i, v) in t.iter_mut().enumerate() {
                *v += (0..=i).map(|j| l[i][j] * z[j]).sum::<f64>();
                *v = v.max(0.0);
            }
            t
        })
        .collect()
}

impl Fit {
    /// `k` draws of the step model and request latency (ms) from the fit's
    /// uncertainty (a multivariate normal of θ, coefficients clamped at 0),
    /// for the band of a prediction.
    pub fn draw(&self, k: usize, seed: u64) -> Vec<(StepModel, f64)> {
        draw_thetas(&self.theta, &self.covariance, k, seed)
            .iter()
            .map(step_from_theta)
            .collect()
    }

    /// The model's value of an observation's shape under the fit, seconds.
    pub fn predict(&self, kind: &ObservationKind, options: &FitOptions) -> f64 {
        predict(
            kind,
            &steps(kind, options.max_num_batched_tokens),
            &self.theta,
        )
    }
}
