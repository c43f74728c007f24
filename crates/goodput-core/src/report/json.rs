//! The results JSON. Pure: results in, a JSON value out. One run's document
//! is [`RunResult::to_document`] (vLLM's keys plus goodput's own); several
//! runs (a comparison, or the points of a sweep) are a list of them.

use serde_json::{json, Value};

use crate::result::RunResult;

/// One run's document, or `{"runs": [...]}` for several.
pub fn document(results: &[RunResult]) -> Value {
    match results {
        [one] => one.to_document(),
        many => json!({"runs": many.iter().map(RunResult::to_document).collect::<Vec<_>>()}),
    }
}

/// The `--repeat` document: every repeat as a run document under `runs`,
/// and the summary across them under `across_repeats`; `"kind": "repeat"`.
pub fn repeat_document(r: &crate::repeat::RepeatResult) -> Value {
    json!({
        "schema_version": crate::result::SCHEMA_VERSION,
        "kind": "repeat",
        "across_repeats": r.summary,
        "runs": r.runs.iter().map(RunResult::to_document).collect::<Vec<_>>(),
        "tool": {"name": "goodput", "version": env!("CARGO_PKG_VERSION")},
    })
}

/// The sweep document: every point as a run document, plus the curve, the
/// knees and the goodput; `"kind": "sweep"` tells it from a run's.
pub fn sweep_document(r: &crate::sweep::SweepResult) -> Value {
    let mut v = serde_json::to_value(r).unwrap_or_default();
    v["schema_version"] = json!(crate::result::SCHEMA_VERSION);
    v["kind"] = json!("sweep");
    v["tool"] = json!({"name": "goodput", "version": env!("CARGO_PKG_VERSION")});
    v
}
