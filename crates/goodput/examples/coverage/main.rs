//! The coverage study: how often each 95 % interval goodput prints covers
//! the truth, and how often `compare` calls two runs of the same plan
//! different, measured in virtual time on the simulator's engine.
//!
//! Each cell is a load (closed or open loop at a light load, 70 % and 95 %
//! of the engine's capacity) and a run size. Its truth is the long-run
//! value of the same engine under the same load: the pooled percentiles
//! and means of `TRUTH_SEEDS` runs of `TRUTH_REQUESTS` measured requests.
//! Its replications are runs of the same plan with seeds the truth never
//! used, summarised by the same [`goodput_core::measure::Collector`] a real
//! run uses, so every interval is the one the console, the JSON and the
//! CSV print.
//!
//! `cargo run --release -p goodput --example coverage -- [REPLICATIONS] [SECTIONS]`
//! (default 200 replications; SECTIONS a comma-separated subset of
//! `intervals,compare`, default both; `effect` prints how far a 10 %
//! slower prefill moves each figure in units of the runs' spread, and
//! `repeats` compares pairs of `--repeat` results, `COVERAGE_REPEATS` runs
//! a side, default 5, REPLICATIONS pairs; both at `COVERAGE_SIZES`
//! requests, default 1,000). For studies of one effect:
//! `COVERAGE_ONLY=TEXT` keeps the cells whose name holds TEXT;
//! `COVERAGE_WARMUP_S=S` warms the open loop up for S s of arrivals instead
//! of goodput's 2; `COVERAGE_COOLDOWN=1` keeps the load on, unmeasured,
//! until every measured request is done; `COVERAGE_TRUTH_RUNS=N` and
//! `COVERAGE_TRUTH_SEED=S` size and move the truth's runs, and
//! `COVERAGE_SHOW_TRUTH=1` prints a few truths; `COVERAGE_SIZES=N[,N]`
//! picks the run sizes and `COVERAGE_SEED_FROM=S` the replications' first
//! seed (a fresh sample of the same cells); `COVERAGE_THROUGHPUT_ALT=1`
//! adds other readings of the throughputs' intervals beside the printed
//! ones ([`throughput`]) and prints where each cell's run durations go.

#[path = "../virtual_search/mod.rs"]
mod virtual_search;

mod compare;
mod intervals;
mod loads;
mod throughput;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let arg = |i: usize| std::env::args().nth(i);
    let replications: u64 = arg(1).map_or(Ok(200), |s| s.parse())?;
    let sections = arg(2).unwrap_or_else(|| "intervals,compare".into());
    let v = loads::workload();
    let mut cells = loads::cells(&v);
    if let Ok(only) = std::env::var("COVERAGE_ONLY") {
        cells.retain(|c| c.name.contains(&only));
    }
    for section in sections.split(',') {
        match section {
            "intervals" => intervals::study(&v, &cells, replications),
            "compare" => compare::study(&v, &cells, replications),
            "effect" => compare::effect(&v, &cells, replications),
            "repeats" => compare::repeats(&v, &cells, replications),

            other => return Err(format!("unknown section '{other}'").into()),
        }
    }
    Ok(())
}
