//! goodput-vllm: `vllm bench serve`'s command line, read as vLLM reads it
//! and turned into a `goodput run` command line.
//!
//! The drop-in's whole contract with the rest of goodput is one value, a
//! [`Plan`]: the `goodput run` argv to parse, the prompts built here to
//! write as a dataset (sonnet, spec_bench, random-rerank, a Hugging Face
//! dataset's local files), and what vLLM's result file needs that a run
//! does not carry. There is no second executor: the binary parses the argv
//! with its own parser and runs it as any run, so every figure of
//! `goodput bench serve` comes from the same metrics path as `goodput run`.
//!
//! - [`cli`]'s [`VllmServeArgs`]: every flag of vLLM's parser, with vLLM's
//!   names, types and defaults; [`with_config`] reads `--config FILE.yaml`.
//! - [`translate()`]: the flags into a [`Plan`], refusing by name, before any
//!   request, each flag goodput cannot honour.
//! - The prompts vLLM's datasets build, where goodput's own workload has no
//!   equivalent: built here with the run's tokenizer, or through the
//!   server's `/tokenize` ([`ByServer`]).
//!
//! Errors are plain sentences (`String`): each names the flag and says what
//! would be valid; the binary prints them as usage errors.

#![deny(missing_docs)]

mod by_server;
pub mod cli;
mod config;
mod datasets;
mod hf;
mod multimodal;
mod questions;
mod refused;
mod rerank;
mod result_file;
mod server_tokens;
mod sonnet;
mod template;
mod translate;

use std::path::Path;

pub use by_server::build_by_server;
pub use cli::{as_vllm_reads_it, BenchArgs, BenchCommand, VllmServeArgs};
pub use config::with_config;
pub use result_file::write_result;
pub use server_tokens::connect;
pub use sonnet::counted_note;
pub use template::apply as apply_template;
pub use translate::{no_local_tokenizer, translate, ByServer, Plan, SaveTo};

/// A prompt built here: its answer's length where it sets one, a system
/// prompt before it, an image after it (a chat request's).
#[derive(Debug, Clone, Default)]
pub struct Row {
    /// The prompt's text (the user message of a chat request).
    pub prompt: String,
    /// The answer's length in tokens, where the dataset sets it.
    pub output: Option<u32>,
    /// A system prompt sent before the prompt.
    pub system: Option<String>,
    /// An image file's bytes (PNG, JPEG, GIF or WebP).
    pub image: Option<Vec<u8>>,
}

/// Prompts whose answers' length the run's flags set.
pub(crate) fn rows(prompts: Vec<String>) -> Vec<Row> {
    prompts
        .into_iter()
        .map(|prompt| Row {
            prompt,
            ..Row::default()
        })
        .collect()
}

/// An image's file extension, from its first bytes: PNG, JPEG, GIF or
/// WebP, the formats a chat request's data URL carries.
fn image_extension(b: &[u8]) -> Option<&'static str> {
    match b {
        [0x89, b'P', b'N', b'G', ..] => Some("png"),
        [0xff, 0xd8, ..] => Some("jpg"),
        [b'G', b'I', b'F', ..] => Some("gif"),
        [b'R', b'I', b'F', b'F', _, _, _, _, b'W', b'E', b'B', b'P', ..] => Some("webp"),
        _ => None,
    }
}

/// Prompts built here written as the JSONL dataset `goodput run` reads in
/// order: one `{"prompt": …, "output_tokens": …}` a line (or `messages`
/// with the system prompt first; an image written beside the file and
/// named by `images`).
pub fn write_prompts(path: &Path, prompts: &[Row]) -> Result<(), String> {
    let failed = |p: &Path, e: std::io::Error| format!("writing {}: {e}", p.display());
    let mut text = String::new();
    for (i, r) in prompts.iter().enumerate() {
        let mut row = match &r.system {
            Some(s) => serde_json::json!({ "messages": [
                { "role": "system", "content": s },
                { "role": "user", "content": r.prompt },
            ] }),
            None => serde_json::json!({ "prompt": r.prompt }),
        };
        if let Some(n) = r.output {
            row["output_tokens"] = n.into();
        }
        if let Some(img) = &r.image {
            let ext = image_extension(img).ok_or_else(|| {
                format!(
                    "row {}: its image is no PNG, JPEG, GIF or WebP, which goodput sends as they are (vLLM re-encodes every image as JPEG)",
                    i + 1
                )
            })?;
            let name = format!("image-{i}.{ext}");
            let file = path.with_file_name(&name);
            std::fs::write(&file, img).map_err(|e| failed(&file, e))?;
            row["images"] = serde_json::json!([name]);
        }
        text.push_str(&row.to_string());
        text.push('\n');
    }
    std::fs::write(path, text).map_err(|e| failed(path, e))
}

/// Flags of goodput's synthetic prompts, which a dataset of prompts built
/// here replaces.
pub const SYNTHETIC: [&str; 5] = [
    "--input-tokens",
    "--output-tokens",
    "--prefix-tokens",
    "--prefix-groups",
    "--prefix-choice",
];

/// `argv` without the flags `names` and their values.
pub fn without(argv: &[String], names: &[&str]) -> Vec<String> {
    let mut out = Vec::with_capacity(argv.len());
    let mut skip = false;
    for a in argv {
        if std::mem::take(&mut skip) {
            continue;
        }
        skip = names.contains(&a.as_str());
        if !skip {
            out.push(a.clone());
        }
    }
    out
}
