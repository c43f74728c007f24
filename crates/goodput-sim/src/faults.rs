//! Fault injection for tests: which requests fail, and how.
//!
//! Each fault is a [`FaultSpec`]: a rate (`0.05`: each request independently
//! with probability 5 %, drawn from the seed and the request's index, so a
//! run is reproducible) or a schedule (`every:20`: the 20th, 40th, ...
//! request). Status faults (500, 503, 429) are checked in that order and the
//! first that fires answers the request; slow headers, a stall, a malformed
//! event and a cut stream can each come on top of a normal response.

use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::SimError;

/// When a fault fires.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum FaultSpec {
    /// Off: the default, and what a rate of 0 parses to.
    #[default]
    Never,
    /// Each request independently with this probability (0–1).
    Rate(f64),
    /// Every n-th request (1-based: the n-th, 2n-th, ...).
    Every(u64),
}

impl FromStr for FaultSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        if let Some(n) = s.strip_prefix("every:") {
            return match n.trim().parse::<u64>() {
                Ok(n) if n >= 1 => Ok(FaultSpec::Every(n)),
                _ => Err(format!(
                    "'{s}' is not a valid schedule: expected every:N with N >= 1"
                )),
            };
        }
        match s.parse::<f64>() {
            Ok(0.0) => Ok(FaultSpec::Never),
            Ok(r) if (0.0..=1.0).contains(&r) => Ok(FaultSpec::Rate(r)),
            _ => Err(format!(
                "'{s}' is not a valid fault spec: expected a rate between 0 and 1 (e.g. 0.05) \
                 or a schedule every:N (e.g. every:20)"
            )),
        }
    }
}

impl TryFrom<String> for FaultSpec {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

impl From<FaultSpec> for String {
    fn from(f: FaultSpec) -> String {
        match f {
            FaultSpec::Never => "0".into(),
            FaultSpec::Rate(r) => r.to_string(),
            FaultSpec::Every(n) => format!("every:{n}"),
        }
    }
}

fn mix(mut x: u64) -> u64 {
    // splitmix64 finalizer
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

impl FaultSpec {
    /// Whether the fault fires for the request with 0-based `index`.
    pub fn fires(&self, seed: u64, salt: u64, index: u64) -> bool {
        match *self {
            FaultSpec::Never => false,
            FaultSpec::Every(n) => (index + 1).is_multiple_of(n),
            FaultSpec::Rate(r) => {
                let u = mix(mix(seed ^ salt.wrapping_mul(0x2545_f491_4f6c_dd1d)) ^ index);
                ((u >> 11) as f64 / (1u64 << 53) as f64) < r
            }
        }
    }

    /// Whether the fault never fires.
    pub fn is_never(&self) -> bool {
        matches!(self, FaultSpec::Never)
    }
}

/// Which faults to inject.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FaultConfig {
    /// Answer HTTP 500.
    pub http_500: FaultSpec,
    /// Answer HTTP 503.
    pub http_503: FaultSpec,
    /// Answer HTTP 429 with a `Retry-After` header.
    pub http_429: FaultSpec,
    /// The `Retry-After` value of a 429, seconds.
    pub retry_after_s: u64,
    /// End the response mid-way without `[DONE]` (the connection is reset).
    pub stream_cut: FaultSpec,
    /// Send no bytes for `stall_s` mid-way through the stream.
    pub stall: FaultSpec,
    /// Length of a stall, seconds.
    pub stall_s: f64,
    /// Send one malformed event (not JSON) mid-way through the stream.
    pub malformed: FaultSpec,
    /// Hold the response headers back for `slow_headers_s`.
    pub slow_headers: FaultSpec,
    /// How long slow headers are held back, seconds.
    pub slow_headers_s: f64,
    /// A structured answer (a tool call's arguments, JSON content) that
    /// is not valid JSON: the instance with its last closing brace dropped.
    pub schema_violation: FaultSpec,
}

impl Default for FaultConfig {
    fn default() -> Self {
        FaultConfig {
            http_500: FaultSpec::Never,
            http_503: FaultSpec::Never,
            http_429: FaultSpec::Never,
            retry_after_s: 1,
            stream_cut: FaultSpec::Never,
            stall: FaultSpec::Never,
            stall_s: 2.0,
            malformed: FaultSpec::Never,
            slow_headers: FaultSpec::Never,
            slow_headers_s: 2.0,
            schema_violation: FaultSpec::Never,
        }
    }
}

/// A status answered instead of a completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusFault {
    /// HTTP 500.
    Internal,
    /// HTTP 503.
    Unavailable,
    /// HTTP 429 with a `Retry-After` header.
    TooManyRequests {
        /// The `Retry-After` value, seconds.
        retry_after_s: u64,
    },
}

/// The faults one request gets.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct FaultPlan {
    /// A status answered instead of the completion (500, 503 or 429).
    pub status: Option<StatusFault>,
    /// How long to hold the response headers back.
    pub slow_headers: Option<Duration>,
    /// End the stream mid-way without `[DONE]` and reset the connection.
    pub cut: bool,
    /// How long to send nothing, mid-way through the stream.
    pub stall: Option<Duration>,
    /// Send one event that is not JSON mid-way through the stream.
    pub malformed: bool,
    /// Send the structured answer with its last character dropped (not valid JSON).
    pub schema_violation: bool,
}

impl FaultConfig {
    /// Check that the stall and slow-header durations are finite and not negative.
    pub fn validate(&self) -> Result<(), SimError> {
        for (field, v) in [
            ("stall_s", self.stall_s),
            ("slow_headers_s", self.slow_headers_s),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(SimError::invalid(
                    field,
                    format!("{v} must be >= 0 seconds"),
                ));
            }
        }
        Ok(())
    }

    /// Whether any fault is configured.
    pub fn any(&self) -> bool {
        [
            self.http_500,
            self.http_503,
            self.http_429,
            self.stream_cut,
            self.stall,
            self.malformed,
            self.slow_headers,
            self.schema_violation,
        ]
        .iter()
        .any(|f| !f.is_never())
    }

    /// The faults of the request with 0-based `index`.
    pub fn plan(&self, seed: u64, index: u64) -> FaultPlan {
        let status = if self.http_500.fires(seed, 1, index) {
            Some(StatusFault::Internal)
        } else if self.http_503.fires(seed, 2, index) {
            Some(StatusFault::Unavailable)
        } else if self.http_429.fires(seed, 3, index) {
            Some(StatusFault::TooManyRequests {
                retry_after_s: self.retry_after_s,
            })
        } else {
            None
        };
        FaultPlan {
            status,
            slow_headers: self
                .slow_headers
                .fires(seed, 4, index)
                .then(|| Duration::from_secs_f64(self.slow_headers_s)),
            cut: self.stream_cut.fires(seed, 5, index),
            stall: self
                .stall
                .fires(seed, 6, index)
                .then(|| Duration::from_secs_f64(self.stall_s)),
            malformed: self.malformed.fires(seed, 7, index),
            schema_violation: self.schema_violation.fires(seed, 8, index),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_reject_with_a_hint() {
        assert_eq!("0.25".parse::<FaultSpec>(), Ok(FaultSpec::Rate(0.25)));
        assert_eq!("every:3".parse::<FaultSpec>(), Ok(FaultSpec::Every(3)));
        assert_eq!("0".parse::<FaultSpec>(), Ok(FaultSpec::Never));
        let err = "1.5".parse::<FaultSpec>().unwrap_err();
        assert!(err.contains("every:N"), "{err}");
        assert!("every:0".parse::<FaultSpec>().is_err());
    }

    #[test]
    fn rates_are_met_and_schedules_are_exact() {
        let spec = FaultSpec::Rate(0.1);
        let n = (0..100_000).filter(|&i| spec.fires(7, 1, i)).count();
        assert!((9_500..10_500).contains(&n), "{n}");
        let every = FaultSpec::Every(4);
        let hits: Vec<u64> = (0..12).filter(|&i| every.fires(7, 1, i)).collect();
        assert_eq!(hits, vec![3, 7, 11]);
    }

    #[test]
    fn status_faults_take_precedence_in_order() {
        let cfg = FaultConfig {
            http_500: FaultSpec::Every(2),
            http_429: FaultSpec::Every(1),
            retry_after_s: 5,
            ..FaultConfig::default()
        };
        assert_eq!(cfg.plan(0, 1).status, Some(StatusFault::Internal));
        assert_eq!(
            cfg.plan(0, 0).status,
            Some(StatusFault::TooManyRequests { retry_after_s: 5 })
        );
    }
}
