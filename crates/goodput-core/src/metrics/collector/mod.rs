//! The measured phase, accumulated one finished request at a time, and
//! summarized into the run's figures.
//!
//! Definitions (`spec/metrics.md`): `duration` runs from the first real
//! `t_send` of the measured phase to the last `t_done`; a request that never
//! got a connection has no send time and is in no latency, lag or duration
//! figure (it is a failure of its kind). The time series starts at the
//! measured phase's first scheduled send (announced by the executor before
//! any measured request goes out), so every send and completion falls in the
//! bucket of its own time. Mean in flight (Little's law) is the time every
//! sent request spent in flight within the run — failures included, and
//! requests cut by the drain timeout up to the run's last end — / duration:
//! the average of the in-flight series over the same span.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::registry::Metric;
use super::saturation::{self, Saturation};
use super::{RequestMetrics, TokenSource};
use crate::record::{ErrorKind, RequestRecord};
use crate::slo::{self, Slo, SloOutcome, TermOutcome, Threshold};
use crate::stats::{self, Distribution, Estimate, Ordered};
use crate::verdict::Verdict;

/// Width of the time-series buckets.
pub const BUCKET_S: f64 = 0.1;

/// Accumulates the measured phase, one finished request at a time.
#[derive(Debug, Default)]
pub struct Collector {
    /// Per-request values of each non-pooled metric (ms).
    values: BTreeMap<Metric, super::samples::Samples>,
    itl: super::pooled::Pooled,
    icl: super::pooled::Pooled,
    completed: u64,
    failed: u64,
    incomplete: u64,
    errors: BTreeMap<String, u64>,
    sample_errors: BTreeMap<String, String>,
    total_input_tokens: u64,
    total_output_tokens: u64,
    input_sources: BTreeMap<TokenSource, u64>,
    output_sources: BTreeMap<TokenSource, u64>,
    count_discrepancies: u64,
    count_compared: u64,
    length_mismatches: u64,
    mix: super::mix::MixAcc,
    quality: crate::quality::QualityAcc,
    /// Completed with a `stop` finish before the `max_tokens` sent.
    stopped_before_max: u64,
    /// `length` finishes the stream showed short of max_tokens; client-side
    /// counts capped at max_tokens.
    length_refused: u64,
    capped_at_max_tokens: u64,
    /// Σ (server − client) prompt tokens, and over how many requests.
    input_server_minus_client: i64,
    input_compared: u64,
    first_send_ns: Option<u64>,
    last_send_ns: u64,
    last_done_ns: u64,
    sends: u64,
    /// Σ (t_done − t_send) over sent requests, ns.
    busy_ns: u128,
    /// The measured phase's first scheduled send: bucket 0 starts here.
    origin_ns: Option<u64>,
    bucket_completions: Vec<f64>,
    bucket_tokens: Vec<f64>,
    bucket_sends: Vec<f64>,
    bucket_done: Vec<f64>,
    /// Requests sent, and requests that got their first token (or ended
    /// without one), per bucket: their running difference is the number
    /// waiting for a first token — the server's queue, seen from outside.
    bucket_waiting_in: Vec<f64>,
    /// Output tokens streamed by every measured request, and the last end
    /// or cut of one (ns).
    streamed_tokens: u64,
    last_end_ns: u64,
    bucket_waiting_out: Vec<f64>,
    bucket_failures: BTreeMap<String, Vec<f64>>,
    /// Per-request thresholds of a good request, and whether latencies are
    /// judged from the schedule (open loop).
    thresholds: Vec<Threshold>,
    open_loop: bool,
    good: u64,
    good_output_tokens: u64,
    /// (send time since the origin in s, the TTFT a user saw in ms).
    ttft_points: Vec<(f32, f32)>,
    /// Every `ttft_stride`-th TTFT point is kept (doubling as the run
    /// grows past [`TTFT_POINTS`]): the trend fit needs a bounded sample.
    ttft_stride: u64,
    ttft_seen: u64,
    /// The measured phase's scheduled times: first, last, count.
    sched_first_ns: Option<u64>,
    sched_last_ns: u64,
    sched_count: u64,
    early: Option<EarlyStop>,
    /// Send times and judged values for the schedule adjustment ([`super::control`]).
    control: Option<super::control::ControlTrace>,
    /// (t_send, t_done) of requests cut by the drain timeout: in flight
    /// during the run, so part of Little's law up to the run's end.
    cut_intervals: Vec<(u64, u64)>,
    sessions: BTreeMap<u64, SessionAcc>,
    turns: BTreeMap<u32, TurnAcc>,
    /// (request id, hash of the output text) of completed measured
    /// requests, when kept (`--repeat`: outputs compared across repeats).
    outputs: Option<Vec<(u64, u64)>>,
    /// Reasoning tokens of completed requests, and whether any reasoned.
    reasoning_tokens: u64,
    reasoned: bool,
}

/// One session of the measured phase, so far.
#[derive(Debug, Default)]
struct SessionAcc {
    start_ns: u64,
    last_done_ns: u64,
    turns_ok: u32,
    turns: u32,
    failed: bool,
}

/// Most (send time, TTFT) points kept for the saturation trend.
const TTFT_POINTS: usize = 1 << 16;

/// One turn index across sessions.
#[derive(Debug, Default)]
struct TurnAcc {
    ttft: Vec<f64>,
    prompt_tokens: u64,
    cached_tokens: u64,
}

/// Per-turn and per-session figures of a multi-turn run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionSummary {
    /// Sessions with at least one measured turn.
    pub sessions: u64,
    /// Sessions whose every turn completed.
    pub sessions_completed: u64,
    pub turns_completed: u64,
    /// Session duration (first turn's send to last turn's end, ms), completed sessions.
    pub duration: Option<Distribution>,
    /// TTFT and prefix-cache share by turn index: later turns resend the
    /// conversation, so the cache shows at work here.
    pub by_turn: Vec<TurnFigures>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnFigures {
    pub turn: u32,
    pub completed: u64,
    pub ttft_mean_ms: f64,
    pub ttft_p50_ms: f64,
    /// Server-reported cached prompt tokens / prompt tokens, where reported.
    pub cached_share: Option<f64>,
}

/// Ends a sweep point as soon as its SLO verdict is settled.
///
/// Looks are planned up front at 32, 64, 128, ... finished measured requests
/// (up to the point's planned size), and each uses a binomial
/// order-statistic interval at confidence 1 − α/K for K looks (Bonferroni),
/// so the chance that any look settles a term wrongly stays below α whatever
/// happens between looks (see [`crate::verdict`]). Responses finish out of
/// order — slow ones last — so a look counts the requests still in flight
/// against a pass (as if they were infinitely slow) and in favour of a fail
/// (as if they were instant), and failed requests against a pass: an early
/// verdict is the one the rest of the run could not overturn. Pooled ITL
/// terms are never settled early (their per-token values are not
/// independent draws). The binomial argument assumes independent requests;
/// queueing makes neighbours' latencies correlated, which is why a settled
/// verdict is only used to end a sweep point, and is reported as such.
#[derive(Debug, Clone)]
pub struct EarlyStop {
    terms: Vec<slo::SloTerm>,
    looks: Vec<u64>,
    next: usize,
    confidence: f64,
    settled: Option<Verdict>,
}

impl EarlyStop {
    /// Looks up to `planned` finished requests; `alpha` is the overall error.
    pub fn new(terms: Vec<slo::SloTerm>, planned: u64, alpha: f64) -> Option<EarlyStop> {
        let mut looks = Vec::new();
        let mut n = 32u64;
        while n < planned {
            looks.push(n);
            n *= 2;
        }
        if terms.is_empty() || looks.is_empty() {
            return None;
        }
        let k = looks.len() as f64;
        Some(EarlyStop {
            terms,
            looks,
            next: 0,
            confidence: 1.0 - alpha / k,
            settled: None,
        })
    }

    pub fn settled(&self) -> Option<Verdict> {
        self.settled
    }
}

fn bump(v: &mut Vec<f64>, i: usize, x: f64) {
    if v.len() <= i {
        v.resize(i + 1, 0.0);
    }
    v[i] += x;
}

fn error_key(rec: &RequestRecord) -> Option<String> {
    let e = rec.error.as_ref()?;
    Some(match (e.kind, rec.http_status) {
        (ErrorKind::HttpStatus, Some(code)) => format!("http_{code}"),
        (kind, _) => kind.as_str().to_string(),
    })
}

impl Collector {
    /// A collector that counts good requests against `thresholds`, judging
    /// latencies from the schedule in open loop.
    pub fn new(thresholds: Vec<Threshold>, open_loop: bool) -> Self {
        Collector {
            thresholds,
            open_loop,
            ..Default::default()
        }
    }

    /// End the run early once its SLO verdict is settled ([`EarlyStop`]).
    pub fn with_early_stop(mut self, early: Option<EarlyStop>) -> Self {
        self.early = early;
        self
    }

    /// Adjust the SLO terms' percentiles for the burstiness of the run's own
    /// arrival schedule ([`super::control`]); open loop only.
    pub fn with_schedule_control(
        mut self,
        spec: Option<super::control::ControlSpec>,
        load: crate::schedule::Load,
        terms: &[slo::SloTerm],
    ) -> Self {
        self.control = spec
            .filter(|_| load.is_open() && !terms.is_empty())
            .map(|s| super::control::ControlTrace::new(s, load, terms.to_vec()));
        self
    }

    /// Keep a hash of each completed request's output (`--repeat`).
    pub fn with_output_hashes(mut self, keep: bool) -> Self {
        self.outputs = keep.then(Vec::new);
        self
    }

    /// The kept output hashes, by request id (empty unless kept).
    pub fn take_output_hashes(&mut self) -> Vec<(u64, u64)> {
        self.outputs.take().unwrap_or_default()
    }

    /// The early verdict, if the run was settled before its end.
    pub fn early_verdict(&self) -> Option<Verdict> {
        self.early.as_ref().and_then(EarlyStop::settled)
    }

    /// At a planned look, whether the SLO verdict is settled; `pending`:
    /// measured requests sent but not finished. Returns the verdict once, when
    /// it settles.
    pub fn check_early(&mut self, pending: u64) -> Option<Verdict> {
        let early = self.early.as_ref()?;
        if early.settled.is_some() {
            return None;
        }
        let done = self.completed + self.failed;
        let next = *early.looks.get(early.next)?;
        if done < next {
            return None;
        }
        let conf = early.confidence;
        let mut all_pass = true;
        let mut any_fail = false;
        for term in &early.terms {
            let judged = slo::judged_metric(term.metric, self.open_loop);
            if judged.info().pooled {
                all_pass = false;
                continue;
            }
            let v = self
                .values
                .get(&judged)
                .map(|s| s.view())
                .unwrap_or(super::samples::View::Sorted(Vec::new()));
            let q = term.percentile / 100.0;
            // Pass: failed and in-flight requests as if infinitely slow (after v).
            let n_pass = v.count() + (self.failed + pending) as usize;
            let (_, u) = stats::binomial_ci_ranks(n_pass, q, conf);
            let passes = u >= 1 && u <= v.count() && v.at(u - 1) <= term.threshold_ms;
            // Fail: in-flight requests as if instant (before v).
            let n_fail = v.count() + pending as usize;
            let (l, _) = stats::binomial_ci_ranks(n_fail, q, conf);
            let fails = l > pending as usize
                && l <= n_fail
                && v.at(l - 1 - pending as usize) > term.threshold_ms;
            all_pass &= passes;
            any_fail |= fails;
        }
        let early = self.early.as_mut()?;
        early.next += 1;
        // A pass also needs the error-rate and attainment limits, which the
        // run checks at its end: it is only settled early with no failure yet.
        let settled = if any_fail {
            Some(Verdict::Fail)
        } else if all_pass && self.failed == 0 {
            Some(Verdict::Pass)
        } else {
            None
        };
        early.settled = settled;
        settled
    }

    /// The measured phase starts at `t_sched_ns`: the time series' origin.
    pub fn measure_start(&mut self, t_sched_ns: u64) {
        self.origin_ns.get_or_insert(t_sched_ns);
    }

    fn bucket(&mut self, t_ns: u64) -> usize {
        // Records arrive only after the executor announced the phase; the
        // fallback keeps a hand-fed collector (tests) working.
        let origin = *self.origin_ns.get_or_insert(t_ns);
        (t_ns.saturating_sub(origin) as f64 / 1e9 / BUCKET_S) as usize
    }

    /// Add one request (warm-up requests are ignored).
    pub fn add(&mut self, rec: &RequestRecord, m: &RequestMetrics) {
        if let Some(c) = self.control.as_mut() {
            let values = if rec.warmup || !rec.ok() {
                Vec::new()
            } else {
                let open = self.open_loop;
                c.terms()
                    .iter()
                    .map(|t| slo::judged_metric(t.metric, open).value(m))
                    .collect()
            };
            c.push(rec.t_sched, !rec.warmup, values);
        }
        if rec.warmup {
            return;
        }
        if let (Some(outputs), true) = (self.outputs.as_mut(), rec.ok()) {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            rec.output_text.hash(&mut h);
            outputs.push((rec.request_id, h.finish()));
        }
        // Scheduled and sent requests count toward the send window, the
        // schedule's rate and the in-flight series whatever their outcome;
        // one still running at the drain timeout (incomplete) is neither
        // completed nor failed, and not part of the duration.
        let incomplete = rec.incomplete();
        if let Some(t_send) = rec.t_send {
            // The schedule's intended rate over the same requests as the
            // achieved rate (sent ones): a connect failure is not lag.
            self.sched_first_ns = Some(
                self.sched_first_ns
                    .map_or(rec.t_sched, |f| f.min(rec.t_sched)),
            );
            self.sched_last_ns = self.sched_last_ns.max(rec.t_sched);
            self.sched_count += 1;
            self.sends += 1;
            self.first_send_ns = Some(self.first_send_ns.map_or(t_send, |f| f.min(t_send)));
            self.last_send_ns = self.last_send_ns.max(t_send);
            let b = self.bucket(t_send);
            bump(&mut self.bucket_sends, b, 1.0);
            let b = self.bucket(rec.t_done);
            bump(&mut self.bucket_done, b, 1.0);
            let b = self.bucket(t_send);
            bump(&mut self.bucket_waiting_in, b, 1.0);
            let first = rec.events.first().map_or(rec.t_done, |e| e.at_ns);
            let b = self.bucket(first);
            bump(&mut self.bucket_waiting_out, b, 1.0);
            if incomplete {
                self.cut_intervals.push((t_send, rec.t_done));
            } else {
                self.last_done_ns = self.last_done_ns.max(rec.t_done);
                self.busy_ns += u128::from(rec.t_done.saturating_sub(t_send));
            }
        }
        if rec.t_send.is_some() {
            // The prompt went out whatever came back: the workload as sent
            // counts the ones the server refused (an over-long prompt's 400).
            self.mix.add_sent(m);
            self.last_end_ns = self.last_end_ns.max(rec.t_done);
            self.streamed_tokens += if m.event_tokens.is_empty() {
                rec.events.len() as u64
            } else {
                m.event_tokens.iter().map(|&k| u64::from(k)).sum()
            };
        }
        if incomplete {
            self.incomplete += 1;
            return;
        }
        let done_bucket = self.bucket(rec.t_done);
        if let Some(key) = error_key(rec) {
            if let Some((id, _, turns)) = rec.session {
                let s = self.sessions.entry(id).or_default();
                s.failed = true;
                s.turns = turns;
            }
            self.failed += 1;
            *self.errors.entry(key.clone()).or_default() += 1;
            bump(
                self.bucket_failures.entry(key.clone()).or_default(),
                done_bucket,
                1.0,
            );
            if let Some(e) = &rec.error {
                self.sample_errors
                    .entry(key)
                    .or_insert_with(|| e.message.clone());
            }
            return;
        }
        self.completed += 1;
        bump(&mut self.bucket_completions, done_bucket, 1.0);
        if let Some((id, turn, turns)) = rec.session {
            let s = self.sessions.entry(id).or_default();
            if turn == 0 {
                s.start_ns = rec.t_send.unwrap_or(rec.t_sched);
            }
            s.turns = turns;
            s.turns_ok += 1;
            s.last_done_ns = s.last_done_ns.max(rec.t_done);
            let t = self.turns.entry(turn).or_default();
            if let Some(x) = m.ttft_ms {
                t.ttft.push(x);
            }
            if let Some(u) = rec.usage {
                if let (Some(p), Some(c)) = (u.prompt_tokens, u.cached_tokens) {
                    t.prompt_tokens += u64::from(p);
                    t.cached_tokens += u64::from(c);
                }
            }
        }
        if slo::is_good(m, &self.thresholds, self.open_loop) {
            self.good += 1;
            self.good_output_tokens += u64::from(m.output_tokens);
        }
        if let (Some(t_send), Some(origin), Some(ttft)) = (
            rec.t_send,
            self.origin_ns,
            slo::judged_metric(Metric::Ttft, self.open_loop).value(m),
        ) {
            let at = t_send.saturating_sub(origin) as f64 / 1e9;
            self.ttft_seen += 1;
            if self.ttft_seen.is_multiple_of(self.ttft_stride.max(1)) {
                self.ttft_points.push((at as f32, ttft as f32));
                if self.ttft_points.len() >= TTFT_POINTS {
                    // Keep every other point; from now on take half as many.
                    let mut i = 0;
                    self.ttft_points.retain(|_| {
                        i += 1;
                        i % 2 == 0
                    });
                    self.ttft_stride = self.ttft_stride.max(1) * 2;
                }
            }
        }
        for (e, &k) in rec.events.iter().zip(&m.event_tokens) {
            let b = self.bucket(e.at_ns);
            bump(&mut self.bucket_tokens, b, k as f64);
        }
        if m.event_tokens.is_empty() && m.output_tokens > 0 {
            bump(&mut self.bucket_tokens, done_bucket, m.output_tokens as f64);
        }
        for metric in Metric::ALL {
            if metric.info().pooled {
                continue;
            }
            if let Some(x) = metric.value(m) {
                self.values.entry(metric).or_default().push(x);
            }
        }
        self.itl.add(&m.itl_ms);
        self.icl.add(&m.icl_ms);
        self.total_input_tokens += m.input_tokens.unwrap_or(0) as u64;
        self.total_output_tokens += m.output_tokens as u64;
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
        if let Some(reference) = &rec.reference {
            self.quality.add(reference, &rec.output_text);
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
}

/// Throughputs over the run's duration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Throughput {
    /// Completed requests/s, with a block-bootstrap interval over the whole
    /// run ([`stats::rate_with_ci`]).
    pub request: Estimate,
    /// Output tokens/s, with a block-bootstrap interval over the whole run.
    pub output: Estimate,
    /// Input tokens/s.
    pub input: f64,
    /// Input + output tokens/s.
    pub total_token: f64,
    /// Output tokens streamed per second by every measured request —
    /// completed, failed or still running at the end — counted when they
    /// arrived, over the first send to the last response end or cut. The
    /// one throughput of a sweep point: an overloaded point whose requests
    /// outlast it streams tokens although none completed.
    pub streamed_output: f64,
}

/// Failures by kind.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ErrorSummary {
    /// failed / (completed + failed).
    pub error_rate: f64,
    pub by_kind: BTreeMap<String, u64>,
    /// One message per kind.
    pub examples: BTreeMap<String, String>,
}

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
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SteadyState {
    pub start_s: f64,
    pub end_s: f64,
    pub request_throughput: f64,
    pub output_throughput: f64,
}

/// Per-bucket series from the start of the measured phase.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TimeSeries {
    pub bucket_s: f64,
    pub sends: Vec<f64>,
    pub completions: Vec<f64>,
    pub output_tokens: Vec<f64>,
    pub in_flight: Vec<f64>,
    /// Failures by kind, per bucket of their end.
    #[serde(default)]
    pub failures: BTreeMap<String, Vec<f64>>,
}

/// Every distribution of a run, by metric.
pub type Distributions = BTreeMap<Metric, Distribution>;

/// Run-level figures of the measured phase.
#[derive(Debug, Clone, PartialEq)]
pub struct RunMetrics {
    pub completed: u64,
    pub failed: u64,
    pub incomplete: u64,
    /// Requests that reached the server (had a `t_send`).
    pub sent: u64,
    pub duration_s: f64,
    pub total_input_tokens: u64,
    pub total_output_tokens: u64,
    pub throughput: Throughput,
    pub steady_state: Option<SteadyState>,
    pub achieved_request_rate: Option<f64>,
    pub mean_in_flight: f64,
    pub distributions: Distributions,
    pub errors: ErrorSummary,
    pub tokens: TokenSummary,
    /// The workload as sent: length mix and prefix-cache shares.
    pub workload: super::mix::WorkloadMix,
    /// Outputs against their references, where the workload has them.
    pub quality: Option<crate::quality::Quality>,
    pub timeseries: TimeSeries,
    pub saturation: Saturation,
    /// Against the SLO, when one was given (`--slo`, `--goodput`).
    pub slo: Option<SloOutcome>,
    /// The SLO terms' percentiles adjusted for the burstiness of the run's
    /// own arrival schedule (a goodput search's points; [`super::control`]).
    pub schedule_control: Option<super::control::ScheduleControl>,
    /// Multi-turn sessions, when the workload has them.
    pub sessions: Option<SessionSummary>,
}

impl RunMetrics {
    pub fn get(&self, m: Metric) -> Option<&Distribution> {
        self.distributions.get(&m)
    }
}

impl Collector {
    /// Whether the pooled ITL went past its exact limit and is kept as a
    /// 0.1 %-resolution histogram (see [`super::pooled`]).
    pub fn itl_bounded(&self) -> bool {
        self.itl.bounded() || self.icl.bounded()
    }

    /// Whether per-request values went past their exact limit and are kept
    /// as 0.1 %-resolution histograms (see [`super::samples`]).
    pub fn values_bounded(&self) -> bool {
        self.values
            .values()
            .any(super::samples::Samples::is_bounded)
    }

    /// Compute the run's figures. `ramp_end_ns`: when the target load was
    /// first reached (for the steady-state window).
    pub fn summarize(
        &self,
        percentiles: &[f64],
        ramp_end_ns: Option<u64>,
        seed: u64,
        slo: Option<&Slo>,
    ) -> RunMetrics {
        let first = self.first_send_ns.unwrap_or(0);
        let duration_s = match self.first_send_ns {
            Some(f) => self.last_done_ns.saturating_sub(f) as f64 / 1e9,
            None => 0.0,
        };
        let done = self.completed + self.failed;
        // Whole 1 s blocks over the measured window, from the series' origin
        // (at or before the first send): a second after the last completion
        // (a server that stopped answering) is a block of 0, not left out.
        let blocks = |v: &[f64]| -> Vec<f64> {
            let per = (1.0 / BUCKET_S).round() as usize;
            (0..duration_s.floor() as usize)
                .map(|i| v.iter().skip(i * per).take(per).sum())
                .collect()
        };
        let per_s = |x: u64| {
            if duration_s > 0.0 {
                x as f64 / duration_s
            } else {
                0.0
            }
        };
        let throughput = Throughput {
            request: stats::rate_with_ci(
                self.completed as f64,
                duration_s,
                &blocks(&self.bucket_completions),
                1.0,
                seed,
            ),
            output: stats::rate_with_ci(
                self.total_output_tokens as f64,
                duration_s,
                &blocks(&self.bucket_tokens),
                1.0,
                seed + 1,
            ),
            input: per_s(self.total_input_tokens),
            total_token: per_s(self.total_input_tokens + self.total_output_tokens),
            streamed_output: match self.first_send_ns {
                Some(f) if self.last_end_ns > f => {
                    self.streamed_tokens as f64 / ((self.last_end_ns - f) as f64 / 1e9)
                }
                _ => 0.0,
            },
        };
        let window = self.last_send_ns.saturating_sub(first) as f64 / 1e9;
        // An arrival rate is an open-loop figure: a closed loop sends when slots free.
        let achieved_request_rate = (self.open_loop && self.sends >= 2 && window > 0.0)
            .then(|| (self.sends - 1) as f64 / window);
        let mut in_flight = Vec::with_capacity(self.bucket_sends.len());
        let mut acc = 0.0;
        for i in 0..self.bucket_sends.len().max(self.bucket_done.len()) {
            acc += self.bucket_sends.get(i).copied().unwrap_or(0.0)
                - self.bucket_done.get(i).copied().unwrap_or(0.0);
            in_flight.push(acc.max(0.0));
        }
        let mut distributions = Distributions::new();
        for (m, v) in &self.values {
            if let Some(d) = v.describe(percentiles) {
                distributions.insert(*m, d);
            }
        }
        let itl = self.itl.describe(percentiles, seed + 2);
        // With one token per event ICL equals ITL: do not compute it twice.
        let icl = if self.icl.same_as(&self.itl) {
            itl.clone()
        } else {
            self.icl.describe(percentiles, seed + 3)
        };
        for (m, d) in [(Metric::Itl, itl), (Metric::Icl, icl)] {
            if let Some(d) = d {
                distributions.insert(m, d);
            }
        }
        let mut saturation = self.saturation(&distributions, achieved_request_rate, &in_flight);
        // Most requests still running when the run ended: no trend can be
        // fitted to completions that never came, but the server is behind.
        if self.incomplete >= 5 && self.incomplete > self.completed {
            saturation.saturated = true;
            saturation.findings.push(format!(
                "{} of {} requests sent were still running when the run ended: the server is far behind the offered load",
                self.incomplete,
                self.completed + self.failed + self.incomplete
            ));
        }
        let slo = slo.map(|slo| self.judge(slo, &distributions, duration_s));
        let schedule_control = self.control.as_ref().and_then(|c| {
            let raw: Vec<Option<f64>> = c
                .terms()
                .iter()
                .map(|t| {
                    let judged = slo::judged_metric(t.metric, self.open_loop);
                    if judged.info().pooled {
                        return None;
                    }
                    distributions
                        .get(&judged)
                        .and_then(|d| d.percentiles.iter().find(|p| p.0 == t.percentile))
                        .map(|p| p.1.value)
                })
                .collect();
            c.finish(&raw)
        });
        RunMetrics {
            completed: self.completed,
            failed: self.failed,
            incomplete: self.incomplete,
            sent: self.sends,
            duration_s,
            total_input_tokens: self.total_input_tokens,
            total_output_tokens: self.total_output_tokens,
            throughput,
            steady_state: self.steady_state(ramp_end_ns),
            achieved_request_rate,
            mean_in_flight: if duration_s > 0.0 {
                let cut: u128 = self
                    .cut_intervals
                    .iter()
                    .map(|&(s, d)| u128::from(d.min(self.last_done_ns).saturating_sub(s)))
                    .sum();
                (self.busy_ns + cut) as f64 / 1e9 / duration_s
            } else {
                0.0
            },
            distributions,
            errors: ErrorSummary {
                error_rate: if done > 0 {
                    self.failed as f64 / done as f64
                } else {
                    0.0
                },
                by_kind: self.errors.clone(),
                examples: self.sample_errors.clone(),
            },
            tokens: TokenSummary {
                input_sources: self.input_sources.clone(),
                output_sources: self.output_sources.clone(),
                count_discrepancy_share: (self.count_compared > 0)
                    .then(|| self.count_discrepancies as f64 / self.count_compared as f64),
                output_length_mismatch_share: (self.completed > 0)
                    .then(|| self.length_mismatches as f64 / self.completed as f64),
                stopped_before_max_tokens_share: (self.completed > 0)
                    .then(|| self.stopped_before_max as f64 / self.completed as f64),
                length_short_of_max_tokens: self.length_refused,
                capped_at_max_tokens: self.capped_at_max_tokens,
                input_server_minus_client_mean: (self.input_compared > 0)
                    .then(|| self.input_server_minus_client as f64 / self.input_compared as f64),
                reasoning_tokens: self.reasoned.then_some(self.reasoning_tokens),
                answer_tokens: self.reasoned.then(|| {
                    self.total_output_tokens
                        .saturating_sub(self.reasoning_tokens)
                }),
            },
            workload: self.mix.summary(),
            quality: self.quality.summary(),
            timeseries: TimeSeries {
                bucket_s: BUCKET_S,
                sends: self.bucket_sends.clone(),
                completions: self.bucket_completions.clone(),
                output_tokens: self.bucket_tokens.clone(),
                in_flight,
                failures: self.bucket_failures.clone(),
            },
            saturation,
            slo,
            schedule_control,
            sessions: self.session_summary(percentiles),
        }
    }

    fn session_summary(&self, percentiles: &[f64]) -> Option<SessionSummary> {
        if self.sessions.is_empty() {
            return None;
        }
        let complete: Vec<&SessionAcc> = self
            .sessions
            .values()
            .filter(|s| !s.failed && s.turns > 0 && s.turns_ok == s.turns)
            .collect();
        let durations: Vec<f64> = complete
            .iter()
            .map(|s| s.last_done_ns.saturating_sub(s.start_ns) as f64 / 1e6)
            .collect();
        let by_turn = self
            .turns
            .iter()
            .map(|(&turn, t)| {
                let mut v = t.ttft.clone();
                v.sort_by(f64::total_cmp);
                TurnFigures {
                    turn,
                    completed: t.ttft.len() as u64,
                    ttft_mean_ms: if v.is_empty() {
                        0.0
                    } else {
                        v.iter().sum::<f64>() / v.len() as f64
                    },
                    ttft_p50_ms: stats::percentile_sorted(&v, 50.0).unwrap_or(0.0),
                    cached_share: (t.prompt_tokens > 0)
                        .then(|| t.cached_tokens as f64 / t.prompt_tokens as f64),
                }
            })
            .collect();
        Some(SessionSummary {
            sessions: self.sessions.len() as u64,
            sessions_completed: complete.len() as u64,
            turns_completed: self.sessions.values().map(|s| u64::from(s.turns_ok)).sum(),
            duration: stats::describe(durations, percentiles),
            by_turn,
        })
    }

    /// The saturation checks ([`saturation`]): the schedule's own rate, the
    /// queue of requests waiting for a first token over the sending window,
    /// and the trends of in-flight requests and TTFT after the pipeline filled.
    fn saturation(
        &self,
        d: &Distributions,
        achieved: Option<f64>,
        in_flight: &[f64],
    ) -> Saturation {
        let intended = match (self.open_loop, self.sched_first_ns) {
            (true, Some(first)) if self.sched_count >= 2 && self.sched_last_ns > first => {
                Some((self.sched_count - 1) as f64 / ((self.sched_last_ns - first) as f64 / 1e9))
            }
            _ => None,
        };
        let (Some(origin), Some(first)) = (self.origin_ns, self.first_send_ns) else {
            return saturation::assess(&saturation::Inputs {
                intended_rate: intended,
                achieved_rate: achieved,
                ..Default::default()
            });
        };
        let fill_s = d
            .get(&Metric::E2el)
            .and_then(|e| e.percentiles.iter().find(|p| p.0 == 50.0))
            .map_or(0.0, |p| p.1.value / 1e3);
        let send_start = first.saturating_sub(origin) as f64 / 1e9;
        let end = self.last_send_ns.saturating_sub(origin) as f64 / 1e9;
        // The pipeline fills in about one E2EL; a queued run's E2EL can be
        // longer than the window itself, so at most 30 % of it is skipped.
        let start = send_start + fill_s.min(0.3 * (end - send_start).max(0.0));
        let series = |v: &[f64]| -> Vec<(f64, f64)> {
            v.iter()
                .enumerate()
                .map(|(i, &x)| ((i as f64 + 0.5) * BUCKET_S, x))
                .collect()
        };
        let mut waiting = Vec::with_capacity(self.bucket_waiting_in.len());
        let mut acc = 0.0;
        for i in 0..self.bucket_waiting_in.len() {
            acc +=
                self.bucket_waiting_in[i] - self.bucket_waiting_out.get(i).copied().unwrap_or(0.0);
            waiting.push(acc.max(0.0));
        }
        let ttft: Vec<(f64, f64)> = self
            .ttft_points
            .iter()
            .map(|&(t, v)| (t as f64, v as f64))
            .collect();
        saturation::assess(&saturation::Inputs {
            intended_rate: intended,
            achieved_rate: achieved,
            in_flight: &series(in_flight),
            waiting: &series(&waiting),
            sends: &series(&self.bucket_sends),
            ttft: &ttft,
            window: (start, end),
            sending: (send_start, end),
        })
    }

    /// How the run did against `slo`.
    fn judge(&self, slo: &Slo, d: &Distributions, duration_s: f64) -> SloOutcome {
        let mut reasons = Vec::new();
        let terms: Vec<TermOutcome> = slo
            .terms
            .iter()
            .map(|&term| {
                let outcome = self.judge_term(term, d);
                if !outcome.passes {
                    reasons.push(match outcome.estimate {
                        Some(e) => format!(
                            "p{} {} {} > {}",
                            stats::pct_label(term.percentile),
                            term.metric.info().short,
                            slo::format_ms(e.value),
                            slo::format_ms(term.threshold_ms)
                        ),
                        None => format!("no {} values to judge {term}", term.metric.info().short),
                    });
                }
                outcome
            })
            .collect();
        let done = self.completed + self.failed;
        let error_rate = if done > 0 {
            self.failed as f64 / done as f64
        } else {
            0.0
        };
        let error_rate_ok = done > 0 && error_rate <= slo.max_error_rate;
        if !error_rate_ok {
            reasons.push(format!(
                "error rate {:.2}% > {:.2}%",
                error_rate * 100.0,
                slo.max_error_rate * 100.0
            ));
        }
        let attainment = if done > 0 {
            self.good as f64 / done as f64
        } else {
            0.0
        };
        if let Some(a) = slo.attainment.filter(|&a| attainment < a) {
            reasons.push(format!(
                "SLO attainment {:.1}% < {:.1}%",
                attainment * 100.0,
                a * 100.0
            ));
        }
        let per_s = |x: u64| {
            if duration_s > 0.0 {
                x as f64 / duration_s
            } else {
                0.0
            }
        };
        SloOutcome {
            slo: slo.clone(),
            inconclusive: terms.iter().any(|t| t.verdict == Verdict::Inconclusive),
            meets: reasons.is_empty(),
            terms,
            request_goodput: per_s(self.good),
            token_goodput: per_s(self.good_output_tokens),
            attainment,
            good_requests: self.good,
            error_rate_ok,
            reasons,
        }
    }

    /// One term on the latency a user saw: per-request values by binomial
    /// order statistics, pooled ITL by its bootstrap interval.
    fn judge_term(&self, term: slo::SloTerm, d: &Distributions) -> TermOutcome {
        let judged = slo::judged_metric(term.metric, self.open_loop);
        let mut out = TermOutcome {
            term,
            judged,
            estimate: None,
            passes: false,
            verdict: Verdict::Inconclusive,
            more_requests_to_settle: None,
        };
        if judged.info().pooled {
            let e = d
                .get(&judged)
                .and_then(|d| d.percentiles.iter().find(|p| p.0 == term.percentile))
                .map(|p| p.1);
            out.estimate = e;
            out.passes = e.is_some_and(|e| e.value <= term.threshold_ms);
            out.verdict = match e {
                Some(e) if e.hi.is_some_and(|h| h <= term.threshold_ms) => Verdict::Pass,
                Some(e) if e.lo.is_some_and(|l| l > term.threshold_ms) => Verdict::Fail,
                _ => Verdict::Inconclusive,
            };
            return out;
        }
        let Some(v) = self.values.get(&judged).filter(|v| !v.is_empty()) else {
            return out;
        };
        let j = v.judge(term.percentile / 100.0, term.threshold_ms);
        out.estimate = Some(j.estimate);
        out.passes = j.point_passes;
        out.verdict = j.verdict;
        out.more_requests_to_settle = j
            .more_requests_to_settle
            .filter(|_| j.verdict == Verdict::Inconclusive);
        out
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
        // A fold from +0.0: an empty sum of f64 is -0.0.
        let sum = |v: &[f64]| v.iter().skip(sb).take(eb - sb).fold(0.0, |a, b| a + b);
        Some(SteadyState {
            start_s: sb as f64 * BUCKET_S,
            end_s: eb as f64 * BUCKET_S,
            request_throughput: sum(&self.bucket_completions) / span,
            output_throughput: sum(&self.bucket_tokens) / span,
        })
    }
}

#[cfg(test)]
mod tests;
