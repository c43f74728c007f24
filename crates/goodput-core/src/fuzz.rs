//! Robustness checks of every parser that reads what a server or a user
//! wrote: random mutations of valid inputs, fed to each parser, which must
//! return (an error is fine) and never panic, and, for the streaming
//! parsers, give the same result however the input is split into reads.
//!
//! The test suite runs a bounded number of cases per target
//! (`fuzz::tests`); `cargo run --release -p goodput-core --features fuzz
//! --example fuzz` runs millions (figures in `BENCHMARKS.md`). The module
//! is compiled only for the tests and under the `fuzz` feature: it is no
//! part of the library goodput ships. No coverage guidance: the
//! machine's one toolchain is stable, and `cargo fuzz` needs nightly. The
//! mutations are structure-aware instead (seeds are valid inputs of each
//! format, mutated by flips, insertions, deletions, duplications and
//! splices of another seed).

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::request::client::h1::{parse_head, BodyDecoder, BodyKind};
use crate::request::client::sse::SseParser;
use crate::request::protocol::chunk::Chunk;

/// One parser under test.
pub struct Target {
    /// The parser's name, as the fuzz report prints it.
    pub name: &'static str,
    /// Valid inputs the mutations start from.
    pub seeds: Vec<Vec<u8>>,
    /// Runs the parser on `input`, with `rng` to choose read splits;
    /// panics on a broken property (a panic of the parser itself counts).
    pub check: fn(&[u8], &mut StdRng),
}

/// Split `input` at random points (as reads would).
fn splits<'a>(input: &'a [u8], rng: &mut StdRng) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    let mut rest = input;
    while !rest.is_empty() {
        let n = rng.random_range(1..=rest.len().min(64));
        let (a, b) = rest.split_at(n);
        out.push(a);
        rest = b;
    }
    out
}

fn sse_events(parts: &[&[u8]]) -> (Vec<Vec<u8>>, bool) {
    let mut p = SseParser::new();
    let mut events = Vec::new();
    for part in parts {
        p.feed(part, |e| events.push(e.to_vec()));
    }
    p.finish(|e| events.push(e.to_vec()));
    (events, p.overflowed())
}

fn check_sse(input: &[u8], rng: &mut StdRng) {
    let whole = sse_events(&[input]);
    let split = sse_events(&splits(input, rng));
    assert_eq!(whole, split, "SSE events depend on how the input was split");
    for e in &whole.0 {
        let _ = Chunk::parse(e).map(|c| {
            let mut text = String::new();
            let _ = c.deliver(&mut text);
            let _ = c.error_message();
        });
    }
}

fn check_head(input: &[u8], _: &mut StdRng) {
    if let Ok(Some((head, used))) = parse_head(input) {
        assert!(used <= input.len());
        let _ = head.status;
    }
}

fn decode_all(kind: BodyKind, parts: &[&[u8]]) -> (Result<Vec<u8>, String>, bool) {
    let mut d = BodyDecoder::new(kind);
    let mut out = Vec::new();
    for part in parts {
        let mut part = *part;
        while !part.is_empty() && !d.is_done() {
            match d.decode(part, |x| out.extend_from_slice(x)) {
                Ok(0) => break,
                Ok(n) => part = &part[n..],
                Err(e) => return (Err(e), false),
            }
        }
    }
    let done = d.is_done();
    (Ok(out), done)
}

fn check_chunked(input: &[u8], rng: &mut StdRng) {
    let whole = decode_all(BodyKind::Chunked, &[input]);
    let split = decode_all(BodyKind::Chunked, &splits(input, rng));
    match (&whole.0, &split.0) {
        (Ok(a), Ok(b)) => assert_eq!(
            (a, whole.1),
            (b, split.1),
            "chunked decoding depends on splits"
        ),
        (Err(_), Err(_)) => {}
        _ => panic!("chunked decoding fails or not depending on splits"),
    }
}

fn check_chunk_json(input: &[u8], _: &mut StdRng) {
    if let Ok(c) = Chunk::parse(input) {
        let mut text = String::new();
        let _ = c.deliver(&mut text);
        let _ = c.error_message();
    }
}

fn text(input: &[u8]) -> String {
    String::from_utf8_lossy(input).into_owned()
}

fn check_expressions(input: &[u8], _: &mut StdRng) {
    let s = text(input);
    let _ = s.parse::<crate::measure::slo::SloTerm>();
    let _ = crate::measure::slo::parse_terms(std::slice::from_ref(&s));
    let _ = s.parse::<goodput_common::LengthSpec>();
    let _ = goodput_common::units::parse_duration(&s);
    let _ = s.parse::<goodput_common::units::DurationSpec>();
    let _ = s.parse::<crate::load::schedule::Arrival>();
    let _ = s.parse::<crate::load::workload::synthetic::GroupChoice>();
    let _ = crate::request::client::target::BaseUrl::parse(&s);
}

/// Write `input` to this thread's scratch file with extension `ext`.
fn scratch(input: &[u8], ext: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("goodput-fuzz-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let p = dir.join(format!("{:?}.{ext}", std::thread::current().id()).replace(['(', ')'], ""));
    let _ = std::fs::write(&p, input);
    p
}

fn check_files(input: &[u8], rng: &mut StdRng) {
    use crate::load::workload::{dataset, trace};
    let tok = goodput_common::tokenizer::Tokenizer::from_spec("none").expect("none");
    let ext = ["jsonl", "csv", "json"][rng.random_range(0..3)];
    let path = scratch(input, ext);
    let opts = dataset::DatasetOptions {
        num: 4,
        exhausted: dataset::Exhausted::Cycle,
        ..Default::default()
    };
    let _ = dataset::load_dataset(&path, &opts, &tok);
    if ext != "json" {
        let opts = trace::TraceOptions {
            time_unit: Some(trace::TimeUnit::Ms),
            ..Default::default()
        };
        let _ = trace::load_trace(&path, &opts);
    }
}

/// Every target with its seeds.
pub fn targets() -> Vec<Target> {
    let b = |s: &str| s.as_bytes().to_vec();
    vec![
        Target {
            name: "sse",
            seeds: vec![
                b("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" the\"},\"finish_reason\":null}]}\n\ndata: [DONE]\n\n"),
                b(": ping\r\n\r\ndata: {\"choices\":[{\"text\":\"a\",\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1}}\r\n\r\n"),
                b("event: x\ndata: line one\ndata: line two\n\ndata: {\"error\":{\"message\":\"boom\"}}\n\n"),
                b("data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"hm\"}}]}\r\rdata: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"function\":{\"arguments\":\"{}\"}}]}}]}\n\n"),
            ],
            check: check_sse,
        },
        Target {
            name: "http_head",
            seeds: vec![
                b("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"),
                b("HTTP/1.1 429 Too Many Requests\r\nRetry-After: 7\r\nContent-Length: 12\r\nConnection: close\r\n\r\n{\"error\":1}\n"),
                b("HTTP/1.0 503 Service Unavailable\r\nX-A: b\r\n  continued\r\n\r\n"),
            ],
            check: check_head,
        },
        Target {
            name: "chunked_body",
            seeds: vec![
                b("5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\n\r\n"),
                b("1a\r\ndata: {\"a\":1}\n\n12345678\r\n0\r\nTrailer: x\r\n\r\n"),
                b("0\r\n\r\n"),
            ],
            check: check_chunked,
        },
        Target {
            name: "chunk_json",
            seeds: vec![
                b("{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":null}],\"usage\":null}"),
                b("{\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":7,\"prompt_tokens_details\":{\"cached_tokens\":3},\"completion_tokens_details\":{\"reasoning_tokens\":2}}}"),
                b("{\"error\":{\"message\":\"x\",\"code\":500}}"),
            ],
            check: check_chunk_json,
        },
        Target {
            name: "dataset_and_trace_files",
            seeds: vec![
                b("{\"prompt\": \"hello\", \"output_tokens\": 5}\n{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}\n"),
                b("prompt,output_tokens,reference\n\"a, b\",4,x\nc,,\n"),
                b("[{\"conversations\": [{\"from\": \"human\", \"value\": \"q\"}, {\"from\": \"gpt\", \"value\": \"a\"}]}]"),
                b("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.9799600,100,7\n2023-11-16 18:17:04.0,3,9\n"),
                b("{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 5, \"hash_ids\": [1, 2]}\n"),
                b("timestamp,input_tokens,output_tokens\n0,5,5\n10,6,6\n"),
            ],
            check: check_files,
        },
        Target {
            name: "expressions",
            seeds: vec![
                b("ttft:p99<=200ms"),
                b("tpot:median<=50ms"),
                b("uniform:256,1024"),
                b("lognormal:512,0.5"),
                b("1.5s"),
                b("exponential:2s"),
                b("gamma:0.5"),
                b("zipf:1.1"),
                b("https://host:8443/v1"),
            ],
            check: check_expressions,
        },
    ]
}

/// A mutation of a seed (or of two spliced).
pub fn mutate(seeds: &[Vec<u8>], rng: &mut StdRng) -> Vec<u8> {
    let mut v = seeds[rng.random_range(0..seeds.len())].clone();
    let rounds = rng.random_range(1..=8);
    for _ in 0..rounds {
        let len = v.len();
        match rng.random_range(0..7) {
            0 if len > 0 => {
                let i = rng.random_range(0..len);
                v[i] ^= 1 << rng.random_range(0..8);
            }
            1 => {
                let i = rng.random_range(0..=len);
                let b = *b"\r\n:{}[]\",0123456789abcdef -;=%\\\x00\xff\xc3"
                    .get(rng.random_range(0..32))
                    .unwrap_or(&b'x');
                v.insert(i, b);
            }
            2 if len > 0 => {
                let i = rng.random_range(0..len);
                let n = rng.random_range(1..=(len - i).min(16));
                v.drain(i..i + n);
            }
            3 if len > 0 => {
                let i = rng.random_range(0..len);
                let n = rng.random_range(1..=(len - i).min(32));
                let piece = v[i..i + n].to_vec();
                let at = rng.random_range(0..=v.len());
                v.splice(at..at, piece);
            }
            4 => {
                let other = &seeds[rng.random_range(0..seeds.len())];
                let cut = rng.random_range(0..=len);
                let from = rng.random_range(0..=other.len());
                v.truncate(cut);
                v.extend_from_slice(&other[from..]);
            }
            5 if len > 0 => {
                let i = rng.random_range(0..len);
                v[i] = rng.random();
            }
            _ => {
                let i = rng.random_range(0..=len);
                let digits = rng.random_range(1..=24);
                let s: String = (0..digits)
                    .map(|_| char::from(b'0' + rng.random_range(0..10)))
                    .collect();
                v.splice(i..i, s.into_bytes());
            }
        }
        if v.len() > 64 * 1024 {
            v.truncate(64 * 1024);
        }
    }
    v
}

/// Run `n` cases of `target` from `seed`; returns the cases run.
pub fn run(target: &Target, n: u64, seed: u64) -> u64 {
    let mut rng = StdRng::seed_from_u64(seed);
    for s in &target.seeds {
        (target.check)(s, &mut rng);
    }
    for _ in 0..n {
        let input = mutate(&target.seeds, &mut rng);
        (target.check)(&input, &mut rng);
    }
    n + target.seeds.len() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bounded property runs of every parser (no panic; split invariance
    /// for the streaming ones). The long run is `examples/fuzz.rs`.
    #[test]
    fn every_parser_survives_mutated_inputs() {
        for t in targets() {
            let n = if t.name == "dataset_and_trace_files" {
                300
            } else {
                3_000
            };
            run(&t, n, 7);
        }
    }
}
