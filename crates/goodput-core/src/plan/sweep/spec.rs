//! What a sweep is asked to run: its mode (which points) and its bounds.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::load::executor::WarmupPolicy;
use crate::load::schedule::Arrival;
use crate::plan::target::RunSpec;

/// Which points to run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SweepMode {
    /// A concurrency-1 floor, a capacity probe, then open-loop rates from
    /// 15 % to 120 % of the capacity found.
    Auto,
    /// Open-loop rates, req/s, run in order (`--rates`).
    Rates(Vec<f64>),
    /// Closed-loop concurrencies, run in order (`--concurrencies`).
    Concurrencies(Vec<usize>),
    /// The highest rate meeting the SLO, to a relative precision.
    Search {
        /// The search stops once its interval's half-width is within this
        /// share of the estimate (`--precision`, strictly between 0 and 1).
        precision: f64,
    },
    /// Closed-loop points for the deployment frontier (`--frontier`): the
    /// given concurrencies, or doubling from 1 until output throughput is
    /// flat, then at least 7 points (MLPerf Endpoints' plan).
    Frontier {
        /// The concurrencies to run (`--concurrencies`); empty: planned.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        concurrencies: Vec<usize>,
        /// The highest concurrency the plan may run (`--frontier-max`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_concurrency: Option<usize>,
    },
}

impl SweepMode {
    /// The frontier's points: `concurrencies`, or planned up to `max`.
    pub fn frontier(concurrencies: &[usize], max: Option<usize>) -> SweepMode {
        SweepMode::Frontier {
            concurrencies: concurrencies.to_vec(),
            max_concurrency: max,
        }
    }
}

/// A whole sweep.
#[derive(Debug, Clone)]
pub struct SweepSpec {
    /// Which points to run.
    pub mode: SweepMode,
    /// Workload, bounds per point, percentiles, SLO, cost; its load is ignored.
    pub base: RunSpec,
    /// Each point's warm-up (`--warmup`), resolved for its load; the
    /// capacity probe's points skip it.
    pub warmup: WarmupPolicy,
    /// Inter-arrival process of open-loop points (`--arrival`).
    pub arrival: Arrival,
    /// Cap on requests in flight at open-loop points (`--max-concurrency`).
    pub max_concurrency: Option<usize>,
    /// The longest a grid point may take (its sending window; the drain is
    /// bounded by half of it). A search's points may run longer
    /// (`search_windows`: at least a few of the floor's answers, and
    /// measuring points at least `measure_time`).
    pub point_time: Duration,
    /// Sending window of the floor run and the capacity probe's points.
    pub probe_time: Duration,
    /// Bound on the whole sweep (`--max-time`); None: unbounded.
    pub max_time: Option<Duration>,
    /// Load time a goodput search may spend after its floor run; None:
    /// sized to what a settled answer takes (`crate::plan::search::Sizing`).
    pub search_time: Option<Duration>,
    /// Least sending window of a search's measuring point.
    pub measure_time: Duration,
}
