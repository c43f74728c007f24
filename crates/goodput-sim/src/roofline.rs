//! Step time: a roofline true to the shape of the step.
//!
//! One engine step costs the sum of parts that run one after the other on a
//! GPU, each bound by what limits it:
//!
//! ```text
//! overhead + per_seq × seqs                      scheduling, launches, sampling
//! + max(weights, token × (tokens + gemm_half))   the GEMMs: weight-bound, or compute-bound
//! + context_token × decode_context               decode attention: reading the KV cache
//! + attention_pair × prefill_pairs               prefill attention: query–key pairs
//! + comm_step + comm_token × tokens              tensor-parallel all-reduces
//! ```
//!
//! all times `time_scale`. The GEMM term is a roofline whose efficiency
//! depends on the tokens in the step: at `tokens` the GEMMs run at
//! `gemm_efficiency × tokens / (tokens + gemm_half_tokens)` of the peak, so
//! small GEMMs run far below it and large ones near it, and their time is
//! `token × (tokens + gemm_half)` with `token` the time of one token at the
//! full efficiency. Below the knee the weights' read from memory bounds it.
//! Attention is its own kernel: a decode reads every context token's keys
//! and values once (memory-bound, flash-decoding), a prefill computes every
//! query–key pair (compute-bound, at its own efficiency).
//!
//! These coefficients are the [`StepModel`]: a physical preset
//! ([`StepModel::physical`]) derives them from a model's shape and an
//! accelerator's peak figures and efficiencies; a calibrated profile
//! (`goodput calibrate`) fits them to a server seen only over HTTP, where
//! only their sums are identifiable (see [`StepModel`]).

use serde::{Deserialize, Serialize};

use crate::presets::{HardwareProfile, ModelProfile};

/// What one step processes, summed over its sequences.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BatchShape {
    /// Tokens processed (prefill chunk tokens plus one per decoding sequence).
    pub new_tokens: u64,
    /// Query–key pairs of attention: for each processed token, the length of
    /// the context it attends to (itself included).
    pub attention_pairs: f64,
    /// The part of `attention_pairs` that prefill tokens make.
    pub prefill_attention_pairs: f64,
    /// Context tokens whose KV cache decoding sequences read this step.
    pub decode_context_tokens: u64,
    /// Sequences in the step.
    pub seqs: u64,
    /// Tokens the step streams out (one per sequence that ends the step
    /// with a new token).
    pub streamed: u64,
    /// Requests the server holds while the step runs (running or waiting).
    pub held: u64,
}

impl BatchShape {
    /// Add a sequence that processes `new` tokens after `context` already
    /// computed ones; `decoding` when it is generating (not prefilling).
    pub fn add(&mut self, context: u64, new: u64, decoding: bool) {
        self.new_tokens += new;
        self.seqs += 1;
        // Σ_{j=1..new} (context + j)
        let c = context as f64;
        let q = new as f64;
        let pairs = q * c + q * (q + 1.0) / 2.0;
        self.attention_pairs += pairs;
        if decoding {
            self.decode_context_tokens += context + new;
        } else {
            self.prefill_attention_pairs += pairs;
        }
    }
}

/// The parts of one step's time, seconds (before `time_scale`, except
/// `total_s`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepTime {
    /// The GEMMs: `max(weights, token × (tokens + gemm_half))`.
    pub gemm_s: f64,
    /// True when the GEMMs were bound by compute rather than the weights' read.
    pub gemm_compute_bound: bool,
    /// Attention: the decode KV read plus the prefill pairs.
    pub attention_s: f64,
    /// Tensor-parallel all-reduces: `comm_step + comm_token × tokens`.
    pub communication_s: f64,
    /// Fixed and per-sequence overhead.
    pub overhead_s: f64,
    /// `(overhead + gemm + attention + communication) × time_scale`.
    pub total_s: f64,
}

/// The coefficients of the step-time model (module docs), in the units
/// their names carry. This is the `[step]` table of a profile.
///
/// Seen from outside, `overhead_ms` and `weights_ms` only ever appear as
/// their sum in a weight-bound step, and `overhead_ms + token_us ×
/// gemm_half_tokens` in a compute-bound one; a calibrated profile therefore
/// sets `overhead_ms` to 0 and carries the fixed cost in the other two,
/// which gives every step the same time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepModel {
    /// Fixed cost of a step (scheduling, launches, sampling), ms.
    pub overhead_ms: f64,
    /// Cost of each sequence in a step (its scheduling, input preparation,
    /// sampling, detokenization), µs.
    pub per_seq_us: f64,
    /// Weight-bound floor of the GEMMs (the weights read once), ms.
    pub weights_ms: f64,
    /// GEMM time of one token at full efficiency, µs.
    pub token_us: f64,
    /// Tokens at which the GEMMs reach half their full efficiency.
    pub gemm_half_tokens: f64,
    /// Decode attention: the KV read of one context token, ns.
    pub context_token_ns: f64,
    /// Prefill attention: one query–key pair, ps.
    pub attention_pair_ps: f64,
    /// Tensor-parallel all-reduce latency of a step, µs.
    #[serde(default)]
    pub comm_step_us: f64,
    /// Tensor-parallel all-reduce payload of one token, ns.
    #[serde(default)]
    pub comm_token_ns: f64,
    /// Host time of one streamed token for each request the server holds
    /// (running or waiting), ns: a server whose connections' threads all
    /// wake on every token, on the engine's cores (llama.cpp's one-thread
    /// `llama-server`), slows as its queue grows. Read by a calibration's
    /// held queue; 0 in the physical model.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub held_token_ns: f64,
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

impl StepModel {
    /// The coefficients of `model` on `tensor_parallel` GPUs of `hardware`.
    pub fn physical(
        model: &ModelProfile,
        hardware: &HardwareProfile,
        tensor_parallel: u32,
    ) -> Self {
        let tp = f64::from(tensor_parallel.max(1));
        let flops_per_s = hardware.peak_tflops * 1e12;
        let bytes_per_s = hardware.bandwidth_gbps * 1e9 * hardware.mbu;
        let layers = f64::from(model.layers);
        // 2 FLOPs per parameter and token; attention 4 × layers × width per pair.
        let token_s = 2.0 * model.params / tp / (flops_per_s * hardware.gemm_efficiency);
        let pair_s = 4.0 * layers * model.attention_width()
            / tp
            / (flops_per_s * hardware.attention_efficiency);
        let (comm_step_s, comm_token_s) = if tp > 1.0 {
            let per_token = f64::from(model.hidden_size) * model.bytes_per_param;
            let ring = 2.0 * (tp - 1.0) / tp * per_token / (hardware.interconnect_gbps * 1e9);
            (
                2.0 * layers * hardware.allreduce_latency_us * 1e-6,
                2.0 * layers * ring,
            )
        } else {
            (0.0, 0.0)
        };
        StepModel {
            overhead_ms: hardware.step_overhead_ms,
            per_seq_us: hardware.per_seq_overhead_us,
            weights_ms: model.weight_bytes() / tp / bytes_per_s * 1e3,
            token_us: token_s * 1e6,
            gemm_half_tokens: hardware.gemm_half_tokens,
            context_token_ns: model.kv_bytes_per_token() / tp / bytes_per_s * 1e9,
            attention_pair_ps: pair_s * 1e12,
            comm_step_us: comm_step_s * 1e6,
            comm_token_ns: comm_token_s * 1e9,
            held_token_ns: 0.0,
        }
    }

    /// Every coefficient, by its field name (for messages and fits).
    pub fn fields(&self) -> [(&'static str, f64); 10] {
        [
            ("overhead_ms", self.overhead_ms),
            ("per_seq_us", self.per_seq_us),
            ("weights_ms", self.weights_ms),
            ("token_us", self.token_us),
            ("gemm_half_tokens", self.gemm_half_tokens),
            ("context_token_ns", self.context_token_ns),
            ("attention_pair_ps", self.attention_pair_ps),
            ("comm_step_us", self.comm_step_us),
            ("comm_token_ns", self.comm_token_ns),
            ("held_token_ns", self.held_token_ns),
        ]
    }

    /// The time of a step of this shape (before any time scale).
    pub fn step_time(&self, shape: &BatchShape) -> StepTime {
        let n = shape.new_tokens as f64;
        let weights_s = self.weights_ms * 1e-3;
        let compute_s = self.token_us * 1e-6 * (n + self.gemm_half_tokens);
        let gemm_s = weights_s.max(compute_s);
        let attention_s = self.context_token_ns * 1e-9 * shape.decode_context_tokens as f64
            + self.attention_pair_ps * 1e-12 * shape.prefill_attention_pairs;
        let communication_s = if self.comm_step_us > 0.0 || self.comm_token_ns > 0.0 {
            self.comm_step_us * 1e-6 + self.comm_token_ns * 1e-9 * n
        } else {
            0.0
        };
        let overhead_s = self.overhead_ms * 1e-3 + self.per_seq_us * 1e-6 * shape.seqs as f64;
        // The held requests' threads woken by each streamed token, as overhead.
        let held_s = self.held_token_ns * 1e-9 * shape.streamed as f64 * shape.held as f64;
        let overhead_s = overhead_s + held_s;
        StepTime {
            gemm_s,
            gemm_compute_bound: compute_s > weights_s,
            attention_s,
            communication_s,
            overhead_s,
            total_s: overhead_s + gemm_s + attention_s + communication_s,
        }
    }
}

/// The step-time model an engine runs with, and its time scale.
#[derive(Debug, Clone)]
pub struct Roofline {
    step: StepModel,
    time_scale: f64,
}

impl Roofline {
    /// The physical model of `model` on `tensor_parallel` GPUs of `hardware`.
    pub fn new(
        model: &ModelProfile,
        hardware: &HardwareProfile,
        tensor_parallel: u32,
        time_scale: f64,
    ) -> Self {
        Roofline::from_step(
            StepModel::physical(model, hardware, tensor_parallel),
            time_scale,
        )
    }

    /// A model given by its coefficients (a calibrated profile).
    pub fn from_step(step: StepModel, time_scale: f64) -> Self {
        Roofline { step, time_scale }
    }

    /// The coefficients in force.
    pub fn step_model(&self) -> &StepModel {
        &self.step
    }

    /// The time of a step of this shape.
    pub fn step_time(&self, shape: &BatchShape) -> StepTime {
        let mut t = self.step.step_time(shape);
        t.total_s *= self.time_scale;
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::presets::{hardware_by_name, model_by_name};

    fn h100_8b() -> Roofline {
        Roofline::new(
            &model_by_name("llama-3.1-8b").unwrap(),
            &hardware_by_name("h100-sxm").unwrap(),
            1,
            1.0,
        )
    }

    #[test]
    fn single_decode_is_weight_bound_and_reads_the_weights_and_the_context_once() {
        let r = h100_8b();
        let h = hardware_by_name("h100-sxm").unwrap();
        let mut shape = BatchShape::default();
        shape.add(999, 1, true);
        let t = r.step_time(&shape);
        assert!(!t.gemm_compute_bound);
        let weights = 16.06e9 / (3350e9 * h.mbu);
        assert!((t.gemm_s - weights).abs() / weights < 0.01, "{t:?}");
        let kv = 1000.0 * 131_072.0 / (3350e9 * h.mbu);
        assert!((t.attention_s - kv).abs() / kv < 0.01, "{t:?}");
        assert_eq!(t.communication_s, 0.0);
    }

    #[test]
    fn long_prefill_is_compute_bound_and_its_attention_grows_with_the_square() {
        let r = h100_8b();
        let mut shape = BatchShape::default();
        shape.add(0, 8192, false);
        let t = r.step_time(&shape);
        assert!(t.gemm_compute_bound, "{t:?}");
        // attention pairs of a fresh 8192-token prompt: n(n+1)/2
        assert_eq!(shape.attention_pairs, 8192.0 * 8193.0 / 2.0);
        assert_eq!(shape.prefill_attention_pairs, shape.attention_pairs);
        let mut half = BatchShape::default();
        half.add(0, 4096, false);
        let a = r.step_time(&half).attention_s;
        assert!(
            (t.attention_s / a - 4.0).abs() < 0.01,
            "{} / {a}",
            t.attention_s
        );
    }

    #[test]
    fn gemm_efficiency_rises_with_the_tokens_in_the_step() {
        let s = h100_8b().step_model().to_owned();
        // Time per token of the GEMMs falls as the step grows.
        let per_token = |n: u64| {
            let mut shape = BatchShape::default();
            shape.add(0, n, false);
            s.step_time(&shape).gemm_s / n as f64
        };
        assert!(per_token(512) > per_token(2048));
        assert!(per_token(2048) > per_token(8192));
    }

    #[test]
    fn tensor_parallel_divides_work_and_adds_all_reduce() {
        let m = model_by_name("llama-3.1-70b").unwrap();
        let h = hardware_by_name("h100-sxm").unwrap();
        let tp4 = StepModel::physical(&m, &h, 4);
        let tp8 = StepModel::physical(&m, &h, 8);
        assert!((tp4.token_us / tp8.token_us - 2.0).abs() < 1e-9);
        assert!((tp4.weights_ms / tp8.weights_ms - 2.0).abs() < 1e-9);
        let mut shape = BatchShape::default();
        shape.add(0, 2048, false);
        let (a, b) = (tp4.step_time(&shape), tp8.step_time(&shape));
        assert!(a.communication_s > 0.0 && b.communication_s > a.communication_s * 0.9);
    }

    #[test]
    fn each_streamed_token_costs_the_held_requests_their_wake_ups() {
        let base = *h100_8b().step_model();
        let held = StepModel {
            held_token_ns: 6_000.0,
            ..base
        };
        let mut shape = BatchShape::default();
        shape.add(500, 1, true);
        shape.add(700, 1, true);
        shape.streamed = 2;
        shape.held = 34;
        let extra = held.step_time(&shape).total_s - base.step_time(&shape).total_s;
        // 2 tokens × 34 held × 6 µs.
        assert!((extra - 2.0 * 34.0 * 6e-6).abs() < 1e-12, "{extra}");
        // Not written where it is 0, so presets' files are unchanged.
        assert!(!toml::to_string(&base).unwrap().contains("held_token_ns"));
        assert!(toml::to_string(&held).unwrap().contains("held_token_ns"));
    }

    #[test]
    fn a_profile_round_trips_through_toml() {
        let s = *h100_8b().step_model();
        let text = toml::to_string(&s).unwrap();
        let back: StepModel = toml::from_str(&text).unwrap();
        assert_eq!(s, back);
    }
}
