//! The per-request records file (`--records`): one JSON object per line,
//! appended by the aggregator as each request finishes. [`RecordsSink`] is
//! where the lines go; [`record_line`] formats one, pure: a record in, bytes
//! out. Both live here, beside the aggregator, so the pipeline does not
//! reach into the report layer.
//!
//! Times (`sched_s`, `send_s`, `done_s`) are seconds since the run started
//! (`run.clock_origin_monotonic_ns` in the results); `send_s` is null for a
//! request that never got a connection, and `done_s` is set for every
//! request, failures included, so when each ended can be reconstructed.

use std::io::Write;

use serde_json::{json, Value};

use crate::metrics::RequestMetrics;
use crate::record::RequestRecord;

/// Where record lines go, kept across the runs of a sweep.
#[derive(Default)]
pub struct RecordsSink {
    writer: Option<Box<dyn Write + Send>>,
    /// Per-event arrival offsets in each line (`--records-itl`).
    itl: bool,
    /// The first write error; writing stops there.
    error: Option<String>,
    /// The line being formatted, reused from one record to the next.
    line: Vec<u8>,
}

impl RecordsSink {
    pub fn new(writer: Option<Box<dyn Write + Send>>, itl: bool) -> Self {
        RecordsSink {
            writer,
            itl,
            error: None,
            line: Vec::with_capacity(1024),
        }
    }

    /// The write error that stopped the records file, if any.
    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// Append one request's line (written, not yet flushed).
    pub(crate) fn append(&mut self, rec: &RequestRecord, m: &RequestMetrics, ctx: &LineContext) {
        let Some(w) = self.writer.as_mut() else {
            return;
        };
        self.line.clear();
        record_line(&mut self.line, rec, m, self.itl, ctx);
        if let Err(e) = w.write_all(&self.line) {
            self.error = Some(e.to_string());
            self.writer = None;
        }
    }

    /// Flush the lines appended so far (once per batch of records).
    pub(crate) fn flush(&mut self) {
        if let Some(w) = self.writer.as_mut() {
            if let Err(e) = w.flush() {
                self.error = Some(e.to_string());
                self.writer = None;
            }
        }
    }
}

/// What identifies a run's lines.
#[derive(Debug, Clone)]
pub struct LineContext {
    pub run_id: String,
    /// Record times are written as seconds after this (ns on the run clock).
    pub origin_ns: u64,
    /// A sharded run's merged records: each line says its shard.
    pub sharded: bool,
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// Append the JSON line for one request to `out` (with a trailing newline).
fn record_line(
    out: &mut Vec<u8>,
    rec: &RequestRecord,
    m: &RequestMetrics,
    itl: bool,
    ctx: &LineContext,
) {
    let opt = |x: Option<f64>| x.map(round3);
    let secs = |t: u64| t.saturating_sub(ctx.origin_ns) as f64 / 1e9;
    let usage = rec.usage.unwrap_or_default();
    let mut v = json!({
        "run_id": ctx.run_id,
        "request_id": rec.request_id,
        "ok": rec.ok(),
        "error_kind": rec.error.as_ref().map(|e| e.kind.as_str()),
        "error": rec.error.as_ref().map(|e| e.message.as_str()),
        "retry_after": rec.error.as_ref().and_then(|e| e.retry_after.as_deref()),
        "http_status": rec.http_status,
        "phase": rec.phase(),
        "sched_s": secs(rec.t_sched),
        "send_s": rec.t_send.map(secs),
        "done_s": secs(rec.t_done),
        "connect_ms": opt(m.connect_ms),
        "ttft_ms": opt(m.ttft_ms),
        "ttft_sched_ms": opt(m.ttft_sched_ms),
        "tpot_ms": opt(m.tpot_ms),
        "e2el_ms": opt(m.e2el_ms),
        "schedule_lag_ms": opt(m.schedule_lag_ms),
        "input_tokens": m.input_tokens,
        "input_token_source": m.input_source,
        "client_input_tokens": m.client_input_tokens,
        "output_tokens": m.output_tokens,
        "token_source": m.output_source,
        "client_output_tokens": m.client_output_tokens,
        "server_prompt_tokens": usage.prompt_tokens,
        "server_completion_tokens": usage.completion_tokens,
        "cached_tokens": usage.cached_tokens,
        "reasoning_tokens": usage.reasoning_tokens,
        "events": rec.events.len(),
        "finish_reason": rec.finish_reason,
    });
    if ctx.sharded {
        v["shard"] = json!(rec.shard);
    }
    // The model and priority class of a run that mixes them.
    if let Some(model) = &rec.model {
        v["model"] = json!(model);
    }
    if let Some(class) = &rec.class {
        v["class"] = json!(class);
    }
    // What the request carried beyond one prompt, only where it did.
    if let Some(n) = rec.inputs {
        v["inputs"] = json!(n);
    }
    if let Some(n) = rec.images {
        v["images"] = json!(n);
        v["image_bytes"] = json!(rec.image_bytes);
    }
    if let Some((session, turn, _)) = rec.session {
        v["session_id"] = json!(session);
        v["turn"] = json!(turn);
    }
    if rec.output_check.is_some() || rec.t_first_tool_call.is_some() {
        v["time_to_first_tool_call_ms"] = json!(opt(m.time_to_first_tool_call_ms));
        v["tool_calls"] = json!(m.tool_calls);
        v["schema_valid"] = json!(m.schema_valid);
        v["schema_error"] = json!(m.schema_error);
    }
    if itl {
        let send = rec.t_send.unwrap_or(rec.t_sched);
        let times: Vec<Value> = rec
            .events
            .iter()
            .map(|e| json!(round3((e.at_ns as f64 - send as f64) / 1e6)))
            .collect();
        v["event_times_ms"] = Value::Array(times);
        v["event_tokens"] = json!(m.event_tokens);
    }
    let _ = serde_json::to_writer(&mut *out, &v);
    out.push(b'\n');
}
