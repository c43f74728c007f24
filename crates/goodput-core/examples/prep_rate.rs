//! How fast workloads build requests: 100,000 requests from each kind of
//! source (synthetic, dataset, trace), on one thread as the run's workload
//! thread builds them, timed end to end. The figures go in BENCHMARKS.md
//! beside the send rates they feed.
//!
//! `cargo run --release -p goodput-core --example prep_rate [-- N]`

use std::io::Write;
use std::sync::Arc;
use std::time::Instant;

use goodput_core::protocol::{Endpoint, RequestParams};
use goodput_core::tokenizer::Tokenizer;
use goodput_core::workload::dataset::{load_dataset, DatasetOptions, Exhausted, Sampling};
use goodput_core::workload::trace::{load_trace, TraceOptions};
use goodput_core::workload::{
    GroupChoice, LengthSpec, PrefixSpec, SourceSpec, SyntheticSpec, WorkloadSpec,
};

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
    };
    let dir = std::env::temp_dir().join(format!("goodput-prep-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();

    // A dataset of n rows of ~300-word prompts, and a Mooncake-shaped trace
    // of n rows: 1–40 blocks of 512 tokens, prefixes shared within 1,000
    // conversation families.
    let words = goodput_core::words::words();
    let data = dir.join("d.jsonl");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&data).unwrap());
    let mut x = 7u64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..n {
        let len = 100 + (next() % 400) as usize;
        let text: Vec<&str> = (0..len).map(|_| words[(next() % 1980) as usize]).collect();
        writeln!(
            f,
            "{}",
            serde_json::json!({"prompt": text.join(" "), "output_tokens": 128})
        )
        .unwrap();
    }
    drop(f);
    let trace = dir.join("t.jsonl");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&trace).unwrap());
    for i in 0..n {
        let family = next() % 1000;
        let blocks = 1 + next() % 40;
        let shared = blocks.min(1 + next() % 8);
        let ids: Vec<u64> = (0..blocks)
            .map(|b| {
                if b < shared {
                    family * 100 + b
                } else {
                    1_000_000 + i as u64 * 64 + b
                }
            })
            .collect();
        let input = blocks * 512 - next() % 512;
        writeln!(
            f,
            "{}",
            serde_json::json!({"timestamp": i * 10, "input_length": input, "output_length": 128, "hash_ids": ids})
        )
        .unwrap();
    }
    drop(f);

    let mut synth = SyntheticSpec::new(LengthSpec::Fixed(1024), LengthSpec::Fixed(128), 1);
    let mut prefixed = synth.clone();
    prefixed.prefix = Some(PrefixSpec {
        tokens: 768,
        groups: 16,
        choice: GroupChoice::Uniform,
    });
    synth.cache_bust = true;

    println!(
        "| workload | requests | load s | build s | requests/s | µs/request | mean prompt tokens |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    type Make<'a> = Box<dyn Fn() -> WorkloadSpec + 'a>;
    let cases: Vec<(&str, Make)> = vec![
        (
            "synthetic 1024 tokens, salted",
            Box::new(|| WorkloadSpec::synthetic(synth.clone())),
        ),
        (
            "synthetic 1024 tokens, 16 prefixes of 768",
            Box::new(|| WorkloadSpec::synthetic(prefixed.clone())),
        ),
        (
            "dataset JSONL (100–500 words a row)",
            Box::new(|| {
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
                        dataset: Arc::new(load_dataset(&data, &opts, &tok).unwrap()),
                        output_override: None,
                    },
                }
            }),
        ),
        (
            "Mooncake-shaped trace (mean ~10k tokens)",
            Box::new(|| WorkloadSpec {
                synthetic: SyntheticSpec::new(LengthSpec::Fixed(1), LengthSpec::Fixed(128), 1),
                source: SourceSpec::Trace {
                    trace: Arc::new(load_trace(&trace, &TraceOptions::default()).unwrap()),
                    speed: 1.0,
                    block_tokens: 512,
                    output_override: None,
                },
            }),
        ),
    ];
    for (name, make) in cases {
        let t0 = Instant::now();
        let spec = make();
        let load_s = t0.elapsed().as_secs_f64();
        let mut source = spec.source(&params, &tok, 42, 0);
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
    let _ = std::fs::remove_dir_all(&dir);
}
