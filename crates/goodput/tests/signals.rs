//! The signal matrix: SIGINT and SIGTERM at every moment of a run or a
//! sweep — model discovery, the probe, the warm-up, measuring, draining
//! (requests in flight after sending ended), and between sweep points —
//! lose nothing: the records file holds a line for every request that
//! ended, the results file is a valid document (a sweep's: the points
//! finished so far), and the exit code is the documented one (130 when no
//! measured result exists yet, else the code the result earns). A second
//! signal cancels the requests in flight (`cancelled`) and still writes
//! everything.
//!
//! Each moment is reached by polling for it (the server has read the
//! discovery request, the records file has a wave of lines...), never by a
//! fixed sleep, and each test runs its SIGINT and SIGTERM cases side by side.

mod common;

use std::path::PathBuf;
use std::process::Child;
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

const SIGINT: i32 = libc::SIGINT;
const SIGTERM: i32 = libc::SIGTERM;
/// Generous: a moment is normally reached in well under a second.
const WITHIN: Duration = Duration::from_secs(20);

fn validate(doc: &Value, schema: &str) {
    let schema: Value = serde_json::from_str(schema).unwrap();
    let errors: Vec<String> = jsonschema::validator_for(&schema)
        .unwrap()
        .iter_errors(doc)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "schema violations: {errors:?}\n{doc}");
}

const RUN_SCHEMA: &str = include_str!("../../../schema/run.schema.json");
const SWEEP_SCHEMA: &str = include_str!("../../../schema/sweep.schema.json");

/// What a finished child left: exit code, stderr, and how long it took
/// after the last signal.
struct Ended {
    code: Option<i32>,
    stderr: String,
    after_signal: Duration,
}

/// Signal the child (`second`: again, 300 ms later) and wait for it.
async fn stop(child: Child, first: i32, second: Option<i32>) -> Ended {
    signal(&child, first);
    if let Some(s) = second {
        tokio::time::sleep(Duration::from_millis(300)).await;
        signal(&child, s);
    }
    let t = Instant::now();
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    Ended {
        code: out.status.code(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        after_signal: t.elapsed(),
    }
}

fn tag_seen(server: &ScriptedServer, suffix: &str) -> bool {
    server
        .seen
        .lock()
        .unwrap()
        .iter()
        .any(|t| t.ends_with(suffix))
}

/// Requests (not discovery, not the probe) the server has read.
fn requests_seen(server: &ScriptedServer) -> usize {
    server
        .seen
        .lock()
        .unwrap()
        .iter()
        .filter(|t| {
            t.rsplit('-')
                .next()
                .is_some_and(|id| id.parse::<u64>().is_ok())
        })
        .count()
}

/// A run's document and records agree, and lose nothing: every request
/// issued (warm-up included) ended with exactly one record.
fn check_run(v: &Value, recs: &[Value]) {
    validate(v, RUN_SCHEMA);
    let run = &v["run"];
    let (warmup, measured) = (
        run["warmup_requests"].as_u64().unwrap(),
        run["sent_measured"].as_u64().unwrap(),
    );
    assert_eq!(recs.len() as u64, warmup + measured, "{run}");
    let in_phase = |p: &str| recs.iter().filter(|r| r["phase"] == p).count() as u64;
    assert_eq!(
        (in_phase("warmup"), in_phase("measure")),
        (warmup, measured)
    );
    let total: u64 = ["completed", "failed", "incomplete"]
        .iter()
        .map(|k| v[k].as_u64().unwrap())
        .sum();
    assert_eq!(total, measured, "{run}");
    let mut ids: Vec<u64> = recs
        .iter()
        .map(|r| r["request_id"].as_u64().unwrap())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), recs.len(), "one record per request");
}

fn kinds(recs: &[Value], kind: &str) -> usize {
    recs.iter().filter(|r| r["error_kind"] == kind).count()
}

struct Files {
    records: PathBuf,
    out: PathBuf,
}

impl Files {
    fn new() -> Files {
        Files {
            records: tmp("records.jsonl"),
            out: tmp("results.json"),
        }
    }

    /// `args` plus `--records`, `--out` and `--quiet`.
    fn spawn(&self, args: &[&str]) -> Child {
        let mut v = args.to_vec();
        v.extend([
            "--records",
            self.records.to_str().unwrap(),
            "--out",
            self.out.to_str().unwrap(),
            "--quiet",
        ]);
        spawn_goodput(&v)
    }

    fn doc(&self) -> Value {
        read_json(&self.out)
    }

    fn records(&self) -> Vec<Value> {
        read_records(&self.records)
    }
}

/// Streams of about 1.2 s: long enough to signal while they run.
fn slow() -> Script {
    Script {
        ttft: Duration::from_millis(20),
        interval: Duration::from_millis(20),
        events: 60,
        ..Script::default()
    }
}

// ---------------------------------------------------------------------------
// Before any request: discovery and the probe.

/// Stopped while preparing: 130 at once, an empty records file, and a
/// results document that says nothing was sent (never an empty file).
async fn while_preparing(sig: i32, hang: &str, sweep: bool) {
    let script = match hang {
        "-models" => Script {
            models: Behavior::Hang,
            ..Script::quick()
        },
        _ => Script {
            probe: Behavior::Hang,
            ..Script::quick()
        },
    };
    let server = start(script).await;
    let f = Files::new();
    let url = server.url();
    let child = if sweep {
        f.spawn(&[
            "sweep",
            "--url",
            &url,
            "--rates",
            "2,4",
            "--timeout",
            "600s",
        ])
    } else {
        f.spawn(&[
            "run",
            "--url",
            &url,
            "--concurrency",
            "2",
            "--timeout",
            "600s",
        ])
    };
    wait_until(&format!("asked {hang}"), WITHIN, || tag_seen(&server, hang)).await;
    let e = stop(child, sig, None).await;
    let what = format!("signal {sig} in {hang} (sweep: {sweep})");
    assert_eq!(e.code, Some(130), "{what}: {}", e.stderr);
    assert!(
        e.stderr.contains("interrupted before any request was sent"),
        "{what}: {}",
        e.stderr
    );
    assert!(
        e.after_signal < Duration::from_secs(5),
        "{what}: took {:?}",
        e.after_signal
    );
    assert_eq!(line_count(&f.records), 0, "{what}");
    assert!(
        f.records.exists(),
        "{what}: the records file is created at the start"
    );
    assert_eq!(requests_seen(&server), 0, "{what}");
    let v = f.doc();
    if sweep {
        validate(&v, SWEEP_SCHEMA);
        assert_eq!(v["points"], serde_json::json!([]), "{what}");
        assert_eq!(
            v["stopped"], "interrupted before any request was sent",
            "{what}"
        );
    } else {
        check_run(&v, &f.records());
        assert_eq!(
            (&v["completed"], &v["run"]["sent"], &v["run"]["interrupted"]),
            (&Value::from(0), &Value::from(0), &Value::from(true)),
            "{what}"
        );
        assert!(
            v["run"]["notes"][0]
                .as_str()
                .unwrap()
                .contains("nothing was measured"),
            "{what}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_during_model_discovery_writes_a_document_saying_nothing_was_sent() {
    tokio::join!(
        while_preparing(SIGINT, "-models", false),
        while_preparing(SIGTERM, "-models", false),
        while_preparing(SIGINT, "-models", true),
        while_preparing(SIGTERM, "-models", true),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_during_the_probe_writes_a_document_saying_nothing_was_sent() {
    tokio::join!(
        while_preparing(SIGINT, "-probe", false),
        while_preparing(SIGTERM, "-probe", false),
    );
}

// ---------------------------------------------------------------------------
// The warm-up.

/// Stopped in the warm-up: the warm-up requests in flight finish (or, after
/// a second signal, are cancelled) and keep their records; no measured
/// request was sent, so there is no result to judge: 130, and the document
/// says what ran.
async fn in_warmup(sig: i32, second: Option<i32>) {
    let server = start(slow()).await;
    let f = Files::new();
    let child = f.spawn(&[
        "run",
        "--url",
        &server.url(),
        "--concurrency",
        "2",
        "--warmup",
        "4",
        "--num-prompts",
        "10",
        "--input-tokens",
        "8",
        "--output-tokens",
        "60",
    ]);
    wait_until("in the warm-up", WITHIN, || requests_seen(&server) >= 2).await;
    let e = stop(child, sig, second).await;
    let what = format!("signal {sig} then {second:?}");
    assert_eq!(e.code, Some(130), "{what}: {}", e.stderr);
    assert!(
        e.stderr.contains("before any measured request"),
        "{what}: {}",
        e.stderr
    );
    let (v, recs) = (f.doc(), f.records());
    check_run(&v, &recs);
    assert_eq!(v["run"]["warmup_requests"], 2, "{what}");
    assert_eq!(v["run"]["sent_measured"], 0, "{what}");
    assert_eq!(v["run"]["interrupted"], true, "{what}");
    match second {
        None => assert!(recs.iter().all(|r| r["ok"] == true), "{what}: {recs:?}"),
        Some(_) => assert_eq!(kinds(&recs, "cancelled"), 2, "{what}: {recs:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_during_the_warmup_exits_130_and_keeps_the_warmup_records() {
    tokio::join!(
        in_warmup(SIGINT, None),
        in_warmup(SIGTERM, None),
        in_warmup(SIGTERM, Some(SIGINT)),
    );
}

// ---------------------------------------------------------------------------
// Measuring, and draining.

/// `num_prompts` measured requests, 3 at a time, signalled once the first
/// 3 have their records and the server has read `wave` requests: the second
/// wave just started, with about 1.2 s to run. With `wave = num_prompts`,
/// sending has ended: the run is draining.
async fn while_running(sig: i32, second: Option<i32>, num_prompts: u64, wave: usize) {
    let server = start(slow()).await;
    let f = Files::new();
    let n = num_prompts.to_string();
    let child = f.spawn(&[
        "run",
        "--url",
        &server.url(),
        "--concurrency",
        "3",
        "--num-prompts",
        &n,
        "--input-tokens",
        "8",
        "--output-tokens",
        "60",
    ]);
    let records = f.records.clone();
    wait_until("past the first wave", WITHIN, || {
        line_count(&records) >= 3 && requests_seen(&server) >= wave
    })
    .await;
    let e = stop(child, sig, second).await;
    let what = format!("signal {sig} then {second:?}, {num_prompts} prompts");
    let (v, recs) = (f.doc(), f.records());
    check_run(&v, &recs);
    assert!(!e.stderr.contains("panicked"), "{what}: {}", e.stderr);
    let draining = wave as u64 == num_prompts;
    // Stopping while draining stops nothing that was still to be sent.
    assert_eq!(v["run"]["interrupted"], !draining, "{what}");
    if draining {
        assert_eq!(
            v["run"]["sent_measured"].as_u64(),
            Some(num_prompts),
            "{what}"
        );
    }
    match second {
        None => {
            // Cut short: 130 whatever it measured; a signal while draining
            // cut nothing short, and the gate decides.
            let code = if draining { 0 } else { 130 };
            assert_eq!(e.code, Some(code), "{what}: {}", e.stderr);
            assert!(recs.iter().all(|r| r["ok"] == true), "{what}: {recs:?}");
        }
        Some(_) => {
            // The wave in flight was cancelled; its records keep what came.
            // The user's cancel is no error: the three are incomplete, and
            // the run exits 130, not 1 on the error rate.
            assert_eq!(e.code, Some(130), "{what}: {}", e.stderr);
            assert_eq!(kinds(&recs, "cancelled"), 3, "{what}: {recs:?}");
            assert_eq!(v["incomplete"], 3, "{what}");
            assert_eq!(v["failed"], 0, "{what}");
            assert!(v["errors"]["by_kind"].get("cancelled").is_none(), "{what}");
            assert!(e.stderr.contains("cancelling"), "{what}: {}", e.stderr);
            assert!(
                e.after_signal < Duration::from_secs(3),
                "{what}: {:?}",
                e.after_signal
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_while_measuring_stops_sending_and_loses_nothing() {
    tokio::join!(
        while_running(SIGINT, None, 200, 6),
        while_running(SIGTERM, None, 200, 6),
        while_running(SIGTERM, Some(SIGTERM), 200, 6),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_while_draining_lets_the_last_requests_finish() {
    tokio::join!(
        while_running(SIGINT, None, 6, 6),
        while_running(SIGTERM, None, 6, 6),
        while_running(SIGINT, Some(SIGTERM), 6, 6),
    );
}

// ---------------------------------------------------------------------------
// Sweeps.

/// A sweep's document holds every point that measured something, each a
/// valid run; returns the requests its points issued (each has a record).
fn check_sweep(v: &Value) -> u64 {
    validate(v, SWEEP_SCHEMA);
    let mut issued = 0;
    for p in v["points"].as_array().unwrap() {
        let r = &p["result"];
        validate(r, RUN_SCHEMA);
        let run = &r["run"];
        let measured = run["sent_measured"].as_u64().unwrap();
        assert!(
            measured > 0,
            "a point that measured nothing is no point: {run}"
        );
        let total: u64 = ["completed", "failed", "incomplete"]
            .iter()
            .map(|k| r[k].as_u64().unwrap())
            .sum();
        assert_eq!(total, measured, "{run}");
        issued += measured + run["warmup_requests"].as_u64().unwrap();
    }
    issued
}

/// Signalled as soon as the first point is written, while the second starts.
async fn between_points(sig: i32, second: Option<i32>) {
    let server = start(Script {
        ttft: Duration::from_millis(20),
        interval: Duration::from_millis(20),
        events: 20,
        ..Script::default()
    })
    .await;
    let f = Files::new();
    let child = f.spawn(&[
        "sweep",
        "--url",
        &server.url(),
        "--rates",
        "4,8,16",
        "--point-time",
        "1s",
        "--input-tokens",
        "8",
        "--output-tokens",
        "20",
    ]);
    let out = f.out.clone();
    wait_until("one point written", WITHIN, || {
        std::fs::read_to_string(&out)
            .ok()
            .and_then(|s| serde_json::from_str::<Value>(&s).ok())
            .is_some_and(|v| v["points"].as_array().is_some_and(|p| !p.is_empty()))
    })
    .await;
    let e = stop(child, sig, second).await;
    let what = format!("signal {sig} then {second:?}");
    // Points were measured, but the sweep was cut short: 130, results kept.
    assert_eq!(e.code, Some(130), "{what}: {}", e.stderr);
    let (v, recs) = (f.doc(), f.records());
    let issued = check_sweep(&v);
    assert_eq!(
        recs.len() as u64,
        issued,
        "{what}: every request of every point has its line"
    );
    let points = v["points"].as_array().unwrap().len();
    assert!((1..=2).contains(&points), "{what}: {points} points");
    assert_eq!(v["stopped"], "interrupted", "{what}");
    // Cancelled requests are incomplete, never errors.
    let sum = |key: &dyn Fn(&Value) -> u64| -> u64 {
        v["points"].as_array().unwrap().iter().map(key).sum()
    };
    let as_errors = sum(&|p| {
        p["result"]["errors"]["by_kind"]["cancelled"]
            .as_u64()
            .unwrap_or(0)
    });
    assert_eq!(as_errors, 0, "{what}");
    let incomplete = sum(&|p| p["result"]["incomplete"].as_u64().unwrap_or(0));
    let measured_cancelled = recs
        .iter()
        .filter(|r| r["error_kind"] == "cancelled" && r["phase"] != "warmup")
        .count() as u64;
    assert!(measured_cancelled <= incomplete, "{what}");
    if second.is_none() {
        assert_eq!(kinds(&recs, "cancelled"), 0, "{what}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_between_sweep_points_keeps_the_points_so_far() {
    tokio::join!(
        between_points(SIGINT, None),
        between_points(SIGTERM, None),
        between_points(SIGINT, Some(SIGINT)),
    );
}

/// Stopped in its first point's warm-up, a sweep has no point: 130, and a
/// document with none; the warm-up's records are kept.
async fn sweep_in_first_warmup(sig: i32) {
    let server = start(slow()).await;
    let f = Files::new();
    let child = f.spawn(&[
        "sweep",
        "--url",
        &server.url(),
        // Four warm-up requests 0.5 s apart: the signal comes long before
        // the first measured one.
        "--rates",
        "2",
        "--arrival",
        "constant",
        "--warmup",
        "4",
        "--input-tokens",
        "8",
        "--output-tokens",
        "60",
    ]);
    wait_until("in the warm-up", WITHIN, || requests_seen(&server) >= 1).await;
    let e = stop(child, sig, None).await;
    assert_eq!(e.code, Some(130), "signal {sig}: {}", e.stderr);
    let (v, recs) = (f.doc(), f.records());
    assert_eq!(check_sweep(&v), 0);
    assert_eq!(v["points"], serde_json::json!([]));
    assert!(
        !recs.is_empty() && recs.iter().all(|r| r["phase"] == "warmup"),
        "{recs:?}"
    );
    assert!(recs.iter().all(|r| r["ok"] == true), "{recs:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_in_a_sweeps_first_warmup_exits_130_with_no_point() {
    tokio::join!(
        sweep_in_first_warmup(SIGINT),
        sweep_in_first_warmup(SIGTERM)
    );
}

/// A signal ends the process promptly during model discovery.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_during_model_discovery_ends_the_run_within_two_seconds() {
    let (addr, accepted) = silent_server().await;
    for signal in [libc::SIGINT, libc::SIGTERM] {
        let url = format!("http://{addr}");
        let child = spawn_goodput(&["run", "--url", &url, "--timeout", "600s"]);
        let before = accepted.load(std::sync::atomic::Ordering::SeqCst);
        let seen = accepted.clone();
        wait_until("discovery started", Duration::from_secs(30), move || {
            seen.load(std::sync::atomic::Ordering::SeqCst) > before
        })
        .await;
        let sent = Instant::now();
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, signal) };
        let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
            .await
            .unwrap();
        let took = sent.elapsed();
        assert!(
            took < Duration::from_secs(2),
            "signal {signal}: took {took:?}"
        );
        assert_eq!(
            out.status.code(),
            Some(130),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stderr)
            .contains("interrupted before any request was sent"));
    }
}
