//! Injected faults, produced at the configured rates and schedules, against
//! a running simulator.

mod common;

use std::time::Duration;

use common::*;
use goodput_sim::{FaultConfig, FaultSpec, SimConfig};
use serde_json::json;

fn with_faults(faults: FaultConfig) -> SimConfig {
    SimConfig {
        time_scale: 0.02,
        faults,
        ..SimConfig::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_faults_come_at_the_configured_rate() {
    let server = start(with_faults(FaultConfig {
        http_500: FaultSpec::Rate(0.3),
        http_429: FaultSpec::Rate(0.1),
        retry_after_s: 7,
        ..FaultConfig::default()
    }));
    let addr = server.local_addr();
    let mut tasks = Vec::new();
    for i in 0..200 {
        tasks.push(tokio::spawn(async move {
            let body = json!({"prompt": format!("request {i}"), "max_tokens": 1});
            send(addr, "POST", "/v1/completions", Some(body)).await
        }));
    }
    let (mut n500, mut n429, mut ok) = (0, 0, 0);
    for t in tasks {
        let r = t.await.unwrap();
        match r.status {
            500 => n500 += 1,
            429 => {
                n429 += 1;
                assert_eq!(r.headers["retry-after"], "7");
            }
            200 => ok += 1,
            s => panic!("unexpected status {s}"),
        }
    }
    // 30 % of 200 is 60 (sd 6.5); 10 % of the remaining 140 is 14 (sd 3.5).
    assert!((35..=85).contains(&n500), "{n500} x 500");
    assert!((4..=28).contains(&n429), "{n429} x 429");
    assert_eq!(n500 + n429 + ok, 200);
    server.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scheduled_stream_cut_ends_without_done() {
    let server = start(with_faults(FaultConfig {
        stream_cut: FaultSpec::Every(2),
        ..FaultConfig::default()
    }));
    let addr = server.local_addr();
    let intact = stream_completion(addr, "hello there", 20).await;
    assert_eq!(intact.events().last().unwrap().1, "[DONE]");
    let cut = stream_completion(addr, "hello there", 20).await;
    assert!(
        cut.body_error.is_some(),
        "the connection must end abnormally"
    );
    assert_eq!(cut.content_times().len(), 10, "cut in the middle");
    assert!(cut.events().iter().all(|(_, e)| e != "[DONE]"));
    // A whole (non-streamed) response is cut too.
    let _ = stream_completion(addr, "x", 1).await;
    let r = send(
        addr,
        "POST",
        "/v1/completions",
        Some(json!({"prompt": "x", "max_tokens": 5})),
    )
    .await;
    assert_eq!(r.status, 200);
    assert!(r.body_error.is_some());
    assert!(serde_json::from_slice::<serde_json::Value>(&r.body()).is_err());
    server.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_events_stalls_and_slow_headers() {
    let server = start(with_faults(FaultConfig {
        malformed: FaultSpec::Every(3),
        stall: FaultSpec::Every(3),
        stall_s: 0.3,
        slow_headers: FaultSpec::Every(3),
        slow_headers_s: 0.3,
        ..FaultConfig::default()
    }));
    let addr = server.local_addr();
    let normal = stream_completion(addr, "a b c", 10).await;
    let _ = stream_completion(addr, "a b c", 10).await;
    let faulty = stream_completion(addr, "a b c", 10).await;

    let bad = |r: &Reply| {
        r.events()
            .iter()
            .filter(|(_, e)| e != "[DONE]" && serde_json::from_str::<serde_json::Value>(e).is_err())
            .count()
    };
    assert_eq!(bad(&normal), 0);
    assert_eq!(bad(&faulty), 1);
    assert_eq!(faulty.content_times().len(), 10);
    assert_eq!(faulty.events().last().unwrap().1, "[DONE]");

    assert!(normal.head_at - normal.sent_at < Duration::from_millis(200));
    assert!(faulty.head_at - faulty.sent_at >= Duration::from_millis(290));

    let gap = |r: &Reply| {
        let t = r.content_times();
        t.windows(2).map(|w| w[1] - w[0]).max().unwrap()
    };
    assert!(
        gap(&normal) < Duration::from_millis(150),
        "{:?}",
        gap(&normal)
    );
    assert!(
        gap(&faulty) >= Duration::from_millis(290),
        "{:?}",
        gap(&faulty)
    );
    server.shutdown();
}
