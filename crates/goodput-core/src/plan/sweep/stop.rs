//! Why a sweep stopped before its plan was done: typed, saved as words.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Why a sweep stopped before its plan was done. Saved as its words (the
/// documents' `stopped` string), read back from them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(into = "String", from = "String")]
pub enum StopReason {
    /// A signal (Ctrl-C, SIGTERM) before any request was sent.
    InterruptedBeforeSending,
    /// A signal (Ctrl-C, SIGTERM).
    Interrupted,
    /// `--max-time` was reached.
    MaxTime(Duration),
    /// Two points in a row were saturated: higher loads would only queue.
    Saturated,
    /// Words of a document this version does not know.
    Other(String),
}

const SATURATED_WORDS: &str = "two points in a row were saturated; higher loads would only queue";

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StopReason::InterruptedBeforeSending => {
                f.write_str("interrupted before any request was sent")
            }
            StopReason::Interrupted => f.write_str("interrupted"),
            StopReason::MaxTime(d) => {
                write!(
                    f,
                    "--max-time {} reached",
                    crate::units::format_duration(*d)
                )
            }
            StopReason::Saturated => f.write_str(SATURATED_WORDS),
            StopReason::Other(s) => f.write_str(s),
        }
    }
}

impl From<StopReason> for String {
    fn from(r: StopReason) -> String {
        r.to_string()
    }
}

impl From<String> for StopReason {
    fn from(s: String) -> StopReason {
        let max_time = s
            .strip_prefix("--max-time ")
            .and_then(|r| r.strip_suffix(" reached"))
            .and_then(|d| crate::units::parse_duration(d).ok());
        match (s.as_str(), max_time) {
            (_, Some(d)) => StopReason::MaxTime(d),
            ("interrupted", _) => StopReason::Interrupted,
            ("interrupted before any request was sent", _) => StopReason::InterruptedBeforeSending,
            (SATURATED_WORDS, _) => StopReason::Saturated,
            _ => StopReason::Other(s),
        }
    }
}

impl StopReason {
    /// A signal stopped it.
    pub fn is_signal(&self) -> bool {
        matches!(
            self,
            StopReason::Interrupted | StopReason::InterruptedBeforeSending
        )
    }
}
