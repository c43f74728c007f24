//! Weka traces: agent trajectories as JSON, read into [`Trajectory`]s.
//!
//! A trace is an object with `requests` (required), `id`, `block_size`
//! (required where a call has `hash_ids`) and `hash_id_scope` (`local`, the
//! default, or `global`); other keys (`models`, `tool_tokens`, `totals`, …)
//! are read past. A call has `t` (seconds, required), `in` and `out`
//! (tokens, required; an `out` of 0 is sent as 1 and counted), and
//! optionally `hash_ids`, `api_time` and `think_time`; `type` is `n` or `s`
//! (both sent as the run's endpoint streams) or `subagent`, whose entry has
//! `t`, its own `requests`, and optionally `status`. Every error names the
//! file, its line (JSON lines), the trace and the request's path, such as
//! `trace "t1" requests[3].requests[0].in`.

use std::path::Path;

use serde_json::{Map, Value};

use super::super::files::{self, describe, FileError};
use super::{AgentStats, At, Call, Trajectory};

/// Subagents nested deeper than this are refused (a file that would
/// recurse without end is not a recording).
const MAX_DEPTH: u32 = 64;

pub(super) fn trace(
    v: &Value,
    path: &Path,
    line: u64,
    index: usize,
    stats: &mut AgentStats,
) -> Result<Trajectory, FileError> {
    let (obj, at) = At::of(v, path, line, index, "a trace object", &["id"])?;
    let global_ids = match obj.get("hash_id_scope") {
        None | Some(Value::Null) => false,
        Some(Value::String(s)) if s == "local" => false,
        Some(Value::String(s)) if s == "global" => true,
        Some(other) => {
            return Err(at.err(
                "hash_id_scope",
                format!(
                    "expected \"local\" or \"global\", found {}",
                    describe(other)
                ),
            ))
        }
    };
    let block_tokens = match obj.get("block_size") {
        None | Some(Value::Null) => None,
        Some(b) => Some(
            files::whole_number(b, 1)
                .and_then(files::to_u32)
                .map_err(|e| at.err("block_size", e))?,
        ),
    };
    let Some(list) = obj.get("requests").and_then(Value::as_array) else {
        return Err(at.err("requests", "missing, or not a list of calls"));
    };
    let mut b = Builder {
        at: &at,
        calls: Vec::new(),
        ends: Vec::new(),
        agents: 0,
        stats,
    };
    b.walk(list, "requests", Vec::new(), 0, 0, 0.0)?;
    let Builder { mut calls, .. } = b;
    if calls.is_empty() {
        return Err(at.err("requests", "the trace has no calls"));
    }
    if let Some(i) = calls.iter().skip(1).position(|c| c.parents.is_empty()) {
        return Err(at.err(
            "requests",
            format!("call {} has nothing before it, as the first has: a trace must open with one call (not parallel subagents)", i + 1),
        ));
    }
    if block_tokens.is_none() && calls.iter().any(|c| !c.hash_ids.is_empty()) {
        return Err(at.err(
            "block_size",
            "missing, and calls have hash_ids (the tokens each id stands for)",
        ));
    }
    // Times from the first call's start.
    let t0 = calls.iter().map(|c| c.t_s).fold(f64::INFINITY, f64::min);
    for c in &mut calls {
        c.t_s -= t0;
    }
    stats.subagents += calls.iter().map(|c| c.agent).max().unwrap_or(0) as u64;
    Ok(Trajectory {
        id: at.trace.clone(),
        block_tokens: block_tokens.unwrap_or(512),
        global_ids,
        calls,
    })
}

/// Builds one trajectory's calls from its nested lists.
struct Builder<'a, 'b> {
    at: &'a At<'a>,
    calls: Vec<Call>,
    /// Each call's recorded end (`t + api_time`), where known.
    ends: Vec<Option<f64>>,
    agents: u32,
    stats: &'b mut AgentStats,
}

impl Builder<'_, '_> {
    /// Walk one agent's list from `spawn` (the calls its first call waits
    /// for); `base` is what its `t` values count from. Returns the calls
    /// that end it (what a join waits for).
    fn walk(
        &mut self,
        list: &[Value],
        field: &str,
        spawn: Vec<u32>,
        agent: u32,
        depth: u32,
        base: f64,
    ) -> Result<Vec<u32>, FileError> {
        if depth > MAX_DEPTH {
            return Err(self.at.err(
                field,
                format!("subagents nested more than {MAX_DEPTH} deep"),
            ));
        }
        let mut prev = spawn;
        let mut i = 0;
        while i < list.len() {
            let f = format!("{field}[{i}]");
            let Some(obj) = list[i].as_object() else {
                return Err(self.at.err(
                    &f,
                    format!(
                        "expected a call or a subagent, found {}",
                        describe(&list[i])
                    ),
                ));
            };
            if obj.get("type").and_then(Value::as_str) != Some("subagent") {
                let idx = self.call(obj, &f, &prev, agent, depth, base)?;
                prev = vec![idx];
                i += 1;
                continue;
            }
            // Adjacent subagents run in parallel from the same spawn; the
            // next call joins those that are not launched asynchronously.
            let mut join: Vec<u32> = Vec::new();
            while i < list.len() && list[i].get("type").and_then(Value::as_str) == Some("subagent")
            {
                let f = format!("{field}[{i}]");
                let sub = list[i].as_object().expect("checked above");
                let spawn_t = number(sub, "t", &f, self.at)?.unwrap_or(0.0);
                let Some(inner) = sub.get("requests").and_then(Value::as_array) else {
                    return Err(self
                        .at
                        .err(&format!("{f}.requests"), "missing, or not a list of calls"));
                };
                let first_t = first_call_t(inner);
                let sub_base = match first_t {
                    Some(t) if t < spawn_t => {
                        self.stats.nested_times.relative += 1;
                        base + spawn_t
                    }
                    Some(_) => {
                        self.stats.nested_times.absolute += 1;
                        // An absolute list counts from the trace's start.
                        0.0
                    }
                    None => base,
                };
                self.agents += 1;
                let sub_agent = self.agents;
                let ends = self.walk(
                    inner,
                    &format!("{f}.requests"),
                    prev.clone(),
                    sub_agent,
                    depth + 1,
                    sub_base,
                )?;
                let is_async = sub.get("status").and_then(Value::as_str) == Some("async_launched");
                if is_async {
                    self.stats.async_subagents += 1;
                } else {
                    for e in ends {
                        if !join.contains(&e) {
                            join.push(e);
                        }
                    }
                }
                i += 1;
            }
            if !join.is_empty() {
                prev = join;
            }
        }
        Ok(prev)
    }

    fn call(
        &mut self,
        obj: &Map<String, Value>,
        f: &str,
        parents: &[u32],
        agent: u32,
        depth: u32,
        base: f64,
    ) -> Result<u32, FileError> {
        match obj.get("type") {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) if s == "n" || s == "s" => {}
            Some(other) => {
                return Err(self.at.err(
                    &format!("{f}.type"),
                    format!(
                        "expected \"n\", \"s\" or \"subagent\", found {}",
                        describe(other)
                    ),
                ))
            }
        }
        let t = number(obj, "t", f, self.at)?
            .ok_or_else(|| self.at.err(&format!("{f}.t"), "missing"))?;
        let whole = |key: &str, min: u64| -> Result<u32, FileError> {
            let v = obj
                .get(key)
                .ok_or_else(|| self.at.err(&format!("{f}.{key}"), "missing"))?;
            files::whole_number(v, min)
                .and_then(files::to_u32)
                .map_err(|e| self.at.err(&format!("{f}.{key}"), e))
        };
        let input_tokens = whole("in", 0)?.max(1);
        let output_tokens = whole("out", 0)?.max(1);
        let hash_ids = match obj.get("hash_ids") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(ids)) => ids
                .iter()
                .enumerate()
                .map(|(k, id)| {
                    files::whole_number(id, 0)
                        .map_err(|e| self.at.err(&format!("{f}.hash_ids[{k}]"), e))
                })
                .collect::<Result<Vec<u64>, _>>()?,
            Some(other) => {
                return Err(self.at.err(
                    &format!("{f}.hash_ids"),
                    format!(
                        "expected a list of whole numbers, found {}",
                        describe(other)
                    ),
                ))
            }
        };
        let api_time = number(obj, "api_time", f, self.at)?;
        let think_time = number(obj, "think_time", f, self.at)?;
        let t_s = base + t;
        let parent_end = parents
            .iter()
            .map(|&p| self.ends[p as usize])
            .try_fold(f64::NEG_INFINITY, |m, e| e.map(|e| m.max(e)));
        let (gap_s, gap_known) = match (parents.is_empty(), parent_end, think_time) {
            (true, _, _) => (0.0, true),
            (false, Some(end), _) => (t_s - end, true),
            (false, None, Some(think)) => (think, true),
            (false, None, None) => {
                self.stats.calls_without_gap += 1;
                (0.0, false)
            }
        };
        self.calls.push(Call {
            agent,
            depth,
            parents: parents.to_vec(),
            t_s,
            gap_s,
            gap_known,
            input_tokens,
            output_tokens,
            hash_ids,
        });
        self.ends.push(api_time.map(|a| t_s + a));
        Ok(self.calls.len() as u32 - 1)
    }
}

/// An optional number ≥ 0 under `key`.
fn number(obj: &Map<String, Value>, key: &str, f: &str, at: &At) -> Result<Option<f64>, FileError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v.as_f64() {
            Some(x) if x.is_finite() && x >= 0.0 => Ok(Some(x)),
            _ => Err(at.err(
                &format!("{f}.{key}"),
                format!("expected a number of seconds >= 0, found {}", describe(v)),
            )),
        },
    }
}

/// The `t` of a list's first entry (a leading subagent's: its spawn).
fn first_call_t(list: &[Value]) -> Option<f64> {
    list.first()?.get("t").and_then(Value::as_f64)
}
