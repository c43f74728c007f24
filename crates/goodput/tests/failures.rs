//! Failures counted under the right name, against a scripted server.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;

/// A 200 with no content is `empty_response`, not a success; a plain-text
/// event is the server's error, with its text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_responses_and_text_error_events_are_failures_of_their_own() {
    let server = start(Script {
        events: 4,
        ttft: Duration::from_millis(5),
        interval: Duration::from_millis(2),
        behavior: Arc::new(|id| match id % 3 {
            1 => Behavior::Empty,
            2 => Behavior::TextErrorAfter(2),
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
        "3",
        "--num-prompts",
        "9",
        "--input-tokens",
        "8",
        "--output-tokens",
        "4",
        "--records",
        records.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]))
    .await;
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    let v = read_json(&out);
    assert_eq!(
        (v["completed"].as_u64(), v["failed"].as_u64()),
        (Some(3), Some(6))
    );
    assert_eq!(v["errors"]["by_kind"]["empty_response"], 3);
    assert_eq!(v["errors"]["by_kind"]["server_error"], 3);
    let recs = read_records(&records);
    assert_eq!(recs.len(), 9, "one record per request");
    let text = recs
        .iter()
        .find(|r| r["error_kind"] == "server_error")
        .unwrap();
    assert!(
        text["error"].as_str().unwrap().contains("channel closed"),
        "{text}"
    );
    let empty = recs
        .iter()
        .find(|r| r["error_kind"] == "empty_response")
        .unwrap();
    assert!(
        empty["error"]
            .as_str()
            .unwrap()
            .contains("completion_tokens 0"),
        "{empty}"
    );
}

/// A gateway that echoes the caller's credentials in its 401 body: the key
/// appears in no output — console, results, records, CSV, HTML.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn echoed_credentials_never_reach_any_output() {
    let server = start(Script {
        behavior: Arc::new(|_| Behavior::EchoAuth),
        ..Script::default()
    })
    .await;
    let (records, out, csv, html) = (tmp("r.jsonl"), tmp("r.json"), tmp("r.csv"), tmp("r.html"));
    let url = server.url();
    let args = argv(&[
        "run",
        "--url",
        &url,
        "--model",
        "m",
        "--concurrency",
        "2",
        "--num-prompts",
        "4",
        "--header",
        "X-Api-Key: hdr-secret-999",
        "--records",
        records.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
    ]);
    let output = tokio::task::spawn_blocking(move || {
        goodput_command()
            .args(pinned(&args.iter().map(String::as_str).collect::<Vec<_>>()))
            .env("OPENAI_API_KEY", "sk-secret-12345")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert_eq!(output.status.code(), Some(3), "every request failed");
    let mut texts = vec![
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    ];
    for f in [&records, &out, &csv, &html] {
        texts.push(std::fs::read_to_string(f).unwrap_or_default());
    }
    // stdout, stderr, records, results, CSV, HTML: the failures are there,
    // the key is not.
    assert!(texts[2].contains("http_status") && texts[3].contains("http_401"));
    assert!(
        texts[5].contains("http_401"),
        "the HTML report shows the failures"
    );
    for (i, t) in texts.iter().enumerate() {
        for secret in ["sk-secret-12345", "hdr-secret-999"] {
            assert!(!t.contains(secret), "output {i} leaks {secret}: {t}");
        }
    }
    assert!(texts[3].contains("<redacted>"), "{}", texts[3]);
}

/// Closed loop needing more descriptors than the hard limit allows: exit 2
/// before any request, saying how to raise the limit — never failures
/// blamed on the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn too_few_file_descriptors_exit_2_before_sending() {
    let server = start(Script::quick()).await;
    let url = server.url();
    let output = tokio::task::spawn_blocking(move || {
        let mut cmd = goodput_command();
        cmd.args([
            "run",
            "--url",
            &url,
            "--model",
            "m",
            "--concurrency",
            "120",
            "--num-prompts",
            "10",
        ]);
        // A hard limit of 64 descriptors.
        limit_open_files(&mut cmd, 64);
        cmd.output().unwrap()
    })
    .await
    .unwrap();
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(
        err.contains("ulimit -n") && err.contains("limit is 64"),
        "{err}"
    );
    assert!(server.log.lock().unwrap().is_empty(), "a request was sent");
}

/// Lost records are an internal fault with its own message, never
/// "no request completed".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_aggregator_is_an_internal_fault_not_the_servers() {
    use goodput_core::load::{Progress, RunControl, RunPlan, Warmup};
    use goodput_core::measure::RecordsSink;
    use goodput_core::plan::{PreparedTarget, RunError, RunSpec, TargetOptions};

    struct Panics;
    impl std::io::Write for Panics {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            panic!("disk on fire");
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let server = start(Script::quick()).await;
    let control = RunControl::new();
    let target = PreparedTarget::prepare(
        TargetOptions {
            client: goodput_core::request::ClientOptions {
                url: server.url(),
                endpoint: goodput_core::request::Endpoint::Chat,
                headers: vec![],
                api_key: None,
                timeout: Duration::from_secs(10),
                idle_timeout: Duration::from_secs(10),
                connect_timeout: Duration::from_secs(5),
                tls: Default::default(),
                no_proxy: true,
            },
            model: None,
            stream: true,
            pin_output: true,
            temperature: None,
            server_in_process: false,
            target: goodput_core::output::Target::Server,
            tokenizer: goodput_core::tokenizer::Tokenizer::from_spec("none").unwrap(),
            server_metrics: goodput_core::plan::ServerMetricsChoice::Off,
            gpu_metrics: Vec::new(),
            nvml: false,
            output: None,
        },
        &control,
    )
    .await
    .unwrap();
    let spec = RunSpec {
        plan: RunPlan {
            ramp_up: None,
            shard: None,
            load: goodput_core::load::Load::Closed { concurrency: 2 },
            num_prompts: Some(6),
            duration: None,
            warmup: Warmup::None,
            drain_timeout: Duration::from_secs(10),
            seed: 0,
        },
        workload: goodput_core::load::WorkloadSpec::synthetic(
            goodput_core::load::SyntheticSpec::new("8".parse().unwrap(), "4".parse().unwrap(), 0),
        ),
        percentiles: vec![50.0, 99.0],
        slo: None,
        early_stop: false,
        cost: None,
        keep_outputs: false,
        schedule_control: None,
    };
    let mut sink = RecordsSink::new(Some(Box::new(Panics)), false);
    let err = target
        .run(&spec, &mut sink, &control, Arc::new(Progress::default()))
        .await
        .unwrap_err();
    assert!(matches!(err, RunError::Internal(_)), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.contains("internal error") && msg.contains("disk on fire"),
        "{msg}"
    );
    // The same target still runs a healthy plan afterwards.
    let mut sink = RecordsSink::default();
    let ok = target
        .run(&spec, &mut sink, &control, Arc::new(Progress::default()))
        .await
        .unwrap();
    assert_eq!(ok.metrics.completed, 6);
}
