//! What the forecast's requests look like, and the book that writes them.
//!
//! A [`ForecastWorkload`] describes requests as goodput's synthetic workload
//! does (`goodput-core`'s `workload::synthetic`): lengths drawn per request,
//! an optional shared prefix, optional multi-turn sessions; or it replays a
//! trace ([`ForecastTrace`]: its arrivals, lengths and prompt blocks). A
//! [`Book`] turns it into token ids and prefix-cache block hashes for one
//! schedule.
//!
//! **Rate-independent content.** Everything a session will send — its turn
//! count, every turn's lengths, token ids, block hashes and think time — is
//! fixed when the session is first written, from the schedule's seed and
//! the session's index alone; a turn's "response" is a made-up run of token
//! ids of the drawn output length, as an engine run with `ignore_eos` would
//! return. Only *whether* a turn is sent depends on timing (a run stops
//! sending once its measured requests are out). So a book is written once
//! per schedule and replayed at every rate of a search (common random
//! numbers, and no hashing on the hot path).

use goodput_common::units::DurationSpec;
use goodput_common::LengthSpec;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::Exp1;
use std::sync::Arc;

use crate::kv::block_hashes;

use super::trace::ForecastTrace;

/// Shared prefixes: every first turn's prompt starts with one of `groups`
/// prefixes of `tokens` tokens, chosen uniformly at random, then its own
/// unique part. As in goodput's `--prefix-tokens`, the input length counts
/// the prefix: a prompt is `max(input, tokens + 1)` tokens long (at least
/// one unique token, goodput's salt).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SharedPrefix {
    /// Length of each prefix, tokens.
    pub tokens: u32,
    /// At least 1.
    pub groups: u32,
}

/// Multi-turn sessions, as goodput's `--turns` / `--think-time` make them.
///
/// The open-loop rate starts sessions (their first turns), as
/// `--request-rate` does in a real run; turn k + 1 is sent `think_time`
/// after turn k's last token, on the same replica, and its prompt is the
/// whole conversation so far: turn k's prompt, turn k's output, then a new
/// user message of `input` tokens (no shared prefix: the history is the
/// shared part). A failed turn ends its session, as in a real run.
#[derive(Debug, Clone, PartialEq)]
pub struct Sessions {
    /// Turns per session, drawn once per session.
    pub turns: LengthSpec,
    /// Drawn per follow-up turn (goodput's one duration grammar: `2s`,
    /// `exponential:2s`, `uniform:1s,3s`, `lognormal:2s,0.5`).
    pub think_time: DurationSpec,
}

/// The requests of a forecast.
#[derive(Debug, Clone, PartialEq)]
pub struct ForecastWorkload {
    /// Prompt tokens of each request (of each turn's new message, for a
    /// session's later turns).
    pub input: LengthSpec,
    /// Output tokens of each request, generated exactly (as with `ignore_eos`).
    pub output: LengthSpec,
    /// Shared prefixes of first turns' prompts; `None`: every prompt unique.
    pub prefix: Option<SharedPrefix>,
    /// Multi-turn sessions; `None`: one request per session.
    pub sessions: Option<Sessions>,
    /// Replay this trace instead: its arrivals (scaled to the offered rate),
    /// lengths and prompt blocks. `input` and `output` are then unused, and
    /// `prefix` and `sessions` must be `None`.
    pub trace: Option<Arc<ForecastTrace>>,
}

impl ForecastWorkload {
    /// Fixed lengths, every prompt unique, one turn: the reference's workload.
    pub fn fixed(input_tokens: u32, output_tokens: u32) -> Self {
        ForecastWorkload {
            input: LengthSpec::Fixed(input_tokens),
            output: LengthSpec::Fixed(output_tokens),
            prefix: None,
            sessions: None,
            trace: None,
        }
    }

    /// Replay `trace` (see [`ForecastTrace`]).
    pub fn replay(trace: ForecastTrace) -> Self {
        ForecastWorkload {
            trace: Some(Arc::new(trace)),
            ..ForecastWorkload::fixed(1, 1)
        }
    }
}

/// One turn as it will be sent.
#[derive(Debug, Clone)]
pub(crate) struct Turn {
    pub prompt_tokens: usize,
    pub output_tokens: usize,
    pub hashes: Vec<u64>,
    /// Think time before the *next* turn, seconds.
    pub think_s: f64,
}

/// The book of one schedule: its arrivals at rate 1 and its sessions,
/// written on demand and kept for every rate.
#[derive(Debug)]
pub(crate) struct Book {
    workload: ForecastWorkload,
    /// Seeds the session contents.
    content_seed: u64,
    gaps: StdRng,
    draws: StdRng,
    /// Arrival of session j at rate 1 (the first at 0).
    unit_arrivals: Vec<f64>,
    next_unit: f64,
    sessions: Vec<Vec<Turn>>,
}

impl Book {
    /// Schedule `seed`: its unit-rate gaps come from `StdRng(seed)` exactly as
    /// [`crate::reference`] draws them, so a one-turn workload sees the
    /// reference's arrivals.
    pub fn new(workload: &ForecastWorkload, seed: u64) -> Self {
        let content_seed = mix(seed ^ 0x6f72_6563_6173_7421);
        Book {
            workload: workload.clone(),
            content_seed,
            gaps: StdRng::seed_from_u64(seed),
            draws: StdRng::seed_from_u64(content_seed),
            unit_arrivals: Vec::new(),
            next_unit: 0.0,
            sessions: Vec::new(),
        }
    }

    /// Session j's arrival at `rate`; `None` when a trace has no session j.
    pub fn arrival(&mut self, j: usize, rate: f64) -> Option<f64> {
        match &self.workload.trace {
            Some(trace) => trace.arrival(j, rate),
            None => Some(self.unit_arrival(j) / rate),
        }
    }

    /// Session j's arrival at rate 1.
    fn unit_arrival(&mut self, j: usize) -> f64 {
        while self.unit_arrivals.len() <= j {
            self.unit_arrivals.push(self.next_unit);
            self.next_unit += self.gaps.sample::<f64, _>(Exp1);
        }
        self.unit_arrivals[j]
    }

    /// Session j's turns (written now if they are not yet).
    pub fn session(&mut self, j: usize) -> &[Turn] {
        while self.sessions.len() <= j {
            let s = self.write_session(self.sessions.len() as u64);
            self.sessions.push(s);
        }
        &self.sessions[j]
    }

    /// Session j's turns, already written.
    pub fn written(&self, j: usize) -> &[Turn] {
        &self.sessions[j]
    }

    fn write_session(&mut self, j: u64) -> Vec<Turn> {
        if let Some(trace) = &self.workload.trace {
            return vec![self.write_trace_request(trace, j)];
        }
        let w = &self.workload;
        let input = w.input.sample(&mut self.draws) as usize;
        let output = w.output.sample(&mut self.draws) as usize;
        let group = w
            .prefix
            .map(|p| (p, self.draws.random_range(0..p.groups.max(1))));
        let turns = w
            .sessions
            .as_ref()
            .map_or(1, |s| s.turns.sample(&mut self.draws) as usize);
        let mut tokens: Vec<u32> = Vec::with_capacity(input);
        if let Some((p, g)) = group {
            let salt = mix(u64::from(g) ^ 0x7072_6566_6978);
            tokens.extend((0..p.tokens as u64).map(|i| token(salt, i)));
        }
        let unique = input.saturating_sub(tokens.len()).max(1);
        self.extend_unique(&mut tokens, j, 0, unique);
        let mut out = Vec::with_capacity(turns);
        let mut output_tokens = output;
        for k in 0..turns {
            let next = (k + 1 < turns).then(|| self.follow_up_draws(j, k as u64 + 1));
            out.push(Turn {
                prompt_tokens: tokens.len(),
                output_tokens,
                hashes: block_hashes(&tokens),
                think_s: next.map_or(0.0, |n| n.2),
            });
            let Some((input, output, _)) = next else {
                break;
            };
            // The response of turn k, then the user's next message.
            let salt = mix(self.content_seed ^ mix(j ^ mix(k as u64 ^ 0x6f75_7470_7574)));
            tokens.extend((0..output_tokens as u64).map(|i| token(salt, i)));
            self.extend_unique(&mut tokens, j, k as u64 + 1, input);
            output_tokens = output;
        }
        out
    }

    /// Trace request `j`: its blocks' tokens from `(hash id, index)`, so
    /// prompts share exactly the blocks the trace says they share, then
    /// tokens unique to it (all of them without ids).
    fn write_trace_request(&self, trace: &ForecastTrace, j: u64) -> Turn {
        let r = &trace.requests()[j as usize];
        let input = r.input_tokens as usize;
        let mut tokens: Vec<u32> = Vec::with_capacity(input);
        for &h in &r.hash_ids {
            let take = (input - tokens.len()).min(trace.block_tokens() as usize);
            if take == 0 {
                break;
            }
            let salt = mix(h ^ 0x7472_6163_6520_6964);
            tokens.extend((0..take as u64).map(|i| token(salt, i)));
        }
        let unique = input - tokens.len();
        self.extend_unique(&mut tokens, j, 0, unique);
        Turn {
            prompt_tokens: tokens.len(),
            output_tokens: r.output_tokens as usize,
            hashes: block_hashes(&tokens),
            think_s: 0.0,
        }
    }

    /// Turn `k`'s draws from (seed, session, turn), as goodput's follow-ups
    /// draw them: input, output, think time before it.
    fn follow_up_draws(&self, j: u64, k: u64) -> (usize, usize, f64) {
        let w = &self.workload;
        let mut rng = StdRng::seed_from_u64(
            self.content_seed
                ^ j.wrapping_mul(0x9e37_79b9_7f4a_7c15)
                ^ k.wrapping_mul(0xc2b2_ae3d_27d4_eb4f),
        );
        let input = w.input.sample(&mut rng) as usize;
        let output = w.output.sample(&mut rng) as usize;
        let think = w
            .sessions
            .as_ref()
            .map_or(0.0, |s| s.think_time.sample(&mut rng).as_secs_f64());
        (input, output, think)
    }

    fn extend_unique(&self, tokens: &mut Vec<u32>, j: u64, k: u64, n: usize) {
        let salt = mix(self.content_seed ^ mix(j ^ mix(k ^ 0x7573_6572)));
        tokens.extend((0..n as u64).map(|i| token(salt, i)));
    }
}

/// Token id `i` of the run of ids `salt` names.
fn token(salt: u64, i: u64) -> u32 {
    (mix(salt ^ i.wrapping_mul(0x2545_f491_4f6c_dd1d)) >> 32) as u32
}

/// SplitMix64's finaliser: a fixed, well-spread hash of a u64.
pub(crate) fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn sessions_resend_their_history_and_share_its_blocks() {
        let w = ForecastWorkload {
            sessions: Some(Sessions {
                turns: LengthSpec::Fixed(3),
                think_time: DurationSpec::Fixed(Duration::from_secs(1)),
            }),
            ..ForecastWorkload::fixed(100, 20)
        };
        let mut book = Book::new(&w, 0);
        let turns = book.session(0).to_vec();
        assert_eq!(turns.len(), 3);
        let lens: Vec<usize> = turns.iter().map(|t| t.prompt_tokens).collect();
        assert_eq!(lens, vec![100, 220, 340]);
        assert_eq!(turns[0].think_s, 1.0);
        assert_eq!(turns[2].think_s, 0.0);
        // Turn 2's prompt starts with turn 1's: its 6 full blocks hash alike.
        assert_eq!(turns[1].hashes[..6], turns[0].hashes[..]);
        assert_eq!(turns[2].hashes[..13], turns[1].hashes[..]);
        // Another session shares nothing.
        let other = book.session(1)[0].hashes.clone();
        assert_ne!(other[0], turns[0].hashes[0]);
    }

    #[test]
    fn prefixes_are_shared_within_a_group_only() {
        let w = ForecastWorkload {
            prefix: Some(SharedPrefix {
                tokens: 64,
                groups: 2,
            }),
            ..ForecastWorkload::fixed(100, 10)
        };
        let mut book = Book::new(&w, 3);
        let firsts: Vec<u64> = (0..20).map(|j| book.session(j)[0].hashes[0]).collect();
        let mut distinct = firsts.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), 2, "{firsts:?}");
        let a = book.session(0)[0].clone();
        let same = (1..20).find(|&j| firsts[j] == firsts[0]).unwrap();
        let b = book.session(same)[0].clone();
        assert_eq!(a.hashes[..4], b.hashes[..4]);
        assert_ne!(a.hashes[4], b.hashes[4]);
        assert_eq!(a.prompt_tokens, 100);
    }

    #[test]
    fn unit_arrivals_match_the_reference_draws() {
        let mut book = Book::new(&ForecastWorkload::fixed(8, 8), 5);
        let mut rng = StdRng::seed_from_u64(5);
        let mut t = 0.0;
        for j in 0..50 {
            assert_eq!(book.unit_arrival(j), t);
            t += rng.sample::<f64, _>(Exp1);
        }
    }
}
