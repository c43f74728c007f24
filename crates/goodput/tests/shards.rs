//! Sharded runs: four goodput processes, each started as a Kubernetes
//! Indexed Job starts its pods (the same command line, the index in
//! `JOB_COMPLETION_INDEX`, the coordinator's address), against the built-in
//! simulator and the scripted server; their merged result checked against
//! the shards' own raw records and against one process.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use common::shards::*;
use common::*;
use serde_json::Value;

fn sorted(mut v: Vec<f64>) -> Vec<f64> {
    v.sort_by(f64::total_cmp);
    v
}

/// p50, p90, p99 (numpy's linear method, as goodput reports them).
fn pcts(v: &[f64]) -> [f64; 3] {
    [50.0, 90.0, 99.0].map(|p| goodput_common::percentile::percentile_sorted(v, p).unwrap())
}

/// Request k's scheduled time, s, relative to request 0's, from one
/// process's records file.
fn schedule(records: &[Value]) -> BTreeMap<u64, f64> {
    records
        .iter()
        .map(|r| {
            (
                r["request_id"].as_u64().unwrap(),
                r["sched_s"].as_f64().unwrap(),
            )
        })
        .collect()
}

const SIM_ARGS: [&str; 12] = [
    "run",
    "--request-rate",
    "40",
    "--num-prompts",
    "160",
    "--warmup",
    "8",
    "--input-tokens",
    "128",
    "--output-tokens",
    "16",
    "--seed",
];

/// Four shards against the simulator are one run: the union of their
/// scheduled sends is one process's schedule for the same seed, request for
/// request; the merged p50/p90/p99 TTFT, TPOT and E2EL are exactly those of
/// all the shards' raw records together; every planned request is
/// accounted for; the shards started within 5 ms of each other; and
/// `goodput merge` of the part files gives the same figures.
#[test]
fn four_shards_are_one_run_of_the_same_plan() {
    let (_sim, url) = simulator(0.25);
    let mut args = SIM_ARGS.to_vec();
    args.extend(["7", "--url", &url]);
    // One process, same seed.
    let one = tmp("one.jsonl");
    let mut one_args = args.clone();
    one_args.extend(["--records", one.to_str().unwrap(), "--quiet"]);
    let (code, _, stderr) = goodput(&one_args);
    assert_eq!(code, 0, "{stderr}");
    let one_schedule = schedule(&read_records(&one));
    // Four shards.
    let dir = tmp("x").parent().unwrap().to_path_buf();
    let port = free_port();
    let shard_args = sharded(&args, 4, port, &dir);
    let ends = run_shards(&shard_args, 4, &dir);
    for (i, (code, log)) in ends.iter().enumerate() {
        assert_eq!(*code, 0, "shard {i}:\n{log}");
    }
    let merged = read_json(&dir.join("result-0.json"));
    // The merged document is a run document, its `shards` object included.
    let schema: Value =
        serde_json::from_str(include_str!("../../../schema/run.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&merged)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    let records = placed_records(&dir, 4);
    // Every request of the plan once, warm-up and measured: 8 + 160.
    let ids: Vec<u64> = sorted_ids(&records);
    assert_eq!(ids, (0..168).collect::<Vec<_>>());
    for (shard, r) in &records {
        assert_eq!(r["request_id"].as_u64().unwrap() % 4, *shard as u64);
    }
    // The union of the schedules, request for request: within a shard, the
    // gaps are one process's exactly; across shards, the origins agree
    // within the start skew.
    let mut origin_of: HashMap<u32, Vec<f64>> = HashMap::new();
    for (shard, r) in &records {
        let k = r["request_id"].as_u64().unwrap();
        let at = r["sched_ns"].as_f64().unwrap() / 1e9;
        origin_of
            .entry(*shard)
            .or_default()
            .push(at - one_schedule[&k]);
    }
    let origins: Vec<f64> = origin_of
        .values()
        .map(|v| {
            let (lo, hi) = v
                .iter()
                .fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
            assert!(
                hi - lo < 2e-6,
                "a shard's gaps are one process's (spread {} s)",
                hi - lo
            );
            lo
        })
        .collect();
    let spread = origins.iter().cloned().fold(f64::MIN, f64::max)
        - origins.iter().cloned().fold(f64::MAX, f64::min);
    assert!(spread < 0.005, "schedule origins {spread} s apart");
    let shards = &merged["shards"];
    let skew = shards["start_skew_ms"].as_f64().unwrap();
    assert!(
        skew < 25.0,
        "start skew {skew} ms (BENCHMARKS.md measures it in release)"
    );
    for p in shards["parts"].as_array().unwrap() {
        assert_eq!(p["whole"], true);
        assert!(p["clock_rtt_ns"].as_u64().unwrap() < 50_000_000);
    }
    assert_eq!(shards["unaccounted_requests"], 0);
    // Counts add up to the plan.
    let planned = 160;
    let total = ["completed", "failed", "incomplete"]
        .iter()
        .map(|k| merged[k].as_u64().unwrap())
        .sum::<u64>();
    assert_eq!(total, planned);
    // Percentiles from the raw records, exactly.
    let measured: Vec<&Value> = records
        .iter()
        .map(|(_, r)| r)
        .filter(|r| r["warmup"] == false && r["error"].is_null())
        .collect();
    let ttft = sorted(measured.iter().map(|r| ttft_ms(r)).collect());
    let e2el = sorted(measured.iter().map(|r| e2el_ms(r)).collect());
    let tpot = sorted(measured.iter().filter_map(|r| tpot_ms(r)).collect());
    for (name, values) in [("ttft", &ttft), ("e2el", &e2el), ("tpot", &tpot)] {
        let want = pcts(values);
        for (p, w) in ["p50", "p90", "p99"].iter().zip(want) {
            let got = merged[name][format!("{p}_ms")].as_f64().unwrap();
            assert!(
                (got - w).abs() <= 1e-9 * w.abs().max(1.0),
                "{p} {name}: merged {got}, from the records {w}"
            );
        }
    }
    // The merged records file: every record once, each with its shard.
    let lines = read_records(&dir.join("records-0.jsonl"));
    assert_eq!(lines.len(), 168);
    assert!(lines.iter().all(|l| l["shard"].as_u64().unwrap() < 4));
    // Shard 0's HTML report has the shards; another shard writes none.
    let html = std::fs::read_to_string(dir.join("report-0.html")).unwrap();
    assert!(html.contains("data-section=\"shards\""));
    assert!(!dir.join("report-1.html").exists());
    // Another shard's --out is its part, its --records its own requests.
    let own = part_lines(&dir.join("result-3.json"));
    assert_eq!(own[0]["part"]["shard"]["shard"], 3);
    let own = read_records(&dir.join("records-3.jsonl"));
    assert_eq!(own.len(), 42);
    assert!(own.iter().all(|l| l["shard"] == 3));
    // Offline, from the part files: the same figures.
    let again = dir.join("again.json");
    let parts: Vec<String> = (0..4)
        .map(|i| {
            dir.join(format!("part-{i}.jsonl"))
                .to_str()
                .unwrap()
                .to_string()
        })
        .collect();
    let mut merge_args = vec![
        "merge".to_string(),
        "--quiet".into(),
        "--out".into(),
        again.to_str().unwrap().into(),
    ];
    merge_args.extend(parts);
    let refs: Vec<&str> = merge_args.iter().map(String::as_str).collect();
    let (code, _, stderr) = goodput(&refs);
    assert_eq!(code, 0, "{stderr}");
    let offline = read_json(&again);
    for k in [
        "p50_ttft_ms",
        "p99_ttft_ms",
        "p99_tpot_ms",
        "p99_e2el_ms",
        "request_throughput",
        "completed",
    ] {
        assert_eq!(offline[k], merged[k], "{k}");
    }
}

fn sorted_ids(records: &[(u32, Value)]) -> Vec<u64> {
    let mut ids: Vec<u64> = records
        .iter()
        .map(|(_, r)| r["request_id"].as_u64().unwrap())
        .collect();
    ids.sort_unstable();
    ids
}

fn events(r: &Value) -> Vec<u64> {
    r["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e[0].as_u64().unwrap())
        .collect()
}

fn ms_between(a: u64, b: u64) -> f64 {
    (b - a) as f64 / 1e6
}

fn ttft_ms(r: &Value) -> f64 {
    ms_between(r["t_send"].as_u64().unwrap(), events(r)[0])
}

fn e2el_ms(r: &Value) -> f64 {
    ms_between(r["t_send"].as_u64().unwrap(), *events(r).last().unwrap())
}

/// TPOT over the server's completion tokens (the simulator reports usage).
fn tpot_ms(r: &Value) -> Option<f64> {
    let e = events(r);
    let n = r["usage"]["completion_tokens"].as_u64()?;
    (n >= 2).then(|| ms_between(e[0], *e.last().unwrap()) / (n - 1) as f64)
}

/// A closed loop over four shards against the scripted server: the
/// concurrency is split (6 = 2 + 2 + 1 + 1, so the server never holds more
/// than 6), every planned request is sent once, and the merged TTFTs agree
/// with the server's own log of when it wrote each first token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_loop_splits_its_concurrency_and_matches_the_servers_log() {
    let server = start(Script {
        ttft: Duration::from_millis(40),
        interval: Duration::from_millis(5),
        events: 6,
        ..Script::default()
    })
    .await;
    let dir = tmp("x").parent().unwrap().to_path_buf();
    let args = sharded(
        &[
            "run",
            "--url",
            &server.url(),
            "--concurrency",
            "6",
            "--num-prompts",
            "60",
            "--warmup",
            "0",
            "--input-tokens",
            "16",
            "--output-tokens",
            "6",
        ],
        4,
        free_port(),
        &dir,
    );
    let ends = tokio::task::spawn_blocking({
        let dir = dir.clone();
        move || run_shards(&args, 4, &dir)
    })
    .await
    .unwrap();
    for (i, (code, log)) in ends.iter().enumerate() {
        assert_eq!(*code, 0, "shard {i}:\n{log}");
    }
    let merged = read_json(&dir.join("result-0.json"));
    assert_eq!(merged["completed"], 60);
    let caps: Vec<u64> = merged["shards"]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["sent_measured"].as_u64().unwrap())
        .collect();
    assert_eq!(caps.iter().sum::<u64>(), 60, "{caps:?}");
    // What the server saw: at most 6 at once.
    let log = server.log.lock().unwrap().clone();
    let mut edges: Vec<(Instant, i32)> = Vec::new();
    for e in &log {
        if let Some(last) = e.writes.last() {
            edges.push((e.received, 1));
            edges.push((*last, -1));
        }
    }
    edges.sort();
    let (mut now, mut peak) = (0, 0);
    for (_, d) in edges {
        now += d;
        peak = peak.max(now);
    }
    assert!(peak <= 6, "the server held {peak} requests at once");
    // The client's TTFT against the server's: request by request.
    let by_id = server.by_id();
    let mut gaps = Vec::new();
    for r in read_records(&dir.join("records-0.jsonl")) {
        let id = r["request_id"].as_u64().unwrap();
        let e = &by_id[&id];
        let server_ttft = ms(e.writes[0] - e.received);
        gaps.push(r["ttft_ms"].as_f64().unwrap() - server_ttft);
    }
    let gaps = sorted(gaps);
    let median = goodput_common::percentile::percentile_sorted(&gaps, 50.0).unwrap();
    assert!(
        (0.0..5.0).contains(&median),
        "client minus server TTFT, median {median} ms"
    );
}

/// A shard killed mid-run: the merged result names it, keeps the
/// requests it finished (a shard sends its records to the coordinator as
/// they finish), counts the rest of its part of the plan as unaccounted,
/// and exits 6; the other shards' requests are all in. Its part file,
/// written as its requests finished, gives `goodput merge` the same.
#[test]
fn a_killed_shard_is_named_and_its_requests_counted() {
    let (_sim, url) = simulator(0.25);
    let dir = tmp("x").parent().unwrap().to_path_buf();
    let args = sharded(
        &[
            "run",
            "--url",
            &url,
            "--request-rate",
            "30",
            "--num-prompts",
            "240",
            "--warmup",
            "0",
            "--input-tokens",
            "64",
            "--output-tokens",
            "8",
            "--coordinator-timeout",
            "5s",
        ],
        4,
        free_port(),
        &dir,
    );
    let mut procs: Vec<Shard> = (1..4).map(|i| start_shard(&args, i, &dir)).collect();
    let mut zero = start_shard(&args, 0, &dir);
    // Shard 2 dies 3 s into its 8 s of sending.
    std::thread::sleep(Duration::from_secs(4));
    procs[1].child.kill().unwrap();
    let (code, log) = wait(&mut zero, Duration::from_secs(120));
    for p in procs.iter_mut() {
        let _ = p.child.kill();
        let _ = p.child.wait();
    }
    assert_eq!(code, 6, "{log}");
    assert!(log.contains("shard 2"), "{log}");
    let merged = read_json(&dir.join("result-0.json"));
    let shards = &merged["shards"];
    let lost = shards["lost"].as_array().unwrap();
    assert_eq!(lost.len(), 1, "{shards}");
    assert_eq!(lost[0]["shard"], 2);
    assert!(
        lost[0]["why"].as_str().unwrap().contains("died"),
        "{shards}"
    );
    let unaccounted = shards["unaccounted_requests"].as_u64().unwrap();
    let counted: u64 = ["completed", "failed", "incomplete"]
        .iter()
        .map(|k| merged[k].as_u64().unwrap())
        .sum();
    assert!(
        unaccounted < 60,
        "its finished requests are in: {unaccounted} unaccounted"
    );
    assert_eq!(counted + unaccounted, 240, "{merged:#}");
    let notes = merged["run"]["notes"].to_string();
    assert!(notes.contains("shard 2 of 4 is missing"), "{notes}");
    // Its part file was written as its requests finished: merged offline,
    // the requests it finished before it died are in, and only the rest
    // are unaccounted.
    let again = dir.join("again.json");
    let mut merge_args = argv(&["merge", "--quiet", "--out", again.to_str().unwrap()]);
    merge_args.extend((0..4).map(|i| {
        dir.join(format!("part-{i}.jsonl"))
            .to_str()
            .unwrap()
            .to_string()
    }));
    let refs: Vec<&str> = merge_args.iter().map(String::as_str).collect();
    let (code, _, stderr) = goodput(&refs);
    assert_eq!(code, 6, "{stderr}");
    let offline = read_json(&again);
    let lost = &offline["shards"]["lost"];
    assert_eq!(lost[0]["shard"], 2, "{lost}");
    assert!(
        lost[0]["why"].as_str().unwrap().contains("mid-run"),
        "{lost}"
    );
    let unaccounted = offline["shards"]["unaccounted_requests"].as_u64().unwrap();
    let counted: u64 = ["completed", "failed", "incomplete"]
        .iter()
        .map(|k| offline[k].as_u64().unwrap())
        .sum();
    assert!(
        unaccounted < 60,
        "its finished requests are in: {unaccounted} unaccounted"
    );
    assert_eq!(counted + unaccounted, 240);
}

/// A shard that never registers: the coordinator waits for it until
/// --coordinator-timeout, then exits 6 naming it; nothing is sent.
#[test]
fn a_shard_that_never_registers_is_named_by_the_coordinator() {
    let (_sim, url) = simulator(1.0);
    let dir = tmp("x").parent().unwrap().to_path_buf();
    let args = sharded(
        &[
            "run",
            "--url",
            &url,
            "--request-rate",
            "10",
            "--num-prompts",
            "10",
            "--coordinator-timeout",
            "2s",
        ],
        3,
        free_port(),
        &dir,
    );
    let mut one = start_shard(&args, 1, &dir);
    let mut zero = start_shard(&args, 0, &dir);
    let (code, log) = wait(&mut zero, Duration::from_secs(60));
    assert_eq!(code, 6, "{log}");
    assert!(log.contains("shards 2 never registered"), "{log}");
    let _ = wait(&mut one, Duration::from_secs(60));
}

/// Sessions stay whole (every turn of a session on the shard that started
/// it) and a trace splits by request, each sent at its own timestamp: two
/// shards against the scripted server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_stay_whole_and_a_trace_splits_by_request() {
    let server = start(Script::quick()).await;
    // Sessions: 8 sessions of 3 turns over 2 shards, 2 users each.
    let dir = tmp("x").parent().unwrap().to_path_buf();
    let args = sharded(
        &[
            "run",
            "--url",
            &server.url(),
            "--concurrency",
            "4",
            "--turns",
            "3",
            "--think-time",
            "20ms",
            "--num-prompts",
            "24",
            "--warmup",
            "0",
            "--input-tokens",
            "16",
            "--output-tokens",
            "4",
        ],
        2,
        free_port(),
        &dir,
    );
    let d = dir.clone();
    tokio::task::spawn_blocking(move || run_shards_ok(&args, 2, &d))
        .await
        .unwrap();
    let mut shard_of: HashMap<u64, u64> = HashMap::new();
    let records = read_records(&dir.join("records-0.jsonl"));
    assert!(records.len() >= 20, "{}", records.len());
    for r in &records {
        let (session, shard) = (
            r["session_id"].as_u64().unwrap(),
            r["shard"].as_u64().unwrap(),
        );
        assert_eq!(
            *shard_of.entry(session).or_insert(shard),
            shard,
            "session {session} on two shards"
        );
    }
    assert_eq!(
        shard_of
            .values()
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
        2
    );
    // A trace: 20 requests 50 ms apart, each at its own time on shard k mod 2.
    let trace = dir.join("trace.jsonl");
    let rows: Vec<String> = (0..20)
        .map(|k| {
            format!(
                "{{\"timestamp\": {}, \"input_tokens\": 8, \"output_tokens\": 4}}",
                k * 50
            )
        })
        .collect();
    std::fs::write(&trace, rows.join("\n")).unwrap();
    let tdir = tmp("y").parent().unwrap().to_path_buf();
    let args = sharded(
        &[
            "run",
            "--url",
            &server.url(),
            "--trace",
            trace.to_str().unwrap(),
            "--trace-time-unit",
            "ms",
            "--warmup",
            "0",
        ],
        2,
        free_port(),
        &tdir,
    );
    let d = tdir.clone();
    tokio::task::spawn_blocking(move || run_shards_ok(&args, 2, &d))
        .await
        .unwrap();
    let placed = placed_records(&tdir, 2);
    assert_eq!(placed.len(), 20);
    let first = placed
        .iter()
        .map(|(_, r)| r["sched_ns"].as_i64().unwrap())
        .min()
        .unwrap();
    for (shard, r) in &placed {
        let k = r["request_id"].as_i64().unwrap();
        assert_eq!(k % 2, *shard as i64);
        let at_ms = (r["sched_ns"].as_i64().unwrap() - first) as f64 / 1e6;
        assert!(
            (at_ms - (k * 50) as f64).abs() < 5.0,
            "request {k} scheduled at {at_ms} ms"
        );
    }
}
