//! Cost and energy of a run (`docs/metrics.md#cost-and-energy`): what the
//! deployment under test costs per request, per million output tokens and per
//! million *good* output tokens (within the SLO), and how many output tokens
//! it produces per joule, from `--cost-per-hour`, the GPUs' measured energy
//! (else `--power-watts`) and the run's duration; what that energy costs at
//! `--energy-price` per kWh. `--gpus` normalises throughput per GPU.

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
    /// What a kWh costs (`--energy-price`), for the energy's cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_price_per_kwh: Option<f64>,
}

/// Where a run's energy came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CostEnergy {
    /// The GPUs' energy over the measured window.
    Measured,
    /// `--power-watts` × the run's duration: an assumption.
    PowerWatts,
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
    /// The energy the tokens per joule and the energy cost read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_from: Option<CostEnergy>,
    /// The run's energy at `--energy-price`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_cost: Option<f64>,
    /// `energy_cost` over the output tokens / 10⁶.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_cost_per_million_output_tokens: Option<f64>,
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
        let (energy, energy_from) = match (energy_j, spec.power_watts) {
            (Some(e), _) => (Some(e), Some(CostEnergy::Measured)),
            (None, Some(w)) => (Some(w * m.duration_s), Some(CostEnergy::PowerWatts)),
            (None, None) => (None, None),
        };
        let energy = energy.filter(|e| *e > 0.0);
        let energy_cost = energy
            .zip(spec.energy_price_per_kwh)
            .map(|(j, p)| j / 3.6e6 * p);
        let output_tokens = m.total_output_tokens as f64;
        Cost {
            spec,
            per_request: per(m.completed as f64),
            per_million_output_tokens: per(m.total_output_tokens as f64 / 1e6),
            per_million_good_output_tokens: good_tokens.and_then(|g| per(g / 1e6)),
            per_session: sessions_completed.and_then(|n| per(n as f64)),
            output_tokens_per_joule: energy.map(|e| output_tokens / e),
            output_throughput_per_gpu: m.throughput.output.value / f64::from(spec.gpus.max(1)),
            energy_from: energy.and(energy_from),
            energy_cost,
            energy_cost_per_million_output_tokens: energy_cost
                .filter(|_| output_tokens > 0.0)
                .map(|c| c / (output_tokens / 1e6)),
        }
    }
}
