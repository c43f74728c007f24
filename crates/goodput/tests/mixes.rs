//! Request mixes: a `--model` list of LoRA adapters and `--priority-mix`
//! classes, against the simulator (per-group figures that show an
//! adapter's load cost and a low class that starves) and against a scripted
//! server that logs what each request carried (its `model`, `priority` or
//! header, in the shares drawn).

mod common;

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use common::*;
use http_body_util::{BodyExt, Full};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::Value;

fn sim(config: goodput_sim::SimConfig) -> (goodput_sim::SimServer, String) {
    let sim = goodput_sim::SimServer::spawn(config, "127.0.0.1:0".parse().unwrap()).unwrap();
    let url = format!("http://{}", sim.local_addr());
    (sim, url)
}

fn validate(doc: &Value) {
    common::validate_run_document(doc);
}

fn p(group: &Value, metric: &str, pct: &str) -> f64 {
    group[metric][pct]
        .as_f64()
        .unwrap_or_else(|| panic!("{metric}.{pct} in {group}"))
}

/// With one adapter per batch and a load cost, the adapters' requests wait
/// for the switch and pay the load: their TTFT is well above the base
/// model's. Counts per model add up to the run's, and each record names its
/// model.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lora_mix_reports_each_adapters_ttft_with_its_load_cost() {
    let mut config = goodput_sim::SimConfig {
        time_scale: 0.2,
        ..Default::default()
    };
    config.lora.modules = vec!["ad-a".into(), "ad-b".into()];
    config.lora.max_loras = Some(1);
    // 50 ms of engine time per load at this time scale.
    config.lora.load_ms = 250.0;
    let base = config.model_name().to_string();
    let (_sim, url) = sim(config);
    let (status, models) = http_get(url.trim_start_matches("http://"), "/v1/models");
    assert_eq!(status, 200);
    let models: Value = serde_json::from_str(&models).unwrap();
    assert_eq!(models["data"][1]["id"], "ad-a", "{models}");
    assert_eq!(models["data"][2]["parent"], base.as_str(), "{models}");
    let (out, records) = (tmp("lora.json"), tmp("lora.jsonl"));
    let models = format!("{base}:0.5,ad-a:0.25,ad-b:0.25");
    let (code, stdout, stderr) = goodput_async(argv(&[
        "run",
        "--url",
        &url,
        "--model",
        &models,
        "--concurrency",
        "8",
        "--num-prompts",
        "160",
        "--input-tokens",
        "128",
        "--output-tokens",
        "16",
        "--out",
        out.to_str().unwrap(),
        "--records",
        records.to_str().unwrap(),
    ]))
    .await;
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stdout.contains("Per model"), "{stdout}");
    let doc = read_json(&out);
    validate(&doc);
    let by_model = doc["groups"]["by_model"].as_object().unwrap();
    let names: Vec<&str> = by_model.keys().map(String::as_str).collect();
    assert_eq!(names, ["ad-a", "ad-b", base.as_str()]);
    let completed: u64 = by_model
        .values()
        .map(|g| g["completed"].as_u64().unwrap())
        .sum();
    assert_eq!(completed, doc["completed"].as_u64().unwrap());
    assert_eq!(completed, 160);
    let mut per_record = BTreeMap::<String, u64>::new();
    for r in read_records(&records) {
        *per_record
            .entry(r["model"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    for (name, g) in by_model {
        assert_eq!(per_record[name], g["completed"].as_u64().unwrap(), "{name}");
    }
    // A load lengthens the step it happens in for every request of the
    // batch, base model's included; what only the adapters pay is the wait
    // for the one adapter slot while the other adapter holds it. That wait
    // falls on some of their requests, not on a fixed share: the mean and
    // the p90 show it where the median may not.
    let base_mean = p(&by_model[&base], "ttft", "mean_ms");
    let base_p90 = p(&by_model[&base], "ttft", "p90_ms");
    for adapter in ["ad-a", "ad-b"] {
        let mean = p(&by_model[adapter], "ttft", "mean_ms");
        let p90 = p(&by_model[adapter], "ttft", "p90_ms");
        assert!(
            mean > base_mean + 10.0 && p90 > base_p90 + 25.0,
            "{adapter}: TTFT mean {mean} ms, p90 {p90} ms; base model mean {base_mean} ms, p90 {base_p90} ms: the wait for the adapter slot and its load should show"
        );
    }
    assert_eq!(doc["config"]["mix"]["models"]["models"][1]["name"], "ad-a");
    assert!(doc["groups"]["by_class"].as_object().unwrap().is_empty());
}

/// Three hundred requests at 400/s into eight sequences: about three times
/// what the simulator serves. `args` are the class flags.
async fn saturated(url: &str, classes: &str, name: &str) -> (Value, String) {
    let out = tmp(name);
    let (_, stdout, stderr) = goodput_async(argv(&[
        "run",
        "--url",
        url,
        "--priority-mix",
        classes,
        "--request-rate",
        "400",
        "--num-prompts",
        "300",
        "--input-tokens",
        "256",
        "--output-tokens",
        "32",
        "--slo",
        "ttft:p99<=300ms",
        "--out",
        out.to_str().unwrap(),
    ]))
    .await;
    assert!(out.exists(), "{stdout}\n{stderr}");
    (read_json(&out), stdout)
}

fn saturating(policy: goodput_sim::SchedulingPolicy) -> goodput_sim::SimConfig {
    goodput_sim::SimConfig {
        time_scale: 0.2,
        max_num_seqs: 8,
        scheduling_policy: policy,
        ..Default::default()
    }
}

/// Under saturation the priority policy serves the interactive class first:
/// its p99 TTFT stays far below the batch class's, which starves and fails
/// the SLO. Under fcfs (classes sent by header, which the engine does not
/// read) the two are alike. `compare` then carries the per-class figures
/// and gates on them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_priority_mix_under_saturation_serves_the_high_class_first() {
    let (_sim, url) = sim(saturating(goodput_sim::SchedulingPolicy::Priority));
    let (doc, stdout) = saturated(
        &url,
        "interactive:0.2:priority=0,batch:0.8:priority=10",
        "priority.json",
    )
    .await;
    validate(&doc);
    let by_class = &doc["groups"]["by_class"];
    let (hi, lo) = (&by_class["interactive"], &by_class["batch"]);
    let requests = hi["requests"].as_u64().unwrap() + lo["requests"].as_u64().unwrap();
    assert_eq!(requests, 300);
    let (hi_p99, lo_p99) = (p(hi, "ttft", "p99_ms"), p(lo, "ttft", "p99_ms"));
    assert!(
        hi_p99 * 4.0 < lo_p99,
        "p99 TTFT interactive {hi_p99} ms, batch {lo_p99} ms"
    );
    assert_eq!(hi["slo"]["meets"], true, "{hi}");
    assert_eq!(lo["slo"]["meets"], false, "{lo}");
    assert!(stdout.contains("Per class"), "{stdout}");
    let row = stdout.lines().find(|l| l.starts_with("batch ")).unwrap();
    assert!(row.ends_with("fails"), "{row}");

    let (_fcfs_sim, fcfs_url) = sim(saturating(goodput_sim::SchedulingPolicy::Fcfs));
    let (fcfs, _) = saturated(
        &fcfs_url,
        "interactive:0.2:header=x-priority:0,batch:0.8:header=x-priority:10",
        "fcfs.json",
    )
    .await;
    let by_class = &fcfs["groups"]["by_class"];
    let (hi, lo) = (
        p(&by_class["interactive"], "ttft", "p50_ms"),
        p(&by_class["batch"], "ttft", "p50_ms"),
    );
    assert!(
        hi > lo / 2.0 && hi < lo * 2.0,
        "under fcfs the classes are alike: median TTFT interactive {hi} ms, batch {lo} ms"
    );

    let (base, new) = (tmp("fcfs-saved.json"), tmp("priority-saved.json"));
    std::fs::write(&base, fcfs.to_string()).unwrap();
    std::fs::write(&new, doc.to_string()).unwrap();
    let (code, stdout, stderr) = goodput_async(argv(&[
        "compare",
        base.to_str().unwrap(),
        new.to_str().unwrap(),
        "--fail-on",
        "by_class.interactive.p99_ttft_ms<-50%",
    ]))
    .await;
    assert!(
        stdout.contains("by_class.batch.p99_ttft_ms"),
        "{stdout}\n{stderr}"
    );
    // The interactive class's p99 fell by far more than half: the gate
    // (fails below -50 %) fails.
    assert_ne!(code, 0, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("FAIL  by_class.interactive.p99_ttft_ms<-50%"),
        "{stdout}"
    );
}

/// Under fcfs the simulator answers a non-zero priority as vLLM does: 400.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_priority_without_the_priority_policy_is_refused_as_vllm_refuses_it() {
    let (_sim, url) = sim(saturating(goodput_sim::SchedulingPolicy::Fcfs));
    let out = tmp("refused.json");
    let (_, stdout, stderr) = goodput_async(argv(&[
        "run",
        "--url",
        &url,
        "--priority-mix",
        "a:0.5:priority=0,b:0.5:priority=10",
        "--num-prompts",
        "40",
        "--output-tokens",
        "4",
        "--out",
        out.to_str().unwrap(),
    ]))
    .await;
    let doc = read_json(&out);
    let (a, b) = (
        &doc["groups"]["by_class"]["a"],
        &doc["groups"]["by_class"]["b"],
    );
    assert_eq!(a["failed"], 0, "{stdout}\n{stderr}");
    assert_eq!(b["completed"], 0, "{b}");
    assert!(b["failed"].as_u64().unwrap() > 0);
    assert!(doc["errors"]["by_kind"]["http_400"].as_u64().unwrap() > 0);
    // Undefined, not zero: a class without a completed request has no TTFT.
    assert!(b["ttft"].is_null());
}

/// What one request to the logging server carried.
#[derive(Debug, Clone)]
struct Seen {
    tag: String,
    header: Option<String>,
    body: Value,
}

/// A server that logs every chat request and streams a short answer in
/// vLLM's wire format (a role chunk, content chunks, a usage chunk, `[DONE]`).
async fn logging_server() -> (String, Arc<Mutex<Vec<Seen>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let log = Arc::new(Mutex::new(Vec::new()));
    let log2 = log.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let log = log2.clone();
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |req| answer(req, log.clone()));
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    (url, log)
}

async fn answer(
    req: Request<hyper::body::Incoming>,
    log: Arc<Mutex<Vec<Seen>>>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let header = |n: &str| {
        req.headers()
            .get(n)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let (tag, prio) = (header("x-request-id").unwrap_or_default(), header("x-prio"));
    if req.uri().path() == "/v1/models" {
        let body = r#"{"object":"list","data":[{"id":"m1","object":"model"}]}"#;
        return Ok(Response::new(Full::new(Bytes::from(body))));
    }
    let bytes = req.into_body().collect().await.unwrap().to_bytes();
    let body: Value = serde_json::from_slice(&bytes).unwrap_or_default();
    let model = body["model"].as_str().unwrap_or("").to_string();
    log.lock().unwrap().push(Seen {
        tag,
        header: prio,
        body,
    });
    let chunk = |delta: &str, finish: &str| {
        format!(
            "data: {{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"{model}\",\"choices\":[{{\"index\":0,\"delta\":{delta},\"finish_reason\":{finish}}}]}}\n\n"
        )
    };
    let mut sse = chunk(r#"{"role":"assistant","content":""}"#, "null");
    for i in 0..3 {
        let finish = if i == 2 { "\"length\"" } else { "null" };
        sse.push_str(&chunk(r#"{"content":" the"}"#, finish));
    }
    sse.push_str(&format!("data: {{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"{model}\",\"choices\":[],\"usage\":{{\"prompt_tokens\":8,\"completion_tokens\":3,\"total_tokens\":11}}}}\n\ndata: [DONE]\n\n"));
    let mut r = Response::new(Full::new(Bytes::from(sse)));
    r.headers_mut()
        .insert("content-type", "text/event-stream".parse().unwrap());
    Ok(r)
}

/// Run against the logging server; the records and, by request id, what
/// the server saw.
async fn logged_run(extra: &[&str], name: &str) -> Vec<(Value, Seen)> {
    let (url, log) = logging_server().await;
    let records = tmp(name);
    let mut args = vec![
        "run",
        "--url",
        &url,
        "--num-prompts",
        "240",
        "--concurrency",
        "4",
        "--input-tokens",
        "8",
        "--output-tokens",
        "3",
        "--no-pin-output",
        "--records",
        records.to_str().unwrap(),
    ];
    args.extend(extra);
    let (code, stdout, stderr) = goodput_async(argv(&args)).await;
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let seen: Vec<Seen> = log.lock().unwrap().clone();
    let mut out = Vec::new();
    for r in read_records(&records) {
        let id = r["request_id"].as_u64().unwrap();
        let s = seen
            .iter()
            .find(|s| s.tag.rsplit('-').next() == Some(&id.to_string()))
            .unwrap_or_else(|| panic!("request {id} not seen by the server"))
            .clone();
        out.push((r, s));
    }
    out.sort_by_key(|(r, _)| r["request_id"].as_u64());
    out
}

/// Every body carries the model its record names and its class's priority;
/// the header class carries its header and no priority; the draws follow
/// the shares and are the same for the same seed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_request_carries_its_model_and_class_in_the_shares_drawn() {
    let flags = [
        "--model",
        "m1:0.7,m2:0.3",
        "--priority-mix",
        "hi:0.25:priority=0,lo:0.5:priority=10,gw:0.25:header=x-prio:bulk",
        "--seed",
        "3",
    ];
    let runs = logged_run(&flags, "bodies.jsonl").await;
    assert_eq!(runs.len(), 240);
    let mut counts = BTreeMap::<String, u32>::new();
    for (rec, seen) in &runs {
        let model = rec["model"].as_str().unwrap();
        let class = rec["class"].as_str().unwrap();
        assert_eq!(seen.body["model"], model, "{seen:?}");
        match class {
            "hi" => assert_eq!(seen.body["priority"], 0),
            "lo" => assert_eq!(seen.body["priority"], 10),
            "gw" => {
                assert!(seen.body.get("priority").is_none(), "{seen:?}");
                assert_eq!(seen.header.as_deref(), Some("bulk"));
            }
            other => panic!("unknown class {other}"),
        }
        if class != "gw" {
            assert_eq!(seen.header, None);
        }
        *counts.entry(model.to_string()).or_default() += 1;
        *counts.entry(class.to_string()).or_default() += 1;
    }
    let share = |k: &str| f64::from(counts[k]) / 240.0;
    assert!((share("m1") - 0.7).abs() < 0.1, "{counts:?}");
    assert!((share("lo") - 0.5).abs() < 0.1, "{counts:?}");
    assert!((share("gw") - 0.25).abs() < 0.1, "{counts:?}");

    let again = logged_run(&flags, "bodies-again.jsonl").await;
    let draws = |v: &[(Value, Seen)]| -> Vec<(Value, Value)> {
        v.iter()
            .map(|(r, _)| (r["model"].clone(), r["class"].clone()))
            .collect()
    };
    assert_eq!(
        draws(&runs),
        draws(&again),
        "the same seed draws the same mix"
    );
}

/// A plain list is taken in turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_model_list_is_round_robin() {
    let runs = logged_run(&["--model", "a,b,c"], "round-robin.jsonl").await;
    let models: Vec<&str> = runs
        .iter()
        .map(|(_, s)| s.body["model"].as_str().unwrap())
        .collect();
    let first = ["a", "b", "c"]
        .iter()
        .position(|m| *m == models[0])
        .unwrap();
    for (i, m) in models.iter().enumerate() {
        assert_eq!(*m, ["a", "b", "c"][(first + i) % 3], "request {i}");
    }
    assert!(runs.iter().all(|(r, _)| r.get("class").is_none()));
}

/// A sharded run's parts carry each record's model and class, and the
/// merged result has the groups of all shards' records.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sharded_mix_merges_its_groups() {
    use common::shards::{free_port, placed_records, run_shards_ok, sharded};
    let mut config = goodput_sim::SimConfig {
        time_scale: 0.2,
        ..Default::default()
    };
    config.lora.modules = vec!["ad-a".into()];
    let base = config.model_name().to_string();
    let (_sim, url) = sim(config);
    let dir = tmp("sharded-mix");
    std::fs::create_dir_all(&dir).unwrap();
    let models = format!("{base}:0.5,ad-a:0.5");
    let args = sharded(
        &[
            "run",
            "--url",
            &url,
            "--model",
            &models,
            "--priority-mix",
            "a:0.5:header=x-tier:1,b:0.5:header=x-tier:2",
            "--num-prompts",
            "60",
            "--concurrency",
            "4",
            "--output-tokens",
            "8",
            "--warmup",
            "0",
            "--quiet",
        ],
        2,
        free_port(),
        &dir,
    );
    let d = dir.clone();
    tokio::task::spawn_blocking(move || run_shards_ok(&args, 2, &d))
        .await
        .unwrap();
    let mut counts = BTreeMap::<(String, String), u64>::new();
    let records = placed_records(&dir, 2);
    for (_, r) in &records {
        for key in ["model", "class"] {
            let name = r[key].as_str().unwrap_or_else(|| panic!("{key} in {r}"));
            *counts.entry((key.into(), name.into())).or_default() += 1;
        }
    }
    assert!(records.iter().any(|(shard, _)| *shard == 1));
    let doc = read_json(&dir.join("result-0.json"));
    for (key, grouping) in [("model", "by_model"), ("class", "by_class")] {
        let groups = doc["groups"][grouping].as_object().unwrap();
        assert_eq!(groups.len(), 2, "{grouping}: {groups:?}");
        for (name, g) in groups {
            assert_eq!(
                g["completed"].as_u64(),
                counts.get(&(key.to_string(), name.clone())).copied(),
                "{grouping}.{name}"
            );
        }
    }
}
