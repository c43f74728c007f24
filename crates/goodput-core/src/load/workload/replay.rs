//! Requests from files: a dataset's prompts, a trace's arrivals.
//!
//! Files are read and validated once, before any request
//! ([`super::dataset`], [`super::trace`]); these sources turn their rows
//! into requests for each run.
//!
//! **Datasets** send their rows' own text. A row's output length is its
//! `output_tokens` (ShareGPT: the reference reply's length), unless
//! `--output-tokens` was given, which then applies to every row. Without
//! `--cache-bust` (the default for datasets) a prompt sent twice is the same
//! text, and its second sending counts as cacheable; with it, a salt goes
//! first. Warm-up requests reuse the selected rows in order, always
//! salted, so they use none of the measured phase's rows and leave no
//! prefix the measured phase could hit.
//!
//! **Traces** give each request its send time (`at_s` / speed) and its
//! lengths. A row with a prompt sends it; a Mooncake row's `hash_ids` become
//! blocks of text, one per id, identical wherever the id repeats, so the
//! trace's prefix sharing replays faithfully (ids seen earlier in the run
//! count as cacheable); any other row gets a synthetic prompt of its input
//! length, salted. Block text mixes in the run's nonce: a second run of the
//! same trace starts with a cold cache, as every run does.

use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::SeedableRng;

use super::dataset::{Dataset, RowPrompt};
use super::prompt::TextBuilder;
use super::source::{FollowUps, Planned, RequestSource};
use super::synthetic::{mix_seed, push_salt};
use super::trace::Trace;
use crate::request::protocol::{request_body, PreparedRequest, Prompt, RequestParams};
use goodput_common::lengths::LengthSpec;

/// What a file's source builds one run's requests with, whatever the
/// file: the request parameters, the prompt text (and its token counts),
/// whether prompts are salted (`--cache-bust`), the workload's seed and
/// the run's nonce.
pub struct BuildContext {
    pub params: RequestParams,
    pub text: TextBuilder,
    pub cache_bust: bool,
    pub seed: u64,
    pub nonce: u64,
}

/// A dataset's rows, in the order the loader chose, once each.
pub struct DatasetSource {
    dataset: Arc<Dataset>,
    params: RequestParams,
    text: TextBuilder,
    output_override: Option<LengthSpec>,
    /// Used when a row gives no output length.
    output_default: LengthSpec,
    cache_bust: bool,
    nonce: u64,
    next: usize,
    rng: StdRng,
    seen: HashSet<u64>,
    warmup_left: u64,
    ids: u64,
}

impl DatasetSource {
    /// The first `n` requests are warm-up: rows reused, salted.
    pub fn with_warmup(mut self, n: u64) -> Self {
        self.warmup_left = n;
        self
    }

    /// The dataset's rows as one run's requests; a row without an output
    /// length gets one drawn from `output_default`, and `output_override`
    /// (`--output-tokens` given) applies to every row.
    pub fn new(
        dataset: Arc<Dataset>,
        output_override: Option<LengthSpec>,
        output_default: LengthSpec,
        build: BuildContext,
    ) -> Self {
        let BuildContext {
            params,
            text,
            cache_bust,
            seed,
            nonce,
        } = build;
        DatasetSource {
            dataset,
            params,
            text,
            output_override,
            output_default,
            cache_bust,
            nonce,
            next: 0,
            rng: StdRng::seed_from_u64(seed ^ 0x3c6e_f372_fe94_f82b),
            seen: HashSet::new(),
            warmup_left: 0,
            ids: 0,
        }
    }
}

fn hash_of<T: Hash + ?Sized>(x: &T) -> u64 {
    let mut h = std::hash::DefaultHasher::new();
    x.hash(&mut h);
    h.finish()
}

impl RequestSource for DatasetSource {
    fn next(&mut self) -> Option<Planned> {
        let rows = &self.dataset.rows;
        let warmup = self.warmup_left > 0 && !rows.is_empty();
        let row = if warmup {
            self.warmup_left -= 1;
            &rows[(self.ids as usize) % rows.len()]
        } else {
            let r = rows.get(self.next)?;
            self.next += 1;
            r
        };
        let id = self.ids;
        self.ids += 1;
        let output = match (&self.output_override, row.output_tokens) {
            (Some(spec), _) => spec.sample(&mut self.rng),
            (None, Some(n)) => n,
            (None, None) => self.output_default.sample(&mut self.rng),
        };
        let mut salt = String::new();
        if self.cache_bust || warmup {
            push_salt(&mut salt, self.nonce, id, u32::MAX, false);
            salt.push(' ');
        }
        let (body, text_for_count) = match &row.prompt {
            RowPrompt::Text(t) => {
                let text = format!("{salt}{t}");
                (
                    request_body(&self.params, Prompt::Text(&text), output),
                    text,
                )
            }
            RowPrompt::Messages(m) => {
                let mut m = m.clone();
                // The salt goes first in the conversation, so no block matches.
                if let Some(first) = m.first_mut() {
                    first.content.insert_str(0, &salt);
                }
                let joined: String = m.iter().map(|m| m.content.as_str()).collect();
                (
                    request_body(&self.params, Prompt::Messages(&m), output),
                    joined,
                )
            }
        };
        let prompt_tokens = if self.cache_bust || warmup {
            self.text.count(&text_for_count)
        } else {
            row.input_tokens
                .or_else(|| self.text.count(&text_for_count))
        };
        // The same text sent again could be served whole from a cache.
        let cacheable = if warmup || self.seen.insert(hash_of(&text_for_count)) {
            0
        } else {
            prompt_tokens.unwrap_or(0)
        };
        let (body, images) = super::inputs::with_row_images(&self.params, body, &row.images);
        Some(Planned {
            request: PreparedRequest {
                id,
                body,
                images,
                prompt_tokens,
                cacheable_tokens: cacheable,
                max_tokens: Some(output),
                stream: self.params.stream,
                output_check: self.params.output.clone(),
                // Warm-up requests are salted copies: not scored.
                reference: (!warmup)
                    .then(|| row.reference.as_deref().map(Into::into))
                    .flatten(),
                ..Default::default()
            },
            at: None,
        })
    }

    fn follow_ups(&self) -> Option<Arc<dyn FollowUps>> {
        None
    }
}

/// A trace's rows at their (scaled) times.
pub struct TraceSource {
    trace: Arc<Trace>,
    params: RequestParams,
    text: TextBuilder,
    speed: f64,
    block_tokens: u32,
    output_override: Option<LengthSpec>,
    cache_bust: bool,
    nonce: u64,
    next: usize,
    rng: StdRng,
    blocks: Blocks,
}

impl TraceSource {
    /// The trace's rows as one run's requests, at their times divided by
    /// `speed`; a Mooncake row's hash ids become blocks of `block_tokens`
    /// tokens, and `output_override` (`--output-tokens` given) applies to
    /// every row.
    pub fn new(
        trace: Arc<Trace>,
        speed: f64,
        block_tokens: u32,
        output_override: Option<LengthSpec>,
        build: BuildContext,
    ) -> Self {
        let BuildContext {
            params,
            text,
            cache_bust,
            seed,
            nonce,
        } = build;
        let blocks_text = text.clone();
        TraceSource {
            trace,
            params,
            text,
            speed,
            block_tokens: block_tokens.max(1),
            output_override,
            cache_bust,
            nonce,
            next: 0,
            rng: StdRng::seed_from_u64(seed ^ 0xbb67_ae85_84ca_a73b),
            blocks: Blocks::new(blocks_text, nonce),
        }
    }
}

/// Prompts made of hash blocks: each id one block of text, the same
/// wherever the id appears in the run, so shared leading ids are
/// byte-identical prefixes (a Mooncake row's, an agent call's).
pub struct Blocks {
    text: TextBuilder,
    nonce: u64,
    seen: HashSet<u64>,
    /// Recently built block texts by (id, tokens) (cleared when large).
    cache: HashMap<(u64, u32), Arc<str>>,
}

/// Block texts kept before the cache is cleared (a few hundred MB at most).
const BLOCK_CACHE: usize = 50_000;

impl Blocks {
    pub fn new(text: TextBuilder, nonce: u64) -> Self {
        Blocks {
            text,
            nonce,
            seen: HashSet::new(),
            cache: HashMap::new(),
        }
    }

    /// Tokens in a prompt [`Blocks::prompt`] built to `nominal` tokens:
    /// exact by construction under the built-in encodings, so not encoded
    /// again; counted under a model's tokenizer; `None` with none.
    pub fn count(&self, text: &str, nominal: u32) -> Option<u32> {
        let tok = self.text.tokenizer();
        if tok.is_model_tokenizer() {
            self.text.count(text)
        } else {
            tok.is_enabled().then_some(nominal)
        }
    }

    /// The text of block `id` (`tokens` tokens by construction under the
    /// built-in encodings), the same wherever the id appears.
    fn block(&mut self, id: u64, tokens: u32) -> Arc<str> {
        if let Some(b) = self.cache.get(&(id, tokens)) {
            return b.clone();
        }
        if self.cache.len() >= BLOCK_CACHE {
            self.cache.clear();
        }
        let mut rng = StdRng::seed_from_u64(mix_seed(id ^ mix_seed(self.nonce)));
        let b: Arc<str> = self.text.nominal(&mut rng, tokens).into();
        self.cache.insert((id, tokens), b.clone());
        b
    }

    /// A prompt of `input_tokens` from blocks `ids` of `block_tokens`
    /// each, in order (the last cut to the length; tokens past the ids
    /// unique text, salted with request `id`), and the leading tokens of
    /// blocks seen before in the run: what a prefix cache could reuse.
    pub fn prompt(
        &mut self,
        ids: impl IntoIterator<Item = u64>,
        block_tokens: u32,
        input_tokens: u32,
        id: u64,
        rng: &mut StdRng,
    ) -> (String, u32) {
        let b = block_tokens.max(1);
        let mut text = String::with_capacity(input_tokens as usize * 7);
        let mut left = input_tokens;
        let mut cacheable = 0u32;
        let mut still_shared = true;
        for h in ids {
            if left == 0 {
                break;
            }
            let take = left.min(b);
            let seen = !self.seen.insert(h);
            still_shared &= seen;
            if still_shared {
                cacheable += take;
            }
            if !text.is_empty() {
                text.push(' ');
            }
            if take == b {
                text.push_str(&self.block(h, b));
            } else {
                // A last, partial block: the block's own opening words.
                let mut rng = StdRng::seed_from_u64(mix_seed(h ^ mix_seed(self.nonce)));
                text.push_str(&self.text.nominal(&mut rng, take));
            }
            left -= take;
        }
        if left > 0 {
            // Tokens past the hashed blocks (a trace giving floor(n/B) ids):
            // unique text, salted.
            let mut tail = String::new();
            let salt = push_salt(&mut tail, self.nonce, id, left, false);
            if left > salt {
                tail.push(' ');
                tail.push_str(&self.text.nominal(rng, left - salt));
            }
            if !text.is_empty() {
                text.push(' ');
            }
            text.push_str(&tail);
        }
        (text, cacheable)
    }
}

impl RequestSource for TraceSource {
    fn next(&mut self) -> Option<Planned> {
        let trace = self.trace.clone();
        let row = trace.rows.get(self.next)?;
        let id = self.next as u64;
        self.next += 1;
        let output = match &self.output_override {
            Some(spec) => spec.sample(&mut self.rng),
            None => row.output_tokens,
        };
        let (prompt, prompt_tokens, cacheable) = if let Some(p) = &row.prompt {
            let mut head = String::new();
            if self.cache_bust {
                push_salt(&mut head, self.nonce, id, u32::MAX, false);
                head.push(' ');
            }
            let text = format!("{head}{p}");
            let n = self.text.count(&text);
            (text, n, 0)
        } else if !row.hash_ids.is_empty() {
            let (text, cacheable) = self.blocks.prompt(
                row.hash_ids.iter().copied(),
                self.block_tokens,
                row.input_tokens,
                id,
                &mut self.rng,
            );
            // Exact by construction under the built-in encodings (every word
            // one token, blocks joined by spaces; a test checks it): a
            // 10k-token prompt is not encoded again. A model's tokenizer
            // counts it.
            let n = self.blocks.count(&text, row.input_tokens);
            (text, n, cacheable)
        } else {
            let mut head = String::new();
            let salt = if self.cache_bust {
                push_salt(&mut head, self.nonce, id, row.input_tokens, false)
            } else {
                0
            };
            let target = row.input_tokens.max(salt).max(1);
            let (body, n) = self.text.closest(&mut self.rng, &head, salt, target);
            head.push_str(&body);
            (head, n, 0)
        };
        let at = Duration::try_from_secs_f64(row.at_s / self.speed)
            .unwrap_or(goodput_common::units::MAX_DURATION);
        Some(Planned {
            request: PreparedRequest {
                id,
                body: request_body(&self.params, Prompt::Text(&prompt), output),
                prompt_tokens,
                cacheable_tokens: cacheable.min(prompt_tokens.unwrap_or(u32::MAX)),
                max_tokens: Some(output),
                stream: self.params.stream,
                output_check: self.params.output.clone(),
                ..Default::default()
            },
            at: Some(at),
        })
    }

    fn follow_ups(&self) -> Option<Arc<dyn FollowUps>> {
        None
    }
}

#[cfg(test)]
mod tests;
