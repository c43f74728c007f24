//! Metrics: every derived figure, computed in one place from raw records.
//!
//! [`RequestMetrics::derive`] turns one [`RequestRecord`] into TTFT, TPOT,
//! ITL, ICL, E2EL and token counts exactly as `docs/metrics.md#per-request-figures` defines them;
//! [`Collector`] accumulates the measured phase (one accumulator per kind
//! of figure, in `collector/`) and [`Collector::summarize`] produces the
//! run's [`RunMetrics`];
//! [`registry`] names each metric once. Time units: ms for latencies,
//! seconds for durations, per second for throughputs.

mod collector;
pub mod control_variate;
pub mod mix;
pub mod pooled;
pub mod registry;
pub mod samples;
pub mod saturation;

use serde::{Deserialize, Serialize};

use crate::request::record::RequestRecord;
use crate::tokenizer::Tokenizer;
#[cfg(test)]
pub(crate) use collector::SchemaViolation;
pub use collector::{
    ChunkSizes, Collector, Distributions, EarlyStop, GroupFigures, ImagesSummary, InputsSummary,
    RunMetrics, StructuredOutput, TaskSummary, Throughput, TimeSeries, TimelineCall, TokenSummary,
    CHUNK_SIZES, CROWDING_LIMIT, GROUPINGS,
};
pub use registry::Metric;

/// Where a token count came from.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum TokenSource {
    /// The server's `usage`.
    Server,
    /// A tokenizer: the model's own `tokenizer.json` when one was given,
    /// else the fixed client encoding (the run's tokenizer identity says which).
    #[default]
    Tokenizer,
    /// A `length` finish: exactly the `max_tokens` sent.
    Length,
    /// One token per content-bearing event.
    Events,
}

impl TokenSource {
    /// The name the records and the JSON use (`server`, `events`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            TokenSource::Server => "server",
            TokenSource::Tokenizer => "tokenizer",
            TokenSource::Length => "length",
            TokenSource::Events => "events",
        }
    }
}

const NS_PER_MS: f64 = 1e6;

fn ms(a: u64, b: u64) -> f64 {
    (b as f64 - a as f64) / NS_PER_MS
}

/// Per-request figures (ms unless named otherwise).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RequestMetrics {
    /// TTFT, `t_1 − t_send`; `None` without a send or a content event.
    pub ttft_ms: Option<f64>,
    /// TTFT from the scheduled arrival, `t_1 − t_sched`.
    pub ttft_sched_ms: Option<f64>,
    /// Time to the first non-reasoning token; only when reasoning deltas occurred.
    pub ttfot_ms: Option<f64>,
    /// Time to the first reasoning token; only when reasoning deltas occurred.
    pub ttfrt_ms: Option<f64>,
    /// Reasoning tokens (the server's `reasoning_tokens` where reported,
    /// else the reasoning events' tokens); only when reasoning occurred.
    pub reasoning_tokens: Option<u32>,
    /// Time per token over the reasoning: (last − first reasoning event) /
    /// (reasoning tokens − 1), for at least two reasoning tokens.
    pub reasoning_tpot_ms: Option<f64>,
    /// The same over the answer after the reasoning.
    pub answer_tpot_ms: Option<f64>,
    /// `t_send − t_sched`; `None` for a request that was never sent.
    pub schedule_lag_ms: Option<f64>,
    /// Connection setup, `t_send − t_connect`; `None` on a pooled connection.
    pub connect_ms: Option<f64>,
    /// E2EL, `t_last − t_send` (a pooling request: `t_done − t_send`).
    pub e2el_ms: Option<f64>,
    /// E2EL from the scheduled arrival, `t_last − t_sched` (a pooling
    /// request: `t_done − t_sched`).
    pub e2el_sched_ms: Option<f64>,
    /// Generation time, `t_last − t_1`.
    pub generation_ms: Option<f64>,
    /// TPOT, `(t_last − t_1) / (N − 1)`; `None` below 2 output tokens.
    pub tpot_ms: Option<f64>,
    /// Largest per-token gap (the request's worst ITL), for SLO `itl` terms.
    pub max_itl_ms: Option<f64>,
    /// Per-token inter-token latencies (`n_i` values of `gap / n_i`).
    pub itl_ms: Vec<f32>,
    /// Inter-chunk gaps, one per gap.
    pub icl_ms: Vec<f32>,
    /// Prompt tokens: the server's `usage.prompt_tokens`, else the client
    /// tokenizer's count; `None` when neither is known.
    pub input_tokens: Option<u32>,
    /// Where `input_tokens` came from (`server` or `tokenizer`).
    pub input_source: Option<TokenSource>,
    /// Output tokens `N`, as `output_count` settles them.
    pub output_tokens: u32,
    /// The rule that settled `output_tokens`.
    pub output_source: TokenSource,
    /// The output counted by the run's client tokenizer: the one unit
    /// comparable across servers, kept beside the count the metrics use.
    pub client_output_tokens: Option<u32>,
    /// The prompt as the client tokenizer counted it when building it (for
    /// chat: the message contents, without the server's chat template).
    pub client_input_tokens: Option<u32>,
    /// Output tokens of each content-bearing event (integers summing to `output_tokens`).
    pub event_tokens: Vec<u32>,
    /// How the output count was settled (rules refused, caps applied).
    pub count_evidence: CountEvidence,
    /// From send to the first piece of a tool call's arguments; only for a
    /// request that produced a tool call.
    pub time_to_first_tool_call_ms: Option<f64>,
    /// Tool calls in the answer; only when tools were sent.
    pub tool_calls: Option<u32>,
    /// Whether the answer kept to the schema asked for (tool arguments
    /// against their tool's `parameters`, else the answer against the
    /// response format); `None` when nothing was asked of it or it failed.
    pub schema_valid: Option<bool>,
    /// Why it did not (the first violation).
    pub schema_error: Option<String>,
}

impl RequestMetrics {
    /// Derive every per-request figure from the raw record.
    pub fn derive(rec: &RequestRecord, tokenizer: &Tokenizer) -> RequestMetrics {
        let mut m = RequestMetrics {
            schedule_lag_ms: rec.t_send.map(|s| ms(rec.t_sched, s)),
            connect_ms: rec.t_connect.zip(rec.t_send).map(|(c, s)| ms(c, s)),
            ..Default::default()
        };
        let usage = rec.usage.unwrap_or_default();
        m.client_output_tokens = text_tokens(&rec.output_text, tokenizer);
        (m.output_tokens, m.output_source, m.count_evidence) =
            output_count(rec, tokenizer, m.client_output_tokens);
        m.client_input_tokens = rec.prompt_tokens_client;
        (m.input_tokens, m.input_source) = match (usage.prompt_tokens, rec.prompt_tokens_client) {
            (Some(n), _) => (Some(n), Some(TokenSource::Server)),
            (None, Some(n)) => (Some(n), Some(TokenSource::Tokenizer)),
            (None, None) => (None, None),
        };
        if let (Some(t_send), Some(_), true) = (rec.t_send, rec.inputs, rec.ok()) {
            // A pooling request (embeddings, rerank, score) has no content
            // events: its latency is the whole exchange, send to the end of
            // the answer; TTFT, TPOT and ITL are undefined.
            m.e2el_ms = Some(ms(t_send, rec.t_done));
            m.e2el_sched_ms = Some(ms(rec.t_sched, rec.t_done));
            return m;
        }
        m.structured(rec);
        let (Some(t_send), Some(first), Some(last)) =
            (rec.t_send, rec.events.first(), rec.events.last())
        else {
            return m;
        };
        m.ttft_ms = Some(ms(t_send, first.at_ns));
        m.ttft_sched_ms = Some(ms(rec.t_sched, first.at_ns));
        if rec.events.iter().any(|e| e.reasoning) {
            m.ttfot_ms = rec
                .events
                .iter()
                .find(|e| !e.reasoning)
                .map(|e| ms(t_send, e.at_ns));
        }
        m.e2el_ms = Some(ms(t_send, last.at_ns));
        m.e2el_sched_ms = Some(ms(rec.t_sched, last.at_ns));
        m.generation_ms = Some(ms(first.at_ns, last.at_ns));
        if m.output_tokens >= 2 {
            m.tpot_ms = Some(ms(first.at_ns, last.at_ns) / (m.output_tokens - 1) as f64);
        }
        m.event_tokens = event_tokens(rec, tokenizer, m.output_tokens);
        if rec.events.iter().any(|e| e.reasoning) {
            m.reasoning(rec, t_send);
        }
        let mut carried = 0u64;
        let mut max_itl = None::<f64>;
        for (i, pair) in rec.events.windows(2).enumerate() {
            let gap = pair[1].at_ns - pair[0].at_ns;
            m.icl_ms.push((gap as f64 / NS_PER_MS) as f32);
            let k = m.event_tokens[i + 1];
            if k == 0 {
                // An event that carried no token: its wait belongs to the next token.
                carried += gap;
                continue;
            }
            let per = (gap + carried) as f64 / NS_PER_MS / k as f64;
            carried = 0;
            max_itl = Some(max_itl.map_or(per, |x: f64| x.max(per)));
            for _ in 0..k {
                m.itl_ms.push(per as f32);
            }
        }
        m.max_itl_ms = max_itl;
        m
    }
}

impl RequestMetrics {
    /// Tool calls and structured output: the time to the first tool call,
    /// the number of calls, and whether the answer of a completed request
    /// kept to its schema ([`crate::request::tools::OutputSpec::check`]).
    fn structured(&mut self, rec: &RequestRecord) {
        self.time_to_first_tool_call_ms =
            rec.t_send.zip(rec.t_first_tool_call).map(|(s, t)| ms(s, t));
        let Some(spec) = &rec.output_check else {
            return;
        };
        if !spec.tools.is_empty() {
            self.tool_calls = Some(rec.tool_calls.len() as u32);
        }
        if !rec.ok() {
            return;
        }
        // The answer without its reasoning: the text of the events that
        // were not reasoning.
        let mut answer = String::new();
        let mut start = 0usize;
        for e in &rec.events {
            let end = (e.text_end as usize).min(rec.output_text.len());
            if !e.reasoning {
                answer.push_str(rec.output_text.get(start..end).unwrap_or_default());
            }
            start = end;
        }
        if let Some(verdict) = spec.check(&rec.tool_calls, answer.trim()) {
            self.schema_valid = Some(verdict.is_ok());
            self.schema_error = verdict.err();
        }
    }

    /// Reasoning and answer apart: when each began, how many tokens each
    /// took, and the time per token over each.
    fn reasoning(&mut self, rec: &RequestRecord, t_send: u64) {
        let (mut first_r, mut last_r, mut first_a, mut last_a) = (None, None, None, None);
        let (mut r_tokens, mut a_tokens) = (0u32, 0u32);
        for (e, &k) in rec.events.iter().zip(&self.event_tokens) {
            if e.reasoning {
                first_r.get_or_insert(e.at_ns);
                last_r = Some(e.at_ns);
                r_tokens += k;
            } else {
                first_a.get_or_insert(e.at_ns);
                last_a = Some(e.at_ns);
                a_tokens += k;
            }
        }
        // The server's own split, where it reports one, sets the counts.
        if let Some(r) = rec.usage.and_then(|u| u.reasoning_tokens) {
            r_tokens = r.min(self.output_tokens);
            a_tokens = self.output_tokens - r_tokens;
        }
        self.ttfrt_ms = first_r.map(|t| ms(t_send, t));
        self.reasoning_tokens = Some(r_tokens);
        let per = |first: Option<u64>, last: Option<u64>, n: u32| {
            first
                .zip(last)
                .filter(|_| n >= 2)
                .map(|(f, l)| ms(f, l) / (n - 1) as f64)
        };
        self.reasoning_tpot_ms = per(first_r, last_r, r_tokens);
        self.answer_tpot_ms = per(first_a, last_a, a_tokens);
    }
}

/// How the output count was settled, beyond its source.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CountEvidence {
    /// The answer finished `length` but the stream's evidence shows fewer
    /// tokens than `max_tokens` (the server ran out of context): the
    /// `length` rule was not applied.
    pub length_refused: bool,
    /// A count from the client's side came out above the `max_tokens`
    /// sent and was capped there.
    pub capped: bool,
}

/// The output token count the metrics use, and where it came from, in
/// order of evidence (`docs/metrics.md`, token counting):
/// 1. the server's `usage.completion_tokens`;
/// 2. a streamed answer's content events, one token each, as vLLM, SGLang,
///    TGI and llama.cpp stream — but `max_tokens` on a `length` finish
///    whose events fall short of it by no more than the text could hide
///    ([`hidden_tokens_bound`]) and by at most a quarter (a byte-level BPE vocabulary's pieces of a
///    character stream no text of their own; a random-weight model on
///    llama.cpp streamed 57 events for 64 tokens) — unless the text shows chunks carrying
///    several tokens: the model's own tokenizer finding half again as many
///    tokens as events (re-tokenizing generated text misses by about 12 %,
///    never by half), or the fixed client encoding three times as many (two
///    vocabularies rarely differ by half that: mistral.rs on a Llama-family
///    model came out 1.3×);
/// 3. a `length` finish, meaning exactly the `max_tokens` sent — only where
///    a count of the text agrees (at least three quarters of it): a server
///    that ran out of context also says `length`;
/// 4. the model's own tokenizer on the text (`--tokenizer tokenizer.json`):
///    an estimate, since re-tokenized text is not the generated sequence;
/// 5. the client tokenizer (tiktoken: a fixed unit, not the model's).
///
/// No count but the server's is ever above the `max_tokens` sent.
pub fn output_count(
    rec: &RequestRecord,
    tokenizer: &Tokenizer,
    text_count: Option<u32>,
) -> (u32, TokenSource, CountEvidence) {
    let mut evidence = CountEvidence::default();
    if let Some(n) = rec.usage.and_then(|u| u.completion_tokens) {
        return (n, TokenSource::Server, evidence);
    }
    let mut cap = |n: u32| match rec.max_tokens {
        Some(m) if n > m => {
            evidence.capped = true;
            m
        }
        _ => n,
    };
    let events = rec.events.len() as u32;
    let model = tokenizer.is_model_tokenizer();
    let several_per_event = text_count.is_some_and(|c| {
        let c = f64::from(c);
        let e = f64::from(events.max(1));
        if model {
            c >= 1.5 * e
        } else {
            c >= 3.0 * e
        }
    });
    if rec.streamed && events > 0 && !several_per_event {
        // A `length` finish a few events short of `max_tokens`, where the
        // text could hide that many tokens: the server held back tokens
        // that were pieces of a character (a byte-level BPE vocabulary's),
        // streaming them with the token that completed it. It generated
        // `max_tokens`.
        if rec.max_tokens.is_some_and(|m| events < m) {
            let hidden = hidden_tokens_bound(&rec.output_text);
            if let LengthSays::Max(max) = length_says(rec, events, Some(hidden)) {
                return (max, TokenSource::Length, evidence);
            }
        }
        return (cap(events), TokenSource::Events, evidence);
    }
    match length_says(rec, text_count.unwrap_or(events).max(events), None) {
        LengthSays::Max(max) => return (max, TokenSource::Length, evidence),
        LengthSays::Refused => evidence.length_refused = true,
        LengthSays::Silent => {}
    }
    let (n, source) = match text_count {
        Some(c) => (c, TokenSource::Tokenizer),
        None => (events, TokenSource::Events),
    };
    (cap(n), source, evidence)
}

/// What a `length` finish says of the count.
enum LengthSays {
    /// The server generated `max_tokens`.
    Max(u32),
    /// A `length` finish whose count is too far short of `max_tokens`.
    Refused,
    /// Not a `length` finish with a `max_tokens`.
    Silent,
}

/// A `length` finish says the server generated `max_tokens` when the
/// request fits in the server's context for one sequence (it cannot have run
/// out), or else when what was `counted` is within a quarter of it (a server
/// whose context ran out says `length` too, after fewer) and, where `hidden`
/// bounds how many tokens the count could have missed, within that too.
fn length_says(rec: &RequestRecord, counted: u32, hidden: Option<u32>) -> LengthSays {
    let (Some("length"), Some(max)) = (rec.finish_reason.as_deref(), rec.max_tokens) else {
        return LengthSays::Silent;
    };
    if fits_in_context(rec, max) {
        return LengthSays::Max(max);
    }
    let near = 4 * u64::from(counted) >= 3 * u64::from(max);
    if near && hidden.is_none_or(|h| max.saturating_sub(counted) <= h) {
        LengthSays::Max(max)
    } else {
        LengthSays::Refused
    }
}

/// Whether the prompt and `max_tokens` fit in the context the server said
/// it gives one sequence, with room to spare: the prompt as the client
/// counted it, half again for another tokenizer's count, and 16 tokens for a
/// chat template.
fn fits_in_context(rec: &RequestRecord, max: u32) -> bool {
    let (Some(context), Some(prompt)) = (rec.context_tokens, rec.prompt_tokens_client) else {
        return false;
    };
    u64::from(prompt) * 3 / 2 + 16 + u64::from(max) <= u64::from(context)
}

/// The text's tokens as the run's tokenizer counts them, a replacement
/// character (U+FFFD) as one: it stands for bytes the server sent that never
/// formed a character — most often one token of a byte-level vocabulary —
/// and re-tokenized it is three byte tokens (on a random-weight model whose
/// text was full of them, the model's own tokenizer found half again as
/// many tokens as it generated, and the count went over to the tokenizer).
fn text_tokens(text: &str, tokenizer: &Tokenizer) -> Option<u32> {
    const REPLACEMENT: char = '\u{FFFD}';
    if !text.contains(REPLACEMENT) {
        return tokenizer.count(text).map(|c| c as u32);
    }
    let replaced = text.matches(REPLACEMENT).count();
    let rest: String = text.split(REPLACEMENT).collect();
    tokenizer.count(&rest).map(|c| (c + replaced) as u32)
}

/// The most tokens a stream's text can hide: a token that streams no text
/// of its own ends inside a character's UTF-8 bytes (the server holds it
/// until the character is whole, or sends it as U+FFFD when it never is),
/// so each multi-byte character of the text hides at most its length less
/// one. Zero for ASCII text. On a random-weight model with such a
/// vocabulary, 64-token answers hid 2 to 10 tokens under a bound of 10 to
/// 29: a loose bound, so [`output_count`] also asks that the events be
/// within a quarter of `max_tokens`.
pub fn hidden_tokens_bound(text: &str) -> u32 {
    // A character's bytes after its first are continuation bytes, 10xxxxxx.
    text.bytes().filter(|b| (0x80..0xC0).contains(b)).count() as u32
}

/// Tokens per event: per-chunk usage, else the tokenizer on each event's
/// text, else one each; then scaled to sum to `total` (largest remainder).
fn event_tokens(rec: &RequestRecord, tokenizer: &Tokenizer, total: u32) -> Vec<u32> {
    let n = rec.events.len();
    if n as u32 == total
        && rec
            .events
            .iter()
            .all(|e| e.usage_completion_tokens.is_none())
    {
        return vec![1; n];
    }
    let raw: Vec<f64> = if rec
        .events
        .iter()
        .all(|e| e.usage_completion_tokens.is_some())
    {
        let mut prev = 0u32;
        rec.events
            .iter()
            .map(|e| {
                let c = e.usage_completion_tokens.unwrap_or(prev);
                let d = c.saturating_sub(prev);
                prev = c.max(prev);
                d as f64
            })
            .collect()
    } else if tokenizer.is_enabled() {
        let mut start = 0usize;
        rec.events
            .iter()
            .map(|e| {
                let end = (e.text_end as usize).min(rec.output_text.len());
                let text = rec.output_text.get(start..end).unwrap_or("");
                start = end;
                tokenizer.count(text).unwrap_or(1) as f64
            })
            .collect()
    } else {
        vec![1.0; n]
    };
    let sum: f64 = raw.iter().sum();
    let scaled: Vec<f64> = if sum > 0.0 {
        raw.iter().map(|x| x * total as f64 / sum).collect()
    } else {
        vec![total as f64 / n as f64; n]
    };
    let mut out: Vec<u32> = scaled.iter().map(|x| x.floor() as u32).collect();
    let mut left = total.saturating_sub(out.iter().sum::<u32>());
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| {
        (scaled[b] - scaled[b].floor()).total_cmp(&(scaled[a] - scaled[a].floor()))
    });
    for &i in order.iter().cycle().take(n * 2) {
        if left == 0 {
            break;
        }
        out[i] += 1;
        left -= 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::record::{Event, ServerUsage};

    fn rec(send: u64, events: &[(u64, &str)], usage: Option<u32>) -> RequestRecord {
        let mut r = RequestRecord {
            t_sched: send,
            t_send: Some(send),
            ..Default::default()
        };
        for (t, text) in events {
            r.output_text.push_str(text);
            r.events.push(Event {
                at_ns: *t,
                text_end: r.output_text.len() as u32,
                usage_completion_tokens: None,
                reasoning: false,
            });
        }
        r.t_done = events.last().map_or(send, |e| e.0);
        r.usage = usage.map(|c| ServerUsage {
            completion_tokens: Some(c),
            ..Default::default()
        });
        r
    }

    const MS: u64 = 1_000_000;

    #[test]
    fn one_token_per_event() {
        let tok = Tokenizer::from_spec("o200k_base").unwrap();
        let r = rec(
            0,
            &[(100 * MS, " the"), (110 * MS, " cat"), (130 * MS, " sat")],
            Some(3),
        );
        let m = RequestMetrics::derive(&r, &tok);
        assert_eq!(m.ttft_ms, Some(100.0));
        assert_eq!(m.e2el_ms, Some(130.0));
        assert_eq!(m.tpot_ms, Some(15.0));
        assert_eq!(m.itl_ms, vec![10.0, 20.0]);
        assert_eq!(m.icl_ms, vec![10.0, 20.0]);
        assert_eq!((m.output_tokens, m.output_source), (3, TokenSource::Server));
        assert_eq!(m.client_output_tokens, Some(3));
        // E2EL = TTFT + generation time, exactly.
        assert_eq!(
            m.e2el_ms.unwrap(),
            m.ttft_ms.unwrap() + m.generation_ms.unwrap()
        );
    }

    #[test]
    fn several_tokens_per_event_split_the_gap() {
        let tok = Tokenizer::from_spec("o200k_base").unwrap();
        let r = rec(0, &[(50 * MS, " the cat"), (80 * MS, " sat on the")], None);
        let m = RequestMetrics::derive(&r, &tok);
        assert_eq!(
            (m.output_tokens, m.output_source),
            (5, TokenSource::Tokenizer)
        );
        assert_eq!(m.event_tokens, vec![2, 3]);
        assert_eq!(m.itl_ms, vec![10.0, 10.0, 10.0]);
        assert_eq!(m.icl_ms, vec![30.0]);
        assert_eq!(m.tpot_ms, Some(7.5));
    }

    #[test]
    fn tpot_undefined_below_two_tokens_and_no_tokenizer_falls_back_to_events() {
        let none = Tokenizer::from_spec("none").unwrap();
        let m = RequestMetrics::derive(&rec(0, &[(5 * MS, "x")], None), &none);
        assert_eq!(m.tpot_ms, None);
        assert_eq!((m.output_tokens, m.output_source), (1, TokenSource::Events));
    }

    #[test]
    fn server_count_rescales_event_tokens() {
        let tok = Tokenizer::from_spec("o200k_base").unwrap();
        // Server says 4 tokens over 2 events of one word each: 2 per event.
        let m = RequestMetrics::derive(&rec(0, &[(10 * MS, " a"), (30 * MS, " b")], Some(4)), &tok);
        assert_eq!(m.event_tokens, vec![2, 2]);
        assert_eq!(m.itl_ms, vec![10.0, 10.0]);
    }

    /// A server that streams one token per event but reports no usage: the
    /// events are the count, not tiktoken's reading of the text (the
    /// mistral.rs defect: 128 events counted as 165–179 tokens).
    #[test]
    fn without_usage_the_events_count_not_the_fixed_tokenizer() {
        let tok = Tokenizer::from_spec("o200k_base").unwrap();
        let mut r = rec(
            0,
            &[
                (10 * MS, " Zürich"),
                (20 * MS, "ologie"),
                (30 * MS, " xyzzy"),
                (40 * MS, "!"),
            ],
            None,
        );
        r.streamed = true;
        let m = RequestMetrics::derive(&r, &tok);
        assert!(m.client_output_tokens.unwrap() > 4, "{m:?}");
        assert_eq!((m.output_tokens, m.output_source), (4, TokenSource::Events));
        assert_eq!(m.tpot_ms, Some(10.0));
        // A streamed answer is counted by its events even when it says `length`.
        r.finish_reason = Some("length".into());
        r.max_tokens = Some(4);
        let m = RequestMetrics::derive(&r, &tok);
        assert_eq!((m.output_tokens, m.output_source), (4, TokenSource::Events));
        // Unstreamed, a `length` finish the text agrees with is exactly max_tokens.
        r.streamed = false;
        let m = RequestMetrics::derive(&r, &tok);
        assert_eq!((m.output_tokens, m.output_source), (4, TokenSource::Length));
        r.streamed = true;
        // The server's count wins over everything.
        r.usage = Some(ServerUsage {
            completion_tokens: Some(5),
            ..Default::default()
        });
        let m = RequestMetrics::derive(&r, &tok);
        assert_eq!((m.output_tokens, m.output_source), (5, TokenSource::Server));
    }

    /// A byte-level BPE vocabulary has tokens that are pieces of a
    /// character; llama.cpp streams them with the token that completes the
    /// character, so a `length` answer of 64 tokens came in fewer events.
    /// The shortfall the text can hide is counted; a larger one (the
    /// context ran out) is not, nor any on ASCII text.
    #[test]
    fn a_length_finish_counts_the_tokens_a_character_hid() {
        let tok = Tokenizer::from_spec("o200k_base").unwrap();
        assert_eq!(hidden_tokens_bound("abc"), 0);
        assert_eq!(hidden_tokens_bound("и τ"), 2);
        assert_eq!(hidden_tokens_bound("\u{4e00}\u{1f600}"), 5);
        // Eight events; the second held two byte tokens before its CJK
        // character was whole: 10 tokens generated.
        let text = [" a", "\u{4e00}", " b", " c", " d", " e", " f", " g"];
        let events: Vec<(u64, &str)> = (0..8)
            .map(|i| ((i + 1) * 10 * MS, text[i as usize]))
            .collect();
        let mut r = rec(0, &events, None);
        r.streamed = true;
        r.finish_reason = Some("length".into());
        r.max_tokens = Some(10);
        let m = RequestMetrics::derive(&r, &tok);
        assert_eq!(
            (m.output_tokens, m.output_source),
            (10, TokenSource::Length)
        );
        // One more than the text could hide: the events.
        r.max_tokens = Some(11);
        let m = RequestMetrics::derive(&r, &tok);
        assert_eq!((m.output_tokens, m.output_source), (8, TokenSource::Events));
        // A `stop` finish says nothing of how many: the events.
        r.finish_reason = Some("stop".into());
        r.max_tokens = Some(10);
        let m = RequestMetrics::derive(&r, &tok);
        assert_eq!((m.output_tokens, m.output_source), (8, TokenSource::Events));
        // More than a quarter short is a context that ran out, however much
        // the text could hide.
        let mut r = rec(
            0,
            &[(10 * MS, "\u{1f600}\u{1f600}\u{1f600}"), (20 * MS, "x")],
            None,
        );
        r.streamed = true;
        r.finish_reason = Some("length".into());
        r.max_tokens = Some(4);
        let m = RequestMetrics::derive(&r, &tok);
        assert_eq!((m.output_tokens, m.output_source), (2, TokenSource::Events));
    }

    /// Where the server said its context for one sequence (llama.cpp's
    /// slot), a `length` finish of a request that fits in it is
    /// `max_tokens` however far the events fell short; one that may not fit
    /// goes by the events' evidence.
    #[test]
    fn a_length_finish_within_the_context_is_max_tokens() {
        let tok = Tokenizer::from_spec("o200k_base").unwrap();
        let mut r = rec(0, &[(10 * MS, "\u{1f600}"), (20 * MS, "x")], None);
        r.streamed = true;
        r.finish_reason = Some("length".into());
        r.max_tokens = Some(64);
        r.prompt_tokens_client = Some(64);
        let m = RequestMetrics::derive(&r, &tok);
        assert_eq!((m.output_tokens, m.output_source), (2, TokenSource::Events));
        // 64 × 1.5 + 16 + 64 = 176 tokens of room needed.
        r.context_tokens = Some(176);
        let m = RequestMetrics::derive(&r, &tok);
        assert_eq!(
            (m.output_tokens, m.output_source),
            (64, TokenSource::Length)
        );
        r.context_tokens = Some(175);
        let m = RequestMetrics::derive(&r, &tok);
        assert_eq!((m.output_tokens, m.output_source), (2, TokenSource::Events));
        // Without the prompt's count nothing says it fits.
        r.context_tokens = Some(100_000);
        r.prompt_tokens_client = None;
        let m = RequestMetrics::derive(&r, &tok);
        assert_eq!((m.output_tokens, m.output_source), (2, TokenSource::Events));
    }

    /// llama.cpp says `length` when a slot's context runs out: an answer of
    /// one word is not the 64 tokens asked for, and no count from the
    /// client's side is ever above max_tokens.
    #[test]
    fn length_only_where_the_text_agrees_and_never_above_max_tokens() {
        let tok = Tokenizer::from_spec("o200k_base").unwrap();
        let mut r = rec(0, &[(10 * MS, " word")], None);
        r.finish_reason = Some("length".into());
        r.max_tokens = Some(64);
        let m = RequestMetrics::derive(&r, &tok);
        assert_eq!(
            (m.output_tokens, m.output_source),
            (1, TokenSource::Tokenizer)
        );
        assert!(m.count_evidence.length_refused);
        assert_eq!(m.tpot_ms, None, "TPOT is undefined below 2 tokens");
        // Streamed: the one event is the count, and no TPOT either.
        r.streamed = true;
        let m = RequestMetrics::derive(&r, &tok);
        assert_eq!((m.output_tokens, m.output_source), (1, TokenSource::Events));
        assert_eq!(m.tpot_ms, None);
        // A text that re-tokenizes longer than max_tokens is capped there.
        let mut r = rec(
            0,
            &[(10 * MS, " one two three four five six seven eight nine ten")],
            None,
        );
        r.max_tokens = Some(4);
        let m = RequestMetrics::derive(&r, &tok);
        assert_eq!(
            (m.output_tokens, m.output_source),
            (4, TokenSource::Tokenizer)
        );
        assert!(m.count_evidence.capped);
        // The server's own count is never capped: it is the evidence.
        r.usage = Some(ServerUsage {
            completion_tokens: Some(6),
            ..Default::default()
        });
        let m = RequestMetrics::derive(&r, &tok);
        assert_eq!((m.output_tokens, m.output_source), (6, TokenSource::Server));
    }
}
