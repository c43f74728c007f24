//! Forecast in virtual time: the sustained goodput of a deployment — N
//! replicas of one engine configuration behind a router — for a workload
//! and an SLO, and its latency–throughput curve.
//!
//! It generalises [`crate::reference`] (fixed lengths, unique prompts, one
//! engine) and agrees with it exactly where they overlap: a fixed-length,
//! one-turn workload without a shared prefix on one replica gives the
//! reference's percentiles, throughput and goodput for the same plan (as
//! long as no point's queue grows while its SLO holds: the forecast also
//! fails saturated points, the reference does not).
//!
//! **What is modelled.**
//! - The workload ([`ForecastWorkload`]): input and output lengths drawn per
//!   request ([`goodput_common::LengthSpec`]), an optional shared prefix
//!   ([`SharedPrefix`]: one of `groups` prefixes, uniformly), optional
//!   multi-turn sessions ([`Sessions`]) whose every turn resends the
//!   conversation so far, so the engine's prefix cache hits on the history
//!   as it would on a real server's (with this engine's limits: it caches
//!   prompt blocks only, so a turn's own output is recomputed by the next).
//! - Or a recorded trace ([`ForecastTrace`]): its requests arrive at its
//!   own offsets scaled to the offered rate (rate `r` is replay speed
//!   `r / mean_rate`), with its lengths, and prompts that share the
//!   trace's `hash_ids` share those blocks; one schedule, whose first
//!   `warmup_requests` rows are the warm-up (see [`trace`]'s docs).
//! - The offered load: an open-loop Poisson schedule of **new sessions**,
//!   as goodput's `--request-rate` schedules sessions' first turns (a
//!   one-turn workload: requests); turn k + 1 follows `think_time` after
//!   turn k's last token. Warm-up and measured requests count every turn,
//!   and sending stops once the measured requests are out, as in a real
//!   run: a session is warm-up when it starts while fewer than
//!   `warmup_requests` warm-up requests have been sent, and its turns share
//!   its phase; once `requests_per_point` measured requests have been sent,
//!   nothing more is sent (pending turns are dropped) and the requests in
//!   flight run to their end.
//! - The deployment ([`Deployment`]): N independent engines of the same
//!   configuration; a new session goes to a replica by [`Routing`]
//!   (round-robin, or fewest outstanding requests) and keeps it for all its
//!   turns; each request reaches its engine `request_latency_ms` after it
//!   arrives. Latencies pool over all replicas.
//!
//! **What is left out.** Routing beyond those two policies (no
//! cache-aware or session-unaware spraying), the network and the client
//! (a request is sent exactly when scheduled; no client overhead, no
//! timeouts or drain limit: every request sent finishes), faults, and a
//! real server's output lengths (outputs are exactly as drawn, as with
//! `ignore_eos`).
//!
//! **How.** As the reference: for each rate, [`ForecastPlan::seeds`]
//! schedules of warm-up + measured requests, their measured requests pooled
//! before percentiles are taken (metric definitions and the percentile are
//! the reference's), with common random numbers across rates — schedule
//! `k`'s arrivals at rate 1 come from seed `seed + k` and are divided by
//! the rate, and its sessions' contents are fixed per schedule, whatever
//! the rate. A point passes when every SLO term holds, at most
//! `max_error_rate` of the measured requests failed, and its queue did not
//! grow ([`QueueGrowth`]). [`forecast_goodput`] searches `[lo, hi]` by
//! bisection at the geometric mean, as the reference does, and returns
//! every point evaluated ([`ForecastAnswer::curve`]);
//! [`forecast_goodput_near`] brackets the answer from a guess first (fewer
//! points when the answer is roughly known); [`evaluate_rates`]
//! evaluates a given list of rates (a latency–throughput curve).
//!
//! **Guarantees.** Deterministic: the same inputs give the identical
//! answer, bit for bit, whatever [`ForecastPlan::threads`] is (events are
//! processed in a fixed order, ties broken by replica index and queue
//! order). The curve is sorted by rate. The precision and the limits of
//! pooled percentiles are the reference's: see [`crate::reference`].

mod driver;
mod evaluate;
pub mod trace;
mod workload;

pub use driver::{Deployment, ForecastRequest, Routing};
pub use evaluate::{ForecastPlan, ForecastPoint, QueueGrowth};
pub use trace::{ForecastTrace, TraceRequest};
pub use workload::{ForecastWorkload, Sessions, SharedPrefix};

use crate::config::SimConfig;
use crate::error::SimError;
use crate::rate_search;
use crate::reference::RefTerm;

use driver::Run;
use evaluate::evaluate;
use workload::Book;

/// The result of [`forecast_goodput`].
#[derive(Debug, Clone, PartialEq)]
pub struct ForecastAnswer {
    /// The highest passing rate found (sessions, or requests, per second);
    /// 0 when `lo` fails.
    pub goodput: f64,
    /// The lowest failing rate found above the goodput (`lo` when `lo`
    /// fails); `None` when `hi` passes.
    pub first_failing: Option<f64>,
    /// Every evaluated rate, sorted by rate.
    pub curve: Vec<ForecastPoint>,
}

impl ForecastAnswer {
    /// The evaluated point at exactly `rate`, if there is one.
    pub fn point_at(&self, rate: f64) -> Option<&ForecastPoint> {
        self.curve.iter().find(|p| p.rate == rate)
    }
}

/// The goodput in `[lo, hi]` (sessions or requests per second, see
/// [`ForecastPoint::rate`]) to the plan's precision.
pub fn forecast_goodput(
    config: &SimConfig,
    deployment: &Deployment,
    workload: &ForecastWorkload,
    slo: &[RefTerm],
    plan: &ForecastPlan,
    lo: f64,
    hi: f64,
) -> Result<ForecastAnswer, SimError> {
    validate(config, deployment, workload, slo, plan)?;
    rate_search::check_range(lo, hi)?;
    let mut books = books(workload, plan);
    let mut curve = Vec::new();
    let mut meets = |rate: f64| -> Result<bool, SimError> {
        let p = evaluate(config, deployment, slo, plan, &mut books, rate)?;
        let m = p.meets;
        curve.push(p);
        Ok(m)
    };
    let (goodput, first_failing) = rate_search::search(&mut meets, lo, hi, plan.precision)?;
    Ok(answer(goodput, first_failing, curve))
}

/// The goodput searched from a `guess` (sessions or requests per second),
/// for when the answer is roughly known — an uncertainty band's draws
/// around a central forecast: the guess is evaluated, then rates `step`
/// times higher (or lower) until the verdict changes, then the bracket is
/// bisected to the plan's precision. With a guess within `step` of the
/// answer that is 2 points plus the bisection's, against the ~10 of
/// [`forecast_goodput`] over three decades. Stepping down stops below
/// `guess / 1000` (goodput 0); stepping up stops above `guess × 1000`
/// (`first_failing` is then `None`).
pub fn forecast_goodput_near(
    config: &SimConfig,
    deployment: &Deployment,
    workload: &ForecastWorkload,
    slo: &[RefTerm],
    plan: &ForecastPlan,
    guess: f64,
    step: f64,
) -> Result<ForecastAnswer, SimError> {
    validate(config, deployment, workload, slo, plan)?;
    rate_search::positive("guess", guess)?;
    if !(step.is_finite() && step > 1.0) {
        return Err(SimError::invalid(
            "step",
            format!("{step} must be a number greater than 1"),
        ));
    }
    let mut books = books(workload, plan);
    let mut curve = Vec::new();
    let mut meets = |rate: f64| -> Result<bool, SimError> {
        let p = evaluate(config, deployment, slo, plan, &mut books, rate)?;
        let m = p.meets;
        curve.push(p);
        Ok(m)
    };
    let (mut pass, mut fail) = (None, None);
    let mut rate = guess;
    while pass.is_none() || fail.is_none() {
        if meets(rate)? {
            pass = Some(rate);
            rate *= step;
            if rate > guess * 1e3 {
                break;
            }
        } else {
            fail = Some(rate);
            rate /= step;
            if rate < guess * 1e-3 {
                break;
            }
        }
    }
    let (goodput, first_failing) = match (pass, fail) {
        (Some(p), Some(f)) => {
            let (p, f) = rate_search::bisect(&mut meets, p, f, plan.precision)?;
            (p, Some(f))
        }
        (Some(p), None) => (p, None),
        (None, f) => (0.0, f),
    };
    Ok(answer(goodput, first_failing, curve))
}

fn answer(
    goodput: f64,
    first_failing: Option<f64>,
    mut curve: Vec<ForecastPoint>,
) -> ForecastAnswer {
    curve.sort_by(|a, b| a.rate.total_cmp(&b.rate));
    ForecastAnswer {
        goodput,
        first_failing,
        curve,
    }
}

/// Evaluate each of `rates` (any order; the answer is sorted by rate).
pub fn evaluate_rates(
    config: &SimConfig,
    deployment: &Deployment,
    workload: &ForecastWorkload,
    slo: &[RefTerm],
    plan: &ForecastPlan,
    rates: &[f64],
) -> Result<Vec<ForecastPoint>, SimError> {
    validate(config, deployment, workload, slo, plan)?;
    for &r in rates {
        rate_search::positive("rate", r)?;
    }
    let mut books = books(workload, plan);
    let mut curve = rates
        .iter()
        .map(|&r| evaluate(config, deployment, slo, plan, &mut books, r))
        .collect::<Result<Vec<_>, _>>()?;
    curve.sort_by(|a, b| a.rate.total_cmp(&b.rate));
    Ok(curve)
}

/// Every request of schedule `schedule` (0-based, seed `plan.seed +
/// schedule`) at `rate`, in the order sent: what the pooled figures are
/// computed from, for a closer look.
pub fn simulate_schedule(
    config: &SimConfig,
    deployment: &Deployment,
    workload: &ForecastWorkload,
    plan: &ForecastPlan,
    schedule: u64,
    rate: f64,
) -> Result<Vec<ForecastRequest>, SimError> {
    validate(config, deployment, workload, &[], plan)?;
    rate_search::positive("rate", rate)?;
    let mut book = Book::new(workload, plan.seed.wrapping_add(schedule));
    let run = Run::new(
        config,
        deployment,
        &mut book,
        rate,
        plan.warmup_requests,
        plan.requests_per_point,
    )?;
    Ok(run.run())
}

fn books(workload: &ForecastWorkload, plan: &ForecastPlan) -> Vec<Book> {
    (0..plan.seeds)
        .map(|k| Book::new(workload, plan.seed.wrapping_add(k)))
        .collect()
}

fn validate(
    config: &SimConfig,
    deployment: &Deployment,
    workload: &ForecastWorkload,
    slo: &[RefTerm],
    plan: &ForecastPlan,
) -> Result<(), SimError> {
    config.validate()?;
    if deployment.replicas == 0 {
        return Err(SimError::invalid("replicas", "must be at least 1"));
    }
    if workload.prefix.is_some_and(|p| p.groups == 0) {
        return Err(SimError::invalid("groups", "must be at least 1"));
    }
    if let Some(trace) = &workload.trace {
        validate_trace(trace, workload, plan)?;
    }
    rate_search::check_terms_and_counts(
        slo.iter().map(|t| (t.percentile, t.threshold_s)),
        plan.requests_per_point,
        plan.seeds,
        plan.max_error_rate,
    )?;
    if !(plan.precision > 0.0 && plan.precision < 1.0) {
        return Err(SimError::invalid(
            "precision",
            format!("{} must be in (0, 1)", plan.precision),
        ));
    }
    Ok(())
}

/// A trace is the whole workload, and one schedule with a measured part.
fn validate_trace(
    trace: &ForecastTrace,
    workload: &ForecastWorkload,
    plan: &ForecastPlan,
) -> Result<(), SimError> {
    if workload.prefix.is_some() || workload.sessions.is_some() {
        return Err(SimError::invalid(
            "trace",
            "a trace sets every prompt: it takes no shared prefix and no sessions",
        ));
    }
    if plan.seeds != 1 {
        return Err(SimError::invalid(
            "seeds",
            format!(
                "{}: a trace is one schedule, so seeds must be 1",
                plan.seeds
            ),
        ));
    }
    if trace.len() <= plan.warmup_requests {
        return Err(SimError::invalid(
            "warmup_requests",
            format!(
                "{}: the trace's {} requests leave none to measure",
                plan.warmup_requests,
                trace.len()
            ),
        ));
    }
    Ok(())
}
