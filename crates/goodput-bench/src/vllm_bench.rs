//! vLLM's own Rust client, `vllm-bench` (a drop-in for `vllm bench serve`:
//! tokio + reqwest, mimalloc), run as a client child beside goodput and the
//! floor, measured exactly as they are (`wait4` of its process) and joined
//! with the reference server's log.
//!
//! How it is run (all offline):
//! - `--backend vllm` (`/v1/completions`, as goodput's client-cost runs) or
//!   `--backend openai-chat` (`/v1/chat/completions`, where the reference
//!   server, like vLLM, sends a role-only chunk first);
//! - `--dataset-name random --random-input-len 32 --random-output-len N
//!   --ignore-eos`, `--max-concurrency` = streams, `--num-prompts` = streams ×
//!   requests per stream, `--request-rate inf`;
//! - `--tokenizer DIR`, a directory holding a small word-level
//!   `tokenizer.json` the bench writes ([`write_tokenizer`]): no download, and
//!   the leanest tokenizer vllm-bench can load, so its start-up is its own;
//! - `--request-id-prefix vllm-bench-`: it sends `x-request-id:
//!   vllm-bench-<i>` for dataset request `i`, the key the server's log is
//!   joined on (the integer after the last `-`, as for goodput);
//! - `--save-result --save-detailed`: its result JSON then holds, per request
//!   in dataset order, `start_times` (s since its benchmark start, taken right
//!   before the request is handed to reqwest), `ttfts` (s, from right before
//!   `send`, connection set-up included), `itls` (s, gaps between the chunks
//!   it counted) and `errors`.
//!
//! Its TTFT is its own definition: the first SSE chunk with a non-empty
//! `choices` array. On completions that is the first token. On chat it is the
//! role-only chunk (`delta: {"role": "assistant", "content": ""}`), which the
//! reference server writes with the response head, before the first token:
//! with `--vllm-bench-backend chat` the TTFT error table shows it (TTFT about
//! the loopback time, against the server's 100 ms), and its event count is
//! one more than the server's tokens, so those requests are left out of ITL.
//!
//! What the join cannot match: it reports times relative to its own
//! `Instant` origin and never prints that origin on `CLOCK_MONOTONIC`, so the
//! client-side parts of the TTFT error decomposition (send delay, first-event
//! delay) are missing; and a request it retried after a connection error
//! reaches the server twice under one id (the last one logged is joined).

use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::child::ChildCommand;
use crate::join::ClientRecord;

/// The `x-request-id` prefix vllm-bench is given: `vllm-bench-<i>`.
pub const REQUEST_ID_PREFIX: &str = "vllm-bench-";

/// Where the binary is looked for when neither `--vllm-bench` nor
/// `$VLLM_BENCH` names it: the target directory the build instructions use.
pub const DEFAULT_PATH: &str = "/work/tgt-vllmbench/release/vllm-bench";

/// How to build it, for the error when it is missing.
pub const BUILD_HINT: &str = "build it from its public source (github.com/vllm-project/vllm-bench, \
     archived at commit f313182): `git clone https://github.com/vllm-project/vllm-bench && cd vllm-bench \
     && CARGO_TARGET_DIR=/work/tgt-vllmbench cargo build --release --locked`, then pass \
     --vllm-bench PATH or set VLLM_BENCH";

/// Which API vllm-bench is pointed at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Api {
    /// `/v1/completions` (`--backend vllm`): the endpoint goodput uses.
    #[default]
    Completions,
    /// `/v1/chat/completions` (`--backend openai-chat`): its TTFT counts the
    /// role-only first chunk.
    Chat,
}

/// The binary: `explicit`, else `$VLLM_BENCH`, else [`DEFAULT_PATH`] when it
/// exists; `None` when none of them is there.
pub fn locate(explicit: Option<&Path>) -> Option<PathBuf> {
    let candidate = explicit
        .map(Path::to_path_buf)
        .or_else(|| std::env::var_os("VLLM_BENCH").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from(DEFAULT_PATH));
    candidate.is_file().then_some(candidate)
}

/// The binary [`locate`] found, or an error that says how to build it.
pub fn require(binary: Option<&Path>) -> anyhow::Result<&Path> {
    binary.with_context(|| {
        format!(
            "the vllm-bench client was asked for but its binary was not found (looked at \
             --vllm-bench, $VLLM_BENCH, {DEFAULT_PATH}): {BUILD_HINT}"
        )
    })
}

/// The result JSON of run `label` in `work_dir`.
pub fn result_path(work_dir: &Path, label: &str) -> PathBuf {
    work_dir.join(format!("{label}.vllm-bench.json"))
}

/// Writes the word-level `tokenizer.json` into `dir/vllm-bench-tokenizer/`
/// and returns that directory: 1,000 words `w0` … `w999` split on
/// whitespace, `[UNK]` a special token (so the random dataset never samples
/// it). A prompt of 32 of its tokens is 32 words, which is what the reference
/// server counts as prompt tokens.
pub fn write_tokenizer(dir: &Path) -> anyhow::Result<PathBuf> {
    let dir = dir.join("vllm-bench-tokenizer");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut vocab = serde_json::Map::new();
    vocab.insert("[UNK]".into(), 0.into());
    for i in 0..1000u32 {
        vocab.insert(format!("w{i}"), (i + 1).into());
    }
    let tokenizer = serde_json::json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": [{
            "id": 0, "content": "[UNK]", "single_word": false, "lstrip": false,
            "rstrip": false, "normalized": false, "special": true
        }],
        "normalizer": null,
        "pre_tokenizer": {"type": "WhitespaceSplit"},
        "post_processor": null,
        "decoder": null,
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "[UNK]"},
    });
    let path = dir.join("tokenizer.json");
    std::fs::write(&path, tokenizer.to_string())
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(dir)
}

/// What one vllm-bench run is asked to do.
#[derive(Debug, Clone, Copy)]
pub struct Load {
    /// `--max-concurrency`.
    pub streams: usize,
    /// `--num-prompts`.
    pub requests: usize,
    /// `--random-output-len` (with `--ignore-eos`).
    pub tokens: u64,
    /// Which endpoint.
    pub api: Api,
}

/// The command of run `label` of vllm-bench (`program`, when found) against
/// `url`, its tokenizer and result in `work_dir`.
pub fn command(
    program: Option<&Path>,
    work_dir: &Path,
    label: &str,
    url: &str,
    load: Load,
) -> anyhow::Result<ChildCommand> {
    let program = require(program)?.to_path_buf();
    let tokenizer = write_tokenizer(work_dir)?;
    let result = result_path(work_dir, label);
    if result.exists() {
        std::fs::remove_file(&result)
            .with_context(|| format!("removing old {}", result.display()))?;
    }
    let file_name = result
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .context("result path without a file name")?;
    let backend = match load.api {
        Api::Completions => "vllm",
        Api::Chat => "openai-chat",
    };
    let args = [
        "--backend",
        backend,
        "--base-url",
        url,
        "--model",
        "ref",
        "--tokenizer",
        &tokenizer.display().to_string(),
        "--dataset-name",
        "random",
        "--random-input-len",
        "32",
        "--random-output-len",
        &load.tokens.to_string(),
        "--ignore-eos",
        "--num-prompts",
        &load.requests.to_string(),
        "--max-concurrency",
        &load.streams.to_string(),
        "--request-rate",
        "inf",
        "--request-id-prefix",
        REQUEST_ID_PREFIX,
        "--disable-tqdm",
        "--save-result",
        "--save-detailed",
        "--result-dir",
        &work_dir.display().to_string(),
        "--result-filename",
        &file_name,
    ]
    .map(str::to_string)
    .to_vec();
    Ok(ChildCommand {
        program,
        args,
        env: Vec::new(),
    })
}

/// Reads a result file of vllm-bench into records.
pub fn read_records(path: &Path) -> anyhow::Result<Vec<ClientRecord>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading vllm-bench's result {}", path.display()))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{}: not JSON", path.display()))?;
    records_from_result(&value).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

/// vllm-bench's detailed result as records in the shape of goodput's: record
/// `i` is dataset request `i` (`x-request-id: vllm-bench-<i>`), `send_s` its
/// `start_times[i]`, `ttft_ms` its TTFT, `event_times_ms` its TTFT followed by
/// the running sum of its ITLs (so event k is its k-th counted chunk, in ms
/// since its TTFT clock started), `ok` when its error is empty.
pub fn records_from_result(result: &serde_json::Value) -> Result<Vec<ClientRecord>, String> {
    let array = |key: &str| {
        result
            .get(key)
            .and_then(serde_json::Value::as_array)
            .ok_or_else(|| {
                format!("no `{key}` array (was vllm-bench run with --save-result --save-detailed?)")
            })
    };
    let (starts, ttfts, itls, errors) = (
        array("start_times")?,
        array("ttfts")?,
        array("itls")?,
        array("errors")?,
    );
    let n = starts.len();
    if ttfts.len() != n || itls.len() != n || errors.len() != n {
        return Err(format!(
            "per-request arrays of different lengths: start_times {n}, ttfts {}, itls {}, errors {}",
            ttfts.len(),
            itls.len(),
            errors.len()
        ));
    }
    (0..n)
        .map(|i| {
            let number = |v: &serde_json::Value, what: &str| {
                v.as_f64()
                    .ok_or_else(|| format!("{what}[{i}] is not a number: {v}"))
            };
            let error = errors[i].as_str().unwrap_or_default();
            let ok = error.is_empty();
            let start = number(&starts[i], "start_times")?;
            let ttft_ms = number(&ttfts[i], "ttfts")? * 1e3;
            let gaps = itls[i]
                .as_array()
                .ok_or_else(|| format!("itls[{i}] is not an array"))?;
            let mut events = Vec::with_capacity(gaps.len() + 1);
            events.push(ttft_ms);
            let mut at = ttft_ms;
            for gap in gaps {
                at += number(gap, "itls")? * 1e3;
                events.push(at);
            }
            let record = serde_json::json!({
                "request_id": i,
                "ok": ok,
                "send_s": start,
                "ttft_ms": ok.then_some(ttft_ms),
                "event_times_ms": ok.then_some(events),
                "error_kind": (!ok).then(|| error_kind(error)),
            });
            serde_json::from_value(record).map_err(|e| format!("request {i}: {e}"))
        })
        .collect()
}

/// A short kind for a vllm-bench error message: its first line, cut at 60
/// characters.
fn error_kind(error: &str) -> String {
    let line = error.lines().next().unwrap_or_default();
    line.chars().take(60).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detailed_result_becomes_records_in_dataset_order() {
        let result = serde_json::json!({
            "start_times": [0.0, 0.002, 0.5],
            "ttfts": [0.1, 0.101, 0.0],
            "itls": [[0.01, 0.011], [0.01, 0.009], []],
            "errors": ["", "", "Stream error: connection reset\n  Caused by: x"],
            "output_lens": [3, 3, 0],
        });
        let records = records_from_result(&result).unwrap();
        assert_eq!(records.len(), 3);
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert_eq!(records[1].request_id, 1);
        assert!(records[1].ok);
        assert!(close(records[1].send_s.unwrap(), 0.002));
        assert!(close(records[1].ttft_ms.unwrap(), 101.0));
        let events = records[0].event_times_ms.as_ref().unwrap();
        assert_eq!(events.len(), 3);
        assert!(close(events[0], 100.0) && close(events[1], 110.0) && close(events[2], 121.0));
        assert!(!records[2].ok);
        assert_eq!(records[2].ttft_ms, None);
        assert_eq!(
            records[2].error_kind.as_deref(),
            Some("Stream error: connection reset")
        );
    }

    #[test]
    fn a_result_without_details_says_what_is_missing() {
        let err = records_from_result(&serde_json::json!({"ttfts": []})).unwrap_err();
        assert!(
            err.contains("start_times") && err.contains("--save-detailed"),
            "{err}"
        );
        let uneven = serde_json::json!({
            "start_times": [0.0], "ttfts": [], "itls": [[]], "errors": [""],
        });
        assert!(records_from_result(&uneven)
            .unwrap_err()
            .contains("different lengths"));
    }
}
