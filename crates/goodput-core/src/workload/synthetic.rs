//! Synthetic prompts of exact token counts, single-turn or in sessions.
//!
//! A prompt is a salt followed by sentences of words drawn, with a frequency
//! skew, from the shipped word list ([`goodput_common::words`]), every word
//! one token in the built-in encodings. Each prompt is checked with the
//! run's tokenizer and trimmed or extended until its count is exact; the
//! salt counts toward the length.
//!
//! The salt makes prompts unique so no prefix cache can hit: two words from
//! the request id (unique within a run) and three from a per-run nonce mixed
//! with the id, so that a second run with the same `--seed` — which
//! reproduces lengths, body text and arrival times — still shares no prefix
//! with the first. The salt comes first, so the first KV-cache block already
//! differs and no later block can match.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use super::{FollowUps, LengthSpec, Planned, RequestSource};
use crate::protocol::{request_body, Message, PreparedRequest, Prompt, RequestParams, SessionTurn};
use crate::record::RequestRecord;
use goodput_common::tokenizer::Tokenizer;
use goodput_common::words::words;

/// Number of salt words at the start of each synthetic prompt.
pub const SALT_WORDS: usize = 5;

/// Multi-turn sessions: each turn resends the conversation so far plus a new
/// user message of `--input-tokens`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SessionShape {
    /// Turns per session, drawn for each session from the run's seed.
    pub turns: LengthSpec,
    /// Time between a turn's response and the next turn's request.
    #[serde(with = "crate::serde_secs")]
    pub think_time: Duration,
}

/// How synthetic requests are shaped: everything needed to rebuild the same
/// prompts (the salt nonce aside, which differs per run by design).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SyntheticSpec {
    pub input_tokens: LengthSpec,
    pub output_tokens: LengthSpec,
    pub seed: u64,
    pub sessions: Option<SessionShape>,
}

/// An endless, deterministic sequence of synthetic requests for a seed.
pub struct SyntheticSource {
    builder: Arc<Builder>,
    rng: StdRng,
    next_session: u64,
}

/// What building a prompt needs, shared with the session follow-ups.
struct Builder {
    spec: SyntheticSpec,
    params: RequestParams,
    tokenizer: Tokenizer,
    salt_nonce: u64,
    ids: AtomicU64,
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
        SyntheticSource {
            builder: Arc::new(Builder {
                spec,
                params,
                tokenizer,
                salt_nonce,
                ids: AtomicU64::new(0),
            }),
            rng,
            next_session: 0,
        }
    }
}

impl RequestSource for SyntheticSource {
    fn next(&mut self, warmup: bool) -> Option<Planned> {
        let b = &self.builder;
        let id = b.ids.fetch_add(1, Relaxed);
        let input = b.spec.input_tokens.sample(&mut self.rng);
        let output = b.spec.output_tokens.sample(&mut self.rng);
        let (prompt, prompt_tokens) = b.prompt(&mut self.rng, id, input);
        let request = match b.spec.sessions {
            None => PreparedRequest {
                id,
                warmup,
                body: request_body(&b.params, Prompt::Text(&prompt), output),
                prompt_tokens,
                max_tokens: Some(output),
                stream: b.params.stream,
                session: None,
            },
            Some(shape) => {
                let session_id = self.next_session;
                self.next_session += 1;
                let turns = shape.turns.sample(&mut self.rng);
                let history = vec![Message::user(prompt)];
                PreparedRequest {
                    id,
                    warmup,
                    body: request_body(&b.params, Prompt::Messages(&history), output),
                    prompt_tokens,
                    max_tokens: Some(output),
                    stream: b.params.stream,
                    session: Some(Box::new(SessionTurn {
                        session_id,
                        turn: 0,
                        turns,
                        history,
                    })),
                }
            }
        };
        Some(Planned { request, at: None })
    }

    fn follow_ups(&self) -> Option<Arc<dyn FollowUps>> {
        self.builder
            .spec
            .sessions
            .map(|_| self.builder.clone() as Arc<dyn FollowUps>)
    }
}

impl FollowUps for Builder {
    fn next_turn(
        &self,
        prev: &PreparedRequest,
        rec: &RequestRecord,
    ) -> Option<(PreparedRequest, Duration)> {
        let shape = self.spec.sessions?;
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
        let (message, _) = self.prompt(&mut rng, id, input);
        let mut history = turn.history.clone();
        history.push(Message::assistant(rec.output_text.clone()));
        history.push(Message::user(message));
        let prompt_tokens = self.tokenizer.is_enabled().then(|| {
            history
                .iter()
                .map(|m| self.tokenizer.count(&m.content).unwrap_or(0) as u32)
                .sum()
        });
        let request = PreparedRequest {
            id,
            warmup: prev.warmup,
            body: request_body(&self.params, Prompt::Messages(&history), output),
            prompt_tokens,
            max_tokens: Some(output),
            stream: self.params.stream,
            session: Some(Box::new(SessionTurn {
                session_id: turn.session_id,
                turn: turn.turn + 1,
                turns: turn.turns,
                history,
            })),
        };
        Some((request, shape.think_time))
    }
}

fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

impl Builder {
    /// A prompt of exactly `target` tokens with this request's salt.
    fn prompt(&self, rng: &mut StdRng, id: u64, target: u32) -> (String, Option<u32>) {
        build_prompt(&self.tokenizer, rng, &salt(self.salt_nonce, id), target)
    }
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

fn pick_word<R: Rng>(rng: &mut R) -> &'static str {
    let w = words();
    // Squaring a uniform draw skews toward the frequent words at the head of
    // the list, which reads more like text than a flat draw.
    let u: f64 = rng.random();
    w[((u * u) * w.len() as f64) as usize % w.len()]
}

/// Build a prompt of exactly `target` tokens (when the tokenizer counts),
/// starting with `salt` (as many of its words as fit). Returns the text and
/// its token count.
pub fn build_prompt<R: Rng>(
    tokenizer: &Tokenizer,
    rng: &mut R,
    salt: &[&'static str],
    target: u32,
) -> (String, Option<u32>) {
    let target = target.max(1) as usize;
    let mut parts: Vec<&'static str> = Vec::with_capacity(target + target / 8 + 8);
    parts.extend(salt.iter().take(target));
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
    use crate::protocol::tests::params;
    use crate::protocol::Endpoint;

    fn spec() -> SyntheticSpec {
        SyntheticSpec {
            input_tokens: LengthSpec::Fixed(100),
            output_tokens: LengthSpec::Fixed(7),
            seed: 42,
            sessions: None,
        }
    }

    fn tok() -> Tokenizer {
        Tokenizer::from_spec("tiktoken:o200k_base").unwrap()
    }

    fn prompt_of(r: &PreparedRequest) -> String {
        let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        v["prompt"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| v["messages"][0]["content"].as_str().unwrap().to_string())
    }

    #[test]
    fn prompts_have_exact_token_counts() {
        let tok = tok();
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
            let (text, count) = build_prompt(&tok, &mut rng, &salt(1, id), n);
            assert_eq!(count, Some(n), "{text}");
            assert_eq!(tok.count(&text), Some(n as usize));
        }
        let cl = Tokenizer::from_spec("tiktoken:cl100k_base").unwrap();
        let (text, count) = build_prompt(&cl, &mut rng, &salt(1, 9), 300);
        assert_eq!((count, cl.count(&text)), (Some(300), Some(300)));
    }

    #[test]
    fn prompts_start_with_a_unique_salt_and_read_like_text() {
        let mut src = SyntheticSource::new(spec(), params(Endpoint::Completions), tok(), 99);
        let mut salts = std::collections::HashSet::new();
        for _ in 0..500 {
            let prompt = prompt_of(&src.next(false).unwrap().request);
            let salt: Vec<&str> = prompt.split(' ').take(SALT_WORDS).collect();
            assert!(salts.insert(salt.join(" ")), "salt repeated");
            let distinct: std::collections::HashSet<&str> = prompt.split(' ').collect();
            assert!(distinct.len() > 30, "{prompt}");
            assert!(prompt.contains('.'));
        }
    }

    /// The same seed reproduces lengths and body text; the salt differs
    /// between runs (different nonces), so no prefix is shared across runs.
    #[test]
    fn same_seed_same_text_but_a_new_salt_each_run() {
        let mut a = SyntheticSource::new(spec(), params(Endpoint::Chat), tok(), 1);
        let mut b = SyntheticSource::new(spec(), params(Endpoint::Chat), tok(), 2);
        let mut c = SyntheticSource::new(spec(), params(Endpoint::Chat), tok(), 1);
        for _ in 0..5 {
            let (pa, pb) = (
                prompt_of(&a.next(false).unwrap().request),
                prompt_of(&b.next(false).unwrap().request),
            );
            let pc = prompt_of(&c.next(false).unwrap().request);
            assert_eq!(pa, pc, "same nonce and seed: identical");
            let wa: Vec<&str> = pa.split(' ').collect();
            let wb: Vec<&str> = pb.split(' ').collect();
            assert_ne!(
                wa[..SALT_WORDS],
                wb[..SALT_WORDS],
                "salt must differ between runs"
            );
            assert_eq!(
                wa[SALT_WORDS..],
                wb[SALT_WORDS..],
                "body text is reproduced by the seed"
            );
        }
    }

    #[test]
    fn a_session_turn_resends_the_history_with_the_actual_response() {
        let mut s = spec();
        s.sessions = Some(SessionShape {
            turns: LengthSpec::Fixed(3),
            think_time: Duration::from_millis(250),
        });
        s.input_tokens = LengthSpec::Fixed(20);
        let mut src = SyntheticSource::new(s, params(Endpoint::Chat), tok(), 5);
        let follow = src.follow_ups().unwrap();
        let first = src.next(false).unwrap().request;
        let rec = RequestRecord {
            output_text: " the answer".into(),
            ..Default::default()
        };
        let (second, think) = follow.next_turn(&first, &rec).unwrap();
        assert_eq!(think, Duration::from_millis(250));
        let v: serde_json::Value = serde_json::from_slice(&second.body).unwrap();
        let msgs = v["messages"].as_array().unwrap();
        assert_eq!(msgs.len(), 3);
        assert_eq!(msgs[0]["content"], prompt_of(&first));
        assert_eq!(
            msgs[1],
            serde_json::json!({"role": "assistant", "content": " the answer"})
        );
        assert_eq!(second.prompt_tokens, Some(20 + 2 + 20));
        let t = second.session.as_ref().unwrap();
        assert_eq!((t.session_id, t.turn), (0, 1));
        let (third, _) = follow.next_turn(&second, &rec).unwrap();
        assert_eq!(third.session.as_ref().unwrap().turn, 2);
        assert!(
            follow.next_turn(&third, &rec).is_none(),
            "three turns, then the session ends"
        );
        let failed = RequestRecord {
            error: Some(crate::record::RequestError {
                kind: crate::record::ErrorKind::HttpStatus,
                message: "x".into(),
                retry_after: None,
            }),
            ..Default::default()
        };
        assert!(
            follow.next_turn(&first, &failed).is_none(),
            "a failed turn ends its session"
        );
    }
}
