//! The study's workload and its loads: the engine's capacity found by a
//! saturated closed loop, then a light load, 70 % and 95 % of it, in
//! closed loop (the concurrency whose throughput comes closest) and in open
//! loop (Poisson arrivals at that share of the capacity).

use crate::virtual_search::{Lengths, Run, Virtual};

/// Lengths vary as `--random-range-ratio 0.5` draws them, so a closed loop
/// is not a fixed cycle and the percentiles have a spread to cover.
pub const LENGTHS: Lengths = Lengths::Uniform(0.5);

/// The README's deployment (Llama-3.1-8B on one H100) at 1,024 / 128
/// tokens, the README's SLO.
pub fn workload() -> Virtual {
    let mut v = Virtual::readme();
    v.cooldown = std::env::var_os("COVERAGE_COOLDOWN").is_some();
    v
}

#[derive(Debug, Clone, Copy)]
pub enum Shape {
    Closed(usize),
    Open(f64),
}

/// One load of the study.
#[derive(Debug, Clone)]
pub struct Cell {
    pub name: String,
    pub shape: Shape,
    /// Its throughput as a share of the capacity.
    pub share: f64,
}

impl Cell {
    /// A run of this load with `measured` requests after the default
    /// warm-up (`--warmup auto`: one per slot, at least 4, in closed loop;
    /// 2 s of arrivals, 8 to 500, in open loop).
    pub fn run(&self, v: &Virtual, measured: u64, seed: u64) -> Run {
        match self.shape {
            Shape::Closed(c) => v.closed(c, measured, (c as u64).max(4), seed, LENGTHS),
            Shape::Open(rate) => {
                let secs = std::env::var("COVERAGE_WARMUP_S")
                    .ok()
                    .and_then(|s| s.parse::<f64>().ok())
                    .unwrap_or(2.0);
                let warmup = ((rate * secs).ceil() as u64).clamp(8, 5000);
                v.open(rate, measured, warmup, seed, LENGTHS, None, false)
            }
        }
    }
}

/// Completions per second after the first 500 of a closed loop of
/// `concurrency` users (4,000 requests).
fn closed_throughput(v: &Virtual, concurrency: usize) -> f64 {
    let run = v.closed(concurrency, 3500, 500, 7, LENGTHS);
    run.metrics.throughput.request.value
}

/// The six loads, capacity measured first.
pub fn cells(v: &Virtual) -> Vec<Cell> {
    let capacity = closed_throughput(v, 512);
    println!("capacity (closed loop, 512 users): {capacity:.2} req/s");
    let mut out = Vec::new();
    let concurrencies: Vec<(usize, f64)> = [
        1usize, 2, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256,
    ]
    .iter()
    .map(|&c| (c, closed_throughput(v, c)))
    .collect();
    for (label, share) in [("light", 0.2), ("70%", 0.7), ("95%", 0.95)] {
        let &(c, x) = concurrencies
            .iter()
            .min_by(|a, b| {
                (a.1 / capacity - share)
                    .abs()
                    .total_cmp(&(b.1 / capacity - share).abs())
            })
            .expect("concurrencies");
        out.push(Cell {
            name: format!("closed {label} (c={c})"),
            shape: Shape::Closed(c),
            share: x / capacity,
        });
    }
    for (label, share) in [("light", 0.2), ("70%", 0.7), ("95%", 0.95)] {
        let rate = share * capacity;
        out.push(Cell {
            name: format!("open {label} ({rate:.1}/s)"),
            shape: Shape::Open(rate),
            share,
        });
    }
    for c in &out {
        println!("  {:<24} {:>4.0} % of capacity", c.name, c.share * 100.0);
    }
    out
}
