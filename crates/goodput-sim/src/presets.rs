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
    }
}

/// Calibrated efficiencies shared by every built-in part (see the README's
/// Calibration section for the measurements and the resulting differences).
///
/// - `STEP_OVERHEAD_MS` comes from vLLM's nightly latency test of
///   Llama-3.1-8B (batch 8, 32 in / 128 out), a weight-bound decode: 7.79 ms
///   a token on an H100 and 6.52 ms on an H200. Reading the 16 GB of weights
///   at `MBU` (0.80, unchanged) takes 5.99 ms and 4.18 ms, leaving 1.8 ms
///   and 2.3 ms of fixed cost a step (scheduling, launches, sampling); 2 ms
///   splits the two. A lower MBU would not fit better: it widens the
///   predicted H100–H200 gap (1.45 ms even at MBU 1), which is already
///   wider than the measured 1.28 ms.
/// - `MFU` comes from saturated serving (Lambda's vLLM v0.6.0 run on one
///   H100: 8,088 output tokens/s on ShareGPT, 256 sequences a step). At that
///   batch the compute term decides a decode step, and the measurement
///   implies vLLM gets about a third of the dense bf16 peak end to end
///   (GEMMs, attention, sampling, scheduling): 0.35 puts the simulator 15 %
///   above it, the 0.55 used before put it 60 % above.
const MFU: f64 = 0.85;
const MBU: f64 = 0.80;
const STEP_OVERHEAD_MS: f64 = 2.0;
const GEMM_HALF_TOKENS: f64 = 64.0;
const ATTENTION_EFFICIENCY: f64 = 0.5;
const PER_SEQ_OVERHEAD_US: f64 = 30.0;

/// All built-in hardware profiles. Peak figures are the vendors' dense bf16
/// and memory-bandwidth specifications; memory is what `nvidia-smi` reports.
/// The efficiencies are calibrated on the H100 and H200 (see the constants
/// above) and carried over to the other parts.
pub fn builtin_hardware() -> Vec<HardwareProfile> {
    let (f, b, o) = (MFU, MBU, STEP_OVERHEAD_MS);
    vec![
        hardware("h100-sxm", 79.6, 989.0, 3350.0, 450.0, f, b, o),
        hardware("h200", 140.4, 989.0, 4800.0, 450.0, f, b, o),
        hardware("a100-80gb", 80.0, 312.0, 2039.0, 300.0, f, b, o),
        hardware("l4", 22.5, 121.0, 300.0, 32.0, f, b, o),
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
