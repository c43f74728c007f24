//! What a sweep finds: its points (and how each one's start was made
//! clean), the latency–throughput curve and its knees drawn from them, and
//! the goodput answer. Serialized as the sweep document.

use serde::{Deserialize, Serialize};

use super::spec::SweepMode;
use super::stop::StopReason;
use crate::output::result::RunResult;

/// Why a point was run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PointRole {
    /// Concurrency 1: the latency floor.
    Floor,
    /// Closed loop, doubling concurrency: the capacity probe.
    Probe,
    /// A point of the curve.
    Grid,
    /// A rate tried by the goodput search while it locates the edge
    /// (short, ending as soon as its verdict is settled).
    Search,
    /// A long point near the edge whose margin the search's fit uses.
    Measure,
    /// The full-length rerun at an earlier search's answer (documents
    /// written before the fitted search).
    Confirm,
}

/// One point a sweep ran: why, its verdict, and its run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepPoint {
    /// Why it ran.
    pub role: PointRole,
    /// Whether it met the SLO (the settled early verdict, else the point estimate).
    pub meets: Option<bool>,
    /// Its load time, s: the wall time of its run, warm-up and drain included.
    pub wall_s: f64,
    /// Its run document, with every run figure.
    pub result: RunResult,
    /// How the server was brought back to idle before it (every point but
    /// the first).
    #[serde(default)]
    pub start: Option<PointStart>,
}

/// One point of the latency–throughput curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CurvePoint {
    /// Index into `points`.
    pub point: usize,
    /// Offered rate (req/s, open loop) or concurrency (closed loop).
    pub offered: f64,
    /// Completed requests / duration (first send to last response end),
    /// req/s: the run's `request_throughput`.
    pub request_throughput: f64,
    /// Output tokens streamed by every measured request per second, counted
    /// as they arrived: the run's `streamed_output_throughput`.
    pub output_throughput: f64,
    pub ttft_p50_ms: Option<f64>,
    pub ttft_p99_ms: Option<f64>,
    pub tpot_p50_ms: Option<f64>,
    pub tpot_p99_ms: Option<f64>,
    pub e2el_p50_ms: Option<f64>,
    pub e2el_p99_ms: Option<f64>,
    pub saturated: bool,
    pub meets: Option<bool>,
    pub cost_per_million_good_output_tokens: Option<f64>,
    /// The point's output tokens over its GPUs' measured energy
    /// (`--gpu-metrics`, `--nvml`, a simulated target's exporter).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens_per_joule: Option<f64>,
    /// Its GPUs' mean power over the point's window, W.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_power_w: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct KneeAt {
    /// Index into `curve`.
    pub curve_index: usize,
    pub offered: f64,
}

/// Where the curve bends, by two methods.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Knees {
    /// Kneedle on throughput against offered load.
    pub throughput: Option<KneeAt>,
    /// The first load whose p99 TTFT exceeds the floor by `degradation_factor`.
    pub degradation: Option<KneeAt>,
    pub degradation_factor: f64,
    pub floor_ttft_p99_ms: Option<f64>,
}

/// The headline: the highest offered rate meeting the SLO.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Goodput {
    /// req/s; 0 when even the lowest load misses the SLO.
    pub rate: f64,
    /// [highest passing, lowest failing] (a search bracket, not a confidence interval).
    pub bracket: (f64, Option<f64>),
    pub slo: String,
    pub workload: String,
    /// Why it is 0, or what to know about it.
    pub notes: Vec<String>,
    /// A measuring point within the precision of `rate` met the SLO.
    pub confirmed: bool,
    /// 95 % interval of the rate at which the SLO's margin crosses zero:
    /// the rates the measurements do not settle as pass or fail.
    #[serde(default)]
    pub interval: Option<(f64, f64)>,
    /// How `rate` was reached: `fit` (the margin's zero fitted over the
    /// points near the edge) or `bracket` (the highest passing rate).
    #[serde(default)]
    pub method: Option<crate::plan::search::Method>,
    /// The rate rests on points too small to bound the SLO's percentiles,
    /// whose verdicts were not settled either: it is no answer (the notes
    /// say why and what would make one).
    #[serde(default)]
    pub inconclusive: bool,
    /// The rate's unit when it is not req/s: `tasks/s` for an agent
    /// workload, whose load is tasks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
}

impl Goodput {
    /// The rate's unit: `req/s`, or `tasks/s` for an agent workload.
    pub fn unit(&self) -> &str {
        self.unit.as_deref().unwrap_or("req/s")
    }
}

/// A sweep's document (`"kind": "sweep"`): its points, the curve and its
/// knees, the capacity and the goodput.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SweepResult {
    /// Which points the plan asked for.
    pub mode: Option<SweepMode>,
    /// Every point, in the order they ran.
    pub points: Vec<SweepPoint>,
    /// One entry per open-loop point (every point when none is open loop),
    /// sorted by offered load.
    pub curve: Vec<CurvePoint>,
    /// Where the curve bends: the throughput and the degradation knee.
    pub knees: Knees,
    /// Request throughput at the top of the capacity probe (req/s).
    pub capacity: Option<f64>,
    /// The headline: the highest offered rate meeting the SLO (None without
    /// an SLO).
    pub goodput: Option<Goodput>,
    /// What settling a goodput search's answer takes, said once exploring
    /// had found the edge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search_sizing: Option<crate::plan::search::Sizing>,
    /// The deployment frontier over the points (`--frontier`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frontier: Option<super::pareto::Frontier>,
    /// Why the sweep stopped before its plan was done.
    pub stopped: Option<StopReason>,
    /// Seconds spent running points (load time).
    pub load_time_s: f64,
    /// The workload in words: `chat, input 1024 / output 128 tokens`.
    pub workload: String,
    /// Sending window asked of each point, s (`--point-time`); a search's
    /// points may run longer.
    pub seconds_per_point: f64,
}

impl SweepResult {
    /// The document of a sweep stopped by a signal before it sent a
    /// request (what `--out` holds then).
    pub fn unstarted(spec: &super::SweepSpec, workload: String) -> SweepResult {
        SweepResult {
            mode: Some(spec.mode.clone()),
            stopped: Some(StopReason::InterruptedBeforeSending),
            seconds_per_point: spec.point_time.as_secs_f64(),
            workload,
            ..SweepResult::default()
        }
    }

    /// A sweep of concurrencies with an SLO (`--concurrencies`,
    /// `--frontier`: no request rate to answer in): the highest-concurrency
    /// point that met it, `Some(None)` when none did; `None` for any other
    /// sweep.
    pub fn slo_met_up_to(&self) -> Option<Option<&SweepPoint>> {
        let judged = self.points.iter().any(|p| p.meets.is_some());
        let closed = self.points.iter().all(|p| !p.result.config.load.is_open());
        if self.goodput.is_some() || !judged || !closed {
            return None;
        }
        Some(
            self.points
                .iter()
                .filter(|p| p.meets == Some(true))
                .max_by_key(|p| p.result.config.load.concurrency_cap().unwrap_or(0)),
        )
    }

    /// Why the sweep's gate failed (exit 1), if it did: a goodput of 0, or
    /// a sweep of concurrencies whose every point missed its SLO.
    pub fn gate_failure(&self) -> Option<String> {
        match (&self.goodput, self.slo_met_up_to()) {
            (Some(g), _) if g.rate == 0.0 => Some(format!("goodput is 0: {}", g.notes.join("; "))),
            (None, Some(None)) => Some("no point met the SLO".into()),
            _ => None,
        }
    }

    /// What answered the sweep's points (the first point's; every point
    /// of a sweep has the same target).
    pub fn target(&self) -> Option<&crate::output::config::Target> {
        self.points.first()?.result.config.target.as_ref()
    }
}

/// How a point's start was made clean: a point must not inherit the
/// previous point's backlog (a server that does not abort a request when
/// its client goes away keeps working on the ones a point abandoned).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointStart {
    /// `gauges`: the server's running + waiting gauges were polled until
    /// zero; `estimate`: without gauges, the client waited for the
    /// requests it abandoned to have had time to finish.
    pub by: String,
    /// Requests the previous point abandoned at its end (still running at
    /// the server, unless it aborts them).
    pub abandoned: u64,
    /// Seconds waited before the point.
    pub waited_s: f64,
    /// The server's running + waiting when the point started (gauges only).
    pub server_queue: Option<f64>,
    /// The server was idle when the point started: known from the gauges,
    /// None without them.
    pub idle: Option<bool>,
    /// The point was run again because its first run started over a queue.
    #[serde(default)]
    pub redone: bool,
}

/// The line that ends every sweep: the rate, its interval (where the
/// search could bound it) and bracket, the SLO and the workload.
pub fn headline(r: &SweepResult) -> Option<String> {
    let g = r.goodput.as_ref()?;
    // A rate in other units than req/s (an agent workload's tasks/s)
    // carries them in its bracket too: an inconclusive line has no rate.
    let unit = g.unit.as_ref().map(|u| format!(" {u}")).unwrap_or_default();
    let bracket = match g.bracket.1 {
        Some(hi) => format!("bracket {:.2}–{:.2}{unit}", g.bracket.0, hi),
        None => format!("bracket {:.2}–untested{unit}", g.bracket.0),
    };
    let interval = g
        .interval
        .map(|(a, b)| format!("95% interval {a:.2}–{b:.2}; "))
        .unwrap_or_default();
    let verdict = if g.inconclusive {
        "INCONCLUSIVE, no point settled the edge; "
    } else {
        ""
    };
    // A simulated sweep says so in the line people copy.
    let simulated = r
        .target()
        .filter(|t| t.is_simulated())
        .map(|t| format!(", {}", t.describe()))
        .unwrap_or_default();
    // An inconclusive answer rests on no point that could decide it: no
    // rate is headlined (a user copies the headline into a capacity plan),
    // only the bracket of the points too small to decide.
    let rate = if g.inconclusive {
        "no settled rate".to_string()
    } else {
        format!("{:.2} {}", g.rate, g.unit())
    };
    Some(format!(
        "goodput: {rate} ({verdict}{interval}{bracket}) at {} ({}, {:.0} s of load{simulated})",
        g.slo, g.workload, r.load_time_s
    ))
}

/// The line said on stderr when the `n`th point finishes: its role, load,
/// throughput, and whether it met the SLO or saturated the server.
pub fn point_line(n: usize, p: &SweepPoint) -> String {
    let m = &p.result.metrics;
    // An agent workload's load is tasks, and what it completed of them
    // comes first.
    let (load, tasks) = match &m.tasks {
        Some(t) => (
            format!("{:.2}", p.result.config.load).replace(" req/s", " tasks/s"),
            format!("{:.2} tasks/s, ", t.throughput),
        ),
        None => (format!("{:.2}", p.result.config.load), String::new()),
    };
    format!(
        "goodput: point {} ({:?}, {load}): {tasks}{:.2} req/s, {:.0} tok/s{}{}",
        n,
        p.role,
        m.throughput.request.value,
        m.throughput.output.value,
        match p.meets {
            Some(true) => ", meets the SLO",
            Some(false) => ", misses the SLO",
            None => "",
        },
        if m.saturation.saturated {
            ", saturated"
        } else {
            ""
        }
    )
}

/// A line of the search in an agent workload's units (`agents`): its
/// rates are tasks/s and the counts its points hold are tasks.
pub fn in_tasks(line: String, agents: bool) -> String {
    if agents {
        line.replace(" req/s", " tasks/s")
            .replace(" requests", " tasks")
    } else {
        line
    }
}
