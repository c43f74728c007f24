//! The simulator's configuration: [`SimConfig`] (what the library takes),
//! [`SimArgs`] (the command-line flags of `goodput sim`, also written as a
//! `--sim` spec: [`spec`]) and the TOML file format for custom setups.
//!
//! Precedence: built-in defaults, then the `--config` file, then flags.

use std::path::{Path, PathBuf};

use rand::SeedableRng;
use serde::Deserialize;

use crate::engine::{Engine, EngineLimits, LoraLimits, SchedulingPolicy};
use crate::error::SimError;
use crate::faults::{FaultConfig, FaultSpec};
use crate::kv::BLOCK_SIZE;
use crate::presets::{hardware_by_name, model_by_name, HardwareProfile, ModelProfile};
use crate::priority::PriorityRequest;
use crate::roofline::{Roofline, StepModel};
use goodput_common::units::parse_duration;
use goodput_common::LengthSpec;

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// Distribution of output lengths when a request does not set `ignore_eos`
/// (the drawn length is capped by `max_tokens` and raised to `min_tokens`):
/// the shared length grammar ([`LengthSpec`]), sampled per request.
pub type OutputLenDist = LengthSpec;

/// The default output-length distribution: lognormal, median 200, sigma 0.8.
pub const DEFAULT_OUTPUT_LEN: LengthSpec = LengthSpec::LogNormal {
    median: 200.0,
    sigma: 0.8,
};

/// Draw the output length (at least 1) of the request with 0-based `index`:
/// a generator of its own per request, so a request's length does not depend
/// on how many came before it or in which order they arrived.
pub fn sample_output_len(dist: &LengthSpec, seed: u64, index: u64) -> usize {
    let mut rng = rand::rngs::StdRng::seed_from_u64(
        seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ index.wrapping_add(0x5151),
    );
    dist.sample(&mut rng) as usize
}

/// Everything that defines a simulator (serialized whole into a simulated
/// run's results, so the file says what answered).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SimConfig {
    /// The model served: its shape, weights and context limit.
    pub model: ModelProfile,
    /// The accelerator each tensor-parallel rank runs on.
    pub hardware: HardwareProfile,
    /// GPUs the model is split across.
    pub tensor_parallel: u32,
    /// Name on `/v1/models` (default: the model profile's served name).
    pub served_model_name: Option<String>,
    /// Most sequences in one step (vLLM's `--max-num-seqs`).
    pub max_num_seqs: usize,
    /// Token budget of one step (vLLM's `--max-num-batched-tokens`); longer
    /// prompts prefill in chunks.
    pub max_num_batched_tokens: usize,
    /// Longest prompt + output (default: the model's limit, capped by the KV cache).
    pub max_model_len: Option<usize>,
    /// Share of device memory the engine may use (vLLM's `--gpu-memory-utilization`).
    pub gpu_memory_utilization: f64,
    /// Use exactly this many KV-cache blocks instead of the computed capacity.
    pub num_gpu_blocks_override: Option<usize>,
    /// Reuse cached KV blocks of a shared prompt prefix (vLLM's `--enable-prefix-caching`).
    pub enable_prefix_caching: bool,
    /// Seed of output lengths, output words and fault draws.
    pub seed: u64,
    /// Output lengths of requests without `ignore_eos`.
    pub output_len: OutputLenDist,
    /// Multiplies every step time (0.1 runs ten times faster than the modelled hardware).
    pub time_scale: f64,
    /// Injected faults (`--fault-*`).
    pub faults: FaultConfig,
    /// Worker threads of the HTTP server's own runtime.
    pub server_threads: usize,
    /// Scheduling priority the engine thread asks for ([`crate::priority`]).
    pub engine_priority: PriorityRequest,
    /// Step-time coefficients that replace the ones the model and hardware
    /// give (a calibrated profile's `[step]` table).
    pub step: Option<StepModel>,
    /// Time between a request's arrival and its admission to the engine's
    /// queue (HTTP, tokenization), ms: a calibrated profile's measured
    /// server-side latency.
    pub request_latency_ms: f64,
    /// Side of a vision patch, pixels: an image of W×H costs
    /// ceil(W/2p)·ceil(H/2p) + 2 prompt tokens (Qwen2-VL's 14-px patches
    /// merged 2×2, plus its start and end tokens).
    pub image_patch_px: u32,
    /// Dimension of the embedding vectors `/v1/embeddings` answers with.
    pub embedding_dim: usize,
    /// How the engine orders waiting requests (vLLM's `--scheduling-policy`).
    pub scheduling_policy: SchedulingPolicy,
    /// LoRA adapters served beside the base model ([`LoraConfig`]).
    pub lora: LoraConfig,
    /// Speculative decoding ([`crate::engine::SpecDecode`]); off by default.
    pub spec: crate::engine::SpecDecode,
}

/// LoRA adapters, as vLLM's `--lora-modules`, `--max-loras` and
/// `--max-cpu-loras` set them (the engine's rules: [`crate::engine`]'s
/// `mixes` module).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct LoraConfig {
    /// Adapter names served (listed on `/v1/models`, addressed by `model`).
    pub modules: Vec<String>,
    /// Most distinct adapters in one batch [default: 1, as vLLM's].
    pub max_loras: Option<usize>,
    /// Adapters kept loaded [default: `max_loras`].
    pub max_cpu_loras: Option<usize>,
    /// Time a step spends loading an adapter that is not loaded, ms [default: 0].
    pub load_ms: f64,
}

impl Default for SimConfig {
    /// Llama-3.1-8B on one H100-SXM, vLLM's default limits, no faults, seed 0.
    fn default() -> Self {
        SimConfig {
            model: builtin("llama-3.1-8b", model_by_name),
            hardware: builtin("h100-sxm", hardware_by_name),
            tensor_parallel: 1,
            served_model_name: None,
            max_num_seqs: 256,
            max_num_batched_tokens: 8192,
            max_model_len: None,
            gpu_memory_utilization: 0.9,
            num_gpu_blocks_override: None,
            enable_prefix_caching: true,
            seed: 0,
            output_len: DEFAULT_OUTPUT_LEN,
            time_scale: 1.0,
            faults: FaultConfig::default(),
            server_threads: 1,
            engine_priority: PriorityRequest::Auto,
            step: None,
            request_latency_ms: 0.0,
            scheduling_policy: SchedulingPolicy::Fcfs,
            lora: LoraConfig::default(),
            spec: crate::engine::SpecDecode::default(),
            image_patch_px: 14,
            embedding_dim: 384,
        }
    }
}

fn builtin<T>(name: &str, find: fn(&str) -> Result<T, SimError>) -> T {
    match find(name) {
        Ok(t) => t,
        // The built-in tables always hold the default presets (tested).
        Err(e) => panic!("built-in preset missing: {e}"),
    }
}

impl SimConfig {
    /// The name served on `/v1/models`.
    pub fn model_name(&self) -> &str {
        self.served_model_name
            .as_deref()
            .unwrap_or(&self.model.served_name)
    }

    fn kv_bytes_per_token_per_gpu(&self) -> f64 {
        let tp = f64::from(self.tensor_parallel.max(1));
        let kv_heads_per_gpu = (f64::from(self.model.kv_heads) / tp).ceil().max(1.0);
        self.model.kv_bytes_per_token() / f64::from(self.model.kv_heads) * kv_heads_per_gpu
    }

    /// Memory held back for activations and CUDA graphs, bytes per GPU.
    fn activation_reserve_bytes(&self) -> f64 {
        let tp = f64::from(self.tensor_parallel.max(1));
        GIB + self.max_num_batched_tokens as f64
            * f64::from(self.model.hidden_size)
            * self.model.bytes_per_param
            * 8.0
            / tp
    }

    /// KV-cache blocks: `(memory × gpu_memory_utilization − weights − activation reserve)`
    /// per GPU, divided by a block's bytes per GPU; or the override.
    pub fn num_kv_blocks(&self) -> Result<usize, SimError> {
        if let Some(n) = self.num_gpu_blocks_override {
            return Ok(n);
        }
        let tp = f64::from(self.tensor_parallel.max(1));
        let usable = self.hardware.memory_bytes() * self.gpu_memory_utilization
            - self.activation_reserve_bytes();
        let weights = self.model.weight_bytes() / tp;
        if weights >= usable {
            return Err(SimError::DoesNotFit {
                model: self.model.name.clone(),
                hardware: self.hardware.name.clone(),
                tensor_parallel: self.tensor_parallel,
                weights_gib: weights / GIB,
                usable_gib: usable / GIB,
            });
        }
        let per_block = self.kv_bytes_per_token_per_gpu() * BLOCK_SIZE as f64;
        Ok(((usable - weights) / per_block).floor() as usize)
    }

    /// The context limit in force.
    pub fn effective_max_model_len(&self) -> Result<usize, SimError> {
        let capacity = self.num_kv_blocks()? * BLOCK_SIZE;
        match self.max_model_len {
            Some(n) => Ok(n),
            None => Ok(self.model.max_model_len.min(capacity)),
        }
    }

    /// Check every field; the message names the field and what is valid.
    pub fn validate(&self) -> Result<(), SimError> {
        self.spec.validate()?;
        let tp = self.tensor_parallel;
        if tp == 0 || !self.model.attention_heads.is_multiple_of(tp) {
            return Err(SimError::invalid(
                "tensor_parallel",
                format!(
                    "{tp} must be at least 1 and divide the {} attention heads of {}",
                    self.model.attention_heads, self.model.name
                ),
            ));
        }
        if self.max_num_seqs == 0 {
            return Err(SimError::invalid("max_num_seqs", "must be at least 1"));
        }
        if self.max_num_batched_tokens == 0 {
            return Err(SimError::invalid(
                "max_num_batched_tokens",
                "must be at least 1",
            ));
        }
        let unit = |field: &str, v: f64| {
            if v > 0.0 && v <= 1.0 {
                Ok(())
            } else {
                Err(SimError::invalid(field, format!("{v} must be in (0, 1]")))
            }
        };
        unit("gpu_memory_utilization", self.gpu_memory_utilization)?;
        unit("hardware.gemm_efficiency", self.hardware.gemm_efficiency)?;
        unit(
            "hardware.attention_efficiency",
            self.hardware.attention_efficiency,
        )?;
        unit("hardware.mbu", self.hardware.mbu)?;
        for (field, v) in [
            ("time_scale", self.time_scale),
            ("hardware.peak_tflops", self.hardware.peak_tflops),
            ("hardware.bandwidth_gbps", self.hardware.bandwidth_gbps),
            (
                "hardware.interconnect_gbps",
                self.hardware.interconnect_gbps,
            ),
            ("hardware.memory_gib", self.hardware.memory_gib),
            (
                "hardware.gemm_half_tokens",
                self.hardware.gemm_half_tokens + 1.0,
            ),
            ("model.params", self.model.params),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(SimError::invalid(
                    field,
                    format!("{v} must be a positive number"),
                ));
            }
        }
        if let Some(step) = &self.step {
            for (field, v) in step.fields() {
                if !(v.is_finite() && v >= 0.0) {
                    return Err(SimError::invalid(
                        format!("step.{field}"),
                        format!("{v} must be a number >= 0"),
                    ));
                }
            }
        }
        self.validate_inputs()?;
        if !(self.request_latency_ms.is_finite() && self.request_latency_ms >= 0.0) {
            return Err(SimError::invalid(
                "request_latency_ms",
                format!("{} must be a number >= 0", self.request_latency_ms),
            ));
        }
        self.validate_lora()?;
        if self.server_threads == 0 {
            return Err(SimError::invalid("server_threads", "must be at least 1"));
        }
        self.faults.validate()?;
        let blocks = self.num_kv_blocks()?;
        if blocks == 0 {
            return Err(SimError::invalid(
                "num_gpu_blocks",
                "the KV cache has no room for a single block; use more memory or fewer/longer GPUs",
            ));
        }
        if let Some(n) = self.max_model_len {
            if n == 0 || n > blocks * BLOCK_SIZE {
                return Err(SimError::invalid(
                    "max_model_len",
                    format!(
                        "{n} must be between 1 and the KV-cache capacity of {} tokens",
                        blocks * BLOCK_SIZE
                    ),
                ));
            }
        }
        Ok(())
    }

    fn validate_lora(&self) -> Result<(), SimError> {
        let l = &self.lora;
        if !(l.load_ms.is_finite() && l.load_ms >= 0.0) {
            return Err(SimError::invalid(
                "lora_load_ms",
                format!("{} must be a number >= 0", l.load_ms),
            ));
        }
        if l.max_loras == Some(0) || l.max_cpu_loras == Some(0) {
            return Err(SimError::invalid(
                "max_loras",
                "max_loras and max_cpu_loras must be at least 1",
            ));
        }
        if let Some(m) = l
            .modules
            .iter()
            .find(|m| m.is_empty() || **m == self.model_name())
        {
            return Err(SimError::invalid(
                "lora_modules",
                format!("'{m}' must be a non-empty name other than the base model's"),
            ));
        }
        Ok(())
    }

    /// The image and embedding settings (`image_patch_px`, `embedding_dim`).
    fn validate_inputs(&self) -> Result<(), SimError> {
        if !(1..=1024).contains(&self.image_patch_px) {
            return Err(SimError::invalid(
                "image_patch_px",
                format!("{} must be 1 to 1024 pixels", self.image_patch_px),
            ));
        }
        if !(1..=65_536).contains(&self.embedding_dim) {
            return Err(SimError::invalid(
                "embedding_dim",
                format!("{} must be 1 to 65536", self.embedding_dim),
            ));
        }
        Ok(())
    }

    /// The LoRA limits the engine enforces; none without adapters.
    fn lora_limits(&self) -> LoraLimits {
        let l = &self.lora;
        if l.modules.is_empty() {
            return LoraLimits::default();
        }
        LoraLimits {
            max_loras: Some(l.max_loras.unwrap_or(1)),
            max_cpu_loras: l.max_cpu_loras,
            load_s: l.load_ms / 1e3 * self.time_scale,
        }
    }

    /// A fresh engine for this configuration.
    pub fn build_engine(&self) -> Result<Engine, SimError> {
        self.validate()?;
        let limits = EngineLimits {
            max_num_seqs: self.max_num_seqs,
            max_num_batched_tokens: self.max_num_batched_tokens,
            max_model_len: self.effective_max_model_len()?,
            num_blocks: self.num_kv_blocks()?,
            enable_prefix_caching: self.enable_prefix_caching,
            scheduling_policy: self.scheduling_policy,
            lora: self.lora_limits(),
            spec: self.spec,
            seed: self.seed,
        };
        Ok(Engine::new(limits, self.roofline()))
    }

    /// The step-time model in force: the `[step]` coefficients when given,
    /// else the model's on the hardware.
    pub fn roofline(&self) -> Roofline {
        match self.step {
            Some(step) => Roofline::from_step(step, self.time_scale),
            None => Roofline::new(
                &self.model,
                &self.hardware,
                self.tensor_parallel,
                self.time_scale,
            ),
        }
    }

    /// Apply a TOML config file (see the README for its fields).
    pub fn apply_file(&mut self, path: &Path) -> Result<(), SimError> {
        let text = std::fs::read_to_string(path).map_err(|source| SimError::ReadConfig {
            path: path.to_path_buf(),
            source,
        })?;
        self.apply_toml(&text, path)
    }

    /// Apply the text of a TOML config file; `path` names it in errors.
    /// [`SimConfig::apply_file`] reads a file through this, and a calibrated
    /// profile ([`crate::calibrate::Profile`]) builds its configuration
    /// through it, so the two cannot disagree.
    pub fn apply_toml(&mut self, text: &str, path: &Path) -> Result<(), SimError> {
        let file: ConfigFile = toml::from_str(text).map_err(|e| SimError::ParseConfig {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        file.apply(self)
    }
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Preset<T> {
    Name(String),
    Custom(T),
}

/// The TOML file: every field optional; `model` and `hardware` are a preset
/// name or a full table.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct ConfigFile {
    model: Option<Preset<ModelProfile>>,
    hardware: Option<Preset<HardwareProfile>>,
    tensor_parallel: Option<u32>,
    served_model_name: Option<String>,
    max_num_seqs: Option<usize>,
    max_num_batched_tokens: Option<usize>,
    max_model_len: Option<usize>,
    gpu_memory_utilization: Option<f64>,
    num_gpu_blocks_override: Option<usize>,
    enable_prefix_caching: Option<bool>,
    seed: Option<u64>,
    output_len_dist: Option<OutputLenDist>,
    time_scale: Option<f64>,
    server_threads: Option<usize>,
    engine_priority: Option<PriorityRequest>,
    faults: Option<FaultConfig>,
    step: Option<StepModel>,
    request_latency_ms: Option<f64>,
    scheduling_policy: Option<SchedulingPolicy>,
    lora_modules: Option<Vec<String>>,
    max_loras: Option<usize>,
    max_cpu_loras: Option<usize>,
    lora_load_ms: Option<f64>,
    spec_tokens: Option<u32>,
    spec_acceptance: Option<f64>,
    image_patch_px: Option<u32>,
    embedding_dim: Option<usize>,
    /// What `goodput calibrate` measured (read by `goodput predict`; the
    /// simulator ignores it).
    calibration: Option<toml::Value>,
}

impl ConfigFile {
    fn apply(self, c: &mut SimConfig) -> Result<(), SimError> {
        match self.model {
            Some(Preset::Name(n)) => c.model = model_by_name(&n)?,
            Some(Preset::Custom(m)) => c.model = m,
            None => {}
        }
        match self.hardware {
            Some(Preset::Name(n)) => c.hardware = hardware_by_name(&n)?,
            Some(Preset::Custom(h)) => c.hardware = h,
            None => {}
        }
        set(&mut c.tensor_parallel, self.tensor_parallel);
        c.served_model_name = self.served_model_name.or(c.served_model_name.take());
        set(&mut c.max_num_seqs, self.max_num_seqs);
        set(&mut c.max_num_batched_tokens, self.max_num_batched_tokens);
        c.max_model_len = self.max_model_len.or(c.max_model_len);
        set(&mut c.gpu_memory_utilization, self.gpu_memory_utilization);
        c.num_gpu_blocks_override = self.num_gpu_blocks_override.or(c.num_gpu_blocks_override);
        set(&mut c.enable_prefix_caching, self.enable_prefix_caching);
        set(&mut c.seed, self.seed);
        set(&mut c.output_len, self.output_len_dist.clone());
        set(&mut c.time_scale, self.time_scale);
        set(&mut c.server_threads, self.server_threads);
        set(&mut c.engine_priority, self.engine_priority);
        set(&mut c.faults, self.faults);
        c.step = self.step.or(c.step);
        set(&mut c.request_latency_ms, self.request_latency_ms);
        set(&mut c.scheduling_policy, self.scheduling_policy);
        set(&mut c.lora.modules, self.lora_modules);
        c.lora.max_loras = self.max_loras.or(c.lora.max_loras);
        c.lora.max_cpu_loras = self.max_cpu_loras.or(c.lora.max_cpu_loras);
        set(&mut c.lora.load_ms, self.lora_load_ms);
        set(&mut c.spec.tokens, self.spec_tokens);
        set(&mut c.spec.acceptance, self.spec_acceptance);
        set(&mut c.image_patch_px, self.image_patch_px);
        set(&mut c.embedding_dim, self.embedding_dim);
        Ok(())
    }
}

fn set<T>(slot: &mut T, value: Option<T>) {
    if let Some(v) = value {
        *slot = v;
    }
}

fn parse_secs(s: &str) -> Result<f64, String> {
    parse_duration(s).map(|d| d.as_secs_f64())
}

/// Command-line flags of the simulator (`goodput sim`).
#[derive(Debug, Clone, clap::Args)]
pub struct SimArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Port to listen on (0 picks a free one).
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// Model profile: llama-3.1-8b (default), llama-3.1-70b or llama-3.2-1b.
    #[arg(long, value_name = "NAME")]
    pub model_profile: Option<String>,
    /// Accelerator: h100-sxm (default), h200, a100-80gb or l4.
    #[arg(long, value_name = "NAME")]
    pub hardware: Option<String>,
    /// GPUs the model is split across with tensor parallelism [default: 1].
    #[arg(long, alias = "tensor-parallel-size", value_name = "N")]
    pub tensor_parallel: Option<u32>,
    /// TOML file with a custom model, hardware or engine settings, or a profile
    /// written by `goodput calibrate`; flags override it.
    #[arg(long, alias = "profile", value_name = "FILE.toml")]
    pub config: Option<PathBuf>,
    /// Model name served on /v1/models [default: the profile's Hugging Face name].
    #[arg(long, value_name = "NAME")]
    pub served_model_name: Option<String>,
    /// Most sequences in one engine step [default: 256].
    #[arg(long, value_name = "N")]
    pub max_num_seqs: Option<usize>,
    /// Token budget of one engine step (decodes plus prefill chunks) [default: 8192].
    #[arg(long, value_name = "TOKENS")]
    pub max_num_batched_tokens: Option<usize>,
    /// Longest prompt plus output, tokens [default: the model's limit, capped by the KV cache].
    #[arg(long, value_name = "TOKENS")]
    pub max_model_len: Option<usize>,
    /// Share of device memory for weights, activations and KV cache, 0-1 [default: 0.9].
    #[arg(long, value_name = "FRACTION")]
    pub gpu_memory_utilization: Option<f64>,
    /// Use exactly this many 16-token KV-cache blocks (to force a small cache).
    #[arg(long, value_name = "BLOCKS")]
    pub num_gpu_blocks_override: Option<usize>,
    /// Disable the prefix cache.
    #[arg(long)]
    pub no_enable_prefix_caching: bool,
    /// Seed of output lengths, output words and fault draws [default: 0].
    #[arg(long, value_name = "S")]
    pub seed: Option<u64>,
    /// Speculative decoding: draft tokens proposed a step for each decoding sequence, 1 to 8
    /// (vLLM's num_speculative_tokens) [default: 0, off].
    #[arg(long, value_name = "K")]
    pub spec_tokens: Option<u32>,
    /// Probability that each draft token is accepted, given the ones before it were, 0-1
    /// [default: 0.7].
    #[arg(long, value_name = "A")]
    pub spec_acceptance: Option<f64>,
    /// Output-length distribution for requests without ignore_eos (capped by max_tokens):
    /// N, uniform:MIN,MAX, normal:MEAN,STD, lognormal:MEDIAN,SIGMA or exponential:MEAN
    /// [default: lognormal:200,0.8].
    #[arg(long, value_name = "DIST")]
    pub output_len_dist: Option<OutputLenDist>,
    /// Multiply every step time by this factor (0.1 = ten times faster than the hardware) [default: 1].
    #[arg(long, value_name = "X")]
    pub time_scale: Option<f64>,
    /// Worker threads of the HTTP server [default: 1].
    #[arg(long, value_name = "N")]
    pub server_threads: Option<usize>,
    /// Engine thread scheduling: auto (real-time SCHED_FIFO if permitted, else
    /// nice -10 and a short time slice where allowed; nothing when started under nice),
    /// realtime (the same, even under nice) or normal [default: auto].
    // The values are named in the help text; listing them again with their
    // own descriptions would switch the whole `sim --help` to clap's long
    // layout, unlike every other command's.
    #[arg(long, value_name = "MODE", hide_possible_values = true)]
    pub engine_priority: Option<PriorityRequest>,
    /// Fault: answer HTTP 500 at this rate (0-1) or schedule (every:N).
    #[arg(long, value_name = "SPEC")]
    pub fault_500: Option<FaultSpec>,
    /// Fault: answer HTTP 503 at this rate (0-1) or schedule (every:N).
    #[arg(long, value_name = "SPEC")]
    pub fault_503: Option<FaultSpec>,
    /// Fault: answer HTTP 429 with Retry-After at this rate (0-1) or schedule (every:N).
    #[arg(long, value_name = "SPEC")]
    pub fault_429: Option<FaultSpec>,
    /// Retry-After of injected 429s, seconds [default: 1].
    #[arg(long, value_name = "SECONDS")]
    pub fault_retry_after: Option<u64>,
    /// Fault: cut the response mid-way (no `[DONE]`, connection reset), rate or every:N.
    #[arg(long, value_name = "SPEC")]
    pub fault_stream_cut: Option<FaultSpec>,
    /// Fault: stall the stream mid-way (no bytes for --fault-stall-duration), rate or every:N.
    #[arg(long, value_name = "SPEC")]
    pub fault_stall: Option<FaultSpec>,
    /// Length of an injected stall, e.g. 2s or 500ms [default: 2s].
    #[arg(long, value_name = "DURATION", value_parser = parse_secs)]
    pub fault_stall_duration: Option<f64>,
    /// Fault: send one malformed (non-JSON) event mid-way, rate or every:N.
    #[arg(long, value_name = "SPEC")]
    pub fault_malformed: Option<FaultSpec>,
    /// Fault: hold the response headers back, rate or every:N.
    #[arg(long, value_name = "SPEC")]
    pub fault_slow_headers: Option<FaultSpec>,
    /// How long injected slow headers are held back, e.g. 2s [default: 2s].
    #[arg(long, value_name = "DURATION", value_parser = parse_secs)]
    pub fault_slow_headers_delay: Option<f64>,
    /// Order of waiting requests: fcfs, or priority (by the request's "priority", lower
    /// first; the worst is preempted first) [default: fcfs].
    #[arg(long, value_name = "POLICY", hide_possible_values = true)]
    pub scheduling_policy: Option<SchedulingPolicy>,
    /// LoRA adapters served beside the base model, by name (comma-separated); a request
    /// names one in "model".
    #[arg(long, value_name = "NAME,...", value_delimiter = ',')]
    pub lora_modules: Option<Vec<String>>,
    /// Most distinct LoRA adapters in one batch [default: 1].
    #[arg(long, value_name = "N")]
    pub max_loras: Option<usize>,
    /// LoRA adapters kept loaded; using another loads it [default: --max-loras].
    #[arg(long, value_name = "N")]
    pub max_cpu_loras: Option<usize>,
    /// Time a step spends loading a LoRA adapter that is not loaded, ms [default: 0].
    #[arg(long, value_name = "MS")]
    pub lora_load_ms: Option<f64>,
    /// Side of a vision patch, pixels: a W×H image costs ceil(W/2P)·ceil(H/2P) + 2 prompt
    /// tokens (Qwen2-VL: 14-px patches merged 2×2) [default: 14].
    #[arg(long, value_name = "P")]
    pub image_patch_px: Option<u32>,
    /// Dimension of the vectors /v1/embeddings answers with [default: 384].
    #[arg(long, value_name = "N")]
    pub embedding_dim: Option<usize>,
    /// Fault: a structured answer (tool call, JSON content) that is not valid JSON, rate or every:N.
    #[arg(long, value_name = "SPEC")]
    pub fault_schema_violation: Option<FaultSpec>,
}

impl Default for SimArgs {
    /// The same as no flags: 127.0.0.1:8000 and the default preset.
    fn default() -> Self {
        SimArgs {
            host: "127.0.0.1".into(),
            port: 8000,
            model_profile: None,
            hardware: None,
            tensor_parallel: None,
            config: None,
            served_model_name: None,
            max_num_seqs: None,
            max_num_batched_tokens: None,
            max_model_len: None,
            gpu_memory_utilization: None,
            num_gpu_blocks_override: None,
            no_enable_prefix_caching: false,
            seed: None,
            spec_tokens: None,
            spec_acceptance: None,
            output_len_dist: None,
            time_scale: None,
            server_threads: None,
            engine_priority: None,
            fault_500: None,
            fault_503: None,
            fault_429: None,
            fault_retry_after: None,
            fault_stream_cut: None,
            fault_stall: None,
            fault_stall_duration: None,
            fault_malformed: None,
            fault_slow_headers: None,
            fault_slow_headers_delay: None,
            scheduling_policy: None,
            lora_modules: None,
            max_loras: None,
            max_cpu_loras: None,
            lora_load_ms: None,
            image_patch_px: None,
            embedding_dim: None,
            fault_schema_violation: None,
        }
    }
}

impl SimArgs {
    /// The address to listen on.
    pub fn listen_addr(&self) -> Result<std::net::SocketAddr, SimError> {
        let host = self.host.trim_start_matches('[').trim_end_matches(']');
        let ip: std::net::IpAddr = if host == "localhost" {
            std::net::Ipv4Addr::LOCALHOST.into()
        } else {
            host.parse().map_err(|_| {
                SimError::invalid("--host", format!("'{}' is not an IP address", self.host))
            })?
        };
        Ok(std::net::SocketAddr::new(ip, self.port))
    }

    /// Build the configuration: defaults, then `--config`, then flags.
    pub fn to_config(&self) -> Result<SimConfig, SimError> {
        let mut c = SimConfig::default();
        if let Some(path) = &self.config {
            c.apply_file(path)?;
        }
        if let Some(n) = &self.model_profile {
            c.model = model_by_name(n)?;
        }
        if let Some(n) = &self.hardware {
            c.hardware = hardware_by_name(n)?;
        }
        set(&mut c.tensor_parallel, self.tensor_parallel);
        if self.served_model_name.is_some() {
            c.served_model_name = self.served_model_name.clone();
        }
        set(&mut c.max_num_seqs, self.max_num_seqs);
        set(&mut c.max_num_batched_tokens, self.max_num_batched_tokens);
        c.max_model_len = self.max_model_len.or(c.max_model_len);
        set(&mut c.gpu_memory_utilization, self.gpu_memory_utilization);
        c.num_gpu_blocks_override = self.num_gpu_blocks_override.or(c.num_gpu_blocks_override);
        if self.no_enable_prefix_caching {
            c.enable_prefix_caching = false;
        }
        set(&mut c.seed, self.seed);
        set(&mut c.output_len, self.output_len_dist.clone());
        set(&mut c.time_scale, self.time_scale);
        set(&mut c.server_threads, self.server_threads);
        set(&mut c.engine_priority, self.engine_priority);
        set(&mut c.spec.tokens, self.spec_tokens);
        set(&mut c.spec.acceptance, self.spec_acceptance);
        let f = &mut c.faults;
        set(&mut f.http_500, self.fault_500);
        set(&mut f.http_503, self.fault_503);
        set(&mut f.http_429, self.fault_429);
        set(&mut f.retry_after_s, self.fault_retry_after);
        set(&mut f.stream_cut, self.fault_stream_cut);
        set(&mut f.stall, self.fault_stall);
        set(&mut f.stall_s, self.fault_stall_duration);
        set(&mut f.malformed, self.fault_malformed);
        set(&mut f.slow_headers, self.fault_slow_headers);
        set(&mut f.slow_headers_s, self.fault_slow_headers_delay);
        set(&mut c.scheduling_policy, self.scheduling_policy);
        set(&mut c.lora.modules, self.lora_modules.clone());
        c.lora.max_loras = self.max_loras.or(c.lora.max_loras);
        c.lora.max_cpu_loras = self.max_cpu_loras.or(c.lora.max_cpu_loras);
        set(&mut c.lora.load_ms, self.lora_load_ms);
        set(&mut c.image_patch_px, self.image_patch_px);
        set(&mut c.embedding_dim, self.embedding_dim);
        set(&mut f.schema_violation, self.fault_schema_violation);
        c.validate()?;
        Ok(c)
    }
}

pub mod spec;

#[cfg(test)]
mod tests;
