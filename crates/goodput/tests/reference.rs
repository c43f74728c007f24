//! The goodput search against the simulator's own virtual-time reference.
//!
//! In a file of its own: cargo runs test binaries one after another, so this
//! timing-sensitive test never shares the two cores with another test's
//! simulator and client (run beside the past-capacity sweep, which pushes
//! 780 req/s, it once found 199 req/s against a 264 req/s reference).

mod common;

use common::*;
use goodput_sim::reference::{reference_goodput, RefMetric, RefPlan, RefTerm, RefWorkload};
use goodput_sim::SimConfig;

const TIME_SCALE: f64 = 0.25;
const SIM: &str = "llama-3.1-8b,h100-sxm,time-scale=0.25";
const INPUT: usize = 256;
const OUTPUT: usize = 32;

fn config() -> SimConfig {
    SimConfig {
        time_scale: TIME_SCALE,
        ..Default::default()
    }
}

/// The search against the real-time simulator lands where the simulator's
/// engine in virtual time says the goodput of the *same* arrival schedule
/// is (same seed, same warm-up, same 200 measured requests per point).
///
/// The margin: the search's precision (5 %) plus 10 % for what real time
/// adds and virtual time does not — the engine thread's step lateness
/// (0.1–5 ms per step unprivileged, see the simulator's README), loopback and
/// HTTP (~1 ms on TTFT), and early-stopped points, which settle on a prefix
/// of their requests. Near the answer the p90 moves by a few percent per
/// percent of rate, so a 1–2 ms shift in latency moves the crossing by a few
/// percent of rate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_goodput_search_agrees_with_the_virtual_time_reference() {
    let (ttft_ms, tpot_ms) = (60.0, 12.0);
    let reference = reference_goodput(
        &config(),
        &RefWorkload {
            input_tokens: INPUT,
            output_tokens: OUTPUT,
        },
        &[
            RefTerm::new(RefMetric::Ttft, 90.0, ttft_ms / 1e3),
            RefTerm::new(RefMetric::Tpot, 90.0, tpot_ms / 1e3),
        ],
        &RefPlan {
            requests_per_point: 200,
            warmup_requests: 20,
            seeds: 1,
            seed: goodput_common::schedule_seed(0),
            max_error_rate: 0.01,
        },
        1.0,
        2000.0,
        0.01,
    )
    .unwrap();
    assert!(
        reference.goodput > 0.0 && reference.first_failing.is_some(),
        "{reference:?}"
    );
    let out = tmp("search.json");
    let slo = format!("ttft:p90<={ttft_ms}ms,tpot:p90<={tpot_ms}ms");
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
        "--num-prompts",
        "200",
        "--warmup",
        "20",
        "--point-time",
        "60s",
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
    let err = (found - reference.goodput).abs() / reference.goodput;
    eprintln!(
        "search {found:.2} req/s, reference {:.2} req/s: {:+.1}%",
        reference.goodput,
        (found / reference.goodput - 1.0) * 100.0
    );
    assert!(
        err <= 0.15,
        "search {found:.2} req/s vs reference {:.2} req/s ({:.1}% off)\n{stdout}",
        reference.goodput,
        err * 100.0
    );
    assert!(
        stdout.contains(&format!("goodput: {found:.2} req/s")),
        "{stdout}"
    );
}
