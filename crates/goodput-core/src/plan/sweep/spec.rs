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
    Auto,
    Rates(Vec<f64>),
    Concurrencies(Vec<usize>),
    /// The highest rate meeting the SLO, to a relative precision.
    Search {
        precision: f64,
    },
}

/// A whole sweep.
#[derive(Debug, Clone)]
pub struct SweepSpec {
    pub mode: SweepMode,
    /// Workload, bounds per point, percentiles, SLO, cost; its load is ignored.
    pub base: RunSpec,
    pub warmup: WarmupPolicy,
    pub arrival: Arrival,
    pub max_concurrency: Option<usize>,
    /// The longest any point may take (its sending window; the drain is
    /// bounded by half of it).
    pub point_time: Duration,
    /// Sending window of the floor run and the capacity probe's points.
    pub probe_time: Duration,
    pub max_time: Option<Duration>,
    /// Load time a goodput search may spend after its floor run; None:
    /// sized to what a settled answer takes (`crate::plan::search::Sizing`).
    pub search_time: Option<Duration>,
    /// Least sending window of a search's measuring point.
    pub measure_time: Duration,
}
