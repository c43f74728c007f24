//! The measure wing: from records to figures, intervals and verdicts.
//!
//! A [`Collector`] folds records as they arrive into the run's
//! [`RunMetrics`] (every figure [`Metric`] names, each with a
//! [`Distribution`] and its intervals); an [`Slo`] judges them into a
//! [`Verdict`]; [`LiveMetrics`] exposes them while the run lasts;
//! [`ScrapeOptions`] reads the server's own.

pub(crate) mod aggregate;
pub(crate) mod cost;
pub(crate) mod exposition;
pub(crate) mod gpu;
pub(crate) mod live;
pub(crate) mod metrics;
pub(crate) mod quality;
pub(crate) mod server_metrics;
pub(crate) mod slo;
pub(crate) mod stats;
pub(crate) mod traps;
pub(crate) mod verdict;

pub use self::aggregate::RecordsSink;
pub use self::cost::CostSpec;
pub use self::exposition::Exposition;
pub use self::gpu::{GpuId, GpuMetrics, GpuSample, GpuScraper, GpuSummary, GpuWindow};
pub use self::live::{LiveMetrics, CONTENT_TYPE as LIVE_CONTENT_TYPE};
pub use self::metrics::control_variate::ControlSpec;
pub use self::metrics::registry::Metric;
pub use self::metrics::{
    Collector, EarlyStop, RequestMetrics, RunMetrics, TokenSource, CROWDING_LIMIT,
};
pub use self::server_metrics::scrape::{check_url, ScrapeOptions};
pub use self::slo::{
    any_terms, parse_terms, request_terms, AnyTerm, Slo, SloTerm, TaskTerm, Threshold,
};
pub use self::stats::{
    pct_label, percentile_of, t_975, Distribution, Estimate, Level, QUANTILE_COUNT,
};
pub use self::verdict::Verdict;

/// Batch means: the spread of a mean over a run's dependent requests.
pub mod batch {
    pub use crate::measure::stats::batch::{spread, Spread};
}
