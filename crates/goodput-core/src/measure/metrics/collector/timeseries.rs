//! The time series of the measured phase, in buckets of [`BUCKET_S`] from
//! its first scheduled send (announced by the executor before any measured
//! request goes out), so every send and completion falls in the bucket of
//! its own time; and the throughput windows read from it (whole seconds for
//! the rate intervals, the steady state after ramp-up).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::outcomes::Outcome;
use crate::measure::metrics::RequestMetrics;
use crate::request::record::{ErrorKey, RequestRecord};

/// Width of the time-series buckets.
pub const BUCKET_S: f64 = 0.1;

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
    pub failures: BTreeMap<ErrorKey, Vec<f64>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SteadyState {
    pub start_s: f64,
    pub end_s: f64,
    pub request_throughput: f64,
    pub output_throughput: f64,
}

/// The buckets, filled one finished request at a time.
#[derive(Debug, Default)]
pub(super) struct Buckets {
    /// The measured phase's first scheduled send: bucket 0 starts here.
    origin_ns: Option<u64>,
    completions: Vec<f64>,
    tokens: Vec<f64>,
    sends: Vec<f64>,
    done: Vec<f64>,
    /// Requests sent, and requests that got their first token (or ended
    /// without one), per bucket: their running difference is the number
    /// waiting for a first token — the server's queue, seen from outside.
    waiting_in: Vec<f64>,
    waiting_out: Vec<f64>,
    failures: BTreeMap<ErrorKey, Vec<f64>>,
}

fn bump(v: &mut Vec<f64>, i: usize, x: f64) {
    if v.len() <= i {
        v.resize(i + 1, 0.0);
    }
    v[i] += x;
}

/// A running sum of `into − out`, per bucket, never below 0.
fn running_difference(into: &[f64], out: &[f64], len: usize) -> Vec<f64> {
    let mut series = Vec::with_capacity(into.len());
    let mut acc = 0.0;
    for i in 0..len {
        acc += into.get(i).copied().unwrap_or(0.0) - out.get(i).copied().unwrap_or(0.0);
        series.push(acc.max(0.0));
    }
    series
}

impl Buckets {
    /// The measured phase starts at `t_sched_ns`: the series' origin.
    pub(super) fn measure_start(&mut self, t_sched_ns: u64) {
        self.origin_ns.get_or_insert(t_sched_ns);
    }

    /// The series' origin, once known.
    pub(super) fn origin_ns(&self) -> Option<u64> {
        self.origin_ns
    }

    fn bucket(&mut self, t_ns: u64) -> usize {
        // Records arrive only after the executor announced the phase; the
        // fallback keeps a hand-fed collector (tests) working.
        let origin = *self.origin_ns.get_or_insert(t_ns);
        (t_ns.saturating_sub(origin) as f64 / 1e9 / BUCKET_S) as usize
    }

    /// One measured request: a sent one in the send, in-flight and queue
    /// series whatever its outcome; then its failure, or its completion and
    /// output tokens (each event's in the bucket it arrived in).
    pub(super) fn add(&mut self, rec: &RequestRecord, m: &RequestMetrics, outcome: &Outcome) {
        if let Some(t_send) = rec.t_send {
            let b = self.bucket(t_send);
            bump(&mut self.sends, b, 1.0);
            let b = self.bucket(rec.t_done);
            bump(&mut self.done, b, 1.0);
            let b = self.bucket(t_send);
            bump(&mut self.waiting_in, b, 1.0);
            let first = rec.events.first().map_or(rec.t_done, |e| e.at_ns);
            let b = self.bucket(first);
            bump(&mut self.waiting_out, b, 1.0);
        }
        if *outcome == Outcome::Incomplete {
            return;
        }
        let done_bucket = self.bucket(rec.t_done);
        if let Outcome::Failed(key) = outcome {
            bump(self.failures.entry(*key).or_default(), done_bucket, 1.0);
            return;
        }
        bump(&mut self.completions, done_bucket, 1.0);
        for (e, &k) in rec.events.iter().zip(&m.event_tokens) {
            let b = self.bucket(e.at_ns);
            bump(&mut self.tokens, b, k as f64);
        }
        if m.event_tokens.is_empty() && m.output_tokens > 0 {
            bump(&mut self.tokens, done_bucket, m.output_tokens as f64);
        }
    }

    /// Requests in flight per bucket: sent so far minus ended so far.
    pub(super) fn in_flight(&self) -> Vec<f64> {
        let len = self.sends.len().max(self.done.len());
        running_difference(&self.sends, &self.done, len)
    }

    /// Requests waiting for their first token per bucket, over the buckets
    /// of sends.
    pub(super) fn waiting(&self) -> Vec<f64> {
        running_difference(&self.waiting_in, &self.waiting_out, self.waiting_in.len())
    }

    /// Requests sent per bucket.
    pub(super) fn sends(&self) -> &[f64] {
        &self.sends
    }

    /// Completions and output tokens in whole 1 s blocks over a measured
    /// window of `duration_s`, from the series' origin (at or before the
    /// first send): a second after the last completion (a server that
    /// stopped answering) is a block of 0, not left out.
    pub(super) fn second_blocks(&self, duration_s: f64) -> (Vec<f64>, Vec<f64>) {
        let blocks = |v: &[f64]| -> Vec<f64> {
            let per = (1.0 / BUCKET_S).round() as usize;
            (0..duration_s.floor() as usize)
                .map(|i| v.iter().skip(i * per).take(per).sum())
                .collect()
        };
        (blocks(&self.completions), blocks(&self.tokens))
    }

    /// Throughput between the end of ramp-up (else the first send) and the
    /// last send, over whole buckets.
    pub(super) fn steady_state(
        &self,
        ramp_end_ns: Option<u64>,
        first_send_ns: Option<u64>,
        last_send_ns: u64,
    ) -> Option<SteadyState> {
        let origin = self.origin_ns?;
        let start = ramp_end_ns.unwrap_or(first_send_ns?).max(origin);
        let sb = ((start - origin) as f64 / 1e9 / BUCKET_S).ceil() as usize;
        let eb = ((last_send_ns.saturating_sub(origin)) as f64 / 1e9 / BUCKET_S).floor() as usize;
        if eb <= sb + 5 {
            return None;
        }
        let span = (eb - sb) as f64 * BUCKET_S;
        // A fold from +0.0: an empty sum of f64 is -0.0.
        let sum = |v: &[f64]| v.iter().skip(sb).take(eb - sb).fold(0.0, |a, b| a + b);
        Some(SteadyState {
            start_s: sb as f64 * BUCKET_S,
            end_s: eb as f64 * BUCKET_S,
            request_throughput: sum(&self.completions) / span,
            output_throughput: sum(&self.tokens) / span,
        })
    }

    /// The series as reported, with the in-flight series computed once by
    /// the caller.
    pub(super) fn finish(&self, in_flight: Vec<f64>) -> TimeSeries {
        TimeSeries {
            bucket_s: BUCKET_S,
            sends: self.sends.clone(),
            completions: self.completions.clone(),
            output_tokens: self.tokens.clone(),
            in_flight,
            failures: self.failures.clone(),
        }
    }
}
