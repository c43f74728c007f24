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
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Endpoint::Chat => "chat",
            Endpoint::Completions => "completions",
            Endpoint::Embeddings => "embeddings",
            Endpoint::Rerank => "rerank",
            Endpoint::Score => "score",
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

impl std::str::FromStr for Endpoint {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "chat" => Ok(Endpoint::Chat),
            "completions" => Ok(Endpoint::Completions),
            "embeddings" => Ok(Endpoint::Embeddings),
            "rerank" => Ok(Endpoint::Rerank),
            "score" => Ok(Endpoint::Score),
            other => Err(format!(
                "invalid endpoint '{other}': valid values are chat, completions, embeddings, rerank and score"
            )),
        }
    }
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
