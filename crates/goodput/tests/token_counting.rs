//! Token counts when the server gives none, against a scripted server that
//! streams one token per event in words tiktoken splits (the mistral.rs
//! case): the count comes from the events (one token each), the
//! fixed-tokenizer count stays beside it, and a server that ignores
//! `min_tokens` is named.

mod common;

use std::time::Duration;

use common::*;

async fn run_against(
    script: Script,
    output_tokens: &str,
) -> (serde_json::Value, Vec<serde_json::Value>, String) {
    let server = start(script).await;
    let out = tmp("results.json");
    let records = tmp("records.jsonl");
    let (code, stdout, stderr) = goodput_async(argv(&[
        "run",
        "--url",
        &server.url(),
        "--endpoint",
        "completions",
        "--model",
        "m",
        "--concurrency",
        "2",
        "--num-prompts",
        "6",
        "--input-tokens",
        "16",
        "--output-tokens",
        output_tokens,
        "--out",
        out.to_str().unwrap(),
        "--records",
        records.to_str().unwrap(),
    ]))
    .await;
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    (read_json(&out), read_records(&records), stdout)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_usage_a_stream_is_counted_by_its_events_not_the_client_count() {
    let script = Script {
        ttft: Duration::from_millis(5),
        interval: Duration::from_millis(4),
        events: 16,
        usage: false,
        word: " Zürichologie",
        ..Script::default()
    };
    let (v, recs, stdout) = run_against(script, "16").await;
    assert_eq!(v["total_output_tokens"], 6 * 16);
    assert_eq!(v["tokens"]["output_sources"]["events"], 6);
    for r in &recs {
        assert_eq!(r["output_tokens"], 16);
        assert_eq!(r["token_source"], "events");
        assert!(
            r["client_output_tokens"].as_u64().unwrap() > 16,
            "the fixed unit is kept beside: {r}"
        );
    }
    // TPOT from the true count: 15 gaps of 4 ms over 15 tokens.
    let tpot = v["median_tpot_ms"].as_f64().unwrap();
    let per: Vec<&serde_json::Value> = recs.iter().map(|r| &r["tpot_ms"]).collect();
    assert!(
        (tpot - 4.0).abs() < 0.5,
        "tpot {tpot}: {per:?} {}",
        v["tpot"]
    );
    assert!(
        stdout.contains("Output token counts from:                events 6"),
        "{stdout}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_ignoring_min_tokens_is_named_and_events_are_the_count() {
    // max_tokens 32, but the server stops at 10 events with `stop`.
    let script = Script {
        ttft: Duration::from_millis(5),
        interval: Duration::from_millis(3),
        events: 10,
        usage: false,
        word: " Zürichologie",
        finish: "stop",
        ..Script::default()
    };
    let (v, recs, stdout) = run_against(script, "32").await;
    for r in &recs {
        assert_eq!(
            (r["output_tokens"].as_u64(), r["token_source"].as_str()),
            (Some(10), Some("events"))
        );
    }
    assert_eq!(v["tokens"]["stopped_before_max_tokens_share"], 1.0);
    let notes = v["run"]["notes"].to_string();
    assert!(notes.contains("ignored them"), "{notes}");
    assert!(stdout.contains("min_tokens/ignore_eos"), "{stdout}");
}
