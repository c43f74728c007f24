//! What one run produced, and its results document.
//!
//! A [`RunResult`] serializes to the results JSON users and scripts read:
//! `vllm bench serve`'s flat keys (`completed`, `request_throughput`,
//! `p99_ttft_ms`, ...) are a *view* written beside goodput's own structure
//! (one distribution object per registry metric, `errors`, `tokens`,
//! `timeseries`, `run`, `config`), and it deserializes from that same
//! document, ignoring the view, so `report` and `compare` can read saved
//! results back. A test round-trips a result.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{json, Map, Value};

use crate::load::executor::ExecSummary;
use crate::load::schedule::Load;
use crate::measure::metrics::{Distributions, Metric, RunMetrics};
use crate::measure::stats::{pct_label, Estimate};
use crate::output::config::RunConfig;

/// Version of the results document's layout.
pub const SCHEMA_VERSION: u32 = 2;

/// The result of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunResult {
    /// Unique per run; every record line and `x-request-id` carries it.
    pub run_id: String,
    /// Everything needed to rerun, minus secrets: among it the model the
    /// requests named (`model_id` in the JSON), the client tokenizer's spec
    /// (`tokens.tokenizer`), the offered load and the percentiles reported,
    /// each held once, here.
    pub config: RunConfig,
    /// Every figure of the measured phase.
    pub metrics: RunMetrics,
    /// What the sending did: requests sent, interruptions, records lost (under `run`).
    pub exec: ExecSummary,
    /// What the server did to pooled connections: closed before reuse
    /// (discarded unused), closed on reuse before answering (resent once).
    pub connections: crate::request::client::ConnectionStats,
    /// The SLO verdict that ended the run before its planned end (a sweep's search).
    pub early_stop: Option<crate::measure::verdict::Verdict>,
    /// Cost and energy figures; `None` without `--cost-per-hour` or `--power-watts`.
    pub cost: Option<crate::measure::cost::Cost>,
    /// Things the user should know (dropped fields, flags).
    pub notes: Vec<String>,
    /// The classic traps the run fell into (`crate::measure::traps`).
    pub warnings: Vec<crate::measure::traps::Warning>,
    /// Wall-clock start of the run (RFC 3339, UTC).
    pub started_at: String,
    /// The run's origin on `CLOCK_MONOTONIC` (ns): `sched_s`/`send_s` in the
    /// records are seconds after it.
    pub clock_origin_monotonic_ns: Option<u64>,
    /// (request id, hash of the output) of completed requests, when the
    /// run kept them (`--repeat`); not saved.
    pub output_hashes: Vec<(u64, u64)>,
    /// What the server's own metrics said over the run (`--server-metrics`).
    pub server_metrics: Option<crate::measure::server_metrics::ServerMetrics>,
    /// What the GPUs drew over the run, from a DCGM exporter (`--gpu-metrics`).
    pub gpu_metrics: Option<crate::measure::gpu::GpuMetrics>,
    /// A sharded run's shards: clocks, starts, lags, CPU, and any shard
    /// lost (`--shards`).
    pub shards: Option<crate::plan::shard::merge::ShardsReport>,
}

/// The value at a dotted `path` of a results document.
fn field<T: serde::de::DeserializeOwned>(v: &Value, path: &str) -> Result<T, String> {
    let mut x = v;
    for k in path.split('.') {
        x = x.get(k).unwrap_or(&Value::Null);
    }
    serde_json::from_value(x.clone()).map_err(|e| format!("'{path}': {e}"))
}

fn interval(e: &Estimate) -> Value {
    json!([e.lo, e.hi])
}

fn rate_value(load: &Load) -> Value {
    match load.offered_rate() {
        Some(x) if x.is_finite() => json!(x),
        Some(_) => json!("inf"),
        None => Value::Null,
    }
}

impl RunResult {
    /// The results document: vLLM's flat keys as a view beside goodput's
    /// own sections, then the run's facts, the model and the config.
    pub fn to_document(&self) -> Value {
        let m = &self.metrics;
        let mut o = Map::new();
        o.insert("schema_version".into(), json!(SCHEMA_VERSION));
        self.insert_totals(&mut o);
        let ci = self.insert_distributions(&mut o);
        o.insert("ci".into(), Value::Object(ci));
        o.insert(
            "achieved_request_rate".into(),
            json!(m.achieved_request_rate),
        );
        o.insert("steady_state".into(), json!(m.steady_state));
        o.insert("mean_in_flight".into(), json!(m.mean_in_flight));
        o.insert("errors".into(), json!(m.errors));
        let mut tokens = json!(m.tokens);
        tokens["tokenizer"] = json!(self.config.tokenizer);
        o.insert("tokens".into(), tokens);
        o.insert("slo".into(), json!(m.slo));
        o.insert("saturation".into(), json!(m.saturation));
        o.insert("crowding".into(), json!(m.crowding));
        o.insert("schedule_control".into(), json!(m.schedule_control));
        o.insert("sessions".into(), json!(m.sessions));
        o.insert("tasks".into(), json!(m.tasks));
        o.insert("interactivity".into(), json!(m.interactivity));
        o.insert("groups".into(), json!(m.groups));
        o.insert("inputs".into(), json!(m.inputs));
        o.insert("images".into(), json!(m.images));
        // What the workload was asked to be (from `config`), and what was sent.
        let mut workload = match &self.config.workload {
            Some(w) => json!(w),
            None => json!({}),
        };
        workload["measured"] = json!(m.workload);
        o.insert("workload".into(), workload);
        o.insert("cost".into(), json!(self.cost));
        o.insert("quality".into(), json!(m.quality));
        o.insert("structured_output".into(), json!(m.structured_output));
        o.insert("warnings".into(), json!(self.warnings));
        o.insert("server_metrics".into(), json!(self.server_metrics));
        o.insert("shards".into(), json!(self.shards));
        if self.gpu_metrics.is_some() {
            o.insert("gpu_metrics".into(), json!(self.gpu_metrics));
        }
        o.insert("timeseries".into(), json!(m.timeseries));
        o.insert("run".into(), self.run_section());
        o.insert("model_id".into(), json!(self.config.model));
        o.insert("config".into(), self.config.to_value());
        o.insert(
            "tool".into(),
            json!({"name": "goodput", "version": env!("CARGO_PKG_VERSION")}),
        );
        Value::Object(o)
    }

    /// vLLM's flat totals: requests, duration, tokens, throughputs,
    /// goodput and the load asked for.
    fn insert_totals(&self, o: &mut Map<String, Value>) {
        let m = &self.metrics;
        o.insert("completed".into(), json!(m.completed));
        o.insert("failed".into(), json!(m.failed));
        o.insert("incomplete".into(), json!(m.incomplete));
        o.insert("duration".into(), json!(m.duration_s));
        o.insert("total_input_tokens".into(), json!(m.total_input_tokens));
        o.insert("total_output_tokens".into(), json!(m.total_output_tokens));
        o.insert(
            "request_throughput".into(),
            json!(m.throughput.request.value),
        );
        o.insert("output_throughput".into(), json!(m.throughput.output.value));
        o.insert(
            "total_token_throughput".into(),
            json!(m.throughput.total_token),
        );
        o.insert("input_throughput".into(), json!(m.throughput.input));
        o.insert(
            "streamed_output_throughput".into(),
            json!(m.throughput.streamed_output),
        );
        o.insert(
            "request_goodput".into(),
            json!(m.slo.as_ref().map(|s| s.request_goodput)),
        );
        o.insert(
            "max_concurrency".into(),
            json!(self.config.load.concurrency_cap()),
        );
        o.insert("request_rate".into(), rate_value(&self.config.load));
    }

    /// One distribution object per registry metric (null where the run has
    /// none) and, for metrics vLLM reports, its flat keys (`mean_ttft_ms`,
    /// `p99_ttft_ms`, ...) as a view over it; returns the `ci` object: each
    /// estimate's 95 % interval.
    fn insert_distributions(&self, o: &mut Map<String, Value>) -> Map<String, Value> {
        let m = &self.metrics;
        let mut ci = Map::new();
        ci.insert("request_throughput".into(), interval(&m.throughput.request));
        ci.insert("output_throughput".into(), interval(&m.throughput.output));
        for metric in Metric::ALL {
            let key = metric.key();
            let Some(d) = m.get(metric) else {
                o.insert(key.into(), Value::Null);
                continue;
            };
            o.insert(key.into(), json!(d));
            if !metric.info().vllm_keys {
                continue;
            }
            // vLLM's flat keys, a view over the distribution.
            o.insert(format!("mean_{key}_ms"), json!(d.mean.value));
            o.insert(format!("std_{key}_ms"), json!(d.std));
            let mut c = Map::new();
            c.insert("mean".into(), interval(&d.mean));
            for (p, e) in &d.percentiles {
                if *p == 50.0 {
                    o.insert(format!("median_{key}_ms"), json!(e.value));
                }
                o.insert(format!("p{}_{key}_ms", pct_label(*p)), json!(e.value));
                c.insert(format!("p{}", pct_label(*p)), interval(e));
            }
            c.insert("method".into(), json!(d.ci_method));
            ci.insert(key.into(), Value::Object(c));
        }
        ci
    }

    /// The `run` object: its id and clock, what was sent, how it ended,
    /// what the server did to pooled connections, and the notes.
    fn run_section(&self) -> Value {
        let m = &self.metrics;
        json!({
            "run_id": self.run_id,
            "started_at": self.started_at,
            "clock_origin_monotonic_ns": self.clock_origin_monotonic_ns,
            "warmup_requests": self.exec.sent_warmup,
            "sent_measured": self.exec.sent_measured,
            "sent": m.sent,
            "interrupted": self.exec.interrupted,
            "drain_timed_out": self.exec.drain_timed_out,
            "source_exhausted": self.exec.source_exhausted,
            "ramp_end_ns": self.exec.ramp_end_ns,
            "records_lost": self.exec.records_lost,
            "stale_connections_discarded": self.connections.stale_discarded,
            "stale_reuse_resent": self.connections.stale_resent,
            "connection_pooling_stopped": self.connections.pooling_stopped,
            "early_stop": self.early_stop,
            "notes": self.notes,
        })
    }

    /// Read a results document back.
    pub fn from_document(doc: &Value) -> Result<RunResult, String> {
        let mut distributions = Distributions::new();
        for metric in Metric::ALL {
            if let Some(v) = doc.get(metric.key()).filter(|v| !v.is_null()) {
                let d = serde_json::from_value(v.clone())
                    .map_err(|e| format!("'{}': {e}", metric.key()))?;
                distributions.insert(metric, d);
            }
        }
        let run = &doc["run"];
        let ci = &doc["ci"];
        let estimate = |key: &str| -> Result<Estimate, String> {
            Ok(Estimate {
                value: field(doc, key)?,
                lo: ci[key][0].as_f64(),
                hi: ci[key][1].as_f64(),
            })
        };
        let metrics = RunMetrics {
            completed: field(doc, "completed")?,
            failed: field(doc, "failed")?,
            incomplete: field(doc, "incomplete")?,
            sent: field(doc, "run.sent")?,
            duration_s: field(doc, "duration")?,
            total_input_tokens: field(doc, "total_input_tokens")?,
            total_output_tokens: field(doc, "total_output_tokens")?,
            throughput: crate::measure::metrics::Throughput {
                request: estimate("request_throughput")?,
                output: estimate("output_throughput")?,
                input: field(doc, "input_throughput")?,
                // Documents before it had none: the completed requests' figure.
                streamed_output: field::<Option<f64>>(doc, "streamed_output_throughput")?
                    .unwrap_or(field(doc, "output_throughput")?),
                total_token: field(doc, "total_token_throughput")?,
            },
            steady_state: field(doc, "steady_state")?,
            achieved_request_rate: field(doc, "achieved_request_rate")?,
            mean_in_flight: field(doc, "mean_in_flight")?,
            distributions,
            errors: field(doc, "errors")?,
            tokens: field(doc, "tokens")?,
            workload: field::<Option<_>>(doc, "workload.measured")?.unwrap_or_default(),
            quality: field(doc, "quality")?,
            timeseries: field(doc, "timeseries")?,
            saturation: field(doc, "saturation")?,
            slo: field(doc, "slo")?,
            schedule_control: field(doc, "schedule_control")?,
            sessions: field(doc, "sessions")?,
            // Documents before them had none.
            crowding: field::<Option<_>>(doc, "crowding")?,
            tasks: field::<Option<_>>(doc, "tasks")?,
            interactivity: field::<Option<_>>(doc, "interactivity")?,
            groups: field::<Option<_>>(doc, "groups")?,
            // Documents before them had none.
            inputs: field::<Option<_>>(doc, "inputs")?,
            images: field::<Option<_>>(doc, "images")?,
            structured_output: field::<Option<_>>(doc, "structured_output")?,
        };
        let mut config: RunConfig = field(doc, "config")?;
        // The flat keys are the view a reader sees first; where an older
        // document's differ from its config, they are what it reported.
        config.model = field(doc, "model_id")?;
        config.tokenizer = field(doc, "tokens.tokenizer")?;
        Ok(RunResult {
            run_id: field(run, "run_id")?,
            config,
            metrics,
            exec: ExecSummary {
                sent_warmup: field(run, "warmup_requests")?,
                sent_measured: field(run, "sent_measured")?,
                interrupted: field(run, "interrupted")?,
                drain_timed_out: field(run, "drain_timed_out")?,
                source_exhausted: field(run, "source_exhausted")?,
                ramp_end_ns: field(run, "ramp_end_ns")?,
                records_lost: field(run, "records_lost")?,
            },
            connections: crate::request::client::ConnectionStats {
                stale_discarded: field(run, "stale_connections_discarded")?,
                stale_resent: field::<Option<u64>>(run, "stale_reuse_resent")?.unwrap_or(0),
                pooling_stopped: field::<Option<bool>>(run, "connection_pooling_stopped")?
                    .unwrap_or(false),
            },
            early_stop: field(run, "early_stop")?,
            cost: field(doc, "cost")?,
            notes: field(run, "notes")?,
            warnings: field::<Option<_>>(doc, "warnings")?.unwrap_or_default(),
            started_at: field(run, "started_at")?,
            clock_origin_monotonic_ns: field(run, "clock_origin_monotonic_ns")?,
            output_hashes: Vec::new(),
            server_metrics: field::<Option<_>>(doc, "server_metrics")?,
            gpu_metrics: field::<Option<_>>(doc, "gpu_metrics")?,
            shards: field::<Option<_>>(doc, "shards")?,
        })
    }
}

impl Serialize for RunResult {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_document().serialize(s)
    }
}

impl<'de> Deserialize<'de> for RunResult {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        RunResult::from_document(&v).map_err(D::Error::custom)
    }
}

/// Current UTC time as RFC 3339, to the second: `2024-06-19T15:22:45Z`.
pub fn now_rfc3339() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A result written as JSON reads back equal, vLLM view and all.
    #[test]
    fn results_round_trip_through_json() {
        let r = crate::output::report::console::tests::sample_result();
        let text = serde_json::to_string(&r).unwrap();
        let back: RunResult = serde_json::from_str(&text).unwrap();
        assert_eq!(back, r);
        let doc: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(doc["p99_ttft_ms"], doc["ttft"]["p99_ms"]);
        assert_eq!(
            doc["request_throughput"],
            json!(r.metrics.throughput.request.value)
        );
    }
}
