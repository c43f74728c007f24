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

use serde::Serialize;

use crate::measure::metrics::TokenSource;
use crate::request::record::Phase;

use crate::measure::metrics::RequestMetrics;
use crate::request::record::RequestRecord;

/// Where record lines go, kept across the runs of a sweep.
#[derive(Default)]
pub struct RecordsSink {
    writer: Option<Box<dyn Write + Send>>,
    /// Per-event arrival offsets in each line (`--records-itl`).
    itl: bool,
    /// Each request's generated text in its line (`--records-text`).
    text: bool,
    /// The first write error; writing stops there.
    error: Option<String>,
    /// The line being formatted, reused from one record to the next.
    line: Vec<u8>,
}

impl RecordsSink {
    /// Lines go to `writer` (none: nothing is written); `itl` adds each
    /// request's event times (`--records-itl`).
    pub fn new(writer: Option<Box<dyn Write + Send>>, itl: bool) -> Self {
        RecordsSink {
            writer,
            itl,
            text: false,
            error: None,
            line: Vec::with_capacity(1024),
        }
    }

    /// With each request's generated text in its line, as `output_text`.
    pub fn with_text(mut self, text: bool) -> Self {
        self.text = text;
        self
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
        if self.text {
            with_text(&mut self.line, &rec.output_text);
        }
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

/// The request's event times in ms after its send, as the records file
/// writes them, without collecting them first.
struct EventTimes<'a> {
    rec: &'a RequestRecord,
    send: u64,
}

impl Serialize for EventTimes<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let send = self.send as f64;
        s.collect_seq(
            self.rec
                .events
                .iter()
                .map(|e| round3((e.at_ns as f64 - send) / 1e6)),
        )
    }
}

/// One records-file line. Its fields are in the byte order of their keys,
/// the order the `json!` map this replaced wrote them in (serde_json's map
/// is a BTreeMap), so the file is byte for byte what it was.
#[derive(Serialize)]
struct Line<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    agent: Option<&'a crate::request::record::AgentCall>,
    cached_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    class: Option<&'a str>,
    client_input_tokens: Option<u32>,
    client_output_tokens: Option<u32>,
    connect_ms: Option<f64>,
    done_s: f64,
    e2el_ms: Option<f64>,
    error: Option<&'a str>,
    error_kind: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    event_times_ms: Option<EventTimes<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    event_tokens: Option<&'a [u32]>,
    events: usize,
    finish_reason: Option<&'a str>,
    http_status: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    image_bytes: Option<Option<u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    images: Option<u32>,
    input_token_source: Option<TokenSource>,
    input_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    inputs: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<&'a str>,
    ok: bool,
    output_tokens: u32,
    phase: Phase,
    reasoning_tokens: Option<u32>,
    request_id: u64,
    retry_after: Option<&'a str>,
    run_id: &'a str,
    sched_s: f64,
    schedule_lag_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    schema_error: Option<Option<&'a str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    schema_valid: Option<Option<bool>>,
    send_s: Option<f64>,
    server_completion_tokens: Option<u32>,
    server_prompt_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    session_id: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    shard: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    time_to_first_tool_call_ms: Option<Option<f64>>,
    token_source: TokenSource,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_calls: Option<Option<u32>>,
    tpot_ms: Option<f64>,
    ttft_ms: Option<f64>,
    ttft_sched_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    turn: Option<u32>,
}

/// One line of the records file. Written through a struct rather than a
/// `json!` map: the map allocated every key and value, about 30,000
/// instructions a request (callgrind, open loop), the aggregator's largest
/// cost at thousands of requests a second.
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
    let tools = rec.output_check.is_some() || rec.t_first_tool_call.is_some();
    let line = Line {
        agent: rec.agent.as_deref(),
        cached_tokens: usage.cached_tokens,
        class: rec.class.as_deref(),
        client_input_tokens: m.client_input_tokens,
        client_output_tokens: m.client_output_tokens,
        connect_ms: opt(m.connect_ms),
        done_s: secs(rec.t_done),
        e2el_ms: opt(m.e2el_ms),
        error: rec.error.as_ref().map(|e| e.message.as_str()),
        error_kind: rec.error.as_ref().map(|e| e.kind.as_str()),
        event_times_ms: itl.then_some(EventTimes {
            rec,
            send: rec.t_send.unwrap_or(rec.t_sched),
        }),
        event_tokens: itl.then_some(m.event_tokens.as_slice()),
        events: rec.events.len(),
        finish_reason: rec.finish_reason.as_deref(),
        http_status: rec.http_status,
        image_bytes: rec.images.map(|_| rec.image_bytes),
        images: rec.images,
        input_token_source: m.input_source,
        input_tokens: m.input_tokens,
        inputs: rec.inputs,
        model: rec.model.as_deref(),
        ok: rec.ok(),
        output_tokens: m.output_tokens,
        phase: rec.phase(),
        reasoning_tokens: usage.reasoning_tokens,
        request_id: rec.request_id,
        retry_after: rec.error.as_ref().and_then(|e| e.retry_after.as_deref()),
        run_id: &ctx.run_id,
        sched_s: secs(rec.t_sched),
        schedule_lag_ms: opt(m.schedule_lag_ms),
        schema_error: tools.then_some(m.schema_error.as_deref()),
        schema_valid: tools.then_some(m.schema_valid),
        send_s: rec.t_send.map(secs),
        server_completion_tokens: usage.completion_tokens,
        server_prompt_tokens: usage.prompt_tokens,
        session_id: rec.session.map(|s| s.0),
        shard: ctx.sharded.then_some(rec.shard),
        time_to_first_tool_call_ms: tools.then(|| opt(m.time_to_first_tool_call_ms)),
        token_source: m.output_source,
        tool_calls: tools.then_some(m.tool_calls),
        tpot_ms: opt(m.tpot_ms),
        ttft_ms: opt(m.ttft_ms),
        ttft_sched_ms: opt(m.ttft_sched_ms),
        turn: rec.session.map(|s| s.1),
    };
    let _ = serde_json::to_writer(&mut *out, &line);
    out.push(b'\n');
}

/// `line` (one JSON object and its newline) with `"output_text"` added as
/// its last key.
fn with_text(line: &mut Vec<u8>, text: &str) {
    if line.ends_with(b"}\n") {
        line.truncate(line.len() - 2);
        line.extend_from_slice(b",\"output_text\":");
        let _ = serde_json::to_writer(&mut *line, text);
        line.extend_from_slice(b"}\n");
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;
    use crate::request::record::{ErrorKind, Event, RequestError, ServerUsage};

    /// The `json!` writer the struct replaced, kept as the reference.
    fn json_line(
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
        if let Some(agent) = &rec.agent {
            v["agent"] = json!(agent);
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

    fn records() -> Vec<RequestRecord> {
        let mut plain = RequestRecord {
            request_id: 7,
            t_sched: 1_000,
            t_send: Some(2_000_000),
            t_done: 90_000_000,
            finish_reason: Some("length".into()),
            http_status: Some(200),
            usage: Some(ServerUsage {
                prompt_tokens: Some(32),
                completion_tokens: Some(2),
                cached_tokens: None,
                reasoning_tokens: Some(1),
            }),
            ..Default::default()
        };
        for (i, at) in [51_234_567u64, 61_000_001].into_iter().enumerate() {
            plain.output_text.push_str(" a");
            plain.events.push(Event {
                at_ns: at,
                text_end: 2 * (i as u32 + 1),
                usage_completion_tokens: None,
                reasoning: false,
            });
        }
        let mut all = plain.clone();
        all.shard = 3;
        all.model = Some("m \"x\"".into());
        all.class = Some("batch".into());
        all.inputs = Some(4);
        all.images = Some(2);
        all.session = Some((9, 1, 0));
        all.t_first_tool_call = Some(40_000_000);
        let mut failed = RequestRecord {
            request_id: 8,
            t_send: None,
            error: Some(RequestError {
                kind: ErrorKind::Timeout,
                message: "idle \n timeout".into(),
                retry_after: Some("3".into()),
            }),
            ..Default::default()
        };
        failed.t_done = 5;
        vec![plain, all, failed]
    }

    /// `--records-text` adds the generated text, escaped, as the last key.
    #[test]
    fn a_line_can_carry_the_generated_text() {
        let tok = goodput_common::tokenizer::Tokenizer::from_spec("none").unwrap();
        let ctx = LineContext {
            run_id: "r1".into(),
            origin_ns: 500,
            sharded: false,
        };
        let buffer = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        struct Shared(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
        impl std::io::Write for Shared {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(b);
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let mut sink =
            RecordsSink::new(Some(Box::new(Shared(buffer.clone()))), false).with_text(true);
        for mut rec in records() {
            rec.output_text = "say \"hi\"\n".into();
            let m = RequestMetrics::derive(&rec, &tok);
            sink.append(&rec, &m, &ctx);
        }
        let bytes = buffer.lock().unwrap().clone();
        for line in String::from_utf8(bytes).unwrap().lines() {
            let v: Value = serde_json::from_str(line).unwrap();
            assert_eq!(v["output_text"], "say \"hi\"\n");
            assert_eq!(v["run_id"], "r1");
        }
    }

    #[test]
    fn a_line_is_byte_for_byte_what_the_json_map_wrote() {
        let tok = goodput_common::tokenizer::Tokenizer::from_spec("none").unwrap();
        for sharded in [false, true] {
            let ctx = LineContext {
                run_id: "r1".into(),
                origin_ns: 500,
                sharded,
            };
            for rec in records() {
                let m = RequestMetrics::derive(&rec, &tok);
                for itl in [false, true] {
                    let (mut new, mut old) = (Vec::new(), Vec::new());
                    record_line(&mut new, &rec, &m, itl, &ctx);
                    json_line(&mut old, &rec, &m, itl, &ctx);
                    assert_eq!(String::from_utf8_lossy(&new), String::from_utf8_lossy(&old));
                }
            }
        }
    }
}
