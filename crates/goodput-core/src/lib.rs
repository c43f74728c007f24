//! goodput-core: the engine of goodput, with no terminal I/O.
//!
//! Five wings, and data flows one way through them:
//!
//! - [`load`]: a [`load::workload`] of requests, a [`load::schedule`] of
//!   intended send times, and the one [`load::executor`] for every load
//!   shape;
//! - [`request`]: each request built by [`request::protocol`], sent by the
//!   HTTP/1.1 [`request::client`] and kept as a [`request::record`] of raw
//!   timestamps;
//! - [`measure`]: records folded by [`measure::aggregate`] into every
//!   derived figure ([`measure::metrics`]; [`measure::metrics::registry`]
//!   names each metric once), with intervals and verdicts;
//! - [`output`]: the [`output::result`] of a run (it round-trips through
//!   JSON) and the pure exporters of [`output::report`];
//! - [`plan`]: many runs against one prepared [`plan::target`] — a sweep, a
//!   search, repeats, shards.
#[cfg(any(test, feature = "fuzz"))]
pub mod fuzz;
pub mod load;
pub mod measure;
pub mod output;
pub mod plan;
pub mod request;

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
