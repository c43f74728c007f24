//! Anthropic's Messages API (`POST /v1/messages`): the request body, and its
//! stream's events read into a [`TypedEvent`]. (The `x-api-key` and
//! `anthropic-version` headers are the client's: [`crate::request::client`].)
//!
//! Content-bearing events are `content_block_delta` with a `text_delta`
//! (answer), `thinking_delta` (reasoning) or `input_json_delta` (tool-call
//! input); a tool call begins with a `content_block_start` whose block is
//! `tool_use`. `message_start` carries the input usage
//! (`input_tokens`, `cache_read_input_tokens`, `cache_creation_input_tokens`),
//! `message_delta` the stop reason and the output tokens so far,
//! `message_stop` ends the stream; `ping` and the block starts and stops
//! carry nothing; `error` is the server's failure
//! (`{"type":"error","error":{"type":"overloaded_error","message"}}`).
//!
//! Anthropic's `input_tokens` excludes the tokens read from or written to
//! its prompt cache; the record's prompt tokens are their sum, and its
//! cached tokens the `cache_read_input_tokens`.

use std::borrow::Cow;

use bytes::Bytes;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::typed::{Part, TypedEvent, WholeAnswer};
use super::{Prompt, RequestParams};
use crate::request::record::ServerUsage;
use crate::request::tools::ToolCallRecord;

/// The `anthropic-version` header goodput sends.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// `{"model","max_tokens","messages":[{"role","content"}],"stream"}`.
pub fn request_body(params: &RequestParams, prompt: Prompt<'_>, max_tokens: u32) -> Bytes {
    let mut body = Map::new();
    body.insert("model".into(), params.model.clone().into());
    body.insert("max_tokens".into(), max_tokens.into());
    let messages = match prompt {
        Prompt::Text(text) => serde_json::json!([{"role": "user", "content": text}]),
        Prompt::Messages(m) => serde_json::to_value(m).unwrap_or_default(),
    };
    body.insert("messages".into(), messages);
    super::shared_fields(params, max_tokens, &mut body);
    Bytes::from(serde_json::to_vec(&Value::Object(body)).unwrap_or_default())
}

#[derive(Deserialize)]
struct RawEvent<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default)]
    index: Option<u32>,
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
    #[serde(default)]
    content_block: Option<Value>,
    #[serde(default)]
    message: Option<MessageObject>,
    #[serde(default)]
    usage: Option<UsageJson>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize, Default)]
struct Delta<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    thinking: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    partial_json: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    stop_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize, Default)]
struct MessageObject {
    #[serde(default)]
    usage: Option<UsageJson>,
    #[serde(default)]
    content: Vec<Value>,
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Deserialize, Default, Clone, Copy)]
struct UsageJson {
    #[serde(default)]
    input_tokens: Option<u32>,
    #[serde(default)]
    output_tokens: Option<u32>,
    #[serde(default)]
    cache_read_input_tokens: Option<u32>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u32>,
}

impl UsageJson {
    /// The record's usage; `with_output`: whether `output_tokens` is a
    /// count of the answer (in `message_start` it is a placeholder).
    fn usage(self, with_output: bool) -> ServerUsage {
        let read = self.cache_read_input_tokens;
        let prompt = self
            .input_tokens
            .map(|n| n + read.unwrap_or(0) + self.cache_creation_input_tokens.unwrap_or(0));
        ServerUsage {
            prompt_tokens: prompt,
            completion_tokens: self.output_tokens.filter(|_| with_output),
            reasoning_tokens: None,
            cached_tokens: read,
        }
    }
}

/// Anthropic's stop reason as chat's finish reason.
fn finish(reason: &str) -> &'static str {
    match reason {
        "max_tokens" => "length",
        "tool_use" => "tool_calls",
        "refusal" => "content_filter",
        // end_turn, stop_sequence, pause_turn
        _ => "stop",
    }
}

fn error_text(e: &Value) -> String {
    let kind = e.get("type").and_then(Value::as_str);
    let msg = e.get("message").and_then(Value::as_str);
    match (kind, msg) {
        (Some(k), Some(m)) => format!("{k}: {m}"),
        (None, Some(m)) => m.to_string(),
        _ => e.to_string(),
    }
}

pub fn parse_event(data: &[u8]) -> Result<TypedEvent<'_>, serde_json::Error> {
    let raw: RawEvent<'_> = serde_json::from_slice(data)?;
    let mut ev = TypedEvent::default();
    match raw.kind.as_ref() {
        "content_block_delta" => {
            let d = raw.delta.unwrap_or_default();
            match d.kind.as_deref() {
                Some("text_delta") => ev.text = d.text,
                Some("thinking_delta") => {
                    ev.text = d.thinking;
                    ev.part = Part::Reasoning;
                }
                Some("input_json_delta") => {
                    ev.text = d.partial_json;
                    ev.part = Part::ToolArguments;
                    ev.tool_index = raw.index;
                }
                _ => {}
            }
        }
        "content_block_start" => {
            let block = raw.content_block.unwrap_or_default();
            if block.get("type").and_then(Value::as_str) == Some("tool_use") {
                let name = block
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                ev.tool_start = Some(Cow::Owned(name.to_string()));
                ev.tool_index = raw.index;
            }
        }
        "message_start" => {
            ev.usage = raw.message.and_then(|m| m.usage).map(|u| u.usage(false));
        }
        "message_delta" => {
            ev.usage = raw.usage.map(|u| u.usage(true));
            ev.finish_reason = raw.delta.and_then(|d| d.stop_reason).map(|r| finish(&r));
        }
        "message_stop" => ev.end = true,
        "error" => {
            ev.error = Some(
                raw.error
                    .as_ref()
                    .map(error_text)
                    .unwrap_or_else(|| "error event".into()),
            );
        }
        _ => {}
    }
    Ok(ev)
}

/// A whole message: `content[]` blocks (`text`, `thinking`, `tool_use`
/// with its `input` object), `stop_reason` and `usage`.
pub fn parse_whole(body: &[u8]) -> Result<WholeAnswer, serde_json::Error> {
    let v: Value = serde_json::from_slice(body)?;
    let mut a = WholeAnswer::default();
    if v.get("type").and_then(Value::as_str) == Some("error") {
        a.error = Some(
            v.get("error")
                .map(error_text)
                .unwrap_or_else(|| v.to_string()),
        );
        return Ok(a);
    }
    let m: MessageObject = serde_json::from_value(v).unwrap_or_default();
    for block in &m.content {
        let text = |k: &str| block.get(k).and_then(Value::as_str).unwrap_or_default();
        match block.get("type").and_then(Value::as_str) {
            Some("text") => a.answer.push_str(text("text")),
            Some("thinking") => a.reasoning.push_str(text("thinking")),
            Some("tool_use") => a.tool_calls.push(ToolCallRecord {
                name: text("name").into(),
                arguments: block.get("input").map(Value::to_string).unwrap_or_default(),
            }),
            _ => {}
        }
    }
    a.usage = m.usage.map(|u| u.usage(true));
    a.finish_reason = m.stop_reason.as_deref().map(finish);
    Ok(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_thinking_and_tool_input_deltas() {
        let e = parse_event(br#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}"#).unwrap();
        assert_eq!((e.text.as_deref(), e.part), (Some("Hello"), Part::Answer));
        let e = parse_event(br#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}"#).unwrap();
        assert_eq!(e.part, Part::Reasoning);
        let e = parse_event(br#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}}"#).unwrap();
        assert_eq!(
            (e.tool_start.as_deref(), e.tool_index),
            (Some("get_weather"), Some(1))
        );
        let e = parse_event(br#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city\": \"Pa"}}"#).unwrap();
        assert_eq!((e.part, e.tool_index), (Part::ToolArguments, Some(1)));
        for quiet in [
            r#"{"type":"ping"}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
        ] {
            assert_eq!(
                parse_event(quiet.as_bytes()).unwrap(),
                TypedEvent::default()
            );
        }
    }

    #[test]
    fn usage_in_two_pieces_stop_reasons_and_errors() {
        let e = parse_event(br#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,"usage":{"input_tokens":20,"cache_read_input_tokens":5,"output_tokens":1}}}"#).unwrap();
        let u = e.usage.unwrap();
        assert_eq!(
            (u.prompt_tokens, u.cached_tokens, u.completion_tokens),
            (Some(25), Some(5), None)
        );
        let e = parse_event(br#"{"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"output_tokens":10}}"#).unwrap();
        assert_eq!(
            (e.finish_reason, e.usage.unwrap().completion_tokens),
            (Some("length"), Some(10))
        );
        assert_eq!(finish("end_turn"), "stop");
        assert_eq!(finish("tool_use"), "tool_calls");
        assert!(parse_event(br#"{"type":"message_stop"}"#).unwrap().end);
        let e = parse_event(
            br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        )
        .unwrap();
        assert_eq!(e.error.as_deref(), Some("overloaded_error: Overloaded"));
    }

    #[test]
    fn whole_messages_read_their_blocks() {
        let a = parse_whole(br#"{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"t","name":"f","input":{"a":1}}],"stop_reason":"tool_use","usage":{"input_tokens":3,"output_tokens":4}}"#).unwrap();
        assert_eq!(a.answer, "hi");
        assert_eq!(a.tool_calls[0].arguments, r#"{"a":1}"#);
        assert_eq!(a.finish_reason, Some("tool_calls"));
        assert_eq!(a.usage.unwrap().prompt_tokens, Some(3));
        let a = parse_whole(
            br#"{"type":"error","error":{"type":"overloaded_error","message":"busy"}}"#,
        )
        .unwrap();
        assert_eq!(a.error.as_deref(), Some("overloaded_error: busy"));
    }
}
