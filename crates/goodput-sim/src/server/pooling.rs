//! The pooling endpoints: `/v1/embeddings`, `/v1/rerank` (also `/rerank`)
//! and `/v1/score` (also `/score`), in the shapes vLLM serves them.
//!
//! A request's inputs are priced as **prefill-only** work, as vLLM runs a
//! pooling model: each input is its own engine request (an embedding's
//! text; a rerank or score pair's query and document together, as a
//! cross-encoder reads them) whose prompt goes through the same prefill
//! cost model as a chat prompt, and which ends when its prefill does (one
//! engine token, no decode step). The answer is sent when every input of
//! the request is done; `usage` counts the inputs' tokens. Inputs of one
//! request (and of concurrent ones) share steps up to the token budget, so
//! a step's fixed cost is spread over more inputs as batches grow.
//!
//! Injected faults apply to the completion routes only.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use http::{Response, StatusCode};
use http_body_util::{BodyExt, Limited};
use serde_json::Value;

use super::body::SimBody;
use super::openai::{error_body, Endpoint};
use super::{AbortGuard, AppState};
use crate::engine::EngineRequest;
use crate::kv::block_hashes;
use crate::realtime::{Command, FinishReason, StreamEvent, Submission};

const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;

/// A string, or a document object with its `text` (Cohere's and Jina's
/// `{"text": ...}`).
fn text_of(v: &Value) -> Option<&str> {
    v.as_str().or_else(|| v.get("text").and_then(Value::as_str))
}

/// A string or a list of them (or of documents).
fn texts_of<'a>(v: Option<&'a Value>, field: &str) -> Result<Vec<&'a str>, String> {
    match v {
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| text_of(i).ok_or_else(|| format!("'{field}' must hold strings")))
            .collect(),
        Some(v) => text_of(v)
            .map(|t| vec![t])
            .ok_or_else(|| format!("'{field}' must be a string or a list of strings")),
        None => Err(format!("'{field}' is required")),
    }
}

/// The request's texts, each as one engine input: the input itself, or
/// the query followed by one document.
fn inputs(endpoint: Endpoint, body: &Value) -> Result<Vec<(Option<&str>, &str)>, String> {
    let (query, items) = match endpoint {
        Endpoint::Embeddings => (None, texts_of(body.get("input"), "input")?),
        Endpoint::Rerank => (
            Some(texts_of(body.get("query"), "query")?),
            texts_of(body.get("documents"), "documents")?,
        ),
        _ => (
            Some(texts_of(body.get("text_1"), "text_1")?),
            texts_of(body.get("text_2"), "text_2")?,
        ),
    };
    let query = match query.as_deref() {
        Some([q]) => Some(*q),
        Some(_) => return Err("the query must be one string".into()),
        None => None,
    };
    if items.is_empty() {
        return Err("no inputs: send at least one".into());
    }
    Ok(items.into_iter().map(|t| (query, t)).collect())
}

/// The request's JSON body, its model checked; an error is the status and
/// message to answer with.
pub(super) async fn read_body(
    state: &AppState,
    req: http::Request<hyper::body::Incoming>,
) -> Result<Value, (StatusCode, String)> {
    let bytes = Limited::new(req.into_body(), MAX_BODY_BYTES)
        .collect()
        .await
        .map_err(|e| {
            (
                StatusCode::BAD_REQUEST,
                format!("could not read the request body: {e}"),
            )
        })?
        .to_bytes();
    let body: Value = serde_json::from_slice(&bytes).map_err(|e| {
        (
            StatusCode::BAD_REQUEST,
            format!("invalid JSON request body: {e}"),
        )
    })?;
    if let Some(m) = body.get("model").and_then(Value::as_str) {
        if m != state.model_name {
            return Err((
                StatusCode::NOT_FOUND,
                format!("The model `{m}` does not exist."),
            ));
        }
    }
    Ok(body)
}

/// A JSON answer.
pub(super) fn json_response(status: StatusCode, body: String) -> Response<SimBody> {
    let mut r = Response::new(SimBody::full(body));
    *r.status_mut() = status;
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::header::HeaderValue::from_static("application/json"),
    );
    r
}

/// vLLM's error answer.
pub(super) fn error(status: StatusCode, message: &str) -> Response<SimBody> {
    json_response(status, error_body(status.as_u16(), message))
}

/// One pooling request, from its body to its answer.
pub(super) async fn pooling(
    state: Arc<AppState>,
    req: http::Request<hyper::body::Incoming>,
    endpoint: Endpoint,
) -> Response<SimBody> {
    let body = match read_body(&state, req).await {
        Ok(v) => v,
        Err((status, m)) => return error(status, &m),
    };
    let texts = match inputs(endpoint, &body) {
        Ok(t) => t,
        Err(m) => return error(StatusCode::BAD_REQUEST, &m),
    };
    let encode = |s: &str| state.tokenizer.encode(s).unwrap_or_default();
    let mut prompts = Vec::with_capacity(texts.len());
    for (query, text) in &texts {
        let mut ids = query.map(encode).unwrap_or_default();
        ids.extend(encode(text));
        if ids.len() >= state.max_model_len {
            return error(
                StatusCode::BAD_REQUEST,
                &format!(
                    "This model's maximum context length is {} tokens. However, an input has {} tokens.",
                    state.max_model_len,
                    ids.len()
                ),
            );
        }
        prompts.push(ids);
    }
    let n = prompts.len() as u64;
    let base = state.next_index.fetch_add(n, Ordering::Relaxed);
    if !state.request_latency.is_zero() {
        tokio::time::sleep(state.request_latency).await;
    }
    // One engine request per input, of one engine token: the input ends
    // with its prefill. All are handed over at once, so the step that
    // starts next sees the whole batch.
    let arrival_s = state.clock.now_s();
    let mut pending = Vec::with_capacity(prompts.len());
    let mut batch = Vec::with_capacity(prompts.len());
    for (i, ids) in prompts.iter().enumerate() {
        let id = base + i as u64;
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        batch.push(Submission {
            request: EngineRequest {
                id,
                prompt_tokens: ids.len(),
                block_hashes: block_hashes(ids),
                output_tokens: 1,
                // Pooling models are served without adapters or classes here.
                priority: 0,
                adapter: None,
            },
            arrival_s,
            reason: FinishReason::Stop,
            events: tx,
        });
        pending.push((rx, AbortGuard::new(state.engine.clone(), id)));
    }
    if state.engine.send(Command::AddBatch(batch)).is_err() {
        for (_, guard) in &mut pending {
            guard.disarm();
        }
        return error(StatusCode::SERVICE_UNAVAILABLE, "the engine has stopped");
    }
    for (events, guard) in &mut pending {
        match events.recv().await {
            Some(StreamEvent::Token { .. }) => guard.disarm(),
            Some(StreamEvent::Rejected(e)) => {
                guard.disarm();
                return error(StatusCode::BAD_REQUEST, &e.to_string());
            }
            None => return error(StatusCode::SERVICE_UNAVAILABLE, "the engine has stopped"),
        }
    }
    let tokens: usize = prompts.iter().map(Vec::len).sum();
    let answer = answer(&state, endpoint, base, &texts, &prompts, tokens);
    json_response(StatusCode::OK, answer)
}

/// A deterministic number in [-1, 1) from (key, i).
fn unit(key: u64, i: u64) -> f64 {
    let mut z = key ^ i.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 52) as f64 - 1.0
}

/// A key of an input's tokens: the same text embeds to the same vector.
fn key_of(ids: &[u32]) -> u64 {
    ids.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, id| {
        (h ^ u64::from(*id)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The answer's JSON, as vLLM writes it for `endpoint`.
fn answer(
    state: &AppState,
    endpoint: Endpoint,
    base: u64,
    texts: &[(Option<&str>, &str)],
    prompts: &[Vec<u32>],
    tokens: usize,
) -> String {
    use std::fmt::Write as _;
    let model = &state.model_json;
    let created = state.created;
    let mut out = String::new();
    match endpoint {
        Endpoint::Embeddings => {
            let _ = write!(
                out,
                r#"{{"id":"embd-sim{base:08x}","object":"list","created":{created},"model":{model},"data":["#
            );
            for (i, ids) in prompts.iter().enumerate() {
                let key = key_of(ids);
                let _ = write!(
                    out,
                    r#"{}{{"index":{i},"object":"embedding","embedding":["#,
                    if i > 0 { "," } else { "" }
                );
                for d in 0..state.embedding_dim {
                    let sep = if d > 0 { "," } else { "" };
                    let _ = write!(out, "{sep}{:.6}", unit(key, d as u64) * 0.1);
                }
                out.push_str("]}");
            }
            let _ = write!(
                out,
                r#"],"usage":{{"prompt_tokens":{tokens},"total_tokens":{tokens},"completion_tokens":0}}}}"#
            );
        }
        Endpoint::Rerank => {
            let mut scored: Vec<(usize, f64)> = prompts
                .iter()
                .enumerate()
                .map(|(i, ids)| (i, (unit(key_of(ids), 0) + 1.0) / 2.0))
                .collect();
            scored.sort_by(|a, b| b.1.total_cmp(&a.1));
            let results: Vec<Value> = scored
                .iter()
                .map(|(i, s)| {
                    serde_json::json!({"index": i, "document": {"text": texts[*i].1}, "relevance_score": s})
                })
                .collect();
            out = serde_json::json!({
                "id": format!("rerank-sim{base:08x}"),
                "model": state.model_name,
                "usage": {"total_tokens": tokens},
                "results": results,
            })
            .to_string();
        }
        _ => {
            let data: Vec<Value> = prompts
                .iter()
                .enumerate()
                .map(|(i, ids)| {
                    serde_json::json!({"index": i, "object": "score", "score": (unit(key_of(ids), 0) + 1.0) / 2.0})
                })
                .collect();
            out = serde_json::json!({
                "id": format!("score-sim{base:08x}"),
                "object": "list",
                "created": created,
                "model": state.model_name,
                "data": data,
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens, "completion_tokens": 0},
            })
            .to_string();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn inputs_are_texts_or_query_document_pairs() {
        let b = json!({"input": ["a", "b"]});
        assert_eq!(
            inputs(Endpoint::Embeddings, &b).unwrap(),
            vec![(None, "a"), (None, "b")]
        );
        let b = json!({"input": "a"});
        assert_eq!(inputs(Endpoint::Embeddings, &b).unwrap().len(), 1);
        let b = json!({"query": "q", "documents": ["x", {"text": "y"}]});
        assert_eq!(
            inputs(Endpoint::Rerank, &b).unwrap(),
            vec![(Some("q"), "x"), (Some("q"), "y")]
        );
        let b = json!({"text_1": "q", "text_2": "x"});
        assert_eq!(inputs(Endpoint::Score, &b).unwrap(), vec![(Some("q"), "x")]);
        assert!(inputs(Endpoint::Rerank, &json!({"documents": ["x"]}))
            .unwrap_err()
            .contains("'query' is required"));
        assert!(inputs(Endpoint::Embeddings, &json!({"input": []})).is_err());
        assert!(inputs(Endpoint::Embeddings, &json!({"input": [[1, 2]]})).is_err());
    }

    #[test]
    fn units_are_in_range_and_deterministic() {
        for i in 0..1000 {
            let u = unit(7, i);
            assert!((-1.0..1.0).contains(&u), "{u}");
            assert_eq!(u, unit(7, i));
        }
    }
}
