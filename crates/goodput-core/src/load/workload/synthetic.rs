//! Synthetic prompts of exact token counts: single requests or sessions,
//! with or without shared prefixes.
//!
//! A prompt is laid out as
//!
//! ```text
//! [shared prefix of its group]  [salt]  [body]
//! ```
//!
//! and its input length counts all three. Text comes from
//! [`TextBuilder`], checked by the run's
//! tokenizer until the count is exact.
//!
//! **Cache control.** The salt (`--cache-bust`, the default) makes every
//! prompt unique after its shared prefix, so no prefix cache can hit beyond
//! it: two words from the request id (unique within a run) and three from a
//! per-run nonce mixed with the id. The shared prefix of group `g` is the
//! same text for every prompt of that group in a run, and starts with two
//! words of the run's nonce, so that a second run with the same `--seed` —
//! which reproduces lengths, body text and arrival times — shares no prefix
//! with the first: every run starts with a cold cache. Without a prefix,
//! the salt comes first, so the first KV-cache block already differs.
//!
//! Each request carries `cacheable_tokens`: the leading tokens an earlier
//! request of the run already sent (its group's prefix after the group's
//! first use; a session's history). Summed, that is the most a prefix cache
//! could serve, printed beside what the server reports it served.

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Zipf};
use serde::{Deserialize, Serialize};

use super::prompt::TextBuilder;
use super::source::{FollowUps, Planned, RequestSource};
use crate::request::protocol::{
    request_body, Message, PreparedRequest, Prompt, RequestParams, SessionTurn,
};
use crate::request::record::RequestRecord;
use goodput_common::lengths::LengthSpec;
use goodput_common::tokenizer::Tokenizer;
use goodput_common::units::DurationSpec;
use goodput_common::words::words;

/// Number of salt words after the shared prefix (or first, without one).
pub const SALT_WORDS: usize = 5;

/// Words of the run's nonce at the start of each shared prefix.
const PREFIX_NONCE_WORDS: usize = 2;

/// Multi-turn sessions: each turn resends the conversation so far plus a new
/// user message of `--input-tokens`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionShape {
    /// Turns per session, drawn for each session from the run's seed.
    pub turns: LengthSpec,
    /// Time between a turn's response and the next turn's request.
    pub think_time: DurationSpec,
}

/// How a prompt's shared-prefix group is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum GroupChoice {
    /// Each group equally likely.
    Uniform,
    /// Group `k` (1-based) with probability ∝ 1/k^s: a few hot prefixes.
    Zipf(f64),
    /// Groups in turn: exactly `num-prompts / groups` prompts per group, as
    /// SGLang's generated-shared-prefix dataset lays them out.
    RoundRobin,
}

impl fmt::Display for GroupChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GroupChoice::Uniform => write!(f, "uniform"),
            GroupChoice::Zipf(s) => write!(f, "zipf:{s}"),
            GroupChoice::RoundRobin => write!(f, "round-robin"),
        }
    }
}

impl FromStr for GroupChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "uniform" => Ok(GroupChoice::Uniform),
            "round-robin" => Ok(GroupChoice::RoundRobin),
            other => match other.strip_prefix("zipf:").map(str::parse::<f64>) {
                Some(Ok(x)) if x.is_finite() && x > 0.0 && x <= 10.0 => Ok(GroupChoice::Zipf(x)),
                _ => Err(format!(
                    "invalid group choice '{s}': valid values are uniform, round-robin, zipf:S (0 < S <= 10)"
                )),
            },
        }
    }
}

impl From<GroupChoice> for String {
    fn from(g: GroupChoice) -> String {
        g.to_string()
    }
}

impl TryFrom<String> for GroupChoice {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

/// Shared prefixes: `groups` distinct prefixes of `tokens` tokens each.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PrefixSpec {
    /// Tokens in each prefix (part of the prompt's input length).
    pub tokens: u32,
    /// Distinct prefixes: the groups prompts are spread over.
    pub groups: u32,
    /// How each prompt's group is chosen.
    pub choice: GroupChoice,
}

/// How synthetic requests are shaped: everything needed to rebuild the same
/// prompts (the salt nonce aside, which differs per run by design).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SyntheticSpec {
    /// Prompt length in tokens, shared prefix and salt included; in a
    /// session, the length of each turn's new user message.
    pub input_tokens: LengthSpec,
    /// Tokens to generate per request (its `max_tokens`).
    pub output_tokens: LengthSpec,
    /// Seed of the lengths, the text, the prefix groups and the sessions'
    /// shapes: the same seed builds the same prompts (the per-run nonce aside).
    pub seed: u64,
    /// Multi-turn sessions; `None`: every request is a single turn.
    pub sessions: Option<SessionShape>,
    /// Shared prefixes by group; `None`: no prompt shares a prefix.
    #[serde(default)]
    pub prefix: Option<PrefixSpec>,
    /// A unique salt after the shared prefix of every prompt.
    #[serde(default = "yes")]
    pub cache_bust: bool,
    /// Inputs per pooling request (`--batch-size`; embeddings, rerank, score).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<u32>,
    /// Synthetic images per chat request (`--images`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<goodput_common::image::ImageSpec>,
}

fn yes() -> bool {
    true
}

impl SyntheticSpec {
    /// Fixed-length single prompts with a salt and no shared prefix.
    pub fn new(input_tokens: LengthSpec, output_tokens: LengthSpec, seed: u64) -> Self {
        SyntheticSpec {
            input_tokens,
            output_tokens,
            seed,
            sessions: None,
            prefix: None,
            cache_bust: true,
            batch: None,
            images: None,
        }
    }

    /// Tokens every prompt has before its body: the shared prefix and the salt.
    pub fn head_tokens(&self) -> u32 {
        self.prefix.as_ref().map_or(0, |p| p.tokens)
            + if self.cache_bust {
                SALT_WORDS as u32
            } else {
                0
            }
    }
}

/// An endless, deterministic sequence of synthetic requests for a seed.
pub struct SyntheticSource {
    builder: Arc<Builder>,
    rng: StdRng,
    next_session: u64,
    groups: Option<GroupPicker>,
}

/// What building a prompt needs, shared with the session follow-ups.
struct Builder {
    spec: SyntheticSpec,
    params: RequestParams,
    text: TextBuilder,
    salt_nonce: u64,
    ids: AtomicU64,
    /// Each group's prefix text and exact token count, built on first use.
    prefixes: Mutex<HashMap<u32, Arc<(String, u32)>>>,
}

/// Draws prompts' prefix groups.
struct GroupPicker {
    groups: u32,
    choice: GroupChoice,
    zipf: Option<Zipf<f64>>,
    rng: StdRng,
    next: u32,
}

impl GroupPicker {
    fn pick(&mut self) -> u32 {
        match (self.choice, &self.zipf) {
            (GroupChoice::RoundRobin, _) => {
                let g = self.next;
                self.next = (self.next + 1) % self.groups;
                g
            }
            (GroupChoice::Zipf(_), Some(z)) => (z.sample(&mut self.rng) as u32)
                .clamp(1, self.groups)
                .saturating_sub(1),
            _ => self.rng.random_range(0..self.groups),
        }
    }
}

impl SyntheticSource {
    /// `salt_nonce` must differ between runs (the run id does).
    pub fn new(
        spec: SyntheticSpec,
        params: RequestParams,
        tokenizer: Tokenizer,
        salt_nonce: u64,
    ) -> Self {
        let rng = StdRng::seed_from_u64(spec.seed);
        let groups = spec.prefix.as_ref().map(|p| GroupPicker {
            groups: p.groups.max(1),
            choice: p.choice,
            zipf: match p.choice {
                GroupChoice::Zipf(s) => Zipf::new(p.groups.max(1) as f64, s).ok(),
                _ => None,
            },
            rng: StdRng::seed_from_u64(spec.seed ^ 0x6a09_e667_f3bc_c908),
            next: 0,
        });
        SyntheticSource {
            builder: Arc::new(Builder {
                spec,
                params,
                text: TextBuilder::new(tokenizer),
                salt_nonce,
                ids: AtomicU64::new(0),
                prefixes: Mutex::new(HashMap::new()),
            }),
            rng,
            next_session: 0,
            groups,
        }
    }
}

impl RequestSource for SyntheticSource {
    fn next(&mut self) -> Option<Planned> {
        let b = &self.builder;
        let id = b.ids.fetch_add(1, Relaxed);
        let input = b.spec.input_tokens.sample(&mut self.rng);
        let output = b.spec.output_tokens.sample(&mut self.rng);
        let group = self.groups.as_mut().map(GroupPicker::pick);
        let (prompt, prompt_tokens, cacheable_tokens) = b.prompt(&mut self.rng, id, input, group);
        let mut request = PreparedRequest {
            id,
            prompt_tokens,
            cacheable_tokens,
            max_tokens: Some(output),
            stream: b.params.stream,
            output_check: b.params.output.clone(),
            ..Default::default()
        };
        match &b.spec.sessions {
            None => request.body = request_body(&b.params, Prompt::Text(&prompt), output),
            Some(shape) => {
                let session_id = self.next_session;
                self.next_session += 1;
                let turns = shape.turns.sample(&mut self.rng);
                let history = vec![Message::user(prompt)];
                request.body = request_body(&b.params, Prompt::Messages(&history), output);
                request.session = Some(Box::new(SessionTurn {
                    session_id,
                    turn: 0,
                    turns,
                    history,
                }));
            }
        }
        Some(Planned { request, at: None })
    }

    fn follow_ups(&self) -> Option<Arc<dyn FollowUps>> {
        self.builder
            .spec
            .sessions
            .as_ref()
            .map(|_| self.builder.clone() as Arc<dyn FollowUps>)
    }
}

impl FollowUps for Builder {
    fn next_turn(
        &self,
        prev: &PreparedRequest,
        rec: &RequestRecord,
    ) -> Option<(PreparedRequest, Duration)> {
        let shape = self.spec.sessions.as_ref()?;
        let turn = prev.session.as_ref()?;
        if !rec.ok() || turn.turn + 1 >= turn.turns {
            return None;
        }
        // Each turn's draws come from (seed, session, turn): the same
        // conversation shape whatever order sessions finish in.
        let mut rng = StdRng::seed_from_u64(
            self.spec.seed
                ^ turn.session_id.wrapping_mul(0x9e37_79b9_7f4a_7c15)
                ^ u64::from(turn.turn + 1).wrapping_mul(0xc2b2_ae3d_27d4_eb4f),
        );
        let id = self.ids.fetch_add(1, Relaxed);
        let input = self.spec.input_tokens.sample(&mut rng);
        let output = self.spec.output_tokens.sample(&mut rng);
        let think = shape.think_time.sample(&mut rng);
        // A follow-up message has its own salt but no shared prefix: the
        // conversation before it is the shared part.
        let (message, message_tokens, _) = self.prompt(&mut rng, id, input, None);
        let mut history = turn.history.clone();
        history.push(Message::assistant(rec.output_text.clone()));
        let before: Option<u32> = self.text.tokenizer().is_enabled().then(|| {
            history
                .iter()
                .map(|m| self.text.count(&m.content).unwrap_or(0))
                .sum()
        });
        history.push(Message::user(message));
        let request = PreparedRequest {
            id,
            warmup: prev.warmup,
            body: request_body(&self.params, Prompt::Messages(&history), output),
            prompt_tokens: before.zip(message_tokens).map(|(a, b)| a + b),
            cacheable_tokens: before.unwrap_or(0),
            reference: None,
            max_tokens: Some(output),
            stream: self.params.stream,
            output_check: self.params.output.clone(),
            session: Some(Box::new(SessionTurn {
                session_id: turn.session_id,
                turn: turn.turn + 1,
                turns: turn.turns,
                history,
            })),
            ..Default::default()
        };
        Some((request, think))
    }
}

fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

impl Builder {
    /// A prompt of exactly `target` tokens (raised to the shared prefix and
    /// the salt when shorter): the group's prefix, this request's salt, a body. Returns
    /// the text, its token count and its cacheable leading tokens.
    fn prompt(
        &self,
        rng: &mut StdRng,
        id: u64,
        target: u32,
        group: Option<u32>,
    ) -> (String, Option<u32>, u32) {
        let mut head = String::new();
        let mut head_tokens = 0u32;
        let mut cacheable = 0u32;
        if let Some(g) = group {
            let (prefix, first_use) = self.prefix(g);
            head.push_str(&prefix.0);
            head_tokens = prefix.1;
            if !first_use {
                cacheable = prefix.1;
            }
        }
        if self.spec.cache_bust {
            head_tokens += push_salt(&mut head, self.salt_nonce, id, target, group.is_some());
        }
        let target = target.max(head_tokens).max(1);
        // Exact under every tokenizer the run was prepared with (checked
        // then); should a count still be missed, the closest text goes out
        // with its true count.
        let (body, count) = self.text.closest(rng, &head, head_tokens, target);
        head.push_str(&body);
        (head, count, cacheable)
    }

    /// Group `g`'s prefix text and exact count, and whether this is its
    /// first use in the run (nothing to reuse yet).
    fn prefix(&self, g: u32) -> (Arc<(String, u32)>, bool) {
        let mut map = self.prefixes.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = map.get(&g) {
            return (p.clone(), false);
        }
        let tokens = self.spec.prefix.as_ref().map_or(0, |p| p.tokens);
        // The run's nonce words first (a cold cache for every run), then
        // text from (seed, group): the same for every prompt of the group.
        let w = words();
        let n = w.len() as u64;
        let mut h = mix(self.salt_nonce ^ 0x005e_ed0f_9e0f_1c5e);
        let mut head = String::new();
        for _ in 0..PREFIX_NONCE_WORDS.min(tokens as usize) {
            if !head.is_empty() {
                head.push(' ');
            }
            head.push_str(w[(h % n) as usize]);
            h = mix(h);
        }
        let head_tokens = self.text.count(&head).unwrap_or(PREFIX_NONCE_WORDS as u32);
        let mut rng = StdRng::seed_from_u64(mix(self.spec.seed ^ mix(u64::from(g) + 1)));
        let (body, count) = self.text.closest(&mut rng, &head, head_tokens, tokens);
        head.push_str(&body);
        let p = Arc::new((head, count.unwrap_or(tokens)));
        map.insert(g, p.clone());
        (p, true)
    }
}

/// Append request `id`'s salt to `head` (after a space when `head` is not
/// empty) and return its nominal token count. Without a prefix, a prompt
/// shorter than the salt keeps the salt's first words (the first two are
/// the unique request id).
pub(crate) fn push_salt(
    head: &mut String,
    nonce: u64,
    id: u64,
    target: u32,
    prefixed: bool,
) -> u32 {
    let n = if prefixed {
        SALT_WORDS
    } else {
        SALT_WORDS.min(target.max(1) as usize)
    };
    for w in salt(nonce, id).iter().take(n) {
        if !head.is_empty() {
            head.push(' ');
        }
        head.push_str(w);
    }
    n as u32
}

pub(crate) fn mix_seed(x: u64) -> u64 {
    mix(x)
}

/// The salt words of request `id` in the run with `nonce`.
pub fn salt(nonce: u64, id: u64) -> [&'static str; SALT_WORDS] {
    let w = words();
    let n = w.len() as u64;
    let mut h = mix(nonce ^ mix(id));
    let mut out = [""; SALT_WORDS];
    for (i, slot) in out.iter_mut().enumerate() {
        *slot = if i < 2 {
            // The id in base len(words): unique within a run.
            w[((id / n.pow(i as u32)) % n) as usize]
        } else {
            let word = w[(h % n) as usize];
            h = mix(h);
            word
        };
    }
    out
}

#[cfg(test)]
mod tests;
