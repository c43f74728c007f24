use std::path::PathBuf;

use super::*;
use crate::load::workload::dataset::{load_dataset, DatasetOptions};
use crate::load::workload::trace::{load_trace, TraceOptions};
use crate::request::protocol::tests::params;
use crate::request::protocol::Endpoint;
use goodput_common::tokenizer::Tokenizer;

fn tok() -> Tokenizer {
    Tokenizer::from_spec("tiktoken:o200k_base").unwrap()
}

/// `text` written as `name` in a directory of its own: tests run at once,
/// and one rewriting a file another is reading (`mooncake()` is written by
/// several) gave the reader a cut file.
fn file(name: &str, text: &str) -> PathBuf {
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir()
        .join(format!("goodput-replay-{}", std::process::id()))
        .join(call.to_string());
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn prompt_of(r: &PreparedRequest) -> String {
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    v["prompt"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| v["messages"][0]["content"].as_str().unwrap().to_string())
}

fn mooncake() -> Arc<Trace> {
    // Three requests; the second shares the first's two blocks and adds
    // one; the third shares only the first block. Block size 16.
    let p = file(
        "mc.jsonl",
        concat!(
            r#"{"timestamp": 0, "input_length": 40, "output_length": 5, "hash_ids": [1, 2, 3]}"#,
            "\n",
            r#"{"timestamp": 500, "input_length": 48, "output_length": 6, "hash_ids": [1, 2, 4]}"#,
            "\n",
            r#"{"timestamp": 1500, "input_length": 20, "output_length": 7, "hash_ids": [1, 9]}"#,
            "\n"
        ),
    );
    let opts = TraceOptions {
        block_tokens: 16,
        ..Default::default()
    };
    Arc::new(load_trace(&p, &opts).unwrap())
}

fn trace_source(trace: Arc<Trace>, speed: f64, nonce: u64) -> TraceSource {
    TraceSource::new(
        trace,
        speed,
        16,
        None,
        BuildContext {
            params: params(Endpoint::Completions),
            text: TextBuilder::new(tok()),
            cache_bust: true,
            seed: 1,
            nonce,
        },
    )
}

/// Equal hash ids are identical text, so the trace's prefix sharing
/// replays: the cacheable tokens are the leading blocks seen before, and
/// every prompt has exactly its input length.
#[test]
fn mooncake_hash_ids_become_shared_blocks() {
    let tok = tok();
    let mut src = trace_source(mooncake(), 1.0, 7);
    let reqs: Vec<Planned> = std::iter::from_fn(|| src.next()).collect();
    assert_eq!(reqs.len(), 3);
    let ids: Vec<Vec<u32>> = reqs
        .iter()
        .map(|p| tok.encode(&prompt_of(&p.request)).unwrap())
        .collect();
    for (p, n) in reqs.iter().zip([40usize, 48, 20]) {
        assert_eq!(
            ids[reqs
                .iter()
                .position(|q| q.request.id == p.request.id)
                .unwrap()]
            .len(),
            n
        );
        assert_eq!(p.request.prompt_tokens, Some(n as u32));
    }
    assert_eq!(ids[0][..32], ids[1][..32], "blocks 1 and 2 are shared");
    assert_ne!(ids[0][32..40], ids[1][32..40]);
    assert_eq!(ids[0][..16], ids[2][..16], "block 1 is shared");
    assert_ne!(ids[0][16..20], ids[2][16..20]);
    let cacheable: Vec<u32> = reqs.iter().map(|p| p.request.cacheable_tokens).collect();
    assert_eq!(cacheable, vec![0, 32, 16]);
    let outs: Vec<Option<u32>> = reqs.iter().map(|p| p.request.max_tokens).collect();
    assert_eq!(outs, vec![Some(5), Some(6), Some(7)]);
    // Another run: the same structure, but text of its own.
    let mut other = trace_source(mooncake(), 1.0, 8);
    let first = prompt_of(&other.next().unwrap().request);
    assert_ne!(first, prompt_of(&reqs[0].request));
}

#[test]
fn trace_times_are_scaled_by_the_speed() {
    let mut src = trace_source(mooncake(), 2.0, 1);
    let at: Vec<Duration> = std::iter::from_fn(|| src.next())
        .map(|p| p.at.unwrap())
        .collect();
    assert_eq!(
        at,
        vec![
            Duration::ZERO,
            Duration::from_millis(250),
            Duration::from_millis(750)
        ]
    );
}

/// Azure-style rows (lengths only) get synthetic prompts of exact length.
#[test]
fn length_only_rows_get_exact_synthetic_prompts() {
    let p = file(
        "azure.csv",
        "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.9799600,100,7\n2023-11-16 18:17:04.0799600,3,9\n",
    );
    let trace = Arc::new(load_trace(&p, &TraceOptions::default()).unwrap());
    let mut src = trace_source(trace, 1.0, 3);
    let a = src.next().unwrap();
    let b = src.next().unwrap();
    assert_eq!(tok().count(&prompt_of(&a.request)), Some(100));
    assert_eq!(tok().count(&prompt_of(&b.request)), Some(3));
    assert_eq!(b.at, Some(Duration::from_millis(100)));
    assert_eq!(b.request.max_tokens, Some(9));
}

#[test]
fn dataset_rows_are_sent_with_their_lengths_or_the_override() {
    let p = file(
        "d.jsonl",
        concat!(
            r#"{"prompt": "Tell me a story.", "output_tokens": 30}"#,
            "\n",
            r#"{"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]}"#,
            "\n"
        ),
    );
    let opts = DatasetOptions {
        num: 4,
        exhausted: crate::load::workload::dataset::Exhausted::Cycle,
        ..Default::default()
    };
    let ds = Arc::new(load_dataset(&p, &opts, &tok()).unwrap());
    let source = |over: Option<LengthSpec>, bust: bool| {
        DatasetSource::new(
            ds.clone(),
            over,
            LengthSpec::Fixed(64),
            BuildContext {
                params: params(Endpoint::Chat),
                text: TextBuilder::new(tok()),
                cache_bust: bust,
                seed: 1,
                nonce: 5,
            },
        )
    };
    let mut src = source(None, false);
    let reqs: Vec<PreparedRequest> = std::iter::from_fn(|| src.next())
        .map(|p| p.request)
        .collect();
    assert_eq!(reqs.len(), 4);
    assert_eq!(prompt_of(&reqs[0]), "Tell me a story.");
    assert_eq!(reqs[0].max_tokens, Some(30));
    assert_eq!(
        reqs[1].max_tokens,
        Some(64),
        "no output length: the default"
    );
    let v: serde_json::Value = serde_json::from_slice(&reqs[1].body).unwrap();
    assert_eq!(v["messages"].as_array().unwrap().len(), 2);
    assert_eq!(
        reqs[0].prompt_tokens,
        tok().count("Tell me a story.").map(|n| n as u32)
    );
    // The cycle sends each row again: the repeat is cacheable whole.
    assert_eq!(reqs[0].cacheable_tokens, 0);
    assert_eq!(reqs[2].cacheable_tokens, reqs[2].prompt_tokens.unwrap());
    let mut over = source(Some(LengthSpec::Fixed(9)), true);
    let r = over.next().unwrap().request;
    assert_eq!(r.max_tokens, Some(9));
    let text = prompt_of(&r);
    assert!(
        text.ends_with(" Tell me a story.") && text.split(' ').count() == 9,
        "{text}"
    );
}
