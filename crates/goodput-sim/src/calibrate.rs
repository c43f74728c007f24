//! Calibration: fit the step-time model ([`crate::roofline`]) to a server
//! seen only over HTTP, and write the result as a profile the simulator runs.
//!
//! `goodput calibrate` runs a designed experiment against the server and
//! hands [`fit`] its [`Observation`]s: medians of TTFTs of single requests
//! (prefills) and of inter-token gaps at fixed batch sizes (decodes). This
//! module is pure and deterministic: observations in, [`Fit`] and
//! [`Profile`] out.
//!
//! # What is fitted
//!
//! A step costs `overhead + per_seq × seqs + max(weights, token × (tokens +
//! gemm_half)) + context_token × decode_context + attention_pair ×
//! prefill_pairs`. From outside only these combinations are identifiable,
//! and they are what is fitted, θ = (r, D, b, g, P, κ, α), in seconds:
//!
//! | θ | meaning | profile field |
//! |---|---------|---------------|
//! | r | server-side latency before the queue (HTTP, tokenization) | `request_latency_ms` |
//! | D | overhead + weights: the floor of a weight-bound step | `weights_ms` |
//! | b | cost of each sequence in a step | `per_seq_us` |
//! | g | GEMM time of a token at full efficiency | `token_us` |
//! | P | overhead + token × gemm_half: a compute-bound step's intercept | `gemm_half_tokens` = P / g |
//! | κ | decode KV read of a context token | `context_token_ns` |
//! | α | prefill attention of a query–key pair | `attention_pair_ps` |
//!
//! A prefill of `n` tokens alone on the server takes `r + Σ_chunks (b +
//! max(D, P + g·len) + α·pairs)`, its prompt cut into chunks of at most
//! `max_num_batched_tokens`, chunk k's pairs `len × before + len(len+1)/2`.
//! A decode gap of `B` sequences at a mean context `c` takes `b·B + max(D,
//! P + g·B) + κ·B·c`. Once the side of each `max()` is known the model is
//! linear in θ: the fit assigns the sides from the current θ (first
//! decodes weight-bound, prefill chunks of 512 tokens or more
//! compute-bound), solves weighted least squares with every coefficient
//! at 0 or above, and reassigns until the sides settle.
//!
//! # Why `overhead_ms` is 0
//!
//! The fixed cost of a step is never seen alone: a weight-bound step shows
//! `overhead + weights`, a compute-bound one `overhead + token × gemm_half`.
//! A profile therefore sets `overhead_ms = 0` and lets `weights_ms` and
//! `gemm_half_tokens` carry it, which gives every step the same time as the
//! fitted model.
//!
//! # What is assumed
//!
//! Each observation is a median over several requests or gaps, weighed by
//! its standard error (`1.2533 × spread / √count`, floored at 0.1 % of the
//! median). Prompts are unique (no prefix-cache hits); a prefill runs alone;
//! a decode's steps hold only its `B` decoding sequences; there is no
//! tensor-parallel communication term (a fit cannot tell it from the
//! others). A parameter the observations cannot identify is fixed at 0 and
//! reported ([`ParameterStatus::Unidentified`] and a note); one fitted below
//! 0 is fixed at 0 ([`ParameterStatus::AtZero`]). When the model fits worse
//! than the spreads say, the covariance is scaled by the reduced
//! chi-square.

mod fit;
mod linalg;
mod model;
mod profile;
mod solve;

pub use fit::{fit, Fit, FitOptions, Residual, StepErrors, PROFILE_FIELDS};
pub use model::{Observation, ObservationKind, Theta, THETA_LEN, THETA_NAMES};
pub use profile::{Calibration, LimitSource, LimitSources, Profile, ServerLimits};
pub use solve::ParameterStatus;

#[cfg(test)]
mod tests;
