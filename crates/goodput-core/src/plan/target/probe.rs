//! What preparing a target asks the server (its model, whether it takes
//! pinned output lengths), and what a run's token counts say about it.

use super::RunError;
use crate::request::client::{snippet, Client};
use crate::request::protocol::{request_body, Prompt, RequestParams};

/// The first model `/models` lists, and whether the list says it is
/// served by goodput's own simulator (`owned_by: goodput-sim`).
pub(super) async fn discover_model(client: &Client) -> Result<(String, bool), RunError> {
    let url = client.base().url("/models");
    let fail = |why: String| RunError::Models {
        url: url.clone(),
        why: client.redact(why),
    };
    let (status, body) = client
        .simple("GET", "/models", None, "models")
        .await
        .map_err(|e| fail(e.to_string()))?;
    if !(200..300).contains(&status) {
        return Err(fail(format!("HTTP {status}: {}", snippet(&body))));
    }
    let v: serde_json::Value =
        serde_json::from_slice(&body).map_err(|e| fail(format!("not JSON: {e}")))?;
    let first = &v["data"][0];
    let simulated = first["owned_by"].as_str() == Some("goodput-sim");
    first["id"]
        .as_str()
        .map(|id| (id.to_string(), simulated))
        .ok_or_else(|| fail("the list is empty".into()))
}

/// The context llama.cpp gives one slot, from its `/props`
/// (`default_generation_settings.n_ctx`, a slot's in current builds, else
/// the top-level `n_ctx` divided among `total_slots`). Other servers refuse
/// a request that does not fit their context rather than cut it short, so
/// only llama.cpp's matters to a `length` finish; `None` where the server
/// does not answer within 2 s.
pub(super) async fn slot_context(client: &Client) -> Option<u32> {
    let asked = client.get_path("/props", "props");
    let answer = tokio::time::timeout(std::time::Duration::from_secs(2), asked).await;
    let Ok(Ok((200, body))) = answer else {
        return None;
    };
    let v: serde_json::Value = serde_json::from_slice(&body).ok()?;
    slot_context_of(&v)
}

fn slot_context_of(v: &serde_json::Value) -> Option<u32> {
    let per_slot = v["default_generation_settings"]["n_ctx"].as_u64();
    let whole = || {
        let slots = v["total_slots"].as_u64().filter(|&s| s > 0).unwrap_or(1);
        v["n_ctx"].as_u64().map(|n| n / slots)
    };
    per_slot
        .or_else(whole)
        .filter(|&n| n > 0)
        .and_then(|n| u32::try_from(n).ok())
}

/// One request with `min_tokens` and `ignore_eos`: a 400/422 answer means the
/// server rejects them, so they are dropped for every run (and said so).
/// The answer is read to its end, though only its status matters: taken at
/// its status line, the probe was still at the server when a run with no
/// warm-up began (in the first measured requests' batch, or ahead of them
/// at a one-slot server) and in the server metrics' window.
pub(super) async fn probe_pinning(
    client: &Client,
    params: &mut RequestParams,
    notes: &mut Vec<String>,
) {
    let body = request_body(params, Prompt::Text("Say hello."), 1);
    match client
        .simple("POST", params.endpoint.path(), Some(body), "probe")
        .await
    {
        Ok((s, _)) if (200..300).contains(&s) => {}
        Ok((s @ (400 | 422), body)) => {
            params.min_tokens = false;
            params.ignore_eos = false;
            notes.push(client.redact(format!(
                "the server rejected min_tokens/ignore_eos (HTTP {s}: {}); they are not sent in this run, so output lengths may fall short of --output-tokens",
                snippet(&body)
            )));
        }
        Ok((s, body)) => notes.push(client.redact(format!(
            "the probe request answered HTTP {s} ({}); min_tokens/ignore_eos are kept",
            snippet(&body)
        ))),
        Err(e) => notes.push(client.redact(format!(
            "the probe request failed ({e}); min_tokens/ignore_eos are kept"
        ))),
    }
}

/// What the token counts say about the server: pinned lengths it ignored,
/// lengths that came back different.
pub(super) fn token_notes(
    t: &crate::measure::metrics::TokenSummary,
    params: &RequestParams,
) -> Vec<String> {
    let mut notes = Vec::new();
    let pinned = params.min_tokens || params.ignore_eos;
    let early = t.stopped_before_max_tokens_share.unwrap_or(0.0);
    if pinned && early > 0.0 {
        notes.push(format!(
            "the server accepted min_tokens/ignore_eos but ignored them: {:.1}% of completed requests finished with `stop` before max_tokens, so output lengths were not pinned",
            early * 100.0
        ));
    } else if let Some(share) = t.output_length_mismatch_share {
        if share > 0.0 && params.min_tokens {
            notes.push(format!(
                "{:.1}% of completed requests returned a different number of output tokens than requested",
                share * 100.0
            ));
        }
    }
    if t.length_short_of_max_tokens > 0 {
        notes.push(format!(
            "{} requests finished `length` with fewer tokens than the max_tokens sent (the server ran out of context?): counted by their stream, not as max_tokens",
            t.length_short_of_max_tokens
        ));
    }
    if t.capped_at_max_tokens > 0 {
        notes.push(format!(
            "{} requests counted more output tokens than the max_tokens sent (re-tokenized text is an estimate): capped at max_tokens",
            t.capped_at_max_tokens
        ));
    }
    if let Some(n) = t
        .output_sources
        .get(&crate::measure::metrics::TokenSource::Tokenizer)
    {
        if *n > 0 {
            notes.push(format!(
                "{n} requests' output tokens are an estimate: the server reported no usage and the stream did not show one token per event, so their text was re-tokenized (re-tokenized text is not the generated sequence)"
            ));
        }
    }
    notes
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_slot_context_is_read_from_llama_cpp_props() {
        let v =
            serde_json::json!({"total_slots": 4, "default_generation_settings": {"n_ctx": 256}});
        assert_eq!(super::slot_context_of(&v), Some(256));
        let v = serde_json::json!({"total_slots": 4, "n_ctx": 1024});
        assert_eq!(super::slot_context_of(&v), Some(256));
        assert_eq!(
            super::slot_context_of(&serde_json::json!({"detail": "Not Found"})),
            None
        );
    }
}
