//! The reference goodput of the default simulator (Llama-3.1-8B on one
//! H100) in virtual time, with every rate the search evaluated.
//!
//! `cargo run --release -p goodput-sim --example reference_goodput -- [SEEDS] [REQUESTS WARMUP [GOODPUT_SEED]]`
//! (default 1 schedule, 400 measured after 40 warm-up requests). With
//! GOODPUT_SEED, the one schedule replayed is the one `goodput --seed
//! GOODPUT_SEED` sends. Workload: 1,024 prompt / 128 output tokens, unique
//! prompts; SLO `ttft:p99<=200ms` and `tpot:p99<=50ms`; 400 measured
//! requests after 40 warm-up requests per rate; rate searched in
//! [1, 100] req/s to 0.5 %. Deterministic: the same SEEDS print the same
//! numbers.

use std::time::Instant;

use goodput_sim::{reference_goodput, RefMetric, RefPlan, RefTerm, RefWorkload, SimConfig};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let arg = |i: usize| std::env::args().nth(i);
    let seeds: u64 = arg(1).map_or(Ok(1), |s| s.parse())?;
    let requests: usize = arg(2).map_or(Ok(400), |s| s.parse())?;
    let warmup: usize = arg(3).map_or(Ok(40), |s| s.parse())?;
    let seed = match arg(4) {
        Some(s) => goodput_common::schedule_seed(s.parse()?),
        None => 0,
    };
    let config = SimConfig::default();
    let workload = RefWorkload {
        input_tokens: 1024,
        output_tokens: 128,
    };
    let slo = [
        RefTerm::new(RefMetric::Ttft, 99.0, 0.200),
        RefTerm::new(RefMetric::Tpot, 99.0, 0.050),
    ];
    let plan = RefPlan {
        requests_per_point: requests,
        warmup_requests: warmup,
        seeds,
        seed,
        ..RefPlan::default()
    };
    let start = Instant::now();
    let answer = reference_goodput(&config, &workload, &slo, &plan, 1.0, 100.0, 0.005)?;
    let elapsed = start.elapsed();

    println!("rate req/s   p99 TTFT ms   p99 TPOT ms   errors   out tok/s   meets");
    for p in &answer.points {
        let ms = |v: Option<f64>| v.map_or("-".to_string(), |s| format!("{:.1}", s * 1e3));
        println!(
            "{:>10.3}   {:>11}   {:>11}   {:>5.1}%   {:>9.0}   {}",
            p.rate,
            ms(p.percentiles[0]),
            ms(p.percentiles[1]),
            p.error_rate * 100.0,
            p.output_throughput,
            p.meets
        );
    }
    let slo_text: Vec<String> = slo.iter().map(ToString::to_string).collect();
    println!(
        "goodput {:.3} req/s (first failing: {}) for {} with {} seed(s); {} points in {:.2?}",
        answer.goodput,
        answer
            .first_failing
            .map_or("none in range".to_string(), |f| format!("{f:.3} req/s")),
        slo_text.join(" "),
        seeds,
        answer.points.len(),
        elapsed
    );
    Ok(())
}
