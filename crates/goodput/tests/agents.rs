//! Agent trajectories replayed against a scripted server whose every call
//! takes a known time: each call is sent when the stated semantics say
//! (within 20 ms), parallel subagents overlap, and nothing is sent before
//! the calls it waits for have completed, in both timing modes.

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::*;
use serde_json::Value;

/// Two Weka traces: a parent that spawns two parallel subagents after a
/// 3 s tool wait and joins them, then waits 8 s for its user; and a linear
/// trace of three calls. Subagent times count from their spawn.
const TRACES: &str = r#"[
 {"id": "parent", "block_size": 100, "hash_id_scope": "local", "requests": [
   {"t": 0, "type": "s", "in": 200, "out": 10, "api_time": 0.5, "hash_ids": [1, 2]},
   {"t": 3.5, "type": "subagent", "agent_id": "a", "status": "completed", "requests": [
      {"t": 0, "type": "s", "in": 100, "out": 10, "api_time": 0.3, "hash_ids": [10]},
      {"t": 0.8, "type": "s", "in": 200, "out": 10, "api_time": 0.3, "hash_ids": [10, 11]}]},
   {"t": 3.5, "type": "subagent", "agent_id": "b", "status": "completed", "requests": [
      {"t": 0, "type": "s", "in": 100, "out": 10, "api_time": 0.4, "hash_ids": [20]}]},
   {"t": 6.0, "type": "s", "in": 400, "out": 10, "api_time": 0.5, "hash_ids": [1, 2, 3, 4]},
   {"t": 14.5, "type": "s", "in": 500, "out": 10, "hash_ids": [1, 2, 3, 4, 5]}]},
 {"id": "linear", "block_size": 100, "requests": [
   {"t": 0, "in": 100, "out": 10, "api_time": 0.4, "hash_ids": [1]},
   {"t": 1.0, "in": 200, "out": 10, "api_time": 0.4, "hash_ids": [1, 2]},
   {"t": 2.5, "in": 300, "out": 10, "hash_ids": [1, 2, 3]}]}
]"#;

/// Each call of the two traces, by (trajectory, call index) in list order:
/// its parents, its recorded start from the trajectory's start, and its
/// recorded gap after its last parent ended.
fn expected_calls() -> HashMap<(u64, u64), (Vec<u64>, f64, f64)> {
    HashMap::from([
        ((0, 0), (vec![], 0.0, 0.0)),
        // The subagents: 3 s after the first call's recorded end (0.5).
        ((0, 1), (vec![0], 3.5, 3.0)),
        ((0, 2), (vec![1], 4.3, 0.5)),
        ((0, 3), (vec![0], 3.5, 3.0)),
        // The join: after both subagents (ends 4.6 and 3.9).
        ((0, 4), (vec![2, 3], 6.0, 1.4)),
        // The user's 8 s.
        ((0, 5), (vec![4], 14.5, 8.0)),
        ((1, 0), (vec![], 0.0, 0.0)),
        ((1, 1), (vec![0], 1.0, 0.6)),
        ((1, 2), (vec![1], 2.5, 1.1)),
    ])
}

struct Call {
    request_id: u64,
    sched_s: f64,
    send_s: f64,
    done_s: f64,
}

/// The same calls as an OpenTelemetry span dump orders them (by start:
/// the second subagent's call before the first subagent's second).
fn expected_otel_calls() -> HashMap<(u64, u64), (Vec<u64>, f64, f64)> {
    let mut m = expected_calls();
    let (b, a1) = (m[&(0, 3)].clone(), m[&(0, 2)].clone());
    m.insert((0, 2), b);
    m.insert((0, 3), a1);
    m.insert((0, 4), (vec![2, 3], 6.0, 1.4));
    m
}

/// The example as an OpenTelemetry GenAI span dump, a trace a line: the
/// parent's agent span holds its calls, a 3 s tool, and two subagents'
/// agent spans (ISO times); the linear trace is three root chat spans
/// (epoch nanoseconds as text, one with OTLP's attribute list and the
/// older token names).
fn otel_dump() -> String {
    use serde_json::json;
    let iso = |s: f64| {
        let ms = (s * 1000.0).round() as u64;
        format!("2026-11-30T10:00:{:02}.{:03}Z", ms / 1000, ms % 1000)
    };
    let span =
        |id: &str, parent: Option<&str>, op: &str, a: f64, b: f64, tokens: Option<(u32, u32)>| {
            let mut attrs = json!({"gen_ai.operation.name": op});
            if let Some((i, o)) = tokens {
                attrs["gen_ai.usage.input_tokens"] = json!(i);
                attrs["gen_ai.usage.output_tokens"] = json!(o);
            }
            let mut v = json!({"span_id": id, "name": format!("{op} x"), "start_time": iso(a),
            "end_time": iso(b), "attributes": attrs});
            if let Some(p) = parent {
                v["parent_span_id"] = json!(p);
            }
            v
        };
    let parent = json!({"trace_id": "parent", "spans": [
        span("r", None, "invoke_agent", 0.0, 14.6, None),
        span("c0", Some("r"), "chat", 0.0, 0.5, Some((200, 10))),
        span("t1", Some("r"), "execute_tool", 0.5, 3.5, None),
        span("A", Some("r"), "invoke_agent", 3.5, 4.6, None),
        span("a0", Some("A"), "chat", 3.5, 3.8, Some((100, 10))),
        span("a1", Some("A"), "chat", 4.3, 4.6, Some((200, 10))),
        span("B", Some("r"), "invoke_agent", 3.5, 3.9, None),
        span("b0", Some("B"), "chat", 3.5, 3.9, Some((100, 10))),
        span("c4", Some("r"), "chat", 6.0, 6.5, Some((400, 10))),
        span("c5", Some("r"), "chat", 14.5, 14.6, Some((500, 10))),
    ]});
    let base: u64 = 1_764_496_800_000_000_000;
    let at = |s: f64| (base + (s * 1e9) as u64).to_string();
    let linear = json!({"trace_id": "linear", "spans": [
        {"spanId": "l0", "name": "chat m", "startTimeUnixNano": at(0.0), "endTimeUnixNano": at(0.4),
         "attributes": {"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": 100,
                        "gen_ai.usage.output_tokens": 10}},
        {"spanId": "l1", "name": "chat m", "startTimeUnixNano": at(1.0), "endTimeUnixNano": at(1.4),
         "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                        {"key": "gen_ai.usage.prompt_tokens", "value": {"intValue": "200"}},
                        {"key": "gen_ai.usage.completion_tokens", "value": {"intValue": "10"}}]},
        {"spanId": "l2", "name": "chat m", "startTimeUnixNano": at(2.5), "endTimeUnixNano": at(2.6),
         "attributes": {"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": 300,
                        "gen_ai.usage.output_tokens": 10}}
    ]});
    format!("{parent}\n{linear}\n")
}

/// Replay `file_text` (written as `file_name`) in `timing` against a server
/// whose every call takes 150 ms; each call's record by (trajectory, call),
/// and the server.
async fn replay(
    timing: &str,
    file_name: &str,
    file_text: &str,
) -> (HashMap<(u64, u64), Call>, ScriptedServer) {
    let server = start(Script {
        ttft: Duration::from_millis(60),
        interval: Duration::from_millis(10),
        events: 10,
        ..Script::default()
    })
    .await;
    let dir = tmp(&format!("agents-{timing}-{file_name}"));
    std::fs::create_dir_all(&dir).unwrap();
    let traces = dir.join(file_name);
    std::fs::write(&traces, file_text).unwrap();
    let records = dir.join("records.jsonl");
    let _ = std::fs::remove_file(&records);
    let out = dir.join("run.json");
    let (code, _, stderr) = goodput_async(argv(&[
        "run",
        "--url",
        &server.url(),
        "--trace",
        traces.to_str().unwrap(),
        "--trace-timing",
        timing,
        "--concurrency",
        "2",
        "--records",
        records.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ]))
    .await;
    assert_eq!(code, 0, "{stderr}");
    // The document is the schema's; the two trajectories are its sessions.
    let doc = read_json(&out);
    validate_run_document(&doc);
    let sessions = &doc["sessions"];
    assert_eq!(sessions["sessions_completed"], 2, "{sessions}");
    let calls = read_records(&records)
        .iter()
        .map(|r: &Value| {
            let f = |k: &str| r[k].as_f64().unwrap_or_else(|| panic!("{k}: {r}"));
            let key = (
                r["session_id"].as_u64().unwrap(),
                r["turn"].as_u64().unwrap(),
            );
            assert!(r["agent"]["parents"].is_array(), "{r}");
            let call = Call {
                request_id: r["request_id"].as_u64().unwrap(),
                sched_s: f("sched_s"),
                send_s: f("send_s"),
                done_s: f("done_s"),
            };
            (key, call)
        })
        .collect::<HashMap<_, _>>();
    (calls, server)
}

/// What both modes hold to: every call sent, each within 20 ms of `due`,
/// none before its parents completed (the client's records and the
/// server's own log both say so), and the subagents overlapping.
fn check(
    timing: &str,
    calls: &HashMap<(u64, u64), Call>,
    server: &ScriptedServer,
    expected: &HashMap<(u64, u64), (Vec<u64>, f64, f64)>,
    due: impl Fn(&HashMap<(u64, u64), Call>, u64, &[u64], f64, f64) -> f64,
) {
    assert_eq!(
        calls.len(),
        expected.len(),
        "{timing}: every call sent once"
    );
    let log = server.by_id();
    for (&(traj, idx), (parents, t, gap)) in expected {
        let c = &calls[&(traj, idx)];
        let want = due(calls, traj, parents, *t, *gap);
        assert!(
            (c.send_s - want).abs() <= 0.020,
            "{timing}: trajectory {traj} call {idx} sent at {:.4} s, due at {want:.4} s",
            c.send_s
        );
        let received = log[&c.request_id].received;
        for p in parents {
            let parent = &calls[&(traj, *p)];
            assert!(
                c.sched_s >= parent.done_s,
                "{timing}: {traj}/{idx} due before its parent {p} completed"
            );
            let parent_last = *log[&parent.request_id].writes.last().unwrap();
            assert!(
                received > parent_last,
                "{timing}: the server got {traj}/{idx} before it had answered {p}"
            );
        }
    }
    // The two subagents' first calls (those that wait for the first call
    // alone) run at once.
    let firsts: Vec<&Call> = expected
        .iter()
        .filter(|((traj, _), (parents, _, _))| *traj == 0 && parents == &[0])
        .map(|(k, _)| &calls[k])
        .collect();
    let [a, b] = firsts[..] else {
        panic!("{timing}: two subagents expected")
    };
    assert!(
        a.send_s < b.done_s && b.send_s < a.done_s,
        "{timing}: subagents did not overlap"
    );
}

/// When a call is due in the default timing: its last parent's completion
/// plus its recorded gap.
fn after_gap(
    calls: &HashMap<(u64, u64), Call>,
    traj: u64,
    parents: &[u64],
    _: f64,
    gap: f64,
) -> f64 {
    let ready = parents
        .iter()
        .map(|p| calls[&(traj, *p)].done_s)
        .fold(calls[&(traj, 0)].sched_s, f64::max);
    ready + gap
}

/// Default timing: a call goes when its last parent completes, plus its
/// recorded gap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_goes_its_recorded_gap_after_its_parents_complete() {
    let (calls, server) = replay("gaps", "agents.json", TRACES).await;
    check("gaps", &calls, &server, &expected_calls(), after_gap);
}

/// The same workload as an OpenTelemetry span dump: the same dependencies
/// and gaps when read, and the same send times when replayed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_otel_span_dump_gives_the_same_dependencies_and_send_times() {
    use goodput_core::load::AgentTraces;
    let dir = tmp("agents-read");
    std::fs::create_dir_all(&dir).unwrap();
    let (weka, otel) = (dir.join("w.json"), dir.join("o.jsonl"));
    std::fs::write(&weka, TRACES).unwrap();
    std::fs::write(&otel, otel_dump()).unwrap();
    let (w, o) = (
        AgentTraces::load(&weka).unwrap(),
        AgentTraces::load(&otel).unwrap(),
    );
    assert_eq!(o.stats.format, "otel");
    // Each call by (agent, start in ms); its parents and gap by the same keys.
    let graph = |t: &goodput_core::load::AgentTraces| {
        t.trajectories
            .iter()
            .map(|tr| {
                let key = |i: u32| {
                    let c = &tr.calls[i as usize];
                    (c.agent, (c.t_s * 1000.0).round() as i64)
                };
                let mut v: Vec<_> = (0..tr.calls.len() as u32)
                    .map(|i| {
                        let c = &tr.calls[i as usize];
                        let mut ps: Vec<_> = c.parents.iter().map(|&p| key(p)).collect();
                        ps.sort_unstable();
                        (key(i), ps, (c.gap_s * 1000.0).round() as i64)
                    })
                    .collect();
                v.sort();
                (tr.id.clone(), v)
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(graph(&w), graph(&o));
    let (calls, server) = replay("gaps", "agents.jsonl", &otel_dump()).await;
    check(
        "otel gaps",
        &calls,
        &server,
        &expected_otel_calls(),
        after_gap,
    );
}

/// Recorded timing: a call goes at its recorded time from its trajectory's
/// start, but never before its parents complete.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_goes_at_its_recorded_time_but_not_before_its_parents() {
    let (calls, server) = replay("recorded", "agents.json", TRACES).await;
    check(
        "recorded",
        &calls,
        &server,
        &expected_calls(),
        |calls, traj, parents, t, _| {
            let start = calls[&(traj, 0)].sched_s;
            parents
                .iter()
                .map(|p| calls[&(traj, *p)].done_s)
                .fold(start + t, f64::max)
        },
    );
}

/// A malformed trace stops before any request, naming the file, the
/// trace, the request and the field.
#[test]
fn a_malformed_trace_names_its_trace_request_and_field() {
    let dir = tmp("agents-bad");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.json");
    std::fs::write(
        &path,
        r#"{"id": "t9", "block_size": 64, "requests": [
            {"t": 0, "in": 10, "out": 5},
            {"t": 1, "type": "subagent", "requests": [{"t": 0, "in": "ten", "out": 5}]}]}"#,
    )
    .unwrap();
    let (code, _, stderr) = goodput(&["run", "--trace", path.to_str().unwrap(), "--quiet"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("bad.json")
            && stderr.contains("trace \"t9\" requests[1].requests[0].in")
            && stderr.contains("\"ten\""),
        "{stderr}"
    );
}

/// Against the built-in simulator, later calls of a trajectory hit the
/// prefix cache for the share their hash blocks allow (the simulator caches
/// whole blocks of 16 tokens), earlier ones and a subagent's fresh context
/// not at all, and the run's shares agree.
#[test]
fn later_calls_hit_the_prefix_cache_their_blocks_allow() {
    let dir = tmp("agents-sim");
    std::fs::create_dir_all(&dir).unwrap();
    let traces = dir.join("agents.json");
    std::fs::write(&traces, TRACES).unwrap();
    let (records, out) = (dir.join("records.jsonl"), dir.join("run.json"));
    let _ = std::fs::remove_file(&records);
    let (code, _, stderr) = goodput(&[
        "run",
        "--trace",
        traces.to_str().unwrap(),
        "--trace-speed",
        "4",
        "--concurrency",
        "2",
        "--records",
        records.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ]);
    assert_eq!(code, 0, "{stderr}");
    // Tokens of each call's prompt its earlier calls sent: leading blocks
    // of 100 tokens whose ids were sent before, in the trace's namespace.
    let allowed: HashMap<(u64, u64), u64> = HashMap::from([
        ((0, 0), 0),
        ((0, 1), 0),
        ((0, 2), 100),
        ((0, 3), 0),
        ((0, 4), 200),
        ((0, 5), 400),
        ((1, 0), 0),
        ((1, 1), 100),
        ((1, 2), 200),
    ]);
    let recs = read_records(&records);
    assert_eq!(recs.len(), allowed.len());
    for r in &recs {
        let key = (
            r["session_id"].as_u64().unwrap(),
            r["turn"].as_u64().unwrap(),
        );
        let cached = r["cached_tokens"].as_u64().unwrap();
        let want = allowed[&key];
        assert!(
            cached <= want && cached + 16 >= want,
            "call {key:?}: {cached} cached of {want} allowed: {r}"
        );
    }
    let doc = read_json(&out);
    let m = &doc["workload"]["measured"];
    let (allowed_share, cached_share) = (
        m["cacheable_share"].as_f64().unwrap(),
        m["cached_share"].as_f64().unwrap(),
    );
    assert!(
        (allowed_share - 1000.0 / 2100.0).abs() < 1e-9,
        "{allowed_share}"
    );
    assert!(
        cached_share <= allowed_share && cached_share > 0.9 * allowed_share,
        "{cached_share} of {allowed_share}"
    );
}
