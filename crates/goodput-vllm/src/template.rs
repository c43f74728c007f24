//! The model's chat template, applied by the server, where vLLM applies it
//! on the client before a completions request (sonnet, spec_bench,
//! speed_bench, and the Hugging Face sets whose class templates): vLLM and
//! SGLang tokenize chat `messages` with the generation prompt
//! (`/tokenize`) and spell the tokens back (`/detokenize`), llama.cpp
//! answers the templated text itself (`/apply-template`). The templated
//! text is what vLLM's client would send, from the same template; it is
//! asked once a prompt, before the run.

use bytes::Bytes;
use serde_json::{json, Value};

use goodput_core::request::{Client, ClientOptions};

use crate::cli::VllmServeArgs;

use super::refused::refuse;
use super::Row;

/// Where vLLM applies the model's chat template on the client before a
/// completions request, which goodput asks of the server
/// (`super::template`): the refusal to give should the server not.
pub(super) fn needed(a: &VllmServeArgs, chat: bool) -> Option<String> {
    let name = a.dataset_name.as_str();
    let needs = !chat
        && match name {
            "sonnet" | "spec_bench" => true,
            "speed_bench" => !a.skip_chat_template,
            "hf" => super::hf::templated(a),
            _ => false,
        };
    let which = match name {
        "hf" => format!(
            "hf for {}",
            a.hf_name
                .as_deref()
                .or(a.dataset_path.as_deref())
                .unwrap_or_default()
        ),
        _ => name.to_string(),
    };
    needs.then(|| {
        refuse(
            &format!("--dataset-name {which} with a completions backend"),
            "vLLM applies the model's chat template on the client, which goodput asks of the server; use --backend openai-chat --endpoint /v1/chat/completions (the server applies the template)",
        )
    })
}

/// Prompts templated at once.
const AT_ONCE: usize = 16;

/// How a server applies its template.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Dialect {
    /// vLLM, SGLang, `goodput sim`: `/tokenize` with `messages`, then
    /// `/detokenize`.
    Vllm,
    /// llama.cpp: `/apply-template`.
    Llama,
}

impl Dialect {
    fn said(self) -> &'static str {
        match self {
            Dialect::Vllm => "its /tokenize with the chat messages and /detokenize",
            Dialect::Llama => "its /apply-template",
        }
    }
}

fn messages(row: &Row) -> Value {
    let mut m = Vec::new();
    if let Some(s) = &row.system {
        m.push(json!({"role": "system", "content": s}));
    }
    m.push(json!({"role": "user", "content": row.prompt}));
    Value::Array(m)
}

async fn post(client: &Client, path: &str, body: Value) -> Option<Value> {
    let body = Bytes::from(body.to_string());
    let (status, answer) = client.post_path(path, body, "template").await.ok()?;
    (status == 200)
        .then(|| serde_json::from_slice(&answer).ok())
        .flatten()
}

/// The row's prompt under the server's template, or `None`.
async fn templated(client: &Client, model: &str, dialect: Dialect, row: &Row) -> Option<String> {
    let messages = messages(row);
    match dialect {
        Dialect::Vllm => {
            let mut asked = json!({"messages": messages, "add_generation_prompt": true});
            if !model.is_empty() {
                asked["model"] = model.into();
            }
            let tokens = post(client, "/tokenize", asked)
                .await?
                .get("tokens")?
                .clone();
            tokens.as_array()?;
            let mut asked = json!({ "tokens": tokens });
            if !model.is_empty() {
                asked["model"] = model.into();
            }
            let spelled = post(client, "/detokenize", asked).await?;
            spelled["prompt"].as_str().map(str::to_string)
        }
        Dialect::Llama => {
            let asked = json!({"messages": messages});
            let answer = post(client, "/apply-template", asked).await?;
            answer["prompt"].as_str().map(str::to_string)
        }
    }
}

/// Each row's prompt (and system prompt) replaced by the server's
/// templated text; `Ok` says how, `Err` why the server applies none.
pub fn apply(options: ClientOptions, model: &str, rows: &mut [Row]) -> Result<String, String> {
    let (runtime, client) = super::server_tokens::blocking_client(options)?;
    let Some(first) = rows.first() else {
        return Ok(String::new());
    };
    let dialect = [Dialect::Vllm, Dialect::Llama]
        .into_iter()
        .find(|&d| runtime.block_on(templated(&client, model, d, first)).is_some())
        .ok_or("the server applies no chat template (neither /tokenize with messages and /detokenize nor /apply-template answers)")?;
    let chunk = rows.len().div_ceil(AT_ONCE);
    let done: Vec<(usize, Option<String>)> = runtime.block_on(async {
        let mut asks = tokio::task::JoinSet::new();
        for (k, part) in rows.chunks(chunk).enumerate() {
            let (part, client, model) = (part.to_vec(), client.clone(), model.to_string());
            asks.spawn(async move {
                let mut out = Vec::with_capacity(part.len());
                for (i, row) in part.iter().enumerate() {
                    out.push((
                        k * chunk + i,
                        templated(&client, &model, dialect, row).await,
                    ));
                }
                out
            });
        }
        let mut all = Vec::new();
        while let Some(part) = asks.join_next().await {
            all.extend(part.unwrap_or_default());
        }
        all
    });
    if done.len() < rows.len() {
        return Err("the server stopped applying the chat template".into());
    }
    for (i, prompt) in done {
        let prompt = prompt.ok_or_else(|| {
            format!(
                "the server stopped applying the chat template (at prompt {})",
                i + 1
            )
        })?;
        rows[i].prompt = prompt;
        rows[i].system = None;
    }
    let whose = if model.is_empty() {
        "the model's".to_string()
    } else {
        format!("{model}'s")
    };
    Ok(format!(
        "{} prompts put through {whose} chat template by the server ({}), as vLLM's client applies it before a completions request",
        rows.len(),
        dialect.said()
    ))
}
