//! How fast the built-in tiktoken encodings count tokens, as a run counts
//! each answer's text (the aggregator's `client_output_tokens`) and each
//! prompt it builds: ns per token on three kinds of text, best of 5 passes.
//! The figures go in BENCHMARKS.md beside the rank table's layout.
//!
//! `cargo run --release -p goodput-core --example count_rate [-- TOKENS]`

use std::hint::black_box;
use std::time::Instant;

use goodput_core::tokenizer::Tokenizer;
use goodput_core::words::words;

fn main() {
    let target: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(200_000);
    // English words, as synthetic prompts; one word again and again, as the
    // reference server's answers; and text no vocabulary holds whole
    // (digits, punctuation, accents, CJK), where the byte-pair merge looks up
    // many pairs that are not tokens.
    let vocabulary = words();
    let mut words = String::new();
    let mut i = 0usize;
    while words.len() < target * 6 {
        words.push(' ');
        words.push_str(vocabulary[i.wrapping_mul(7919) % vocabulary.len()]);
        i += 1;
    }
    let answer = " the".repeat(target);
    let mixed: String = (0..target / 2)
        .map(|i| match i % 5 {
            0 => format!(" {}", i.wrapping_mul(2_654_435_761) % 100_000),
            1 => " déjà-vu;".to_string(),
            2 => "漢字かな".to_string(),
            3 => format!(" x{:x}{}", i, "!?"),
            _ => " Zürich".to_string(),
        })
        .collect();
    println!("| encoding | text | tokens | ns per token (best of 5) |");
    println!("| --- | --- | --- | --- |");
    for spec in ["tiktoken:o200k_base", "tiktoken:cl100k_base"] {
        let tok = Tokenizer::from_spec(spec).expect("a built-in encoding");
        for (what, text) in [("words", &words), ("answer", &answer), ("mixed", &mixed)] {
            let tokens = tok.count(text).expect("counts");
            let best = (0..5)
                .map(|_| {
                    let t = Instant::now();
                    black_box(tok.count(black_box(text)));
                    t.elapsed().as_nanos() as f64 / tokens as f64
                })
                .fold(f64::INFINITY, f64::min);
            println!("| {spec} | {what} | {tokens} | {best:.1} |");
        }
    }
}
