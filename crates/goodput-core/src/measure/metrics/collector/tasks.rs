//! Tasks: an agent's trajectories of the measured phase, each judged whole.
//!
//! A task is one trajectory instance (the records' session), its calls
//! those records. It *completed* when every call did; its duration runs
//! from its first call's scheduled send (its arrival, in open loop) to its
//! last call's end. A task with a failed call failed; one whose calls were
//! cut (the drain timeout, a stop) is counted as cut. Completed tasks give
//! the duration's distribution (with the intervals every per-request
//! figure has), the task throughput and the `task:` SLO terms' values.
//! Calls are also split by depth (the main agent, its subagents, theirs):
//! how many, their TTFT and E2EL, and the prefix-cache share the trace
//! allows (Σ cacheable leading tokens / Σ prompt tokens, by the client's
//! count) beside what the server reported (Σ cached / Σ prompt tokens).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::outcomes::Outcome;
use crate::measure::metrics::RequestMetrics;
use crate::measure::slo::{TaskTerm, TaskTermOutcome};
use crate::measure::stats::{self, Distribution};
use crate::measure::verdict::{self, Verdict};
use crate::request::record::RequestRecord;

/// The tasks of a run that replayed agent trajectories.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskSummary {
    /// Tasks with at least one measured call.
    pub tasks: u64,
    /// Tasks whose every call completed.
    pub completed: u64,
    /// Tasks with a failed call (what waited for it was not sent).
    pub failed: u64,
    /// Tasks neither completed nor failed: a call was cut by the drain
    /// timeout or a stop.
    pub cut: u64,
    /// Completed tasks / the run's duration, tasks/s.
    pub throughput: f64,
    /// Duration of completed tasks (first call's scheduled send to the last
    /// call's end), ms.
    pub duration: Option<Distribution>,
    /// Per completed task: mean calls, prompt and output tokens, subagents.
    pub calls_mean: f64,
    pub input_tokens_mean: f64,
    pub output_tokens_mean: f64,
    pub subagents_mean: f64,
    /// Completed tasks' calls: Σ cacheable leading tokens / Σ prompt tokens
    /// (the client's count): the prefix-cache share the trace allows.
    pub cacheable_share: Option<f64>,
    /// Completed tasks' calls: Σ cached / Σ prompt tokens as the server
    /// reported them, where it did.
    pub cached_share: Option<f64>,
    /// Completed calls by their agent's depth (0: the main agent).
    pub by_depth: Vec<DepthFigures>,
    /// One task's calls as they ran: of the first completed tasks, the one
    /// of median duration (the HTML report draws it).
    #[serde(default)]
    pub timeline: Vec<TimelineCall>,
}

/// A call of the task drawn as a timeline: ms from the task's start.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimelineCall {
    /// Its index in the trace's list order.
    pub call: u32,
    /// Its agent (0 the main agent) and that agent's depth.
    pub agent: u32,
    pub depth: u32,
    /// The calls it waited for.
    pub parents: Vec<u32>,
    /// When it was due (its parents' end plus its gap), sent, and ended.
    pub sched_ms: f64,
    pub send_ms: f64,
    pub done_ms: f64,
}

/// The completed tasks whose calls are kept for the timeline.
const TIMELINES: usize = 64;

/// The completed calls of one depth.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DepthFigures {
    pub depth: u32,
    pub calls: u64,
    pub ttft_p50_ms: Option<f64>,
    pub ttft_p90_ms: Option<f64>,
    pub e2el_p50_ms: Option<f64>,
    pub e2el_p90_ms: Option<f64>,
    pub output_tokens_mean: f64,
    pub cacheable_share: Option<f64>,
    pub cached_share: Option<f64>,
}

/// Σ prompt tokens with their cacheable and cached parts.
#[derive(Debug, Default, Clone, Copy)]
struct Cache {
    client_prompt: u64,
    cacheable: u64,
    server_prompt: u64,
    cached: u64,
}

impl Cache {
    fn add(&mut self, rec: &RequestRecord) {
        if let Some(p) = rec.prompt_tokens_client {
            self.client_prompt += u64::from(p);
            self.cacheable += u64::from(rec.cacheable_tokens.min(p));
        }
        if let Some(u) = rec.usage {
            if let (Some(p), Some(c)) = (u.prompt_tokens, u.cached_tokens) {
                self.server_prompt += u64::from(p);
                self.cached += u64::from(c);
            }
        }
    }

    fn merge(&mut self, o: &Cache) {
        self.client_prompt += o.client_prompt;
        self.cacheable += o.cacheable;
        self.server_prompt += o.server_prompt;
        self.cached += o.cached;
    }

    fn shares(&self) -> (Option<f64>, Option<f64>) {
        let share = |a: u64, b: u64| (b > 0).then(|| a as f64 / b as f64);
        (
            share(self.cacheable, self.client_prompt),
            share(self.cached, self.server_prompt),
        )
    }
}

/// One task so far.
#[derive(Debug, Default)]
struct TaskAcc {
    start_ns: Option<u64>,
    end_ns: u64,
    calls: u32,
    ok: u32,
    failed: bool,
    cut: bool,
    input_tokens: u64,
    output_tokens: u64,
    /// The subagents seen (agent ids above 0).
    subagents: Vec<u32>,
    cache: Cache,
    /// Its calls (times in ms on the run's clock), while it may yet be
    /// one of the first completed tasks.
    calls_seen: Vec<TimelineCall>,
}

#[derive(Debug, Default)]
struct DepthAcc {
    ttft: Vec<f64>,
    e2el: Vec<f64>,
    output_tokens: u64,
    cache: Cache,
}

#[derive(Debug, Default)]
pub(super) struct Tasks {
    tasks: BTreeMap<u64, TaskAcc>,
    depths: BTreeMap<u32, DepthAcc>,
    /// The first completed tasks' calls, for the timeline.
    timelines: Vec<Vec<TimelineCall>>,
}

impl Tasks {
    /// A measured call of an agent's trajectory (other records pass by).
    pub(super) fn add(
        &mut self,
        rec: &RequestRecord,
        m: &RequestMetrics,
        outcome: &Outcome,
        open_loop: bool,
    ) {
        let (Some(call), Some((id, _, calls))) = (rec.agent.as_deref(), rec.session) else {
            return;
        };
        let t = self.tasks.entry(id).or_default();
        t.calls = calls;
        t.start_ns = Some(t.start_ns.map_or(rec.t_sched, |s| s.min(rec.t_sched)));
        match outcome {
            Outcome::Incomplete => t.cut = true,
            Outcome::Failed(_) => t.failed = true,
            Outcome::Completed => {
                t.ok += 1;
                t.end_ns = t.end_ns.max(rec.t_done);
                t.input_tokens += u64::from(m.input_tokens.unwrap_or(0));
                t.output_tokens += u64::from(m.output_tokens);
                if call.agent > 0 && !t.subagents.contains(&call.agent) {
                    t.subagents.push(call.agent);
                }
                t.cache.add(rec);
                if self.timelines.len() < TIMELINES {
                    let ms = |ns: u64| ns as f64 / 1e6;
                    t.calls_seen.push(TimelineCall {
                        call: rec.session.map_or(0, |s| s.1),
                        agent: call.agent,
                        depth: call.depth,
                        parents: call.parents.clone(),
                        sched_ms: ms(rec.t_sched),
                        send_ms: ms(rec.t_send.unwrap_or(rec.t_sched)),
                        done_ms: ms(rec.t_done),
                    });
                    if completed(t) {
                        self.timelines.push(timeline(t));
                    }
                }
                let d = self.depths.entry(call.depth).or_default();
                let (ttft, e2el) = if open_loop {
                    (m.ttft_sched_ms, m.e2el_sched_ms)
                } else {
                    (m.ttft_ms, m.e2el_ms)
                };
                d.ttft.extend(ttft);
                d.e2el.extend(e2el);
                d.output_tokens += u64::from(m.output_tokens);
                d.cache.add(rec);
            }
        }
    }

    /// The completed tasks' durations (ms) in the order the tasks started.
    fn durations(&self) -> Vec<f64> {
        let mut v: Vec<(u64, f64)> = self
            .tasks
            .values()
            .filter(|t| completed(t))
            .map(|t| {
                let start = t.start_ns.unwrap_or(t.end_ns);
                (start, t.end_ns.saturating_sub(start) as f64 / 1e6)
            })
            .collect();
        v.sort_by_key(|&(s, _)| s);
        v.into_iter().map(|(_, d)| d).collect()
    }

    /// The tasks' figures over `duration_s`; `None` for a run without them.
    pub(super) fn finish(&self, percentiles: &[f64], duration_s: f64) -> Option<TaskSummary> {
        if self.tasks.is_empty() {
            return None;
        }
        let done: Vec<&TaskAcc> = self.tasks.values().filter(|t| completed(t)).collect();
        let n = done.len().max(1) as f64;
        let mean = |f: &dyn Fn(&TaskAcc) -> f64| done.iter().map(|t| f(t)).sum::<f64>() / n;
        let mut cache = Cache::default();
        for t in &done {
            cache.merge(&t.cache);
        }
        let (cacheable_share, cached_share) = cache.shares();
        Some(TaskSummary {
            tasks: self.tasks.len() as u64,
            completed: done.len() as u64,
            failed: self.tasks.values().filter(|t| t.failed).count() as u64,
            cut: self
                .tasks
                .values()
                .filter(|t| !t.failed && !completed(t))
                .count() as u64,
            throughput: if duration_s > 0.0 {
                done.len() as f64 / duration_s
            } else {
                0.0
            },
            duration: stats::describe(self.durations(), percentiles, stats::Level::TwoSided),
            calls_mean: mean(&|t| f64::from(t.ok)),
            input_tokens_mean: mean(&|t| t.input_tokens as f64),
            output_tokens_mean: mean(&|t| t.output_tokens as f64),
            subagents_mean: mean(&|t| t.subagents.len() as f64),
            cacheable_share,
            cached_share,
            by_depth: self
                .depths
                .iter()
                .map(|(&depth, d)| depth_figures(depth, d))
                .collect(),
            timeline: self.median_timeline(),
        })
    }

    /// The task terms judged on the completed tasks' durations, as a
    /// request term is judged on its requests' values.
    pub(super) fn judge(&self, terms: &[TaskTerm]) -> Vec<TaskTermOutcome> {
        let in_time = self.durations();
        let mut sorted = in_time.clone();
        sorted.sort_by(f64::total_cmp);
        terms
            .iter()
            .map(|&term| {
                if sorted.is_empty() {
                    return TaskTermOutcome {
                        term,
                        estimate: None,
                        passes: false,
                        verdict: Verdict::Inconclusive,
                        more_tasks_to_settle: None,
                    };
                }
                let j = verdict::judge(
                    &sorted[..],
                    Some(&in_time),
                    term.percentile / 100.0,
                    term.threshold_ms,
                );
                TaskTermOutcome {
                    term,
                    estimate: Some(j.estimate),
                    passes: j.point_passes,
                    verdict: j.verdict,
                    more_tasks_to_settle: j
                        .more_requests_to_settle
                        .filter(|_| j.verdict == Verdict::Inconclusive),
                }
            })
            .collect()
    }
}

impl Tasks {
    /// Of the first completed tasks, the one of median duration.
    fn median_timeline(&self) -> Vec<TimelineCall> {
        let span = |t: &Vec<TimelineCall>| t.iter().map(|c| c.done_ms).fold(0.0, f64::max);
        let mut v: Vec<&Vec<TimelineCall>> = self.timelines.iter().collect();
        v.sort_by(|a, b| span(a).total_cmp(&span(b)));
        v.get(v.len() / 2).map(|t| (*t).clone()).unwrap_or_default()
    }
}

/// A completed task's calls, in list order, from its start.
fn timeline(t: &mut TaskAcc) -> Vec<TimelineCall> {
    let start = t.start_ns.unwrap_or(0) as f64 / 1e6;
    let mut calls = std::mem::take(&mut t.calls_seen);
    for c in &mut calls {
        c.sched_ms -= start;
        c.send_ms -= start;
        c.done_ms -= start;
    }
    calls.sort_by_key(|c| c.call);
    calls
}

fn completed(t: &TaskAcc) -> bool {
    !t.failed && !t.cut && t.calls > 0 && t.ok == t.calls
}

fn depth_figures(depth: u32, d: &DepthAcc) -> DepthFigures {
    let pct = |v: &[f64], p: f64| {
        let mut s = v.to_vec();
        s.sort_by(f64::total_cmp);
        stats::percentile_sorted(&s, p)
    };
    let calls = d.e2el.len() as u64;
    let (cacheable_share, cached_share) = d.cache.shares();
    DepthFigures {
        depth,
        calls,
        ttft_p50_ms: pct(&d.ttft, 50.0),
        ttft_p90_ms: pct(&d.ttft, 90.0),
        e2el_p50_ms: pct(&d.e2el, 50.0),
        e2el_p90_ms: pct(&d.e2el, 90.0),
        output_tokens_mean: if calls > 0 {
            d.output_tokens as f64 / calls as f64
        } else {
            0.0
        },
        cacheable_share,
        cached_share,
    }
}
