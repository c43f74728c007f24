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
    /// `/v1/embeddings`: a batch of inputs per request, answered whole.
    Embeddings,
    /// `/v1/rerank` (Cohere's and Jina's shape, as vLLM serves it): a query
    /// and a batch of documents, answered whole.
    Rerank,
    /// vLLM's `/v1/score` (also served as `/score`): `text_1` against a
    /// batch of `text_2`, answered whole.
    Score,
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
            Endpoint::Embeddings => "/embeddings",
            Endpoint::Rerank => "/rerank",
            Endpoint::Score => "/score",
            Endpoint::Responses => "/responses",
            Endpoint::Messages => "/messages",
        }
    }

    /// Its name as `--endpoint` takes it and `Display` prints it (`chat`,
    /// `completions`, ...), the same as its serde name.
    pub fn as_str(self) -> &'static str {
        match self {
            Endpoint::Chat => "chat",
            Endpoint::Completions => "completions",
            Endpoint::Embeddings => "embeddings",
            Endpoint::Rerank => "rerank",
            Endpoint::Score => "score",
            Endpoint::Responses => "responses",
            Endpoint::Messages => "messages",
        }
    }

    /// A pooling endpoint (embeddings, rerank, score): a batch of inputs
    /// per request, no generated tokens, never streamed; its latency is
    /// the whole exchange (E2EL) and TTFT, TPOT and ITL are undefined.
    pub fn is_pooling(self) -> bool {
        matches!(
            self,
            Endpoint::Embeddings | Endpoint::Rerank | Endpoint::Score
        )
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
            "embeddings" => Ok(Endpoint::Embeddings),
            "rerank" => Ok(Endpoint::Rerank),
            "score" => Ok(Endpoint::Score),
            "responses" => Ok(Endpoint::Responses),
            "messages" => Ok(Endpoint::Messages),
            other => Err(format!(
                "invalid endpoint '{other}': valid values are chat, completions, embeddings, rerank, score, responses and messages"
            )),
        }
    }
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
