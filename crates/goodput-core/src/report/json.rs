//! The results JSON: `vllm bench serve`'s keys (so existing scripts read it)
//! plus goodput's own (`config`, `ci`, `errors`, `icl`, `schedule_lag`, ...).
//! Pure: a [`RunResult`] in, a JSON value out.

use serde_json::{json, Map, Value};

use crate::run::RunResult;
use crate::stats::{Distribution, Estimate};

/// `99` → `"99"`, `99.9` → `"99.9"`, as vLLM spells percentile keys.
pub fn pct_label(p: f64) -> String {
    if p.fract() == 0.0 {
        format!("{}", p as i64)
    } else {
        let s = format!("{p}");
        s.trim_end_matches('0').to_string()
    }
}

fn interval(e: &Estimate) -> Value {
    json!([e.lo, e.hi])
}

/// `{count, mean_ms, std_ms, min_ms, max_ms, median_ms, p90_ms, ..., ci: {...}}`
pub fn distribution(d: &Distribution) -> Value {
    let mut o = Map::new();
    o.insert("count".into(), json!(d.count));
    o.insert("mean_ms".into(), json!(d.mean.value));
    o.insert("std_ms".into(), json!(d.std));
    o.insert("min_ms".into(), json!(d.min));
    o.insert("max_ms".into(), json!(d.max));
    let mut ci = Map::new();
    ci.insert("mean".into(), interval(&d.mean));
    for (p, e) in &d.percentiles {
        if *p == 50.0 {
            o.insert("median_ms".into(), json!(e.value));
        }
        o.insert(format!("p{}_ms", pct_label(*p)), json!(e.value));
        ci.insert(format!("p{}", pct_label(*p)), interval(e));
    }
    o.insert("ci".into(), Value::Object(ci));
    o.insert("ci_method".into(), json!(d.ci_method));
    Value::Object(o)
}

/// The whole results document of one run.
pub fn run_json(r: &RunResult) -> Value {
    let m = &r.metrics;
    let mut o = Map::new();
    o.insert("completed".into(), json!(m.completed));
    o.insert("failed".into(), json!(m.failed));
    o.insert("incomplete".into(), json!(m.incomplete));
    o.insert("duration".into(), json!(m.duration_s));
    o.insert("total_input_tokens".into(), json!(m.total_input_tokens));
    o.insert("total_output_tokens".into(), json!(m.total_output_tokens));
    o.insert(
        "request_throughput".into(),
        json!(m.request_throughput.value),
    );
    o.insert("output_throughput".into(), json!(m.output_throughput.value));
    o.insert(
        "total_token_throughput".into(),
        json!(m.total_token_throughput),
    );
    o.insert("input_throughput".into(), json!(m.input_throughput));
    o.insert("request_goodput".into(), Value::Null);
    o.insert("max_concurrency".into(), json!(r.load.concurrency_cap()));
    o.insert(
        "request_rate".into(),
        json!(r.load.offered_rate().map(|x| if x.is_finite() {
            json!(x)
        } else {
            json!("inf")
        })),
    );
    let mut ci = Map::new();
    ci.insert("request_throughput".into(), interval(&m.request_throughput));
    ci.insert("output_throughput".into(), interval(&m.output_throughput));
    for (name, d) in [
        ("ttft", &m.ttft),
        ("tpot", &m.tpot),
        ("itl", &m.itl),
        ("e2el", &m.e2el),
    ] {
        let Some(d) = d else {
            continue;
        };
        o.insert(format!("mean_{name}_ms"), json!(d.mean.value));
        o.insert(format!("std_{name}_ms"), json!(d.std));
        let mut c = Map::new();
        c.insert("mean".into(), interval(&d.mean));
        for (p, e) in &d.percentiles {
            if *p == 50.0 {
                o.insert(format!("median_{name}_ms"), json!(e.value));
            }
            o.insert(format!("p{}_{name}_ms", pct_label(*p)), json!(e.value));
            c.insert(format!("p{}", pct_label(*p)), interval(e));
        }
        c.insert("method".into(), json!(d.ci_method));
        ci.insert(name.into(), Value::Object(c));
    }
    o.insert("ci".into(), Value::Object(ci));
    let dist = |d: &Option<Distribution>| d.as_ref().map(distribution).unwrap_or(Value::Null);
    o.insert("icl".into(), dist(&m.icl));
    o.insert("schedule_lag".into(), dist(&m.schedule_lag));
    o.insert("connect".into(), dist(&m.connect));
    o.insert("generation".into(), dist(&m.generation));
    if r.load.is_open() {
        // Latency as a user arriving at t_sched saw it (coordinated omission corrected).
        o.insert("ttft_from_schedule".into(), dist(&m.ttft_sched));
        o.insert("e2el_from_schedule".into(), dist(&m.e2el_sched));
    }
    if m.ttfot.is_some() {
        o.insert("time_to_first_output_token".into(), dist(&m.ttfot));
    }
    o.insert(
        "achieved_request_rate".into(),
        json!(m.achieved_request_rate),
    );
    o.insert("steady_state".into(), json!(m.steady_state));
    o.insert("mean_in_flight".into(), json!(m.mean_in_flight));
    o.insert(
        "errors".into(),
        json!({
            "error_rate": m.error_rate,
            "by_kind": m.errors,
            "examples": m.sample_errors,
        }),
    );
    o.insert(
        "tokens".into(),
        json!({
            "input_sources": m.input_sources,
            "output_sources": m.output_sources,
            "tokenizer": r.tokenizer,
            "count_discrepancy_share": m.count_discrepancy_share,
            "output_length_mismatch_share": m.length_mismatch_share,
        }),
    );
    o.insert("slo".into(), Value::Null);
    o.insert("cost".into(), Value::Null);
    o.insert("quality".into(), Value::Null);
    o.insert("timeseries".into(), json!(m.timeseries));
    o.insert(
        "run".into(),
        json!({
            "started_at": r.started_at,
            "clock_origin_monotonic_ns": r.clock_origin_monotonic_ns,
            "warmup_requests": r.warmup_requests,
            "sent_measured": r.exec.sent_measured,
            "interrupted": r.exec.interrupted,
            "drain_timed_out": r.exec.drain_timed_out,
            "notes": r.notes,
        }),
    );
    o.insert("model_id".into(), json!(r.model));
    o.insert("config".into(), r.config.clone());
    o.insert(
        "tool".into(),
        json!({"name": "goodput", "version": env!("CARGO_PKG_VERSION")}),
    );
    Value::Object(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_labels() {
        assert_eq!(pct_label(99.0), "99");
        assert_eq!(pct_label(99.9), "99.9");
        assert_eq!(pct_label(50.0), "50");
    }
}
