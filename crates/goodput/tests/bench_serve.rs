//! `goodput bench serve`: a vLLM user's command line, with only `vllm bench
//! serve` replaced, run against the simulator over HTTP; its result file
//! written where vLLM writes it, with vLLM's keys and types; flags goodput
//! cannot honour refused by name before any request.

mod common;

use std::path::Path;

use common::shards::simulator;
use common::*;
use serde_json::Value;

/// The everyday command line (random dataset, a rate, a cap,
/// percentile metrics, goodput thresholds, metadata), against `url`.
fn everyday<'a>(url: &'a str, dir: &'a str) -> Vec<&'a str> {
    vec![
        "bench",
        "serve",
        "--backend",
        "vllm",
        "--base-url",
        url,
        "--model",
        "meta-llama/Llama-3.1-8B-Instruct",
        "--dataset-name",
        "random",
        "--random-input-len",
        "256",
        "--random-output-len",
        "16",
        "--random-range-ratio",
        "0.25",
        "--num-prompts",
        "24",
        "--request-rate",
        "40",
        "--max-concurrency",
        "8",
        "--percentile-metrics",
        "ttft,tpot,itl,e2el",
        "--metric-percentiles",
        "50,90,99",
        "--goodput",
        "ttft:2000",
        "tpot:500",
        "--save-result",
        "--result-dir",
        dir,
        "--ignore-eos",
        "--metadata",
        "gpu=H100",
        "tp=1",
        "--disable-tqdm",
    ]
}

/// The flags that write a detailed result file `file` in `dir`, quietly.
fn detailed<'a>(dir: &'a str, file: &'a str) -> [&'a str; 7] {
    [
        "--save-result",
        "--save-detailed",
        "--result-dir",
        dir,
        "--result-filename",
        file,
        "--disable-tqdm",
    ]
}

fn json_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    v.retain(|p| p.extension().is_some_and(|e| e == "json"));
    v.sort();
    v
}

#[test]
fn a_vllm_command_line_runs_and_writes_vllm_s_result_file() {
    let (_sim, url) = simulator(1.0);
    let dir = tmp("results");
    let d = dir.to_str().unwrap();
    let (code, stdout, stderr) = goodput(&everyday(&url, d));
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    // goodput's own summary, in vLLM's layout, read as vLLM's auto-tune
    // script reads it: `grep 'Request throughput (req/s):' | sed
    // 's/[^0-9.]//g'`, `grep 'P99 E2EL (ms):' | awk '{print $NF}'`.
    assert!(stdout.contains("Serving Benchmark Result"), "{stdout}");
    let grep =
        |label: &str| -> Vec<&str> { stdout.lines().filter(|l| l.contains(label)).collect() };
    for label in ["Request throughput (req/s):", "Request goodput (req/s):"] {
        let lines = grep(label);
        assert_eq!(lines.len(), 1, "{label}: {lines:?}");
        let digits: String = lines[0]
            .chars()
            .filter(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        assert!(
            digits.parse::<f64>().is_ok_and(|x| x > 0.0),
            "{label}: {digits}"
        );
    }
    let e2el = grep("P99 E2EL (ms):");
    assert_eq!(e2el.len(), 1, "{e2el:?}");
    let last = e2el[0].split_whitespace().last().unwrap();
    assert!(last.parse::<f64>().is_ok_and(|x| x > 0.0), "{last}");
    // goodput's intervals, after it.
    assert!(stdout.contains("95% intervals (goodput)"), "{stdout}");
    assert!(
        stdout.lines().any(|l| l.starts_with("p99_e2el ")),
        "{stdout}"
    );
    let files = json_files(&dir);
    assert_eq!(files.len(), 1, "{files:?}\n{stderr}");
    let name = files[0].file_name().unwrap().to_str().unwrap().to_string();
    // vLLM's default name: backend, rate as Python prints it, concurrency,
    // the model's last path part, the date.
    assert!(
        name.starts_with("vllm-40.0qps-concurrency8-Llama-3.1-8B-Instruct-2"),
        "{name}"
    );
    assert!(stderr.contains(&name), "{stderr}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&files[0]).unwrap()).unwrap();
    assert_eq!(v["backend"], "vllm");
    assert_eq!(v["endpoint_type"], "vllm");
    assert_eq!(v["label"], Value::Null);
    assert_eq!(v["model_id"], "meta-llama/Llama-3.1-8B-Instruct");
    assert_eq!(v["num_prompts"], 24);
    assert_eq!(v["request_rate"], 40.0);
    assert_eq!(v["burstiness"], 1.0);
    assert_eq!(v["max_concurrency"], 8);
    assert_eq!(v["gpu"], "H100");
    assert_eq!(v["tp"], "1", "metadata values stay strings");
    let date = v["date"].as_str().unwrap();
    assert_eq!(date.len(), 15, "%Y%m%d-%H%M%S: {date}");
    assert!(name.ends_with(&format!("{date}.json")), "{name}");
    assert_eq!(v["completed"], 24);
    assert_eq!(v["failed"], 0);
    for key in [
        "duration",
        "request_throughput",
        "request_goodput",
        "output_throughput",
        "total_token_throughput",
        "max_output_tokens_per_s",
    ] {
        assert!(
            v[key].as_f64().is_some_and(|x| x > 0.0),
            "{key}: {}",
            v[key]
        );
    }
    assert!(v["max_concurrent_requests"]
        .as_u64()
        .is_some_and(|n| (1..=8).contains(&n)));
    for metric in ["ttft", "tpot", "itl", "e2el"] {
        for stat in ["mean", "median", "std", "p50", "p90", "p99"] {
            let key = format!("{stat}_{metric}_ms");
            assert!(v[&key].as_f64().is_some(), "{key}: {}", v[&key]);
        }
    }
    // Without --save-detailed vLLM keeps only latencies and queue_times.
    assert_eq!(v["latencies"].as_array().map(Vec::len), Some(24));
    assert_eq!(v["queue_times"].as_array().map(Vec::len), Some(24));
    for key in [
        "ttfts",
        "itls",
        "input_lens",
        "output_lens",
        "errors",
        "generated_texts",
        "start_times",
    ] {
        assert!(v.get(key).is_none(), "{key}");
    }
    // vLLM's figures agree with goodput's own, kept whole under `goodput`.
    let g = &v["goodput"];
    assert_eq!(v["mean_ttft_ms"], g["ttft"]["mean_ms"]);
    assert_eq!(v["p99_e2el_ms"], g["e2el"]["p99_ms"]);
    assert_eq!(
        v["mean_itl_ms"], g["icl"]["mean_ms"],
        "vLLM's ITL is per chunk"
    );
    assert!(g["ci"]["ttft"].is_object(), "goodput's intervals are kept");
    // The lengths asked for: vLLM's range ratio spreads both, 256 ± 25 %
    // in and 16 ± 25 % out.
    let per = |key: &str| v[key].as_f64().unwrap() / 24.0;
    assert!((192.0..=320.0).contains(&per("total_input_tokens")), "{v}");
    assert!((12.0..=20.0).contains(&per("total_output_tokens")), "{v}");
}

#[test]
fn save_detailed_and_append_write_vllm_s_arrays_and_json_lines() {
    let (_sim, url) = simulator(1.0);
    let dir = tmp("results");
    let d = dir.to_str().unwrap();
    let file = dir.join("run.jsonl");
    for _ in 0..2 {
        let (code, stdout, stderr) = goodput(&[
            "bench",
            "serve",
            "--base-url",
            &url,
            "--backend",
            "openai-chat",
            "--endpoint",
            "/v1/chat/completions",
            "--input-len",
            "64",
            "--output-len",
            "8",
            "--num-prompts",
            "6",
            "--append-result",
            "--save-detailed",
            "--result-dir",
            d,
            "--result-filename",
            "run.jsonl",
            "--disable-tqdm",
        ]);
        assert_eq!(code, 0, "{stdout}\n{stderr}");
    }
    let text = std::fs::read_to_string(&file).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "one JSON object per line");
    let v = &lines[1];
    assert_eq!(v["request_rate"], "inf");
    assert_eq!(v["backend"], "openai-chat");
    // Without --model, the server's model, as vLLM reads it from /v1/models.
    assert_eq!(v["model_id"], "meta-llama/Llama-3.1-8B-Instruct");
    assert_eq!(v["ttfts"].as_array().map(Vec::len), Some(6));
    assert_eq!(v["output_lens"], serde_json::json!([8, 8, 8, 8, 8, 8]));
    assert_eq!(v["errors"], serde_json::json!(["", "", "", "", "", ""]));
    // Each answer's text as streamed: 8 tokens of the simulator's words.
    let texts = v["generated_texts"].as_array().unwrap();
    assert_eq!(texts.len(), 6);
    assert!(
        texts.iter().all(|t| t
            .as_str()
            .is_some_and(|t| t.split_whitespace().count() >= 4)),
        "{texts:?}"
    );
    let itls = v["itls"].as_array().unwrap();
    assert!(
        itls.iter()
            .all(|g| g.as_array().is_some_and(|g| g.len() == 7)),
        "{itls:?}"
    );
    // Seconds, as vLLM writes them: the TTFTs agree with goodput's in ms.
    let mean_s = v["ttfts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .sum::<f64>()
        / 6.0;
    let mean_ms = v["mean_ttft_ms"].as_f64().unwrap();
    // (The records keep microseconds.)
    assert!((mean_s * 1e3 - mean_ms).abs() < 1e-3, "{mean_s} {mean_ms}");
}

#[test]
fn flags_goodput_cannot_honour_stop_before_any_request_naming_them() {
    let (sim, url) = simulator(1.0);
    let cases: [(&[&str], &str); 5] = [
        (&["--profile"], "--profile is not supported"),
        (&["--top-p", "0.9"], "--top-p is not supported"),
        (
            &["--dataset-name", "burstgpt"],
            "--dataset-name burstgpt is not supported",
        ),
        (
            &["--backend", "openai-audio"],
            "--backend openai-audio is not supported",
        ),
        (
            &["--backend", "openai-chat"],
            "does not end with 'chat/completions'",
        ),
    ];
    for (extra, said) in cases {
        let mut args = vec!["bench", "serve", "--base-url", &url, "--num-prompts", "3"];
        args.extend_from_slice(extra);
        let (code, stdout, stderr) = goodput(&args);
        assert_eq!(code, 2, "{args:?}\n{stdout}\n{stderr}");
        assert!(stderr.contains(said), "{args:?}: {stderr}");
    }
    // Nothing reached the engine.
    assert_eq!(sim.stats().steps, 0);
}

/// vLLM's sonnet dataset from a local file, on the chat backend: prompts
/// that share the file's first lines, within the input length, sent in
/// order; the result file's lengths are what the server counted.
#[test]
fn the_sonnet_dataset_runs_from_a_local_file() {
    let (_sim, url) = simulator(1.0);
    let dir = tmp("results");
    let poem = dir.join("sonnet.txt");
    std::fs::create_dir_all(&dir).unwrap();
    let lines: String = (0..60)
        .map(|i| format!("When forty winters shall besiege thy brow, line {i},\n"))
        .collect();
    std::fs::write(&poem, lines).unwrap();
    let (code, stdout, stderr) = goodput(&[
        "bench",
        "serve",
        "--base-url",
        &url,
        "--backend",
        "openai-chat",
        "--endpoint",
        "/v1/chat/completions",
        "--dataset-name",
        "sonnet",
        "--dataset-path",
        poem.to_str().unwrap(),
        "--sonnet-input-len",
        "300",
        "--sonnet-prefix-len",
        "100",
        "--sonnet-output-len",
        "12",
        "--num-prompts",
        "8",
        "--ignore-eos",
        "--save-result",
        "--save-detailed",
        "--result-dir",
        dir.to_str().unwrap(),
        "--result-filename",
        "sonnet.json",
        "--disable-tqdm",
    ]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stderr.contains("sonnet prompts counted with"), "{stderr}");
    let v = read_json(&dir.join("sonnet.json"));
    assert_eq!(v["completed"], 8);
    assert_eq!(v["output_lens"], serde_json::json!(vec![12; 8]));
    // Within the input length by goodput's count; the server's (the
    // simulator's own tokenizer, and the chat template's few tokens)
    // near it.
    for n in v["input_lens"].as_array().unwrap() {
        let n = n.as_u64().unwrap();
        assert!((200..=340).contains(&n), "input length {n}");
    }
}

/// `--config FILE.yaml`: the file's flags as vLLM's parser reads them, the
/// command line's winning where both give one.
#[test]
fn a_yaml_config_file_gives_flags_and_the_command_line_wins() {
    let (_sim, url) = simulator(1.0);
    let dir = tmp("results");
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("bench.yaml");
    std::fs::write(
        &config,
        format!(
            "base-url: {url}\nnum_prompts: 7\nrandom-input-len: 64\nrandom-output-len: 4\n\
             save-result: true\nresult-dir: {}\nresult-filename: c.json\nmetadata: [gpu=H100, tp=1]\n\
             disable-tqdm: true\n",
            dir.display()
        ),
    )
    .unwrap();
    let (code, stdout, stderr) = goodput(&[
        "bench",
        "serve",
        "--config",
        config.to_str().unwrap(),
        "--num-prompts",
        "3",
    ]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let v = read_json(&dir.join("c.json"));
    assert_eq!(v["num_prompts"], 3, "the command line wins");
    assert_eq!(v["completed"], 3);
    assert_eq!(v["total_output_tokens"], 12);
    assert_eq!(v["gpu"], "H100");
    // Not a YAML file: refused before any request, as vLLM refuses it.
    let (code, _, stderr) = goodput(&["bench", "serve", "--config", "bench.json"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("yaml/yml"), "{stderr}");
}

/// Ctrl-C: exit 130 and no result file, as vLLM writes none after a
/// KeyboardInterrupt (a script must not read a cut run as a whole one).
#[test]
fn an_interrupted_run_writes_no_result_file() {
    let (_sim, url) = simulator(1.0);
    let dir = tmp("results");
    let d = dir.to_str().unwrap();
    let child = spawn_goodput(&[
        "bench",
        "serve",
        "--base-url",
        &url,
        "--num-prompts",
        "200",
        "--request-rate",
        "5",
        "--input-len",
        "32",
        "--output-len",
        "8",
        "--save-result",
        "--result-dir",
        d,
    ]);
    std::thread::sleep(std::time::Duration::from_secs(3));
    sigint(&child);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("no vLLM result file written"), "{stderr}");
    assert!(json_files(&dir).is_empty());
}

/// Against a server that logs when it received each request and when it
/// wrote each token, `goodput bench serve`'s vLLM figures (`mean_ttft_ms`,
/// `p99_ttft_ms`, `mean_tpot_ms`) and its `ttfts` / `itls` arrays agree
/// with the log as `goodput run`'s own figures do
/// (`run_against_scripted_server.rs`): request by request, within the
/// same slack.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vllm_s_figures_and_arrays_agree_with_the_server_s_log() {
    /// As `run_against_scripted_server.rs`: a few ms on an idle machine,
    /// a scheduler slice or two on a busy one.
    const SLACK_MS: f64 = 25.0;
    let server = start(Script::default()).await;
    let dir = tmp("results");
    let (code, stdout, stderr) = goodput_async(argv(&[
        "bench",
        "serve",
        "--base-url",
        &server.url(),
        "--backend",
        "openai-chat",
        "--endpoint",
        "/v1/chat/completions",
        "--model",
        "m",
        "--input-len",
        "32",
        "--output-len",
        "20",
        "--num-prompts",
        "16",
        "--max-concurrency",
        "4",
        "--save-result",
        "--save-detailed",
        "--result-dir",
        dir.to_str().unwrap(),
        "--result-filename",
        "r.json",
        "--disable-tqdm",
    ]))
    .await;
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let v = read_json(&dir.join("r.json"));
    let log = server.by_id();
    let mut ids: Vec<u64> = log.keys().copied().collect();
    ids.sort_unstable();
    assert_eq!(ids.len(), 16, "{ids:?}");
    let seconds = |x: &Value| x.as_f64().unwrap() * 1e3;
    let ttfts: Vec<f64> = v["ttfts"].as_array().unwrap().iter().map(seconds).collect();
    let itls = v["itls"].as_array().unwrap();
    assert_eq!((ttfts.len(), itls.len()), (16, 16));
    let (mut server_ttfts, mut server_tpots) = (Vec::new(), Vec::new());
    let (mut worst_ttft, mut worst_gap) = (0.0f64, 0.0f64);
    // The arrays are in request order, as the server's ids are.
    for (i, id) in ids.iter().enumerate() {
        let entry = &log[id];
        let n = entry.writes.len();
        assert_eq!(n, 20);
        let server_ttft = ms(entry.writes[0] - entry.received);
        // The role-only chunk the server sends at once is not the first token.
        assert!(
            (ttfts[i] - server_ttft).abs() < SLACK_MS && ttfts[i] > 95.0,
            "request {id}: ttft {} against the server's {server_ttft}",
            ttfts[i]
        );
        let gaps: Vec<f64> = itls[i].as_array().unwrap().iter().map(seconds).collect();
        assert_eq!(gaps.len(), n - 1, "request {id}");
        for (k, gap) in gaps.iter().enumerate() {
            let server_gap = ms(entry.writes[k + 1] - entry.writes[k]);
            assert!(
                (gap - server_gap).abs() < SLACK_MS,
                "request {id} gap {k}: {gap} against the server's {server_gap}"
            );
        }
        worst_ttft = worst_ttft.max((ttfts[i] - server_ttft).abs());
        for (k, gap) in gaps.iter().enumerate() {
            worst_gap = worst_gap.max((gap - ms(entry.writes[k + 1] - entry.writes[k])).abs());
        }
        server_ttfts.push(server_ttft);
        server_tpots.push(ms(entry.writes[n - 1] - entry.writes[0]) / (n - 1) as f64);
    }
    eprintln!(
        "against the server's log: TTFT within {worst_ttft:.3} ms, gaps within {worst_gap:.3} ms"
    );
    let mean = |x: &[f64]| x.iter().sum::<f64>() / x.len() as f64;
    let mean_ttft = v["mean_ttft_ms"].as_f64().unwrap();
    assert!(
        (mean_ttft - mean(&server_ttfts)).abs() < SLACK_MS,
        "mean TTFT {mean_ttft} against the server's {}",
        mean(&server_ttfts)
    );
    // The p99 of 16 is (nearly) the largest; it lies within the server's
    // range, widened by the slack.
    let p99 = v["p99_ttft_ms"].as_f64().unwrap();
    let max = server_ttfts.iter().copied().fold(f64::MIN, f64::max);
    assert!(
        (p99 - max).abs() < SLACK_MS,
        "p99 TTFT {p99} against the server's largest {max}"
    );
    let mean_tpot = v["mean_tpot_ms"].as_f64().unwrap();
    assert!(
        (mean_tpot - mean(&server_tpots)).abs() < 2.0,
        "mean TPOT {mean_tpot} against the server's {}",
        mean(&server_tpots)
    );
}

/// No local copy of the model's tokenizer: the random dataset's prompts
/// are built to the server's own counts through its `/tokenize` (the
/// simulator serves one, in vLLM's shape), which is said, and they are
/// exact to the token (the simulator's usage counts what was sent). A
/// `--tokenizer` with no local copy, against a server without `/tokenize`,
/// stops before any request; without `--tokenizer`, goodput's own builds
/// them and the note says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_local_tokenizer_prompts_are_built_to_the_server_s_counts() {
    let (_sim, url) = simulator(1.0);
    let dir = tmp("results");
    let model = "meta-llama/Llama-3.1-8B-Instruct";
    let random = |url: &str, model: &str| -> Vec<String> {
        argv(
            &[
                "bench",
                "serve",
                "--base-url",
                url,
                "--model",
                model,
                "--dataset-name",
                "random",
                "--random-input-len",
                "200",
                "--random-prefix-len",
                "10",
                "--random-output-len",
                "8",
                "--num-prompts",
                "12",
            ]
            .into_iter()
            .chain(detailed(dir.to_str().unwrap(), "r.json"))
            .collect::<Vec<_>>(),
        )
    };
    let (code, stdout, stderr) = goodput_async(random(&url, model)).await;
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(
        stderr.contains("through the server's /tokenize"),
        "{stderr}"
    );
    let v = read_json(&dir.join("r.json"));
    assert_eq!(v["input_lens"], serde_json::json!(vec![210; 12]));
    assert_eq!(v["output_lens"], serde_json::json!(vec![8; 12]));
    assert_eq!(v["tokenizer_id"], model);

    let server = start(Script::quick()).await;
    let mut args = random(&server.url(), "m");
    args.extend(argv(&["--tokenizer", "org/none-such"]));
    let (code, _, stderr) = goodput_async(args).await;
    assert_ne!(code, 0, "{stderr}");
    assert!(
        stderr.contains("org/none-such") && stderr.contains("answers no /tokenize"),
        "{stderr}"
    );
    let measured = |s: &ScriptedServer| {
        let seen = s.seen.lock().unwrap();
        seen.iter()
            .filter(|t| reply::request_id(t).is_some())
            .count()
    };
    assert_eq!(measured(&server), 0, "stopped before any request");

    let (code, stdout, stderr) = goodput_async(random(&server.url(), "m")).await;
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(
        stderr.contains("no local tokenizer for m") && stderr.contains("answers no /tokenize"),
        "{stderr}"
    );
    // Where vLLM's client would template (spec_bench on completions) and
    // the server applies no template: refused before any request.
    let spec = dir.join("question.jsonl");
    std::fs::write(
        &spec,
        "{\"category\": \"math\", \"turns\": [\"What is 2 + 2?\"]}\n",
    )
    .unwrap();
    let spec = spec.to_str().unwrap();
    let mut args = random(&server.url(), "m");
    args.truncate(8);
    args.extend(argv(&[
        "--dataset-name",
        "spec_bench",
        "--dataset-path",
        spec,
    ]));
    let before = measured(&server);
    let (code, _, stderr) = goodput_async(args).await;
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("spec_bench with a completions backend")
            && stderr.contains("applies no chat template"),
        "{stderr}"
    );
    assert_eq!(measured(&server), before, "stopped before any request");
    assert_eq!(
        read_json(&dir.join("r.json"))["tokenizer_id"],
        "tiktoken:o200k_base"
    );
}

/// vLLM's question files from a local path: spec_bench's `turns` (one
/// category's rows, every row for `--num-prompts -1`) and speed_bench's
/// directory of `<subset>.jsonl` (`messages`), each answer the flag's
/// length; spec_bench on a completions backend is refused by name (vLLM
/// templates it on the client).
#[test]
fn spec_bench_and_speed_bench_run_from_local_files() {
    let (_sim, url) = simulator(1.0);
    let dir = tmp("questions");
    std::fs::create_dir_all(&dir).unwrap();
    let spec = dir.join("question.jsonl");
    let rows: String = (0..5)
        .map(|i| {
            let category = if i < 3 { "math" } else { "writing" };
            format!("{{\"question_id\": {i}, \"category\": \"{category}\", \"turns\": [\"Question {i}: what is {i} plus {i}?\", \"And times two?\"]}}\n")
        })
        .collect();
    std::fs::write(&spec, rows).unwrap();
    let speed = dir.join("speed");
    std::fs::create_dir_all(&speed).unwrap();
    let rows: String = (0..4)
        .map(|i| format!("{{\"category\": \"coding\", \"messages\": [{{\"role\": \"user\", \"content\": \"Write function {i}.\"}}]}}\n"))
        .collect();
    std::fs::write(speed.join("qualitative.jsonl"), rows).unwrap();
    let d = dir.to_str().unwrap();
    let run = |extra: &[&str]| {
        let mut args = chat(&url);
        args.push("--ignore-eos");
        args.extend(detailed(d, "q.json"));
        args.extend_from_slice(extra);
        goodput(&args)
    };
    let s = spec.to_str().unwrap();
    let (code, stdout, stderr) = run(&[
        "--dataset-name",
        "spec_bench",
        "--dataset-path",
        s,
        "--num-prompts",
        "-1",
        "--spec-bench-category",
        "math",
        "--spec-bench-output-len",
        "8",
    ]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let v = read_json(&dir.join("q.json"));
    assert_eq!(
        (v["num_prompts"].clone(), v["completed"].clone()),
        (3.into(), 3.into())
    );
    assert_eq!(v["output_lens"], serde_json::json!([8, 8, 8]));
    let p = speed.to_str().unwrap();
    let (code, stdout, stderr) = run(&[
        "--dataset-name",
        "speed_bench",
        "--dataset-path",
        p,
        "--num-prompts",
        "6",
        "--speed-bench-output-len",
        "5",
    ]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let v = read_json(&dir.join("q.json"));
    assert_eq!(v["completed"], 6, "4 rows, 2 repeated");
    assert_eq!(v["output_lens"], serde_json::json!(vec![5; 6]));
    // On vLLM's default completions backend vLLM's client templates each
    // prompt; goodput asks the server for the same template.
    let (code, stdout, stderr) = goodput(&[
        "bench",
        "serve",
        "--base-url",
        &url,
        "--dataset-name",
        "spec_bench",
        "--dataset-path",
        s,
        "--num-prompts",
        "4",
    ]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(
        stderr.contains("4 prompts put through")
            && stderr.contains("chat template by the server (its /tokenize"),
        "{stderr}"
    );
}

/// random-rerank: one query shared by every request and `--num-prompts`
/// documents, `--random-batch-size` a request (the last the documents
/// left), query and document filling the input length; other backends
/// refuse it by name.
#[test]
fn random_rerank_sends_a_shared_query_and_batches_of_documents() {
    let (_sim, url) = simulator(1.0);
    let dir = tmp("rerank");
    let d = dir.to_str().unwrap();
    let mut args = vec![
        "bench",
        "serve",
        "--base-url",
        &url,
        "--dataset-name",
        "random-rerank",
        "--random-input-len",
        "128",
        "--random-batch-size",
        "4",
        "--num-prompts",
        "10",
    ];
    args.extend(detailed(d, "r.json"));
    refused_on_the_default_backend(
        &url,
        &["random-rerank"],
        "random-rerank without --backend vllm-rerank",
    );
    args.extend(["--backend", "vllm-rerank", "--endpoint", "/v1/rerank"]);
    let (code, stdout, stderr) = goodput(&args);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("Total inputs:                            10"),
        "{stdout}"
    );
    let v = read_json(&dir.join("r.json"));
    assert_eq!(v["completed"], 3);
    // The server's usage: the query (63 tokens) with each document (64).
    assert_eq!(v["input_lens"], serde_json::json!([508, 508, 254]));
}

/// vLLM's random-mm: random text with JPEG images drawn per request from
/// the bucket config, sent on the chat backend only; the server's usage
/// counts each image by its size (the simulator reads the JPEG's header).
#[test]
fn random_mm_sends_jpeg_images_drawn_from_the_buckets() {
    let (_sim, url) = simulator(1.0);
    let dir = tmp("random-mm");
    let d = dir.to_str().unwrap();
    let run = |items: &str, file: &str| {
        let mut args = chat(&url);
        args.extend([
            "--dataset-name",
            "random-mm",
            "--random-input-len",
            "32",
            "--random-output-len",
            "4",
            "--num-prompts",
            "12",
            "--random-mm-base-items-per-request",
            items,
            "--random-mm-num-mm-items-range-ratio",
            "0.5",
            // (H, W, T): 56×56 costs 2·2 + 2 = 6 tokens, 280 wide by 28
            // high 10·1 + 2 = 12.
            "--random-mm-bucket-config",
            "{(56, 56, 1): 0.5, (28, 280, 1): 0.5, (720, 1280, 16): 0.0}",
        ]);
        args.extend(detailed(d, file));
        let (code, stdout, stderr) = goodput(&args);
        assert_eq!(code, 0, "{stdout}\n{stderr}");
        read_json(&dir.join(file))
    };
    // Text alone (a count of 0): every prompt the same length.
    let text = run("0", "t.json");
    let base = text["input_lens"][0].as_u64().unwrap();
    assert!(text["input_lens"]
        .as_array()
        .unwrap()
        .iter()
        .all(|l| l == base));
    // One to three images a request (2 spread by half).
    let mm = run("2", "mm.json");
    let extra: Vec<u64> = mm["input_lens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_u64().unwrap() - base)
        .collect();
    let sums: Vec<u64> = (1..=3u64)
        .flat_map(|n| (0..=n).map(move |big| 12 * big + 6 * (n - big)))
        .collect();
    assert!(extra.iter().all(|e| sums.contains(e)), "{extra:?}");
    assert!(extra.iter().any(|e| *e != extra[0]), "{extra:?}");
    // Only the chat backend takes them, as vLLM says.
    refused_on_the_default_backend(
        &url,
        &["random-mm"],
        "only supported on 'openai-chat' backend",
    );
}

/// `bench serve` against `url` on vLLM's chat backend.
fn chat(url: &str) -> Vec<&str> {
    vec![
        "bench",
        "serve",
        "--base-url",
        url,
        "--backend",
        "openai-chat",
        "--endpoint",
        "/v1/chat/completions",
    ]
}

/// `--dataset-name` and what follows it, on vLLM's default (completions)
/// backend: refused before any request, saying `said`.
fn refused_on_the_default_backend(url: &str, dataset: &[&str], said: &str) {
    let mut args = vec!["bench", "serve", "--base-url", url, "--dataset-name"];
    args.extend_from_slice(dataset);
    let (code, _, stderr) = goodput(&args);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains(said), "{stderr}");
}

/// A parquet file of MMStar's columns, snappy-compressed as the Hub
/// writes them: `question` and an embedded `image` (`{bytes}`).
fn mmstar_parquet(path: &Path, rows: &[(&str, Vec<u8>)]) {
    use parquet::basic::Compression;
    use parquet::data_type::{ByteArray, ByteArrayType};
    use parquet::file::properties::WriterProperties;
    use parquet::file::writer::SerializedFileWriter;
    let schema = "message schema { required binary question (UTF8); required group image { required binary bytes; } }";
    let schema = std::sync::Arc::new(parquet::schema::parser::parse_message_type(schema).unwrap());
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .build();
    let file = std::fs::File::create(path).unwrap();
    let mut writer = SerializedFileWriter::new(file, schema, props.into()).unwrap();
    let mut group = writer.next_row_group().unwrap();
    let columns: [Vec<ByteArray>; 2] = [
        rows.iter().map(|(q, _)| ByteArray::from(*q)).collect(),
        rows.iter()
            .map(|(_, b)| ByteArray::from(b.clone()))
            .collect(),
    ];
    for values in columns {
        let mut col = group.next_column().unwrap().unwrap();
        col.typed::<ByteArrayType>()
            .write_batch(&values, None, None)
            .unwrap();
        col.close().unwrap();
    }
    group.close().unwrap();
    writer.close().unwrap();
}

/// The first bytes of a PNG of `w`×`h` pixels: what a server reads its
/// size from.
fn png_header(w: u32, h: u32) -> Vec<u8> {
    let mut b = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR".to_vec();
    b.extend_from_slice(&w.to_be_bytes());
    b.extend_from_slice(&h.to_be_bytes());
    b.extend_from_slice(&[8, 2, 0, 0, 0, 0, 0, 0, 0]);
    b
}

/// `--dataset-name hf` by id, from the Hub cache's snapshot (the one
/// `refs/main` names; the dataset card's configs give the split's file):
/// MMStar's question before its options, its image sent after the text
/// (the server counts the image's tokens by its size).
#[test]
fn a_hugging_face_id_is_read_from_the_hub_cache() {
    let (_sim, url) = simulator(1.0);
    let dir = tmp("hf-cache");
    let repo = dir.join("hub/datasets--Lin-Chen--MMStar");
    let snap = repo.join("snapshots/abc123");
    std::fs::create_dir_all(&snap).unwrap();
    std::fs::create_dir_all(repo.join("refs")).unwrap();
    std::fs::write(repo.join("refs/main"), "abc123").unwrap();
    std::fs::write(
        snap.join("README.md"),
        "---\nconfigs:\n- config_name: val\n  data_files:\n  - split: val\n    path: mmstar.parquet\n---\n",
    )
    .unwrap();
    let rows: Vec<(&str, Vec<u8>)> = vec![
        (
            "Which shape is shown? Options: A: circle, B: square",
            png_header(56, 56),
        ),
        (
            "What colour is the sky here? Options: A: blue, B: red",
            png_header(280, 28),
        ),
    ];
    mmstar_parquet(&snap.join("mmstar.parquet"), &rows);
    let d = dir.to_str().unwrap();
    let mut args = chat(&url);
    args.extend([
        "--dataset-name",
        "hf",
        "--dataset-path",
        "Lin-Chen/MMStar",
        "--num-prompts",
        "2",
        "--disable-shuffle",
        "--hf-output-len",
        "5",
    ]);
    args.extend(detailed(d, "hf.json"));
    let with_cache = |hub: &str| {
        let out = goodput_command()
            .args(&args)
            .env("HF_HUB_CACHE", dir.join(hub))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr,
        )
    };
    let (code, stdout, stderr) = with_cache("hub");
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("Lin-Chen/MMStar read from the local copy"),
        "{stderr}"
    );
    let v = read_json(&dir.join("hf.json"));
    assert_eq!(v["completed"], 2);
    assert_eq!(v["output_lens"], serde_json::json!([5, 5]));
    let lens: Vec<i64> = v["input_lens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_i64().unwrap())
        .collect();
    // Their questions ("Which shape is shown?", "What colour is the sky
    // here?") differ by about two tokens, their images by 12 - 6.
    assert!((lens[1] - lens[0] - 6).abs() <= 3, "{lens:?}");
    assert!(
        stdout.contains("Images (requests with images):           2 (2)"),
        "{stdout}"
    );
    // Without a copy, the command says how to get one, before any request.
    let (code, _, stderr) = with_cache("empty");
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("hf download Lin-Chen/MMStar --repo-type dataset"),
        "{stderr}"
    );
}
