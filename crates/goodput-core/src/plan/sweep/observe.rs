//! What a sweep point shows the goodput search ([`crate::plan::search`]): whether
//! it passed, its SLO margin, and the search's configuration from the floor.

use std::time::Duration;

use super::result::SweepPoint;
use crate::load::schedule::Load;
use crate::output::result::RunResult;
use crate::plan::search::{Observation, SearchConfig};

/// Whether a point passes: it met the SLO (the settled early verdict, else
/// the point estimate, with the error-rate and attainment limits applied to
/// what it measured) and its queue was not growing. A saturated point that
/// met the SLO did so only because it ended before its queue built.
pub(super) fn point_meets(result: &RunResult) -> Option<bool> {
    let met = match (result.early_stop, &result.metrics.slo) {
        (Some(crate::measure::verdict::Verdict::Pass), Some(s)) => {
            Some(s.error_rate_ok && s.slo.attainment.is_none_or(|a| s.attainment >= a))
        }
        (Some(v), _) => Some(v == crate::measure::verdict::Verdict::Pass),
        (None, Some(s)) => Some(s.meets),
        (None, None) => None,
    };
    met.map(|m| m && !result.metrics.saturation.saturated)
}

/// What a point shows the search: its SLO margin (each term's percentile,
/// adjusted for the point's own schedule where it could be, over its
/// threshold, in logs; the largest), whether it failed whatever its
/// latencies (saturated, errors, attainment), its requests and its time.
pub(super) fn observe(pt: &SweepPoint, measuring: bool) -> Observation {
    observe_metrics(
        &pt.result.metrics,
        &pt.result.config.load,
        pt.result.early_stop,
        pt.wall_s,
        measuring,
    )
}

/// What a point shows the search (as `observe`), from a run's metrics (a
/// virtual-time model of a point has no whole [`RunResult`]).
pub fn observe_metrics(
    m: &crate::measure::metrics::RunMetrics,
    load: &Load,
    early_stop: Option<crate::measure::verdict::Verdict>,
    wall_s: f64,
    measuring: bool,
) -> Observation {
    let adjusted = |term: &str| {
        m.schedule_control
            .as_ref()
            .and_then(|c| c.terms.iter().find(|t| t.term == term))
            .map(|t| t.adjusted_ms)
    };
    let mut margin = m.slo.as_ref().and_then(|s| {
        let tasks = s.task_terms.iter().filter_map(|t| {
            let v = t.estimate?.value;
            Some((v.max(1e-9) / t.term.threshold_ms).ln())
        });
        s.terms
            .iter()
            .filter_map(|t| {
                let v = adjusted(&t.term.to_string()).or(t.estimate.map(|e| e.value))?;
                Some((v.max(1e-9) / t.term.threshold_ms).ln())
            })
            .chain(tasks)
            .reduce(f64::max)
    });
    // A settled early verdict is the evidence: a point settled failing
    // never passes on its partial estimate.
    if early_stop == Some(crate::measure::verdict::Verdict::Fail) {
        margin = Some(margin.unwrap_or(f64::INFINITY).max(1e-6));
    }
    let hard_fail = m
        .slo
        .as_ref()
        .is_some_and(|s| !s.error_rate_ok || s.slo.attainment.is_some_and(|a| s.attainment < a));
    // An agent workload's load is tasks: its rate is tasks/s, and what a
    // point holds and served is counted in tasks.
    let (requests, achieved) = match &m.tasks {
        Some(t) => (t.completed, (t.completed > 0).then_some(t.throughput)),
        None => (
            m.completed,
            (m.completed > 0).then_some(m.throughput.request.value),
        ),
    };
    Observation {
        rate: load.offered_rate().unwrap_or(0.0),
        requests,
        margin,
        hard_fail,
        saturated: m.saturation.saturated,
        wall_s,
        measuring,
        settled: early_stop.is_some(),
        bounded: m.slo.as_ref().is_some_and(|s| !s.inconclusive),
        achieved,
    }
}

/// The search's configuration and the schedule adjustment of its points,
/// from the concurrency-1 floor run (its median TTFT and throughput) and
/// the SLO: the search starts at four times the floor's throughput, and
/// its measuring points hold enough requests to bound every term's
/// percentile.
pub fn search_config(
    floor_ttft_p50_ms: Option<f64>,
    floor_throughput: f64,
    slo: &crate::measure::slo::Slo,
    precision: f64,
    budget: crate::plan::search::Budget,
    explore: Duration,
    measure: Duration,
) -> (
    SearchConfig,
    Option<crate::measure::metrics::control_variate::ControlSpec>,
) {
    // The surrogate queue of the schedule adjustment serves each request
    // in the idle server's median TTFT.
    let control = floor_ttft_p50_ms
        .filter(|t| *t > 0.0)
        .map(|t| crate::measure::metrics::control_variate::ControlSpec { service_s: t / 1e3 });
    let min_requests = min_requests(slo);
    (
        SearchConfig {
            start_rate: 4.0 * floor_throughput,
            precision,
            budget,
            explore_s: explore.as_secs_f64(),
            measure_s: measure.as_secs_f64(),
            min_requests,
        },
        control,
    )
}

/// Exploring points last at least this many of the floor's median E2EL.
pub const EXPLORE_ANSWERS: f64 = 3.0;
/// Measuring points last at least this many of the floor's median E2EL:
/// what `--measure-time`'s default, 40 s, is on the README's deployment,
/// whose answers take about 1 s, so that a server whose answers take
/// longer gets measuring points as long in its own time. With 6, on that
/// deployment run 20 times slower (virtual time, 100 searches), the
/// measuring points held 368 requests where the README's hold about
/// 1,000, and 2,000 requests at the interval's lower end met the SLO in
/// 81 of 100 searches; with 40, in 99 (BENCHMARKS.md).
pub const MEASURE_ANSWERS: f64 = 40.0;

/// The search's exploring and measuring windows: `--point-time` and
/// `--measure-time`, each at least a number of the floor's median E2EL
/// (`answer_s`). A point shorter than a few answers ends before the
/// server's pipeline has filled: it cannot see a queue that builds, and
/// passes past capacity (6.5 s answers in 8 s points passed at 1.6x what
/// the server sustains).
pub fn search_windows(
    point_time: Duration,
    measure_time: Duration,
    answer_s: f64,
) -> (Duration, Duration) {
    let answers = |k: f64| Duration::from_secs_f64((k * answer_s).max(0.0));
    (
        point_time.max(answers(EXPLORE_ANSWERS)),
        measure_time.max(answers(MEASURE_ANSWERS)),
    )
}

/// Requests a point needs before its SLO percentiles can be bounded (the
/// largest over the SLO's per-request and task terms; pooled ITL has more
/// values than requests). An agent workload's points count tasks.
pub fn min_requests(slo: &crate::measure::slo::Slo) -> u64 {
    let tasks = slo.task_terms.iter().map(|t| t.percentile);
    slo.terms
        .iter()
        .filter(|t| !t.metric.info().pooled)
        .map(|t| t.percentile)
        .chain(tasks)
        .map(|p| crate::measure::verdict::requests_to_bound(p / 100.0))
        .max()
        .unwrap_or(0)
}
