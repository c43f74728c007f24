//! The goodput search against the real-time simulator lands where the same
//! search, run on the simulator's engine in virtual time with the same
//! arrival schedules, lands: what real time adds (HTTP, the engine thread's
//! step lateness, the client) moves the answer by little. How close the
//! search's answers lie to the sustained goodput over many samples is
//! `tests/search_virtual.rs`'s job.
//!
//! In a file of its own: cargo runs test binaries one after another, so this
//! timing-sensitive test never shares the two cores with another test's
//! simulator and client.

mod common;

use common::*;
use goodput_sim::SimConfig;

#[path = "../examples/virtual_search/mod.rs"]
mod virtual_search;
use virtual_search::{Plan, Virtual};

const TIME_SCALE: f64 = 0.5;
const SIM: &str = "llama-3.1-8b,h100-sxm,time-scale=0.5";
const INPUT: usize = 256;
const OUTPUT: usize = 32;

fn config() -> SimConfig {
    SimConfig {
        time_scale: TIME_SCALE,
        ..Default::default()
    }
}

/// The SLO binds near the engine's capacity, where the search's edge is
/// steep, at a rate the two cores sustain in real time. In virtual time, at
/// these lengths and 2x speed: capacity 282 req/s (1,500 requests at once),
/// the search (seed 0) answers 254 req/s (90 %) and the pooled reference
/// (5 x 400 requests) 249 (88 %); the TPOT term binds. Until the step-time
/// model of 2026-11-26 this test ran at 4x speed with `tpot:p90<=12ms`:
/// 266 and 255 of 300 req/s (89 %, 85 %). At 4x speed the new model's
/// capacity is 565 req/s, and in a debug build on a loaded machine the
/// real-time simulator and client stopped keeping up near 500 req/s (a
/// point offered 493 completed 196), far below the virtual-time answer.
///
/// The margin, 15 %: near the edge the p90 moves by about 1 % per percent
/// of rate, so the engine thread's step lateness (0.1–5 ms a step, see the
/// simulator's README) and ~1 ms of loopback and HTTP on a 60 ms TTFT move
/// the fitted zero by a few percent; and an exploring verdict that real
/// time flips sends the search to other measuring rates, whose samples then
/// differ (the search's spread over samples is about 5 %).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_goodput_search_agrees_with_the_same_search_in_virtual_time() {
    let (ttft_ms, tpot_ms) = (60.0, 16.0);
    let slo = format!("ttft:p90<={ttft_ms}ms,tpot:p90<={tpot_ms}ms");
    let plan = Plan {
        precision: 0.05,
        budget: Some(std::time::Duration::from_secs(40)),
        explore: std::time::Duration::from_secs(3),
        measure: std::time::Duration::from_secs(6),
    };
    let virtual_answer = Virtual {
        config: config(),
        input_tokens: INPUT,
        output_tokens: OUTPUT,
        cooldown: false,
        early_stop: true,
        slo: goodput_core::measure::Slo {
            terms: goodput_core::measure::parse_terms(std::slice::from_ref(&slo)).unwrap(),
            max_error_rate: 0.01,
            ..Default::default()
        },
    }
    .search(plan, 0)
    .0;
    assert!(virtual_answer.rate > 0.0, "{virtual_answer:?}");
    let out = tmp("search.json");
    let args = argv(&[
        "sweep",
        "--sim",
        SIM,
        "--search",
        "goodput",
        "--slo",
        &slo,
        "--precision",
        "5%",
        "--search-time",
        "40s",
        "--point-time",
        "3s",
        "--measure-time",
        "6s",
        "--probe-time",
        "2s",
        "--input-tokens",
        "256",
        "--output-tokens",
        "32",
        "--seed",
        "0",
        "--out",
        out.to_str().unwrap(),
    ]);
    let (code, stdout, stderr) = goodput_async(args).await;
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let v = read_json(&out);
    let found = v["goodput"]["rate"].as_f64().unwrap();
    let reference = virtual_answer.rate;
    let err = (found - reference).abs() / reference;
    eprintln!(
        "search {found:.2} req/s, in virtual time {reference:.2} req/s: {:+.1}%",
        (found / reference - 1.0) * 100.0
    );
    assert!(
        err <= 0.15,
        "search {found:.2} req/s vs {reference:.2} req/s in virtual time ({:.1}% off)\n{stdout}",
        err * 100.0
    );
    assert!(
        stdout.contains(&format!("goodput: {found:.2} req/s")),
        "{stdout}"
    );
    // A fit, or where the fit's zero lies beyond every rate the points ran
    // (a short budget's search), the highest passing rate: never a rate no
    // point ran.
    let method = &v["goodput"]["method"];
    assert!(method == "fit" || method == "bracket", "{}", v["goodput"]);
    if method == "bracket" {
        let top = v["goodput"]["bracket"][1].as_f64().unwrap_or(f64::INFINITY);
        assert!(found < top, "{}", v["goodput"]);
    }
    let load = v["load_time_s"].as_f64().unwrap();
    assert!(load < 40.0 + 15.0, "{load} s of load");
}
