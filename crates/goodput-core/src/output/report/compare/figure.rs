//! A compared figure: its name, unit, both sides' values, the change and
//! its significance; and how figures and changes are written.

use serde::Serialize;

use super::significance::Significance;

/// A figure's unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Unit {
    #[serde(rename = "req/s")]
    RequestsPerSecond,
    #[serde(rename = "tok/s")]
    TokensPerSecond,
    /// A share of requests, 0 to 1 (the error rate).
    #[serde(rename = "share")]
    Share,
    #[serde(rename = "ms")]
    Milliseconds,
    /// Inputs of pooling requests per second (embeddings, rerank, score).
    #[serde(rename = "inputs/s")]
    InputsPerSecond,
    /// Output tokens per joule of the GPUs' measured energy.
    #[serde(rename = "tok/J")]
    TokensPerJoule,
    /// Tokens a verifying step gave a sequence (speculative decoding).
    #[serde(rename = "tok/step")]
    TokensPerStep,
}

impl Unit {
    /// The unit column: `req/s`, `tok/s`, `share`, `ms`.
    pub fn as_str(self) -> &'static str {
        match self {
            Unit::RequestsPerSecond => "req/s",
            Unit::TokensPerSecond => "tok/s",
            Unit::Share => "share",
            Unit::Milliseconds => "ms",
            Unit::InputsPerSecond => "inputs/s",
            Unit::TokensPerJoule => "tok/J",
            Unit::TokensPerStep => "tok/step",
        }
    }

    /// After a number: `ms`, `req/s`; nothing for a share.
    pub fn suffix(self) -> &'static str {
        match self {
            Unit::Share => "",
            u => u.as_str(),
        }
    }
}

/// `182.40`, `1234.5`; a share to four decimals.
pub fn format_value(x: f64, unit: Unit) -> String {
    match unit {
        Unit::Share => format!("{x:.4}"),
        _ if x.abs() >= 1000.0 => format!("{x:.1}"),
        _ => format!("{x:.2}"),
    }
}

/// `+21.40`, `-0.0100`: a change, without its unit.
pub fn format_signed(x: f64, unit: Unit) -> String {
    match unit {
        Unit::Share => format!("{x:+.4}"),
        _ if x.abs() >= 1000.0 => format!("{x:+.1}"),
        _ => format!("{x:+.2}"),
    }
}

/// `+21.40 ms`, `-0.0100`: a change, with its unit.
pub fn format_change(x: f64, unit: Unit) -> String {
    match unit.suffix() {
        "" => format_signed(x, unit),
        s => format!("{} {s}", format_signed(x, unit)),
    }
}

/// `+21.4%` for a relative change of 0.214.
pub fn format_relative(r: f64) -> String {
    format!("{:+.1}%", r * 100.0)
}

/// One figure of both results.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Figure {
    /// vLLM's flat key (`p99_ttft_ms`, `request_throughput`), or `goodput`.
    pub name: String,
    /// What its values are in (`ms`, `req/s`, `tok/s`, `share`).
    pub unit: Unit,
    /// BASE's value; `None` when BASE does not have it.
    pub base: Option<f64>,
    /// NEW's value; `None` when NEW does not have it.
    pub new: Option<f64>,
    /// NEW − BASE, in the unit.
    pub change: Option<f64>,
    /// (NEW − BASE) / |BASE|, a fraction; null when BASE is 0 and NEW is not.
    pub relative_change: Option<f64>,
    /// Whether the change is larger than the runs' noise, and by which test.
    #[serde(flatten)]
    pub significance: Significance,
}

impl Figure {
    /// The figure with its changes computed; its significance is n/a unless both sides have a value.
    pub fn new(
        name: impl Into<String>,
        unit: Unit,
        base: Option<f64>,
        new: Option<f64>,
        significance: Significance,
    ) -> Figure {
        let both = base.zip(new);
        Figure {
            name: name.into(),
            unit,
            base,
            new,
            change: both.map(|(b, n)| n - b),
            relative_change: both.and_then(|(b, n)| {
                if b != 0.0 {
                    Some((n - b) / b.abs())
                } else {
                    (n == b).then_some(0.0)
                }
            }),
            significance: if both.is_some() {
                significance
            } else {
                Significance::NOT_AVAILABLE
            },
        }
    }
}

/// Holm's correction over every figure with a p-value
/// ([`super::significance::holm`]).
pub(super) fn holm(figures: &mut [Figure]) {
    let mut sigs: Vec<&mut Significance> =
        figures.iter_mut().map(|f| &mut f.significance).collect();
    super::significance::holm(&mut sigs);
}
