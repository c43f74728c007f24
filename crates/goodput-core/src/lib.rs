//! goodput-core: the engine of goodput, with no terminal I/O.
//!
//! Data flows one way: [`workload`] (a [`workload::RequestSource`] of
//! [`protocol`] requests) → [`schedule`] (intended send times) → [`executor`]
//! (one engine for every load shape) over a [`transport::Transport`] (the
//! HTTP/1.1 [`client`]) → [`record`] (raw timestamps) → [`aggregate`] →
//! [`metrics`] (every derived figure, in one place; [`metrics::registry`]
//! names each metric once) → [`result`] (what a run produced; it
//! round-trips through JSON) → [`report`] (pure exporters).
//!
//! [`target`] prepares a target once (client, model, probe, tokenizer) and
//! runs any number of plans against it, as a sweep does.
pub mod aggregate;
mod background;
pub mod client;
pub mod clock;
pub mod config;
pub mod cost;
pub mod executor;
#[cfg(any(test, feature = "fuzz"))]
pub mod fuzz;
pub mod knee;
pub mod live;
pub mod metrics;
pub mod protocol;
pub mod quality;
pub mod record;
pub mod repeat;
pub mod report;
pub mod result;
pub mod schedule;
pub mod search;
pub mod server_metrics;
pub mod shard;
pub mod slo;
pub mod stats;
pub mod sweep;
pub mod target;
pub mod timer;
pub mod tools;
pub mod transport;
pub mod traps;
pub mod verdict;
pub mod workload;

pub use goodput_common::{tokenizer, units, words};

/// Serde for `Duration` as fractional seconds.
pub mod serde_secs {
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
