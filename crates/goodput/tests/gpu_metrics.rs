//! `--gpu-metrics`: a DCGM exporter scraped over the run's measured window
//! (issue 40). Against a scripted exporter whose GPUs draw a known power,
//! the run's energy is the truth over its window (from the energy counters,
//! or, without them, the power integrated over the scrapes) and tokens per
//! joule are its output tokens over that energy; with no flag, a run of the
//! built-in simulator reads its exporter.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Instant;

use common::*;
use serde_json::Value;

/// What a GPU draws `t` seconds after the exporter started (W), and the
/// energy it has drawn by then (J).
type Draw = (fn(f64) -> f64, fn(f64) -> f64);

/// A DCGM exporter of two GPUs on one node, drawing `draws` (W), with
/// their energy counters (mJ, exact integrals) when `counters`. Returns
/// its URL and the times (s after its start) of every scrape it answered.
async fn exporter(draws: [Draw; 2], counters: bool) -> (String, Arc<Mutex<Vec<f64>>>) {
    let started = Instant::now();
    let times = Arc::new(Mutex::new(Vec::new()));
    let log = times.clone();
    let url = metrics_endpoint(move |_| {
        let t = started.elapsed().as_secs_f64();
        log.lock().unwrap().push(t);
        let mut body = String::new();
        for (gpu, (power, energy_j)) in draws.iter().enumerate() {
            let labels = format!(
                "gpu=\"{gpu}\",UUID=\"GPU-{gpu}\",device=\"nvidia{gpu}\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"node-a\""
            );
            body.push_str(&format!("DCGM_FI_DEV_POWER_USAGE{{{labels}}} {}\n", power(t)));
            if counters {
                body.push_str(&format!(
                    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{{labels}}} {}\n",
                    (1e3 * energy_j(t)).floor()
                ));
            }
            body.push_str(&format!("DCGM_FI_DEV_GPU_UTIL{{{labels}}} 80\n"));
        }
        body
    })
    .await;
    (url, times)
}

/// A 3-second run of a scripted server (60 requests at 20/s, no warm-up),
/// its GPUs read from `gpu_url` every `interval`.
async fn run(gpu_url: &str, interval: &str) -> Value {
    let server = start(Script::quick()).await;
    let out = tmp("gpu.json");
    let (code, stdout, stderr) = goodput_async(argv(&[
        "run",
        "--url",
        &server.url(),
        "--model",
        "m",
        "--gpu-metrics",
        gpu_url,
        "--server-metrics-interval",
        interval,
        "--warmup",
        "0",
        "--request-rate",
        "20",
        "--num-prompts",
        "60",
        "--energy-price",
        "0.3",
        "--out",
        out.to_str().unwrap(),
    ]))
    .await;
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stdout.contains("GPUs (DCGM)"), "{stdout}");
    read_json(&out)
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn energy_is_the_counters_over_the_measured_window() {
    // 300 W and 450 W, steady.
    let (url, times) = exporter(
        [(|_| 300.0, |t| 300.0 * t), (|_| 450.0, |t| 450.0 * t)],
        true,
    )
    .await;
    let doc = run(&url, "1s").await;
    let s = &doc["gpu_metrics"]["summary"];
    assert_eq!(s["gpus"], 2, "{s}");
    assert_eq!(s["energy_from"], "counter");
    let energy = f(&s["energy_j"]);
    // The truth over the window the scrapes bound (the exporter's clock),
    // and over the run's own measured duration.
    let t = times.lock().unwrap().clone();
    let window = t[t.len() - 1] - t[1];
    let truth = 750.0 * window;
    eprintln!("counters: {energy} J over a {window} s window, truth {truth} J");
    assert!(
        (energy - truth).abs() <= 0.01 * truth,
        "{energy} J against {truth}"
    );
    // The scrapes' window brackets the run's measured duration: its
    // baseline is read as the first request goes out, its last scrape after
    // the last response, so the two differ by the scrapes' own latency
    // (tens of ms on a busy machine: not a figure to hold to 1 %).
    let duration = f(&doc["duration"]);
    let window_s = f(&s["window_s"]);
    assert!(duration > 2.5, "{duration}");
    assert!(
        window_s >= duration - 0.05 && window_s <= duration + 0.5,
        "the scrapes' {window_s} s window against the run's {duration} s"
    );
    let by_window = 750.0 * window_s;
    assert!(
        (energy - by_window).abs() <= 0.01 * by_window,
        "{energy} J against {by_window} over the scrapes' {window_s} s"
    );
    let tokens = f(&doc["total_output_tokens"]);
    let per_joule = f(&s["output_tokens_per_joule"]);
    assert!(
        (per_joule - tokens / energy).abs() < 1e-9 * per_joule,
        "{per_joule}"
    );
    assert!((f(&s["mean_power_w"]) - 750.0).abs() < 7.5, "{s}");
    assert_eq!(s["per_gpu"].as_array().unwrap().len(), 2);
    // Per request and per token, and what it cost at 0.3 a kWh.
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs();
    let completed = f(&doc["completed"]);
    assert!(
        close(f(&s["joules_per_request"]), energy / completed),
        "{s}"
    );
    assert!(
        close(f(&s["joules_per_output_token"]), energy / tokens),
        "{s}"
    );
    let cost = &doc["cost"];
    assert_eq!(cost["energy_from"], "measured", "{cost}");
    let kwh_cost = energy / 3.6e6 * 0.3;
    assert!(close(f(&cost["energy_cost"]), kwh_cost), "{cost}");
    assert!(
        close(
            f(&cost["energy_cost_per_million_output_tokens"]),
            kwh_cost / (tokens / 1e6)
        ),
        "{cost}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_counters_the_power_is_integrated_over_the_scrapes() {
    // A power that swings 200 W either way every 1.5 s, on both GPUs.
    fn swing(t: f64) -> f64 {
        350.0 + 200.0 * (std::f64::consts::TAU * t / 1.5).sin()
    }
    fn swing_j(t: f64) -> f64 {
        350.0 * t
            + 200.0 * 1.5 / std::f64::consts::TAU * (1.0 - (std::f64::consts::TAU * t / 1.5).cos())
    }
    let (url, times) = exporter([(swing, swing_j), (swing, swing_j)], false).await;
    let doc = run(&url, "100ms").await;
    let s = &doc["gpu_metrics"]["summary"];
    assert_eq!(s["energy_from"], "power", "{s}");
    let energy = f(&s["energy_j"]);
    let t = times.lock().unwrap().clone();
    let truth = 2.0 * (swing_j(t[t.len() - 1]) - swing_j(t[1]));
    eprintln!(
        "integrated: {energy} J over {} scrapes, truth {truth} J",
        t.len()
    );
    assert!(
        (energy - truth).abs() <= 0.02 * truth,
        "{energy} J integrated against {truth} over {} scrapes",
        t.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exporter_that_does_not_answer_or_has_no_gpus_is_an_error() {
    let server = start(Script::quick()).await;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dead = format!("http://127.0.0.1:{port}/metrics");
    let not_dcgm = format!("{}/v1/models", server.url());
    for (url, said) in [
        (dead.as_str(), "GPU metrics (--gpu-metrics, --nvml):"),
        (not_dcgm.as_str(), "holds no"),
    ] {
        let (code, _, stderr) = goodput_async(argv(&[
            "run",
            "--url",
            &server.url(),
            "--model",
            "m",
            "--gpu-metrics",
            url,
            "--num-prompts",
            "2",
        ]))
        .await;
        assert_eq!(code, 2, "{url}: {stderr}");
        assert!(stderr.contains(said), "{url}: {stderr}");
    }
}

/// With no flag and no server, the built-in simulator's own exporter: the
/// energy is measured (from its counters), not a typed constant, and
/// `--power-watts` gives way to it.
#[test]
fn the_simulator_reports_measured_energy() {
    let out = tmp("sim-gpu.json");
    let csv = tmp("sim-gpu.csv");
    let (code, stdout, stderr) = goodput(&[
        "run",
        "--num-prompts",
        "40",
        "--power-watts",
        "700",
        "--out",
        out.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("GPUs (DCGM)"), "{stdout}");
    assert!(stdout.contains("from the energy counters"), "{stdout}");
    assert!(
        stdout.contains("Output tokens per joule:")
            && stdout.contains("(the GPUs' measured energy)"),
        "{stdout}"
    );
    let doc = read_json(&out);
    validate_run_document(&doc);
    let s = &doc["gpu_metrics"]["summary"];
    let energy = f(&s["energy_j"]);
    let tokens = f(&doc["total_output_tokens"]);
    assert!(energy > 0.0, "{s}");
    assert!((f(&doc["cost"]["output_tokens_per_joule"]) - tokens / energy).abs() < 1e-9);
    // The model's power lies between idle and the board's limit.
    let mean = f(&s["mean_power_w"]);
    assert!((75.0..700.0).contains(&mean), "{mean}");
    // The CSV's columns, and a figure compare judges and gates.
    let table = std::fs::read_to_string(&csv).unwrap();
    let header = table.lines().next().unwrap();
    assert!(header.contains("gpu_energy_j") && header.contains("gpu_output_tokens_per_joule"));
    let (code, stdout, stderr) = goodput(&[
        "compare",
        out.to_str().unwrap(),
        out.to_str().unwrap(),
        "--fail-on",
        "output_tokens_per_joule<-5%",
    ]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stdout.contains("output_tokens_per_joule"), "{stdout}");
}

/// `--nvml` loads the driver's NVML at run time: on a machine without it
/// the run stops before any request with a message saying what it needs;
/// with it, the local GPUs' energy is read like an exporter's.
#[test]
fn nvml_is_loaded_at_run_time_or_said_missing() {
    let out = tmp("nvml.json");
    let (code, stdout, stderr) = goodput(&[
        "run",
        "--nvml",
        "--num-prompts",
        "8",
        "--out",
        out.to_str().unwrap(),
    ]);
    if code == 2 {
        assert!(
            stderr.contains("--nvml needs the NVIDIA driver")
                || stderr.contains("NVML sees no GPU"),
            "{stderr}"
        );
        return;
    }
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let doc = read_json(&out);
    assert!(
        doc["gpu_metrics"]["urls"][0] == "nvml",
        "{}",
        doc["gpu_metrics"]
    );
    assert!(f(&doc["gpu_metrics"]["summary"]["gpus"]) >= 1.0);
}
