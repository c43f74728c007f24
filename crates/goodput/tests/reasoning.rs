//! A reasoning model: reasoning and answer tokens counted apart, the time to
//! the first of each, and the time per token over each, against a scripted
//! server that streams `reasoning_content` before the answer.

mod common;

use std::time::Duration;

use common::*;

fn dist_mean(doc: &serde_json::Value, key: &str) -> f64 {
    doc[key]["mean_ms"]
        .as_f64()
        .or_else(|| doc[key]["mean"]["value"].as_f64())
        .unwrap_or_else(|| panic!("no mean for {key}: {}", doc[key]))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reasoning_and_answer_are_timed_and_counted_apart() {
    // 8 reasoning events then 12 answer events, 10 ms apart, first after 50 ms.
    let server = start(Script {
        ttft: Duration::from_millis(50),
        interval: Duration::from_millis(10),
        events: 20,
        reasoning_events: 8,
        ..Script::default()
    })
    .await;
    let out = tmp("r.json");
    let (code, stdout, stderr) = goodput_async(argv(&[
        "run",
        "--url",
        &server.url(),
        "--model",
        "m",
        "--concurrency",
        "2",
        "--num-prompts",
        "6",
        "--warmup",
        "0",
        "--out",
        out.to_str().unwrap(),
    ]))
    .await;
    assert_eq!(code, 0, "{stderr}");
    let doc = read_json(&out);
    assert_eq!(doc["tokens"]["reasoning_tokens"], 48, "{}", doc["tokens"]);
    assert_eq!(doc["tokens"]["answer_tokens"], 72);
    let ttft = dist_mean(&doc, "ttft");
    let ttfrt = dist_mean(&doc, "time_to_first_reasoning_token");
    let ttfot = dist_mean(&doc, "time_to_first_output_token");
    // The first token is a reasoning token; the answer starts 8 events later.
    assert!((ttfrt - ttft).abs() < 1e-9, "{ttfrt} vs {ttft}");
    assert!(
        (ttfot - ttft - 80.0).abs() < 8.0,
        "answer after {} ms",
        ttfot - ttft
    );
    for key in ["reasoning_tpot", "answer_tpot"] {
        let v = dist_mean(&doc, key);
        assert!((v - 10.0).abs() < 2.0, "{key} {v}");
    }
    assert!(stdout.contains("Time to First Reasoning Token"), "{stdout}");
    assert!(stdout.contains("Time per Answer Token"), "{stdout}");
}
