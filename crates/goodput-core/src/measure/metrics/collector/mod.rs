//! The measured phase, accumulated one finished request at a time, and
//! summarized into the run's figures.
//!
//! [`Collector`] is thin: it sorts each measured request into its outcome
//! and hands it to one accumulator per kind of figure, each of which owns
//! its `add` (one finished request) and `finish` (its part of the summary):
//!
//! - [`outcomes`]: completed, failed by kind, incomplete — the error summary;
//! - [`latency`]: per-request values and pooled gaps — the distributions;
//! - [`timeseries`]: the per-bucket series, the throughput blocks and the
//!   steady-state window;
//! - [`window`]: the send window, duration and time in flight (Little's law);
//! - [`tokens`]: token totals, their sources and the length mix;
//! - [`sessions`]: multi-turn sessions and turns;
//! - [`ttft_trend`]: the (send time, TTFT) sample of the saturation check;
//! - [`goodput`]: good requests and the SLO's judgement;
//! - [`outputs`]: quality against references and output hashes;
//! - [`early_stop`]: the early end of a sweep point once its verdict is settled;
//! - [`crowding`]: whether requests queue behind each other for longer than
//!   the run can see, which leaves the latency intervals' upper sides open.
//!
//! Definitions are in `docs/metrics.md`: a request that never got a
//! connection has no send time and is in no latency, lag or duration
//! figure (it is a failure of its kind); warm-up requests are in none at
//! all.

mod clock;
mod crowding;
mod early_stop;
mod goodput;
mod groups;
mod inputs;
mod interactivity;
mod latency;
mod outcomes;
mod outputs;
mod sessions;
mod structured;
mod tasks;
mod timeseries;
mod tokens;
mod ttft_trend;
mod window;

use serde::{Deserialize, Serialize};

use crate::load::schedule::Load;
use crate::measure::metrics::control_variate::{ControlSpec, ControlTrace, ScheduleControl};
use crate::measure::metrics::mix::WorkloadMix;
use crate::measure::metrics::saturation::{self, Saturation};
use crate::measure::metrics::{Metric, RequestMetrics};
use crate::measure::quality::Quality;
use crate::measure::slo::{Slo, SloOutcome, SloTerm, Threshold};
use crate::measure::stats::{self, Distribution, Estimate, Level};
use crate::measure::verdict::Verdict;
use crate::request::record::RequestRecord;
use goodput::Goodput;
use inputs::InputCounts;
use latency::LatencySamples;
use outcomes::{Outcome, OutcomeCounts};
use outputs::Outputs;
use sessions::Sessions;
use timeseries::Buckets;
use tokens::TokenCounts;
use ttft_trend::TtftTrend;
use window::{SendWindow, WindowFigures};

pub use crowding::{Crowding, LIMIT as CROWDING_LIMIT};
pub use early_stop::EarlyStop;
pub use groups::{GroupFigures, Groups, GROUPINGS};
pub use inputs::{ImagesSummary, InputsSummary};
pub use interactivity::Interactivity;
pub use latency::Distributions;
pub use outcomes::ErrorSummary;
pub use sessions::SessionSummary;
#[cfg(test)]
pub(crate) use structured::SchemaViolation;
pub use structured::StructuredOutput;
pub use tasks::{TaskSummary, TimelineCall};
pub use timeseries::{SteadyState, TimeSeries, BUCKET_S};
pub use tokens::{ChunkSizes, TokenSummary, CHUNK_SIZES};

/// Accumulates the measured phase, one finished request at a time.
#[derive(Debug, Default)]
pub struct Collector {
    /// Latencies are judged from the schedule (open loop).
    open_loop: bool,
    outcomes: OutcomeCounts,
    latency: LatencySamples,
    buckets: Buckets,
    window: SendWindow,
    tokens: TokenCounts,
    sessions: Sessions,
    tasks: tasks::Tasks,
    interactivity: interactivity::InteractivityItems,
    ttft_trend: TtftTrend,
    goodput: Goodput,
    outputs: Outputs,
    structured: structured::Structured,
    early: Option<EarlyStop>,
    /// Send times and judged values for the schedule adjustment ([`super::control`]).
    control: Option<ControlTrace>,
    /// The same figures per model and per priority class ([`groups`]).
    groups: groups::GroupCollectors,
    inputs: InputCounts,
    /// What independent requests' count in flight would vary by under the
    /// run's arrivals ([`crowding`]); `None`: no crowding index.
    independent_dispersion: Option<f64>,
    /// What sets the run's duration, for the throughputs' intervals ([`clock`]).
    clock: clock::ClockItems,
}

impl Collector {
    /// A collector that counts good requests against `thresholds`, judging
    /// latencies from the schedule in open loop.
    pub fn new(thresholds: Vec<Threshold>, open_loop: bool) -> Self {
        Collector {
            open_loop,
            groups: groups::GroupCollectors::new(thresholds.clone(), open_loop),
            goodput: Goodput::new(thresholds),
            ..Default::default()
        }
    }

    /// End the run early once its SLO verdict is settled ([`EarlyStop`]).
    pub fn with_early_stop(mut self, early: Option<EarlyStop>) -> Self {
        self.early = early;
        self
    }

    /// Adjust the SLO terms' percentiles for the burstiness of the run's own
    /// arrival schedule (`super::control`); open loop only.
    pub fn with_schedule_control(
        mut self,
        spec: Option<ControlSpec>,
        load: Load,
        terms: &[SloTerm],
    ) -> Self {
        self.control = spec
            .filter(|_| load.is_open() && !terms.is_empty())
            .map(|s| ControlTrace::new(s, load, terms.to_vec()));
        self
    }

    /// Read the crowding index (`Crowding`) for `load`'s arrivals: an open
    /// loop at a constant rate.
    pub fn with_arrivals(mut self, load: &Load) -> Self {
        self.independent_dispersion = crowding::independent_dispersion(load);
        self.clock.clock = clock::Clock::of(load);
        self
    }

    /// Keep a hash of each completed request's output (`--repeat`).
    pub fn with_output_hashes(mut self, keep: bool) -> Self {
        self.outputs.keep_hashes(keep);
        self
    }

    /// The kept output hashes, by request id (empty unless kept).
    pub fn take_output_hashes(&mut self) -> Vec<(u64, u64)> {
        self.outputs.take_hashes()
    }

    /// The early verdict, if the run was settled before its end.
    pub fn early_verdict(&self) -> Option<Verdict> {
        self.early.as_ref().and_then(EarlyStop::settled)
    }

    /// At a planned look, whether the SLO verdict is settled; `pending`:
    /// measured requests sent but not finished. Returns the verdict once, when
    /// it settles.
    pub fn check_early(&mut self, pending: u64) -> Option<Verdict> {
        let early = self.early.as_mut()?;
        early.look(
            &self.latency,
            self.outcomes.done(),
            self.outcomes.failed(),
            pending,
            self.open_loop,
        )
    }

    /// The measured phase starts at `t_sched_ns`: the time series' origin.
    pub fn measure_start(&mut self, t_sched_ns: u64) {
        self.buckets.measure_start(t_sched_ns);
        self.groups.measure_start(t_sched_ns);
    }

    /// Add one request (warm-up requests are ignored, but for the schedule
    /// adjustment's send times).
    pub fn add(&mut self, rec: &RequestRecord, m: &RequestMetrics) {
        if let Some(c) = self.control.as_mut() {
            c.add(rec, m, self.open_loop);
        }
        if rec.warmup {
            return;
        }
        self.groups.add(rec, m);
        let outcome = Outcome::of(rec);
        self.outcomes.add(rec, &outcome);
        self.window.add(rec, m, &outcome);
        self.buckets.add(rec, m, &outcome);
        self.tokens.add(rec, m, &outcome);
        self.sessions.add(rec, m, &outcome);
        self.tasks.add(rec, m, &outcome, self.open_loop);
        self.inputs.add(rec, m, &outcome);
        if let Some(t) = rec.t_send {
            self.latency.sent(t);
        }
        if outcome != Outcome::Completed {
            self.clock.not_completed();
            return;
        }
        self.latency.add(m, rec.t_done);
        self.interactivity.add(m);
        self.clock.add(rec, m);
        self.goodput.add(m, self.open_loop);
        self.ttft_trend
            .add(rec, m, self.buckets.origin_ns(), self.open_loop);
        self.outputs.add(rec);
        self.structured.add(rec, m);
    }

    /// Whether the pooled ITL went past its exact limit and is kept as a
    /// 0.1 %-resolution histogram (see `super::pooled`).
    pub fn itl_bounded(&self) -> bool {
        self.latency.pooled_bounded()
    }

    /// Whether per-request values went past their exact limit and are kept
    /// as 0.1 %-resolution histograms (see `super::samples`).
    pub fn values_bounded(&self) -> bool {
        self.latency.values_bounded()
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
        let window = self.window.finish(self.open_loop);
        let mut distributions = self.latency.finish(percentiles, Level::TwoSided);
        let in_flight = self.buckets.in_flight();
        let saturation = self.saturation(&distributions, &window, &in_flight);
        let crowding = self.crowding(
            &distributions,
            &in_flight,
            ramp_end_ns,
            window.mean_in_flight,
        );
        let long_memory = crowding.is_some_and(|c| c.long_memory);
        // The SLO's verdicts are judged on the two-sided intervals, before a
        // long-memory run's lower ends become one-sided: a settled fail
        // stays a 97.5 % one (the search's verdicts on its points are what
        // they were; a CI run of the slow llama.cpp search that failed
        // terms at the one-sided end answered 1.0 req/s where 200 requests
        // at 1.65 met the SLO).
        let slo_outcome = slo.map(|slo| {
            let mut outcome = self.goodput.judge(
                slo,
                &self.latency,
                &distributions,
                &self.outcomes,
                window.duration_s,
                self.open_loop,
            );
            goodput::add_task_terms(&mut outcome, self.tasks.judge(&slo.task_terms));
            if long_memory {
                goodput::open_upper_sides(&mut outcome);
            }
            outcome
        });
        if long_memory {
            let lower = self.latency.finish(percentiles, Level::Lower);
            open_upper_sides(&mut distributions, &lower);
        }
        let groups = self.groups.summarize(
            percentiles,
            ramp_end_ns,
            seed,
            slo,
            self.outcomes.done() + self.outcomes.incomplete(),
        );
        let schedule_control = self
            .control
            .as_ref()
            .and_then(|c| c.summarize(&distributions, self.open_loop));
        RunMetrics {
            completed: self.outcomes.completed(),
            failed: self.outcomes.failed(),
            incomplete: self.outcomes.incomplete(),
            sent: window.sends,
            duration_s: window.duration_s,
            total_input_tokens: self.tokens.total_input(),
            total_output_tokens: self.tokens.total_output(),
            throughput: self.throughput(&window, &distributions),
            steady_state: self.buckets.steady_state(
                ramp_end_ns,
                self.window.first_send_ns(),
                self.window.last_send_ns(),
            ),
            achieved_request_rate: window.achieved_request_rate,
            mean_in_flight: window.mean_in_flight,
            distributions,
            errors: self.outcomes.finish(),
            tokens: self.tokens.finish(),
            workload: self.tokens.workload(),
            quality: self.outputs.quality(),
            timeseries: self.buckets.finish(in_flight),
            saturation,
            crowding,
            slo: slo_outcome,
            schedule_control,
            sessions: self.sessions.finish(percentiles),
            tasks: self.tasks.finish(percentiles, window.duration_s),
            interactivity: self.interactivity.finish(),
            groups,
            inputs: self.inputs.inputs(window.duration_s),
            images: self.inputs.images(),
            structured_output: self.structured.finish(),
        }
    }

    /// Throughputs over the run's duration, the two rates with intervals
    /// from the run's clock ([`clock`]), else from batch means over whole
    /// 1 s blocks.
    fn throughput(&self, window: &WindowFigures, d: &Distributions) -> Throughput {
        let duration_s = window.duration_s;
        let (completion_blocks, token_blocks) = self.buckets.second_blocks(duration_s);
        let per_s = |x: u64| {
            if duration_s > 0.0 {
                x as f64 / duration_s
            } else {
                0.0
            }
        };
        let (input, output) = (self.tokens.total_input(), self.tokens.total_output());
        let mut request = stats::rate_with_ci(
            self.outcomes.completed() as f64,
            duration_s,
            &completion_blocks,
            1.0,
        );
        let mut output_rate = stats::rate_with_ci(output as f64, duration_s, &token_blocks, 1.0);
        // The run's clock, where it can be read, rather than the blocks.
        let step_s = d
            .get(&Metric::Itl)
            .and_then(|itl| itl.quantiles.get(50))
            .map(|ms| ms / 1e3);
        if let Some(r) = self.clock.relative_half_widths(step_s) {
            let blocks_output = output_rate;
            for (e, rel) in [(&mut request, r.request), (&mut output_rate, r.output)] {
                e.lo = Some((e.value * (1.0 - rel)).max(0.0));
                e.hi = Some(e.value * (1.0 + rel));
            }
            let width = |e: &Estimate| e.hi.zip(e.lo).map(|(h, l)| h - l);
            let narrower = matches!(
                (width(&blocks_output), width(&output_rate)),
                (Some(b), Some(c)) if b < c
            );
            if r.output_within_blocks && narrower {
                output_rate = blocks_output;
            }
        }
        Throughput {
            request,
            output: output_rate,
            input: per_s(input),
            total_token: per_s(input + output),
            streamed_output: window.streamed_output,
        }
    }

    /// The saturation checks ([`saturation`]): the schedule's own rate, the
    /// queue of requests waiting for a first token over the sending window,
    /// the trends of in-flight requests and TTFT after the pipeline filled,
    /// and a backlog of requests still running at the end.
    fn saturation(
        &self,
        d: &Distributions,
        window: &WindowFigures,
        in_flight: &[f64],
    ) -> Saturation {
        let mut saturation = match (self.buckets.origin_ns(), self.window.first_send_ns()) {
            (Some(origin), Some(first)) => self.assess_trends(d, window, in_flight, origin, first),
            _ => saturation::assess(&saturation::Inputs {
                intended_rate: window.intended_request_rate,
                achieved_rate: window.achieved_request_rate,
                ..Default::default()
            }),
        };
        // Most requests still running when the run ended: no trend can be
        // fitted to completions that never came, but the server is behind —
        // unless that many in flight is what a server keeping up has. By
        // Little's law a server that keeps up holds about (send rate ×
        // median E2EL) requests in flight at any moment, the end included:
        // long answers at a rate the server sustains leave most of a short
        // point's requests running (7 s answers in an 8 s point did), and
        // that is not a backlog. So the backlog must also be well above
        // that (twice it, plus 5). A real backlog also grows the queue of
        // requests waiting for a first token, which `assess` checks
        // without any completion.
        let (completed, incomplete) = (self.outcomes.completed(), self.outcomes.incomplete());
        let expected = match (window.achieved_request_rate, d.get(&Metric::E2el)) {
            (Some(rate), Some(e2el)) if e2el.count > 0 => {
                let median_ms = e2el.quantiles.get(50).copied().unwrap_or(e2el.mean.value);
                rate * median_ms / 1e3
            }
            _ => 0.0,
        };
        if incomplete >= 5 && incomplete > completed && incomplete as f64 > 2.0 * expected + 5.0 {
            saturation.saturated = true;
            saturation.findings.push(format!(
                "{} of {} requests sent were still running when the run ended, more than twice the {:.0} a server keeping up holds at this rate and latency: the server is far behind the offered load",
                incomplete,
                self.outcomes.done() + incomplete,
                expected
            ));
        }
        saturation
    }

    /// The steady part of the sending window, in seconds from the series'
    /// origin `origin` (first send `first`): from two fills of the pipeline
    /// after the first send to the last send; and the fill's length.
    fn steady_window(&self, d: &Distributions, origin: u64, first: u64) -> (f64, f64, f64) {
        // The pipeline fills in about one unqueued time in flight: the
        // fastest first token plus the median generation (a queue's wait is
        // in the TTFT, so the median E2EL of a queued run would overstate
        // it). Before it has filled, in flight rises on any server; fitted
        // over the fill, that rise read as saturation when answers lasted
        // most of a short point. Without a generation time, the median
        // E2EL, at most 30 % of the window (a queued run's E2EL can be
        // longer than the window itself).
        let median = |m: Metric| {
            d.get(&m).and_then(|e| {
                (e.count > 0).then(|| e.quantiles.get(50).copied().unwrap_or(e.mean.value) / 1e3)
            })
        };
        let send_start = first.saturating_sub(origin) as f64 / 1e9;
        let end = self.window.last_send_ns().saturating_sub(origin) as f64 / 1e9;
        let fastest_first = d
            .get(&Metric::Ttft)
            .filter(|e| e.count > 0)
            .map(|e| e.min / 1e3);
        let fill_s = match (fastest_first, median(Metric::Generation)) {
            (Some(t), Some(g)) => t + g,
            _ => median(Metric::E2el)
                .unwrap_or(0.0)
                .min(0.3 * (end - send_start).max(0.0)),
        };
        // A request's time in flight grows with the batch, and the batch
        // grows for about one time in flight more: the trend is fitted
        // after two fills (an 8 s point of 2.5 s requests then has too few
        // blocks for one, and the waiting queue alone decides).
        ((send_start + 2.0 * fill_s).min(end), end, fill_s)
    }

    /// The crowding index over the steady window ([`crowding`]), after a
    /// ramp's end, for an open loop at a constant rate.
    fn crowding(
        &self,
        d: &Distributions,
        in_flight: &[f64],
        ramp_end_ns: Option<u64>,
        mean_in_flight: f64,
    ) -> Option<Crowding> {
        let independent = self.independent_dispersion?;
        let (origin, first) = (self.buckets.origin_ns()?, self.window.first_send_ns()?);
        let (start, end, fill_s) = self.steady_window(d, origin, first);
        let ramp_end = ramp_end_ns.map_or(0.0, |t| t.saturating_sub(origin) as f64 / 1e9);
        let start = start.max(ramp_end);
        let bucket = |s: f64| (s / BUCKET_S).round() as usize;
        crowding::assess(
            in_flight,
            (bucket(start), bucket(end)),
            bucket(fill_s),
            independent,
            mean_in_flight,
        )
    }

    /// [`saturation::assess`] on the series, from the time-series origin
    /// `origin` and the first send `first` (ns).
    fn assess_trends(
        &self,
        d: &Distributions,
        window: &WindowFigures,
        in_flight: &[f64],
        origin: u64,
        first: u64,
    ) -> Saturation {
        let (start, end, fill_s) = self.steady_window(d, origin, first);
        let send_start = first.saturating_sub(origin) as f64 / 1e9;
        let series = |v: &[f64]| -> Vec<(f64, f64)> {
            v.iter()
                .enumerate()
                .map(|(i, &x)| ((i as f64 + 0.5) * BUCKET_S, x))
                .collect()
        };
        saturation::assess(&saturation::Inputs {
            intended_rate: window.intended_request_rate,
            achieved_rate: window.achieved_request_rate,
            in_flight: &series(in_flight),
            waiting: &series(&self.buckets.waiting()),
            sends: &series(self.buckets.sends()),
            ttft: &self.ttft_trend.finish(),
            window: (start, end),
            sending: (send_start, end),
            block_s: saturation::block_seconds(fill_s),
        })
    }
}

/// Throughputs over the run's duration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Throughput {
    /// Completed requests/s, with an interval from the run's clock
    /// (`collector/clock.rs`), else from 1 s blocks ([`stats::rate_with_ci`]).
    pub request: Estimate,
    /// Output tokens/s: its interval from the run's clock (in a closed loop
    /// the request rate's and the mean tokens' variances summed, no wider
    /// than the blocks'), else from 1 s blocks.
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

/// Run-level figures of the measured phase.
#[derive(Debug, Clone, PartialEq)]
pub struct RunMetrics {
    /// Measured requests that completed (a 2xx answer with content, finished properly).
    pub completed: u64,
    /// Measured requests that ended with an error.
    pub failed: u64,
    /// Measured requests cut by the drain timeout or cancelled by the user.
    pub incomplete: u64,
    /// Requests that reached the server (had a `t_send`).
    pub sent: u64,
    /// First `t_send` to the last `t_done` of a sent measured request, s.
    pub duration_s: f64,
    /// Σ input tokens of completed measured requests.
    pub total_input_tokens: u64,
    /// Σ output tokens of completed measured requests.
    pub total_output_tokens: u64,
    /// Throughputs over `duration_s`.
    pub throughput: Throughput,
    /// Throughputs over the steady window (after the ramp-up, before the
    /// drain); `None` when the window is under 0.6 s.
    pub steady_state: Option<SteadyState>,
    /// (requests sent − 1) / (last − first `t_send`), req/s; open loop only.
    pub achieved_request_rate: Option<f64>,
    /// Mean requests in flight (Little's law): Σ time in flight / `duration_s`.
    pub mean_in_flight: f64,
    /// Every per-request figure's distribution, by metric.
    pub distributions: Distributions,
    /// Error rate and failures by kind.
    pub errors: ErrorSummary,
    /// Where token counts came from, and how far the sources agree.
    pub tokens: TokenSummary,
    /// The workload as sent: length mix and prefix-cache shares.
    pub workload: WorkloadMix,
    /// Outputs against their references, where the workload has them.
    pub quality: Option<Quality>,
    /// Sends, completions, tokens, in flight and failures per 100 ms bucket.
    pub timeseries: TimeSeries,
    /// What the saturation checks found.
    pub saturation: Saturation,
    /// Whether requests queued behind each other for longer than the run
    /// could see (`Crowding`); open loops at a constant rate only.
    pub crowding: Option<Crowding>,
    /// Against the SLO, when one was given (`--slo`, `--goodput`).
    pub slo: Option<SloOutcome>,
    /// The SLO terms' percentiles adjusted for the burstiness of the run's
    /// own arrival schedule (a goodput search's points; `super::control`).
    pub schedule_control: Option<ScheduleControl>,
    /// Multi-turn sessions, when the workload has them.
    pub sessions: Option<SessionSummary>,
    /// Agents' tasks (trajectories), when the workload replays them.
    pub tasks: Option<TaskSummary>,
    /// Interactivity, tokens/s for one user, as MLPerf Endpoints and
    /// InferenceX define it; `None` without a completed request.
    pub interactivity: Option<Interactivity>,
    /// The figures per model and per priority class, for a run that mixes
    /// them (`--model a,b`, `--priority-mix`).
    pub groups: Option<Groups>,
    /// Inputs of pooling requests (embeddings, rerank, score), when any completed.
    pub inputs: Option<InputsSummary>,
    /// Images of chat requests, when any completed with one.
    pub images: Option<ImagesSummary>,
    /// Tool calls and schema checks, when tools or a response format were sent.
    pub structured_output: Option<StructuredOutput>,
}

impl RunMetrics {
    /// The distribution of `m`; `None` when no request had a value.
    pub fn get(&self, m: Metric) -> Option<&Distribution> {
        self.distributions.get(&m)
    }

    /// Whether the run's latencies are bounded from below only
    /// (`Crowding::long_memory`).
    pub fn long_memory(&self) -> bool {
        self.crowding.is_some_and(|c| c.long_memory)
    }
}

/// A long-memory run bounds its latencies' long-run values from below only
/// ([`crowding`]): every latency figure loses its upper end and takes its
/// lower end from `lower`, the same figures at [`Level::Lower`] (a 95 %
/// bound on one side sits above a two-sided interval's lower end). The
/// client's own figures (schedule lag, connect) keep both ends.
fn open_upper_sides(distributions: &mut Distributions, lower: &Distributions) {
    for (m, d) in distributions.iter_mut() {
        if matches!(m, Metric::ScheduleLag | Metric::Connect) {
            continue;
        }
        let Some(l) = lower.get(m) else { continue };
        d.mean.lo = l.mean.lo;
        d.mean.hi = None;
        for ((_, e), (_, le)) in d.percentiles.iter_mut().zip(&l.percentiles) {
            e.lo = le.lo;
            e.hi = None;
        }
    }
}

#[cfg(test)]
mod tests;
