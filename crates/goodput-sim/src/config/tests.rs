//! Configuration tests: presets, memory fit, flags, the TOML file, and the
//! calibration of the default preset against a public vLLM measurement.

use super::*;
use crate::virtual_time::{simulate, VirtualRequest};
use clap::Parser;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    sim: SimArgs,
}

fn args(flags: &[&str]) -> SimArgs {
    let mut argv = vec!["sim"];
    argv.extend_from_slice(flags);
    Cli::parse_from(argv).sim
}

#[test]
fn default_is_llama_8b_on_one_h100_with_a_large_cache() {
    let c = SimConfig::default();
    assert_eq!(c.model_name(), "meta-llama/Llama-3.1-8B-Instruct");
    assert_eq!(c.hardware.name, "h100-sxm");
    let tokens = c.num_kv_blocks().unwrap() * BLOCK_SIZE;
    // vLLM reports roughly 400-470k KV tokens for this setup at 0.9 utilization.
    assert!((380_000..480_000).contains(&tokens), "{tokens}");
    assert_eq!(c.effective_max_model_len().unwrap(), 131_072);
}

#[test]
fn a_model_that_does_not_fit_is_rejected_with_the_way_out() {
    let c = args(&["--model-profile", "llama-3.1-70b"]).to_config();
    let err = c.unwrap_err().to_string();
    assert!(
        err.contains("does not fit") && err.contains("--tensor-parallel"),
        "{err}"
    );
    for tp in ["4", "8"] {
        let c = args(&["--model-profile", "llama-3.1-70b", "--tensor-parallel", tp])
            .to_config()
            .unwrap();
        assert!(c.num_kv_blocks().unwrap() > 10_000);
    }
    let err = args(&[
        "--model-profile",
        "llama-3.1-8b",
        "--hardware",
        "l4",
        "--gpu-memory-utilization",
        "0.7",
    ])
    .to_config()
    .unwrap_err()
    .to_string();
    assert!(err.contains("l4"), "{err}");
}

#[test]
fn flags_override_the_file_which_overrides_defaults() {
    let dir = std::env::temp_dir().join(format!("goodput-sim-cfg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("sim.toml");
    std::fs::write(
        &path,
        r#"
max_num_seqs = 32
seed = 9
output_len_dist = "uniform:10,20"
[hardware]
name = "my-gpu"
memory_gib = 96.0
peak_tflops = 500.0
bandwidth_gbps = 2000.0
interconnect_gbps = 100.0
allreduce_latency_us = 10.0
mfu = 0.5
mbu = 0.7
step_overhead_ms = 0.5
[faults]
http_429 = "every:5"
retry_after_s = 3
"#,
    )
    .unwrap();
    let p = path.to_str().unwrap();
    let c = args(&["--config", p, "--seed", "4", "--fault-500", "0.1"])
        .to_config()
        .unwrap();
    assert_eq!(c.max_num_seqs, 32);
    assert_eq!(c.seed, 4);
    assert_eq!(c.hardware.name, "my-gpu");
    assert_eq!(c.output_len, OutputLenDist::Uniform(10, 20));
    assert_eq!(c.faults.http_429, FaultSpec::Every(5));
    assert_eq!(c.faults.retry_after_s, 3);
    assert_eq!(c.faults.http_500, FaultSpec::Rate(0.1));

    std::fs::write(&path, "max_num_seqs = 32\nbogus = 1\n").unwrap();
    let err = args(&["--config", p]).to_config().unwrap_err().to_string();
    assert!(err.contains("sim.toml") && err.contains("bogus"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_flags_name_what_is_valid() {
    let err = args(&["--hardware", "tpu-v5"])
        .to_config()
        .unwrap_err()
        .to_string();
    assert!(err.contains("h100-sxm"), "{err}");
    let err = args(&["--tensor-parallel", "3"])
        .to_config()
        .unwrap_err()
        .to_string();
    assert!(err.contains("tensor_parallel"), "{err}");
    assert!("lognormal:200".parse::<OutputLenDist>().is_err());
    assert_eq!(
        "300".parse::<OutputLenDist>(),
        Ok(OutputLenDist::Fixed(300))
    );
    assert_eq!(args(&["--port", "0"]).listen_addr().unwrap().port(), 0);
    assert_eq!(
        SimArgs::default().listen_addr().unwrap(),
        args(&[]).listen_addr().unwrap()
    );
    assert_eq!(
        SimArgs::default().to_config().unwrap(),
        SimConfig::default()
    );
    assert!(args(&["--host", "example.com"]).listen_addr().is_err());
}

#[test]
fn output_lengths_follow_the_distribution_and_the_seed() {
    let d = OutputLenDist::LogNormal(200.0, 0.8);
    let mut v: Vec<usize> = (0..2001).map(|i| d.sample(1, i)).collect();
    v.sort_unstable();
    let median = v[1000] as f64;
    assert!((170.0..230.0).contains(&median), "{median}");
    assert_eq!(d.sample(1, 5), d.sample(1, 5));
    assert!((0..50).any(|i| d.sample(1, i) != d.sample(2, i)));
}

/// vLLM's own nightly benchmark on one H100 (latency_llama8B_tp1: Llama-3.1-8B,
/// batch 8, 32 prompt tokens, 128 output tokens): 997.5 ms mean end to end.
/// See the README for the source.
const VLLM_NIGHTLY_LATENCY_H100_S: f64 = 0.9975;

#[test]
fn calibrated_against_vllm_on_h100() {
    let c = SimConfig::default();
    let batch: Vec<_> = (0..8)
        .map(|i| VirtualRequest::unique(0.0, 32, 128, i))
        .collect();
    let r = simulate(&c, &batch).unwrap();
    let err = (r.end_s - VLLM_NIGHTLY_LATENCY_H100_S).abs() / VLLM_NIGHTLY_LATENCY_H100_S;
    assert!(
        err < 0.25,
        "batch-8 latency {:.1} ms vs vLLM 997.5 ms",
        r.end_s * 1e3
    );

    // The same benchmark on one H200: 833.4 ms mean.
    let h200 = SimConfig {
        hardware: hardware_by_name("h200").unwrap(),
        ..SimConfig::default()
    };
    let r200 = simulate(&h200, &batch).unwrap();
    let err = (r200.end_s - 0.8334).abs() / 0.8334;
    assert!(
        err < 0.25,
        "H200 batch-8 latency {:.1} ms vs vLLM 833.4 ms",
        r200.end_s * 1e3
    );

    // The figures the README quotes: TPOT at batch 1 and saturated output
    // throughput for 1000 in / 1000 out.
    let one = simulate(&c, &[VirtualRequest::unique(0.0, 1000, 1000, 0)]).unwrap();
    let tpot = one.requests[0].tpot_s().unwrap();
    assert!((0.006..0.0085).contains(&tpot), "TPOT at batch 1: {tpot}");
    let many: Vec<_> = (0..1500)
        .map(|i| VirtualRequest::unique(0.0, 1000, 1000, i))
        .collect();
    let sat = simulate(&c, &many).unwrap();
    let tput = sat.output_throughput(sat.end_s * 0.2, sat.end_s * 0.8);
    assert!(
        (5_000.0..15_000.0).contains(&tput),
        "saturated output throughput {tput}"
    );
    eprintln!(
        "calibration: batch-8 latency {:.1} ms (H200 {:.1} ms), TPOT@1 {:.2} ms, 1000/1000 saturated {:.0} tok/s",
        r.end_s * 1e3,
        r200.end_s * 1e3,
        tpot * 1e3,
        tput
    );
}

#[test]
#[ignore]
fn zz_probe_calibration() {
    let probe = |c: &SimConfig, label: &str| {
        let batch: Vec<_> = (0..8)
            .map(|i| VirtualRequest::unique(0.0, 32, 128, i))
            .collect();
        let b8 = simulate(c, &batch).unwrap().end_s;
        let one = simulate(c, &[VirtualRequest::unique(0.0, 1000, 1000, 0)]).unwrap();
        let tpot = one.requests[0].tpot_s().unwrap();
        let many: Vec<_> = (0..1500)
            .map(|i| VirtualRequest::unique(0.0, 1000, 1000, i))
            .collect();
        let sat = simulate(c, &many).unwrap();
        let t1k = sat.output_throughput(sat.end_s * 0.2, sat.end_s * 0.8);
        let t1k_all = 1500.0 * 1000.0 / sat.end_s;
        let sg: Vec<_> = (0..5000)
            .map(|i| VirtualRequest::unique(0.0, 230, 203, i))
            .collect();
        let c2 = SimConfig {
            max_model_len: Some(2048),
            ..c.clone()
        };
        let s = simulate(&c2, &sg).unwrap();
        let tsg = 5000.0 * 203.0 / s.end_s;
        let sg200: Vec<_> = (0..200)
            .map(|i| VirtualRequest::unique(0.0, 230, 203, i))
            .collect();
        let s2 = simulate(c, &sg200).unwrap();
        eprintln!(
            "{label}: b8 {:.1} ms | TPOT1 {:.3} ms | 1k/1k mid {:.0} all {:.0} tok/s (end {:.1}s, preempt {:?}) | sharegpt-ish 5000 {:.0} tok/s | 200 {:.2} req/s",
            b8 * 1e3, tpot * 1e3, t1k, t1k_all, sat.end_s, sat.counters, tsg, 200.0 / s2.end_s
        );
    };
    probe(&SimConfig::default(), "h100 default");
    let h200 = SimConfig {
        hardware: hardware_by_name("h200").unwrap(),
        ..SimConfig::default()
    };
    probe(&h200, "h200 default");
}
