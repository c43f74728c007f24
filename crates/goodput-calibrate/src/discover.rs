//! What a server says of its own limits, where it says it: vLLM's (and the
//! simulator's) `vllm:cache_config_info` on `/metrics` (KV blocks and block
//! size), `max_model_len` on `/v1/models` (vLLM, SGLang, the simulator),
//! llama.cpp's `/props` (slots, context, batch size). Anything it does not
//! say is left `None` for the experiment to infer.

use goodput_core::plan::PreparedTarget;
use serde_json::Value;

/// The limits a server published.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Published {
    /// KV-cache capacity in tokens, and where it was read.
    pub kv_tokens: Option<(usize, &'static str)>,
    /// Longest prompt + output, tokens.
    pub max_model_len: Option<(usize, &'static str)>,
    /// Sequences the server runs at once (llama.cpp's slots).
    pub max_batch: Option<(usize, &'static str)>,
    /// Tokens one step may process (llama.cpp's batch size).
    pub step_tokens: Option<(usize, &'static str)>,
}

/// Ask the server (errors are simply nothing said).
pub async fn published(target: &PreparedTarget) -> Published {
    let mut p = Published::default();
    if let Ok((200, body)) = target.get("/metrics").await {
        p.kv_tokens = cache_config(&String::from_utf8_lossy(&body))
            .map(|t| (t, "vllm:cache_config_info on /metrics"));
    }
    if let Ok((200, body)) = target.get("/v1/models").await {
        if let Ok(v) = serde_json::from_slice::<Value>(&body) {
            let card = v["data"]
                .as_array()
                .and_then(|d| {
                    d.iter()
                        .find(|m| m["id"].as_str() == Some(target.model()))
                        .or(d.first())
                })
                .cloned()
                .unwrap_or(Value::Null);
            p.max_model_len = card["max_model_len"]
                .as_u64()
                .map(|n| (n as usize, "max_model_len on /v1/models"));
        }
    }
    if let Ok((200, body)) = target.get("/props").await {
        if let Ok(v) = serde_json::from_slice::<Value>(&body) {
            llama_props(&v, &mut p);
        }
    }
    p
}

/// `vllm:cache_config_info{block_size="16",num_gpu_blocks="N",...}`: N × 16.
pub(crate) fn cache_config(text: &str) -> Option<usize> {
    let line = text
        .lines()
        .find(|l| l.starts_with("vllm:cache_config_info{"))?;
    let label = |key: &str| -> Option<usize> {
        let at = line.find(&format!("{key}=\""))? + key.len() + 2;
        line[at..].split('"').next()?.parse().ok()
    };
    Some(label("num_gpu_blocks")? * label("block_size")?)
}

/// llama.cpp's `/props`: `total_slots`, and `n_ctx` (of the whole server
/// in recent builds; each slot gets n_ctx / slots) under
/// `default_generation_settings`.
fn llama_props(v: &Value, p: &mut Published) {
    let slots = v["total_slots"].as_u64().map(|n| n as usize);
    let settings = &v["default_generation_settings"];
    let n_ctx = settings["n_ctx"]
        .as_u64()
        .or_else(|| v["n_ctx"].as_u64())
        .map(|n| n as usize);
    if let Some(s) = slots.filter(|&s| s > 0) {
        p.max_batch = Some((s, "total_slots on /props"));
        if let Some(c) = n_ctx {
            // Recent llama.cpp reports a slot's context; the cache holds every slot's.
            p.kv_tokens
                .get_or_insert((c * s, "n_ctx x total_slots on /props"));
            p.max_model_len.get_or_insert((c, "n_ctx on /props"));
        }
    }
    if let Some(b) = settings["n_batch"]
        .as_u64()
        .or_else(|| v["n_batch"].as_u64())
    {
        p.step_tokens = Some((b as usize, "n_batch on /props"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vllm_cache_config_gives_blocks_times_block_size() {
        let text = "# HELP x\nvllm:cache_config_info{block_size=\"16\",cache_dtype=\"auto\",num_gpu_blocks=\"27000\"} 1.0\n";
        assert_eq!(cache_config(text), Some(432_000));
        assert_eq!(cache_config("vllm:num_requests_running 3\n"), None);
    }

    #[test]
    fn llama_props_give_slots_context_and_batch() {
        let v: Value = serde_json::from_str(
            r#"{"total_slots":4,"default_generation_settings":{"n_ctx":512,"n_batch":2048}}"#,
        )
        .unwrap();
        let mut p = Published::default();
        llama_props(&v, &mut p);
        assert_eq!(p.max_batch.map(|x| x.0), Some(4));
        assert_eq!(p.kv_tokens.map(|x| x.0), Some(2048));
        assert_eq!(p.max_model_len.map(|x| x.0), Some(512));
        assert_eq!(p.step_tokens.map(|x| x.0), Some(2048));
    }
}
