//! `goodput run` against a scripted server with a known schedule: what it
//! reports must agree with what the server logged, request by request.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;

/// How far a client timestamp may sit from the server's log in these
/// tests: a few ms on an idle machine, but with another process busy on
/// one of the two cores a read can wait a scheduler slice or two (8.7 ms
/// seen). The precise error is measured by `bench`, not asserted here.
const SLACK_MS: f64 = 25.0;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reported_latencies_match_the_server_log() {
    let server = start(Script::default()).await;
    let records = tmp("records.jsonl");
    let out = tmp("results.json");
    let (code, stdout, stderr) = goodput_async(argv(&[
        "run",
        "--url",
        &server.url(),
        "--concurrency",
        "4",
        "--num-prompts",
        "16",
        "--input-tokens",
        "32",
        "--output-tokens",
        "20",
        "--records",
        records.to_str().unwrap(),
        "--records-itl",
        "--out",
        out.to_str().unwrap(),
    ]))
    .await;
    assert_eq!(code, 0, "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(stdout.contains("Serving Benchmark Result") && stdout.contains("Mean TTFT (ms):"));
    let recs = read_records(&records);
    assert_eq!(recs.len(), 16);
    let log = server.by_id();
    for r in &recs {
        assert_eq!(r["ok"], true, "{r}");
        let id = r["request_id"].as_u64().unwrap();
        let entry = &log[&id];
        let server_ttft = ms(entry.writes[0] - entry.received);
        let client_ttft = r["ttft_ms"].as_f64().unwrap();
        // The role-only chunk arrives at once; TTFT must still be ~100 ms.
        assert!(
            client_ttft > 95.0,
            "role chunk counted as first token: {client_ttft}"
        );
        assert!(
            (client_ttft - server_ttft).abs() < SLACK_MS,
            "ttft client {client_ttft} server {server_ttft}"
        );
        let n = entry.writes.len();
        let server_tpot = ms(entry.writes[n - 1] - entry.writes[0]) / (n - 1) as f64;
        let tpot = r["tpot_ms"].as_f64().unwrap();
        assert!(
            (tpot - server_tpot).abs() < 2.0,
            "tpot client {tpot} server {server_tpot}"
        );
        let server_e2el = ms(entry.writes[n - 1] - entry.received);
        let e2el = r["e2el_ms"].as_f64().unwrap();
        assert!(
            (e2el - server_e2el).abs() < SLACK_MS,
            "e2el client {e2el} server {server_e2el}"
        );
        // Each client gap matches the server's gap.
        let times: Vec<f64> = r["event_times_ms"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        assert_eq!(times.len(), n);
        for i in 1..n {
            let cg = times[i] - times[i - 1];
            let sg = ms(entry.writes[i] - entry.writes[i - 1]);
            assert!(
                (cg - sg).abs() < SLACK_MS,
                "gap {i}: client {cg} server {sg}"
            );
        }
        assert_eq!(r["output_tokens"], 20);
        assert_eq!(r["client_output_tokens"], 20);
        assert_eq!(r["token_source"], "server");
        assert_eq!(
            r["input_tokens"], 1,
            "server-reported prompt tokens are used"
        );
        assert_eq!(r["events"], 20);
    }
    let v = read_json(&out);
    assert_eq!(v["completed"], 16);
    assert_eq!(v["failed"], 0);
    assert_eq!(v["total_output_tokens"], 320);
    let median_itl = v["median_itl_ms"].as_f64().unwrap();
    assert!((median_itl - 10.0).abs() < 2.0, "median ITL {median_itl}");
    for key in [
        "mean_ttft_ms",
        "p99_ttft_ms",
        "median_tpot_ms",
        "p90_e2el_ms",
        "std_itl_ms",
        "request_throughput",
        "output_throughput",
        "total_token_throughput",
        "duration",
    ] {
        assert!(v[key].is_number(), "missing {key}");
    }
    assert_eq!(v["config"]["load"]["concurrency"], 4);
    assert_eq!(v["tool"]["name"], "goodput");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_tokens_per_event_split_itl_but_not_icl() {
    let server = start(Script {
        interval: Duration::from_millis(30),
        events: 8,
        tokens_per_event: 3,
        ..Script::default()
    })
    .await;
    let out = tmp("results.json");
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
        "24",
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ]))
    .await;
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let v = read_json(&out);
    let itl = v["median_itl_ms"].as_f64().unwrap();
    let icl = v["icl"]["median_ms"].as_f64().unwrap();
    assert!(
        (itl - 10.0).abs() < 2.0,
        "ITL per token should be gap/3: {itl}"
    );
    assert!(
        (icl - 30.0).abs() < 3.0,
        "ICL per chunk should be the gap: {icl}"
    );
    assert_eq!(v["total_output_tokens"], 6 * 24);
    // TPOT = (t_last - t_1) / (N - 1) = 7 gaps * 30 ms / 23 tokens.
    let tpot = v["median_tpot_ms"].as_f64().unwrap();
    assert!((tpot - 210.0 / 23.0).abs() < 1.0, "tpot {tpot}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_failure_kind_is_recorded_and_counted() {
    let server = start(Script {
        events: 6,
        ttft: Duration::from_millis(20),
        behavior: Arc::new(|id| match id % 7 {
            1 => Behavior::Status(503),
            2 => Behavior::CutAfter(2),
            3 => Behavior::MalformedAfter(1),
            4 => Behavior::ErrorAfter(3),
            5 => Behavior::StallAfter(2),
            6 => Behavior::Status(429),
            _ => Behavior::Ok,
        }),
        ..Script::default()
    })
    .await;
    let records = tmp("records.jsonl");
    let out = tmp("results.json");
    let (code, stdout, stderr) = goodput_async(argv(&[
        "run",
        "--url",
        &server.url(),
        "--concurrency",
        "7",
        "--num-prompts",
        "14",
        "--input-tokens",
        "8",
        "--output-tokens",
        "6",
        "--idle-timeout",
        "500ms",
        "--records",
        records.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]))
    .await;
    assert_eq!(
        code, 1,
        "error rate above 1% must exit 1\n{stdout}\n{stderr}"
    );
    let v = read_json(&out);
    let kinds = &v["errors"]["by_kind"];
    assert_eq!(v["completed"], 2);
    assert_eq!(v["failed"], 12);
    for (k, n) in [
        ("http_503", 2),
        ("http_429", 2),
        ("stream_cut", 2),
        ("malformed", 2),
        ("server_error", 2),
        ("timeout", 2),
    ] {
        assert_eq!(kinds[k], n, "{k} in {kinds}");
    }
    let recs = read_records(&records);
    let r503 = recs.iter().find(|r| r["http_status"] == 503).unwrap();
    assert_eq!(r503["error_kind"], "http_status");
    assert_eq!(r503["retry_after"], "7");
    assert!(r503["error"].as_str().unwrap().contains("scripted failure"));
    assert!(
        stdout.contains("Errors") && stdout.contains("http_503"),
        "{stdout}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_target_exits_3_with_connect_errors() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let out = tmp("results.json");
    let url = format!("http://127.0.0.1:{port}");
    let (code, _, stderr) = goodput_async(argv(&[
        "run",
        "--url",
        &url,
        "--model",
        "m",
        "--num-prompts",
        "5",
        "--concurrency",
        "2",
        "--input-tokens",
        "8",
        "--output-tokens",
        "4",
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ]))
    .await;
    assert_eq!(code, 3, "{stderr}");
    assert!(stderr.contains("no request completed"), "{stderr}");
    let v = read_json(&out);
    assert_eq!(v["errors"]["by_kind"]["connect"], 5);
    // Without --model the model lookup itself fails: also exit 3, with a hint.
    let (code, _, stderr) = goodput_async(argv(&[
        "run",
        "--url",
        &url,
        "--num-prompts",
        "1",
        "--quiet",
    ]))
    .await;
    assert_eq!(code, 3, "{stderr}");
    assert!(stderr.contains("--model"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_errors_exit_2_with_a_message() {
    let (code, _, stderr) = goodput_async(argv(&["run", "--input-tokens", "uniform:9,3"])).await;
    assert_eq!(code, 2);
    assert!(stderr.contains("valid"), "{stderr}");
    let (code, _, stderr) =
        goodput_async(argv(&["run", "--url", "localhost:8000", "--model", "m"])).await;
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("scheme"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_loop_records_schedule_and_warmup_is_excluded() {
    let server = start(Script::quick()).await;
    let records = tmp("records.jsonl");
    let out = tmp("results.json");
    let (code, stdout, stderr) = goodput_async(argv(&[
        "run",
        "--url",
        &server.url(),
        "--request-rate",
        "50",
        "--arrival",
        "constant",
        "--num-prompts",
        "40",
        "--warmup",
        "5",
        "--input-tokens",
        "8",
        "--output-tokens",
        "4",
        "--records",
        records.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--no-stream",
    ]))
    .await;
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let recs = read_records(&records);
    assert_eq!(recs.len(), 45);
    assert_eq!(recs.iter().filter(|r| r["phase"] == "warmup").count(), 5);
    let mut sched: Vec<f64> = recs
        .iter()
        .map(|r| r["sched_s"].as_f64().unwrap())
        .collect();
    sched.sort_by(f64::total_cmp);
    // Constant arrivals 20 ms apart, anchored to absolute time (no drift).
    for w in sched.windows(2) {
        assert!(
            ((w[1] - w[0]) * 1e3 - 20.0).abs() < 0.01,
            "gap {}",
            (w[1] - w[0]) * 1e3
        );
    }
    let v = read_json(&out);
    assert_eq!(v["completed"], 40, "warm-up requests are not counted");
    let achieved = v["achieved_request_rate"].as_f64().unwrap();
    assert!((achieved - 50.0).abs() < 2.5, "achieved {achieved}");
    assert!(v["ttft_from_schedule"]["p99_ms"].is_number());
    // Non-streaming: TTFT equals E2EL.
    assert_eq!(v["mean_ttft_ms"], v["mean_e2el_ms"]);
    assert!(v["schedule_lag"]["p99_ms"].as_f64().unwrap() < 50.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drain_timeout_counts_stuck_requests_as_incomplete_not_failed() {
    let server = start(Script {
        ttft: Duration::from_millis(10),
        events: 4,
        behavior: Arc::new(|id| {
            if id % 2 == 1 {
                Behavior::StallAfter(1)
            } else {
                Behavior::Ok
            }
        }),
        ..Script::default()
    })
    .await;
    let records = tmp("records.jsonl");
    let out = tmp("results.json");
    let started = std::time::Instant::now();
    let (code, stdout, stderr) = goodput_async(argv(&[
        "run",
        "--url",
        &server.url(),
        "--request-rate",
        "inf",
        "--num-prompts",
        "4",
        "--input-tokens",
        "8",
        "--output-tokens",
        "4",
        "--drain-timeout",
        "700ms",
        "--records",
        records.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]))
    .await;
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the drain timeout must end the run"
    );
    let v = read_json(&out);
    assert_eq!(
        (
            v["completed"].as_u64(),
            v["failed"].as_u64(),
            v["incomplete"].as_u64()
        ),
        (Some(2), Some(0), Some(2))
    );
    assert_eq!(v["errors"]["error_rate"], 0.0);
    assert_eq!(v["run"]["drain_timed_out"], true);
    let recs = read_records(&records);
    assert_eq!(
        recs.iter()
            .filter(|r| r["error_kind"] == "incomplete")
            .count(),
        2
    );
    assert!(stdout.contains("Incomplete requests"), "{stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_rejecting_min_tokens_gets_them_dropped_after_one_probe() {
    let server = start(Script {
        reject_pinning: true,
        ..Script::quick()
    })
    .await;
    let out = tmp("results.json");
    let (code, stdout, stderr) = goodput_async(argv(&[
        "run",
        "--url",
        &server.url(),
        "--concurrency",
        "2",
        "--num-prompts",
        "6",
        "--input-tokens",
        "8",
        "--output-tokens",
        "4",
        "--out",
        out.to_str().unwrap(),
    ]))
    .await;
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("rejected min_tokens/ignore_eos"),
        "{stdout}"
    );
    let v = read_json(&out);
    assert_eq!(v["completed"], 6);
    assert_eq!(v["config"]["min_tokens_sent"], false);
    assert_eq!(v["config"]["ignore_eos_sent"], false);
    let rejected = server
        .log
        .lock()
        .unwrap()
        .iter()
        .filter(|e| e.request_tag.ends_with("-rejected"))
        .count();
    assert_eq!(rejected, 1, "only the probe carries the fields");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_with_insecure_works_and_an_unknown_certificate_is_a_connect_error() {
    let server = start_tls(Script::quick()).await;
    let out = tmp("results.json");
    let (code, stdout, stderr) = goodput_async(argv(&[
        "run",
        "--url",
        &server.tls_url(),
        "--insecure",
        "--concurrency",
        "2",
        "--num-prompts",
        "6",
        "--input-tokens",
        "8",
        "--output-tokens",
        "4",
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ]))
    .await;
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let v = read_json(&out);
    assert_eq!(v["completed"], 6);
    assert_eq!(v["total_output_tokens"], 24);
    // Verified TLS against a self-signed certificate fails, as connect errors.
    let (code, _, stderr) = goodput_async(argv(&[
        "run",
        "--url",
        &server.tls_url(),
        "--model",
        "m",
        "--concurrency",
        "1",
        "--num-prompts",
        "2",
        "--input-tokens",
        "8",
        "--output-tokens",
        "4",
        "--quiet",
    ]))
    .await;
    // 3 (every request failed to connect), or 2 on a machine without system root certificates.
    assert!(code == 3 || code == 2, "{stderr}");
    assert!(
        stderr.contains("TLS") || stderr.contains("certificate"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duration_alone_bounds_sending_without_the_default_prompt_count() {
    let server = start(Script {
        ttft: Duration::from_millis(2),
        interval: Duration::from_millis(1),
        events: 2,
        ..Script::default()
    })
    .await;
    let out = tmp("results.json");
    let (code, stdout, stderr) = goodput_async(argv(&[
        "run",
        "--url",
        &server.url(),
        "--request-rate",
        "300",
        "--arrival",
        "constant",
        "--duration",
        "1s",
        "--input-tokens",
        "8",
        "--output-tokens",
        "2",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]))
    .await;
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let sent = read_json(&out)["run"]["sent_measured"].as_u64().unwrap();
    // 300/s for 1 s is 300 sends, more than the 200 the count would default to.
    assert!((290..=301).contains(&sent), "sent {sent}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_loop_duration_sends_nothing_after_the_window() {
    let server = start(Script {
        ttft: Duration::from_millis(150),
        interval: Duration::from_millis(5),
        events: 3,
        ..Script::default()
    })
    .await;
    let records = tmp("records.jsonl");
    let (code, stdout, stderr) = goodput_async(argv(&[
        "run",
        "--url",
        &server.url(),
        "--concurrency",
        "2",
        "--duration",
        "1s",
        "--input-tokens",
        "8",
        "--output-tokens",
        "3",
        "--quiet",
        "--records",
        records.to_str().unwrap(),
    ]))
    .await;
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let sends: Vec<f64> = read_records(&records)
        .iter()
        .map(|r| r["send_s"].as_f64().unwrap())
        .collect();
    let first = sends.iter().cloned().fold(f64::INFINITY, f64::min);
    let last = sends.iter().cloned().fold(0.0, f64::max);
    assert!(
        last - first < 1.0,
        "a request was sent {:.3} s after the first",
        last - first
    );
    assert!(
        sends.len() >= 8 && sends.len() <= 14,
        "{} sends",
        sends.len()
    );
}
