//! Prediction against a black box: a simulator started with a configuration
//! this test keeps to itself (its own accelerator figures, step overhead,
//! per-sequence cost, efficiencies, batch limit and KV capacity, none of
//! them a preset's) stands in for an unknown server. `goodput calibrate`
//! sees it only over HTTP; `goodput predict` then forecasts its sustained
//! goodput for three workload/SLO pairs unlike the calibration's shapes,
//! and each forecast must lie within 15 % of that server's true sustained
//! goodput.
//!
//! The truth is the sustained goodput of the secret engine itself: the same
//! forecaster run on the secret configuration (long pooled Poisson
//! schedules in virtual time, which is what `goodput sweep --search
//! goodput` converges to: `tests/reference.rs` and `tests/search_virtual.rs`
//! hold the search to it). The real-time searches against the same secret
//! server are in BENCHMARKS.md ("Predicted against measured").

mod common;

use common::*;
use goodput_sim::forecast::{
    forecast_goodput, Deployment, ForecastPlan, ForecastWorkload, Sessions,
};
use goodput_sim::{RefMetric, RefTerm, SimConfig, SimServer};

/// The unknown server: nothing here is a preset's figure.
const SECRET: &str = r#"
max_num_seqs = 48
num_gpu_blocks_override = 9000
[hardware]
name = "secret-gpu"
memory_gib = 96.0
peak_tflops = 700.0
bandwidth_gbps = 2400.0
interconnect_gbps = 100.0
allreduce_latency_us = 10.0
gemm_efficiency = 0.7
gemm_half_tokens = 120.0
attention_efficiency = 0.5
mbu = 0.7
step_overhead_ms = 3.0
per_seq_overhead_us = 20.0
"#;

fn secret() -> SimConfig {
    let path = tmp("secret.toml");
    std::fs::write(&path, SECRET).unwrap();
    let mut c = SimConfig::default();
    c.apply_file(&path).unwrap();
    c.validate().unwrap();
    c
}

/// A question: the workload's flags for `predict`, the same workload and
/// SLO for the forecaster.
struct Case {
    name: &'static str,
    flags: Vec<&'static str>,
    workload: ForecastWorkload,
    slo: Vec<RefTerm>,
}

fn cases() -> Vec<Case> {
    let ms = |x: f64| x / 1e3;
    let sessions = ForecastWorkload {
        sessions: Some(Sessions {
            turns: "4".parse().unwrap(),
            think_time: "1s".parse().unwrap(),
        }),
        ..ForecastWorkload::fixed(256, 128)
    };
    vec![
        Case {
            name: "256 in / 512 out, p99 TTFT <= 150 ms",
            flags: vec![
                "--input-tokens",
                "256",
                "--output-tokens",
                "512",
                "--slo",
                "ttft:p99<=150ms",
            ],
            workload: ForecastWorkload::fixed(256, 512),
            slo: vec![RefTerm::new(RefMetric::Ttft, 99.0, ms(150.0))],
        },
        Case {
            name: "2,048 in / 128 out, p99 TTFT <= 500 ms",
            flags: vec![
                "--input-tokens",
                "2048",
                "--output-tokens",
                "128",
                "--slo",
                "ttft:p99<=500ms",
            ],
            workload: ForecastWorkload::fixed(2048, 128),
            slo: vec![RefTerm::new(RefMetric::Ttft, 99.0, ms(500.0))],
        },
        Case {
            name:
                "4-turn sessions of 256 / 128, think 1 s, p99 TTFT <= 300 ms and p99 TPOT <= 40 ms",
            flags: vec![
                "--input-tokens",
                "256",
                "--output-tokens",
                "128",
                "--turns",
                "4",
                "--think-time",
                "1s",
                "--slo",
                "ttft:p99<=300ms,tpot:p99<=40ms",
            ],
            workload: sessions,
            slo: vec![
                RefTerm::new(RefMetric::Ttft, 99.0, ms(300.0)),
                RefTerm::new(RefMetric::Tpot, 99.0, ms(40.0)),
            ],
        },
    ]
}

/// The secret engine's own sustained goodput for a case.
fn truth(config: &SimConfig, case: &Case) -> f64 {
    let plan = ForecastPlan {
        requests_per_point: 3000,
        warmup_requests: 300,
        seeds: 6,
        seed: 1000,
        precision: 0.01,
        threads: 2,
        ..ForecastPlan::default()
    };
    forecast_goodput(
        config,
        &Deployment::default(),
        &case.workload,
        &case.slo,
        &plan,
        0.01,
        500.0,
    )
    .unwrap()
    .goodput
}

#[test]
fn calibrated_over_http_the_forecast_is_within_15_percent_of_the_truth() {
    let config = secret();
    let server = SimServer::spawn(config.clone(), "127.0.0.1:0".parse().unwrap()).unwrap();
    let url = format!("http://{}", server.local_addr());
    let profile = tmp("calibrated.toml");
    let (code, out, err) = goodput(&[
        "calibrate",
        "--url",
        &url,
        "--out",
        profile.to_str().unwrap(),
        "--quiet",
    ]);
    assert_eq!(code, 0, "calibrate failed:\n{out}\n{err}");
    server.shutdown();
    let text = std::fs::read_to_string(&profile).unwrap();
    // The batch limit and the cache were found, not assumed.
    assert!(text.contains("max_num_seqs = 48"), "{text}");
    assert!(text.contains("num_gpu_blocks_override = 9000"), "{text}");
    // A GPU engine's steps do not slow as requests wait: the held queue
    // reads no cost (a one-thread llama-server's read 6–15 µs a token).
    assert!(!text.contains("held_token_ns ="), "{text}");

    let mut report = String::new();
    let mut worst: f64 = 0.0;
    for case in cases() {
        let forecast = tmp("forecast.json");
        let mut args = vec![
            "predict",
            "--profile",
            profile.to_str().unwrap(),
            "--draws",
            "4",
            "--out",
            forecast.to_str().unwrap(),
        ];
        args.extend(case.flags.iter().copied());
        let (code, out, err) = goodput(&args);
        assert_eq!(code, 0, "predict failed for {}:\n{out}\n{err}", case.name);
        let v = read_json(&forecast);
        let predicted = v["goodput"].as_f64().unwrap();
        let truth = truth(&config, &case);
        let error = predicted / truth - 1.0;
        worst = worst.max(error.abs());
        // The band carries the forecast's own sampling and the model's
        // error: never zero wide, even where the fit is exact.
        let (lo, hi) = (
            v["interval"]["low"].as_f64().unwrap(),
            v["interval"]["high"].as_f64().unwrap(),
        );
        assert!(lo < predicted || predicted < hi, "{}: {v}", case.name);
        report += &format!(
            "{}: predicted {predicted:.3} (interval {lo:.3}–{hi:.3}{}), truth {truth:.3} ({:+.1} %)\n",
            case.name,
            if (lo..=hi).contains(&truth) { ", covers" } else { ", misses" },
            error * 100.0
        );
    }
    eprintln!("{report}");
    assert!(
        worst <= 0.15,
        "a forecast is off by more than 15 %:\n{report}"
    );
}
