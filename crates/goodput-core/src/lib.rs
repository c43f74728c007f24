//! goodput-core: the engine of goodput, with no terminal I/O.
//!
//! Five wings, and data flows one way through them. Each wing's page lists
//! what it offers; nothing else in it is public.
//!
//! - [`load`]: a [`WorkloadSpec`](load::WorkloadSpec) of requests, a
//!   [`Schedule`](load::Schedule) of intended send times, and the one
//!   executor every load shape runs on ([`RunPlan`](load::RunPlan));
//! - [`request`]: each request ([`RequestParams`](request::RequestParams))
//!   sent by the HTTP/1.1 [`Client`](request::Client) and kept as a
//!   [`RequestRecord`](request::RequestRecord) of raw timestamps;
//! - [`measure`]: records folded into every derived figure
//!   ([`RunMetrics`](measure::RunMetrics); [`Metric`](measure::Metric) names
//!   each one once), with intervals ([`Distribution`](measure::Distribution))
//!   and verdicts ([`Slo`](measure::Slo));
//! - [`output`]: the [`RunResult`](output::RunResult) of a run (it
//!   round-trips through JSON) and the pure exporters
//!   ([`Console`](output::Console), [`Json`](output::Json),
//!   [`Csv`](output::Csv), [`Html`](output::Html), [`output::compare`]);
//! - [`plan`]: many runs against one
//!   [`PreparedTarget`](plan::PreparedTarget): a [`sweep`](plan::sweep()), a
//!   [`Search`](plan::Search), repeats, shards.

#![deny(missing_docs)]

#[cfg(any(test, feature = "fuzz"))]
pub mod fuzz;
pub mod load;
pub mod measure;
pub mod output;
pub mod plan;
pub mod request;

pub use goodput_common::{tokenizer, units, words};

/// Serde for `Duration` as fractional seconds.
pub(crate) mod serde_secs {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let secs = f64::deserialize(d)?;
        Duration::try_from_secs_f64(secs).map_err(serde::de::Error::custom)
    }

    /// The same for `Option<Duration>` (null when absent).
    pub mod option {
        use super::*;

        pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
            match d {
                Some(d) => s.serialize_some(&d.as_secs_f64()),
                None => s.serialize_none(),
            }
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
            Option::<f64>::deserialize(d)?
                .map(|secs| Duration::try_from_secs_f64(secs).map_err(serde::de::Error::custom))
                .transpose()
        }
    }
}
