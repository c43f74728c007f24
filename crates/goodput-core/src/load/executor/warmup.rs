//! The requests sent before the measured phase, and how `--warmup`
//! chooses them.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::load::schedule::Load;

/// Requests sent before the measured phase.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Warmup {
    /// No warm-up: the first request is measured.
    None,
    /// This many requests, sent before the first measured one.
    Requests(u64),
    /// Requests sent for this long from the first warm-up send.
    #[serde(with = "crate::serde_secs")]
    Duration(Duration),
}

/// How the warm-up is chosen: explicitly, or from the load (`auto`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WarmupPolicy {
    /// One request per slot in closed loop (at least 4); 2 s of arrivals in
    /// open loop (8 to 500 requests): enough that a cold server (first
    /// kernels compiled, caches empty) does not distort the measured phase.
    Auto,
    /// This warm-up, whatever the load.
    Fixed(Warmup),
}

impl WarmupPolicy {
    /// The warm-up to run under `load`: a fixed one as is, `Auto` as a
    /// request count sized to the load.
    pub fn resolve(self, load: &Load) -> Warmup {
        match self {
            WarmupPolicy::Fixed(w) => w,
            WarmupPolicy::Auto => Warmup::Requests(match *load {
                Load::Closed { concurrency } => (concurrency as u64).max(4),
                Load::Open { rate, .. } if rate.is_finite() => {
                    ((rate * 2.0).ceil() as u64).clamp(8, 500)
                }
                Load::Open { .. } => 8,
            }),
        }
    }
}

/// `--warmup`'s grammar: `auto`, a request count (0: none) or a duration.
impl std::str::FromStr for WarmupPolicy {
    type Err = String;

    fn from_str(s: &str) -> Result<WarmupPolicy, String> {
        let s = s.trim();
        if s == "auto" {
            return Ok(WarmupPolicy::Auto);
        }
        if let Ok(n) = s.parse::<u64>() {
            return Ok(WarmupPolicy::Fixed(match n {
                0 => Warmup::None,
                n => Warmup::Requests(n),
            }));
        }
        crate::units::parse_duration(s)
            .map(|d| WarmupPolicy::Fixed(Warmup::Duration(d)))
            .map_err(|_| {
                format!("invalid warm-up '{s}': expected auto, a request count (20) or a duration (10s)")
            })
    }
}
