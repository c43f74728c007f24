//! Workloads against the built-in simulator (real HTTP): shared prefixes,
//! sessions and traces show the prefix cache the workload implies; bad
//! dataset and trace files are refused before any request.

mod common;

use common::*;

/// `goodput run` on the simulator with these flags; the results document.
fn run(flags: &[&str]) -> serde_json::Value {
    let out = tmp("r.json");
    let out_s = out.to_str().unwrap().to_string();
    let mut args = vec!["run", "--quiet", "--out", out_s.as_str()];
    args.extend_from_slice(flags);
    let (code, _, err) = goodput(&args);
    assert_eq!(code, 0, "{flags:?}: {err}");
    read_json(&out)
}

fn f(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// Shared prefixes: the server reports the cache hits the workload allows,
/// and TTFT falls; salted prompts get none.
#[test]
fn prefix_groups_hit_the_cache_and_cache_bust_does_not() {
    let common = [
        "--input-tokens",
        "1000",
        "--output-tokens",
        "8",
        "--num-prompts",
        "40",
        "--request-rate",
        "20",
        "--seed",
        "3",
    ];
    let busted = run(&[&common[..], &["--cache-bust"]].concat());
    let grouped = run(&[
        &common[..],
        &["--prefix-tokens", "896", "--prefix-groups", "2"],
    ]
    .concat());
    let (b, g) = (
        &busted["workload"]["measured"],
        &grouped["workload"]["measured"],
    );
    assert_eq!(f(&b["cacheable_share"]), 0.0);
    assert_eq!(f(&b["cached_share"]), 0.0);
    // 40 prompts in 2 groups: all but the first of each may hit 896 of 1000 tokens.
    let allowed = f(&g["cacheable_share"]);
    assert!(
        (allowed - 38.0 * 896.0 / 40_000.0).abs() < 1e-9,
        "{allowed}"
    );
    let seen = f(&g["cached_share"]);
    assert!(
        seen > 0.9 * allowed && seen <= allowed + 1e-9,
        "reported {seen}, allowed {allowed}"
    );
    assert!(
        f(&grouped["median_ttft_ms"]) < 0.5 * f(&busted["median_ttft_ms"]),
        "TTFT {} with shared prefixes vs {} salted",
        grouped["median_ttft_ms"],
        busted["median_ttft_ms"]
    );
    assert_eq!(grouped["workload"]["prefix"]["groups"], 2);
    assert_eq!(
        grouped["input_tokens"],
        serde_json::Value::Null,
        "no stray keys"
    );
}

/// Each turn resends the history: the prompt grows by exactly the previous
/// response plus the new message, and later turns are served from cache.
#[test]
fn a_session_prompt_grows_by_the_previous_response_and_later_turns_hit_the_cache() {
    let records = tmp("turns.jsonl");
    let out = run(&[
        "--turns",
        "3",
        "--think-time",
        "50ms",
        "--input-tokens",
        "64",
        "--output-tokens",
        "uniform:10,30",
        "--concurrency",
        "2",
        "--num-prompts",
        "12",
        "--records",
        records.to_str().unwrap(),
    ]);
    let recs = read_records(&records);
    let mut by_session: std::collections::BTreeMap<u64, Vec<&serde_json::Value>> =
        Default::default();
    for r in recs.iter().filter(|r| r["ok"] == true) {
        by_session
            .entry(r["session_id"].as_u64().unwrap())
            .or_default()
            .push(r);
    }
    let mut checked = 0;
    for turns in by_session.values_mut() {
        turns.sort_by_key(|r| r["turn"].as_u64());
        for pair in turns.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            let grown = b["server_prompt_tokens"].as_u64().unwrap();
            let expected = a["server_prompt_tokens"].as_u64().unwrap()
                + a["server_completion_tokens"].as_u64().unwrap()
                + 64;
            assert_eq!(
                grown, expected,
                "session {}: turn {}",
                b["session_id"], b["turn"]
            );
            assert!(
                b["cached_tokens"].as_u64().unwrap() > 0,
                "turn {} missed the cache",
                b["turn"]
            );
            assert_eq!(
                b["client_input_tokens"], grown,
                "client and server agree on the sim"
            );
            checked += 1;
        }
    }
    assert!(checked >= 6, "{checked} turn pairs");
    let by_turn = out["sessions"]["by_turn"].as_array().unwrap();
    assert!(f(&by_turn[0]["cached_share"]) < 0.01);
    assert!(f(&by_turn[2]["cached_share"]) > 0.5, "{by_turn:?}");
}

/// A Mooncake trace's repeated hash ids replay as shared blocks: the server
/// reports the hits the trace implies, block for block.
#[test]
fn a_mooncake_trace_gives_the_cache_hits_its_hash_ids_imply() {
    let trace = tmp("mooncake.jsonl");
    // Blocks of 64 tokens (4 of the simulator's 16-token blocks); requests
    // 300 ms apart so each finishes before the next arrives.
    let rows = [
        (0, 200, vec![1, 2, 3, 4]),
        (300, 256, vec![1, 2, 3, 5]),
        (600, 128, vec![1, 2]),
        (900, 192, vec![6, 7, 8]),
        (1200, 192, vec![1, 2, 3]),
    ];
    let text: String = rows
        .iter()
        .map(|(t, n, ids)| {
            format!(
                "{}\n",
                serde_json::json!({"timestamp": t, "input_length": n, "output_length": 4, "hash_ids": ids})
            )
        })
        .collect();
    std::fs::write(&trace, text).unwrap();
    let records = tmp("mc.jsonl");
    let out = run(&[
        "--trace",
        trace.to_str().unwrap(),
        "--trace-block-tokens",
        "64",
        "--records",
        records.to_str().unwrap(),
        "--endpoint",
        "completions",
    ]);
    let mut recs = read_records(&records);
    recs.sort_by(|a, b| f(&a["sched_s"]).total_cmp(&f(&b["sched_s"])));
    let cached: Vec<u64> = recs
        .iter()
        .map(|r| r["cached_tokens"].as_u64().unwrap())
        .collect();
    let inputs: Vec<u64> = recs
        .iter()
        .map(|r| r["input_tokens"].as_u64().unwrap())
        .collect();
    assert_eq!(inputs, vec![200, 256, 128, 192, 192]);
    // Leading blocks seen before: none, 3, 2 (the whole prompt: the
    // simulator recomputes the last token), none, 3.
    assert_eq!(cached, vec![0, 192, 112, 0, 176], "{recs:?}");
    let m = &out["workload"]["measured"];
    assert!((f(&m["cacheable_share"]) - (192.0 + 128.0 + 192.0) / 968.0).abs() < 1e-9);
    assert_eq!(out["workload"]["kind"], "trace");
    assert_eq!(out["request_rate"], serde_json::json!(4.0 / 1.2));
    let sched: Vec<f64> = recs.iter().map(|r| f(&r["sched_s"])).collect();
    for (s, (t, _, _)) in sched.iter().zip(rows.iter()) {
        assert!(
            (s - sched[0] - f64::from(*t) / 1e3).abs() < 1e-6,
            "{sched:?}"
        );
    }
}

/// Malformed datasets and traces exit 2, naming file, line and field,
/// before any connection.
#[tokio::test]
async fn malformed_files_exit_2_before_any_request() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let a = accepted.clone();
    tokio::spawn(async move {
        while let Ok((_s, _)) = listener.accept().await {
            a.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    });
    let file = |name: &str, text: &str| {
        let p = tmp(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    };
    let bad_json = file("bad.jsonl", "{\"prompt\": \"a\"}\n{\"prompt\": 5}\n");
    let zero = file("zero.jsonl", "{\"prompt\": \"a\", \"output_tokens\": 0}\n");
    let csv = file("d.csv", "question,answer\nhi,there\n");
    let back = file(
        "t.csv",
        "timestamp,input_tokens,output_tokens\n1,5,5\n0,5,5\n",
    );
    let few = file("few.jsonl", "{\"prompt\": \"a\"}\n{\"prompt\": \"b\"}\n");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--dataset", &bad_json], "bad.jsonl:2"),
        (vec!["--dataset", &zero], "output_tokens"),
        (vec!["--dataset", &csv], "prompt"),
        (vec!["--dataset", "/nonexistent/x.jsonl"], "x.jsonl"),
        (
            vec!["--dataset", &few, "--num-prompts", "5"],
            "--dataset-exhausted",
        ),
        (vec!["--trace", &back, "--trace-time-unit", "s"], "t.csv:3"),
        (vec!["--trace", &back], "--trace-time-unit"),
        (
            vec!["--trace", &back, "--concurrency", "4"],
            "cannot be used with",
        ),
        (
            vec!["--tokenizer", "/nonexistent/tokenizer.json"],
            "tokenizer.json",
        ),
    ];
    for (flags, hint) in cases {
        let mut args = vec!["run", "--url", url.as_str()];
        args.extend(flags.iter().copied());
        let (code, _, err) = goodput_async(argv(&args)).await;
        assert_eq!(code, 2, "{flags:?}: {err}");
        assert!(err.contains(hint), "{flags:?}: expected '{hint}' in: {err}");
    }
    let (code, _, err) = goodput_async(argv(&[
        "sweep",
        "--url",
        &url,
        "--trace",
        &back,
        "--trace-time-unit",
        "s",
    ]))
    .await;
    assert_eq!(code, 2, "{err}");
    assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 0);
}

/// Dataset rows with references: the run scores every completed output
/// against its reference (BLEU, ROUGE-L, exact match) and says so.
#[test]
fn a_dataset_with_references_reports_quality() {
    let data = tmp("refs.jsonl");
    let rows: String = (0..6)
        .map(|i| {
            format!(
                "{}\n",
                serde_json::json!({"prompt": format!("Question {i}?"), "output_tokens": 12,
                                   "reference": "the answer is the one that the model gives"})
            )
        })
        .collect();
    std::fs::write(&data, rows).unwrap();
    let v = run(&[
        "--dataset",
        data.to_str().unwrap(),
        "--num-prompts",
        "6",
        "--concurrency",
        "3",
    ]);
    let q = &v["quality"];
    assert_eq!(q["scored"], 6, "{q}");
    let bleu = f(&q["bleu"]);
    assert!((0.0..=100.0).contains(&bleu), "{q}");
    let rouge = f(&q["rouge_l_f1"]);
    assert!((0.0..=1.0).contains(&rouge), "{q}");
    assert!(
        q["bleu_stats"]["hyp_len"].as_u64().unwrap() > 0,
        "outputs were scored: {q}"
    );
    assert_eq!(q["exact_match_share"], 0.0);
}

/// The same seed twice against one simulator must not hit the
/// prefix cache beyond the workload's own (here: none).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_seed_twice_gets_no_cache_hits_from_the_first_run() {
    let sim = goodput_sim::SimServer::spawn(
        goodput_sim::SimConfig {
            time_scale: 0.05,
            ..Default::default()
        },
        "127.0.0.1:0".parse().unwrap(),
    )
    .unwrap();
    let url = format!("http://{}", sim.local_addr());
    let mut runs = Vec::new();
    for _ in 0..2 {
        let records = tmp("records.jsonl");
        let (code, out, err) = goodput_async(argv(&[
            "run",
            "--url",
            &url,
            "--seed",
            "7",
            "--num-prompts",
            "20",
            "--concurrency",
            "4",
            "--input-tokens",
            "256",
            "--output-tokens",
            "8",
            "--records",
            records.to_str().unwrap(),
            "--quiet",
        ]))
        .await;
        assert_eq!(code, 0, "{out}\n{err}");
        runs.push(read_records(&records));
    }
    for (i, recs) in runs.iter().enumerate() {
        assert_eq!(recs.len(), 20);
        let cached: u64 = recs
            .iter()
            .map(|r| r["cached_tokens"].as_u64().unwrap_or(0))
            .sum();
        let prompt: u64 = recs
            .iter()
            .map(|r| r["server_prompt_tokens"].as_u64().unwrap())
            .sum();
        assert_eq!(
            cached, 0,
            "run {i}: {cached} of {prompt} prompt tokens came from the cache"
        );
    }
    assert_ne!(runs[0][0]["run_id"], runs[1][0]["run_id"]);
    sim.shutdown();
}
