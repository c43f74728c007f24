//! Workload: what to send. Builds each request's prompt and JSON body.
//!
//! Synthetic prompts hit an exact token count under the run's tokenizer:
//! a per-request salt of words (unique by request index, random per seed), so
//! no prefix cache can hit, followed by sentences of words drawn with a
//! frequency skew from [`words`]. Each prompt is checked with the tokenizer
//! and trimmed or extended until its count is exact; the salt counts toward
//! the length. Requests are built lazily, one at a time, so a long run holds
//! no more prompts in memory than are in flight.

pub mod lengths;
pub mod words;

use bytes::Bytes;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::client::Endpoint;
use crate::tokenizer::Tokenizer;
pub use lengths::LengthSpec;

/// Number of salt words at the start of each synthetic prompt.
pub const SALT_WORDS: usize = 5;

/// One request, ready to send.
#[derive(Debug, Clone)]
pub struct PreparedRequest {
    pub id: u64,
    pub warmup: bool,
    pub body: Bytes,
    /// Prompt tokens by the client tokenizer (None with `--tokenizer none`).
    pub prompt_tokens: Option<u32>,
    pub max_tokens: Option<u32>,
    pub stream: bool,
}

/// How requests are shaped: everything needed to rebuild the same prompts.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkloadSpec {
    pub endpoint: Endpoint,
    pub model: String,
    pub input_tokens: LengthSpec,
    pub output_tokens: LengthSpec,
    pub stream: bool,
    /// Send `min_tokens` = `max_tokens` (pins the output length on vLLM/SGLang).
    pub min_tokens: bool,
    /// Send `ignore_eos: true`.
    pub ignore_eos: bool,
    pub seed: u64,
}

/// Builds prompts and bodies; an endless, deterministic sequence for a seed.
pub struct Workload {
    spec: WorkloadSpec,
    tokenizer: Tokenizer,
    rng: StdRng,
    next_id: u64,
}

impl Workload {
    pub fn new(spec: WorkloadSpec, tokenizer: Tokenizer) -> Self {
        let rng = StdRng::seed_from_u64(spec.seed);
        Workload {
            spec,
            tokenizer,
            rng,
            next_id: 0,
        }
    }

    pub fn spec(&self) -> &WorkloadSpec {
        &self.spec
    }

    /// The next request; `warmup` marks it as part of the warm-up phase.
    pub fn next_request(&mut self, warmup: bool) -> PreparedRequest {
        let id = self.next_id;
        self.next_id += 1;
        let input = self.spec.input_tokens.sample(&mut self.rng);
        let output = self.spec.output_tokens.sample(&mut self.rng);
        let (prompt, prompt_tokens) = build_prompt(&self.tokenizer, &mut self.rng, id, input);
        let body = request_body(&self.spec, &prompt, output);
        PreparedRequest {
            id,
            warmup,
            body,
            prompt_tokens,
            max_tokens: Some(output),
            stream: self.spec.stream,
        }
    }
}

/// The JSON body of a completion request.
pub fn request_body(spec: &WorkloadSpec, prompt: &str, max_tokens: u32) -> Bytes {
    let mut body = serde_json::Map::new();
    body.insert("model".into(), spec.model.clone().into());
    match spec.endpoint {
        Endpoint::Chat => {
            body.insert(
                "messages".into(),
                serde_json::json!([{"role": "user", "content": prompt}]),
            );
        }
        Endpoint::Completions => {
            body.insert("prompt".into(), prompt.into());
        }
    }
    body.insert("max_tokens".into(), max_tokens.into());
    if spec.min_tokens {
        body.insert("min_tokens".into(), max_tokens.into());
    }
    if spec.ignore_eos {
        body.insert("ignore_eos".into(), true.into());
    }
    body.insert("stream".into(), spec.stream.into());
    if spec.stream {
        body.insert(
            "stream_options".into(),
            serde_json::json!({"include_usage": true}),
        );
    }
    Bytes::from(serde_json::to_vec(&body).unwrap_or_default())
}

fn pick_word<R: Rng>(rng: &mut R) -> &'static str {
    let w = words::words();
    // Squaring a uniform draw skews toward the frequent words at the head of
    // the list, which reads more like text than a flat draw.
    let u: f64 = rng.random();
    w[((u * u) * w.len() as f64) as usize % w.len()]
}

/// Build a prompt of exactly `target` tokens (when the tokenizer counts).
/// Returns the text and its token count.
pub fn build_prompt<R: Rng>(
    tokenizer: &Tokenizer,
    rng: &mut R,
    id: u64,
    target: u32,
) -> (String, Option<u32>) {
    let w = words::words();
    let target = target.max(1) as usize;
    let mut parts: Vec<&'static str> = Vec::with_capacity(target + target / 8 + 8);
    // Salt: the request index in base len(words), then random words.
    let mut rest = id;
    for i in 0..SALT_WORDS.min(target) {
        if i < 2 {
            parts.push(w[(rest % w.len() as u64) as usize]);
            rest /= w.len() as u64;
        } else {
            parts.push(w[rng.random_range(0..w.len())]);
        }
    }
    let mut sentence_left = rng.random_range(6..18);
    while parts.len() < target {
        if sentence_left == 0 {
            parts.push(".");
            sentence_left = rng.random_range(6..18);
        } else {
            parts.push(pick_word(rng));
            sentence_left -= 1;
        }
    }
    let mut text = join(&parts);
    let Some(mut count) = tokenizer.count(&text) else {
        return (text, None);
    };
    // Words are single tokens, so the count is exact by construction; check
    // and repair in case a boundary merges.
    let mut guard = 0;
    while count != target && guard < 64 {
        guard += 1;
        if count > target && parts.len() > 1 {
            parts.pop();
        } else {
            parts.push(pick_word(rng));
        }
        text = join(&parts);
        count = tokenizer.count(&text).unwrap_or(count);
    }
    (text, Some(count as u32))
}

fn join(parts: &[&str]) -> String {
    let mut s = String::with_capacity(parts.len() * 7);
    for (i, p) in parts.iter().enumerate() {
        if i > 0 && *p != "." {
            s.push(' ');
        }
        s.push_str(p);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(endpoint: Endpoint) -> WorkloadSpec {
        WorkloadSpec {
            endpoint,
            model: "m".into(),
            input_tokens: LengthSpec::Fixed(100),
            output_tokens: LengthSpec::Fixed(7),
            stream: true,
            min_tokens: true,
            ignore_eos: true,
            seed: 42,
        }
    }

    #[test]
    fn prompts_have_exact_token_counts() {
        let tok = Tokenizer::from_spec("tiktoken:o200k_base").unwrap();
        let mut rng = StdRng::seed_from_u64(7);
        for (id, n) in [
            (0u64, 1u32),
            (1, 3),
            (2, 5),
            (3, 6),
            (4, 64),
            (5, 1000),
            (6, 4096),
        ] {
            let (text, count) = build_prompt(&tok, &mut rng, id, n);
            assert_eq!(count, Some(n), "{text}");
            assert_eq!(tok.count(&text), Some(n as usize));
        }
        let cl = Tokenizer::from_spec("tiktoken:cl100k_base").unwrap();
        let (text, count) = build_prompt(&cl, &mut rng, 9, 300);
        assert_eq!((count, cl.count(&text)), (Some(300), Some(300)));
    }

    #[test]
    fn prompts_start_with_a_unique_salt_and_read_like_text() {
        let tok = Tokenizer::from_spec("tiktoken:o200k_base").unwrap();
        let mut wl = Workload::new(spec(Endpoint::Completions), tok);
        let mut salts = std::collections::HashSet::new();
        for _ in 0..500 {
            let r = wl.next_request(false);
            let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
            let prompt = v["prompt"].as_str().unwrap().to_string();
            let salt: Vec<&str> = prompt.split(' ').take(SALT_WORDS).collect();
            assert!(salts.insert(salt.join(" ")), "salt repeated");
            let distinct: std::collections::HashSet<&str> = prompt.split(' ').collect();
            assert!(distinct.len() > 30, "{prompt}");
            assert!(prompt.contains('.'));
        }
    }

    #[test]
    fn same_seed_same_requests() {
        let tok = Tokenizer::from_spec("tiktoken:o200k_base").unwrap();
        let mut a = Workload::new(spec(Endpoint::Chat), tok.clone());
        let mut b = Workload::new(spec(Endpoint::Chat), tok);
        for _ in 0..5 {
            assert_eq!(a.next_request(false).body, b.next_request(false).body);
        }
    }

    #[test]
    fn body_pins_output_length() {
        let body = request_body(&spec(Endpoint::Chat), "hi", 7);
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["messages"][0]["content"], "hi");
        assert_eq!(
            (v["max_tokens"].as_u64(), v["min_tokens"].as_u64()),
            (Some(7), Some(7))
        );
        assert_eq!(v["ignore_eos"], true);
        assert_eq!(v["stream_options"]["include_usage"], true);
        let mut s = spec(Endpoint::Completions);
        s.min_tokens = false;
        s.ignore_eos = false;
        let v: serde_json::Value = serde_json::from_slice(&request_body(&s, "hi", 7)).unwrap();
        assert!(v.get("min_tokens").is_none() && v.get("ignore_eos").is_none());
        assert_eq!(v["prompt"], "hi");
    }
}
