//! Agent trajectories: recorded calls with what each waits for.
//!
//! An agent's task is not a stream of independent arrivals. A coding
//! agent's call waits for the call before it and for the tool that ran
//! after it; two subagents fan out in parallel, each with a fresh context,
//! and the call after them waits for both. What waits for what decides the
//! load a server sees, so a trajectory is replayed as a graph: each call
//! with its parents ([`Call::parents`]) and the gap it waited after the
//! last of them ended ([`Call::gap_s`]).
//!
//! Formats (read by [`weka`]):
//! - **Weka** traces (the format AIPerf's AgentX, GuideLLM and
//!   inference-perf read): one JSON object per trace (a `.json` file, a
//!   directory of them, or JSON lines), `block_size`, `hash_id_scope`, and
//!   a `requests` list of calls (`t`, `in`, `out`, `hash_ids`, `api_time`,
//!   `think_time`, …) interleaved with `type: "subagent"` entries holding
//!   their own `requests`. List order is the topology: a subagent spawns
//!   from the call before it and is joined by the call after it; adjacent
//!   subagents run in parallel (a subagent whose `status` is
//!   `async_launched` is not joined); a subagent's calls start with a fresh
//!   context (their `hash_ids` are their own).
//! - **OpenTelemetry GenAI span dumps** ([`otel`]): `{trace_id, spans}`,
//!   dependencies built from `parent_span_id` and the spans' times, tools
//!   as the waits between calls.
//!
//! Replay ([`Timing`]): by default a call is sent when every parent has
//! completed, plus its recorded gap (its `t` less the latest parent's
//! recorded end, `t + api_time`; else its `think_time`; else none), the gap
//! capped; with [`Timing::Recorded`] at its recorded `t` from the
//! trajectory's start, but never before its parents complete.

pub mod otel;
pub mod read;
pub mod source;
pub mod weka;

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::files::{self, FileError};

/// One recorded call of a trajectory.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// The agent that made it: 0 the main agent, k > 0 the k-th subagent in
    /// the trace's list order.
    pub agent: u32,
    /// Subagent nesting: 0 for the main agent's calls.
    pub depth: u32,
    /// Calls (indices into the trajectory's calls) that must complete
    /// before this one is sent; empty for the trajectory's first call.
    pub parents: Vec<u32>,
    /// Recorded start, seconds from the trajectory's first call.
    pub t_s: f64,
    /// Recorded wait after the last parent ended (seconds, not capped);
    /// 0 for the first call.
    pub gap_s: f64,
    /// Whether the gap was read from the recording (`api_time` or
    /// `think_time`) rather than taken as none.
    pub gap_known: bool,
    /// Prompt tokens (`in`).
    pub input_tokens: u32,
    /// Output tokens (`out`), sent as `max_tokens`.
    pub output_tokens: u32,
    /// Prefix-cache block ids, one per `block_tokens` of the prompt.
    pub hash_ids: Vec<u64>,
}

/// One trace: a task's calls in list order (parents before children).
#[derive(Debug, Clone, PartialEq)]
pub struct Trajectory {
    /// The trace's `id` (else its place in the files, `#3`).
    pub id: String,
    /// Tokens each hash id stands for (`block_size`).
    pub block_tokens: u32,
    /// `hash_id_scope: global`: equal ids in different traces are the same
    /// block. Local (the default): each trace has its own ids.
    pub global_ids: bool,
    pub calls: Vec<Call>,
}

/// Where nested subagent `t` values count from, as detected per subagent:
/// a list whose first call's `t` lies before its spawn's `t` counts from
/// the spawn (relative), else from the trace's start (absolute).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct NestedTimes {
    /// Lists counted from their spawn.
    pub relative: u64,
    /// Lists counted from the trace's start.
    pub absolute: u64,
}

/// What reading the trajectories found, every leniency counted.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AgentStats {
    /// The file or directory name.
    pub name: String,
    /// The format read (`weka`).
    pub format: String,
    /// Trajectories read.
    pub traces: u64,
    /// Calls in them.
    pub calls: u64,
    /// Subagents in them.
    pub subagents: u64,
    /// Subagents launched without a join (`status: async_launched`).
    pub async_subagents: u64,
    /// How nested subagents' `t` values were read.
    pub nested_times: NestedTimes,
    /// Calls after a parent whose gap the recording does not give (no
    /// `api_time` on a parent, no `think_time`): sent right after it.
    pub calls_without_gap: u64,
}

impl AgentStats {
    /// The notes a user should read before the run: how nested times were
    /// read, and what the recording left out.
    pub fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        let n = self.nested_times;
        if n.relative + n.absolute > 0 {
            notes.push(format!(
                "subagent times: {} list(s) counted from their spawn, {} from the trace's start (a list whose first t lies before its spawn's is relative)",
                n.relative, n.absolute
            ));
        }
        if self.calls_without_gap > 0 {
            notes.push(format!(
                "{} call(s) have no recorded gap after their parents (no api_time on a parent, no think_time): sent as soon as their parents complete",
                self.calls_without_gap
            ));
        }
        if self.async_subagents > 0 {
            notes.push(format!(
                "{} subagent(s) were launched asynchronously: nothing waits for them",
                self.async_subagents
            ));
        }
        notes
    }
}

/// Trajectories read and checked, ready to replay.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentTraces {
    /// In file order.
    pub trajectories: Vec<Trajectory>,
    /// What reading them found.
    pub stats: AgentStats,
}

impl AgentTraces {
    /// Read agent traces from `path` (Weka traces, OpenTelemetry span dumps); a malformed file stops
    /// here, before any request, naming the file, trace, request and field.
    pub fn load(path: &Path) -> Result<AgentTraces, FileError> {
        read::load(path)
    }

    /// Whether `--trace PATH` (in `format`, when given) holds agent
    /// trajectories: `--trace-format weka`, or, undetermined, a directory,
    /// a `.json` file, or JSON lines whose first object has `requests`.
    pub fn detect(path: &Path, format: Option<super::trace::TraceFormat>) -> bool {
        match format {
            Some(f) => f == super::trace::TraceFormat::Weka,
            None => read::detect(path),
        }
    }
}

/// Where an error is: the file, its line, and the trace's field.
struct At<'a> {
    path: &'a Path,
    line: u64,
    trace: String,
}

impl<'a> At<'a> {
    /// A document's object and where its errors are: its trace id under
    /// the first of `id_keys` (else its place in the files, `#3`); `what`
    /// names the object expected.
    fn of<'v>(
        v: &'v serde_json::Value,
        path: &'a Path,
        line: u64,
        index: usize,
        what: &str,
        id_keys: &[&str],
    ) -> Result<(&'v serde_json::Map<String, serde_json::Value>, At<'a>), FileError> {
        use serde_json::Value;
        let Some(obj) = v.as_object() else {
            return Err(FileError::line(
                path,
                line,
                format!("expected {what}, found {}", files::describe(v)),
            ));
        };
        let trace = match id_keys.iter().find_map(|k| obj.get(*k)) {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            _ => format!("#{}", index + 1),
        };
        Ok((obj, At { path, line, trace }))
    }

    fn err(&self, field: &str, problem: impl Into<String>) -> FileError {
        FileError::field(
            self.path,
            self.line,
            &format!("trace {:?} {field}", self.trace),
            problem,
        )
    }
}

/// When a call is sent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Timing {
    /// When its parents have completed, plus its recorded gap (capped).
    #[default]
    Gaps,
    /// At its recorded time from the trajectory's start, never before its
    /// parents complete.
    Recorded,
}

impl std::str::FromStr for Timing {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "gaps" => Ok(Timing::Gaps),
            "recorded" => Ok(Timing::Recorded),
            _ => Err(format!("expected gaps or recorded, found {s:?}")),
        }
    }
}

impl std::fmt::Display for Timing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Timing::Gaps => "gaps",
            Timing::Recorded => "recorded",
        })
    }
}

/// How a run replays trajectories.
#[derive(Debug, Clone, PartialEq)]
pub struct Replay {
    /// When calls are sent.
    pub timing: Timing,
    /// Recorded times and gaps are divided by this (2: twice as fast).
    pub speed: f64,
    /// Longest gap a call waits after its parents (before `speed`).
    pub gap_cap: Duration,
}

impl Default for Replay {
    fn default() -> Self {
        Replay {
            timing: Timing::Gaps,
            speed: 1.0,
            gap_cap: DEFAULT_GAP_CAP,
        }
    }
}

/// The default cap on a call's gap after its parents: a user who left for
/// lunch mid-task is not load (AIPerf caps idle gaps at 60 s too).
pub const DEFAULT_GAP_CAP: Duration = Duration::from_secs(60);

impl Replay {
    /// The wait after the last parent completed, in [`Timing::Gaps`].
    pub fn gap(&self, call: &Call) -> Duration {
        let s = call.gap_s.clamp(0.0, self.gap_cap.as_secs_f64()) / self.speed;
        Duration::try_from_secs_f64(s).unwrap_or(Duration::ZERO)
    }

    /// The recorded start from the trajectory's start, in
    /// [`Timing::Recorded`].
    pub fn at(&self, call: &Call) -> Duration {
        Duration::try_from_secs_f64(call.t_s.max(0.0) / self.speed).unwrap_or(Duration::ZERO)
    }
}

#[cfg(test)]
mod tests;
