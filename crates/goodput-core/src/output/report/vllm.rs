//! `vllm bench serve`'s result file, written from a goodput run: its keys
//! with their types (the summary, the per-request arrays, the setup keys),
//! and goodput's whole results document under `goodput`, so a script that
//! reads vLLM's file reads this one and nothing of goodput's is lost.
//!
//! A pure function of the run's results document and its records lines
//! (`--records --records-itl`): no I/O. Where vLLM's definition differs from
//! goodput's, vLLM's key keeps vLLM's meaning and goodput's figure is in
//! `goodput`: vLLM's `itl` is the gap between chunks, which is goodput's
//! `icl` (per-token ITL splits a chunk's gap over its tokens).

use serde_json::{json, Map, Value};

use crate::measure::stats::pct_label;

/// What vLLM writes beside the figures, from its command line.
#[derive(Debug, Clone, Default)]
pub struct VllmMeta {
    /// `%Y%m%d-%H%M%S` ([`now_date`]).
    pub date: String,
    /// `--backend`, written as both `backend` and `endpoint_type`.
    pub backend: String,
    /// `--label`; `None` (null) without one.
    pub label: Option<String>,
    /// The model the requests named.
    pub model_id: String,
    /// The tokenizer the prompts were built with.
    pub tokenizer_id: Option<String>,
    /// `--num-prompts`, or the number of spec_bench or speed_bench questions sent.
    pub num_prompts: u64,
    /// Infinite: written as the string `"inf"`, as vLLM does.
    pub request_rate: f64,
    /// `--burstiness`: the Gamma shape of the arrivals (1: Poisson).
    pub burstiness: f64,
    /// `--max-concurrency`; `None` (null) without a cap.
    pub max_concurrency: Option<u64>,
    /// `--metadata KEY=VALUE`, as strings.
    pub metadata: Vec<(String, String)>,
    /// `--percentile-metrics`: ttft, tpot, itl, e2el.
    pub percentile_metrics: Vec<String>,
    /// `--metric-percentiles`.
    pub metric_percentiles: Vec<f64>,
    /// `--save-detailed`: keep the per-request arrays vLLM drops without it.
    pub save_detailed: bool,
}

/// The arrays vLLM removes unless `--save-detailed`.
const DETAILED: [&str; 7] = [
    "input_lens",
    "output_lens",
    "start_times",
    "ttfts",
    "itls",
    "generated_texts",
    "errors",
];

/// vLLM's result document for a run: `doc` is goodput's results document,
/// `records` its measured records lines (any order; sorted by request id
/// here, vLLM's order of the prompts).
pub fn document(doc: &Value, records: &[Value], meta: &VllmMeta) -> Value {
    let mut o = Map::new();
    o.insert("date".into(), json!(meta.date));
    o.insert("endpoint_type".into(), json!(meta.backend));
    o.insert("backend".into(), json!(meta.backend));
    o.insert("label".into(), json!(meta.label));
    o.insert("model_id".into(), json!(meta.model_id));
    o.insert("tokenizer_id".into(), json!(meta.tokenizer_id));
    o.insert("num_prompts".into(), json!(meta.num_prompts));
    for (k, v) in &meta.metadata {
        o.insert(k.clone(), json!(v));
    }
    o.insert(
        "request_rate".into(),
        if meta.request_rate.is_finite() {
            json!(meta.request_rate)
        } else {
            json!("inf")
        },
    );
    o.insert("burstiness".into(), json!(meta.burstiness));
    o.insert("max_concurrency".into(), json!(meta.max_concurrency));
    for key in [
        "duration",
        "completed",
        "failed",
        "total_input_tokens",
        "total_output_tokens",
        "request_throughput",
        "request_goodput",
        "output_throughput",
        "total_token_throughput",
    ] {
        o.insert(key.into(), doc.get(key).cloned().unwrap_or(Value::Null));
    }
    insert_arrays(&mut o, records);
    o.insert(
        "max_output_tokens_per_s".into(),
        json!(peak_output_per_second(doc)),
    );
    o.insert(
        "max_concurrent_requests".into(),
        json!(peak_in_flight(records)),
    );
    o.insert("rtfx".into(), json!(0.0));
    insert_percentiles(&mut o, doc, meta);
    if !meta.save_detailed {
        for key in DETAILED {
            o.remove(key);
        }
    }
    o.insert("goodput".into(), doc.clone());
    Value::Object(o)
}

fn f64_of(v: &Value, key: &str) -> Option<f64> {
    v.get(key).and_then(Value::as_f64)
}

/// The per-request arrays, in request order: seconds where vLLM has seconds,
/// 0 (and no gaps) for a request that failed, as vLLM writes them.
fn insert_arrays(o: &mut Map<String, Value>, records: &[Value]) {
    let mut rows: Vec<&Value> = records.iter().collect();
    rows.sort_by_key(|r| r.get("request_id").and_then(Value::as_u64).unwrap_or(0));
    let (mut input_lens, mut output_lens, mut ttfts, mut itls) = (vec![], vec![], vec![], vec![]);
    let (mut latencies, mut start_times, mut queue_times) = (vec![], vec![], vec![]);
    let (mut texts, mut errors) = (vec![], vec![]);
    for r in rows {
        let ok = r.get("ok").and_then(Value::as_bool).unwrap_or(false);
        let s = |key: &str| f64_of(r, key).map_or(0.0, |ms| ms / 1e3);
        input_lens.push(json!(r
            .get("input_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(0)));
        output_lens.push(json!(if ok {
            r.get("output_tokens").and_then(Value::as_u64).unwrap_or(0)
        } else {
            0
        }));
        ttfts.push(json!(if ok { s("ttft_ms") } else { 0.0 }));
        let gaps: Vec<f64> = match r.get("event_times_ms").and_then(Value::as_array) {
            Some(t) if ok => t
                .windows(2)
                .filter_map(|w| Some((w[1].as_f64()? - w[0].as_f64()?) / 1e3))
                .collect(),
            _ => Vec::new(),
        };
        itls.push(json!(gaps));
        latencies.push(json!(if ok { s("e2el_ms") } else { 0.0 }));
        start_times.push(json!(f64_of(r, "send_s").unwrap_or(0.0)));
        queue_times.push(json!(s("schedule_lag_ms")));
        texts.push(json!(r
            .get("output_text")
            .and_then(Value::as_str)
            .unwrap_or("")));
        errors.push(json!(if ok {
            String::new()
        } else {
            r.get("error")
                .and_then(Value::as_str)
                .unwrap_or("failed")
                .to_string()
        }));
    }
    o.insert("input_lens".into(), json!(input_lens));
    o.insert("output_lens".into(), json!(output_lens));
    o.insert("ttfts".into(), json!(ttfts));
    o.insert("itls".into(), json!(itls));
    o.insert("latencies".into(), json!(latencies));
    o.insert("start_times".into(), json!(start_times));
    o.insert("queue_times".into(), json!(queue_times));
    o.insert("generated_texts".into(), json!(texts));
    o.insert("errors".into(), json!(errors));
}

/// The most output tokens in any whole second of the run (vLLM's
/// `max_output_tokens_per_s`), from the time series' buckets.
fn peak_output_per_second(doc: &Value) -> f64 {
    let ts = &doc["timeseries"];
    let bucket = ts["bucket_s"].as_f64().unwrap_or(0.0);
    let Some(tokens) = ts["output_tokens"].as_array() else {
        return 0.0;
    };
    if bucket <= 0.0 {
        return 0.0;
    }
    let per = (1.0 / bucket).round().max(1.0) as usize;
    tokens
        .chunks(per)
        .map(|c| c.iter().filter_map(Value::as_f64).sum::<f64>())
        .fold(0.0, f64::max)
}

/// The most requests in flight at once (vLLM's `max_concurrent_requests`):
/// a sweep over the sends and ends.
fn peak_in_flight(records: &[Value]) -> u64 {
    let mut edges: Vec<(f64, i64)> = Vec::with_capacity(2 * records.len());
    for r in records {
        if let (Some(a), Some(b)) = (f64_of(r, "send_s"), f64_of(r, "done_s")) {
            edges.push((a, 1));
            edges.push((b, -1));
        }
    }
    // Ends before starts at the same instant.
    edges.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
    let (mut now, mut peak) = (0i64, 0i64);
    for (_, d) in edges {
        now += d;
        peak = peak.max(now);
    }
    peak as u64
}

/// `mean_X_ms`, `median_X_ms`, `std_X_ms` and `pP_X_ms` for each metric of
/// `--percentile-metrics`, in vLLM's order (ttft, tpot, itl, e2el), from
/// goodput's distribution of it (vLLM's itl: goodput's icl, the gaps
/// between chunks, or its itl where no chunk gaps were kept).
fn insert_percentiles(o: &mut Map<String, Value>, doc: &Value, meta: &VllmMeta) {
    for metric in
        crate::measure::metrics::Metric::headline().map(crate::measure::metrics::Metric::key)
    {
        if !meta.percentile_metrics.iter().any(|m| m == metric) {
            continue;
        }
        let d = match metric {
            "itl" if doc["icl"].is_object() => &doc["icl"],
            m => &doc[m],
        };
        let value = |key: String| d.get(&key).cloned().unwrap_or(Value::Null);
        o.insert(format!("mean_{metric}_ms"), value("mean_ms".into()));
        o.insert(format!("median_{metric}_ms"), value("median_ms".into()));
        o.insert(format!("std_{metric}_ms"), value("std_ms".into()));
        for p in &meta.metric_percentiles {
            let label = pct_label(*p);
            o.insert(
                format!("p{label}_{metric}_ms"),
                value(format!("p{label}_ms")),
            );
        }
    }
}

/// The file name vLLM gives a result when `--result-filename` is not set:
/// `{label or backend}-{rate}qps[-concurrency{N}]-{model's last path part}-{date}.json`,
/// the rate as Python prints a float (`inf`, `10.0`, `2.5`).
pub fn default_file_name(meta: &VllmMeta) -> String {
    let prefix = meta.label.as_deref().unwrap_or(&meta.backend);
    let concurrency = meta
        .max_concurrency
        .map(|n| format!("-concurrency{n}"))
        .unwrap_or_default();
    let model = meta.model_id.rsplit('/').next().unwrap_or(&meta.model_id);
    format!(
        "{prefix}-{}qps{concurrency}-{model}-{}.json",
        python_float(meta.request_rate),
        meta.date
    )
}

/// A float as Python's `str` writes it: `inf`, `10.0`, `2.5`.
pub fn python_float(x: f64) -> String {
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    let s = format!("{x}");
    if s.contains('.') || s.contains('e') || s.contains("NaN") {
        s
    } else {
        format!("{s}.0")
    }
}

/// The date in vLLM's format, `%Y%m%d-%H%M%S`, in the machine's local time
/// as vLLM writes it (`TZ`, else `/etc/localtime`; UTC where neither names
/// a zone).
pub fn now_date() -> String {
    jiff::ZonedDateTime::now()
        .strftime("%Y%m%d-%H%M%S")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta() -> VllmMeta {
        VllmMeta {
            date: "20261129-101500".into(),
            backend: "openai".into(),
            model_id: "meta-llama/Llama-3.1-8B-Instruct".into(),
            tokenizer_id: Some("meta-llama/Llama-3.1-8B-Instruct".into()),
            num_prompts: 2,
            request_rate: f64::INFINITY,
            burstiness: 1.0,
            percentile_metrics: vec!["ttft".into(), "tpot".into(), "itl".into()],
            metric_percentiles: vec![99.0],
            ..VllmMeta::default()
        }
    }

    #[test]
    fn file_names_are_vllm_s() {
        let mut m = meta();
        assert_eq!(
            default_file_name(&m),
            "openai-infqps-Llama-3.1-8B-Instruct-20261129-101500.json"
        );
        m.request_rate = 10.0;
        m.max_concurrency = Some(16);
        m.label = Some("nightly".into());
        assert_eq!(
            default_file_name(&m),
            "nightly-10.0qps-concurrency16-Llama-3.1-8B-Instruct-20261129-101500.json"
        );
        assert_eq!(python_float(2.5), "2.5");
    }

    #[test]
    fn arrays_keys_and_types_are_vllm_s() {
        let doc = json!({
            "duration": 1.5, "completed": 1, "failed": 1, "total_input_tokens": 20,
            "total_output_tokens": 3, "request_throughput": 0.66, "request_goodput": null,
            "output_throughput": 2.0, "total_token_throughput": 15.3,
            "ttft": {"mean_ms": 8.0, "median_ms": 8.0, "std_ms": 0.0, "p99_ms": 8.0},
            "tpot": {"mean_ms": 7.0, "median_ms": 7.0, "std_ms": 0.0, "p99_ms": 7.0},
            "itl": {"mean_ms": 3.5, "median_ms": 3.5, "std_ms": 0.0, "p99_ms": 3.5},
            "icl": {"mean_ms": 7.0, "median_ms": 7.0, "std_ms": 0.0, "p99_ms": 7.0},
            "timeseries": {"bucket_s": 0.1, "output_tokens": [1.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]},
        });
        let records = vec![
            json!({"request_id": 5, "ok": false, "error": "HTTP 500", "input_tokens": 10,
                   "output_tokens": 0, "send_s": 0.5, "done_s": 0.6, "schedule_lag_ms": 1.0}),
            json!({"request_id": 4, "ok": true, "input_tokens": 10, "output_tokens": 3,
                   "ttft_ms": 8.0, "e2el_ms": 22.0, "event_times_ms": [8.0, 15.0, 22.0],
                   "send_s": 0.1, "done_s": 0.55, "schedule_lag_ms": 0.0}),
        ];
        let mut m = meta();
        m.metadata = vec![("gpu".into(), "H100".into())];
        let v = document(&doc, &records, &m);
        assert_eq!(v["request_rate"], "inf");
        assert_eq!(v["gpu"], "H100");
        assert_eq!(v["mean_itl_ms"], 7.0, "vLLM's itl is goodput's icl");
        assert_eq!(v["p99_ttft_ms"], 8.0);
        assert!(v.get("mean_e2el_ms").is_none());
        assert_eq!(v["max_output_tokens_per_s"], 3.0);
        assert_eq!(v["max_concurrent_requests"], 2);
        assert_eq!(v["latencies"], json!([0.022, 0.0]));
        assert_eq!(v["queue_times"], json!([0.0, 0.001]));
        assert!(v.get("ttfts").is_none(), "detailed arrays only on request");
        m.save_detailed = true;
        let v = document(&doc, &records, &m);
        assert_eq!(v["ttfts"], json!([0.008, 0.0]));
        assert_eq!(v["itls"], json!([[0.007, 0.007], []]));
        assert_eq!(v["errors"], json!(["", "HTTP 500"]));
        assert_eq!(v["output_lens"], json!([3, 0]));
        assert_eq!(v["goodput"]["completed"], 1);
    }
}
