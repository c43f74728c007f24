//! The shards' parts made one run: every record placed on the
//! coordinator's clock, all of them fed, in the order they finished, to one
//! [`Collector`] — the same accumulation one process does — so that every
//! figure (percentiles, intervals, SLO verdicts, goodput, time series,
//! saturation, errors by kind) is computed from the union, exactly.
//!
//! What could not be merged is said, never dropped: a shard that never
//! registered, died or went silent is named, with the requests its part of
//! the plan held that no record accounts for.

use serde::{Deserialize, Serialize};

use crate::load::executor::{ExecSummary, RunPlan};
use crate::measure::aggregate::{LineContext, RecordsSink};
use crate::measure::metrics::{Collector, RequestMetrics};
use crate::plan::shard::part::Part;
use crate::plan::shard::{LostShard, ShardOf};
use crate::request::record::RequestRecord;
use crate::tokenizer::Tokenizer;

/// What the merged result says about its shards.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ShardsReport {
    /// N.
    pub shards: u32,
    /// One entry per shard whose part (or some of it) arrived, by index.
    pub parts: Vec<ShardFigures>,
    /// Shards without a whole part, and why.
    pub lost: Vec<LostShard>,
    /// Planned measured requests of the lost shards that no record
    /// accounts for (None: the plan was bounded by time, not by count).
    pub unaccounted_requests: Option<u64>,
    /// Spread of the shards' starts (`ShardFigures::start_ms`), ms: how
    /// far apart the shards began sending, measured from their records.
    pub start_skew_ms: Option<f64>,
}

/// One shard's figures.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ShardFigures {
    pub shard: u32,
    /// The shard's clock minus the coordinator's (ns), and the round trip
    /// of the sample it came from (the offset is exact to within half).
    pub clock_offset_ns: i64,
    pub clock_rtt_ns: u64,
    /// When it started sending (its schedule's origin on the coordinator's
    /// clock plus its first request's lag), ms after the earliest shard.
    pub start_ms: Option<f64>,
    /// Its first request's schedule lag (send − scheduled), ms: how late it
    /// acted on the common start.
    pub start_late_ms: Option<f64>,
    pub sent_warmup: u64,
    pub sent_measured: u64,
    /// Records in its part (warm-up included).
    pub records: u64,
    /// Schedule lag (send − scheduled) of its measured requests, ms: median and p99.
    pub schedule_lag_p50_ms: Option<f64>,
    pub schedule_lag_p99_ms: Option<f64>,
    /// Its process's CPU over its run, in cores (CPU seconds per wall second).
    pub cpu_cores: Option<f64>,
    /// Its part ended with its end line.
    pub whole: bool,
}

/// One shard's part as it came (from the coordinator's link or a file).
pub struct ShardPart {
    pub shard: u32,
    pub part: Part,
}

/// Where the merge's records and figures go.
pub struct MergeInto<'a> {
    pub collector: &'a mut Collector,
    pub sink: &'a mut RecordsSink,
    pub tokenizer: &'a Tokenizer,
    pub line: &'a LineContext,
}

/// Merge `parts` (of `shards`; `lost` names every shard without a whole
/// part) into `into`; returns the run's combined execution summary and
/// the shards' report. `plan` is the whole plan (for the requests a lost
/// shard leaves unaccounted).
pub fn merge(
    parts: Vec<ShardPart>,
    shards: u32,
    lost: Vec<LostShard>,
    plan: &RunPlan,
    into: MergeInto<'_>,
) -> (ExecSummary, ShardsReport) {
    let mut exec = ExecSummary::default();
    let mut figures = Vec::new();
    // Reserved whole: growing it by doubling copied every record again.
    let total = parts.iter().map(|p| p.part.records.len()).sum();
    let mut records: Vec<RequestRecord> = Vec::with_capacity(total);
    let mut measure_start: Option<u64> = None;
    let mut starts = Vec::new();
    for ShardPart { shard, part } in parts {
        let offset = part.header.as_ref().map_or(0, |h| h.clock_offset_ns);
        let place = |t: u64| (t as i64).saturating_sub(offset).max(0) as u64;
        if let Some(m) = part.measure_start_ns.map(place) {
            measure_start = Some(measure_start.map_or(m, |s| s.min(m)));
        }
        let mut f = shard_figures(shard, &part);
        if let Some(end) = &part.end {
            add_exec(&mut exec, &end.exec, place);
        }
        if let Some(end) = part.end.as_ref().filter(|_| !part.records.is_empty()) {
            // When it started sending, on the coordinator's clock: its
            // schedule's origin plus its first request's lag.
            let late = f.start_late_ms.map_or(0, |ms| (ms * 1e6) as u64);
            starts.push((figures.len(), place(end.start_ns) + late));
        }
        for mut r in part.records {
            place_record(&mut r, shard, place);
            records.push(r);
        }
        f.whole = part.end.is_some();
        figures.push(f);
    }
    if let Some(&(_, first)) = starts.iter().min_by_key(|s| s.1) {
        for &(i, s) in &starts {
            figures[i].start_ms = Some((s - first) as f64 / 1e6);
        }
    }
    let start_skew_ms = match (
        starts.iter().map(|s| s.1).min(),
        starts.iter().map(|s| s.1).max(),
    ) {
        (Some(a), Some(b)) if starts.len() > 1 => Some((b - a) as f64 / 1e6),
        _ => None,
    };
    // The order one process's aggregator sees them in: as they finish.
    records.sort_by_key(|r| r.t_done);
    if let Some(t) = measure_start {
        into.collector.measure_start(t);
    }
    for rec in &records {
        let m = RequestMetrics::derive(rec, into.tokenizer);
        into.collector.add(rec, &m);
        into.sink.append(rec, &m, into.line);
    }
    into.sink.flush();
    let unaccounted_requests = unaccounted(&lost, &records, shards, plan);
    figures.sort_by_key(|f| f.shard);
    let report = ShardsReport {
        shards,
        parts: figures,
        lost,
        unaccounted_requests,
        start_skew_ms,
    };
    (exec, report)
}

/// A shard's record on the coordinator's clock, marked with its shard.
fn place_record(r: &mut RequestRecord, shard: u32, place: impl Fn(u64) -> u64) {
    r.shard = shard;
    r.t_sched = place(r.t_sched);
    r.t_connect = r.t_connect.map(&place);
    r.t_send = r.t_send.map(&place);
    r.t_head = r.t_head.map(&place);
    r.t_done = place(r.t_done);
    for e in &mut r.events {
        e.at_ns = place(e.at_ns);
    }
}

/// Add one shard's summary to the run's: counts add up, a stop anywhere
/// is the run's, the ramp ends when the last shard's ends.
fn add_exec(exec: &mut ExecSummary, e: &ExecSummary, place: impl Fn(u64) -> u64) {
    // A shard that sent nothing (it sat the run out) says nothing of the source.
    let sent = e.sent_warmup + e.sent_measured > 0;
    exec.sent_warmup += e.sent_warmup;
    exec.sent_measured += e.sent_measured;
    exec.interrupted |= e.interrupted;
    exec.drain_timed_out |= e.drain_timed_out;
    exec.source_exhausted |= e.source_exhausted && sent;
    exec.records_lost += e.records_lost;
    if let Some(r) = e.ramp_end_ns.map(place) {
        exec.ramp_end_ns = Some(exec.ramp_end_ns.map_or(r, |x| x.max(r)));
    }
}

/// The figures of one shard's part, from its records (on its own clock).
fn shard_figures(shard: u32, part: &Part) -> ShardFigures {
    let mut lags: Vec<f64> = part
        .records
        .iter()
        .filter(|r| !r.warmup)
        .filter_map(|r| r.t_send.map(|s| s.saturating_sub(r.t_sched) as f64 / 1e6))
        .collect();
    lags.sort_by(f64::total_cmp);
    let pct = |p: f64| goodput_common::percentile::percentile_sorted(&lags, p);
    let end = part.end.as_ref();
    ShardFigures {
        shard,
        clock_offset_ns: part.header.as_ref().map_or(0, |h| h.clock_offset_ns),
        clock_rtt_ns: part.header.as_ref().map_or(0, |h| h.clock_rtt_ns),
        start_ms: None,
        start_late_ms: part
            .records
            .iter()
            .min_by_key(|r| r.t_sched)
            .and_then(|r| r.t_send.map(|s| s.saturating_sub(r.t_sched) as f64 / 1e6)),
        sent_warmup: end.map_or(0, |e| e.exec.sent_warmup),
        sent_measured: end.map_or(0, |e| e.exec.sent_measured),
        records: part.records.len() as u64,
        schedule_lag_p50_ms: pct(50.0),
        schedule_lag_p99_ms: pct(99.0),
        cpu_cores: end.and_then(|e| e.cpu_s.filter(|_| e.wall_s > 0.0).map(|c| c / e.wall_s)),
        whole: false,
    }
}

/// The measured requests the lost shards' parts of `plan` held that none
/// of their records accounts for (None when the plan has no count).
fn unaccounted(
    lost: &[LostShard],
    records: &[RequestRecord],
    shards: u32,
    plan: &RunPlan,
) -> Option<u64> {
    if lost.is_empty() {
        return Some(0);
    }
    let mut total = 0;
    for l in lost {
        let of = ShardOf::new(shards, l.shard).ok()?;
        let planned = plan.for_shard(of).ok()?.num_prompts?;
        let seen = records
            .iter()
            .filter(|r| r.shard == l.shard && !r.warmup)
            .count() as u64;
        total += planned.saturating_sub(seen);
    }
    Some(total)
}

/// What the merged result says in words about its shards: any lost, the
/// requests they leave unaccounted, how far apart the shards started.
pub fn notes(r: &ShardsReport) -> Vec<String> {
    let mut notes = Vec::new();
    for l in &r.lost {
        notes.push(format!(
            "shard {} of {} is missing from this result: {}",
            l.shard, r.shards, l.why
        ));
    }
    match (r.lost.is_empty(), r.unaccounted_requests) {
        (true, _) => {}
        (false, Some(n)) => notes.push(format!(
            "{n} planned requests of the missing shards are unaccounted for: the figures cover the shards that reported"
        )),
        (false, None) => notes.push(
            "the missing shards' requests cannot be counted (the plan is bounded by time): the figures cover the shards that reported".into(),
        ),
    }
    if let Some(skew) = r.start_skew_ms {
        notes.push(format!(
            "{} shards merged; they started sending within {skew:.2} ms of each other",
            r.parts.len()
        ));
    }
    notes
}
