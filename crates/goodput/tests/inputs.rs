//! Requests that carry more than one prompt: batches of inputs to the
//! pooling endpoints (embeddings, rerank, score) and images in chat.
//!
//! Against the simulator: runs complete with the right counts and units
//! (inputs, input tokens, no TTFT); inputs/s rise with the batch as the
//! simulator's prefill-only steps predict; images raise TTFT by their
//! tokens' prefill and the server's prompt tokens by the documented count.
//! Against a scripted server sending the APIs' real answers (OpenAI's
//! embeddings list, vLLM's, Cohere's and Jina's rerank, vLLM's score): they
//! are read, and an answer with fewer results than inputs is malformed.

mod common;

use std::convert::Infallible;
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::{argv, goodput, goodput_async, read_json, read_records, silent_server, tmp};
use http_body_util::{BodyExt, Full};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};

use goodput_sim::roofline::BatchShape;
use goodput_sim::SimConfig;

fn validate(doc: &Value) {
    common::validate_run_document(doc);
}

/// One run's results and records against the in-process simulator at
/// `time_scale`, with `extra` flags.
fn sim_run(time_scale: f64, extra: &[&str]) -> (Value, Vec<Value>) {
    let out = tmp("out.json");
    let records = tmp("records.jsonl");
    let sim = format!("time-scale={time_scale}");
    let mut args = vec![
        "run",
        "--sim",
        &sim,
        "--out",
        out.to_str().unwrap(),
        "--records",
        records.to_str().unwrap(),
        "--no-server-metrics",
    ];
    args.extend_from_slice(extra);
    let (code, stdout, stderr) = goodput(&args);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let doc = read_json(&out);
    validate(&doc);
    (doc, read_records(&records))
}

/// The simulator's time (s) for one step prefilling `seqs` prompts of
/// `tokens` each from scratch, at `time_scale`.
fn prefill_step_s(time_scale: f64, seqs: u64, tokens: u64) -> f64 {
    let roofline = SimConfig {
        time_scale,
        ..Default::default()
    }
    .roofline();
    let mut shape = BatchShape::default();
    for _ in 0..seqs {
        shape.add(0, tokens, false);
    }
    roofline.step_time(&shape).total_s
}

#[test]
fn pooling_runs_count_inputs_and_have_no_ttft() {
    for (endpoint, server_tokens_per_input) in [("embeddings", 64), ("rerank", 128), ("score", 128)]
    {
        let (doc, records) = sim_run(
            0.2,
            &[
                "--endpoint",
                endpoint,
                "--batch-size",
                "4",
                "--input-tokens",
                "64",
                "--num-prompts",
                "12",
                "--concurrency",
                "3",
            ],
        );
        assert_eq!(
            (&doc["completed"], &doc["failed"]),
            (&json!(12), &json!(0)),
            "{endpoint}"
        );
        assert_eq!(doc["inputs"]["inputs_total"], 48, "{endpoint}");
        assert_eq!(doc["inputs"]["inputs_per_request_mean"], 4.0, "{endpoint}");
        let per_s = doc["inputs"]["inputs_throughput"].as_f64().unwrap();
        let req_per_s = doc["request_throughput"].as_f64().unwrap();
        assert!((per_s - 4.0 * req_per_s).abs() < 1e-6 * per_s, "{endpoint}");
        // The simulator counts each input (a rerank or score input is the
        // query and its document) as the client built it: 64 tokens each.
        assert_eq!(
            doc["total_input_tokens"],
            json!(12 * 4 * server_tokens_per_input),
            "{endpoint}"
        );
        assert_eq!(doc["total_output_tokens"], 0, "{endpoint}");
        assert!(doc["ttft"].is_null() && doc["tpot"].is_null() && doc["itl"].is_null());
        assert_eq!(doc["e2el"]["count"], 12, "{endpoint}");
        assert!(doc["images"].is_null());
        let measured: Vec<&Value> = records.iter().filter(|r| r["phase"] == "measure").collect();
        assert_eq!(measured.len(), 12);
        for r in measured {
            assert_eq!(r["inputs"], 4, "{r}");
            assert!(
                r["ttft_ms"].is_null() && r["e2el_ms"].as_f64().unwrap() > 0.0,
                "{r}"
            );
        }
    }
}

/// At concurrency 1 each request's inputs are one prefill-only step: its
/// inputs/s is the batch over that step's time (plus the exchange's own
/// small cost), which rises with the batch while the step's fixed cost —
/// the weights' read — is spread over more inputs. Embeddings prefill each
/// 32-token input; rerank each query and document together (64 tokens).
#[test]
fn inputs_per_second_rise_with_the_batch_as_prefill_steps_predict() {
    for (endpoint, tokens_per_input) in [("embeddings", 32), ("rerank", 64)] {
        let mut measured = Vec::new();
        for batch in [1u64, 8, 32] {
            let b = batch.to_string();
            let (doc, _) = sim_run(
                1.0,
                &[
                    "--endpoint",
                    endpoint,
                    "--batch-size",
                    &b,
                    "--input-tokens",
                    "32",
                    "--num-prompts",
                    "30",
                    "--concurrency",
                    "1",
                    "--warmup",
                    "2",
                ],
            );
            assert_eq!(doc["completed"], 30, "{endpoint}");
            let per_s = doc["inputs"]["inputs_throughput"].as_f64().unwrap();
            let predicted = batch as f64 / prefill_step_s(1.0, batch, tokens_per_input);
            eprintln!("{endpoint} batch {batch}: {per_s:.0} inputs/s, predicted {predicted:.0}");
            // Below the step's prediction by the exchange's own cost (a
            // debug build's client and server: 0.7–0.9 of it measured, less
            // with the other tests of this binary running beside it, and
            // 0.495 once in a CI run on a slow evening). Never above it: the
            // step's time is the simulator's floor. The wide lower bound
            // still catches a step that takes three times its model.
            assert!(
                (0.3 * predicted..=1.25 * predicted).contains(&per_s),
                "{endpoint} batch {batch}: {per_s:.0} inputs/s against {predicted:.0} predicted"
            );
            measured.push(per_s);
        }
        assert!(measured[1] > 2.0 * measured[0], "{endpoint}: {measured:?}");
        assert!(measured[2] > measured[1], "{endpoint}: {measured:?}");
    }
}

/// Images add their tokens (Qwen2-VL's count: 448 px is 16 merged 28-px
/// patches a side, plus 2) to the prompt the server prefills and reports.
#[test]
fn images_raise_ttft_by_their_prefill_and_are_counted() {
    let run = |images: Option<&str>| {
        let mut args = vec![
            "--input-tokens",
            "256",
            "--output-tokens",
            "4",
            "--num-prompts",
            "16",
            "--concurrency",
            "1",
            "--warmup",
            "2",
        ];
        if let Some(i) = images {
            args.extend(["--images", i]);
        }
        sim_run(10.0, &args)
    };
    let (plain, _) = run(None);
    let (with, records) = run(Some("1:448x448"));
    assert_eq!(with["completed"], 16);
    let png = goodput_common::image::synthetic_png(448, 448, 0).len() as u64;
    let images = &with["images"];
    assert_eq!(
        (
            images["images_total"].as_u64(),
            images["image_requests"].as_u64()
        ),
        (Some(16), Some(16))
    );
    assert_eq!(images["image_bytes_total"], json!(16 * png));
    assert_eq!(images["image_extra_prompt_tokens_mean"], 258.0);
    assert!(plain["images"].is_null());
    let r = records.iter().find(|r| r["phase"] == "measure").unwrap();
    assert_eq!(
        (r["images"].as_u64(), r["image_bytes"].as_u64()),
        (Some(1), Some(png))
    );
    assert_eq!(r["server_prompt_tokens"], 256 + 258);
    let p50 = |d: &Value| d["ttft"]["p50_ms"].as_f64().unwrap();
    let raised = p50(&with) - p50(&plain);
    let predicted = 1e3 * (prefill_step_s(10.0, 1, 256 + 258) - prefill_step_s(10.0, 1, 256));
    eprintln!("TTFT raised by {raised:.1} ms, predicted {predicted:.1} ms");
    assert!(
        (0.6 * predicted..=1.5 * predicted + 10.0).contains(&raised),
        "TTFT raised by {raised:.1} ms against {predicted:.1} ms predicted"
    );
}

#[test]
fn images_and_batches_are_refused_where_they_do_not_apply() {
    let (code, _, stderr) = goodput(&["run", "--endpoint", "embeddings", "--images", "1:8x8"]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("--images adds image_url parts to chat messages"),
        "{stderr}"
    );
    let (code, _, stderr) = goodput(&["run", "--batch-size", "4"]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("--endpoint embeddings, rerank or score, not chat"),
        "{stderr}"
    );
    let (code, _, stderr) = goodput(&["run", "--images", "1:448"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("N:WIDTHxHEIGHT"), "{stderr}");
}

/// The answers, as the APIs document them, for a request of two inputs;
/// `short` answers one result only.
fn answer(path: &str, short: bool, vendor: &str) -> String {
    let n = if short { 1 } else { 2 };
    match (path, vendor) {
        ("/v1/embeddings", _) => {
            let data: Vec<Value> = (0..n)
                .map(|i| json!({"object": "embedding", "index": i, "embedding": [0.0123, -0.0456, 0.0789]}))
                .collect();
            json!({"object": "list", "data": data, "model": "m", "usage": {"prompt_tokens": 40, "total_tokens": 40}})
        }
        ("/v1/rerank", "cohere") => {
            let results: Vec<Value> = (0..n).map(|i| json!({"index": i, "relevance_score": 0.5})).collect();
            json!({"id": "07734bd2", "results": results, "meta": {"api_version": {"version": "2"}, "billed_units": {"search_units": 1}}})
        }
        ("/v1/rerank", "jina") => {
            let results: Vec<Value> = (0..n)
                .map(|i| json!({"index": i, "document": {"text": "d"}, "relevance_score": 0.9}))
                .collect();
            json!({"model": "m", "usage": {"total_tokens": 44}, "results": results})
        }
        ("/v1/rerank", _) => {
            let results: Vec<Value> = (0..n)
                .map(|i| json!({"index": i, "document": {"text": "d", "multi_modal": null}, "relevance_score": 0.25}))
                .collect();
            json!({"id": "rerank-1", "model": "m", "usage": {"total_tokens": 44}, "results": results})
        }
        _ => {
            let data: Vec<Value> = (0..n).map(|i| json!({"index": i, "object": "score", "score": 0.75})).collect();
            json!({"id": "score-1", "object": "list", "created": 1, "model": "m", "data": data, "usage": {"prompt_tokens": 44, "total_tokens": 44, "completion_tokens": 0, "prompt_tokens_details": null}})
        }
    }
    .to_string()
}

/// A server answering every request with [`answer`]; `short` from the
/// fourth request on (request ids 3, 4, ...).
async fn scripted(short_from: Option<u64>, vendor: &'static str) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let svc =
                hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| async move {
                    let id: u64 = req
                        .headers()
                        .get("x-request-id")
                        .and_then(|v| v.to_str().ok())
                        .and_then(|t| t.rsplit('-').next()?.parse().ok())
                        .unwrap_or(0);
                    let path = req.uri().path().to_string();
                    let _ = req.into_body().collect().await;
                    let body = answer(&path, short_from.is_some_and(|s| id >= s), vendor);
                    let mut r = Response::new(Full::new(Bytes::from(body)));
                    r.headers_mut()
                        .insert("content-type", "application/json".parse().unwrap());
                    Ok::<_, Infallible>(r)
                });
            tokio::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    format!("http://{addr}")
}

async fn scripted_run(endpoint: &str, short_from: Option<u64>, vendor: &'static str) -> Value {
    let url = scripted(short_from, vendor).await;
    let out = tmp("out.json");
    let args = common::argv(&[
        "run",
        "--url",
        &url,
        "--model",
        "m",
        "--endpoint",
        endpoint,
        "--batch-size",
        "2",
        "--num-prompts",
        "6",
        "--concurrency",
        "1",
        "--no-server-metrics",
        "--out",
        out.to_str().unwrap(),
    ]);
    let (code, stdout, stderr) = goodput_async(args).await;
    assert!(code == 0 || code == 1, "{code}\n{stdout}\n{stderr}");
    let doc = read_json(&out);
    validate(&doc);
    doc
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_pooling_answers_are_read_and_a_short_one_is_malformed() {
    for (endpoint, vendor, tokens) in [
        ("embeddings", "openai", Some(40)),
        ("rerank", "vllm", Some(44)),
        ("rerank", "jina", Some(44)),
        ("rerank", "cohere", None),
        ("score", "vllm", Some(44)),
    ] {
        let doc = scripted_run(endpoint, None, vendor).await;
        assert_eq!(
            (&doc["completed"], &doc["failed"]),
            (&json!(6), &json!(0)),
            "{endpoint} {vendor}"
        );
        assert_eq!(doc["inputs"]["inputs_total"], 12, "{endpoint} {vendor}");
        assert!(doc["ttft"].is_null(), "{endpoint} {vendor}");
        let sources = &doc["tokens"]["input_sources"];
        match tokens {
            // The server's usage is the input count.
            Some(t) => assert_eq!(
                (
                    doc["total_input_tokens"].as_u64(),
                    sources["server"].as_u64()
                ),
                (Some(6 * t), Some(6)),
                "{endpoint} {vendor}"
            ),
            // Cohere bills search units, not tokens: the client's count.
            None => assert_eq!(sources["tokenizer"], 6, "{endpoint} {vendor}"),
        }
    }
    let doc = scripted_run("embeddings", Some(3), "openai").await;
    assert_eq!((&doc["completed"], &doc["failed"]), (&json!(3), &json!(3)));
    assert_eq!(
        doc["errors"]["by_kind"]["malformed"], 3,
        "{}",
        doc["errors"]
    );
    let example = doc["errors"]["examples"]["malformed"].to_string();
    assert!(example.contains("1 results for 2 inputs sent"), "{example}");
}

/// A dataset row's `images` (paths relative to the dataset file) are read
/// once, sent as data URLs of their media type, and counted like
/// synthetic ones; a file of another kind is refused, naming the field.
#[test]
fn dataset_rows_send_their_image_files() {
    let data = tmp("rows.jsonl");
    let dir = data.parent().unwrap();
    let png = goodput_common::image::synthetic_png(448, 448, 5);
    std::fs::write(dir.join("a.png"), &png).unwrap();
    // A GIF header of 56×28 pixels: 2×1 merged patches, plus 2.
    let gif = b"GIF89a\x38\x00\x1c\x00\x00\x00\x00;".to_vec();
    std::fs::create_dir(dir.join("img")).unwrap();
    std::fs::write(dir.join("img/b.gif"), &gif).unwrap();
    let rows = [
        json!({"prompt": "describe the picture", "images": ["a.png"]}),
        json!({"prompt": "and these", "images": ["a.png", "img/b.gif"]}),
    ];
    let text: String = rows.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(&data, text).unwrap();
    let (doc, records) = sim_run(
        0.1,
        &[
            "--dataset",
            data.to_str().unwrap(),
            "--num-prompts",
            "2",
            "--output-tokens",
            "2",
        ],
    );
    assert_eq!(doc["completed"], 2);
    let images = &doc["images"];
    assert_eq!(images["images_total"], 3);
    let bytes = 2 * png.len() + gif.len();
    assert_eq!(images["image_bytes_total"], json!(bytes));
    // (258 + 258 + 4) / 2 tokens beyond the text per request.
    assert_eq!(images["image_extra_prompt_tokens_mean"], 260.0);
    assert!(records.iter().all(|r| r["images"].as_u64().is_some()));

    std::fs::write(&data, "{\"prompt\": \"x\", \"images\": [\"a.bmp\"]}\n").unwrap();
    let (code, _, stderr) = goodput(&[
        "run",
        "--dataset",
        data.to_str().unwrap(),
        "--num-prompts",
        "1",
    ]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("images[0]") && stderr.contains("not a .png"),
        "{stderr}"
    );
}

/// The inputs figures reach the console, the CSV, the HTML report and
/// `compare`, which gates on `inputs_throughput`.
#[test]
fn inputs_reach_every_output_and_compare_gates_on_them() {
    let run = |batch: &str| {
        let out = tmp("out.json");
        let csv = tmp("summary.csv");
        let html = tmp("report.html");
        let (code, stdout, stderr) = goodput(&[
            "run",
            "--sim",
            "time-scale=0.2",
            "--endpoint",
            "embeddings",
            "--batch-size",
            batch,
            "--input-tokens",
            "32",
            "--num-prompts",
            "10",
            "--concurrency",
            "1",
            "--no-server-metrics",
            "--out",
            out.to_str().unwrap(),
            "--csv",
            csv.to_str().unwrap(),
            "--html",
            html.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{stderr}");
        (
            out,
            stdout,
            std::fs::read_to_string(csv).unwrap(),
            std::fs::read_to_string(html).unwrap(),
        )
    };
    let (base, stdout, csv, html) = run("1");
    assert!(
        stdout.contains("Total inputs:") && stdout.contains("Input throughput (inputs/s):"),
        "{stdout}"
    );
    assert!(
        stdout.contains("embeddings, input 32 tokens, 1 inputs per request"),
        "{stdout}"
    );
    assert!(!stdout.contains("TTFT"), "{stdout}");
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let header = reader.headers().unwrap().clone();
    let row = reader.records().next().unwrap().unwrap();
    let column = |name: &str| {
        row.get(header.iter().position(|h| h == name).unwrap())
            .unwrap()
            .to_string()
    };
    assert_eq!(column("inputs_total"), "10");
    assert!(column("inputs_throughput").parse::<f64>().unwrap() > 0.0);
    assert_eq!(column("images_total"), "");
    assert!(html.contains("Input throughput (inputs/s)"));
    let (new, ..) = run("16");
    let (code, stdout, stderr) = goodput(&[
        "compare",
        base.to_str().unwrap(),
        new.to_str().unwrap(),
        "--fail-on",
        "inputs_throughput<-10%",
    ]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("inputs_throughput") && stdout.contains("inputs/s"),
        "{stdout}"
    );
    // The other way round, 16 inputs a request fall to 1: a regression.
    let (code, stdout, _) = goodput(&[
        "compare",
        new.to_str().unwrap(),
        base.to_str().unwrap(),
        "--fail-on",
        "inputs_throughput<-10%",
    ]);
    assert_eq!(code, 1, "{stdout}");
}

/// Every bad input exits 2 with what would be valid, before any
/// work: no connection is made and no simulator is started.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_exits_2_before_any_work() {
    let (addr, accepted) = silent_server().await;
    let url = format!("http://{addr}");
    let cases: &[(&[&str], &str)] = &[
        (&["--timeout", "99999999999999999999s"], "at most"),
        (&["--duration", "10000000000000000000s"], "at most"),
        (&["--timeout", "0s"], "greater than 0"),
        (&["--request-rate", "1e-20"], "one a year"),
        (&["--request-rate", "10", "--max-concurrency", "0"], ">= 1"),
        (&["--concurrency", "0"], ">= 1"),
        (&["--warmup", "abc"], "request count"),
        (&["--tokenizer", "bogus"], "o200k_base"),
        (&["--header", "no colon"], "Name: value"),
        (&["--num-prompts", "0"], "0"),
        (&["--input-tokens", "0"], "valid"),
        (&["--max-error-rate", "2"], "from 0 to 1"),
        (&["--percentiles", "150"], "0..=100"),
    ];
    for with_url in [true, false] {
        for (flags, hint) in cases {
            let mut args = vec!["run"];
            if with_url {
                args.extend(["--url", url.as_str()]);
            }
            args.extend_from_slice(flags);
            let started = Instant::now();
            let (code, _, err) = goodput_async(argv(&args)).await;
            assert_eq!(code, 2, "{flags:?}: {err}");
            assert!(err.contains(hint), "{flags:?}: expected '{hint}' in: {err}");
            assert!(
                !err.contains("built-in simulator"),
                "{flags:?}: the simulator started: {err}"
            );
            assert!(started.elapsed() < Duration::from_secs(5), "{flags:?}");
        }
    }
    let (code, _, err) = goodput_async(argv(&["run", "--url", "ftp://x"])).await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("scheme"), "{err}");
    assert_eq!(
        accepted.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "a bad flag must stop goodput before it connects"
    );
}
