//! The profile file `goodput calibrate` writes: a valid simulator config
//! (the engine's limits, `request_latency_ms` and the `[step]` table) whose
//! `[calibration]` table, which the simulator ignores, records where the fit
//! came from and how good it is. `goodput sim --profile` and
//! `goodput predict --profile` read the same file through the same path
//! ([`SimConfig::apply_toml`]), so they simulate the same engine.

use std::collections::BTreeMap;
use std::path::Path;

use rand::{Rng, SeedableRng};
use rand_distr::StandardNormal;
use serde::{Deserialize, Serialize};

use super::fit::PROFILE_FIELDS;
use super::fit::{draw_thetas, step_from_theta, theta_from_step, Fit, Residual, StepErrors};
use super::model::{THETA_LEN, THETA_NAMES};
use super::solve::ParameterStatus;
use crate::config::SimConfig;
use crate::error::SimError;
use crate::kv::BLOCK_SIZE;
use crate::roofline::StepModel;

/// Where an engine limit came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitSource {
    /// Read from the server (its metrics or its model list).
    Metrics,
    /// Inferred from behaviour (e.g. the batch at which ITL stops growing).
    Inferred,
    /// Not known: vLLM's default assumed.
    Default,
}

/// Where each of the engine limits came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitSources {
    /// Source of `max_num_seqs`.
    pub max_num_seqs: LimitSource,
    /// Source of `max_num_batched_tokens`.
    pub max_num_batched_tokens: LimitSource,
    /// Source of `num_gpu_blocks` (the profile's `num_gpu_blocks_override`).
    pub num_gpu_blocks: LimitSource,
    /// Source of `max_model_len`.
    pub max_model_len: LimitSource,
}

/// The engine limits of the calibrated server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerLimits {
    /// Most sequences in one step (vLLM's `max_num_seqs`).
    pub max_num_seqs: usize,
    /// Token budget of one step (vLLM's `max_num_batched_tokens`).
    pub max_num_batched_tokens: usize,
    /// KV-cache blocks of 16 tokens.
    pub num_gpu_blocks: usize,
    /// Longest prompt + output, tokens.
    pub max_model_len: usize,
    /// Where each limit came from.
    pub sources: LimitSources,
}

/// The `[calibration]` table: provenance and quality of the fit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Calibration {
    /// The server measured.
    pub source_url: String,
    /// When it was measured (as the caller wrote it, e.g. RFC 3339).
    pub date: String,
    /// Root mean square of the residuals' relative errors.
    pub rms_relative_error: f64,
    /// Observations minus fitted parameters.
    pub degrees_of_freedom: usize,
    /// `χ² / dof` with each observation weighed by its standard error; absent with no
    /// degrees of freedom.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reduced_chi_square: Option<f64>,
    /// Unidentified or bounded parameters, convergence, observations that do not fit,
    /// limits raised.
    pub notes: Vec<String>,
    /// The order of θ in `covariance`.
    pub parameters: Vec<String>,
    /// Covariance of θ (seconds², in `parameters`' order).
    pub covariance: Vec<Vec<f64>>,
    /// Where each engine limit came from.
    pub limits: LimitSources,
    /// Standard errors in the `[step]` table's units.
    pub standard_errors: StepErrors,
    /// Fitted, unidentified or fixed at 0, by profile field.
    pub status: BTreeMap<String, ParameterStatus>,
    /// How the fit meets each observation, in the order measured.
    pub residuals: Vec<Residual>,
}

/// A calibrated profile: a simulator config file plus its `[calibration]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// Name on `/v1/models`.
    pub served_model_name: String,
    /// Most sequences in one step.
    pub max_num_seqs: usize,
    /// Token budget of one step.
    pub max_num_batched_tokens: usize,
    /// KV-cache blocks of 16 tokens: the server's, raised if needed to hold `max_model_len`.
    pub num_gpu_blocks_override: usize,
    /// Longest prompt + output, tokens.
    pub max_model_len: usize,
    /// Time from a request's arrival to the engine's queue, ms.
    pub request_latency_ms: f64,
    /// The fitted step-time coefficients (the `[step]` table).
    pub step: StepModel,
    /// Provenance and quality of the fit; the simulator ignores it.
    pub calibration: Calibration,
}

/// Mixed into the draws' seed for the model-error stream, so that it is
/// independent of θ's.
const MODEL_ERROR_STREAM: u64 = 0x6d6f_6465_6c65_7272;

const HEADER: &str = "\
# A calibrated profile written by `goodput calibrate`: a simulator config whose
# step-time model was fitted to TTFTs and inter-token gaps measured over HTTP.
# Use it with `goodput sim --profile FILE` or `goodput predict --profile FILE`.
#
# [step] holds the fitted coefficients. overhead_ms is 0: from outside, a
# step's fixed cost is only seen added to weights_ms (a weight-bound step) and
# to token_us x gemm_half_tokens (a compute-bound one), so those carry it.
# [calibration] says where and when it was measured, the standard errors and
# covariance of the fit, its residuals, and which parameters it could not tell
# apart (notes). The simulator ignores [calibration].
#
# Left out of the model: prefix-cache hits (prompts were unique), sampling
# parameters and structured output, speculative decoding, preemption and
# swapping costs, the host CPU shared between HTTP and the engine, the network
# between client and server, and tensor-parallel communication as its own
# term (folded into the others).
";

impl Profile {
    /// The profile of `fit` on a server with `limits`. A `max_model_len`
    /// beyond the KV cache (possible only for inferred or default limits)
    /// raises the block count to hold it, with a note.
    pub fn from_fit(
        fit: &Fit,
        served_model_name: &str,
        limits: &ServerLimits,
        source_url: &str,
        date: &str,
    ) -> Profile {
        let mut notes = fit.notes.clone();
        let needed = limits.max_model_len.div_ceil(BLOCK_SIZE);
        let blocks = if limits.num_gpu_blocks < needed {
            notes.push(format!(
                "num_gpu_blocks {} cannot hold max_model_len {}: raised to {needed}",
                limits.num_gpu_blocks, limits.max_model_len
            ));
            needed
        } else {
            limits.num_gpu_blocks
        };
        let status = PROFILE_FIELDS
            .iter()
            .zip(fit.status)
            .map(|(f, s)| (f.to_string(), s))
            .collect();
        Profile {
            served_model_name: served_model_name.to_string(),
            max_num_seqs: limits.max_num_seqs,
            max_num_batched_tokens: limits.max_num_batched_tokens,
            num_gpu_blocks_override: blocks,
            max_model_len: limits.max_model_len,
            request_latency_ms: fit.request_latency_ms,
            step: fit.step,
            calibration: Calibration {
                source_url: source_url.to_string(),
                date: date.to_string(),
                rms_relative_error: fit.rms_relative_error,
                degrees_of_freedom: fit.degrees_of_freedom,
                reduced_chi_square: fit.reduced_chi_square,
                notes,
                parameters: THETA_NAMES.iter().map(|s| s.to_string()).collect(),
                covariance: fit.covariance.clone(),
                limits: limits.sources,
                standard_errors: fit.standard_errors,
                status,
                residuals: fit.residuals.clone(),
            },
        }
    }

    /// The file's text: a comment header, then the TOML.
    pub fn to_toml(&self) -> Result<String, SimError> {
        let body = toml::to_string(self)
            .map_err(|e| SimError::invalid("profile", format!("cannot be written as TOML: {e}")))?;
        Ok(format!("{HEADER}\n{body}"))
    }

    /// Read a profile; errors name the file and, from the TOML parser, the
    /// line and field. The profile must also make a valid simulator.
    pub fn read(path: &Path) -> Result<Profile, SimError> {
        let text = std::fs::read_to_string(path).map_err(|source| SimError::ReadConfig {
            path: path.to_path_buf(),
            source,
        })?;
        let profile: Profile = toml::from_str(&text).map_err(|e| SimError::ParseConfig {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        profile
            .check_covariance()
            .and_then(|()| profile.sim_config().map(|_| ()))
            .map_err(|e| SimError::ParseConfig {
                path: path.to_path_buf(),
                message: e.to_string(),
            })?;
        Ok(profile)
    }

    /// The simulator this profile describes, built from its TOML exactly as
    /// `goodput sim --profile` builds it (on the default presets, which a
    /// profile's limits make irrelevant).
    pub fn sim_config(&self) -> Result<SimConfig, SimError> {
        let mut c = SimConfig::default();
        c.apply_toml(&self.to_toml()?, Path::new("<calibrated profile>"))?;
        c.validate()?;
        Ok(c)
    }

    /// `k` simulators drawn from what the calibration leaves uncertain, for
    /// a prediction's band; the same `seed` gives the same draws:
    ///
    /// - the fit's uncertainty: θ from a normal with the recorded
    ///   covariance, coefficients clamped at 0;
    /// - the model's own error: every time of the draw (each step's, the
    ///   request latency) scaled by `exp(σ z)`, σ the residuals' rms
    ///   relative error ([`Calibration::rms_relative_error`]). The residuals
    ///   are how far the fitted model is from the medians it was fitted to,
    ///   which are precise: their spread is the model's misfit, not noise,
    ///   and a workload the calibration did not run meets it too. On the
    ///   simulator's own engine σ is about 0.1 %; on a one-thread llama.cpp
    ///   server 13.5 %. Without it a forecast's interval had zero width
    ///   where the fit was exact (4.14–4.14 req/s) and stopped at the
    ///   estimate itself where the draws leaned one way;
    /// - the held queue's cost (`held_token_ns`, when a calibration read
    ///   one): scaled with the rest, and lognormal about its reading with
    ///   the relative standard error the reading recorded.
    pub fn draws(&self, k: usize, seed: u64) -> Result<Vec<SimConfig>, SimError> {
        self.check_covariance()?;
        let base = self.sim_config()?;
        let theta = theta_from_step(&self.step, self.request_latency_ms);
        let sigma = self.calibration.rms_relative_error;
        let sigma = if sigma.is_finite() {
            sigma.max(0.0)
        } else {
            0.0
        };
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ MODEL_ERROR_STREAM);
        let held = self.step.held_token_ns;
        let held_sigma = match self.calibration.standard_errors.held_token_ns {
            Some(se) if held > 0.0 && se.is_finite() => (se / held).max(0.0),
            _ => 0.0,
        };
        Ok(draw_thetas(&theta, &self.calibration.covariance, k, seed)
            .iter()
            .map(|t| {
                let z: f64 = rng.sample(StandardNormal);
                let scale = (sigma * z).exp();
                let (mut step, latency_ms) = step_from_theta(&t.map(|v| v * scale));
                // The held queue's cost is a time too (the model's error
                // scales it), and its own reading's error is drawn beside.
                let zh: f64 = if held > 0.0 {
                    rng.sample(StandardNormal)
                } else {
                    0.0
                };
                step.held_token_ns = held * scale * (held_sigma * zh).exp();
                let mut c = base.clone();
                c.step = Some(step);
                c.request_latency_ms = latency_ms;
                c
            })
            .collect())
    }

    fn check_covariance(&self) -> Result<(), SimError> {
        let cov = &self.calibration.covariance;
        let square = cov.len() == THETA_LEN && cov.iter().all(|r| r.len() == THETA_LEN);
        if !square || cov.iter().flatten().any(|v| !v.is_finite()) {
            return Err(SimError::invalid(
                "calibration.covariance",
                format!(
                    "must be {THETA_LEN} rows of {THETA_LEN} finite numbers (θ: {THETA_NAMES:?})"
                ),
            ));
        }
        Ok(())
    }
}
