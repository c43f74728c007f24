//! Token counts of the measured phase: the totals, where each count came
//! from and how far the sources agree, what the `max_tokens` sent became,
//! reasoning against answer, and the length mix of the workload as sent.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::outcomes::Outcome;
use crate::measure::metrics::mix::{MixAcc, WorkloadMix};
use crate::measure::metrics::{RequestMetrics, TokenSource};
use crate::request::record::RequestRecord;

/// Where token counts came from, and how far the sources agree.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TokenSummary {
    pub input_sources: BTreeMap<TokenSource, u64>,
    pub output_sources: BTreeMap<TokenSource, u64>,
    /// Share of requests whose server and client output counts differ by more than 5 %.
    pub count_discrepancy_share: Option<f64>,
    /// Share of completed requests whose output length differs from the `max_tokens` sent.
    pub output_length_mismatch_share: Option<f64>,
    /// Share of completed requests that finished with `stop` before the
    /// `max_tokens` sent: with `min_tokens`/`ignore_eos` sent, the server
    /// accepted them and ignored them.
    #[serde(default)]
    pub stopped_before_max_tokens_share: Option<f64>,
    /// Mean of (server-reported − client-counted) prompt tokens, over the
    /// requests with both: the chat template and the difference between the
    /// model's tokenizer and the client's.
    #[serde(default)]
    pub input_server_minus_client_mean: Option<f64>,
    /// Completed requests that finished `length` with fewer tokens than the
    /// `max_tokens` sent by the stream's evidence (the server's context ran
    /// out): counted by that evidence, not as max_tokens.
    #[serde(default)]
    pub length_short_of_max_tokens: u64,
    /// Completed requests whose client-side count (events or tokenizer)
    /// came out above the `max_tokens` sent and was capped there.
    #[serde(default)]
    pub capped_at_max_tokens: u64,
    /// Reasoning tokens of completed requests, where any reasoned (the
    /// server's `reasoning_tokens` where reported, else the reasoning
    /// events' tokens); the rest of the output is the answer.
    #[serde(default)]
    pub reasoning_tokens: Option<u64>,
    #[serde(default)]
    pub answer_tokens: Option<u64>,
    /// How many tokens the stream's decode chunks carried, where any
    /// carried more than one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decode_chunks: Option<ChunkSizes>,
}

/// The tokens a decode chunk carried: every completed request's content
/// events but its first (the prefill's) and its last (which `max_tokens`
/// or a stop may cut short). With speculative decoding and one chunk a
/// step, the mean estimates the mean acceptance length, the bonus token
/// included, and the share of chunks of at least i + 2 tokens the
/// acceptance at draft position i; a server that batches its stream
/// (vLLM's `--stream-interval`) or a proxy that joins chunks raises both.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChunkSizes {
    /// Decode chunks counted.
    pub chunks: u64,
    /// Their tokens over their count.
    pub mean_tokens: f64,
    /// The share of chunks that carried 1, 2, … tokens (the last entry:
    /// that many or more, up to 16).
    pub shares: Vec<f64>,
}

/// Chunk sizes from 1 to this (the last: this or more).
pub const CHUNK_SIZES: usize = 16;

/// Token counts, over completed requests unless said otherwise.
#[derive(Debug, Default)]
pub(super) struct TokenCounts {
    completed: u64,
    total_input: u64,
    total_output: u64,
    input_sources: BTreeMap<TokenSource, u64>,
    output_sources: BTreeMap<TokenSource, u64>,
    /// Requests with both a server and a client output count, and those
    /// where the two differ by more than 5 %.
    count_compared: u64,
    count_discrepancies: u64,
    length_mismatches: u64,
    /// Completed with a `stop` finish before the `max_tokens` sent.
    stopped_before_max: u64,
    /// `length` finishes the stream showed short of max_tokens; client-side
    /// counts capped at max_tokens.
    length_refused: u64,
    capped_at_max_tokens: u64,
    /// Σ (server − client) prompt tokens, and over how many requests.
    input_server_minus_client: i64,
    input_compared: u64,
    /// Reasoning tokens, and whether any request reasoned.
    reasoning_tokens: u64,
    reasoned: bool,
    /// The length mix: prompts over every sent request, the rest over
    /// completed ones.
    mix: MixAcc,
    /// Decode chunks by their tokens (index k: k + 1 tokens), and their tokens.
    chunk_sizes: [u64; CHUNK_SIZES],
    chunk_tokens: u64,
}

impl TokenCounts {
    pub(super) fn add(&mut self, rec: &RequestRecord, m: &RequestMetrics, outcome: &Outcome) {
        if rec.t_send.is_some() {
            // The prompt went out whatever came back: the workload as sent
            // counts the ones the server refused (an over-long prompt's 400).
            self.mix.add_sent(m);
        }
        if *outcome == Outcome::Completed {
            self.add_completed(rec, m);
        }
    }

    fn add_completed(&mut self, rec: &RequestRecord, m: &RequestMetrics) {
        self.completed += 1;
        self.total_input += m.input_tokens.unwrap_or(0) as u64;
        self.total_output += m.output_tokens as u64;
        if let Some(r) = m.reasoning_tokens {
            self.reasoning_tokens += u64::from(r);
            self.reasoned = true;
        }
        if let Some(s) = m.input_source {
            *self.input_sources.entry(s).or_default() += 1;
        }
        *self.output_sources.entry(m.output_source).or_default() += 1;
        if let (Some(server), Some(client)) = (
            rec.usage.and_then(|u| u.completion_tokens),
            m.client_output_tokens,
        ) {
            self.count_compared += 1;
            let diff = (server as f64 - client as f64).abs();
            if diff > 0.05 * (server.max(client).max(1)) as f64 {
                self.count_discrepancies += 1;
            }
        }
        if rec.max_tokens.is_some_and(|mt| mt != m.output_tokens) {
            self.length_mismatches += 1;
        }
        self.mix.add(rec, m);
        let decode = match m.event_tokens.as_slice() {
            [_, middle @ .., _] => middle,
            _ => &[],
        };
        for &n in decode.iter().filter(|n| **n > 0) {
            self.chunk_sizes[(n as usize).min(CHUNK_SIZES) - 1] += 1;
            self.chunk_tokens += u64::from(n);
        }
        if rec.finish_reason.as_deref() == Some("stop")
            && rec.max_tokens.is_some_and(|mt| m.output_tokens < mt)
        {
            self.stopped_before_max += 1;
        }
        self.length_refused += u64::from(m.count_evidence.length_refused);
        self.capped_at_max_tokens += u64::from(m.count_evidence.capped);
        if let (Some(server), Some(client)) = (
            rec.usage.and_then(|u| u.prompt_tokens),
            m.client_input_tokens,
        ) {
            self.input_compared += 1;
            self.input_server_minus_client += i64::from(server) - i64::from(client);
        }
    }

    /// Input tokens of completed requests.
    pub(super) fn total_input(&self) -> u64 {
        self.total_input
    }

    /// Output tokens of completed requests.
    pub(super) fn total_output(&self) -> u64 {
        self.total_output
    }

    /// The workload as sent: length mix and prefix-cache shares.
    pub(super) fn workload(&self) -> WorkloadMix {
        self.mix.summary()
    }

    pub(super) fn finish(&self) -> TokenSummary {
        let completed = self.completed;
        TokenSummary {
            input_sources: self.input_sources.clone(),
            output_sources: self.output_sources.clone(),
            count_discrepancy_share: (self.count_compared > 0)
                .then(|| self.count_discrepancies as f64 / self.count_compared as f64),
            output_length_mismatch_share: (completed > 0)
                .then(|| self.length_mismatches as f64 / completed as f64),
            stopped_before_max_tokens_share: (completed > 0)
                .then(|| self.stopped_before_max as f64 / completed as f64),
            length_short_of_max_tokens: self.length_refused,
            capped_at_max_tokens: self.capped_at_max_tokens,
            input_server_minus_client_mean: (self.input_compared > 0)
                .then(|| self.input_server_minus_client as f64 / self.input_compared as f64),
            reasoning_tokens: self.reasoned.then_some(self.reasoning_tokens),
            answer_tokens: self
                .reasoned
                .then(|| self.total_output.saturating_sub(self.reasoning_tokens)),
            decode_chunks: self.chunk_sizes(),
        }
    }

    /// The decode chunks' sizes, where any carried more than one token.
    fn chunk_sizes(&self) -> Option<ChunkSizes> {
        let chunks: u64 = self.chunk_sizes.iter().sum();
        if chunks == self.chunk_sizes[0] {
            return None;
        }
        let last = self.chunk_sizes.iter().rposition(|c| *c > 0).unwrap_or(0);
        Some(ChunkSizes {
            chunks,
            mean_tokens: self.chunk_tokens as f64 / chunks as f64,
            shares: (self.chunk_sizes[..=last].iter())
                .map(|c| *c as f64 / chunks as f64)
                .collect(),
        })
    }
}
