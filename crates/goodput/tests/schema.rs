//! The results JSON is validated against the committed schema
//! (`schema/run.schema.json`), for a clean run and for one with failures.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;

fn validate(doc: &serde_json::Value) {
    common::validate_run_document(doc);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_json_matches_the_schema() {
    let server = start(Script {
        ttft: Duration::from_millis(5),
        interval: Duration::from_millis(2),
        events: 5,
        behavior: Arc::new(|id| match id % 4 {
            1 => Behavior::Status(500),
            2 => Behavior::CutAfter(1),
            _ => Behavior::Ok,
        }),
        ..Script::default()
    })
    .await;
    for load in [["--concurrency", "3"], ["--request-rate", "200"]] {
        let out = tmp("results.json");
        let url = server.url();
        let out_s = out.to_str().unwrap().to_string();
        let mut args = vec![
            "run",
            "--url",
            &url,
            "--num-prompts",
            "12",
            "--input-tokens",
            "8",
        ];
        args.extend([
            "--output-tokens",
            "5",
            "--percentiles",
            "50,99,99.9",
            "--quiet",
        ]);
        args.extend(load);
        args.extend(["--out", &out_s]);
        let (code, _, stderr) = goodput_async(argv(&args)).await;
        assert_eq!(code, 1, "{stderr}");
        let doc = read_json(&out);
        validate(&doc);
        assert!(doc["p99.9_ttft_ms"].is_number(), "vLLM-style key for p99.9");
    }
}
