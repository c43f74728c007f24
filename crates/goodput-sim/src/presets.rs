//! Built-in model and hardware profiles, and the shape of custom ones.
//!
//! A [`ModelProfile`] holds the architecture figures the roofline needs
//! (parameter count, layers, attention shape, weight precision); a
//! [`HardwareProfile`] holds one accelerator's memory, peak compute, memory
//! bandwidth, interconnect and the efficiencies (MFU, MBU, per-step overhead)
//! that calibrate the roofline against measurements (see the README).
//! Both deserialize from a TOML file for custom setups.

use serde::{Deserialize, Serialize};

use crate::error::SimError;

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// A transformer's shape, as far as step times and KV-cache size depend on it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelProfile {
    /// Preset key, e.g. `llama-3.1-8b`.
    pub name: String,
    /// Name served on `/v1/models` unless `--served-model-name` is given.
    pub served_name: String,
    /// Parameter count.
    pub params: f64,
    /// Transformer layers.
    pub layers: u32,
    /// Hidden size (the all-reduce payload per token).
    pub hidden_size: u32,
    /// Attention (query) heads.
    pub attention_heads: u32,
    /// Key/value heads (grouped-query attention).
    pub kv_heads: u32,
    /// Dimension of one head.
    pub head_dim: u32,
    /// Bytes per weight and per KV-cache element (2 for bf16).
    pub bytes_per_param: f64,
    /// Longest context the model accepts (prompt + output), tokens.
    pub max_model_len: usize,
}

impl ModelProfile {
    /// Bytes of weights in total (all GPUs together).
    pub fn weight_bytes(&self) -> f64 {
        self.params * self.bytes_per_param
    }

    /// KV-cache bytes one token occupies in total (keys and values, all layers).
    pub fn kv_bytes_per_token(&self) -> f64 {
        2.0 * f64::from(self.layers)
            * f64::from(self.kv_heads)
            * f64::from(self.head_dim)
            * self.bytes_per_param
    }

    /// Width of the attention computation: heads × head dimension.
    pub fn attention_width(&self) -> f64 {
        f64::from(self.attention_heads) * f64::from(self.head_dim)
    }
}

/// One accelerator, with the efficiencies that calibrate the roofline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HardwareProfile {
    /// Preset key, e.g. `h100-sxm`.
    pub name: String,
    /// Device memory, GiB.
    pub memory_gib: f64,
    /// Dense bf16 peak, TFLOP/s.
    pub peak_tflops: f64,
    /// Memory bandwidth, GB/s.
    pub bandwidth_gbps: f64,
    /// Per-GPU interconnect bandwidth for all-reduce (NVLink or PCIe), GB/s.
    pub interconnect_gbps: f64,
    /// Fixed latency of one all-reduce, microseconds.
    pub allreduce_latency_us: f64,
    /// Share of the peak the GEMMs reach on large steps (0–1]; a step of
    /// `n` tokens gets `gemm_efficiency × n / (n + gemm_half_tokens)` of it.
    /// Older files call it `mfu`.
    #[serde(alias = "mfu")]
    pub gemm_efficiency: f64,
    /// Tokens in a step at which the GEMMs reach half of `gemm_efficiency`.
    #[serde(default = "default_gemm_half_tokens")]
    pub gemm_half_tokens: f64,
    /// Share of the peak prefill attention reaches (0–1].
    #[serde(default = "default_attention_efficiency")]
    pub attention_efficiency: f64,
    /// Memory bandwidth utilization achieved in practice (0–1].
    pub mbu: f64,
    /// Fixed cost of one engine step (scheduling, kernel launches), milliseconds.
    pub step_overhead_ms: f64,
    /// Cost of each sequence in a step (scheduling, input preparation,
    /// sampling), microseconds.
    #[serde(default = "default_per_seq_overhead_us")]
    pub per_seq_overhead_us: f64,
    /// Board power limit, W: what a compute-bound step draws
    /// ([`crate::power`]).
    #[serde(default = "default_tdp_w")]
    pub tdp_w: f64,
    /// Power drawn with the model loaded and nothing running, W.
    #[serde(default = "default_idle_w")]
    pub idle_w: f64,
}

fn default_tdp_w() -> f64 {
    700.0
}

fn default_idle_w() -> f64 {
    75.0
}

fn default_gemm_half_tokens() -> f64 {
    GEMM_HALF_TOKENS
}

fn default_attention_efficiency() -> f64 {
    ATTENTION_EFFICIENCY
}

fn default_per_seq_overhead_us() -> f64 {
    PER_SEQ_OVERHEAD_US
}

impl HardwareProfile {
    /// Device memory in bytes.
    pub fn memory_bytes(&self) -> f64 {
        self.memory_gib * GIB
    }
}

#[allow(clippy::too_many_arguments)]
fn model(
    name: &str,
    served_name: &str,
    params: f64,
    layers: u32,
    hidden_size: u32,
    attention_heads: u32,
    kv_heads: u32,
    head_dim: u32,
    max_model_len: usize,
) -> ModelProfile {
    ModelProfile {
        name: name.into(),
        served_name: served_name.into(),
        params,
        layers,
        hidden_size,
        attention_heads,
        kv_heads,
        head_dim,
        bytes_per_param: 2.0,
        max_model_len,
    }
}

/// All built-in model profiles (bf16 weights and KV cache).
pub fn builtin_models() -> Vec<ModelProfile> {
    vec![
        model(
            "llama-3.1-8b",
            "meta-llama/Llama-3.1-8B-Instruct",
            8.03e9,
            32,
            4096,
            32,
            8,
            128,
            131_072,
        ),
        model(
            "llama-3.1-70b",
            "meta-llama/Llama-3.1-70B-Instruct",
            70.6e9,
            80,
            8192,
            64,
            8,
            128,
            131_072,
        ),
        model(
            "llama-3.2-1b",
            "meta-llama/Llama-3.2-1B-Instruct",
            1.24e9,
            16,
            2048,
            32,
            8,
            64,
            131_072,
        ),
    ]
}

#[allow(clippy::too_many_arguments)]
fn hardware(
    name: &str,
    memory_gib: f64,
    peak_tflops: f64,
    bandwidth_gbps: f64,
    interconnect_gbps: f64,
    mfu: f64,
    mbu: f64,
    step_overhead_ms: f64,
    (tdp_w, idle_w): (f64, f64),
) -> HardwareProfile {
    HardwareProfile {
        name: name.into(),
        memory_gib,
        peak_tflops,
        bandwidth_gbps,
        interconnect_gbps,
        allreduce_latency_us: 8.0,
        gemm_efficiency: mfu,
        gemm_half_tokens: GEMM_HALF_TOKENS,
        attention_efficiency: ATTENTION_EFFICIENCY,
        mbu,
        step_overhead_ms,
        per_seq_overhead_us: PER_SEQ_OVERHEAD_US,
        tdp_w,
        idle_w,
    }
}

/// Calibrated efficiencies shared by every built-in part (see the README's
/// Calibration section for the measurements, the sources and the resulting
/// differences). Each is fixed by the measurement that isolates it, in this
/// order:
///
/// - `MBU` (0.80): the decode step times of Llama-3.1-8B on an H100 summed
///   from measured vLLM 0.19 kernels (NVIDIA AIConfigurator's database,
///   GEMMs and attention only): 6.1 ms at batch 1 and 1k context, 7.8 and
///   12.5 ms at batch 32 and 128. Reading the 16 GB of weights and the
///   contexts' KV cache at 0.80 of the 3.35 TB/s gives 6.0, 7.6 and 12.4 ms
///   (at 2k context 9.2 and 18.8 ms against 9.1 and 18.0).
/// - `GEMM_EFFICIENCY` (0.90), `GEMM_HALF_TOKENS` (64) and
///   `ATTENTION_EFFICIENCY` (0.33): the same database's batch-1 prefills,
///   19.3, 80.4 and 185 ms at 1k, 4k and 8k prompt tokens (GEMMs, flash
///   attention and the LM head; norms, rope and sampling left out). Fitting
///   `token × (n + half) + pair × n²/2` to the three points gives a GEMM
///   time of 15.9 µs a token, a half-efficiency point near 140 tokens and
///   1.58 ps a query–key pair, i.e. flash attention at 0.34 of the dense
///   peak. The simulator's GEMM FLOPs are 2 × all parameters a token,
///   embedding table and LM head included (a prefill runs the LM head on its
///   last token only), so its efficiency is relative to that count: 0.90 of
///   it is 0.78 of the peak on the GEMMs that really run. 0.90 and 0.33 sit
///   a little below the fit on purpose, so that with the step overhead the
///   simulated TTFT lands 10–14 % above these lower bounds at all three
///   lengths, which is about what the left-out kernels and the scheduler
///   cost; 64 tokens (not the fitted ~140) keeps a 1k prefill from being
///   penalized twice, since the step overhead already lifts it.
/// - `STEP_OVERHEAD_MS` (1.5) and `PER_SEQ_OVERHEAD_US` (45): the CPU time
///   the GPU waits for each step, fixed and per sequence (scheduling, input
///   preparation, sampler bookkeeping, detokenizing and streaming each new
///   token). vLLM's nightly latency test (batch 8, 32 in / 128 out) spends
///   7.79 ms a token on an H100 where reading the weights takes 5.99 ms:
///   1.8 ms a step at 8 sequences, which `1.5 + 8 × 0.045` matches. The
///   per-sequence part shows only when a step holds hundreds of sequences:
///   in Lambda's saturated ShareGPT run (vLLM v0.6.0, 256 sequences a step)
///   the GPU terms alone would give ~16,500 tokens/s against the measured
///   8,088, i.e. ~16 ms of CPU a 256-sequence step, ~57 µs a sequence, even
///   with multi-step scheduling (independent profiles of vLLM find its
///   scheduling and tensor pre- and post-processing can take more than half
///   of the time). 45 µs is taken, below that, because the same cost also
///   lands on every step at high concurrency, where TensorRT-LLM's measured
///   TPOT (a C++ runtime with almost none of it) bounds it: at 57 µs vLLM
///   would be 1.4× TensorRT-LLM at concurrency 128, at 45 µs 1.3×. The
///   ShareGPT row then sits 11 % high, the part this model leaves to the
///   old engine's scheduling without chunked prefill.
const GEMM_EFFICIENCY: f64 = 0.90;
const GEMM_HALF_TOKENS: f64 = 64.0;
const ATTENTION_EFFICIENCY: f64 = 0.33;
const MBU: f64 = 0.80;
const STEP_OVERHEAD_MS: f64 = 1.5;
const PER_SEQ_OVERHEAD_US: f64 = 45.0;

/// All built-in hardware profiles. Peak figures are the vendors' dense bf16
/// and memory-bandwidth specifications; memory is what `nvidia-smi` reports.
/// The efficiencies are calibrated on the H100 (see the constants above;
/// the H200 and A100 rows are checks) and carried over to the other parts.
pub fn builtin_hardware() -> Vec<HardwareProfile> {
    let (f, b, o) = (GEMM_EFFICIENCY, MBU, STEP_OVERHEAD_MS);
    vec![
        // Board power limits from the data sheets (SXM parts); idle with a
        // model loaded is an assumption of about a tenth to a fifth of it.
        hardware(
            "h100-sxm",
            79.6,
            989.0,
            3350.0,
            450.0,
            f,
            b,
            o,
            (700.0, 75.0),
        ),
        hardware("h200", 140.4, 989.0, 4800.0, 450.0, f, b, o, (700.0, 80.0)),
        hardware(
            "a100-80gb",
            80.0,
            312.0,
            2039.0,
            300.0,
            f,
            b,
            o,
            (400.0, 55.0),
        ),
        hardware("l4", 22.5, 121.0, 300.0, 32.0, f, b, o, (72.0, 16.0)),
    ]
}

fn names<T>(items: &[T], name: impl Fn(&T) -> &str) -> String {
    items.iter().map(name).collect::<Vec<_>>().join(", ")
}

/// Look a model preset up by key (case-insensitive) or by its served name.
pub fn model_by_name(name: &str) -> Result<ModelProfile, SimError> {
    let all = builtin_models();
    all.iter()
        .find(|m| m.name.eq_ignore_ascii_case(name) || m.served_name.eq_ignore_ascii_case(name))
        .cloned()
        .ok_or_else(|| SimError::UnknownModel {
            name: name.into(),
            valid: names(&all, |m| &m.name),
        })
}

/// Look a hardware preset up by key (case-insensitive; `h100` means `h100-sxm`,
/// `a100` means `a100-80gb`).
pub fn hardware_by_name(name: &str) -> Result<HardwareProfile, SimError> {
    let all = builtin_hardware();
    let key = match name.to_ascii_lowercase().as_str() {
        "h100" => "h100-sxm".to_string(),
        "a100" => "a100-80gb".to_string(),
        other => other.to_string(),
    };
    all.iter()
        .find(|h| h.name == key)
        .cloned()
        .ok_or_else(|| SimError::UnknownHardware {
            name: name.into(),
            valid: names(&all, |h| &h.name),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn llama_8b_kv_bytes_per_token_is_128_kib() {
        let m = model_by_name("llama-3.1-8b").unwrap();
        assert_eq!(m.kv_bytes_per_token(), 131_072.0);
        assert!((m.weight_bytes() - 16.06e9).abs() < 1e7);
    }

    #[test]
    fn lookups_accept_aliases_and_list_valid_names() {
        assert_eq!(hardware_by_name("H100").unwrap().name, "h100-sxm");
        assert_eq!(
            model_by_name("meta-llama/Llama-3.1-70B-Instruct")
                .unwrap()
                .name,
            "llama-3.1-70b"
        );
        let err = hardware_by_name("tpu").unwrap_err().to_string();
        assert!(err.contains("h100-sxm") && err.contains("l4"), "{err}");
        let err = model_by_name("gpt-5").unwrap_err().to_string();
        assert!(err.contains("llama-3.1-8b"), "{err}");
    }
}
