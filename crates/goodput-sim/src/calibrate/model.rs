//! What the experiment hands the fit ([`Observation`]), and the model of
//! each observation kind as a function of the fitted parameters θ: the
//! exact prediction (with its `max()`), and the linear row it is once the
//! side of every `max()` is known.

use serde::{Deserialize, Serialize};

use crate::error::SimError;

/// Index of each parameter in θ (all in seconds, per token or per pair).
pub(crate) const R: usize = 0;
pub(crate) const D: usize = 1;
pub(crate) const B: usize = 2;
pub(crate) const G: usize = 3;
pub(crate) const P: usize = 4;
pub(crate) const K: usize = 5;
pub(crate) const A: usize = 6;
/// Number of fitted parameters.
pub const THETA_LEN: usize = 7;

/// Names of θ's entries, in order, with their (SI) units: the order of
/// [`crate::calibrate::Fit::covariance`] and of a profile's
/// `calibration.covariance`.
pub const THETA_NAMES: [&str; THETA_LEN] = [
    "request_latency_s",
    "weight_floor_s",
    "per_seq_s",
    "token_s",
    "compute_intercept_s",
    "context_token_s",
    "attention_pair_s",
];

/// The fitted parameters, seconds: `[r, D, b, g, P, κ, α]` (module docs).
pub type Theta = [f64; THETA_LEN];

/// What was measured, and at what shape.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ObservationKind {
    /// Time to first token of one request alone on the server, with a
    /// prompt of `prompt_tokens` tokens no other request shares (so the
    /// prefix cache does not hit).
    Prefill {
        /// Prompt length, tokens.
        prompt_tokens: u64,
    },
    /// Gap between consecutive tokens while exactly `batch` sequences
    /// decode together (no prefill in the same steps), each attending
    /// `context_tokens` tokens on average: prompt plus tokens generated
    /// before the gap's token, averaged over the gaps measured.
    Decode {
        /// Sequences decoding together.
        batch: u64,
        /// Mean context each sequence attends to, tokens.
        context_tokens: f64,
    },
}

/// One measured point: the median of `count` values, and their spread.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    /// What was measured, and at what shape.
    #[serde(flatten)]
    pub kind: ObservationKind,
    /// The median of the values (TTFT or inter-token gap), seconds.
    pub median_s: f64,
    /// The spread of the individual values, seconds: their standard
    /// deviation, or better 1.4826 × their median absolute deviation. 0 when
    /// unknown (the fit then weighs the point by its size alone).
    pub spread_s: f64,
    /// How many values the median is taken over (at least 1).
    pub count: u32,
}

impl Observation {
    /// A prefill (TTFT) observation.
    pub fn prefill(prompt_tokens: u64, median_s: f64, spread_s: f64, count: u32) -> Self {
        Observation {
            kind: ObservationKind::Prefill { prompt_tokens },
            median_s,
            spread_s,
            count,
        }
    }

    /// A decode (inter-token latency) observation.
    pub fn decode(
        batch: u64,
        context_tokens: f64,
        median_s: f64,
        spread_s: f64,
        count: u32,
    ) -> Self {
        Observation {
            kind: ObservationKind::Decode {
                batch,
                context_tokens,
            },
            median_s,
            spread_s,
            count,
        }
    }

    /// The standard error of the median, seconds: `1.2533 × spread / √count`
    /// (the median of normal values), floored at 0.1 % of the median and
    /// 1 µs so that exact or unstated data are weighed by relative error.
    pub fn standard_error_s(&self) -> f64 {
        let se = 1.2533 * self.spread_s / f64::from(self.count.max(1)).sqrt();
        se.max(1e-3 * self.median_s).max(1e-6)
    }

    /// A short description for notes and residual tables.
    pub fn label(&self) -> String {
        match self.kind {
            ObservationKind::Prefill { prompt_tokens } => {
                format!("prefill of {prompt_tokens} tokens")
            }
            ObservationKind::Decode {
                batch,
                context_tokens,
            } => format!("decode of {batch} sequences at {context_tokens:.0} tokens of context"),
        }
    }

    /// Check the fields; `index` names the observation in the message.
    pub(crate) fn validate(&self, index: usize) -> Result<(), SimError> {
        let field = |f: &str| format!("observations[{index}].{f}");
        let positive = |v: f64| v.is_finite() && v > 0.0;
        match self.kind {
            ObservationKind::Prefill { prompt_tokens: 0 } => {
                return Err(SimError::invalid(
                    field("prompt_tokens"),
                    "must be at least 1",
                ));
            }
            ObservationKind::Decode { batch: 0, .. } => {
                return Err(SimError::invalid(field("batch"), "must be at least 1"));
            }
            ObservationKind::Decode { context_tokens, .. } if !positive(context_tokens) => {
                return Err(SimError::invalid(
                    field("context_tokens"),
                    format!("{context_tokens} must be a positive number"),
                ));
            }
            _ => {}
        }
        if !positive(self.median_s) {
            return Err(SimError::invalid(
                field("median_s"),
                format!("{} must be a positive number of seconds", self.median_s),
            ));
        }
        if !(self.spread_s.is_finite() && self.spread_s >= 0.0) {
            return Err(SimError::invalid(
                field("spread_s"),
                format!("{} must be a number >= 0", self.spread_s),
            ));
        }
        Ok(())
    }
}

/// One engine step an observation is made of: `tokens` processed,
/// `pairs` of prefill attention, `context` tokens of decode KV read, `seqs`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Step {
    tokens: f64,
    seqs: f64,
    pairs: f64,
    context: f64,
}

/// The steps of an observation: a prefill is split into chunks of at most
/// `budget` tokens (vLLM's `max_num_batched_tokens`), chunk k attending
/// its own tokens and every earlier chunk's.
pub(crate) fn steps(kind: &ObservationKind, budget: u64) -> Vec<Step> {
    match *kind {
        ObservationKind::Prefill { prompt_tokens } => {
            let budget = budget.max(1);
            let mut out = Vec::new();
            let mut done = 0;
            while done < prompt_tokens {
                let len = (prompt_tokens - done).min(budget) as f64;
                out.push(Step {
                    tokens: len,
                    seqs: 1.0,
                    pairs: len * done as f64 + len * (len + 1.0) / 2.0,
                    context: 0.0,
                });
                done += budget;
            }
            out
        }
        ObservationKind::Decode {
            batch,
            context_tokens,
        } => vec![Step {
            tokens: batch as f64,
            seqs: batch as f64,
            pairs: 0.0,
            context: batch as f64 * context_tokens,
        }],
    }
}

/// True when a step of `tokens` is compute-bound under θ (as
/// [`crate::roofline::StepModel::step_time`] decides it).
pub(crate) fn compute_bound(theta: &Theta, tokens: f64) -> bool {
    theta[P] + theta[G] * tokens > theta[D]
}

/// The sides of every `max()` of the observations under θ.
pub(crate) fn branches(steps: &[Vec<Step>], theta: &Theta) -> Vec<Vec<bool>> {
    steps
        .iter()
        .map(|s| s.iter().map(|s| compute_bound(theta, s.tokens)).collect())
        .collect()
}

/// The sides when every step of more than `knee` tokens is compute-bound.
/// Under any θ with `g > 0` a step's side is decided by its tokens alone,
/// compute-bound above `(D − P) / g`, so these are every side assignment
/// a θ can make.
pub(crate) fn sides_at_knee(steps: &[Vec<Step>], knee: f64) -> Vec<Vec<bool>> {
    steps
        .iter()
        .map(|s| s.iter().map(|s| s.tokens > knee).collect())
        .collect()
}

/// The candidate knees: each distinct step size (every step up to it
/// weight-bound), then 0 (every step compute-bound). Reading the weights
/// bounds a step of one or a few tokens on an accelerator, and without
/// that a design can seldom tell a weight floor from a compute-bound
/// intercept, so the step-size knees come first and win a tie. On a CPU
/// engine (configuration C of issue 34: a 4 × 128 model on one thread) a
/// one-token decode pays a token's compute like a prefill token does and
/// no weight floor shows (D fits below 0): only the last knee describes it.
/// Without it the fit kept every step weight-bound, so a prefill's time
/// per token fell to the request's latency (20 ms, no engine time) and the
/// quadratic term, and the forecast's prefills barely delayed the decodes
/// beside them.
pub(crate) fn knees(steps: &[Vec<Step>]) -> Vec<f64> {
    let mut k: Vec<f64> = steps.iter().flatten().map(|s| s.tokens).collect();
    k.sort_by(f64::total_cmp);
    k.dedup();
    k.push(0.0);
    k
}

/// The linear row of an observation given the side of each step's `max()`.
pub(crate) fn row(kind: &ObservationKind, steps: &[Step], compute: &[bool]) -> Theta {
    let mut x = [0.0; THETA_LEN];
    if matches!(kind, ObservationKind::Prefill { .. }) {
        x[R] = 1.0;
    }
    for (s, &c) in steps.iter().zip(compute) {
        x[B] += s.seqs;
        if c {
            x[P] += 1.0;
            x[G] += s.tokens;
        } else {
            x[D] += 1.0;
        }
        x[K] += s.context;
        x[A] += s.pairs;
    }
    x
}

/// The model's value of an observation under θ, seconds (with its `max()`s).
pub(crate) fn predict(kind: &ObservationKind, steps: &[Step], theta: &Theta) -> f64 {
    let compute: Vec<bool> = steps
        .iter()
        .map(|s| compute_bound(theta, s.tokens))
        .collect();
    dot(&row(kind, steps, &compute), theta)
}

/// `Σ aᵢ bᵢ`.
pub(crate) fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(p, q)| p * q).sum()
}
