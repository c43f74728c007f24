//! The OpenAI-compatible wire format, as vLLM speaks it: request bodies,
//! streamed chunks, full responses, errors.
//!
//! Streamed chunks are written by hand from per-request prefixes (the only
//! per-token work is copying a word into a buffer); full responses and
//! errors go through `serde_json`.

use bytes::{BufMut, BytesMut};
use serde::Deserialize;
use serde_json::json;

use crate::engine::FinishedRequest;
use crate::realtime::FinishReason;

pub use goodput_common::Endpoint;

/// The fields of a completion request the simulator honours; others are ignored.
#[derive(Debug, Default, Deserialize)]
pub struct CompletionRequest {
    pub model: Option<String>,
    pub messages: Option<Vec<Message>>,
    pub prompt: Option<Prompt>,
    pub max_tokens: Option<u64>,
    pub max_completion_tokens: Option<u64>,
    pub min_tokens: Option<u64>,
    pub ignore_eos: Option<bool>,
    pub stream: Option<bool>,
    pub stream_options: Option<StreamOptions>,
    pub n: Option<u64>,
    /// 0: greedy decoding, so the same prompt gets the same answer.
    pub temperature: Option<f64>,
    /// Lower is served first under the priority policy (vLLM's field).
    pub priority: Option<i64>,
    /// The Responses API's prompt: a string or a list of messages.
    pub input: Option<Input>,
    /// The Responses API's output cap.
    pub max_output_tokens: Option<u64>,
    /// Tool definitions (chat's, Responses' or Anthropic's shape).
    pub tools: Option<Vec<serde_json::Value>>,
    pub tool_choice: Option<serde_json::Value>,
    pub response_format: Option<serde_json::Value>,
    /// The Responses API's `text.format`.
    pub text: Option<serde_json::Value>,
}

/// The Responses API's `input`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum Input {
    Text(String),
    Messages(Vec<Message>),
}

#[derive(Debug, Default, Deserialize)]
pub struct StreamOptions {
    pub include_usage: Option<bool>,
}

#[derive(Debug, Deserialize)]
pub struct Message {
    pub content: Option<Content>,
}

/// A message's content: a string or a list of parts (only text parts count).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum Content {
    Text(String),
    Parts(Vec<Part>),
}

#[derive(Debug, Deserialize)]
pub struct Part {
    pub text: Option<String>,
    /// `{"type": "image_url", "image_url": {"url": ...}}`
    #[serde(default)]
    pub image_url: Option<ImageUrl>,
}

#[derive(Debug, Deserialize)]
pub struct ImageUrl {
    pub url: String,
}

/// A completions prompt: text, a one-element list of text, or token ids.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum Prompt {
    Text(String),
    Texts(Vec<String>),
    Tokens(Vec<u32>),
    TokenLists(Vec<Vec<u32>>),
}

/// vLLM's error body.
pub fn error_body(status: u16, message: &str) -> String {
    let kind = match status {
        400 => "BadRequestError",
        404 => "NotFoundError",
        429 => "RateLimitError",
        503 => "ServiceUnavailableError",
        _ => "InternalServerError",
    };
    json!({"object": "error", "message": message, "type": kind, "param": null, "code": status})
        .to_string()
}

/// Per-request chunk writer.
#[derive(Debug)]
pub struct ChunkWriter {
    endpoint: Endpoint,
    /// `data: {"id":...,"choices":[{"index":0,`
    prefix: String,
    /// `data: {"id":...,"model":...,`
    usage_prefix: String,
}

impl ChunkWriter {
    pub fn new(endpoint: Endpoint, id: &str, created: u64, model_json: &str) -> Self {
        let object = match endpoint {
            Endpoint::Completions => "text_completion",
            _ => "chat.completion.chunk",
        };
        let head = format!(
            "data: {{\"id\":\"{id}\",\"object\":\"{object}\",\"created\":{created},\"model\":{model_json},"
        );
        ChunkWriter {
            endpoint,
            prefix: format!("{head}\"choices\":[{{\"index\":0,"),
            usage_prefix: head,
        }
    }

    /// Room for one token's chunk (the word plus the fixed parts).
    pub fn chunk_capacity(&self) -> usize {
        self.prefix.len() + 128
    }

    /// The role-only first chunk of a chat stream (empty content).
    pub fn role(&self, buf: &mut BytesMut) {
        if self.endpoint == Endpoint::Chat {
            buf.put_slice(self.prefix.as_bytes());
            buf.put_slice(
                b"\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n",
            );
        }
    }

    /// One token's chunk; `finish` on the last.
    pub fn token(&self, buf: &mut BytesMut, word: &str, finish: Option<FinishReason>) {
        buf.put_slice(self.prefix.as_bytes());
        buf.put_slice(match self.endpoint {
            Endpoint::Completions => b"\"text\":\" ",
            _ => b"\"delta\":{\"content\":\" ",
        });
        buf.put_slice(word.as_bytes());
        buf.put_slice(match self.endpoint {
            Endpoint::Completions => b"\",\"logprobs\":null,\"finish_reason\":",
            _ => b"\"},\"logprobs\":null,\"finish_reason\":",
        });
        match finish {
            Some(r) => {
                buf.put_u8(b'"');
                buf.put_slice(r.as_str().as_bytes());
                buf.put_u8(b'"');
            }
            None => buf.put_slice(b"null"),
        }
        if self.endpoint == Endpoint::Completions {
            buf.put_slice(b",\"stop_reason\":null");
        }
        buf.put_slice(b"}]}\n\n");
    }

    /// The usage chunk (`choices` empty), sent when `include_usage` is set.
    pub fn usage(&self, buf: &mut BytesMut, f: &FinishedRequest) {
        buf.put_slice(self.usage_prefix.as_bytes());
        buf.put_slice(b"\"choices\":[],\"usage\":");
        buf.put_slice(usage_json(f).to_string().as_bytes());
        buf.put_slice(b"}\n\n");
    }

    pub fn done(&self, buf: &mut BytesMut) {
        buf.put_slice(b"data: [DONE]\n\n");
    }

    /// An error event inside a stream.
    pub fn error(&self, buf: &mut BytesMut, status: u16, message: &str) {
        buf.put_slice(b"data: ");
        buf.put_slice(error_body(status, message).as_bytes());
        buf.put_slice(b"\n\n");
    }
}

pub fn usage_json(f: &FinishedRequest) -> serde_json::Value {
    json!({
        "prompt_tokens": f.prompt_tokens,
        "total_tokens": f.prompt_tokens + f.output_tokens,
        "completion_tokens": f.output_tokens,
        "prompt_tokens_details": {"cached_tokens": f.cached_tokens},
    })
}

/// A whole (non-streamed) response.
pub fn full_response(
    endpoint: Endpoint,
    id: &str,
    created: u64,
    model: &str,
    text: &str,
    reason: FinishReason,
    f: &FinishedRequest,
) -> String {
    let choice = match endpoint {
        Endpoint::Chat | Endpoint::Responses | Endpoint::Messages => json!({
            "index": 0,
            "message": {"role": "assistant", "content": text, "tool_calls": []},
            "logprobs": null,
            "finish_reason": reason.as_str(),
            "stop_reason": null,
        }),
        _ => json!({
            "index": 0,
            "text": text,
            "logprobs": null,
            "finish_reason": reason.as_str(),
            "stop_reason": null,
        }),
    };
    let object = match endpoint {
        Endpoint::Completions => "text_completion",
        _ => "chat.completion",
    };
    json!({
        "id": id,
        "object": object,
        "created": created,
        "model": model,
        "choices": [choice],
        "usage": usage_json(f),
    })
    .to_string()
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
            cached_tokens: 0,
            preemptions: 0,
        }
    }

    fn events(buf: &BytesMut) -> Vec<serde_json::Value> {
        std::str::from_utf8(buf)
            .unwrap()
            .split("\n\n")
            .filter_map(|e| e.strip_prefix("data: "))
            .filter(|e| *e != "[DONE]")
            .map(|e| serde_json::from_str(e).unwrap())
            .collect()
    }

    #[test]
    fn chat_chunks_are_valid_json_in_vllm_shape() {
        let w = ChunkWriter::new(Endpoint::Chat, "chatcmpl-1", 7, "\"m\"");
        let mut buf = BytesMut::new();
        w.role(&mut buf);
        w.token(&mut buf, "the", None);
        w.token(&mut buf, "end", Some(FinishReason::Length));
        w.usage(&mut buf, &finished());
        w.done(&mut buf);
        let ev = events(&buf);
        assert_eq!(ev[0]["choices"][0]["delta"]["role"], "assistant");
        assert_eq!(ev[1]["choices"][0]["delta"]["content"], " the");
        assert_eq!(ev[2]["choices"][0]["finish_reason"], "length");
        assert_eq!(ev[3]["usage"]["completion_tokens"], 2);
        assert_eq!(ev[3]["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
        assert!(buf.ends_with(b"data: [DONE]\n\n"));
    }

    #[test]
    fn completion_chunks_carry_text_and_no_role() {
        let w = ChunkWriter::new(Endpoint::Completions, "cmpl-1", 7, "\"m\"");
        let mut buf = BytesMut::new();
        w.role(&mut buf);
        assert!(buf.is_empty());
        w.token(&mut buf, "word", Some(FinishReason::Stop));
        let ev = events(&buf);
        assert_eq!(ev[0]["object"], "text_completion");
        assert_eq!(ev[0]["choices"][0]["text"], " word");
        assert_eq!(ev[0]["choices"][0]["finish_reason"], "stop");
    }
}
