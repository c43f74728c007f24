//! The OpenAI-compatible API against a running simulator: routes, stream
//! shape, token counts that agree with the client's tokenizer, errors, and
//! `/metrics`.

mod common;

use common::*;
use goodput_sim::{OutputLenDist, SimConfig};
use serde_json::json;

fn fast() -> SimConfig {
    SimConfig {
        time_scale: 0.05,
        ..SimConfig::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routes_models_health_and_errors() {
    let server = start(fast());
    let addr = server.local_addr();
    assert_eq!(get(addr, "/health").await.status, 200);
    let models = get(addr, "/v1/models").await.json();
    assert_eq!(models["data"][0]["id"], server.model_name());
    assert_eq!(models["data"][0]["max_model_len"], 131_072);
    assert_eq!(get(addr, "/nope").await.status, 404);

    let bad = send(
        addr,
        "POST",
        "/v1/chat/completions",
        Some(json!({"model": "gpt-9", "messages": []})),
    )
    .await;
    assert_eq!(bad.status, 404);
    assert!(bad.json()["message"].as_str().unwrap().contains("gpt-9"));
    let r = send(
        addr,
        "POST",
        "/v1/completions",
        Some(json!({"max_tokens": 3})),
    )
    .await;
    assert_eq!(r.status, 400);
    assert!(r.json()["message"].as_str().unwrap().contains("prompt"));
    let r = send(
        addr,
        "POST",
        "/v1/completions",
        Some(json!({"prompt": "hi", "max_tokens": 200_000})),
    )
    .await;
    assert_eq!(r.status, 400);
    assert!(r.json()["message"]
        .as_str()
        .unwrap()
        .contains("maximum context length"));
    server.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_stream_has_vllm_shape_and_exact_counts() {
    let server = start(fast());
    let addr = server.local_addr();
    let tok = goodput_common::tokenizer::Tokenizer::from_spec("tiktoken:o200k_base").unwrap();
    let (system, user) = ("You are terse.", prompt(300, 1));
    let body = json!({
        "model": server.model_name(),
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": [{"type": "text", "text": user}]}],
        "max_completion_tokens": 25,
        "ignore_eos": true,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    let r = send(addr, "POST", "/v1/chat/completions", Some(body)).await;
    assert_eq!(r.status, 200);
    assert!(r.headers["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/event-stream"));
    let events = r.events();
    assert_eq!(events.last().unwrap().1, "[DONE]");
    let parsed: Vec<serde_json::Value> = events[..events.len() - 1]
        .iter()
        .map(|(_, e)| serde_json::from_str(e).unwrap())
        .collect();
    // Role-only first chunk, 25 content chunks, the last with finish_reason, then usage.
    assert_eq!(
        parsed[0]["choices"][0]["delta"],
        json!({"role": "assistant", "content": ""})
    );
    assert_eq!(parsed.len(), 1 + 25 + 1);
    let text: String = parsed[1..26]
        .iter()
        .map(|c| {
            c["choices"][0]["delta"]["content"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(parsed[25]["choices"][0]["finish_reason"], "length");
    assert!(parsed[24]["choices"][0]["finish_reason"].is_null());
    let usage = &parsed[26]["usage"];
    assert_eq!(parsed[26]["choices"], json!([]));
    let prompt_tokens = tok.count(system).unwrap() + tok.count(&user).unwrap();
    assert_eq!(usage["prompt_tokens"], prompt_tokens);
    assert_eq!(usage["completion_tokens"], 25);
    assert_eq!(
        tok.count(&text),
        Some(25),
        "output text counts as 25 tokens client-side"
    );
    assert_eq!(usage["prompt_tokens_details"]["cached_tokens"], 0);
    server.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completions_count_prompts_like_the_client_and_draw_lengths() {
    let config = SimConfig {
        output_len: OutputLenDist::Fixed(7),
        ..fast()
    };
    let server = start(config);
    let addr = server.local_addr();
    let tok = goodput_common::tokenizer::Tokenizer::from_spec("tiktoken:o200k_base").unwrap();
    let text = "Hello world, this is a prompt with punctuation!";
    // Without ignore_eos the drawn length (7) ends it with "stop"...
    let r = send(
        addr,
        "POST",
        "/v1/completions",
        Some(json!({"prompt": text, "max_tokens": 50})),
    )
    .await;
    let v = r.json();
    assert_eq!(v["object"], "text_completion");
    assert_eq!(v["usage"]["prompt_tokens"], tok.count(text).unwrap());
    assert_eq!(v["usage"]["completion_tokens"], 7);
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
    assert_eq!(
        tok.count(v["choices"][0]["text"].as_str().unwrap()),
        Some(7)
    );
    // ...max_tokens caps it with "length"; min_tokens raises it.
    let r = send(
        addr,
        "POST",
        "/v1/completions",
        Some(json!({"prompt": text, "max_tokens": 3})),
    )
    .await;
    assert_eq!(r.json()["choices"][0]["finish_reason"], "length");
    assert_eq!(r.json()["usage"]["completion_tokens"], 3);
    let r = send(
        addr,
        "POST",
        "/v1/completions",
        Some(json!({"prompt": text, "max_tokens": 30, "min_tokens": 12})),
    )
    .await;
    assert_eq!(r.json()["usage"]["completion_tokens"], 12);
    // Token-id prompts count as given; the stream has no role chunk.
    let r = send(
        addr,
        "POST",
        "/v1/completions",
        Some(json!({"prompt": [1, 2, 3, 4], "max_tokens": 2, "stream": true, "stream_options": {"include_usage": true}})),
    )
    .await;
    let events = r.events();
    let first: serde_json::Value = serde_json::from_str(&events[0].1).unwrap();
    assert!(!first["choices"][0]["text"].as_str().unwrap().is_empty());
    let usage: serde_json::Value = serde_json::from_str(&events[events.len() - 2].1).unwrap();
    assert_eq!(usage["usage"]["prompt_tokens"], 4);
    server.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_use_vllm_names_and_expose_lateness() {
    let server = start(fast());
    let addr = server.local_addr();
    for i in 0..3 {
        let r = stream_completion(addr, &prompt(100, i), 10).await;
        assert_eq!(r.status, 200);
    }
    let text = metrics(addr).await;
    assert_eq!(metric(&text, "vllm:generation_tokens_total"), 30.0);
    assert_eq!(metric(&text, "vllm:prompt_tokens_total"), 300.0);
    assert_eq!(metric(&text, "vllm:num_requests_running"), 0.0);
    assert_eq!(metric(&text, "vllm:time_to_first_token_seconds_count"), 3.0);
    assert_eq!(
        metric(&text, "vllm:time_per_output_token_seconds_count"),
        27.0
    );
    assert!(text.contains("vllm:request_success_total{model_name=\"meta-llama/Llama-3.1-8B-Instruct\",finished_reason=\"length\"} 3"));
    let steps = metric(&text, "goodput_sim_step_lateness_seconds_count");
    assert!(steps >= 10.0, "{steps}");
    let stats = server.stats();
    assert_eq!(stats.generation_tokens, 30);
    assert!(stats.lateness_samples >= 10);
    assert!(stats.lateness_p50_s < 0.05, "{stats:?}");
    let p99 = metric(&text, "goodput_sim_step_lateness_p99_seconds");
    assert!(p99 > 0.0 && p99 < 0.05, "{p99}");
    assert!(metric(&text, "goodput_sim_engine_work_seconds_total") > 0.0);
    assert_eq!(
        metric(&text, "goodput_sim_engine_realtime_priority"),
        server.engine_priority().fifo.map_or(0.0, f64::from)
    );
    server.shutdown();
}

/// `/tokenize` and `/detokenize` in vLLM's shapes: the count is the one
/// the completion's usage gives for the same prompt, chat messages count
/// their contents, and the ids spell the prompt back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokenize_counts_as_usage_does_and_detokenize_spells_it_back() {
    let server = start(fast());
    let addr = server.local_addr();
    let text = prompt(37, 4);
    let t = send(
        addr,
        "POST",
        "/tokenize",
        Some(json!({"prompt": text, "add_special_tokens": false, "return_token_strs": true})),
    )
    .await
    .json();
    assert_eq!(t["count"], 37);
    assert_eq!(t["max_model_len"], 131_072);
    assert_eq!(t["tokens"].as_array().unwrap().len(), 37);
    assert_eq!(t["token_strs"].as_array().unwrap().len(), 37);
    let usage = send(
        addr,
        "POST",
        "/v1/completions",
        Some(json!({"prompt": text, "max_tokens": 1})),
    )
    .await
    .json();
    assert_eq!(usage["usage"]["prompt_tokens"], t["count"]);
    let chat = json!({"messages": [{"role": "user", "content": text}, {"role": "user", "content": [{"type": "text", "text": text}]}]});
    let c = send(addr, "POST", "/tokenize", Some(chat)).await.json();
    assert_eq!(c["count"], 74);
    let d = send(
        addr,
        "POST",
        "/detokenize",
        Some(json!({"tokens": t["tokens"]})),
    )
    .await;
    assert_eq!(d.json()["prompt"], text.as_str());
    let bad = send(
        addr,
        "POST",
        "/tokenize",
        Some(json!({"model": "gpt-9", "prompt": "x"})),
    )
    .await;
    assert_eq!(bad.status, 404);
    let none = send(addr, "POST", "/tokenize", Some(json!({}))).await;
    assert_eq!(none.status, 400);
    server.shutdown();
}
