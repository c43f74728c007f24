//! `goodput tune`: the simulator's server command over a grid of
//! `--max-num-seqs`, each configuration swept, ranked, and no server left
//! behind — when a configuration fails at once, and when interrupted.

mod common;

use std::time::{Duration, Instant};

use common::*;

/// The servers whose command line holds `token` that are still running.
fn left_behind(token: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let cmd = std::fs::read(e.path().join("cmdline")).ok()?;
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            let state = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
            let zombie = state
                .rsplit_once(')')
                .is_some_and(|x| x.1.trim_start().starts_with('Z'));
            (cmd.contains(token) && !zombie).then_some(cmd)
        })
        .collect()
}

/// The server command: the simulator four times faster, named by `token`.
fn serve(token: &str, seqs: &str) -> String {
    format!(
        "{} sim --port {{port}} --time-scale 0.25 --served-model-name {token} --max-num-seqs {seqs}",
        env!("CARGO_BIN_EXE_goodput")
    )
}

fn tune_json(dir: &std::path::Path) -> serde_json::Value {
    read_json(&dir.join("tune.json"))
}

#[test]
fn three_configurations_are_measured_ranked_and_stopped() {
    let dir = tmp("tune-three");
    let token = format!("tune-three-{}", std::process::id());
    let (code, stdout, err) = goodput(&[
        "tune",
        "--dir",
        dir.to_str().unwrap(),
        "--serve",
        &serve(&token, "{2,8,32}"),
        "--grace",
        "5s",
        "--frontier",
        "--slo",
        "ttft:p99<=2s",
        "--point-time",
        "1s",
        "--input-tokens",
        "128",
        "--output-tokens",
        "16",
        "--quiet",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(stdout.contains("ranked by"), "{stdout}");
    let t = tune_json(&dir);
    let configs = t["configurations"].as_array().unwrap();
    assert_eq!(configs.len(), 3);
    let best: Vec<f64> = configs
        .iter()
        .map(|c| {
            assert_eq!(c["status"], "measured", "{c}");
            let sweep = read_json(std::path::Path::new(c["sweep_file"].as_str().unwrap()));
            assert!(sweep["frontier"]["points"].as_array().unwrap().len() >= 7);
            c["best_output_throughput"].as_f64().unwrap()
        })
        .collect();
    // Ranked: more sequences a batch, more throughput, first.
    assert!(best.windows(2).all(|w| w[0] >= w[1]), "{best:?}");
    assert_eq!(configs[0]["name"], "max-num-seqs=32");
    assert_eq!(configs[2]["name"], "max-num-seqs=2");
    assert!(dir.join("tune.html").exists());
    assert!(left_behind(&token).is_empty(), "{:?}", left_behind(&token));
}

#[test]
fn a_configuration_that_exits_at_once_is_failed_and_the_others_run() {
    let dir = tmp("tune-failed");
    let token = format!("tune-failed-{}", std::process::id());
    let (code, stdout, err) = goodput(&[
        "tune",
        "--dir",
        dir.to_str().unwrap(),
        "--serve",
        &serve(&token, "{none,4}"),
        "--concurrencies",
        "1,4",
        "--point-time",
        "1s",
        "--input-tokens",
        "64",
        "--output-tokens",
        "8",
        "--quiet",
    ]);
    assert_eq!(code, 0, "{err}");
    let t = tune_json(&dir);
    let configs = t["configurations"].as_array().unwrap();
    assert_eq!(configs[0]["name"], "max-num-seqs=4");
    assert_eq!(configs[0]["status"], "measured");
    assert_eq!(configs[1]["name"], "max-num-seqs=none");
    assert_eq!(configs[1]["status"], "failed");
    let why = configs[1]["error"].as_str().unwrap();
    assert!(why.contains("exited before it answered"), "{why}");
    // The log's tail says what the server said.
    assert!(why.contains("none"), "{why}");
    assert!(stdout.contains("failed"), "{stdout}");
    assert!(left_behind(&token).is_empty());

    // --resume skips what was measured and tries the failure again.
    let (code, _, err) = goodput(&[
        "tune",
        "--dir",
        dir.to_str().unwrap(),
        "--resume",
        "--serve",
        &serve(&token, "{none,4}"),
        "--concurrencies",
        "1",
        "--point-time",
        "1s",
        "--quiet",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("measured before (--resume), skipped"), "{err}");
}

#[test]
fn an_interrupted_tune_leaves_no_server_behind() {
    let dir = tmp("tune-interrupted");
    let token = format!("tune-interrupted-{}", std::process::id());
    let child = spawn_goodput(&[
        "tune",
        "--dir",
        dir.to_str().unwrap(),
        "--serve",
        &serve(&token, "{4,8}"),
        "--concurrencies",
        "2",
        "--point-time",
        "60s",
        "--quiet",
    ]);
    // Wait until the first configuration's server is up and sweeping.
    let start = Instant::now();
    while left_behind(&token).len() < 2 && start.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(!left_behind(&token).is_empty(), "the server never started");
    std::thread::sleep(Duration::from_secs(2));
    sigint(&child);
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(left_behind(&token).is_empty(), "{:?}", left_behind(&token));
    let t = tune_json(&dir);
    assert_eq!(t["interrupted"], true);
}
