//! The simulator's Responses API (`/v1/responses`) and Anthropic Messages
//! (`/v1/messages`) answers, and every API's tool calls and structured
//! output: their exact event sequences, whole bodies and usage blocks,
//! with the same engine timings as chat (one content event per token).
//!
//! Event sequences, as the APIs document them:
//! - Responses: `response.created`, `response.in_progress`,
//!   `response.output_item.added`, `response.content_part.added` (a
//!   message), one `response.output_text.delta` (or
//!   `response.function_call_arguments.delta`) per token, their `.done`
//!   events, `response.output_item.done`, then `response.completed` (or
//!   `response.incomplete` with `max_output_tokens` when the output hit its
//!   cap) carrying `usage`. No `[DONE]`.
//! - Messages: `message_start` (input usage), `content_block_start` (`text`
//!   or `tool_use`), `ping`, one `content_block_delta` per token
//!   (`text_delta` or `input_json_delta`), `content_block_stop`,
//!   `message_delta` (`stop_reason`, output usage), `message_stop`.
//! - Chat with tools: a tool call streamed as
//!   `delta.tool_calls[0].function.arguments` pieces, finishing `tool_calls`.
//!
//! Structured answers and output length: the answer (a tool call's
//! arguments, or content under a `json_schema` response format) is an
//! instance generated from the schema ([`goodput_common::json_schema::example`]),
//! cut into exactly as many pieces as the request's output tokens, so the
//! token count and timing are the engine's: a JSON text longer than the
//! output is split into longer pieces; a shorter one ends in pieces of one
//! space (whitespace after a JSON value keeps it valid). A `schema-violation`
//! share (`--schema-violation`) sends a broken instance instead (its last
//! closing brace dropped), for testing the client's check.

use bytes::{BufMut, BytesMut};
use serde_json::{json, Value};

use super::openai::{error_body, ChunkWriter, CompletionRequest, Endpoint};
use crate::engine::FinishedRequest;
use crate::realtime::FinishReason;

/// What a structured answer is: a tool call (with its function's name) or
/// JSON content, and its pieces, one per output token.
#[derive(Debug, Clone)]
pub struct Structured {
    pub tool: Option<String>,
    pub pieces: Vec<String>,
}

impl Structured {
    pub fn text(&self) -> String {
        self.pieces.concat()
    }
}

/// The schema a request asks its answer to keep to: a tool's (unless
/// `tool_choice` is none; the named tool, else the first) or the
/// response format's; with the tool's name for a tool call.
fn asked_schema(req: &CompletionRequest, endpoint: Endpoint) -> Option<(Option<String>, Value)> {
    let choice = req.tool_choice.as_ref();
    let none = choice.is_some_and(|c| c == "none" || c.get("type").is_some_and(|t| t == "none"));
    let tools = req.tools.as_deref().unwrap_or_default();
    if !tools.is_empty() && !none {
        let named = choice.and_then(|c| {
            c.get("name")
                .or_else(|| c.get("function").and_then(|f| f.get("name")))
                .and_then(Value::as_str)
        });
        let def = |t: &Value| -> (String, Value) {
            let f = t.get("function").unwrap_or(t);
            let name = f
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("tool")
                .to_string();
            let schema = f
                .get("parameters")
                .or_else(|| f.get("input_schema"))
                .cloned()
                .unwrap_or_else(|| json!({"type": "object"}));
            (name, schema)
        };
        let chosen = tools
            .iter()
            .map(def)
            .find(|(n, _)| named.is_none_or(|want| want == n))
            .or_else(|| tools.first().map(def))?;
        return Some((Some(chosen.0), chosen.1));
    }
    let format = match endpoint {
        Endpoint::Responses => req.text.as_ref().and_then(|t| t.get("format")),
        _ => req.response_format.as_ref(),
    }?;
    match format.get("type").and_then(Value::as_str) {
        Some("json_schema") => {
            let schema = format
                .get("json_schema")
                .and_then(|j| j.get("schema"))
                .or_else(|| format.get("schema"))
                .cloned()
                .unwrap_or_else(|| json!({"type": "object"}));
            Some((None, schema))
        }
        Some("json_object") => Some((None, json!({"type": "object"}))),
        _ => None,
    }
}

/// The structured answer of `tokens` pieces a request asks for, if any;
/// `broken`: send an instance that is not valid JSON.
pub fn structured(
    req: &CompletionRequest,
    endpoint: Endpoint,
    seed: u64,
    tokens: usize,
    broken: bool,
) -> Option<Structured> {
    let (tool, schema) = asked_schema(req, endpoint)?;
    let mut text = goodput_common::json_schema::example(&schema, seed).to_string();
    if broken {
        text.pop();
    }
    Some(Structured {
        tool,
        pieces: pieces(&text, tokens.max(1)),
    })
}

/// `text` cut into `n` pieces (see the module's comment).
pub fn pieces(text: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let per = chars.len().div_ceil(n).max(1);
    let mut out: Vec<String> = chars.chunks(per).map(|c| c.iter().collect()).collect();
    out.resize(n, " ".to_string());
    out
}

/// Which wire format a [`TypedWriter`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// Chat chunks with a tool call or JSON content.
    Chat,
    Responses,
    Messages,
}

/// Writes one response's events in its dialect (state: whether it began,
/// the event sequence number, the text so far for the `.done` events).
#[derive(Debug)]
pub struct TypedWriter {
    dialect: Dialect,
    id: String,
    model_json: String,
    created: u64,
    prompt_tokens: usize,
    tool: Option<String>,
    /// Chat's chunk prefix and usage writer.
    chat: Option<ChunkWriter>,
    seq: u64,
    text: String,
}

impl TypedWriter {
    pub fn new(
        endpoint: Endpoint,
        id: &str,
        created: u64,
        model_json: &str,
        prompt_tokens: usize,
        tool: Option<String>,
    ) -> TypedWriter {
        let dialect = match endpoint {
            Endpoint::Responses => Dialect::Responses,
            Endpoint::Messages => Dialect::Messages,
            _ => Dialect::Chat,
        };
        TypedWriter {
            dialect,
            id: id.to_string(),
            model_json: model_json.to_string(),
            created,
            prompt_tokens,
            tool,
            chat: (dialect == Dialect::Chat)
                .then(|| ChunkWriter::new(Endpoint::Chat, id, created, model_json)),
            seq: 0,
            text: String::new(),
        }
    }

    fn event(&mut self, buf: &mut BytesMut, name: &str, mut data: Value) {
        if self.dialect == Dialect::Responses {
            data["sequence_number"] = self.seq.into();
            self.seq += 1;
        }
        buf.put_slice(b"event: ");
        buf.put_slice(name.as_bytes());
        buf.put_slice(b"\ndata: ");
        buf.put_slice(data.to_string().as_bytes());
        buf.put_slice(b"\n\n");
    }

    fn chat_chunk(&self, buf: &mut BytesMut, delta: Value, finish: Option<&str>) {
        let v = json!({
            "id": self.id, "object": "chat.completion.chunk", "created": self.created,
            "model": serde_json::from_str::<Value>(&self.model_json).unwrap_or_default(),
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]
        });
        buf.put_slice(b"data: ");
        buf.put_slice(v.to_string().as_bytes());
        buf.put_slice(b"\n\n");
    }

    fn item(&self) -> Value {
        match &self.tool {
            Some(name) => json!({"type": "function_call", "id": format!("fc_{}", self.id),
                "call_id": format!("call_{}", self.id), "name": name,
                "arguments": self.text, "status": "in_progress"}),
            None => json!({"type": "message", "id": format!("msg_{}", self.id),
                "role": "assistant", "status": "in_progress", "content": []}),
        }
    }

    fn response_object(&self, status: &str) -> Value {
        json!({"id": self.id, "object": "response", "created_at": self.created,
            "model": serde_json::from_str::<Value>(&self.model_json).unwrap_or_default(),
            "status": status, "output": []})
    }

    /// The events before the first token.
    pub fn start(&mut self, buf: &mut BytesMut) {
        match self.dialect {
            Dialect::Chat => {
                let delta = match &self.tool {
                    Some(name) => json!({"role": "assistant", "tool_calls": [{"index": 0,
                        "id": format!("call_{}", self.id), "type": "function",
                        "function": {"name": name, "arguments": ""}}]}),
                    None => json!({"role": "assistant", "content": ""}),
                };
                self.chat_chunk(buf, delta, None);
            }
            Dialect::Responses => {
                let r = self.response_object("in_progress");
                self.event(
                    buf,
                    "response.created",
                    json!({"type": "response.created", "response": r}),
                );
                self.event(
                    buf,
                    "response.in_progress",
                    json!({"type": "response.in_progress", "response": r}),
                );
                let item = self.item();
                self.event(
                    buf,
                    "response.output_item.added",
                    json!({"type": "response.output_item.added", "output_index": 0, "item": item}),
                );
                if self.tool.is_none() {
                    self.event(buf, "response.content_part.added", json!({"type": "response.content_part.added",
                        "item_id": format!("msg_{}", self.id), "output_index": 0, "content_index": 0,
                        "part": {"type": "output_text", "text": "", "annotations": []}}));
                }
            }
            Dialect::Messages => {
                let message = json!({"id": self.id, "type": "message", "role": "assistant",
                    "content": [], "model": serde_json::from_str::<Value>(&self.model_json).unwrap_or_default(),
                    "stop_reason": null, "stop_sequence": null,
                    "usage": {"input_tokens": self.prompt_tokens, "cache_read_input_tokens": 0,
                              "cache_creation_input_tokens": 0, "output_tokens": 1}});
                self.event(
                    buf,
                    "message_start",
                    json!({"type": "message_start", "message": message}),
                );
                let block = match &self.tool {
                    Some(name) => {
                        json!({"type": "tool_use", "id": format!("toolu_{}", self.id), "name": name, "input": {}})
                    }
                    None => json!({"type": "text", "text": ""}),
                };
                self.event(
                    buf,
                    "content_block_start",
                    json!({"type": "content_block_start", "index": 0, "content_block": block}),
                );
                self.event(buf, "ping", json!({"type": "ping"}));
            }
        }
    }

    /// One token's piece of the answer.
    pub fn token(&mut self, buf: &mut BytesMut, text: &str, last: Option<FinishReason>) {
        self.text.push_str(text);
        match (self.dialect, &self.tool) {
            (Dialect::Chat, Some(_)) => {
                let finish = last.map(|_| "tool_calls");
                let delta = json!({"tool_calls": [{"index": 0, "function": {"arguments": text}}]});
                self.chat_chunk(buf, delta, finish);
            }
            (Dialect::Chat, None) => {
                self.chat_chunk(buf, json!({"content": text}), last.map(FinishReason::as_str));
            }
            (Dialect::Responses, Some(_)) => self.event(buf, "response.function_call_arguments.delta",
                json!({"type": "response.function_call_arguments.delta", "item_id": format!("fc_{}", self.id),
                    "output_index": 0, "delta": text})),
            (Dialect::Responses, None) => self.event(buf, "response.output_text.delta",
                json!({"type": "response.output_text.delta", "item_id": format!("msg_{}", self.id),
                    "output_index": 0, "content_index": 0, "delta": text, "logprobs": []})),
            (Dialect::Messages, Some(_)) => self.event(buf, "content_block_delta",
                json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": text}})),
            (Dialect::Messages, None) => self.event(buf, "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}})),
        }
    }

    /// The events after the last token: the done events, the usage, the end.
    pub fn finish(
        &mut self,
        buf: &mut BytesMut,
        f: &FinishedRequest,
        reason: FinishReason,
        include_usage: bool,
    ) {
        match self.dialect {
            Dialect::Chat => {
                if let Some(w) = &self.chat {
                    if include_usage {
                        w.usage(buf, f);
                    }
                    w.done(buf);
                }
            }
            Dialect::Responses => self.finish_responses(buf, f, reason),
            Dialect::Messages => {
                self.event(
                    buf,
                    "content_block_stop",
                    json!({"type": "content_block_stop", "index": 0}),
                );
                let stop = stop_reason(self.tool.is_some(), reason);
                self.event(
                    buf,
                    "message_delta",
                    json!({"type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": null},
                    "usage": messages_usage(f)}),
                );
                self.event(buf, "message_stop", json!({"type": "message_stop"}));
            }
        }
    }

    fn finish_responses(&mut self, buf: &mut BytesMut, f: &FinishedRequest, reason: FinishReason) {
        let text = self.text.clone();
        if self.tool.is_some() {
            self.event(
                buf,
                "response.function_call_arguments.done",
                json!({"type": "response.function_call_arguments.done",
                "item_id": format!("fc_{}", self.id), "output_index": 0, "arguments": text}),
            );
        } else {
            self.event(buf, "response.output_text.done", json!({"type": "response.output_text.done",
                "item_id": format!("msg_{}", self.id), "output_index": 0, "content_index": 0, "text": text}));
            self.event(
                buf,
                "response.content_part.done",
                json!({"type": "response.content_part.done",
                "item_id": format!("msg_{}", self.id), "output_index": 0, "content_index": 0,
                "part": {"type": "output_text", "text": text, "annotations": []}}),
            );
        }
        let item = self.item();
        self.event(
            buf,
            "response.output_item.done",
            json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
        );
        let body = responses_whole(
            &self.id,
            self.created,
            &self.model_json,
            &self.text,
            self.tool.as_deref(),
            reason,
            f,
        );
        let kind = if body["status"] == "incomplete" {
            "response.incomplete"
        } else {
            "response.completed"
        };
        self.event(buf, kind, json!({"type": kind, "response": body}));
    }

    /// An error inside the stream, in the dialect's own shape.
    pub fn error(&mut self, buf: &mut BytesMut, status: u16, message: &str) {
        match self.dialect {
            Dialect::Chat => {
                buf.put_slice(b"data: ");
                buf.put_slice(error_body(status, message).as_bytes());
                buf.put_slice(b"\n\ndata: [DONE]\n\n");
            }
            Dialect::Responses => self.event(
                buf,
                "error",
                json!({"type": "error", "code": "server_error", "message": message, "param": null}),
            ),
            Dialect::Messages => self.event(
                buf,
                "error",
                json!({"type": "error", "error": {"type": "api_error", "message": message}}),
            ),
        }
    }
}

/// Anthropic's stop reason.
fn stop_reason(tool: bool, reason: FinishReason) -> &'static str {
    match (tool, reason) {
        (true, _) => "tool_use",
        (false, FinishReason::Length) => "max_tokens",
        (false, FinishReason::Stop) => "end_turn",
    }
}

/// Anthropic's usage: `input_tokens` without the tokens read from cache.
fn messages_usage(f: &FinishedRequest) -> Value {
    json!({"input_tokens": f.prompt_tokens - f.cached_tokens.min(f.prompt_tokens),
        "cache_read_input_tokens": f.cached_tokens, "cache_creation_input_tokens": 0,
        "output_tokens": f.output_tokens})
}

/// A whole Responses object (also the `response` of `response.completed`).
fn responses_whole(
    id: &str,
    created: u64,
    model_json: &str,
    text: &str,
    tool: Option<&str>,
    reason: FinishReason,
    f: &FinishedRequest,
) -> Value {
    let item = match tool {
        Some(name) => {
            json!({"type": "function_call", "id": format!("fc_{id}"), "call_id": format!("call_{id}"),
            "name": name, "arguments": text, "status": "completed"})
        }
        None => {
            json!({"type": "message", "id": format!("msg_{id}"), "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]})
        }
    };
    let incomplete = tool.is_none() && reason == FinishReason::Length;
    json!({"id": id, "object": "response", "created_at": created,
        "model": serde_json::from_str::<Value>(model_json).unwrap_or_default(),
        "status": if incomplete { "incomplete" } else { "completed" },
        "incomplete_details": if incomplete { json!({"reason": "max_output_tokens"}) } else { Value::Null },
        "output": [item],
        "usage": {"input_tokens": f.prompt_tokens, "input_tokens_details": {"cached_tokens": f.cached_tokens},
            "output_tokens": f.output_tokens, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": f.prompt_tokens + f.output_tokens}})
}

/// A whole (non-streamed) answer in `endpoint`'s shape, for Responses,
/// Messages and chat with a structured answer.
#[allow(clippy::too_many_arguments)]
pub fn whole_body(
    endpoint: Endpoint,
    id: &str,
    created: u64,
    model_json: &str,
    text: &str,
    tool: Option<&str>,
    reason: FinishReason,
    f: &FinishedRequest,
) -> String {
    let model = serde_json::from_str::<Value>(model_json).unwrap_or_default();
    match endpoint {
        Endpoint::Responses => {
            responses_whole(id, created, model_json, text, tool, reason, f).to_string()
        }
        Endpoint::Messages => {
            let block = match tool {
                Some(name) => json!({"type": "tool_use", "id": format!("toolu_{id}"), "name": name,
                    "input": serde_json::from_str::<Value>(text).unwrap_or(Value::String(text.into()))}),
                None => json!({"type": "text", "text": text}),
            };
            json!({"id": id, "type": "message", "role": "assistant", "model": model, "content": [block],
                "stop_reason": stop_reason(tool.is_some(), reason), "stop_sequence": null,
                "usage": messages_usage(f)}).to_string()
        }
        _ => {
            let message = match tool {
                Some(name) => {
                    json!({"role": "assistant", "content": null, "tool_calls": [{"id": format!("call_{id}"),
                    "type": "function", "function": {"name": name, "arguments": text}}]})
                }
                None => json!({"role": "assistant", "content": text, "tool_calls": []}),
            };
            let finish = if tool.is_some() {
                "tool_calls"
            } else {
                reason.as_str()
            };
            json!({"id": id, "object": "chat.completion", "created": created, "model": model,
                "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": finish}],
                "usage": super::openai::usage_json(f)}).to_string()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finished() -> FinishedRequest {
        FinishedRequest {
            id: 1,
            arrival_s: 0.0,
            end_s: 1.0,
            prompt_tokens: 10,
            output_tokens: 2,
            cached_tokens: 4,
            preemptions: 0,
        }
    }

    fn events(buf: &BytesMut) -> Vec<(String, Value)> {
        std::str::from_utf8(buf)
            .unwrap()
            .split("\n\n")
            .filter(|e| !e.is_empty())
            .map(|e| {
                let (name, data) = e.split_once("\ndata: ").unwrap();
                (
                    name.trim_start_matches("event: ").to_string(),
                    serde_json::from_str(data).unwrap(),
                )
            })
            .collect()
    }

    #[test]
    fn responses_stream_in_the_documented_order() {
        let mut w = TypedWriter::new(Endpoint::Responses, "resp_1", 7, "\"m\"", 10, None);
        let mut buf = BytesMut::new();
        w.start(&mut buf);
        w.token(&mut buf, " a", None);
        w.token(&mut buf, " b", Some(FinishReason::Length));
        w.finish(&mut buf, &finished(), FinishReason::Length, false);
        let ev = events(&buf);
        let names: Vec<&str> = ev.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "response.created",
                "response.in_progress",
                "response.output_item.added",
                "response.content_part.added",
                "response.output_text.delta",
                "response.output_text.delta",
                "response.output_text.done",
                "response.content_part.done",
                "response.output_item.done",
                "response.incomplete"
            ]
        );
        for (i, (name, data)) in ev.iter().enumerate() {
            assert_eq!(
                (&data["type"], &data["sequence_number"]),
                (&json!(name), &json!(i))
            );
        }
        let last = &ev.last().unwrap().1["response"];
        assert_eq!(last["usage"]["output_tokens"], 2);
        assert_eq!(last["incomplete_details"]["reason"], "max_output_tokens");
    }

    #[test]
    fn messages_stream_a_tool_call() {
        let mut w = TypedWriter::new(
            Endpoint::Messages,
            "msg_1",
            7,
            "\"m\"",
            10,
            Some("f".into()),
        );
        let mut buf = BytesMut::new();
        w.start(&mut buf);
        w.token(&mut buf, "{\"a\":", None);
        w.token(&mut buf, "1}", Some(FinishReason::Stop));
        w.finish(&mut buf, &finished(), FinishReason::Stop, false);
        let ev = events(&buf);
        assert_eq!(ev[0].1["message"]["usage"]["input_tokens"], 10);
        assert_eq!(ev[1].1["content_block"]["type"], "tool_use");
        assert_eq!(ev[3].1["delta"]["partial_json"], "{\"a\":");
        let delta = &ev[ev.len() - 2].1;
        assert_eq!(delta["delta"]["stop_reason"], "tool_use");
        assert_eq!(
            (
                delta["usage"]["input_tokens"].as_u64(),
                delta["usage"]["cache_read_input_tokens"].as_u64()
            ),
            (Some(6), Some(4))
        );
        assert_eq!(ev.last().unwrap().0, "message_stop");
    }

    #[test]
    fn pieces_keep_the_token_count_and_the_json() {
        let p = pieces("{\"a\":1}", 3);
        assert_eq!(p.len(), 3);
        assert_eq!(p.concat(), "{\"a\":1}");
        let p = pieces("{}", 5);
        assert_eq!((p.len(), p.concat().trim()), (5, "{}"));
    }
}
