//! Request handling: routing, validating a completion request, choosing its
//! output length, submitting it to the engine, and answering (streamed or
//! whole), with the request's injected faults.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;
use http::{header, Method, Response, StatusCode};
use http_body_util::{BodyExt, Limited};
use serde_json::json;
use tokio::sync::mpsc::UnboundedReceiver;

use super::body::Writer;
use super::body::{cut_after, SimBody, SseStream, StreamFaults};
use super::openai::{
    error_body, full_response, CompletionRequest, Content, Endpoint, Input, Message, Prompt,
};
use super::streams::{structured, Structured, TypedWriter};
use super::{AbortGuard, AppState};
use crate::engine::EngineRequest;
use crate::faults::{FaultPlan, StatusFault};
use crate::kv::block_hashes;
use crate::metrics;
use crate::realtime::{Command, FinishReason, StreamEvent, Submission};
use crate::text::output_word;

const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;

fn response(
    status: StatusCode,
    content_type: &'static str,
    body: impl Into<Bytes>,
) -> Response<SimBody> {
    let mut r = Response::new(SimBody::full(body));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static(content_type),
    );
    r
}

fn json_response(status: StatusCode, body: String) -> Response<SimBody> {
    response(status, "application/json", body)
}

fn error(status: StatusCode, message: &str) -> Response<SimBody> {
    json_response(status, error_body(status.as_u16(), message))
}

/// Route one request.
pub(super) async fn handle(
    state: Arc<AppState>,
    req: http::Request<hyper::body::Incoming>,
) -> Response<SimBody> {
    let path = req.uri().path().to_string();
    match (req.method(), path.as_str()) {
        (&Method::GET, "/health") => response(StatusCode::OK, "text/plain", Bytes::new()),
        (&Method::GET, "/v1/models") => models(&state),
        (&Method::GET, "/metrics") => {
            let (live, summary) = state.stats.view();
            let mut text = metrics::render(&live, &summary, &state.model_name);
            text.push_str(&state.cache_config_info);
            response(StatusCode::OK, "text/plain; version=0.0.4", text)
        }
        (&Method::GET, "/dcgm/metrics") => {
            let text = state.stats.lock().power.render(std::time::Instant::now());
            response(StatusCode::OK, "text/plain; version=0.0.4", text)
        }
        (&Method::POST, "/v1/chat/completions") => completion(state, req, Endpoint::Chat).await,
        (&Method::POST, "/v1/completions") => completion(state, req, Endpoint::Completions).await,
        (&Method::POST, "/v1/embeddings") => {
            super::pooling::pooling(state, req, Endpoint::Embeddings).await
        }
        (&Method::POST, "/v1/rerank" | "/rerank") => {
            super::pooling::pooling(state, req, Endpoint::Rerank).await
        }
        (&Method::POST, "/v1/score" | "/score") => {
            super::pooling::pooling(state, req, Endpoint::Score).await
        }
        (&Method::POST, "/tokenize") => super::tokens::answer(&state, req, false).await,
        (&Method::POST, "/detokenize") => super::tokens::answer(&state, req, true).await,
        (&Method::POST, "/v1/responses") => completion(state, req, Endpoint::Responses).await,
        (&Method::POST, "/v1/messages") => completion(state, req, Endpoint::Messages).await,
        (
            _,
            "/health"
            | "/v1/models"
            | "/metrics"
            | "/v1/chat/completions"
            | "/v1/completions"
            | "/v1/responses"
            | "/v1/messages",
        ) => error(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed"),
        _ => error(StatusCode::NOT_FOUND, &format!("no route for {path}")),
    }
}

fn models(state: &AppState) -> Response<SimBody> {
    let mut body = json!({
        "object": "list",
        "data": [{
            "id": state.model_name,
            "object": "model",
            "created": state.created,
            "owned_by": "goodput-sim",
            "root": state.model_name,
            "parent": null,
            "max_model_len": state.max_model_len,
        }],
    });
    if let Some(data) = body["data"].as_array_mut() {
        data.extend(super::mixes::adapter_models(state));
    }
    json_response(StatusCode::OK, body.to_string())
}

/// Prompt token ids: a chat prompt is the concatenated tokens of every
/// message's content (text parts only; no role or template tokens).
fn prompt_tokens(
    state: &AppState,
    req: &CompletionRequest,
    endpoint: Endpoint,
) -> Result<Vec<u32>, String> {
    let encode = |s: &str| state.tokenizer.encode(s).unwrap_or_default();
    let conversation = |messages: &[Message]| -> Result<Vec<u32>, String> {
        let mut ids = Vec::new();
        for m in messages {
            match &m.content {
                Some(Content::Text(t)) => ids.extend(encode(t)),
                Some(Content::Parts(parts)) => {
                    for p in parts {
                        if let Some(t) = &p.text {
                            ids.extend(encode(t));
                        }
                        if let Some(image) = &p.image_url {
                            let n = super::images::image_tokens(&image.url, state.image_patch_px)?;
                            ids.extend(super::images::image_token_ids(&image.url, n));
                        }
                    }
                }
                None => {}
            }
        }
        Ok(ids)
    };
    match endpoint {
        Endpoint::Chat | Endpoint::Messages => {
            let messages = req.messages.as_ref().ok_or(match endpoint {
                Endpoint::Messages => "'messages' is required for /v1/messages",
                _ => "'messages' is required for /v1/chat/completions",
            })?;
            conversation(messages)
        }
        Endpoint::Responses => match req.input.as_ref() {
            None => Err("'input' is required for /v1/responses".into()),
            Some(Input::Text(t)) => Ok(encode(t)),
            Some(Input::Messages(m)) => conversation(m),
        },
        _ => match req.prompt.as_ref() {
            None => Err("'prompt' is required for /v1/completions".into()),
            Some(Prompt::Text(t)) => Ok(encode(t)),
            Some(Prompt::Texts(v)) if v.len() == 1 => Ok(encode(&v[0])),
            Some(Prompt::Tokens(ids)) => Ok(ids.clone()),
            Some(Prompt::TokenLists(v)) if v.len() == 1 => Ok(v[0].clone()),
            Some(_) => Err("batched prompts are not supported: send one prompt per request".into()),
        },
    }
}

/// The answer's key under greedy decoding: a hash of the prompt's tokens
/// (top bit set, apart from the request indices other requests use).
fn greedy_key(ids: &[u32]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for id in ids {
        h = (h ^ u64::from(*id)).wrapping_mul(0x0100_0000_01b3);
    }
    h | 1 << 63
}

/// Output length and why it ends.
fn output_length(
    state: &AppState,
    req: &CompletionRequest,
    prompt_len: usize,
    index: u64,
) -> Result<(usize, FinishReason), String> {
    let cap = req
        .max_completion_tokens
        .or(req.max_tokens)
        .or(req.max_output_tokens)
        .map(|n| n as usize);
    let min = req.min_tokens.unwrap_or(0) as usize;
    let room = state.max_model_len.saturating_sub(prompt_len);
    if prompt_len >= state.max_model_len {
        return Err(format!(
            "This model's maximum context length is {} tokens. However, your prompt has {} tokens.",
            state.max_model_len, prompt_len
        ));
    }
    if cap == Some(0) {
        return Err("max_tokens must be at least 1, got 0.".into());
    }
    if let Some(c) = cap {
        if prompt_len + c > state.max_model_len {
            return Err(format!(
                "This model's maximum context length is {} tokens. However, you requested {} tokens \
                 ({} in the messages, {} in the completion). Please reduce the length of the \
                 messages or completion.",
                state.max_model_len,
                prompt_len + c,
                prompt_len,
                c
            ));
        }
        if min > c {
            return Err(format!(
                "min_tokens ({min}) must be less than or equal to max_tokens ({c})"
            ));
        }
    }
    let limit = cap.unwrap_or(room);
    if req.ignore_eos == Some(true) {
        return Ok((limit, FinishReason::Length));
    }
    let drawn = crate::config::sample_output_len(&state.output_len, state.seed, index).max(min);
    Ok(if drawn >= limit {
        (limit, FinishReason::Length)
    } else {
        (drawn, FinishReason::Stop)
    })
}

fn status_fault(f: StatusFault) -> Response<SimBody> {
    match f {
        StatusFault::Internal => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "injected fault: internal server error",
        ),
        StatusFault::Unavailable => error(
            StatusCode::SERVICE_UNAVAILABLE,
            "injected fault: service unavailable",
        ),
        StatusFault::TooManyRequests { retry_after_s } => {
            let mut r = error(
                StatusCode::TOO_MANY_REQUESTS,
                "injected fault: rate limited",
            );
            r.headers_mut().insert(
                header::RETRY_AFTER,
                header::HeaderValue::from(retry_after_s),
            );
            r
        }
    }
}

/// One completion request, from its body to its answer: read and check
/// it, draw its faults, submit it to the engine, and answer streamed or
/// whole.
async fn completion(
    state: Arc<AppState>,
    req: http::Request<hyper::body::Incoming>,
    endpoint: Endpoint,
) -> Response<SimBody> {
    let (parsed, routing) = match read_request(&state, req).await {
        Ok(r) => r,
        Err((status, m)) => return error(status, &m),
    };
    let index = state.next_index.fetch_add(1, Ordering::Relaxed);
    let plan: FaultPlan = state.faults.plan(state.seed, index);
    if let Some(f) = plan.status {
        if let Some(d) = plan.slow_headers {
            tokio::time::sleep(d).await;
        }
        return status_fault(f);
    }
    let ids = match prompt_tokens(&state, &parsed, endpoint) {
        Ok(ids) => ids,
        Err(m) => return error(StatusCode::BAD_REQUEST, &m),
    };
    // Greedy decoding (temperature 0) answers the same prompt the same way,
    // as a real model does; otherwise each request draws its own answer.
    let text_key = if parsed.temperature == Some(0.0) {
        greedy_key(&ids)
    } else {
        index
    };
    let (output_tokens, reason) = match output_length(&state, &parsed, ids.len(), text_key) {
        Ok(v) => v,
        Err(m) => return error(StatusCode::BAD_REQUEST, &m),
    };
    // A calibrated server's HTTP and tokenization time before its queue.
    if !state.request_latency.is_zero() {
        tokio::time::sleep(state.request_latency).await;
    }
    let Some((events, guard)) = submit(&state, index, &ids, (output_tokens, reason), routing)
    else {
        return error(StatusCode::SERVICE_UNAVAILABLE, "the engine has stopped");
    };
    if let Some(d) = plan.slow_headers {
        tokio::time::sleep(d).await;
    }

    let prefix = match endpoint {
        Endpoint::Chat => "chatcmpl",
        Endpoint::Responses => "resp",
        Endpoint::Messages => "msg",
        _ => "cmpl",
    };
    let structured = structured(
        &parsed,
        endpoint,
        text_key,
        output_tokens,
        plan.schema_violation,
    );
    let accepted = Accepted {
        model: super::mixes::served_name(&state, routing),
        endpoint,
        prompt_tokens: ids.len(),
        structured,
        id: format!("{prefix}-sim{index:08x}"),
        text_key,
        output_tokens,
        reason,
        plan,
        events,
        guard,
    };
    if parsed.stream == Some(true) {
        let include_usage = parsed
            .stream_options
            .as_ref()
            .and_then(|o| o.include_usage)
            .unwrap_or(false);
        return stream_response(&state, accepted, include_usage);
    }
    whole_response(&state, accepted).await
}

/// The request's body read and parsed, its `n` checked, and its model and
/// priority routed ([`super::mixes::route`]); an error
/// is the status and message to answer with.
async fn read_request(
    state: &AppState,
    req: http::Request<hyper::body::Incoming>,
) -> Result<(CompletionRequest, super::mixes::Routing), (StatusCode, String)> {
    let body = match Limited::new(req.into_body(), MAX_BODY_BYTES)
        .collect()
        .await
    {
        Ok(b) => b.to_bytes(),
        Err(e) => {
            return Err((
                StatusCode::BAD_REQUEST,
                format!("could not read the request body: {e}"),
            ))
        }
    };
    let parsed: CompletionRequest = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => {
            return Err((
                StatusCode::BAD_REQUEST,
                format!("invalid JSON request body: {e}"),
            ))
        }
    };
    if parsed.n.is_some_and(|n| n != 1) {
        return Err((StatusCode::BAD_REQUEST, "only n = 1 is supported".into()));
    }
    let routing = super::mixes::route(state, &parsed)?;
    Ok((parsed, routing))
}

/// Hand request `index` to the engine: the channel its tokens come back on,
/// and the guard that aborts it if the answer is dropped. `None` when the
/// engine has stopped.
fn submit(
    state: &AppState,
    index: u64,
    ids: &[u32],
    (output_tokens, reason): (usize, FinishReason),
    routing: super::mixes::Routing,
) -> Option<(UnboundedReceiver<StreamEvent>, AbortGuard)> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let submission = Submission {
        request: EngineRequest {
            id: index,
            prompt_tokens: ids.len(),
            block_hashes: block_hashes(ids),
            output_tokens,
            priority: routing.priority,
            adapter: routing.adapter,
        },
        arrival_s: state.clock.now_s(),
        reason,
        events: tx,
    };
    state.engine.send(Command::Add(Box::new(submission))).ok()?;
    Some((rx, AbortGuard::new(state.engine.clone(), index)))
}

/// A request the engine accepted: what its answer is written from.
struct Accepted {
    /// The name its answer gives in `model`: the adapter's, or the base model's.
    model: String,
    endpoint: Endpoint,
    prompt_tokens: usize,
    /// A tool call or JSON content, when the request asked for one.
    structured: Option<Structured>,
    /// The response's id (`chatcmpl-sim…`, `cmpl-sim…`).
    id: String,
    /// The key of the answer's words: the request's index, or the prompt's
    /// hash under greedy decoding.
    text_key: u64,
    output_tokens: usize,
    reason: FinishReason,
    plan: FaultPlan,
    /// The engine's tokens for this request.
    events: UnboundedReceiver<StreamEvent>,
    guard: AbortGuard,
}

/// The streamed answer: server-sent events as the engine produces tokens,
/// the plan's cut, stall or malformed event at the middle token.
fn stream_response(state: &AppState, a: Accepted, include_usage: bool) -> Response<SimBody> {
    let mid = (a.output_tokens / 2) as u32;
    let adapter_json;
    let model_json = if a.model == state.model_name {
        &state.model_json
    } else {
        adapter_json = serde_json::Value::String(a.model.clone()).to_string();
        &adapter_json
    };
    let stream = SseStream {
        events: a.events,
        writer: match (a.endpoint, a.structured) {
            (Endpoint::Chat | Endpoint::Completions, None) => Writer::Chunk(
                super::openai::ChunkWriter::new(a.endpoint, &a.id, state.created, model_json),
            ),
            (_, s) => Writer::Typed(
                Box::new(TypedWriter::new(
                    a.endpoint,
                    &a.id,
                    state.created,
                    model_json,
                    a.prompt_tokens,
                    s.as_ref().and_then(|s| s.tool.clone()),
                )),
                s.map(|s| s.pieces),
            ),
        },
        seed: state.seed,
        request_index: a.text_key,
        reason: a.reason,
        include_usage,
        faults: StreamFaults {
            cut_at: a.plan.cut.then_some(mid),
            stall_at: a.plan.stall.map(|d| (mid, d)),
            malformed_at: a.plan.malformed.then_some(mid),
        },
        guard: a.guard,
        role_sent: false,
        stall: None,
        held: None,
        cut: false,
        done: false,
    };
    let mut r = Response::new(SimBody::Stream(Box::new(stream)));
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/event-stream; charset=utf-8"),
    );
    h.insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-cache"),
    );
    r
}

/// The whole answer: every token waited for, then one JSON body.
async fn whole_response(state: &AppState, mut a: Accepted) -> Response<SimBody> {
    let mut text = String::with_capacity(a.output_tokens * 7);
    let finished = loop {
        match a.events.recv().await {
            Some(StreamEvent::Token { index, count, done }) => {
                for i in index..index + count {
                    text.push(' ');
                    text.push_str(output_word(state.seed, a.text_key, i));
                }
                if let Some(f) = done {
                    break f;
                }
            }
            Some(StreamEvent::Rejected(e)) => {
                a.guard.disarm();
                return error(StatusCode::BAD_REQUEST, &e.to_string());
            }
            None => return error(StatusCode::SERVICE_UNAVAILABLE, "the engine has stopped"),
        }
    };
    a.guard.disarm();
    let body = match (a.endpoint, &a.structured) {
        (Endpoint::Chat | Endpoint::Completions, None) => full_response(
            a.endpoint,
            &a.id,
            state.created,
            &a.model,
            &text,
            a.reason,
            &finished,
        ),
        (_, s) => super::streams::whole_body(
            a.endpoint,
            &a.id,
            state.created,
            &serde_json::Value::String(a.model.clone()).to_string(),
            &s.as_ref().map_or(text, Structured::text),
            s.as_ref().and_then(|s| s.tool.as_deref()),
            a.reason,
            &finished,
        ),
    };
    whole_body_with_faults(body, &a.plan)
}

/// A whole JSON answer as the plan wants it: cut after half its bytes,
/// half of it sent as if whole (malformed), or held back for the stall.
fn whole_body_with_faults(body: String, plan: &FaultPlan) -> Response<SimBody> {
    if plan.cut {
        let half = body.len() / 2;
        let half = Bytes::from(body).slice(..half);
        let mut r = response(StatusCode::OK, "application/json", Bytes::new());
        *r.body_mut() = cut_after(half);
        return r;
    }
    let body = if plan.malformed {
        body[..body.len() / 2].to_string()
    } else {
        body
    };
    let mut r = json_response(StatusCode::OK, body.clone());
    if let Some(d) = plan.stall {
        *r.body_mut() = SimBody::Delayed(Box::pin(tokio::time::sleep(d)), Some(Bytes::from(body)));
    }
    r
}
