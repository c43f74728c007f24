//! Ctrl-C: goodput stops sending, lets in-flight requests finish, and still
//! writes the summary, the results file and every finished record; it exits
//! 130 (interrupted, results kept) whatever it measured, and requests the
//! user cancelled are incomplete, never errors.

mod common;

use std::time::Duration;

use common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigint_writes_summary_results_and_every_finished_record() {
    let server = start(Script {
        ttft: Duration::from_millis(50),
        interval: Duration::from_millis(20),
        events: 15,
        ..Script::default()
    })
    .await;
    let records = tmp("records.jsonl");
    let out = tmp("results.json");
    let child = spawn_goodput(&[
        "run",
        "--url",
        &server.url(),
        "--concurrency",
        "4",
        "--num-prompts",
        "1000",
        "--input-tokens",
        "16",
        "--output-tokens",
        "15",
        "--records",
        records.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    // Polled, not slept: on a busy machine start-up alone can take a second.
    wait_until("8 requests finished", Duration::from_secs(30), || {
        line_count(&records) >= 8
    })
    .await;
    sigint(&child);
    let output = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    // A script can tell a cut-short run from a finished one.
    assert_eq!(output.status.code(), Some(130), "{stdout}\n{stderr}");
    assert!(stderr.contains("stopping"), "{stderr}");
    assert!(stderr.contains("results kept"), "{stderr}");
    assert!(stdout.contains("Serving Benchmark Result"), "{stdout}");
    let v = read_json(&out);
    assert_eq!(v["run"]["interrupted"], true);
    let completed = v["completed"].as_u64().unwrap();
    assert!((8..1000).contains(&completed), "completed {completed}");
    let recs = read_records(&records);
    // Every request that was sent finished (in-flight ones were allowed to) and has its line.
    assert_eq!(
        recs.len() as u64,
        v["run"]["sent_measured"].as_u64().unwrap()
    );
    assert_eq!(recs.len() as u64, completed + v["failed"].as_u64().unwrap());
    assert!(recs.iter().all(|r| r["ok"] == true));
    let logged = server.log.lock().unwrap().len() as u64;
    assert!(
        logged >= completed,
        "server saw {logged}, client completed {completed}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_sigint_cancels_requests_in_flight_and_keeps_their_records() {
    let server = start(Script {
        ttft: Duration::from_millis(20),
        interval: Duration::from_millis(50),
        events: 100,
        ..Script::default()
    })
    .await;
    let records = tmp("records.jsonl");
    let out = tmp("results.json");
    let child = spawn_goodput(&[
        "run",
        "--url",
        &server.url(),
        "--concurrency",
        "3",
        "--num-prompts",
        "100",
        "--input-tokens",
        "16",
        "--output-tokens",
        "100",
        "--records",
        records.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    // All three streams have started (polled: start-up time varies with the
    // machine's load), then 400 ms of the script's 50 ms events, so each
    // holds more than 5 events when it is cancelled.
    let log = server.log.clone();
    wait_until(
        "three streams started",
        Duration::from_secs(30),
        move || log.lock().unwrap().len() >= 3,
    )
    .await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    sigint(&child);
    // The second signal comes after the first, whatever the machine's speed.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let second = std::time::Instant::now();
    sigint(&child);
    let output = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    // Streams had ~4 s left; cancellation ends them within the watchdog's tick.
    assert!(
        second.elapsed() < Duration::from_secs(3),
        "took {:?}",
        second.elapsed()
    );
    assert!(stderr.contains("cancelling"), "{stderr}");
    let recs = read_records(&records);
    let cancelled: Vec<_> = recs
        .iter()
        .filter(|r| r["error_kind"] == "cancelled")
        .collect();
    assert_eq!(cancelled.len(), 3, "{recs:?}");
    // The partial record keeps what was seen before the cancel.
    assert!(cancelled
        .iter()
        .all(|r| r["ttft_ms"].as_f64().is_some() && r["events"].as_u64().unwrap() > 5));
    // The user's own cancel is not the server's failure: the three are
    // incomplete, the error rate 0, and the exit 130 (not 1 on the error
    // rate).
    let v = read_json(&out);
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    assert!(
        v["errors"]["by_kind"].get("cancelled").is_none(),
        "{}",
        v["errors"]
    );
    assert_eq!(v["incomplete"], 3, "{}", v["incomplete"]);
    assert_eq!(v["failed"], 0);
    assert_eq!(v["errors"]["error_rate"], 0.0);
}
