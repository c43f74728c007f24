//! OpenAI's Responses API (`POST /v1/responses`; vLLM serves it too): the
//! request body, and its stream's events read into a [`TypedEvent`].
//!
//! Content-bearing events are `response.output_text.delta` (answer),
//! `response.reasoning_text.delta` and `response.reasoning_summary_text.delta`
//! (reasoning) and `response.function_call_arguments.delta` (tool-call
//! arguments); a function call begins with `response.output_item.added`
//! whose item is a `function_call`. The lifecycle events (`created`,
//! `in_progress`, `content_part.added`, `*.done`) carry no content and are
//! not timed. `response.completed` ends the stream with the usage
//! (`input_tokens`, `output_tokens`, their details); `response.incomplete`
//! ends it short (max output tokens: a `length` finish); `response.failed`
//! and `error` are the server's failures. There is no `[DONE]`.

use std::borrow::Cow;

use bytes::Bytes;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::typed::{Part, TypedEvent, WholeAnswer};
use super::{Prompt, RequestParams};
use crate::request::record::ServerUsage;
use crate::request::tools::ToolCallRecord;

/// `{"model","input","max_output_tokens","stream"}`: the prompt as a
/// string, a conversation as `[{"role","content"}]`.
pub fn request_body(params: &RequestParams, prompt: Prompt<'_>, max_tokens: u32) -> Bytes {
    let mut body = Map::new();
    body.insert("model".into(), params.model.clone().into());
    match prompt {
        Prompt::Text(text) => body.insert("input".into(), text.into()),
        Prompt::Messages(m) => {
            body.insert("input".into(), serde_json::to_value(m).unwrap_or_default())
        }
    };
    body.insert("max_output_tokens".into(), max_tokens.into());
    super::shared_fields(params, max_tokens, &mut body);
    Bytes::from(serde_json::to_vec(&Value::Object(body)).unwrap_or_default())
}

#[derive(Deserialize)]
struct RawEvent<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    delta: Option<Cow<'a, str>>,
    #[serde(default)]
    output_index: Option<u32>,
    #[serde(default)]
    item: Option<Value>,
    #[serde(default)]
    response: Option<ResponseObject>,
    /// The `error` event's own fields.
    #[serde(default)]
    code: Option<Value>,
    #[serde(default)]
    message: Option<String>,
}

#[derive(Deserialize, Default)]
struct ResponseObject {
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    usage: Option<UsageJson>,
    #[serde(default)]
    incomplete_details: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
    #[serde(default)]
    output: Vec<Value>,
}

#[derive(Deserialize, Default, Clone, Copy)]
struct UsageJson {
    #[serde(default)]
    input_tokens: Option<u32>,
    #[serde(default)]
    output_tokens: Option<u32>,
    #[serde(default)]
    input_tokens_details: Option<Details>,
    #[serde(default)]
    output_tokens_details: Option<Details>,
}

#[derive(Deserialize, Default, Clone, Copy)]
struct Details {
    #[serde(default)]
    cached_tokens: Option<u32>,
    #[serde(default)]
    reasoning_tokens: Option<u32>,
}

impl From<UsageJson> for ServerUsage {
    fn from(u: UsageJson) -> ServerUsage {
        ServerUsage {
            prompt_tokens: u.input_tokens,
            completion_tokens: u.output_tokens,
            reasoning_tokens: u.output_tokens_details.and_then(|d| d.reasoning_tokens),
            cached_tokens: u.input_tokens_details.and_then(|d| d.cached_tokens),
        }
    }
}

fn error_text(e: &Value) -> String {
    let msg = e.get("message").and_then(Value::as_str);
    let code = e
        .get("code")
        .or_else(|| e.get("type"))
        .and_then(Value::as_str);
    match (code, msg) {
        (Some(c), Some(m)) => format!("{c}: {m}"),
        (None, Some(m)) => m.to_string(),
        _ => e.to_string(),
    }
}

/// The finish of a finished response object.
fn finish(r: &ResponseObject) -> Option<&'static str> {
    match r.status.as_deref() {
        Some("completed") => Some("stop"),
        Some("incomplete") => Some(
            match r
                .incomplete_details
                .as_ref()
                .and_then(|d| d.get("reason"))
                .and_then(Value::as_str)
            {
                Some("content_filter") => "content_filter",
                _ => "length",
            },
        ),
        _ => None,
    }
}

pub fn parse_event(data: &[u8]) -> Result<TypedEvent<'_>, serde_json::Error> {
    let raw: RawEvent<'_> = serde_json::from_slice(data)?;
    let mut ev = TypedEvent::default();
    match raw.kind.as_ref() {
        "response.output_text.delta" | "response.refusal.delta" => ev.text = raw.delta,
        "response.reasoning_text.delta" | "response.reasoning_summary_text.delta" => {
            ev.text = raw.delta;
            ev.part = Part::Reasoning;
        }
        "response.function_call_arguments.delta" => {
            ev.text = raw.delta;
            ev.part = Part::ToolArguments;
            ev.tool_index = raw.output_index;
        }
        "response.output_item.added" => {
            let item = raw.item.unwrap_or_default();
            if item.get("type").and_then(Value::as_str) == Some("function_call") {
                let name = item.get("name").and_then(Value::as_str).unwrap_or_default();
                ev.tool_start = Some(Cow::Owned(name.to_string()));
                ev.tool_index = raw.output_index;
            }
        }
        "response.completed" | "response.incomplete" => {
            let r = raw.response.unwrap_or_default();
            ev.usage = r.usage.map(Into::into);
            ev.finish_reason = finish(&r).or(Some(if raw.kind == "response.completed" {
                "stop"
            } else {
                "length"
            }));
            ev.end = true;
        }
        "response.failed" => {
            let r = raw.response.unwrap_or_default();
            ev.error = Some(
                r.error
                    .as_ref()
                    .map(error_text)
                    .unwrap_or_else(|| "response.failed".into()),
            );
        }
        "error" => {
            let code = raw.code.as_ref().and_then(Value::as_str);
            let msg = raw.message.as_deref().unwrap_or("error event");
            ev.error = Some(match code {
                Some(c) => format!("{c}: {msg}"),
                None => msg.to_string(),
            });
        }
        _ => {}
    }
    Ok(ev)
}

/// A whole response object: `output[]` items (`message` with
/// `output_text` parts, `function_call` with `arguments`, `reasoning`
/// with summary or content text) and `usage`.
pub fn parse_whole(body: &[u8]) -> Result<WholeAnswer, serde_json::Error> {
    let v: Value = serde_json::from_slice(body)?;
    let mut a = WholeAnswer::default();
    if let Some(e) = v.get("error").filter(|e| !e.is_null()) {
        a.error = Some(error_text(e));
        return Ok(a);
    }
    let r: ResponseObject = serde_json::from_value(v).unwrap_or_default();
    let text_of = |parts: Option<&Value>, out: &mut String| {
        for p in parts.and_then(Value::as_array).into_iter().flatten() {
            if let Some(t) = p.get("text").and_then(Value::as_str) {
                out.push_str(t);
            }
        }
    };
    for item in &r.output {
        match item.get("type").and_then(Value::as_str) {
            Some("message") => text_of(item.get("content"), &mut a.answer),
            Some("reasoning") => {
                text_of(item.get("summary"), &mut a.reasoning);
                text_of(item.get("content"), &mut a.reasoning);
            }
            Some("function_call") => a.tool_calls.push(ToolCallRecord {
                name: item
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .into(),
                arguments: item
                    .get("arguments")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .into(),
            }),
            _ => {}
        }
    }
    a.usage = r.usage.map(Into::into);
    a.finish_reason = finish(&r);
    if r.status.as_deref() == Some("failed") {
        a.error = Some(
            r.error
                .as_ref()
                .map(error_text)
                .unwrap_or_else(|| "status failed".into()),
        );
    }
    Ok(a)
}

/// A whole response object as the simulator writes it (the reference the
/// parser is tested against).
#[cfg(test)]
fn example_whole(text: &str, input_tokens: u32, output_tokens: u32) -> Value {
    serde_json::json!({
        "id": "resp_1", "object": "response", "status": "completed",
        "output": [{"type": "message", "role": "assistant",
                    "content": [{"type": "output_text", "text": text, "annotations": []}]}],
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens,
                  "input_tokens_details": {"cached_tokens": 0},
                  "output_tokens_details": {"reasoning_tokens": 0},
                  "total_tokens": input_tokens + output_tokens}
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn content_events_carry_text_and_lifecycle_events_none() {
        let e = parse_event(br#"{"type":"response.output_text.delta","item_id":"m","output_index":0,"content_index":0,"delta":" hi","sequence_number":4}"#).unwrap();
        assert_eq!((e.text.as_deref(), e.part), (Some(" hi"), Part::Answer));
        let e = parse_event(br#"{"type":"response.created","response":{"id":"r","status":"in_progress","output":[]},"sequence_number":0}"#).unwrap();
        assert_eq!(e, TypedEvent::default());
        let e = parse_event(br#"{"type":"response.reasoning_summary_text.delta","delta":"think"}"#)
            .unwrap();
        assert_eq!(e.part, Part::Reasoning);
    }

    #[test]
    fn function_calls_start_and_stream_their_arguments() {
        let e = parse_event(br#"{"type":"response.output_item.added","output_index":1,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"get_weather","arguments":""}}"#).unwrap();
        assert_eq!(
            (e.tool_start.as_deref(), e.tool_index),
            (Some("get_weather"), Some(1))
        );
        let e = parse_event(br#"{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":1,"delta":"{\"city\""}"#).unwrap();
        assert_eq!(
            (e.text.as_deref(), e.part),
            (Some("{\"city\""), Part::ToolArguments)
        );
    }

    #[test]
    fn completion_usage_finish_and_failures() {
        let e = parse_event(br#"{"type":"response.completed","response":{"status":"completed","usage":{"input_tokens":12,"output_tokens":10,"input_tokens_details":{"cached_tokens":4},"output_tokens_details":{"reasoning_tokens":3},"total_tokens":22}}}"#).unwrap();
        let u = e.usage.unwrap();
        assert_eq!(
            (
                u.prompt_tokens,
                u.completion_tokens,
                u.cached_tokens,
                u.reasoning_tokens
            ),
            (Some(12), Some(10), Some(4), Some(3))
        );
        assert_eq!((e.finish_reason, e.end), (Some("stop"), true));
        let e = parse_event(br#"{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"}}}"#).unwrap();
        assert_eq!(e.finish_reason, Some("length"));
        let e =
            parse_event(br#"{"type":"error","code":"server_error","message":"boom","param":null}"#)
                .unwrap();
        assert_eq!(e.error.as_deref(), Some("server_error: boom"));
        let e = parse_event(br#"{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"gone"}}}"#).unwrap();
        assert_eq!(e.error.as_deref(), Some("server_error: gone"));
    }

    #[test]
    fn whole_responses_read_their_output_items() {
        let mut v = example_whole("hello", 5, 2);
        v["output"]
            .as_array_mut()
            .unwrap()
            .push(json!({"type":"function_call","name":"f","arguments":"{\"a\":1}","call_id":"c"}));
        let a = parse_whole(v.to_string().as_bytes()).unwrap();
        assert_eq!(a.answer, "hello");
        assert_eq!(a.tool_calls[0].arguments, "{\"a\":1}");
        assert_eq!(a.usage.unwrap().completion_tokens, Some(2));
        assert_eq!(a.finish_reason, Some("stop"));
    }
}
