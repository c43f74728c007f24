//! `/tokenize` and `/detokenize`, in the shapes vLLM serves them: a client
//! without a local copy of the model's tokenizer counts through them
//! (`goodput bench serve` builds its prompts' exact lengths so).
//!
//! `/tokenize` takes a completion's `prompt`, or a chat's `messages` (their
//! text contents, as the simulator counts a chat prompt: no role or
//! template tokens), and answers `count`, `max_model_len`, `tokens` and
//! `token_strs` (with `return_token_strs`). The simulator's encoding has no
//! special tokens, so `add_special_tokens` changes nothing. `/detokenize`
//! takes `tokens` and answers the `prompt` they spell.

use http::{Response, StatusCode};
use serde_json::{json, Value};

use super::body::SimBody;
use super::pooling::{error, json_response, read_body};
use super::AppState;

/// The text a `/tokenize` body asks about.
fn text_of(body: &Value) -> Result<String, String> {
    if let Some(p) = body.get("prompt") {
        return p
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| "'prompt' must be a string".to_string());
    }
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        return Err("either 'prompt' or 'messages' is required".into());
    };
    let mut text = String::new();
    for m in messages {
        match &m["content"] {
            Value::String(s) => text.push_str(s),
            Value::Array(parts) => parts
                .iter()
                .filter_map(|p| p["text"].as_str())
                .for_each(|t| text.push_str(t)),
            _ => {}
        }
    }
    Ok(text)
}

/// Answer `/tokenize` (`detokenize` false) or `/detokenize`.
pub(super) async fn answer(
    state: &AppState,
    req: http::Request<hyper::body::Incoming>,
    detokenize: bool,
) -> Response<SimBody> {
    match read_body(state, req).await {
        Ok(body) if detokenize => spell(state, &body),
        Ok(body) => count(state, &body),
        Err((status, message)) => error(status, &message),
    }
}

fn count(state: &AppState, body: &Value) -> Response<SimBody> {
    let text = match text_of(body) {
        Ok(t) => t,
        Err(message) => return error(StatusCode::BAD_REQUEST, &message),
    };
    let tokens = state.tokenizer.encode(&text).unwrap_or_default();
    let token_strs = (body["return_token_strs"] == true).then(|| {
        tokens
            .iter()
            .map(|&t| state.tokenizer.decode(&[t]).unwrap_or_default())
            .collect::<Vec<String>>()
    });
    let answer = json!({
        "count": tokens.len(),
        "max_model_len": state.max_model_len,
        "tokens": tokens,
        "token_strs": token_strs,
    });
    json_response(StatusCode::OK, answer.to_string())
}

fn spell(state: &AppState, body: &Value) -> Response<SimBody> {
    let ids: Option<Vec<u32>> = body["tokens"].as_array().and_then(|a| {
        a.iter()
            .map(|t| t.as_u64().and_then(|t| u32::try_from(t).ok()))
            .collect()
    });
    let Some(ids) = ids else {
        return error(
            StatusCode::BAD_REQUEST,
            "'tokens' must be a list of token ids",
        );
    };
    match state.tokenizer.decode(&ids) {
        Some(prompt) => json_response(StatusCode::OK, json!({ "prompt": prompt }).to_string()),
        None => error(
            StatusCode::BAD_REQUEST,
            "a token id is outside the vocabulary",
        ),
    }
}
