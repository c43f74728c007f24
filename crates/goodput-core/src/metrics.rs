//! Metrics: every derived figure, computed in one place from raw records.
//!
//! [`RequestMetrics::derive`] turns one [`RequestRecord`] into TTFT, TPOT,
//! ITL, ICL, E2EL and token counts exactly as `spec/metrics.md` defines them;
//! [`Collector`] accumulates the measured phase; [`Collector::summarize`]
//! produces the run's [`RunMetrics`]. Time units: ms for latencies, seconds
//! for durations, per second for throughputs.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::record::{ErrorKind, RequestRecord};
use crate::stats::{self, Distribution, Estimate};
use crate::tokenizer::Tokenizer;

/// Where a token count came from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenSource {
    Server,
    #[default]
    Tokenizer,
    Events,
}

impl TokenSource {
    pub fn as_str(self) -> &'static str {
        match self {
            TokenSource::Server => "server",
            TokenSource::Tokenizer => "tokenizer",
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
    pub ttft_ms: Option<f64>,
    pub ttft_sched_ms: Option<f64>,
    /// Time to the first non-reasoning token; only when reasoning deltas occurred.
    pub ttfot_ms: Option<f64>,
    pub schedule_lag_ms: f64,
    pub connect_ms: Option<f64>,
    pub e2el_ms: Option<f64>,
    pub e2el_sched_ms: Option<f64>,
    pub generation_ms: Option<f64>,
    pub tpot_ms: Option<f64>,
    /// Largest per-token gap (the request's worst ITL), for SLO `itl` terms.
    pub max_itl_ms: Option<f64>,
    /// Per-token inter-token latencies (`n_i` values of `gap / n_i`).
    pub itl_ms: Vec<f32>,
    /// Inter-chunk gaps, one per gap.
    pub icl_ms: Vec<f32>,
    pub input_tokens: Option<u32>,
    pub input_source: Option<TokenSource>,
    pub output_tokens: u32,
    pub output_source: TokenSource,
    pub client_output_tokens: Option<u32>,
    /// Output tokens of each content-bearing event (integers summing to `output_tokens`).
    pub event_tokens: Vec<u32>,
}

impl RequestMetrics {
    /// Derive every per-request figure from the raw record.
    pub fn derive(rec: &RequestRecord, tokenizer: &Tokenizer) -> RequestMetrics {
        let mut m = RequestMetrics {
            schedule_lag_ms: ms(rec.t_sched, rec.t_send),
            connect_ms: rec.t_connect.map(|c| ms(c, rec.t_send)),
            ..Default::default()
        };
        let usage = rec.usage.unwrap_or_default();
        m.client_output_tokens = tokenizer.count(&rec.output_text).map(|c| c as u32);
        (m.output_tokens, m.output_source) = match (usage.completion_tokens, m.client_output_tokens)
        {
            (Some(n), _) => (n, TokenSource::Server),
            (None, Some(n)) => (n, TokenSource::Tokenizer),
            (None, None) => (rec.events.len() as u32, TokenSource::Events),
        };
        (m.input_tokens, m.input_source) = match (usage.prompt_tokens, rec.prompt_tokens_client) {
            (Some(n), _) => (Some(n), Some(TokenSource::Server)),
            (None, Some(n)) => (Some(n), Some(TokenSource::Tokenizer)),
            (None, None) => (None, None),
        };
        let (Some(first), Some(last)) = (rec.events.first(), rec.events.last()) else {
            return m;
        };
        m.ttft_ms = Some(ms(rec.t_send, first.at_ns));
        m.ttft_sched_ms = Some(ms(rec.t_sched, first.at_ns));
        if rec.events.iter().any(|e| e.reasoning) {
            m.ttfot_ms = rec
                .events
                .iter()
                .find(|e| !e.reasoning)
                .map(|e| ms(rec.t_send, e.at_ns));
        }
        m.e2el_ms = Some(ms(rec.t_send, last.at_ns));
        m.e2el_sched_ms = Some(ms(rec.t_sched, last.at_ns));
        m.generation_ms = Some(ms(first.at_ns, last.at_ns));
        if m.output_tokens >= 2 {
            m.tpot_ms = Some(ms(first.at_ns, last.at_ns) / (m.output_tokens - 1) as f64);
        }
        m.event_tokens = event_tokens(rec, tokenizer, m.output_tokens);
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

/// Width of the time-series buckets.
pub const BUCKET_S: f64 = 0.1;

/// Accumulates the measured phase, one finished request at a time.
#[derive(Debug, Default)]
pub struct Collector {
    pub ttft: Vec<f64>,
    pub ttft_sched: Vec<f64>,
    pub ttfot: Vec<f64>,
    pub tpot: Vec<f64>,
    pub e2el: Vec<f64>,
    pub e2el_sched: Vec<f64>,
    pub generation: Vec<f64>,
    pub schedule_lag: Vec<f64>,
    pub connect: Vec<f64>,
    pub itl: Vec<f32>,
    pub itl_groups: Vec<u32>,
    pub icl: Vec<f32>,
    pub icl_groups: Vec<u32>,
    pub completed: u64,
    pub failed: u64,
    pub incomplete: u64,
    pub errors: BTreeMap<String, u64>,
    pub total_input_tokens: u64,
    pub total_output_tokens: u64,
    pub input_sources: BTreeMap<TokenSource, u64>,
    pub output_sources: BTreeMap<TokenSource, u64>,
    /// Requests where server and client counts differ by more than 5 %.
    pub count_discrepancies: u64,
    pub count_compared: u64,
    /// Requests whose output length differs from the `max_tokens` sent.
    pub length_mismatches: u64,
    pub first_send_ns: Option<u64>,
    pub last_send_ns: u64,
    pub last_done_ns: u64,
    pub sends: u64,
    /// Per bucket (from `first_send_ns`): completions, output tokens (by event arrival), sends.
    pub bucket_completions: Vec<f64>,
    pub bucket_tokens: Vec<f64>,
    pub bucket_sends: Vec<f64>,
    pub bucket_done: Vec<f64>,
    pub sum_e2el_ms: f64,
    /// A sample error message per kind, for the summary.
    pub sample_errors: BTreeMap<String, String>,
    origin_ns: Option<u64>,
}

fn bump(v: &mut Vec<f64>, i: usize, x: f64) {
    if v.len() <= i {
        v.resize(i + 1, 0.0);
    }
    v[i] += x;
}

impl Collector {
    /// Anchor the time series (the first measured `t_sched`).
    fn bucket(&mut self, t_ns: u64) -> usize {
        let origin = *self.origin_ns.get_or_insert(t_ns);
        (t_ns.saturating_sub(origin) as f64 / 1e9 / BUCKET_S) as usize
    }

    /// Add one measured-phase request.
    pub fn add(&mut self, rec: &RequestRecord, m: &RequestMetrics) {
        if rec.warmup {
            return;
        }
        if rec.incomplete() {
            self.incomplete += 1;
            return;
        }
        self.sends += 1;
        self.first_send_ns = Some(self.first_send_ns.map_or(rec.t_send, |f| f.min(rec.t_send)));
        self.last_send_ns = self.last_send_ns.max(rec.t_send);
        self.last_done_ns = self.last_done_ns.max(rec.t_done);
        self.schedule_lag.push(m.schedule_lag_ms);
        let b = self.bucket(rec.t_send);
        bump(&mut self.bucket_sends, b, 1.0);
        let b = self.bucket(rec.t_done);
        bump(&mut self.bucket_done, b, 1.0);
        if let Some(e) = &rec.error {
            self.failed += 1;
            let key = match (e.kind, rec.http_status) {
                (ErrorKind::HttpStatus, Some(code)) => format!("http_{code}"),
                (kind, _) => kind.as_str().to_string(),
            };
            *self.errors.entry(key.clone()).or_default() += 1;
            self.sample_errors
                .entry(key)
                .or_insert_with(|| e.message.clone());
            return;
        }
        self.completed += 1;
        bump(&mut self.bucket_completions, b, 1.0);
        for (e, &k) in rec.events.iter().zip(&m.event_tokens) {
            let b = self.bucket(e.at_ns);
            bump(&mut self.bucket_tokens, b, k as f64);
        }
        if m.event_tokens.is_empty() && m.output_tokens > 0 {
            bump(&mut self.bucket_tokens, b, m.output_tokens as f64);
        }
        let push = |v: &mut Vec<f64>, x: Option<f64>| {
            if let Some(x) = x {
                v.push(x)
            }
        };
        push(&mut self.ttft, m.ttft_ms);
        push(&mut self.ttft_sched, m.ttft_sched_ms);
        push(&mut self.ttfot, m.ttfot_ms);
        push(&mut self.tpot, m.tpot_ms);
        push(&mut self.e2el, m.e2el_ms);
        push(&mut self.e2el_sched, m.e2el_sched_ms);
        push(&mut self.generation, m.generation_ms);
        push(&mut self.connect, m.connect_ms);
        self.sum_e2el_ms += m.e2el_ms.unwrap_or(0.0);
        if !m.itl_ms.is_empty() {
            self.itl.extend_from_slice(&m.itl_ms);
            self.itl_groups.push(self.itl.len() as u32);
        }
        if !m.icl_ms.is_empty() {
            self.icl.extend_from_slice(&m.icl_ms);
            self.icl_groups.push(self.icl.len() as u32);
        }
        self.total_input_tokens += m.input_tokens.unwrap_or(0) as u64;
        self.total_output_tokens += m.output_tokens as u64;
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
    }
}

/// Run-level figures of the measured phase.
#[derive(Debug, Clone, Serialize)]
pub struct RunMetrics {
    pub completed: u64,
    pub failed: u64,
    pub incomplete: u64,
    pub error_rate: f64,
    pub errors: BTreeMap<String, u64>,
    pub sample_errors: BTreeMap<String, String>,
    pub duration_s: f64,
    pub total_input_tokens: u64,
    pub total_output_tokens: u64,
    pub request_throughput: Estimate,
    pub output_throughput: Estimate,
    pub total_token_throughput: f64,
    pub input_throughput: f64,
    pub steady_state: Option<SteadyState>,
    pub achieved_request_rate: Option<f64>,
    pub mean_in_flight: f64,
    pub ttft: Option<Distribution>,
    pub ttft_sched: Option<Distribution>,
    pub ttfot: Option<Distribution>,
    pub tpot: Option<Distribution>,
    pub itl: Option<Distribution>,
    pub icl: Option<Distribution>,
    pub e2el: Option<Distribution>,
    pub e2el_sched: Option<Distribution>,
    pub generation: Option<Distribution>,
    pub schedule_lag: Option<Distribution>,
    pub connect: Option<Distribution>,
    pub input_sources: BTreeMap<TokenSource, u64>,
    pub output_sources: BTreeMap<TokenSource, u64>,
    pub count_discrepancy_share: Option<f64>,
    pub length_mismatch_share: Option<f64>,
    pub timeseries: TimeSeries,
}

#[derive(Debug, Clone, Serialize)]
pub struct SteadyState {
    pub start_s: f64,
    pub end_s: f64,
    pub request_throughput: f64,
    pub output_throughput: f64,
}

/// Per-bucket series from the start of the measured phase.
#[derive(Debug, Clone, Serialize)]
pub struct TimeSeries {
    pub bucket_s: f64,
    pub sends: Vec<f64>,
    pub completions: Vec<f64>,
    pub output_tokens: Vec<f64>,
    pub in_flight: Vec<f64>,
}

impl Collector {
    /// Compute the run's figures. `ramp_end_ns`: when the target load was
    /// first reached (for the steady-state window).
    pub fn summarize(
        &self,
        percentiles: &[f64],
        ramp_end_ns: Option<u64>,
        seed: u64,
    ) -> RunMetrics {
        let first = self.first_send_ns.unwrap_or(0);
        let duration_s = self.last_done_ns.saturating_sub(first) as f64 / 1e9;
        let done = self.completed + self.failed;
        let blocks = |v: &[f64]| -> Vec<f64> {
            let per = (1.0 / BUCKET_S).round() as usize;
            let full = ((duration_s / 1.0).floor() as usize).min(v.len().div_ceil(per));
            (0..full)
                .map(|i| v.iter().skip(i * per).take(per).sum())
                .collect()
        };
        let request_throughput = stats::rate_with_ci(
            self.completed as f64,
            duration_s,
            &blocks(&self.bucket_completions),
            1.0,
            seed,
        );
        let output_throughput = stats::rate_with_ci(
            self.total_output_tokens as f64,
            duration_s,
            &blocks(&self.bucket_tokens),
            1.0,
            seed + 1,
        );
        let per_s = |x: u64| {
            if duration_s > 0.0 {
                x as f64 / duration_s
            } else {
                0.0
            }
        };
        let steady_state = self.steady_state(ramp_end_ns);
        let window = self.last_send_ns.saturating_sub(first) as f64 / 1e9;
        let achieved_request_rate =
            (self.sends >= 2 && window > 0.0).then(|| (self.sends - 1) as f64 / window);
        let mut in_flight = Vec::with_capacity(self.bucket_sends.len());
        let mut acc = 0.0;
        for i in 0..self.bucket_sends.len().max(self.bucket_done.len()) {
            acc += self.bucket_sends.get(i).copied().unwrap_or(0.0)
                - self.bucket_done.get(i).copied().unwrap_or(0.0);
            in_flight.push(acc.max(0.0));
        }
        let d = |v: &Vec<f64>| stats::describe(v.clone(), percentiles);
        let itl = stats::describe_pooled(&self.itl, &self.itl_groups, percentiles, seed + 2);
        RunMetrics {
            completed: self.completed,
            failed: self.failed,
            incomplete: self.incomplete,
            error_rate: if done > 0 {
                self.failed as f64 / done as f64
            } else {
                0.0
            },
            errors: self.errors.clone(),
            sample_errors: self.sample_errors.clone(),
            duration_s,
            total_input_tokens: self.total_input_tokens,
            total_output_tokens: self.total_output_tokens,
            request_throughput,
            output_throughput,
            total_token_throughput: per_s(self.total_input_tokens + self.total_output_tokens),
            input_throughput: per_s(self.total_input_tokens),
            steady_state,
            achieved_request_rate,
            mean_in_flight: if duration_s > 0.0 {
                self.sum_e2el_ms / 1e3 / duration_s
            } else {
                0.0
            },
            ttft: d(&self.ttft),
            ttft_sched: d(&self.ttft_sched),
            ttfot: d(&self.ttfot),
            tpot: d(&self.tpot),
            itl: itl.clone(),
            // With one token per event ICL equals ITL: do not compute it twice.
            icl: if self.icl == self.itl && self.icl_groups == self.itl_groups {
                itl
            } else {
                stats::describe_pooled(&self.icl, &self.icl_groups, percentiles, seed + 3)
            },
            e2el: d(&self.e2el),
            e2el_sched: d(&self.e2el_sched),
            generation: d(&self.generation),
            schedule_lag: d(&self.schedule_lag),
            connect: d(&self.connect),
            input_sources: self.input_sources.clone(),
            output_sources: self.output_sources.clone(),
            count_discrepancy_share: (self.count_compared > 0)
                .then(|| self.count_discrepancies as f64 / self.count_compared as f64),
            length_mismatch_share: (self.completed > 0)
                .then(|| self.length_mismatches as f64 / self.completed as f64),
            timeseries: TimeSeries {
                bucket_s: BUCKET_S,
                sends: self.bucket_sends.clone(),
                completions: self.bucket_completions.clone(),
                output_tokens: self.bucket_tokens.clone(),
                in_flight,
            },
        }
    }

    /// Throughput between the end of ramp-up and the last send, over whole buckets.
    fn steady_state(&self, ramp_end_ns: Option<u64>) -> Option<SteadyState> {
        let origin = self.origin_ns?;
        let start = ramp_end_ns.unwrap_or(self.first_send_ns?).max(origin);
        let sb = ((start - origin) as f64 / 1e9 / BUCKET_S).ceil() as usize;
        let eb =
            ((self.last_send_ns.saturating_sub(origin)) as f64 / 1e9 / BUCKET_S).floor() as usize;
        if eb <= sb + 5 {
            return None;
        }
        let span = (eb - sb) as f64 * BUCKET_S;
        let sum = |v: &[f64]| v.iter().skip(sb).take(eb - sb).sum::<f64>();
        Some(SteadyState {
            start_s: sb as f64 * BUCKET_S,
            end_s: eb as f64 * BUCKET_S,
            request_throughput: sum(&self.bucket_completions) / span,
            output_throughput: sum(&self.bucket_tokens) / span,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Event, ServerUsage};

    fn rec(send: u64, events: &[(u64, &str)], usage: Option<u32>) -> RequestRecord {
        let mut r = RequestRecord {
            t_sched: send,
            t_send: send,
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
}
