//! OpenTelemetry GenAI span dumps, read into [`Trajectory`]s.
//!
//! A document is `{trace_id, spans: [...]}` (a file, an array of them, or a
//! line of JSON lines). A span has `span_id`, `parent_span_id` (or
//! `parent_id`; empty or absent at the root), `name`, `start_time` and
//! `end_time` (ISO 8601, or epoch numbers whose size says their unit: s, ms,
//! µs or ns), and `attributes` (an object, or OTLP's list of
//! `{key, value: {stringValue | intValue | doubleValue}}`). What a span is
//! comes from `gen_ai.operation.name` (else the first word of its name):
//! `chat`, `text_completion` and `generate_content` are calls, which need
//! `gen_ai.usage.input_tokens` and `output_tokens` (or the older
//! `prompt_tokens` and `completion_tokens`); `invoke_agent` and
//! `create_agent` are agents; anything else (`execute_tool`, …) is a wait.
//!
//! Dependencies come from the tree and the clock: a span waits for the
//! calls that end its siblings (same parent) which ended before it started;
//! with no such sibling it waits for what its parent waited for. What ends
//! a span is itself for a call; for any other span the calls in its subtree
//! that no other call there waits for, or, with no call in it (a tool), what
//! it waited for itself. Redundant waits (a call its other parents already
//! wait for) are dropped. So a tool between two calls is the gap between
//! them, and two agents started side by side run in parallel and are joined
//! by the call that starts after both ended. Each call's recorded gap is
//! its start less the latest end among what it waits for.
//!
//! Spans carry no prompt text or cache ids. An agent's context grows by
//! appending, so each call is given block ids (64 tokens each) that repeat
//! the previous call of the same agent for as many whole blocks as the
//! shorter prompt holds: a call shares the prefix its agent's history
//! allows. A subagent starts with a fresh context.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde_json::{Map, Value};

use super::super::files::{describe, FileError};
use super::super::trace::datetime::parse_datetime;
use super::{AgentStats, At, Call, Trajectory};

/// Tokens each synthesized block id stands for.
const BLOCK_TOKENS: u32 = 64;

/// What a span is.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Call,
    Agent,
    Wait,
}

#[derive(Debug)]
struct Span {
    parent: Option<usize>,
    start: i128,
    end: i128,
    kind: Kind,
    input: u32,
    output: u32,
    children: Vec<usize>,
}

pub(super) fn trace(
    v: &Value,
    path: &Path,
    line: u64,
    index: usize,
    stats: &mut AgentStats,
) -> Result<Trajectory, FileError> {
    let (obj, at) = At::of(
        v,
        path,
        line,
        index,
        "a span dump object",
        &["trace_id", "traceId"],
    )?;
    let Some(list) = obj.get("spans").and_then(Value::as_array) else {
        return Err(at.err("spans", "not a list of spans"));
    };
    let spans = read_spans(list, &at)?;
    let mut calls: Vec<usize> = (0..spans.len())
        .filter(|&i| spans[i].kind == Kind::Call)
        .collect();
    calls.sort_by_key(|&i| (spans[i].start, spans[i].end, i));
    if calls.is_empty() {
        return Err(at.err(
            "spans",
            "no chat spans (gen_ai.operation.name chat): nothing to send",
        ));
    }
    let parents = waits(&spans, &calls, &at)?;
    let (calls, agents) = replayed(&spans, &calls, &parents);
    stats.subagents += agents.saturating_sub(1) as u64;
    Ok(Trajectory {
        id: at.trace,
        block_tokens: BLOCK_TOKENS,
        global_ids: false,
        calls,
    })
}

/// The spans of a dump, each linked to its parent and children.
fn read_spans(list: &[Value], at: &At) -> Result<Vec<Span>, FileError> {
    let mut spans = Vec::with_capacity(list.len());
    let mut ids: HashMap<String, usize> = HashMap::new();
    let mut parent_ids = Vec::with_capacity(list.len());
    for (i, s) in list.iter().enumerate() {
        let f = format!("spans[{i}]");
        let Some(o) = s.as_object() else {
            return Err(at.err(&f, format!("expected a span, found {}", describe(s))));
        };
        let span_id = text(o, &["span_id", "spanId"])
            .ok_or_else(|| at.err(&format!("{f}.span_id"), "missing"))?;
        if ids.insert(span_id.clone(), i).is_some() {
            return Err(at.err(
                &format!("{f}.span_id"),
                format!("{span_id:?} appears twice"),
            ));
        }
        parent_ids.push(
            text(o, &["parent_span_id", "parentSpanId", "parent_id"]).filter(|p| !p.is_empty()),
        );
        spans.push(span(o, &f, at)?);
    }
    for (i, p) in parent_ids.iter().enumerate() {
        // A parent outside the dump (an upstream service's span) is no
        // parent here: the span is a root.
        if let Some(&pi) = p.as_ref().and_then(|p| ids.get(p)) {
            spans[i].parent = Some(pi);
            spans[pi].children.push(i);
        }
    }
    Ok(spans)
}

/// One span: its times, what it is, and a call's tokens.
fn span(o: &Map<String, Value>, f: &str, at: &At) -> Result<Span, FileError> {
    let start = time(
        o,
        &["start_time", "startTimeUnixNano", "start_time_unix_nano"],
        f,
        at,
    )?;
    let end = time(
        o,
        &["end_time", "endTimeUnixNano", "end_time_unix_nano"],
        f,
        at,
    )?;
    if end < start {
        return Err(at.err(&format!("{f}.end_time"), "ends before it starts"));
    }
    let attrs = attributes(o);
    let op = attrs
        .get("gen_ai.operation.name")
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| {
            o.get("name")
                .and_then(Value::as_str)
                .and_then(|n| n.split_whitespace().next())
                .map(str::to_string)
        })
        .unwrap_or_default();
    let kind = match op.as_str() {
        "chat" | "text_completion" | "generate_content" => Kind::Call,
        "invoke_agent" | "create_agent" => Kind::Agent,
        _ => Kind::Wait,
    };
    let (mut input, mut output) = (0, 0);
    if kind == Kind::Call {
        input = tokens(
            &attrs,
            &["gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"],
            f,
            at,
        )?;
        output = tokens(
            &attrs,
            &[
                "gen_ai.usage.output_tokens",
                "gen_ai.usage.completion_tokens",
            ],
            f,
            at,
        )?;
    }
    Ok(Span {
        parent: None,
        start,
        end,
        kind,
        input,
        output,
        children: Vec::new(),
    })
}

/// A call's token count under the first of `keys` present (at least 1).
fn tokens(attrs: &Map<String, Value>, keys: &[&str], f: &str, at: &At) -> Result<u32, FileError> {
    let (key, v) = keys
        .iter()
        .find_map(|k| attrs.get(*k).map(|v| (*k, v)))
        .ok_or_else(|| at.err(&format!("{f}.attributes.{}", keys[0]), "missing"))?;
    let n = v
        .as_u64()
        .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        .ok_or_else(|| {
            at.err(
                &format!("{f}.attributes.{key}"),
                format!("expected a whole number, found {}", describe(v)),
            )
        })?;
    Ok(u32::try_from(n).unwrap_or(u32::MAX).max(1))
}

/// What each call (span indices in start order) waits for, as indices into
/// `calls`, the redundant dropped.
fn waits(spans: &[Span], calls: &[usize], at: &At) -> Result<Vec<Vec<u32>>, FileError> {
    let mut g = Graph {
        spans,
        deps: HashMap::new(),
        visiting: HashSet::new(),
    };
    let order: HashMap<usize, u32> = calls
        .iter()
        .enumerate()
        .map(|(k, &s)| (s, k as u32))
        .collect();
    let mut ancestors: Vec<HashSet<u32>> = Vec::with_capacity(calls.len());
    let mut parents: Vec<Vec<u32>> = Vec::with_capacity(calls.len());
    for &c in calls {
        let raw = g
            .deps(c)
            .map_err(|_| at.err("spans", "the spans' times and parents form a cycle"))?;
        let mut ps: Vec<u32> = raw.iter().map(|d| order[d]).collect();
        ps.sort_unstable();
        ps.dedup();
        let kept: Vec<u32> = ps
            .iter()
            .copied()
            .filter(|&p| {
                !ps.iter()
                    .any(|&q| q != p && ancestors[q as usize].contains(&p))
            })
            .collect();
        let mut anc = HashSet::new();
        for &p in &kept {
            anc.insert(p);
            anc.extend(ancestors[p as usize].iter().copied());
        }
        ancestors.push(anc);
        parents.push(kept);
    }
    if let Some(k) = parents.iter().skip(1).position(Vec::is_empty) {
        return Err(at.err(
            "spans",
            format!(
                "chat span {} waits for nothing, like the first: a trajectory has one first call",
                calls[k + 1]
            ),
        ));
    }
    Ok(parents)
}

/// The calls as a trajectory replays them, and how many agents made them:
/// each call's agent (the nearest agent span above it; the first met is
/// the main one), its recorded start and gap, and block ids that repeat
/// its agent's previous call for the whole blocks both prompts hold.
fn replayed(spans: &[Span], calls: &[usize], parents: &[Vec<u32>]) -> (Vec<Call>, usize) {
    let mut agent_of: HashMap<Option<usize>, u32> = HashMap::new();
    let t0 = spans[calls[0]].start;
    let mut history: HashMap<u32, (u32, Vec<u64>)> = HashMap::new();
    let mut next_id = 0u64;
    let mut out = Vec::with_capacity(calls.len());
    for (k, &c) in calls.iter().enumerate() {
        let s = &spans[c];
        let (agent_span, depth) = nearest_agent(spans, c);
        let n = agent_of.len() as u32;
        let agent = *agent_of.entry(agent_span).or_insert(n);
        let parent_end = parents[k]
            .iter()
            .map(|&p| spans[calls[p as usize]].end)
            .max();
        let gap_s = parent_end.map_or(0.0, |e| (s.start - e) as f64 / 1e9);
        let (prev_in, prev_ids) = history.remove(&agent).unwrap_or((0, Vec::new()));
        let shared = (prev_in.min(s.input) / BLOCK_TOKENS) as usize;
        let mut hash_ids: Vec<u64> = prev_ids.into_iter().take(shared).collect();
        while (hash_ids.len() as u32) < s.input.div_ceil(BLOCK_TOKENS) {
            hash_ids.push(next_id);
            next_id += 1;
        }
        history.insert(agent, (s.input, hash_ids.clone()));
        out.push(Call {
            agent,
            depth,
            parents: parents[k].clone(),
            t_s: (s.start - t0) as f64 / 1e9,
            gap_s,
            gap_known: true,
            input_tokens: s.input,
            output_tokens: s.output,
            hash_ids,
        });
    }
    (out, agent_of.len())
}

/// The agent span nearest above span `i` (None: the trace's root) and how
/// many agent spans lie above it, less the main one.
fn nearest_agent(spans: &[Span], i: usize) -> (Option<usize>, u32) {
    let mut nearest = None;
    let mut agents = 0u32;
    let mut p = spans[i].parent;
    while let Some(x) = p {
        if spans[x].kind == Kind::Agent {
            nearest.get_or_insert(x);
            agents += 1;
        }
        p = spans[x].parent;
    }
    (nearest, agents.saturating_sub(1))
}

/// What each span waits for, worked out on demand.
struct Graph<'a> {
    spans: &'a [Span],
    deps: HashMap<usize, Vec<usize>>,
    visiting: HashSet<usize>,
}

/// The spans' times and parents form a cycle.
struct Cycle;

impl Graph<'_> {
    /// The calls span `i` waits for (before the redundant are dropped).
    fn deps(&mut self, i: usize) -> Result<Vec<usize>, Cycle> {
        if let Some(d) = self.deps.get(&i) {
            return Ok(d.clone());
        }
        if !self.visiting.insert(i) {
            return Err(Cycle);
        }
        let s = &self.spans[i];
        let siblings: Vec<usize> = match s.parent {
            Some(p) => self.spans[p].children.clone(),
            None => (0..self.spans.len())
                .filter(|&j| self.spans[j].parent.is_none())
                .collect(),
        };
        let mut d = Vec::new();
        for j in siblings {
            let o = &self.spans[j];
            let before = j != i && o.end <= s.start && (o.start < s.start || j < i);
            if before {
                d.extend(self.ends(j)?);
            }
        }
        if d.is_empty() {
            if let Some(p) = s.parent {
                d = self.deps(p)?;
            }
        }
        d.sort_unstable();
        d.dedup();
        self.visiting.remove(&i);
        self.deps.insert(i, d.clone());
        Ok(d)
    }

    /// The calls that end span `i`: itself for a call; else its subtree's
    /// calls that no other call there waits for; else (no call in it) what
    /// it waited for.
    fn ends(&mut self, i: usize) -> Result<Vec<usize>, Cycle> {
        if self.spans[i].kind == Kind::Call {
            return Ok(vec![i]);
        }
        let mut inside = Vec::new();
        let mut stack = self.spans[i].children.clone();
        while let Some(x) = stack.pop() {
            if self.spans[x].kind == Kind::Call {
                inside.push(x);
            }
            stack.extend(self.spans[x].children.iter().copied());
        }
        if inside.is_empty() {
            return self.deps(i);
        }
        let mut waited: HashSet<usize> = HashSet::new();
        for &c in &inside {
            waited.extend(self.deps(c)?);
        }
        Ok(inside.into_iter().filter(|c| !waited.contains(c)).collect())
    }
}

/// A span's attributes as one map: an object as it is, or OTLP's list of
/// `{key, value: {stringValue | intValue | doubleValue | boolValue}}`.
fn attributes(o: &Map<String, Value>) -> Map<String, Value> {
    match o.get("attributes") {
        Some(Value::Object(m)) => m.clone(),
        Some(Value::Array(list)) => list
            .iter()
            .filter_map(|kv| {
                let key = kv.get("key")?.as_str()?.to_string();
                let v = kv.get("value")?;
                let v = match v.as_object() {
                    Some(m) => m
                        .get("stringValue")
                        .or_else(|| m.get("intValue"))
                        .or_else(|| m.get("doubleValue"))
                        .or_else(|| m.get("boolValue"))
                        .cloned()?,
                    None => v.clone(),
                };
                Some((key, v))
            })
            .collect(),
        _ => Map::new(),
    }
}

/// The first of `keys` holding a string (or a number, as text).
fn text(o: &Map<String, Value>, keys: &[&str]) -> Option<String> {
    keys.iter().find_map(|k| match o.get(*k)? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    })
}

/// A span time in ns since the epoch: ISO 8601 text, or a number (or
/// numeric text, as OTLP writes nanoseconds) in s, ms, µs or ns as its
/// size says.
fn time(o: &Map<String, Value>, keys: &[&str], f: &str, at: &At) -> Result<i128, FileError> {
    let (key, v) = keys
        .iter()
        .find_map(|k| o.get(*k).map(|v| (*k, v)))
        .ok_or_else(|| at.err(&format!("{f}.{}", keys[0]), "missing"))?;
    let bad = || {
        at.err(
            &format!("{f}.{key}"),
            format!(
                "expected an ISO 8601 time or an epoch number, found {}",
                describe(v)
            ),
        )
    };
    let scale = |x: f64| -> f64 {
        if x >= 1e17 {
            1.0
        } else if x >= 1e14 {
            1e3
        } else if x >= 1e11 {
            1e6
        } else {
            1e9
        }
    };
    let whole = match v {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().parse::<u64>().ok(),
        _ => None,
    };
    if let Some(n) = whole {
        // Exact: nanoseconds since 1970 do not fit an f64's 53 bits.
        return Ok(i128::from(n) * scale(n as f64) as i128);
    }
    let number = match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => match s.trim().parse::<f64>() {
            Ok(x) => Some(x),
            Err(_) => return parse_datetime(s).ok_or_else(bad),
        },
        _ => None,
    };
    let x = number
        .filter(|x| x.is_finite() && *x >= 0.0)
        .ok_or_else(bad)?;
    Ok((x * scale(x)) as i128)
}
