//! The configuration a run was asked to have, saved under `config` in its
//! results: everything needed to rerun it, minus secrets.

use serde_json::json;

use crate::client::is_secret_header;
use crate::protocol::RequestParams;
use crate::target::{RunSpec, TargetOptions};
use crate::tokenizer::Tokenizer;

/// Everything needed to rerun, minus secrets.
pub(crate) fn config(
    opts: &TargetOptions,
    model: &str,
    params: &RequestParams,
    tokenizer: &Tokenizer,
    spec: &RunSpec,
) -> serde_json::Value {
    let c = &opts.client;
    let plan = &spec.plan;
    json!({
        "url": c.url,
        "endpoint": c.endpoint,
        "model": model,
        "headers": c.headers.iter().map(|h| redact_header(h)).collect::<Vec<_>>(),
        "timeout_s": c.timeout.as_secs_f64(),
        "idle_timeout_s": c.idle_timeout.as_secs_f64(),
        "load": plan.load,
        "num_prompts": plan.num_prompts,
        "duration_s": plan.duration.map(|d| d.as_secs_f64()),
        "warmup": plan.warmup,
        "drain_timeout_s": plan.drain_timeout.as_secs_f64(),
        "seed": plan.seed,
        "workload": spec.workload.describe(tokenizer, c.endpoint),
        "stream": params.stream,
        "temperature": params.temperature,
        "min_tokens_sent": params.min_tokens,
        "ignore_eos_sent": params.ignore_eos,
        "tokenizer": tokenizer.spec(),
        "percentiles": spec.reported_percentiles(),
        "slo": spec.slo,
        "cache_bust": true,
    })
}

fn redact_header(h: &str) -> String {
    match h.split_once(':') {
        Some((name, _)) if is_secret_header(name.trim()) => format!("{}: <redacted>", name.trim()),
        _ => h.to_string(),
    }
}
