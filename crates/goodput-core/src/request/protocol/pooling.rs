//! The pooling endpoints: embeddings, rerank and score. A request carries a
//! batch of inputs and is answered whole, with one result per input and no
//! generated text.
//!
//! Wire formats, from the APIs' public documentation and vLLM's source
//! (`vllm/entrypoints/openai/protocol.py`):
//!
//! - `POST /v1/embeddings` (OpenAI, vLLM): `{"model", "input": [str, ...],
//!   "encoding_format": "float"}` → `{"object": "list", "data": [{"object":
//!   "embedding", "index": i, "embedding": [f, ...]}, ...], "model",
//!   "usage": {"prompt_tokens", "total_tokens"}}`.
//! - `POST /v1/rerank` (Cohere's and Jina's shape, as vLLM serves it):
//!   `{"model", "query", "documents": [str, ...], "top_n"?}` → `{"id",
//!   "model", "results": [{"index", "relevance_score", "document"?}, ...],
//!   "usage": {"total_tokens"}}` (vLLM and Jina count tokens in
//!   `usage.total_tokens`; Cohere bills `meta.billed_units.search_units`,
//!   which are no tokens and are not read).
//! - `POST /v1/score` (vLLM; also `/score`): `{"model", "text_1": query,
//!   "text_2": [str, ...]}` → `{"data": [{"index", "object": "score",
//!   "score"}, ...], "usage": {"prompt_tokens", "total_tokens"}}`.

use bytes::Bytes;
use serde::Deserialize;
use serde_json::json;

use super::Endpoint;

/// The body of a pooling request: `inputs` to embed, or the documents
/// scored against `query` (rerank, score; an empty query when none).
pub fn pooling_body(endpoint: Endpoint, model: &str, query: &str, inputs: &[String]) -> Bytes {
    let body = match endpoint {
        Endpoint::Rerank => json!({
            "model": model,
            "query": query,
            "documents": inputs,
            "top_n": inputs.len(),
        }),
        Endpoint::Score => json!({"model": model, "text_1": query, "text_2": inputs}),
        _ => json!({"model": model, "input": inputs, "encoding_format": "float"}),
    };
    // A tree of strings and numbers always serializes.
    Bytes::from(serde_json::to_vec(&body).unwrap_or_default())
}

/// What a pooling answer said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolingAnswer {
    /// Results in it (`data` or `results`).
    pub results: usize,
    /// Tokens the server counted (`usage.prompt_tokens`, else
    /// `usage.total_tokens`: a pooling request generates none).
    pub prompt_tokens: Option<u32>,
}

#[derive(Deserialize)]
struct Answer {
    #[serde(default)]
    data: Option<Vec<serde::de::IgnoredAny>>,
    #[serde(default)]
    results: Option<Vec<serde::de::IgnoredAny>>,
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Usage {
    #[serde(default)]
    prompt_tokens: Option<u32>,
    #[serde(default)]
    total_tokens: Option<u32>,
}

/// Read a pooling answer: its results (`results` for rerank, `data`
/// otherwise; either is accepted, as servers differ) and its token count.
/// `Err` says what is missing.
pub fn parse_answer(endpoint: Endpoint, body: &[u8]) -> Result<PoolingAnswer, String> {
    let a: Answer = serde_json::from_slice(body).map_err(|e| format!("not valid JSON ({e})"))?;
    let list = match endpoint {
        Endpoint::Rerank => a.results.or(a.data),
        _ => a.data.or(a.results),
    };
    let Some(list) = list else {
        return Err(format!(
            "no '{}' list in the {endpoint} answer",
            if endpoint == Endpoint::Rerank {
                "results"
            } else {
                "data"
            }
        ));
    };
    Ok(PoolingAnswer {
        results: list.len(),
        prompt_tokens: a.usage.and_then(|u| u.prompt_tokens.or(u.total_tokens)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(b: &Bytes) -> serde_json::Value {
        serde_json::from_slice(b).unwrap()
    }

    #[test]
    fn bodies_have_each_apis_shape() {
        let docs = vec!["a b".to_string(), "c".to_string()];
        let v = value(&pooling_body(Endpoint::Embeddings, "m", "", &docs));
        assert_eq!(v["input"], json!(["a b", "c"]));
        assert_eq!(v["encoding_format"], "float");
        let v = value(&pooling_body(Endpoint::Rerank, "m", "q", &docs));
        assert_eq!(
            (v["query"].as_str(), v["top_n"].as_u64()),
            (Some("q"), Some(2))
        );
        assert_eq!(v["documents"][1], "c");
        let v = value(&pooling_body(Endpoint::Score, "m", "q", &docs));
        assert_eq!(
            (v["text_1"].as_str(), v["text_2"][0].as_str()),
            (Some("q"), Some("a b"))
        );
    }

    /// Answers as OpenAI, vLLM, Jina and Cohere document them.
    #[test]
    fn answers_are_counted_from_their_lists_and_usage() {
        let openai = br#"{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,-0.2]},{"object":"embedding","index":1,"embedding":[0.3,0.4]}],"model":"m","usage":{"prompt_tokens":12,"total_tokens":12}}"#;
        assert_eq!(
            parse_answer(Endpoint::Embeddings, openai),
            Ok(PoolingAnswer {
                results: 2,
                prompt_tokens: Some(12)
            })
        );
        let vllm_rerank = br#"{"id":"rerank-1","model":"m","usage":{"total_tokens":40},"results":[{"index":1,"document":{"text":"c"},"relevance_score":0.9},{"index":0,"document":{"text":"a"},"relevance_score":0.1}]}"#;
        assert_eq!(
            parse_answer(Endpoint::Rerank, vllm_rerank).map(|a| (a.results, a.prompt_tokens)),
            Ok((2, Some(40)))
        );
        let cohere = br#"{"id":"x","results":[{"index":0,"relevance_score":0.5}],"meta":{"api_version":{"version":"2"},"billed_units":{"search_units":1}}}"#;
        assert_eq!(
            parse_answer(Endpoint::Rerank, cohere).map(|a| (a.results, a.prompt_tokens)),
            Ok((1, None))
        );
        let score = br#"{"id":"score-1","object":"list","created":1,"model":"m","data":[{"index":0,"object":"score","score":0.7}],"usage":{"prompt_tokens":9,"total_tokens":9}}"#;
        assert_eq!(
            parse_answer(Endpoint::Score, score).map(|a| (a.results, a.prompt_tokens)),
            Ok((1, Some(9)))
        );
        assert!(parse_answer(Endpoint::Embeddings, br#"{"object":"list"}"#)
            .unwrap_err()
            .contains("no 'data' list"));
        assert!(parse_answer(Endpoint::Score, b"<html>").is_err());
    }
}
