//! The results JSON. Pure: results in, a JSON value out. One run's document
//! is [`RunResult::to_document`] (vLLM's keys plus goodput's own); a sweep's
//! and a repeat set's hold their runs' documents; several results are a
//! list of their documents.

use serde_json::{json, Value};

use crate::output::report::saved::Saved;
use crate::output::result::RunResult;

/// One result's document, or `{"runs": [...]}` of each one's for several.
pub fn document(items: &[(String, Saved)]) -> Value {
    match items {
        [(_, one)] => saved_document(one),
        many => json!({"runs": many.iter().map(|(_, s)| saved_document(s)).collect::<Vec<_>>()}),
    }
}

/// A result's document, by what it is.
pub fn saved_document(saved: &Saved) -> Value {
    match saved {
        Saved::Run(r) => r.to_document(),
        Saved::Sweep(s) => sweep_document(s),
        Saved::Repeat(r) => repeat_document(r),
    }
}

/// The `--repeat` document: every repeat as a run document under `runs`,
/// and the summary across them under `across_repeats`; `"kind": "repeat"`.
pub fn repeat_document(r: &crate::plan::repeat::RepeatResult) -> Value {
    json!({
        "schema_version": crate::output::result::SCHEMA_VERSION,
        "kind": "repeat",
        "across_repeats": r.summary,
        "runs": r.runs.iter().map(RunResult::to_document).collect::<Vec<_>>(),
        "tool": {"name": "goodput", "version": env!("CARGO_PKG_VERSION")},
    })
}

/// The sweep document: every point as a run document, plus the curve, the
/// knees and the goodput; `"kind": "sweep"` tells it from a run's.
pub fn sweep_document(r: &crate::plan::sweep::SweepResult) -> Value {
    let mut v = serde_json::to_value(r).unwrap_or_default();
    v["schema_version"] = json!(crate::output::result::SCHEMA_VERSION);
    v["kind"] = json!("sweep");
    v["tool"] = json!({"name": "goodput", "version": env!("CARGO_PKG_VERSION")});
    v
}
