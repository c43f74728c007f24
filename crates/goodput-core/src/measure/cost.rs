//! Cost and energy of a run (`docs/metrics.md#cost-and-energy`): what the
//! deployment under test costs per request, per million output tokens and per
//! million *good* output tokens (within the SLO), and how many output tokens
//! it produces per joule, from `--cost-per-hour`, `--power-watts` and the
//! run's duration. `--gpus` normalises throughput per GPU.

use serde::{Deserialize, Serialize};

use crate::measure::metrics::RunMetrics;

/// What the deployment costs and draws.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CostSpec {
    /// Currency units per hour (the user's currency).
    pub per_hour: Option<f64>,
    /// Power the deployment draws, W (`--power-watts`), for tokens per joule.
    pub power_watts: Option<f64>,
    /// GPUs in the deployment (`--gpus`), for per-GPU throughput.
    pub gpus: u32,
}

/// A run's cost figures; each is `None` where its input is missing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    pub spec: CostSpec,
    pub per_request: Option<f64>,
    pub per_million_output_tokens: Option<f64>,
    /// Only output tokens of requests within the SLO count.
    pub per_million_good_output_tokens: Option<f64>,
    /// Per session completed (multi-turn workloads).
    pub per_session: Option<f64>,
    pub output_tokens_per_joule: Option<f64>,
    pub output_throughput_per_gpu: f64,
}

impl Cost {
    /// `energy_j`: the GPUs' measured energy over the run, which tokens per
    /// joule then read instead of `--power-watts` × the duration.
    pub fn of(
        spec: CostSpec,
        m: &RunMetrics,
        sessions_completed: Option<u64>,
        energy_j: Option<f64>,
    ) -> Cost {
        let hours = m.duration_s / 3600.0;
        let total = spec.per_hour.map(|c| c * hours);
        let per = |n: f64| total.filter(|_| n > 0.0).map(|t| t / n);
        let good_tokens = m.slo.as_ref().map(|s| s.token_goodput * m.duration_s);
        Cost {
            spec,
            per_request: per(m.completed as f64),
            per_million_output_tokens: per(m.total_output_tokens as f64 / 1e6),
            per_million_good_output_tokens: good_tokens.and_then(|g| per(g / 1e6)),
            per_session: sessions_completed.and_then(|n| per(n as f64)),
            output_tokens_per_joule: energy_j
                .or(spec.power_watts.map(|w| w * m.duration_s))
                .filter(|e| *e > 0.0)
                .map(|e| m.total_output_tokens as f64 / e),
            output_throughput_per_gpu: m.throughput.output.value / f64::from(spec.gpus.max(1)),
        }
    }
}
