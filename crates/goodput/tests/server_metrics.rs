//! `--server-metrics`: the server's own Prometheus metrics scraped during
//! a run — the simulator's vLLM names, and scripted scrapes with SGLang's,
//! TGI's and llama.cpp's — and summarised over the measured window exactly
//! as the server exposed it.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

// The exposition bodies the core's own tests read, as files.
#[allow(dead_code, unused_imports)]
#[path = "../../goodput-core/src/measure/server_metrics/fixtures/mod.rs"]
mod fixtures;

use common::*;
use serde_json::Value;

/// A `/metrics` endpoint that answers `bodies` in turn (the last one
/// again and again): the first for goodput's check and its baseline, the
/// next ones for whatever comes after. Returns its URL and the scrape count.
async fn metrics_server(bodies: Vec<&'static str>) -> (String, Arc<AtomicUsize>) {
    let count = Arc::new(AtomicUsize::new(0));
    let c = count.clone();
    let url = metrics_endpoint(move |i| {
        c.fetch_add(1, Ordering::SeqCst);
        bodies[i.min(bodies.len() - 1)].to_string()
    })
    .await;
    (url, count)
}

async fn run_with_metrics(t0: &'static str, t1: &'static str) -> (Value, usize) {
    let server = start(Script::quick()).await;
    // The check at preparation and the baseline see T0; the final scrape T1.
    let (url, count) = metrics_server(vec![t0, t0, t1]).await;
    let out = tmp("sm.json");
    let (code, _, stderr) = goodput_async(argv(&[
        "run",
        "--url",
        &server.url(),
        "--model",
        "meta-llama/Llama-3.1-8B-Instruct",
        "--server-metrics",
        &url,
        "--server-metrics-interval",
        "60s",
        "--warmup",
        "0",
        "--concurrency",
        "2",
        "--num-prompts",
        "6",
        "--out",
        out.to_str().unwrap(),
        "-q",
    ]))
    .await;
    assert_eq!(code, 0, "{stderr}");
    (read_json(&out), count.load(Ordering::SeqCst))
}

fn close(v: &Value, want: f64) {
    let got = v
        .as_f64()
        .unwrap_or_else(|| panic!("expected {want}, got {v}"));
    assert!(
        (got - want).abs() < 1e-6 * want.abs().max(1.0),
        "expected {want}, got {got}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sglang_names_summarised_over_the_window() {
    let (doc, scrapes) = run_with_metrics(fixtures::SGLANG_T0, fixtures::SGLANG_T1).await;
    assert_eq!(scrapes, 3);
    let sm = &doc["server_metrics"];
    assert_eq!(sm["engine"], "sglang");
    // The baseline and the final scrape (the check before the run is not counted).
    assert_eq!(sm["scrapes"], 2);
    let s = &sm["summary"];
    close(&s["requests_finished"], 40.0);
    close(&s["ttft_ms"]["count"], 40.0);
    close(&s["ttft_ms"]["mean"], 100.0);
    close(&s["ttft_ms"]["p50"], 100.0);
    close(&s["ttft_ms"]["p99"], 380.0);
    close(&s["e2e_ms"]["mean"], 2000.0);
    close(&s["queue_time_ms"]["mean"], 50.0);
    close(&s["itl_ms"]["mean"], 20.0);
    close(&s["prompt_tokens"], 20000.0);
    close(&s["generation_tokens"], 4000.0);
    close(&s["prefix_cache_hit_share"], 0.3);
    close(&s["preemptions"], 6.0);
    close(&s["peak_running"], 12.0);
    close(&s["peak_waiting"], 3.0);
    close(&s["peak_kv_usage"], 0.62);
    // The server's TTFT beside the client's, and the gap between them.
    let client = doc["mean_ttft_ms"].as_f64().unwrap();
    close(&s["client_mean_ttft_ms"], client);
    close(&s["ttft_gap_ms"], client - 100.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tgi_names_summarised_over_the_window() {
    let (doc, _) = run_with_metrics(fixtures::TGI_T0, fixtures::TGI_T1).await;
    let sm = &doc["server_metrics"];
    assert_eq!(sm["engine"], "tgi");
    let s = &sm["summary"];
    close(&s["requests_finished"], 40.0);
    close(&s["e2e_ms"]["mean"], 2000.0);
    close(&s["queue_time_ms"]["mean"], 50.0);
    close(&s["tpot_ms"]["mean"], 25.0);
    close(&s["prompt_tokens"], 20000.0);
    close(&s["generation_tokens"], 4000.0);
    close(&s["peak_running"], 12.0);
    close(&s["peak_waiting"], 3.0);
    // TGI has no TTFT, KV or prefix-cache series: absent, not zero.
    assert!(
        s["ttft_ms"].is_null() && s["peak_kv_usage"].is_null() && s["ttft_gap_ms"].is_null(),
        "{s}"
    );
    assert!(s["prefix_cache_hit_share"].is_null());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llama_cpp_names_summarised_over_the_window() {
    let (doc, _) = run_with_metrics(fixtures::LLAMACPP_T0, fixtures::LLAMACPP_T1).await;
    let sm = &doc["server_metrics"];
    assert_eq!(sm["engine"], "llama_cpp");
    let s = &sm["summary"];
    close(&s["prompt_tokens"], 20000.0);
    close(&s["generation_tokens"], 4000.0);
    close(&s["peak_running"], 4.0);
    close(&s["peak_waiting"], 3.0);
    assert!(
        s["ttft_ms"].is_null() && s["requests_finished"].is_null(),
        "{s}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_server_voids_the_window_and_a_missing_endpoint_is_an_error() {
    // Counters lower at the end than at the start: a restart, no window.
    let (doc, _) = run_with_metrics(fixtures::SGLANG_T1, fixtures::SGLANG_T0).await;
    let sm = &doc["server_metrics"];
    assert!(sm["summary"].is_null(), "{sm}");
    assert!(
        sm["notes"][0].as_str().unwrap().contains("went backwards"),
        "{sm}"
    );

    // Asked for explicitly, a URL without metrics stops the run before any request.
    let server = start(Script::quick()).await;
    let (code, _, stderr) = goodput_async(argv(&[
        "run",
        "--url",
        &server.url(),
        "--server-metrics",
        &format!("{}/metrics", server.url()),
        "--num-prompts",
        "2",
    ]))
    .await;
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("--server-metrics") && stderr.contains("404"),
        "{stderr}"
    );
    assert!(server.log.lock().unwrap().is_empty(), "a request was sent");

    // By default, a target without /metrics is simply not scraped.
    let out = tmp("none.json");
    let (code, _, stderr) = goodput_async(argv(&[
        "run",
        "--url",
        &server.url(),
        "--num-prompts",
        "2",
        "--out",
        out.to_str().unwrap(),
        "-q",
    ]))
    .await;
    assert_eq!(code, 0, "{stderr}");
    assert!(read_json(&out)["server_metrics"].is_null());
}

/// Against the simulator's own `/metrics` (vLLM's names): the window's
/// counts are the run's, request for request and token for token.
#[test]
fn the_simulators_metrics_match_the_run() {
    let out = tmp("sim.json");
    let html = tmp("sim.html");
    let (code, stdout, stderr) = goodput(&[
        "run",
        "--html",
        html.to_str().unwrap(),
        "--warmup",
        "0",
        "--concurrency",
        "8",
        "--num-prompts",
        "40",
        "--input-tokens",
        "128",
        "--output-tokens",
        "32",
        "--server-metrics-interval",
        "100ms",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let doc = read_json(&out);
    let sm = &doc["server_metrics"];
    assert_eq!(sm["engine"], "vllm", "{sm}");
    assert_eq!(sm["failed_scrapes"], 0);
    let s = &sm["summary"];
    close(&s["requests_finished"], doc["completed"].as_f64().unwrap());
    close(
        &s["prompt_tokens"],
        doc["total_input_tokens"].as_f64().unwrap(),
    );
    close(
        &s["generation_tokens"],
        doc["total_output_tokens"].as_f64().unwrap(),
    );
    close(&s["ttft_ms"]["count"], 40.0);
    close(
        &s["prefix_cache_queries"],
        doc["total_input_tokens"].as_f64().unwrap(),
    );
    let peak = s["peak_running"].as_f64().unwrap();
    assert!(peak > 0.0 && peak <= 8.0, "{s}");
    assert!(sm["series"].as_array().unwrap().len() >= 3, "{sm}");
    // The client's TTFT includes what the engine's clock does not see
    // (HTTP, the event loop), so it is never below the server's by more
    // than clock granularity.
    let gap = s["ttft_gap_ms"].as_f64().unwrap();
    assert!(gap > -1.0, "client below server by {gap} ms: {s}");
    assert!(stdout.contains("Server mean TTFT (ms):"), "{stdout}");
    assert!(stdout.contains("KV-cache usage, peak / mean:"), "{stdout}");
    // Drawn in the HTML report: the table and both charts, with points.
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("data-section=\"server\""));
    assert!(page.contains("Client minus server TTFT (ms)"));
    for id in ["server-kv", "server-batch"] {
        let at = page
            .find(&format!("data-chart=\"{id}\" data-points=\""))
            .unwrap_or_else(|| panic!("no chart {id}"));
        let points: usize = page[at..].split('"').nth(3).unwrap().parse().unwrap();
        assert!(points >= 3, "{id} has {points} points");
    }
}
