//! Sweep: many load points against one prepared target — the
//! latency–throughput curve, its knees, and goodput under an SLO.
//!
//! Every point is a full run (its own warm-up, excluded from its figures) on
//! the one executor, bounded by the per-point `--duration`/`--num-prompts`
//! and never longer than the per-point time cap; `max_time` bounds the whole
//! sweep. The caller is told after every point, so an interrupted sweep keeps
//! what it measured.
//!
//! - **Auto**: a concurrency-1 run for the latency floor, a capacity probe
//!   (closed loop, concurrency doubled until request throughput rises by less
//!   than 20 %, which lands within a few percent of capacity at half the
//!   cost of chasing the last few; its points skip the warm-up the floor run already did), then open-loop rates from 15 % to 120 % of the measured
//!   capacity; it stops once two points in a row are saturated.
//! - **Rates / concurrencies**: the given points, in order, with the same
//!   early stop.
//! - **Search** (needs an SLO): the floor run (an SLO missed at concurrency 1
//!   is goodput 0, with the reason), then the points [`crate::plan::search`] asks
//!   for — short exploring points from four times the concurrency-1
//!   throughput, ending as soon as their verdict is settled
//!   ([`crate::measure::metrics::EarlyStop`]), then long measuring points near the
//!   edge — within the search's budget of load time. Each search point
//!   draws its own arrival sample (the seed plus its index) and has its SLO
//!   percentiles adjusted for that sample ([`crate::measure::metrics::control_variate`]); the
//!   answer is the search's fit, with its interval and bracket.
//!
//! - **Frontier** (`--frontier`): closed-loop points from concurrency 1,
//!   doubled until output throughput is flat, filled to MLPerf Endpoints'
//!   7 points, each window four answers long
//!   ([`frontier`](crate::plan::frontier)); the sweep's `frontier` holds
//!   their throughput against each user's token rate and the Pareto corners.
//!
//! A point passes only when it meets the SLO and is not saturated: a point
//! whose queue grew met the SLO, if it did, only because it ended first.
//!
//! The knees are reported side by side: where throughput stops following
//! offered load (Kneedle on throughput against offered load,
//! [`crate::plan::knee::kneedle`]), and the first load whose p99 TTFT exceeds the
//! concurrency-1 floor by 20 % (AIPerf's degradation knee,
//! [`crate::plan::knee::degradation_knee`]).

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::load::executor::{Progress, RunControl};
use crate::load::schedule::Load;
use crate::measure::aggregate::RecordsSink;
use crate::measure::metrics::Metric;
use crate::plan::search::{Answer, Search, Step as SearchStep};

mod curve;
mod frontier;
mod grid;
mod observe;
mod pareto;
mod result;
mod sessions;
mod spec;
mod start;
mod stop;
use crate::plan::target::{PreparedTarget, RunError, RunSpec};
use curve::p;
pub use frontier::{fill as fill_frontier_plan, frontier, FLAT_GAIN, PLAN_CAP};
use grid::goodput_from_points;
use observe::{observe, point_meets};
pub use observe::{observe_metrics, search_config, search_windows};
pub use pareto::{Frontier, FrontierPoint, Region, Regions};
pub use result::{
    headline, in_tasks, point_line, CurvePoint, Goodput, PointRole, PointStart, SweepPoint,
    SweepResult,
};
#[cfg(test)]
pub(crate) use result::{KneeAt, Knees};
pub use spec::{SweepMode, SweepSpec};
pub use stop::StopReason;

/// The workload in words: `chat, input 1024 / output 128 tokens`.
pub fn describe_workload(endpoint: crate::request::protocol::Endpoint, spec: &RunSpec) -> String {
    spec.workload.words(endpoint)
}

/// What a live display of a sweep reads: the point running now (its
/// counters and a description), and how many points have run.
#[derive(Default)]
pub struct SweepLive {
    /// The point running now: its counters and its role and load in words
    /// (`probe concurrency 8`, `grid 4.00 req/s`); None before the first.
    pub current: std::sync::Mutex<Option<(Arc<Progress>, String)>>,
    /// Points finished so far.
    pub points_done: std::sync::atomic::AtomicU64,
    /// Points the plan has, when it is known in advance (explicit rates or
    /// concurrencies); 0 otherwise.
    pub points_planned: std::sync::atomic::AtomicU64,
}

struct Runner<'a> {
    target: &'a PreparedTarget,
    live: &'a SweepLive,
    spec: &'a SweepSpec,
    sink: &'a mut RecordsSink,
    control: &'a RunControl,
    started: Instant,
    result: SweepResult,
    on_point: &'a mut dyn FnMut(&SweepResult, &Progress),
}

enum Step {
    Ran,
    Stop,
}

/// One point to run.
#[derive(Clone, Copy)]
struct PointPlan {
    role: PointRole,
    load: Load,
    window: Duration,
    early: bool,
    requests: Option<u64>,
    control: Option<crate::measure::metrics::control_variate::ControlSpec>,
}

impl PointPlan {
    fn new(role: PointRole, load: Load, window: Duration, early: bool) -> Self {
        PointPlan {
            role,
            load,
            window,
            early,
            requests: None,
            control: None,
        }
    }
}

impl Runner<'_> {
    fn out_of_time(&mut self) -> bool {
        if let Some(max) = self.spec.max_time {
            if self.started.elapsed() + self.spec.point_time.min(Duration::from_secs(60)) / 2 > max
            {
                self.result.stopped.get_or_insert(StopReason::MaxTime(max));
                return true;
            }
        }
        if self.control.is_stopping() {
            self.result.stopped.get_or_insert(StopReason::Interrupted);
            return true;
        }
        false
    }

    /// Bring the server back to idle before the next point ([`start::settle`]).
    async fn settle(&self) -> Option<PointStart> {
        start::settle(
            self.target,
            &self.result.points,
            self.spec.point_time,
            self.control,
        )
        .await
    }

    /// Run one point after bringing the server back to idle; a point whose
    /// start found the server still busy (gauges) is run once more after
    /// another wait, and stays flagged if that one is not clean either.
    async fn point(&mut self, p: PointPlan) -> Result<Step, RunError> {
        let start = self.settle().await;
        let step = self.point_once(&p, start.clone()).await?;
        if matches!(step, Step::Ran) && start.as_ref().is_some_and(|s| s.idle == Some(false)) {
            self.result.points.pop();
            let mut again = self.settle().await;
            if let Some(a) = again.as_mut() {
                a.redone = true;
            }
            return self.point_once(&p, again).await;
        }
        Ok(step)
    }

    /// The run spec of one point: the base spec at the point's load,
    /// warm-up, window, count, seed and drain, with its early verdicts and
    /// schedule adjustment.
    fn point_spec(&self, p: &PointPlan) -> RunSpec {
        let PointPlan {
            role,
            load,
            window,
            early,
            requests,
            control,
        } = *p;
        let mut spec = self.spec.base.clone();
        spec.plan.load = load;
        // The floor run warms a cold server; the capacity probe's points
        // follow it and only estimate throughput, so they skip their own.
        spec.plan.warmup = match role {
            PointRole::Probe => crate::load::executor::Warmup::None,
            PointRole::Search | PointRole::Measure => self.session_warmup(&load),
            _ => self.spec.warmup.resolve(&load),
        };
        spec.plan.duration = Some(spec.plan.duration.map_or(window, |d| d.min(window)));
        if let Some(n) = requests {
            // The search sized this point: its count, and time enough for
            // a sparse sample of it. An agent workload's count is tasks,
            // not the calls `num_prompts` counts: its window bounds it.
            if !self.spec.base.workload.source.is_agents() {
                spec.plan.num_prompts = Some(n);
            }
            spec.plan.duration = Some(window);
        }
        if matches!(role, PointRole::Search | PointRole::Measure) {
            // Each search point its own sample of the arrival process, so
            // that the fit averages over samples instead of inheriting one.
            spec.plan.seed = spec.plan.seed.wrapping_add(self.result.points.len() as u64);
        }
        // Cutting the probe's drain short would save time but bias its
        // throughput low (measured: capacity 7.7 instead of 16.9 req/s on the
        // default preset before its 2026-11-26 step-time model), and a low capacity costs the search more points.
        // A frontier point's window is sized to its answers (`frontier`),
        // and its drain with it.
        let frontier = matches!(self.spec.mode, SweepMode::Frontier { .. });
        let cap = if frontier {
            window
        } else {
            self.spec.point_time
        };
        // An agent's tasks run to their end (up to the drain timeout): a
        // task cut short would drop out of the task figures, the long
        // ones first.
        if !self.spec.base.workload.source.is_agents() {
            spec.plan.drain_timeout = spec.plan.drain_timeout.min(cap / 2);
        }
        spec.early_stop = early;
        spec.schedule_control = control;
        if frontier {
            // The frontier's x is 1000 / p90 TPOT; InferenceX's, p50.
            spec.percentiles.extend([50.0, 90.0]);
            spec.percentiles.sort_by(f64::total_cmp);
            spec.percentiles.dedup();
        }
        spec
    }

    /// Run one point; `window` bounds its sending, `requests` (when given)
    /// its measured requests, `control` adjusts its SLO percentiles for its
    /// own schedule.
    async fn point_once(
        &mut self,
        p: &PointPlan,
        start: Option<PointStart>,
    ) -> Result<Step, RunError> {
        if self.out_of_time() {
            return Ok(Step::Stop);
        }
        let spec = self.point_spec(p);
        let PointPlan {
            role,
            load,
            control,
            ..
        } = *p;
        let run_control = self.control.child();
        let progress = Arc::new(Progress::default());
        if let Ok(mut c) = self.live.current.lock() {
            let mut what = format!("{load:.2}");
            if self.spec.base.workload.source.is_agents() {
                what = what.replace(" req/s", " tasks/s");
            }
            *c = Some((progress.clone(), format!("{role:?} {what}").to_lowercase()));
        }
        let t0 = Instant::now();
        let result = match self
            .target
            .run(&spec, self.sink, &run_control, progress.clone())
            .await
        {
            Ok(r) => r,
            Err(RunError::Interrupted) => {
                self.result.stopped = Some(StopReason::Interrupted);
                return Ok(Step::Stop);
            }
            Err(e) => return Err(e),
        };
        let wall_s = t0.elapsed().as_secs_f64();
        // A search point is judged as the search judges it: on its
        // percentiles adjusted for its own schedule.
        let meets = match control {
            Some(_) => Some(
                observe_metrics(&result.metrics, &load, result.early_stop, wall_s, false).passes(),
            ),
            None => point_meets(&result),
        };
        self.result.load_time_s += wall_s;
        let interrupted = result.exec.interrupted && result.early_stop.is_none();
        if interrupted && result.exec.sent_measured == 0 {
            // Stopped in its warm-up: a point that measured nothing is no
            // point of the curve (its warm-up records are in the records file).
            self.result.stopped = Some(StopReason::Interrupted);
            return Ok(Step::Stop);
        }
        self.result.points.push(SweepPoint {
            role,
            meets,
            wall_s,
            result,
            start,
        });
        self.refresh();
        self.live
            .points_done
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        (self.on_point)(&self.result, &progress);
        if interrupted || self.control.is_stopping() {
            self.result.stopped.get_or_insert(StopReason::Interrupted);
            return Ok(Step::Stop);
        }
        Ok(Step::Ran)
    }

    fn last(&self) -> Option<&SweepPoint> {
        self.result.points.last()
    }

    /// The concurrency-1 run: the latency floor. False when the sweep must stop.
    async fn floor(&mut self) -> Result<bool, RunError> {
        let window = self.spec.probe_time;
        Ok(matches!(
            self.point(PointPlan::new(
                PointRole::Floor,
                Load::Closed { concurrency: 1 },
                window,
                false
            ))
            .await?,
            Step::Ran
        ))
    }

    /// The capacity probe: concurrency doubled from 2 until request
    /// throughput rises by less than 20 %. False when the sweep must stop.
    async fn probe(&mut self) -> Result<bool, RunError> {
        let window = self.spec.probe_time;
        let mut best = self
            .last()
            .map_or(0.0, |p| p.result.metrics.throughput.request.value);
        let mut c = 2usize;
        while c <= 4096 {
            if let Step::Stop = self
                .point(PointPlan::new(
                    PointRole::Probe,
                    Load::Closed { concurrency: c },
                    window,
                    false,
                ))
                .await?
            {
                return Ok(false);
            }
            let thr = self
                .last()
                .map_or(0.0, |p| p.result.metrics.throughput.request.value);
            let failing = self
                .last()
                .is_some_and(|p| p.result.metrics.errors.error_rate > 0.5);
            if thr < best * 1.20 || failing {
                best = best.max(thr);
                break;
            }
            best = thr;
            c *= 2;
        }
        self.result.capacity = Some(best);
        Ok(best > 0.0)
    }

    fn open(&self, rate: f64) -> Load {
        Load::Open {
            rate,
            arrival: self.spec.arrival,
            max_concurrency: self.spec.max_concurrency,
        }
    }

    /// The goodput search: the floor run, then the points [`Search`] asks
    /// for within its budget of load time; the answer is the search's.
    async fn search(&mut self, precision: f64) -> Result<(), RunError> {
        let mut answer = self.unanswered();
        if !self.floor().await? {
            self.result.goodput = self.floor_verdict(answer);
            return Ok(());
        }
        if let Some(why) = self.floor_missed() {
            answer
                .notes
                .push(format!("the SLO is missed even at concurrency 1 ({why})"));
            answer.bracket = (0.0, Some(0.0));
            self.result.goodput = Some(answer);
            return Ok(());
        }
        // Start from four times the concurrency-1 throughput: the floor run
        // is the only probe the search needs, and failing points end as
        // soon as they are settled.
        let Some(floor) = self.result.points.first().map(|p| p.result.clone()) else {
            self.result.goodput = self.floor_verdict(answer);
            return Ok(());
        };
        // An agent workload's rates are tasks/s.
        let floor_throughput = match &floor.metrics.tasks {
            Some(t) => t.throughput,
            None => floor.metrics.throughput.request.value,
        };
        if floor_throughput <= 0.0 {
            self.result.goodput = self.floor_verdict(answer);
            return Ok(());
        }
        let budget = self.search_budget();
        let Some(slo) = self.spec.base.slo.as_ref() else {
            self.result.goodput = Some(answer);
            return Ok(());
        };
        // Windows of a few answers at least (`search_windows`).
        let answer_s = p(&floor, Metric::E2el, 50.0).map_or(0.0, |ms| ms / 1e3);
        let (explore, measure) =
            search_windows(self.spec.point_time, self.spec.measure_time, answer_s);
        // A session workload's measured window must hold several sessions
        // too: over a few, its requests lean to the early turns' short
        // prompts (the secret server's 4-turn sessions: 40 s points
        // answered 4.34 sessions/s where it sustains 3.75).
        let measure = measure.max(Duration::from_secs_f64(
            6.0 * self.session_span_s().unwrap_or(0.0),
        ));
        let (config, control) = search_config(
            p(&floor, Metric::Ttft, 50.0),
            floor_throughput,
            slo,
            precision,
            budget,
            explore,
            measure,
        );
        let mut search = Search::new(config);
        self.search_points(&mut search, control).await?;
        self.conclude(answer, search.answer(), budget, precision);
        Ok(())
    }

    /// The goodput before any point answered: 0, for the spec's SLO and workload.
    fn unanswered(&self) -> Goodput {
        let slo_text = self
            .spec
            .base
            .slo
            .as_ref()
            .map(|s| s.describe())
            .unwrap_or_default();
        Goodput {
            rate: 0.0,
            bracket: (0.0, None),
            slo: slo_text,
            workload: self.result.workload.clone(),
            notes: Vec::new(),
            confirmed: false,
            interval: None,
            method: None,
            inconclusive: false,
            unit: self
                .spec
                .base
                .workload
                .source
                .is_agents()
                .then(|| "tasks/s".into()),
        }
    }

    /// Why the floor run (concurrency 1) missed the SLO, if it did.
    fn floor_missed(&self) -> Option<String> {
        let floor = self
            .result
            .points
            .first()
            .filter(|p| p.meets == Some(false))?;
        Some(
            floor
                .result
                .metrics
                .slo
                .as_ref()
                .map(|s| s.reasons.join("; "))
                .unwrap_or_default(),
        )
    }

    /// Load time the search may spend: `--search-time`, or what a settled
    /// answer takes, within what `--max-time` leaves.
    fn search_budget(&self) -> crate::plan::search::Budget {
        let left = self.spec.max_time.map_or(f64::INFINITY, |m| {
            m.saturating_sub(self.started.elapsed()).as_secs_f64()
        });
        match self.spec.search_time {
            Some(asked) => crate::plan::search::Budget::Fixed(asked.as_secs_f64().min(left)),
            None => crate::plan::search::Budget::Sized { cap_s: left },
        }
    }

    /// Run the points the search asks for, exploring then measuring, and
    /// show it each one, until it is done or the sweep must stop.
    async fn search_points(
        &mut self,
        search: &mut Search,
        control: Option<crate::measure::metrics::control_variate::ControlSpec>,
    ) -> Result<(), RunError> {
        loop {
            let (plan, measuring) = match search.next() {
                SearchStep::Done => break,
                // The search's exploring window: `--point-time`, or longer
                // for long answers (see `search_config`'s caller).
                SearchStep::Explore { rate } => (
                    PointPlan {
                        control,
                        ..PointPlan::new(
                            PointRole::Search,
                            self.open(rate),
                            Duration::from_secs_f64(search.config().explore_s),
                            true,
                        )
                    },
                    false,
                ),
                SearchStep::Measure { rate, requests } => {
                    // Twice the schedule's mean span, for a sparse sample.
                    let window = Duration::from_secs_f64(2.0 * requests as f64 / rate + 1.0);
                    // A measuring point runs its length, settled or not: the
                    // fit reads its margin, and a point ended on a settled
                    // fail leaves its slowest requests unfinished and its
                    // margin low (in virtual time that biased the answer
                    // +3.4 % over 100 searches of the README's job, and the
                    // interval covered the sustained goodput in 53 of 95).
                    (
                        PointPlan {
                            requests: Some(requests),
                            control,
                            ..PointPlan::new(PointRole::Measure, self.open(rate), window, false)
                        },
                        true,
                    )
                }
            };
            if let Step::Stop = self.point(plan).await? {
                break;
            }
            if let Some(pt) = self.last() {
                search.record(observe(pt, measuring));
            }
            // Exploring has found the edge: say what settling it takes
            // before the measuring points run (minutes each on a slow server).
            if let (None, Some(sizing)) = (self.result.search_sizing, search.sizing()) {
                self.result.search_sizing = Some(sizing);
                (self.on_point)(&self.result, &Progress::default());
            }
            // And again when the measuring points moved it by a fifth.
            if let (Some(said), Some(r)) = (self.result.search_sizing.as_mut(), search.revision()) {
                if said.revise(r) {
                    (self.on_point)(&self.result, &Progress::default());
                }
            }
        }
        Ok(())
    }

    /// The search's answer as the sweep's goodput, with what to know about
    /// it; a sweep stopped before any rate was settled has none (unknown,
    /// not 0).
    fn conclude(
        &mut self,
        mut answer: Goodput,
        found: Answer,
        budget: crate::plan::search::Budget,
        precision: f64,
    ) {
        let unsettled = found.bracket.0 <= 0.0 && found.bracket.1.is_none();
        let cut = match budget {
            crate::plan::search::Budget::Fixed(b) => self
                .spec
                .search_time
                .is_some_and(|asked| b < asked.as_secs_f64()),
            crate::plan::search::Budget::Sized { cap_s } => cap_s.is_finite(),
        };
        if let (Some(max), true) = (self.spec.max_time, unsettled) {
            if cut {
                // --max-time left the search no room for a point: that is
                // the time limit, not a goodput of 0.
                self.result.stopped.get_or_insert(StopReason::MaxTime(max));
            }
        }
        if let Some(why) = self.result.stopped.clone() {
            if unsettled {
                // Stopped (a signal, --max-time) before any rate was settled: unknown, not 0.
                return;
            }
            answer.notes.push(format!(
                "the search stopped early ({why}): the interval may be wider than the precision"
            ));
        }
        answer.rate = found.rate;
        answer.bracket = found.bracket;
        answer.interval = found.interval;
        answer.method = Some(found.method);
        answer.notes.extend(found.notes);
        if let Some(z) = self.result.search_sizing.filter(|z| z.room < z.points) {
            let limit = if z.sized {
                "--max-time"
            } else {
                "--search-time"
            };
            answer.notes.push(format!(
                "{limit} left room for {} of the {} measuring points a settled answer plans (about {:.0} s of load in all)",
                z.room, z.points, z.settled_s
            ));
        }
        answer.inconclusive = found.inconclusive;
        answer.confirmed = !found.inconclusive
            && self.result.points.iter().any(|p| {
                p.role == PointRole::Measure
                    && p.meets == Some(true)
                    && p.result
                        .config
                        .load
                        .offered_rate()
                        .is_some_and(|r| (r / found.rate - 1.0).abs() <= precision)
            });
        if found.rate <= 0.0 && answer.notes.is_empty() {
            answer.notes.push(match found.bracket.1 {
                Some(h) => format!("the SLO is missed at every rate tried, down to {h:.3} req/s"),
                None => "no rate met the SLO".into(),
            });
        }
        if let Some(wide) = crate::plan::search::wide_interval(found.rate, found.interval) {
            answer.notes.push(wide);
        }
        if found.interval.is_none() && found.rate > 0.0 {
            answer.notes.push(
                "no interval: too few points near the edge to bound it (a longer --search-time gives more)"
                    .into(),
            );
        }
        // The search speaks of rates and of the requests its points held;
        // an agent workload's are tasks/s and tasks.
        let agents = answer.unit.is_some();
        for n in &mut answer.notes {
            *n = in_tasks(std::mem::take(n), agents);
        }
        self.result.goodput = Some(answer);
    }

    /// The floor or the probe could not finish: goodput 0 when they measured
    /// nothing, unknown (None) when the sweep was stopped.
    fn floor_verdict(&self, mut answer: Goodput) -> Option<Goodput> {
        if self.result.stopped.is_some() {
            return None;
        }
        answer
            .notes
            .push("the capacity probe measured no throughput".into());
        Some(answer)
    }

    /// Recompute the curve and the knees from the points so far.
    fn refresh(&mut self) {
        let (curve, knees) = curve::curve_and_knees(&self.result.points);
        self.result.curve = curve;
        self.result.knees = knees;
        if matches!(self.spec.mode, SweepMode::Frontier { .. }) {
            let agents = self.spec.base.workload.source.is_agents();
            self.result.frontier = Some(frontier(&self.result.points, agents));
        }
    }
}

/// Run a sweep. `on_point` is called after every point with the result so far
/// (to save it and show progress).
pub async fn sweep(
    target: &PreparedTarget,
    spec: &SweepSpec,
    sink: &mut RecordsSink,
    control: &RunControl,
    live: &SweepLive,
    on_point: &mut dyn FnMut(&SweepResult, &Progress),
) -> Result<SweepResult, RunError> {
    let planned = match &spec.mode {
        SweepMode::Rates(r) => r.len(),
        SweepMode::Concurrencies(c)
        | SweepMode::Frontier {
            concurrencies: c, ..
        } => c.len(),
        _ => 0,
    };
    live.points_planned
        .store(planned as u64, std::sync::atomic::Ordering::Relaxed);
    let mut runner = Runner {
        target,
        live,
        spec,
        sink,
        control,
        started: Instant::now(),
        result: SweepResult {
            mode: Some(spec.mode.clone()),
            workload: describe_workload(target.params().endpoint, &spec.base),
            seconds_per_point: spec.point_time.as_secs_f64(),
            ..Default::default()
        },
        on_point,
    };
    match &spec.mode {
        SweepMode::Auto => {
            if runner.floor().await? && runner.probe().await? {
                let cap = runner.result.capacity.unwrap_or(1.0);
                let loads = [0.15, 0.3, 0.45, 0.6, 0.75, 0.9, 1.05, 1.2]
                    .iter()
                    .map(|f| runner.open(f * cap))
                    .collect();
                runner.grid(loads).await?;
                runner.confirm_grid().await?;
            }
        }
        SweepMode::Rates(rates) => {
            let loads = rates.iter().map(|&r| runner.open(r)).collect();
            runner.grid(loads).await?;
            runner.confirm_grid().await?;
        }
        SweepMode::Concurrencies(cs) => {
            let loads = cs
                .iter()
                .map(|&c| Load::Closed { concurrency: c })
                .collect();
            runner.grid(loads).await?;
        }
        SweepMode::Search { precision } => runner.search(*precision).await?,
        SweepMode::Frontier {
            concurrencies,
            max_concurrency,
        } => runner.frontier(concurrencies, *max_concurrency).await?,
    }
    // A search answers itself; a frontier's or a concurrency grid's points
    // are concurrencies, with no rate to answer in: each point keeps its
    // verdict, and the console says the highest that met the SLO
    // (`SweepResult::slo_met_up_to`).
    let answered = matches!(
        spec.mode,
        SweepMode::Search { .. } | SweepMode::Frontier { .. } | SweepMode::Concurrencies(_)
    );
    if spec.base.slo.is_some() && runner.result.goodput.is_none() && !answered {
        runner.result.goodput = Some(goodput_from_points(&runner.result, spec));
    }
    Ok(runner.result)
}
