//! `--metrics-listen`: the client's live figures scraped while a run goes
//! on, and at its end (`--metrics-linger`) equal to the results file's.

mod common;

use std::io::{BufRead, BufReader};
use std::time::{Duration, Instant};

use common::*;

#[test]
fn live_exposition_is_scraped_during_a_run_and_agrees_with_the_results() {
    let out = tmp("live.json");
    let mut child = spawn_goodput(&[
        "run",
        "--sim",
        "llama-3.1-8b,h100-sxm",
        "--concurrency",
        "8",
        "--num-prompts",
        "60",
        "--warmup",
        "4",
        "--input-tokens",
        "256",
        "--output-tokens",
        "64",
        "--metrics-listen",
        "127.0.0.1:0",
        "--metrics-linger",
        "30s",
        "--out",
        out.to_str().unwrap(),
        "-q",
    ]);
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let next_line = |what: &str| -> String {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = rx
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no line {what}"));
            if line.contains(what) {
                return line;
            }
        }
    };
    let line = next_line("live metrics at http://");
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|u| u.strip_suffix("/metrics"))
        .unwrap()
        .to_string();

    // During the run: requests go out and finish, and nothing runs backwards.
    let mut seen_in_flight = false;
    let mut last_sent = 0.0;
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(60) {
        let (status, text) = http_get(&addr, "/metrics");
        assert_eq!(status, 200);
        let sent =
            prom_value(&text, "goodput_requests_sent_total{phase=\"measure\"}").unwrap_or(0.0);
        assert!(
            sent >= last_sent,
            "sent went backwards: {last_sent} then {sent}"
        );
        last_sent = sent;
        if prom_value(&text, "goodput_in_flight").unwrap_or(0.0) > 0.0 && sent > 0.0 {
            seen_in_flight = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(seen_in_flight, "never saw a request in flight");
    assert_eq!(http_get(&addr, "/nothing").0, 404);

    // At the end, while it lingers: the same counts as the results file.
    next_line("serving the final figures");
    let (_, text) = http_get(&addr, "/metrics");
    let doc = read_json(&out);
    let v = |s: &str| prom_value(&text, s).unwrap_or_else(|| panic!("no series {s}:\n{text}"));
    assert_eq!(
        v("goodput_requests_total{phase=\"measure\",outcome=\"completed\",kind=\"ok\"}"),
        doc["completed"].as_f64().unwrap()
    );
    assert_eq!(doc["failed"], 0);
    assert_eq!(
        v("goodput_requests_total{phase=\"warmup\",outcome=\"completed\",kind=\"ok\"}"),
        4.0
    );
    assert_eq!(v("goodput_requests_sent_total{phase=\"measure\"}"), 60.0);
    assert_eq!(v("goodput_requests_sent_total{phase=\"warmup\"}"), 4.0);
    assert_eq!(v("goodput_in_flight"), 0.0);
    assert_eq!(
        v("goodput_output_tokens_total{phase=\"measure\"}"),
        doc["total_output_tokens"].as_f64().unwrap()
    );
    assert_eq!(
        v("goodput_input_tokens_total{phase=\"measure\"}"),
        doc["total_input_tokens"].as_f64().unwrap()
    );
    for (metric, key) in [
        ("ttft", "mean_ttft_ms"),
        ("tpot", "mean_tpot_ms"),
        ("e2el", "mean_e2el_ms"),
    ] {
        let count = v(&format!(
            "goodput_{metric}_seconds_count{{phase=\"measure\"}}"
        ));
        let sum = v(&format!(
            "goodput_{metric}_seconds_sum{{phase=\"measure\"}}"
        ));
        assert_eq!(count, 60.0, "{metric}");
        let mean_ms = sum / count * 1e3;
        let want = doc[key].as_f64().unwrap();
        assert!(
            (mean_ms - want).abs() < 1e-6 * want.max(1.0),
            "{metric}: live {mean_ms} ms, results {want} ms"
        );
        assert_eq!(
            v(&format!(
                "goodput_{metric}_seconds_bucket{{le=\"+Inf\",phase=\"measure\"}}"
            )),
            count,
            "{metric}"
        );
    }
    assert_eq!(
        v("goodput_itl_seconds_count{phase=\"measure\"}"),
        60.0 * 63.0
    );
    assert_eq!(v("goodput_run"), 1.0);
    assert_eq!(v("goodput_target_concurrency"), 8.0);
    // A signal ends the lingering at once.
    let t = Instant::now();
    sigint(&child);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{status:?}");
    assert!(
        t.elapsed() < Duration::from_secs(10),
        "lingered {:?} after a signal",
        t.elapsed()
    );
}
