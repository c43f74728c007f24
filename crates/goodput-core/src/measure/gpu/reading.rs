//! One GPU's identity and readings, as an exporter or NVML gives them.

use serde::{Deserialize, Serialize};

/// One GPU, as the exporter names it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct GpuId {
    /// The `Hostname` label, else the exporter URL's host and port.
    pub node: String,
    /// The `gpu` label (the device index on its node).
    pub gpu: String,
    /// The `UUID` label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// The `modelName` label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// One GPU at one scrape.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct GpuReading {
    pub power_w: Option<f64>,
    pub energy_mj: Option<f64>,
    pub util_pct: Option<f64>,
    pub fb_used_mib: Option<f64>,
    pub sm_clock_mhz: Option<f64>,
}
