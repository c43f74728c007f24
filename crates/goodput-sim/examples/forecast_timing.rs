//! How long a forecast takes: one goodput search over [0.5, 500] req/s,
//! then 16 searches from its answer (an uncertainty band's parameter draws,
//! here 16 schedule seeds; [`forecast_goodput_near`] with steps of 1.25)
//! on two threads. Build with `--release`:
//!
//! ```text
//! cargo run --release -p goodput-sim --example forecast_timing -- [MEASURED] [SEEDS] [WARMUP] [THREADS] [DRAW_SEEDS]
//! ```
//!
//! Defaults: 2,000 measured requests per schedule, 5 schedules (the draws:
//! DRAW_SEEDS, default 2), 200 warm-up requests, 1 thread for the central
//! search; the default configuration, 1,024 in /
//! 128 out, `ttft:p99<=200ms,tpot:p99<=50ms`, precision 2 %.

use std::time::Instant;

use goodput_sim::{
    forecast_goodput, forecast_goodput_near, Deployment, ForecastPlan, ForecastWorkload, RefMetric,
    RefTerm, SimConfig,
};

fn main() {
    let arg = |i: usize, default: usize| {
        std::env::args()
            .nth(i)
            .and_then(|a| a.parse().ok())
            .unwrap_or(default)
    };
    let plan = ForecastPlan {
        requests_per_point: arg(1, 2000),
        seeds: arg(2, 5) as u64,
        warmup_requests: arg(3, 200),
        threads: arg(4, 1),
        precision: 0.02,
        ..ForecastPlan::default()
    };
    let config = SimConfig::default();
    let workload = ForecastWorkload::fixed(1024, 128);
    let slo = [
        RefTerm::new(RefMetric::Ttft, 99.0, 0.200),
        RefTerm::new(RefMetric::Tpot, 99.0, 0.050),
    ];
    let search = |plan: &ForecastPlan| {
        forecast_goodput(
            &config,
            &Deployment::default(),
            &workload,
            &slo,
            plan,
            0.5,
            500.0,
        )
    };
    let start = Instant::now();
    let central = match search(&plan) {
        Ok(a) => {
            println!(
                "one search: goodput {:.3} req/s, first failing {:?}, {} points, {:.2?}",
                a.goodput,
                a.first_failing,
                a.curve.len(),
                start.elapsed()
            );
            a.goodput
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    let draw_seeds = arg(5, 2) as u64;
    let start = Instant::now();
    let draws: Vec<u64> = (0..16).collect();
    let answers: Vec<f64> = std::thread::scope(|s| {
        let handles: Vec<_> = draws
            .chunks(8)
            .map(|part| {
                s.spawn(|| {
                    part.iter()
                        .map(|&d| {
                            let p = ForecastPlan {
                                seed: 1000 * (d + 1),
                                seeds: draw_seeds,
                                threads: 1,
                                ..plan
                            };
                            forecast_goodput_near(
                                &config,
                                &Deployment::default(),
                                &workload,
                                &slo,
                                &p,
                                central,
                                1.25,
                            )
                            .map(|a| a.goodput)
                            .unwrap_or(f64::NAN)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    let lo = answers.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = answers.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    println!(
        "16 searches on 2 threads: goodput {lo:.3} to {hi:.3} req/s, {:.2?}",
        start.elapsed()
    );
}
