//! The long robustness run: millions of mutated inputs through every parser
//! (`goodput_core::fuzz`), on every core, no panic allowed.
//!
//! `cargo run --release -p goodput-core --features fuzz --example fuzz [-- TOTAL [SEED]]`
//! (default 10,000,000 inputs, split over the targets; the file readers get
//! a hundredth of the share, as each case writes a file).

use std::time::Instant;

fn main() {
    let total: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10_000_000);
    let seed: u64 = std::env::args()
        .nth(2)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1);
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get()) as u64;
    let targets = goodput_core::fuzz::targets();
    let weights: Vec<u64> = targets
        .iter()
        .map(|t| {
            if t.name == "dataset_and_trace_files" {
                1
            } else {
                100
            }
        })
        .collect();
    let sum: u64 = weights.iter().sum();
    println!("| target | inputs | seconds | inputs/s | panics |");
    println!("|---|---:|---:|---:|---:|");
    let mut all = 0;
    let started = Instant::now();
    for (i, t) in targets.iter().enumerate() {
        let n = total * weights[i] / sum;
        let t0 = Instant::now();
        let done: u64 = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|k| {
                    let t = &targets[i];
                    s.spawn(move || goodput_core::fuzz::run(t, n / threads, seed * 1000 + k))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a parser panicked"))
                .sum()
        });
        let secs = t0.elapsed().as_secs_f64();
        all += done;
        println!(
            "| {} | {done} | {secs:.1} | {:.0} | 0 |",
            t.name,
            done as f64 / secs
        );
    }
    println!(
        "\n{all} inputs in {:.1} s, no panic (seed {seed}, {threads} threads).",
        started.elapsed().as_secs_f64()
    );
}
