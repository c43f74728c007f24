//! Speculative decoding as the server saw it (issue 40): against the
//! simulator with `--spec-tokens 3 --spec-acceptance 0.7`, the run reports
//! the acceptance rate and the mean acceptance length the engine counted,
//! its TPOT falls below the same plan's without speculation, its
//! inter-chunk latency rises above its inter-token latency, and the
//! stream's tokens per chunk estimate the same acceptance.

mod common;

use clap::Parser;
use common::*;
use serde_json::Value;

#[derive(Parser)]
struct Sim {
    #[command(flatten)]
    args: goodput_sim::SimArgs,
}

/// The simulator as `goodput sim FLAGS` would configure it.
fn sim(flags: &[&str]) -> goodput_sim::SimServer {
    let mut argv = vec!["sim"];
    argv.extend(flags);
    let config = Sim::parse_from(argv).args.to_config().unwrap();
    goodput_sim::SimServer::spawn(config, "127.0.0.1:0".parse().unwrap()).unwrap()
}

/// The same closed-loop plan against `server`: its results.
fn run(server: &goodput_sim::SimServer) -> Value {
    let out = tmp("spec.json");
    let url = format!("http://{}", server.local_addr());
    let (code, stdout, stderr) = goodput(&[
        "run",
        "--url",
        &url,
        "--concurrency",
        "8",
        "--num-prompts",
        "160",
        "--input-tokens",
        "256",
        "--output-tokens",
        "64",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    read_json(&out)
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn within(got: f64, want: f64, share: f64) -> bool {
    (got - want).abs() <= share * want
}

#[test]
fn the_acceptance_the_engine_counted_is_reported_and_speculation_shows_in_the_stream() {
    let flags = [
        "--spec-tokens",
        "3",
        "--spec-acceptance",
        "0.7",
        "--time-scale",
        "0.25",
    ];
    let spec = sim(&flags);
    let with = run(&spec);
    let c = spec.counters();
    spec.shutdown();
    let engine_rate = c.spec_accepted_tokens as f64 / c.spec_draft_tokens as f64;
    let engine_length = 1.0 + c.spec_accepted_tokens as f64 / c.spec_drafts as f64;
    validate_run_document(&with);
    let sd = &with["server_metrics"]["summary"]["spec_decode"];
    assert_eq!(sd["from"], "counters", "{sd}");
    let rate = f(&sd["acceptance_rate"]);
    let length = f(&sd["mean_acceptance_length"]);
    assert!(
        within(rate, engine_rate, 0.03),
        "{rate} against the engine's {engine_rate}"
    );
    assert!(
        within(length, engine_length, 0.03),
        "{length} against the engine's {engine_length}"
    );
    // Both as the draws promise: (A + A² + A³) / 3 and 1 + A + A² + A³.
    assert!(within(rate, 0.511, 0.05), "{rate}");
    assert!(within(length, 2.533, 0.05), "{length}");
    let by = sd["acceptance_by_position"].as_array().unwrap();
    assert_eq!(by.len(), 3);
    for (p, want) in [0.7, 0.49, 0.343].into_iter().enumerate() {
        assert!(within(f(&by[p]), want, 0.08), "position {p}: {}", by[p]);
    }
    // The stream's own estimate: tokens per decode chunk, and the share of
    // chunks of at least i + 2 tokens, against what the engine counted.
    let chunks = &with["tokens"]["decode_chunks"];
    let mean = f(&chunks["mean_tokens"]);
    assert!(
        within(mean, engine_length, 0.03),
        "{mean} tokens a chunk against the engine's {engine_length}"
    );
    let shares: Vec<f64> = chunks["shares"].as_array().unwrap().iter().map(f).collect();
    assert_eq!(shares.len(), 4, "{chunks}");
    for p in 0..3 {
        let at_least: f64 = shares[p + 1..].iter().sum();
        assert!(
            within(at_least, f(&by[p]), 0.08),
            "position {p}: {at_least} of chunks against {}",
            by[p]
        );
    }
    // Several tokens a chunk: ICL above ITL, and TPOT below the same plan
    // without speculation.
    let icl = f(&with["icl"]["mean_ms"]);
    let itl = f(&with["mean_itl_ms"]);
    assert!(icl > 1.5 * itl, "ICL {icl} ms, ITL {itl} ms");
    let plain = sim(&["--time-scale", "0.25"]);
    let without = run(&plain);
    plain.shutdown();
    assert!(without["server_metrics"]["summary"]["spec_decode"].is_null());
    assert!(without["tokens"]["decode_chunks"].is_null());
    let (tpot, tpot_plain) = (f(&with["mean_tpot_ms"]), f(&without["mean_tpot_ms"]));
    assert!(
        tpot < 0.8 * tpot_plain,
        "TPOT {tpot} ms with speculation, {tpot_plain} without"
    );
    // Every token still arrives: the counts agree with the server's.
    assert_eq!(with["total_output_tokens"], 160 * 64);
}
