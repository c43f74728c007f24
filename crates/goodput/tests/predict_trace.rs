//! `goodput predict --trace`: a Mooncake trace's forecast through the
//! binary. The goodput is a rate (replay speed × the trace's mean rate),
//! the JSON says the speed, and the trace's prefix sharing counts: the same
//! arrivals and lengths forecast a higher goodput when their prompts share
//! their blocks than when the hash ids are removed.

mod common;

use common::*;

/// 160 requests about 100 ms apart (fixed pseudo-random gaps), 4,096-token
/// prompts of 8 blocks of 512 tokens, 32 output tokens. With `shared`,
/// every prompt starts with the same 7 blocks (then one of its own);
/// without, the rows carry no ids (a generic JSONL trace of the same
/// times and lengths): every prompt is unique.
fn trace(name: &str, shared: bool) -> std::path::PathBuf {
    let path = tmp(name);
    let mut t_ms = 0u64;
    let mut text = String::new();
    for i in 0..160u64 {
        t_ms += 40 + (i * 37 + 11) % 120;
        let mut row = serde_json::json!({
            "timestamp": t_ms,
            "input_length": 4096,
            "output_length": 32,
        });
        if shared {
            let ids: Vec<u64> = (1..=7).chain([1000 + i]).collect();
            row["hash_ids"] = serde_json::json!(ids);
        }
        text += &format!("{row}\n");
    }
    std::fs::write(&path, text).unwrap();
    path
}

fn predict(trace: &std::path::Path, format: &[&str], out: &std::path::Path) -> serde_json::Value {
    let mut args = vec![
        "predict",
        "--sim",
        "llama-3.1-8b,h100-sxm",
        "--trace",
        trace.to_str().unwrap(),
        "--slo",
        "ttft:p99<=200ms",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend(format);
    let (code, stdout, stderr) = goodput(&args);
    assert_eq!(code, 0, "predict failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("its mean rate"), "{stdout}");
    read_json(out)
}

#[test]
fn a_trace_forecasts_a_speed_and_its_shared_blocks_raise_the_goodput() {
    let shared = predict(&trace("shared.jsonl", true), &[], &tmp("shared.json"));
    let unique = predict(
        &trace("unique.jsonl", false),
        &["--trace-format", "jsonl", "--trace-time-unit", "ms"],
        &tmp("unique.json"),
    );
    let f = |v: &serde_json::Value| v.as_f64().unwrap();
    for out in [&shared, &unique] {
        let goodput = f(&out["goodput"]);
        assert!(goodput > 0.0, "{out:#}");
        assert_eq!(out["unit"], "req/s");
        // The speed is the goodput over the trace's mean rate.
        let mean = f(&out["trace"]["mean_rate"]);
        let span_s = f(&out["trace"]["stats"]["span_s"]);
        assert!((mean - 159.0 / span_s).abs() < 1e-9, "{out:#}");
        assert!((f(&out["speed"]) - goodput / mean).abs() < 1e-9, "{out:#}");
        assert_eq!(out["plan"]["schedules"], 1);
        assert_eq!(out["plan"]["warmup_requests"], 16);
        // The trace as recorded (speed 1) is a point of the curve.
        let curve = out["curve"].as_array().unwrap();
        assert!(curve.iter().any(|p| p["speed"] == 1.0), "{out:#}");
    }
    let (s, u) = (&shared["curve"], &unique["curve"]);
    assert!(f(&s[0]["cached_share"]) > 0.8, "{s:#}");
    assert_eq!(f(&u[0]["cached_share"]), 0.0, "{u:#}");
    assert!(
        f(&shared["goodput"]) > 1.5 * f(&unique["goodput"]),
        "shared {} req/s, unique {} req/s",
        shared["goodput"],
        unique["goodput"]
    );
}

#[test]
fn a_trace_takes_no_synthetic_lengths_and_a_bad_row_is_named() {
    let trace = trace("lengths.jsonl", true);
    let (code, _, err) = goodput(&[
        "predict",
        "--trace",
        trace.to_str().unwrap(),
        "--input-tokens",
        "512",
        "--slo",
        "ttft:p99<=200ms",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--input-tokens"), "{err}");

    let bad = tmp("bad.jsonl");
    std::fs::write(
        &bad,
        "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 2, \"hash_ids\": [1]}\n\
         {\"timestamp\": 5, \"input_length\": \"many\", \"output_length\": 2, \"hash_ids\": [1]}\n",
    )
    .unwrap();
    let (code, _, err) = goodput(&[
        "predict",
        "--trace",
        bad.to_str().unwrap(),
        "--slo",
        "ttft:p99<=200ms",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("bad.jsonl:2:") && err.contains("'input_length'"),
        "{err}"
    );
}
