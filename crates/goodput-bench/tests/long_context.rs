//! `bench long-context` end to end, small: two streams of 20,000-token
//! prompts beside 1,000-token ones, and answers of two 64 KB events, against
//! the reference server on a port bound with 0. goodput is the binary next
//! to `bench` in the target directory (`cargo build -p goodput` first, as
//! `cargo test --workspace` does), or `GOODPUT_BIN`. The figures must be
//! there and sane (kernel receive after the send, nothing failed, CPU and
//! memory measured); how fast is for the benchmark, not the test.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn goodput_bin() -> PathBuf {
    if let Some(path) = std::env::var_os("GOODPUT_BIN") {
        return PathBuf::from(path);
    }
    Path::new(env!("CARGO_BIN_EXE_bench"))
        .with_file_name(format!("goodput{}", std::env::consts::EXE_SUFFIX))
}

fn number(v: &Value, path: &[&str]) -> f64 {
    let found = path.iter().try_fold(v, |v, key| v.get(key));
    found
        .and_then(Value::as_f64)
        .unwrap_or_else(|| panic!("no number at {path:?} in {v:#}"))
}

#[test]
fn long_prompts_and_large_events_have_sane_figures() {
    let goodput = goodput_bin();
    assert!(
        goodput.is_file(),
        "no goodput binary at {}: build it first (cargo build -p goodput) or set GOODPUT_BIN",
        goodput.display()
    );
    let dir = std::env::temp_dir().join(format!("goodput-bench-lc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json_path = dir.join("long-context.json");
    let output = Command::new(env!("CARGO_BIN_EXE_bench"))
        .arg("long-context")
        .arg("--goodput")
        .arg(&goodput)
        .arg("--work-dir")
        .arg(&dir)
        .arg("--json")
        .arg(&json_path)
        .args(["--idle-wait-s", "0", "--time-limit-s", "120"])
        .args(["--ttft-ms", "20", "--interval-ms", "1"])
        .args(["--streams", "2", "--requests-per-stream", "1"])
        .args(["--input-tokens", "1000,20000", "--output-tokens", "20"])
        .args(["--event-sizes", "65536", "--answer-bytes", "131072"])
        .args(["--event-streams", "1", "--event-requests-per-stream", "1"])
        .output()
        .expect("bench long-context runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("### Long prompts out") && stdout.contains("### Large events in"));
    let figures: Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();

    let prompts = figures["prompts"].as_array().unwrap();
    let tokens: Vec<f64> = prompts
        .iter()
        .map(|p| number(p, &["input_tokens"]))
        .collect();
    assert_eq!(tokens, [1000.0, 20000.0]);
    for p in prompts {
        assert_eq!(number(p, &["requests"]), 2.0, "{p:#}");
        assert_eq!(number(p, &["failed"]), 0.0, "{p:#}");
        // Every request found in the server's log with a kernel receive time.
        assert_eq!(number(p, &["timed"]), 2.0, "{p:#}");
        // The kernel has a request's last byte after goodput began to send
        // it, and after it was due: both on the same CLOCK_MONOTONIC.
        let send_delay = number(p, &["send_delay_ms", "p50"]);
        let to_last = number(p, &["sched_to_last_byte_ms", "max"]);
        assert!(send_delay > 0.0 && send_delay < 10_000.0, "{p:#}");
        assert!(to_last >= number(p, &["send_delay_ms", "max"]), "{p:#}");
        assert!(number(p, &["first_sched_s"]) >= 0.0, "{p:#}");
        // One request per stream: all of them in the first wave.
        let wave = number(p, &["first_wave_sched_to_last_byte_ms", "n"]);
        assert_eq!(wave, 2.0, "{p:#}");
        assert!(
            number(p, &["ttft_error_ms", "p50"]).abs() < 10_000.0,
            "{p:#}"
        );
        // 20 tokens: 19 gaps per request.
        assert_eq!(number(p, &["itl_abs_error_ms", "n"]), 38.0, "{p:#}");
        assert!(number(p, &["client_cpu_s"]) > 0.0, "{p:#}");
        assert!(number(p, &["peak_rss_kib"]) > 0.0, "{p:#}");
    }

    let events = figures["events"].as_array().unwrap();
    let clients: Vec<(&str, Option<&str>)> = events
        .iter()
        .map(|e| (e["client"].as_str().unwrap(), e["tokenizer"].as_str()))
        .collect();
    assert_eq!(
        clients,
        [
            ("bytes-only", None),
            ("goodput", None),
            ("goodput", Some("none"))
        ]
    );
    for e in events {
        assert_eq!(number(e, &["event_bytes"]), 65536.0, "{e:#}");
        // One request of two 64 KB events (goodput adds its 1-token probe).
        let text_mb = number(e, &["text_mb"]);
        assert!((0.13..0.25).contains(&text_mb), "{e:#}");
        assert_eq!(number(e, &["failed"]), 0.0, "{e:#}");
        assert!(number(e, &["cpu_per_mb_ms"]) > 0.0, "{e:#}");
        assert_eq!(number(e, &["ttft_error_ms", "n"]), 1.0, "{e:#}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
