//! The model's own tokenizer through the server, where vLLM would load it
//! by name and no local copy is found: vLLM and SGLang serve `/tokenize`
//! (`{"prompt": …}` → `{"count": …}`), llama.cpp serves it too
//! (`{"content": …}` → `{"tokens": […]}`), and so does `goodput sim`.
//!
//! It counts only, and only before the run: the prompts goodput builds to
//! exact lengths (the random, prefix-repetition and sonnet datasets) are
//! built with it ([`Shape::prompts`]), then written as a dataset the run
//! reads in order. The run itself counts with goodput's own tokenizer and
//! the server's usage, as it would without it: a count per request must
//! not cost a round trip. Prompt tokens are counted without special tokens
//! (`add_special_tokens: false`), as vLLM's datasets count them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

use goodput_core::load::TextBuilder;
use goodput_core::request::{Client, ClientOptions};
use goodput_core::tokenizer::Tokenizer;
use goodput_core::words::words;

/// Counts asked at once while learning the word list's costs.
const AT_ONCE: usize = 16;

/// How a server's `/tokenize` is asked.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Dialect {
    /// vLLM, SGLang, `goodput sim`: `prompt` in, `count` out.
    Vllm,
    /// llama.cpp: `content` in, the `tokens` list out.
    Llama,
}

struct Server {
    runtime: tokio::runtime::Runtime,
    client: Client,
    model: String,
    dialect: Dialect,
    /// Counts already asked (the word list's, learnt up front).
    known: Mutex<HashMap<String, usize>>,
}

async fn ask(client: &Client, model: &str, dialect: Dialect, text: &str) -> Option<usize> {
    let body = match dialect {
        Dialect::Vllm => json!({"model": model, "prompt": text, "add_special_tokens": false}),
        Dialect::Llama => json!({"content": text, "add_special": false}),
    };
    let body = Bytes::from(body.to_string());
    let (status, answer) = client.post_path("/tokenize", body, "tokenize").await.ok()?;
    if status != 200 {
        return None;
    }
    let v: Value = serde_json::from_slice(&answer).ok()?;
    match dialect {
        Dialect::Vllm => v["count"].as_u64().map(|c| c as usize),
        Dialect::Llama => v["tokens"].as_array().map(Vec::len),
    }
}

impl Server {
    fn count(&self, text: &str) -> Option<usize> {
        let known = self.known.lock().ok()?.get(text).copied();
        known.or_else(|| {
            self.runtime
                .block_on(ask(&self.client, &self.model, self.dialect, text))
        })
    }

    /// The costs of the word list's words, as the prompt builder learns
    /// them (" word" each), asked [`AT_ONCE`] at a time.
    fn learn_words(&self) -> Result<(), String> {
        let texts: Vec<String> = words()
            .iter()
            .map(|w| format!(" {w}"))
            .chain([" the.".to_string(), " the".to_string()])
            .collect();
        let chunk = texts.len().div_ceil(AT_ONCE);
        let counts = self.runtime.block_on(async {
            let mut asks = tokio::task::JoinSet::new();
            for part in texts.chunks(chunk) {
                let (part, client) = (part.to_vec(), self.client.clone());
                let (model, dialect) = (self.model.clone(), self.dialect);
                asks.spawn(async move {
                    let mut out = Vec::with_capacity(part.len());
                    for t in part {
                        let n = ask(&client, &model, dialect, &t).await;
                        out.push((t, n));
                    }
                    out
                });
            }
            let mut all = Vec::with_capacity(texts.len());
            while let Some(done) = asks.join_next().await {
                all.extend(done.unwrap_or_default());
            }
            all
        });
        let mut known = self.known.lock().map_err(|e| e.to_string())?;
        if counts.len() < texts.len() {
            return Err("the server's /tokenize stopped answering".into());
        }
        for (text, count) in counts {
            let count = count
                .ok_or_else(|| format!("the server's /tokenize stopped answering (at {text:?})"))?;
            known.insert(text, count);
        }
        Ok(())
    }
}

/// A client of the server for asking it things before the run, and the
/// runtime that drives it from this thread.
pub(super) fn blocking_client(
    options: ClientOptions,
) -> Result<(tokio::runtime::Runtime, Client), String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let clock = goodput_core::request::RunClock::start();
    let client = runtime
        .block_on(Client::new(options, clock))
        .map_err(|e| e.to_string())?;
    Ok((runtime, client))
}

/// The server's tokenizer for `model`, through its `/tokenize`; `Err` says
/// why there is none (no such route, or no answer).
pub fn connect(options: ClientOptions, model: &str) -> Result<Tokenizer, String> {
    let (runtime, client) = blocking_client(options)?;
    let probe = "Pick as many lines as you can";
    let dialect = [Dialect::Vllm, Dialect::Llama]
        .into_iter()
        .find(|&d| {
            runtime
                .block_on(ask(&client, model, d, probe))
                .is_some_and(|n| n > 0)
        })
        .ok_or("the server answers no /tokenize")?;
    let server = Server {
        runtime,
        client,
        model: model.to_string(),
        dialect,
        known: Mutex::new(HashMap::new()),
    };
    server.learn_words()?;
    let server = Arc::new(server);
    Ok(Tokenizer::counted_by(model, move |text| server.count(text)))
}

/// Prompts of exact lengths under a tokenizer (the server's): vLLM's
/// `random` (one shared prefix, if any, and a random part each) and
/// `prefix_repetition` (`prefixes` prefixes, taken in turn, each followed
/// by a suffix of its own).
#[derive(Debug, Clone, PartialEq)]
pub struct Shape {
    pub prompts: usize,
    /// Distinct prefixes (0 with no prefix).
    pub prefixes: usize,
    pub prefix_len: u32,
    /// The part after the prefix: its least and most tokens, drawn
    /// uniformly between them (inclusive) for each prompt.
    pub input: (u32, u32),
    /// The answer's tokens, drawn as `input` is.
    pub output: (u32, u32),
    pub seed: u64,
}

/// One prompt built: its text and its answer's length.
pub type Built = (String, u32);

impl Shape {
    pub fn prompts(&self, tokenizer: &Tokenizer) -> Result<Vec<Built>, String> {
        let builder = TextBuilder::new(tokenizer.clone());
        builder.check().map_err(|e| e.to_string())?;
        let mut rng = StdRng::seed_from_u64(self.seed);
        let prefixes: Vec<String> = (0..self.prefixes)
            .map(|_| {
                builder
                    .body(&mut rng, "", 0, self.prefix_len)
                    .map(|(t, _)| t)
            })
            .collect::<Result<_, _>>()
            .map_err(|e| e.to_string())?;
        let draw = |rng: &mut StdRng, (lo, hi): (u32, u32)| rng.random_range(lo..=hi.max(lo));
        (0..self.prompts)
            .map(|i| {
                let head = prefixes
                    .get(i % self.prefixes.max(1))
                    .map_or("", String::as_str);
                let head_tokens = if head.is_empty() { 0 } else { self.prefix_len };
                let input = draw(&mut rng, self.input);
                let output = draw(&mut rng, self.output);
                let (body, _) = builder
                    .body(&mut rng, head, head_tokens, head_tokens + input)
                    .map_err(|e| e.to_string())?;
                Ok((format!("{head}{body}"), output))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tokenizer unlike goodput's own: every three characters a token
    /// (a word of the list costs one to four, and text does not add up
    /// word by word). The prompts built under it count exactly what was
    /// asked, prefix included, and share the prefix.
    #[test]
    fn prompts_are_exact_under_the_server_s_counts() {
        let thirds = Tokenizer::counted_by("thirds", |t: &str| Some(t.chars().count().div_ceil(3)));
        let shape = Shape {
            prompts: 12,
            prefixes: 1,
            prefix_len: 40,
            input: (100, 100),
            output: (8, 16),
            seed: 3,
        };
        let built = shape.prompts(&thirds).unwrap();
        assert_eq!(built.len(), 12);
        let prefix: String = built[0].0.chars().take(60).collect();
        for (text, output) in &built {
            let n = thirds.count(text).unwrap() as u32;
            assert_eq!(n, 140, "{text}");
            assert!((8..=16).contains(output));
            assert!(text.starts_with(&prefix), "one shared prefix");
        }
        let again = shape.prompts(&thirds).unwrap();
        assert_eq!(built, again, "the seed decides");
    }
}
