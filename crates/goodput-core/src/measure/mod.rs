//! The measure wing: from records to figures, intervals and verdicts.
//!
//! [`aggregate`] folds records as they arrive; [`metrics`] derives every
//! figure ([`metrics::registry`] names each once); [`stats`] gives their
//! intervals; [`slo`] and [`verdict`] judge them; [`live`] exposes them
//! while a run lasts; [`server_metrics`] reads the server's own; [`traps`],
//! [`cost`] and [`quality`] add what a run's numbers alone do not say.

pub mod aggregate;
pub mod cost;
pub mod live;
pub mod metrics;
pub mod quality;
pub mod server_metrics;
pub mod slo;
pub mod stats;
pub mod traps;
pub mod verdict;
