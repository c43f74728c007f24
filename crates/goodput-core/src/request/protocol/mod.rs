//! The OpenAI-compatible protocol, in one leaf module: which endpoint, what a
//! request body holds, and how a response's events read ([`chunk`]).
//!
//! The workload produces [`PreparedRequest`]s here and the client sends
//! them; neither imports the other. Nothing here does I/O.

pub mod chunk;
mod chunk_fast;
pub mod images;
pub mod messages;
pub mod pooling;
pub mod responses;
pub mod typed;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

pub use goodput_common::Endpoint;

/// One chat message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    pub role: String,
    pub content: String,
}

impl Message {
    pub fn user(content: impl Into<String>) -> Self {
        Message {
            role: "user".into(),
            content: content.into(),
        }
    }

    pub fn assistant(content: impl Into<String>) -> Self {
        Message {
            role: "assistant".into(),
            content: content.into(),
        }
    }
}

/// What a request asks the model to continue.
#[derive(Debug, Clone, Copy)]
pub enum Prompt<'a> {
    /// One user message (chat) or the prompt text (completions).
    Text(&'a str),
    /// A conversation (chat); for completions the contents are joined with newlines.
    Messages(&'a [Message]),
}

/// What every request body of a run shares.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestParams {
    /// The API the bodies are written for.
    pub endpoint: Endpoint,
    /// The body's `model` (a mix may override it per request).
    pub model: String,
    /// Ask for a streamed response (`stream: true`), so token times are seen.
    pub stream: bool,
    /// Send `min_tokens` = `max_tokens` (pins the output length on vLLM/SGLang).
    pub min_tokens: bool,
    /// Send `ignore_eos: true`.
    pub ignore_eos: bool,
    /// Sent only when given.
    pub temperature: Option<f64>,
    /// Tools and response format (`--tools`, `--response-format`), sent
    /// with every request and checked against every answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<std::sync::Arc<crate::request::tools::OutputSpec>>,
}

/// The JSON body of a completion request.
pub fn request_body(params: &RequestParams, prompt: Prompt<'_>, max_tokens: u32) -> Bytes {
    if params.endpoint.is_pooling() {
        // One input (the workload batches them: `workload::inputs`).
        let text = match prompt {
            Prompt::Text(t) => t.to_string(),
            Prompt::Messages(m) => m
                .iter()
                .map(|m| m.content.as_str())
                .collect::<Vec<_>>()
                .join("\n"),
        };
        return pooling::pooling_body(params.endpoint, &params.model, "", &[text]);
    }
    match params.endpoint {
        Endpoint::Responses => return responses::request_body(params, prompt, max_tokens),
        Endpoint::Messages => return messages::request_body(params, prompt, max_tokens),
        _ => {}
    }
    let mut body = serde_json::Map::new();
    body.insert("model".into(), params.model.clone().into());
    match (params.endpoint, prompt) {
        (Endpoint::Chat, Prompt::Text(text)) => {
            body.insert(
                "messages".into(),
                serde_json::json!([{"role": "user", "content": text}]),
            );
        }
        (Endpoint::Chat, Prompt::Messages(messages)) => {
            body.insert(
                "messages".into(),
                serde_json::to_value(messages).unwrap_or_default(),
            );
        }
        (_, Prompt::Messages(messages)) => {
            let joined: Vec<&str> = messages.iter().map(|m| m.content.as_str()).collect();
            body.insert("prompt".into(), joined.join("\n").into());
        }
        (_, Prompt::Text(text)) => {
            body.insert("prompt".into(), text.into());
        }
    }
    body.insert("max_tokens".into(), max_tokens.into());
    shared_fields(params, max_tokens, &mut body);
    if params.stream {
        body.insert(
            "stream_options".into(),
            serde_json::json!({"include_usage": true}),
        );
    }
    // A map of strings, numbers and booleans always serializes.
    Bytes::from(serde_json::to_vec(&body).unwrap_or_default())
}

/// The fields every generating API's body carries alike: the output
/// pins, the temperature, the tools and response format, and `stream`.
pub(crate) fn shared_fields(
    params: &RequestParams,
    max_tokens: u32,
    body: &mut serde_json::Map<String, serde_json::Value>,
) {
    if params.min_tokens {
        body.insert("min_tokens".into(), max_tokens.into());
    }
    if params.ignore_eos {
        body.insert("ignore_eos".into(), true.into());
    }
    if let Some(t) = params.temperature {
        body.insert("temperature".into(), t.into());
    }
    if let Some(o) = &params.output {
        o.insert(params.endpoint, body);
    }
    body.insert("stream".into(), params.stream.into());
}

/// Where a request stands in a multi-turn session.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionTurn {
    pub session_id: u64,
    /// 0-based turn index.
    pub turn: u32,
    /// Turns this session will have.
    pub turns: u32,
    /// The conversation sent with this turn (the next turn appends the
    /// response and a new user message to it).
    pub history: Vec<Message>,
}

/// One request, ready to send.
#[derive(Debug, Clone, Default)]
pub struct PreparedRequest {
    /// Unique within the run, in the order requests were made.
    pub id: u64,
    pub warmup: bool,
    pub body: Bytes,
    /// Prompt tokens by the client tokenizer (None with `--tokenizer none`).
    pub prompt_tokens: Option<u32>,
    pub max_tokens: Option<u32>,
    pub stream: bool,
    /// Leading prompt tokens the workload has already sent in an earlier
    /// request of the run (a shared prefix group seen before, a session's
    /// history, a trace's repeated blocks): what a prefix cache could reuse
    /// at most.
    pub cacheable_tokens: u32,
    /// The expected answer (a dataset row's `reference`), for quality.
    pub reference: Option<std::sync::Arc<str>>,
    /// Set for a turn of a multi-turn session (an agent's call too: its
    /// trajectory is the session).
    pub session: Option<Box<SessionTurn>>,
    /// Set for a call of an agent's trajectory.
    pub agent: Option<std::sync::Arc<crate::request::record::AgentCall>>,
    /// The model its body names, when the run mixes models (`--model a,b`).
    pub model: Option<std::sync::Arc<str>>,
    /// Its priority class, when the run mixes classes (`--priority-mix`).
    pub class: Option<std::sync::Arc<str>>,
    /// A header its class is sent with, rendered `Name: value\r\n`.
    pub header_line: Option<std::sync::Arc<str>>,
    /// Inputs in a pooling request (embeddings, rerank documents, score
    /// texts); `None` for a completion.
    pub inputs: Option<u32>,
    /// Images in a chat request and their encoded bytes (before base64).
    pub images: Option<(u32, u64)>,
    /// What the answer is checked against (`--tools`, `--response-format`).
    pub output_check: Option<std::sync::Arc<crate::request::tools::OutputSpec>>,
}

impl PreparedRequest {
    /// The record of this request scheduled at `t_sched`, before anything
    /// happened to it: what every transport starts from.
    pub fn new_record(&self, t_sched: u64) -> crate::request::record::RequestRecord {
        crate::request::record::RequestRecord {
            request_id: self.id,
            warmup: self.warmup,
            session: self
                .session
                .as_ref()
                .map(|s| (s.session_id, s.turn, s.turns)),
            agent: self.agent.clone(),
            t_sched,
            prompt_tokens_client: self.prompt_tokens,
            cacheable_tokens: self.cacheable_tokens,
            reference: self.reference.clone(),
            max_tokens: self.max_tokens,
            streamed: self.stream,
            model: self.model.clone(),
            class: self.class.clone(),
            inputs: self.inputs,
            images: self.images.map(|(n, _)| n),
            image_bytes: self.images.map(|(_, b)| b),
            output_check: self.output_check.clone(),
            ..Default::default()
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Streamed requests to model "m" with pinned output lengths (a fixture
    /// for the crate's tests).
    pub(crate) fn params(endpoint: Endpoint) -> RequestParams {
        RequestParams {
            endpoint,
            model: "m".into(),
            stream: true,
            min_tokens: true,
            ignore_eos: true,
            temperature: None,
            output: None,
        }
    }

    #[test]
    fn body_pins_output_length() {
        let body = request_body(&params(Endpoint::Chat), Prompt::Text("hi"), 7);
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["messages"][0]["content"], "hi");
        assert_eq!(
            (v["max_tokens"].as_u64(), v["min_tokens"].as_u64()),
            (Some(7), Some(7))
        );
        assert_eq!(v["ignore_eos"], true);
        assert_eq!(v["stream_options"]["include_usage"], true);
        assert!(v.get("temperature").is_none());
        let mut p = params(Endpoint::Completions);
        p.min_tokens = false;
        p.ignore_eos = false;
        p.temperature = Some(0.0);
        let v: serde_json::Value =
            serde_json::from_slice(&request_body(&p, Prompt::Text("hi"), 7)).unwrap();
        assert!(v.get("min_tokens").is_none() && v.get("ignore_eos").is_none());
        assert_eq!(v["prompt"], "hi");
        assert_eq!(v["temperature"], 0.0);
    }

    #[test]
    fn conversations_are_sent_whole() {
        let history = [
            Message::user("a"),
            Message::assistant("b"),
            Message::user("c"),
        ];
        let v: serde_json::Value = serde_json::from_slice(&request_body(
            &params(Endpoint::Chat),
            Prompt::Messages(&history),
            3,
        ))
        .unwrap();
        assert_eq!(v["messages"].as_array().unwrap().len(), 3);
        assert_eq!(v["messages"][1]["role"], "assistant");
        let v: serde_json::Value = serde_json::from_slice(&request_body(
            &params(Endpoint::Completions),
            Prompt::Messages(&history),
            3,
        ))
        .unwrap();
        assert_eq!(v["prompt"], "a\nb\nc");
    }
}
