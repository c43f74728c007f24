//! How fast workloads build requests: 100,000 requests from each kind of
//! source (synthetic, dataset, trace), on one thread as the run's workload
//! thread builds them, timed end to end. The figures go in BENCHMARKS.md
//! beside the send rates they feed.
//!
//! `cargo run --release -p goodput-core --example prep_rate [-- N]`

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use goodput_core::load::{load_dataset, DatasetOptions, Exhausted, Sampling};
use goodput_core::load::{load_trace, TraceOptions};
use goodput_core::load::{
    GroupChoice, LengthSpec, PrefixSpec, SourceSpec, SyntheticSpec, WorkloadSpec,
};
use goodput_core::request::{Endpoint, RequestParams};
use goodput_core::tokenizer::Tokenizer;

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100_000);
    let tok = Tokenizer::from_spec("tiktoken:o200k_base").unwrap();
    let params = RequestParams {
        endpoint: Endpoint::Chat,
        model: "m".into(),
        stream: true,
        min_tokens: true,
        ignore_eos: true,
        temperature: None,
        output: None,
    };
    let dir = std::env::temp_dir().join(format!("goodput-prep-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let data = dir.join("d.jsonl");
    let trace = dir.join("t.jsonl");
    // One generator for both files, so they are the same on every run.
    let mut rng = XorShift(7);
    write_dataset(&data, n, &mut rng);
    write_trace(&trace, n, &mut rng);

    println!(
        "| workload | requests | load s | build s | requests/s | µs/request | mean prompt tokens |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for (name, make) in cases(n, &data, &trace, &tok) {
        time_case(name, make, n, &params, &tok);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// xorshift64: a tiny deterministic generator for the input files.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// A dataset of `n` rows of 100–500-word prompts, 128 output tokens each.
fn write_dataset(path: &Path, n: usize, rng: &mut XorShift) {
    let words = goodput_core::words::words();
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    for _ in 0..n {
        let len = 100 + (rng.next() % 400) as usize;
        let text: Vec<&str> = (0..len)
            .map(|_| words[(rng.next() % 1980) as usize])
            .collect();
        writeln!(
            f,
            "{}",
            serde_json::json!({"prompt": text.join(" "), "output_tokens": 128})
        )
        .unwrap();
    }
}

/// A Mooncake-shaped trace of `n` rows: 1–40 blocks of 512 tokens,
/// prefixes shared within 1,000 conversation families.
fn write_trace(path: &Path, n: usize, rng: &mut XorShift) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    for i in 0..n {
        let family = rng.next() % 1000;
        let blocks = 1 + rng.next() % 40;
        let shared = blocks.min(1 + rng.next() % 8);
        let ids: Vec<u64> = (0..blocks)
            .map(|b| {
                if b < shared {
                    family * 100 + b
                } else {
                    1_000_000 + i as u64 * 64 + b
                }
            })
            .collect();
        let input = blocks * 512 - rng.next() % 512;
        writeln!(
            f,
            "{}",
            serde_json::json!({"timestamp": i * 10, "input_length": input, "output_length": 128, "hash_ids": ids})
        )
        .unwrap();
    }
}

/// Builds one case's workload; the time it takes is the case's load time.
type Make<'a> = Box<dyn Fn() -> WorkloadSpec + 'a>;

/// The four workloads timed: synthetic (salted, and with shared prefixes),
/// the dataset file, the trace file.
fn cases<'a>(
    n: usize,
    data: &'a Path,
    trace: &'a Path,
    tok: &'a Tokenizer,
) -> Vec<(&'static str, Make<'a>)> {
    let mut synth = SyntheticSpec::new(LengthSpec::Fixed(1024), LengthSpec::Fixed(128), 1);
    let mut prefixed = synth.clone();
    prefixed.prefix = Some(PrefixSpec {
        tokens: 768,
        groups: 16,
        choice: GroupChoice::Uniform,
    });
    synth.cache_bust = true;
    vec![
        (
            "synthetic 1024 tokens, salted",
            Box::new(move || WorkloadSpec::synthetic(synth.clone())),
        ),
        (
            "synthetic 1024 tokens, 16 prefixes of 768",
            Box::new(move || WorkloadSpec::synthetic(prefixed.clone())),
        ),
        (
            "dataset JSONL (100–500 words a row)",
            Box::new(move || {
                let opts = DatasetOptions {
                    num: n,
                    sampling: Sampling::Random,
                    exhausted: Exhausted::Error,
                    seed: 1,
                    ..Default::default()
                };
                WorkloadSpec {
                    synthetic: SyntheticSpec::new(LengthSpec::Fixed(1), LengthSpec::Fixed(128), 1),
                    source: SourceSpec::Dataset {
                        dataset: Arc::new(load_dataset(data, &opts, tok).unwrap()),
                        output_override: None,
                    },
                    mix: None,
                }
            }),
        ),
        (
            "Mooncake-shaped trace (mean ~10k tokens)",
            Box::new(move || WorkloadSpec {
                synthetic: SyntheticSpec::new(LengthSpec::Fixed(1), LengthSpec::Fixed(128), 1),
                source: SourceSpec::Trace {
                    trace: Arc::new(load_trace(trace, &TraceOptions::default()).unwrap()),
                    speed: 1.0,
                    block_tokens: 512,
                    output_override: None,
                },
                mix: None,
            }),
        ),
    ]
}

/// Load one case's workload, build up to `n` requests from it, and print
/// its row of the table.
fn time_case(name: &str, make: Make, n: usize, params: &RequestParams, tok: &Tokenizer) {
    let t0 = Instant::now();
    let spec = make();
    let load_s = t0.elapsed().as_secs_f64();
    let mut source = spec.source(params, tok, 42, 0);
    let t1 = Instant::now();
    let mut built = 0usize;
    let mut tokens = 0u64;
    while built < n {
        let Some(p) = source.next() else { break };
        tokens += u64::from(p.request.prompt_tokens.unwrap_or(0));
        built += 1;
    }
    let s = t1.elapsed().as_secs_f64();
    println!(
        "| {name} | {built} | {load_s:.2} | {s:.2} | {:.0} | {:.1} | {:.0} |",
        built as f64 / s,
        s * 1e6 / built as f64,
        tokens as f64 / built as f64
    );
}
