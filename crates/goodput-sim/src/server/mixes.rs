//! How the server routes a request's `model` and `priority` to the engine,
//! as vLLM's OpenAI server does: `model` names the base model or one of the
//! LoRA adapters served (`--lora-modules`), and `priority` is accepted only
//! under the priority scheduling policy (vLLM answers 400 "Got priority P
//! but Priority scheduling is not enabled." otherwise).

use http::StatusCode;
use serde_json::{json, Value};

use super::openai::CompletionRequest;
use super::AppState;
use crate::engine::SchedulingPolicy;

/// What the engine schedules a request by.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Routing {
    pub adapter: Option<u32>,
    pub priority: i64,
}

/// The adapter and priority of `req`, or the status and message to answer.
pub(super) fn route(
    state: &AppState,
    req: &CompletionRequest,
) -> Result<Routing, (StatusCode, String)> {
    let adapter = match &req.model {
        None => None,
        Some(m) if *m == state.model_name => None,
        Some(m) => match state.lora_modules.iter().position(|a| a == m) {
            Some(i) => Some(i as u32),
            None => {
                return Err((
                    StatusCode::NOT_FOUND,
                    format!("The model `{m}` does not exist."),
                ))
            }
        },
    };
    let priority = req.priority.unwrap_or(0);
    if priority != 0 && state.scheduling_policy != SchedulingPolicy::Priority {
        return Err((
            StatusCode::BAD_REQUEST,
            format!("Got priority {priority} but Priority scheduling is not enabled."),
        ));
    }
    Ok(Routing { adapter, priority })
}

/// The name an answer gives in `model`: the adapter's for an adapter's
/// request (vLLM answers with the LoRA's name), else the base model's.
pub(super) fn served_name(state: &AppState, routing: Routing) -> String {
    routing
        .adapter
        .and_then(|i| state.lora_modules.get(i as usize))
        .unwrap_or(&state.model_name)
        .clone()
}

/// The adapters' entries of `/v1/models`, after the base model's: vLLM
/// lists each with the base model as its `parent`.
pub(super) fn adapter_models(state: &AppState) -> Vec<Value> {
    state
        .lora_modules
        .iter()
        .map(|name| {
            json!({
                "id": name,
                "object": "model",
                "created": state.created,
                "owned_by": "goodput-sim",
                "root": name,
                "parent": state.model_name,
                "max_model_len": state.max_model_len,
            })
        })
        .collect()
}
