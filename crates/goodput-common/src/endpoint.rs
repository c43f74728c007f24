//! Which OpenAI-compatible API a request goes to. One type for the client,
//! the workload and the simulator.

use serde::{Deserialize, Serialize};

/// Which OpenAI-compatible API to call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Endpoint {
    /// `/v1/chat/completions`
    Chat,
    /// `/v1/completions`
    Completions,
    /// `/v1/responses` (OpenAI's Responses API; vLLM serves it too)
    Responses,
    /// `/v1/messages` (Anthropic's Messages API)
    Messages,
}

impl Endpoint {
    /// The route under the API prefix (`/v1`).
    pub fn path(self) -> &'static str {
        match self {
            Endpoint::Chat => "/chat/completions",
            Endpoint::Completions => "/completions",
            Endpoint::Responses => "/responses",
            Endpoint::Messages => "/messages",
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Endpoint::Chat => "chat",
            Endpoint::Completions => "completions",
            Endpoint::Responses => "responses",
            Endpoint::Messages => "messages",
        }
    }
}

impl Endpoint {
    /// Its stream names each event by a `type` (Responses, Anthropic
    /// Messages) rather than sending OpenAI chunks ending in `[DONE]`.
    pub fn typed_events(self) -> bool {
        matches!(self, Endpoint::Responses | Endpoint::Messages)
    }
}

impl std::str::FromStr for Endpoint {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "chat" => Ok(Endpoint::Chat),
            "completions" => Ok(Endpoint::Completions),
            "responses" => Ok(Endpoint::Responses),
            "messages" => Ok(Endpoint::Messages),
            other => Err(format!(
                "invalid endpoint '{other}': valid values are chat, completions, responses and messages"
            )),
        }
    }
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
