use super::*;

fn write(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("goodput-agent-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

const PARENT: &str = r#"{"id": "p", "block_size": 64, "requests": [
  {"t": 0, "type": "s", "in": 100, "out": 10, "api_time": 0.5, "hash_ids": [1]},
  {"t": 3.5, "type": "subagent", "status": "completed", "requests": [
     {"t": 0, "in": 50, "out": 5, "api_time": 0.3},
     {"t": 0.8, "in": 60, "out": 5, "api_time": 0.3}]},
  {"t": 3.5, "type": "subagent", "status": "completed", "requests": [
     {"t": 0, "in": 50, "out": 5, "api_time": 0.4}]},
  {"t": 6.0, "in": 200, "out": 10, "api_time": 0.5},
  {"t": 14.5, "in": 300, "out": 0}]}"#;

/// List order is the topology: the subagents spawn from the call before
/// them, run in parallel, and the call after them joins both; each gap is
/// the recorded start less the latest parent's recorded end.
#[test]
fn list_order_gives_parents_and_gaps() {
    let t = AgentTraces::load(&write("p.json", PARENT)).unwrap();
    let calls = &t.trajectories[0].calls;
    let parents: Vec<&[u32]> = calls.iter().map(|c| c.parents.as_slice()).collect();
    assert_eq!(parents, [&[][..], &[0], &[1], &[0], &[2, 3], &[4]]);
    let agents: Vec<(u32, u32)> = calls.iter().map(|c| (c.agent, c.depth)).collect();
    assert_eq!(agents, [(0, 0), (1, 1), (1, 1), (2, 1), (0, 0), (0, 0)]);
    let gaps: Vec<f64> = calls
        .iter()
        .map(|c| (c.gap_s * 1e6).round() / 1e6)
        .collect();
    assert_eq!(gaps, [0.0, 3.0, 0.5, 3.0, 1.4, 8.0]);
    let starts: Vec<f64> = calls.iter().map(|c| (c.t_s * 1e6).round() / 1e6).collect();
    assert_eq!(starts, [0.0, 3.5, 4.3, 3.5, 6.0, 14.5]);
    // An answer of 0 tokens is sent as 1.
    assert_eq!(calls[5].output_tokens, 1);
    assert_eq!(t.stats.nested_times.relative, 2);
    assert_eq!(t.stats.subagents, 2);
    assert_eq!(t.stats.calls, 6);
}

/// Nested times at or after their spawn count from the trace's start; an
/// asynchronously launched subagent is not waited for; a call without
/// `api_time` before it takes its `think_time`, else no gap (counted).
#[test]
fn absolute_times_async_subagents_and_missing_gaps() {
    let text = r#"{"id": "a", "requests": [
      {"t": 10, "in": 10, "out": 5},
      {"t": 12, "type": "subagent", "status": "async_launched", "requests": [
         {"t": 12.5, "in": 10, "out": 5}]},
      {"t": 13, "in": 10, "out": 5, "think_time": 2.5},
      {"t": 20, "in": 10, "out": 5}]}"#;
    let t = AgentTraces::load(&write("a.json", text)).unwrap();
    let calls = &t.trajectories[0].calls;
    assert_eq!(calls[1].parents, [0]);
    assert!((calls[1].t_s - 2.5).abs() < 1e-9, "{}", calls[1].t_s);
    // Not joined: the next call waits for the spawn only.
    assert_eq!(calls[2].parents, [0]);
    assert_eq!(calls[2].gap_s, 2.5);
    assert!(!calls[3].gap_known);
    assert_eq!(t.stats.nested_times.absolute, 1);
    assert_eq!(t.stats.async_subagents, 1);
    assert_eq!(t.stats.calls_without_gap, 2);
    assert_eq!(t.stats.notes().len(), 3);
}

/// JSON lines hold a trace a line; a directory holds a trace a file.
#[test]
fn json_lines_and_directories() {
    let one = r#"{"id": "x", "requests": [{"t": 0, "in": 5, "out": 5}]}"#;
    let lines = write("t.jsonl", &format!("{one}\n\n{one}\n"));
    assert!(AgentTraces::detect(&lines, None));
    assert_eq!(AgentTraces::load(&lines).unwrap().trajectories.len(), 2);
    let dir = lines.parent().unwrap().join("dir");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("b.json"), one).unwrap();
    std::fs::write(dir.join("a.json"), one.replace("\"x\"", "\"first\"")).unwrap();
    let t = AgentTraces::load(&dir).unwrap();
    assert_eq!(t.trajectories[0].id, "first");
    assert_eq!(t.trajectories.len(), 2);
}

/// What cannot be replayed stops before any request, saying where.
#[test]
fn malformed_traces_name_the_place() {
    let cases = [
        (
            r#"{"id": "s", "requests": [
                {"t": 0, "type": "subagent", "requests": [{"t": 0, "in": 1, "out": 1}]},
                {"t": 0, "type": "subagent", "requests": [{"t": 0, "in": 1, "out": 1}]}]}"#,
            "a trace must open with one call",
        ),
        (
            r#"{"id": "h", "requests": [{"t": 0, "in": 1, "out": 1, "hash_ids": [3]}]}"#,
            "field 'trace \"h\" block_size'",
        ),
        (
            r#"{"id": "k", "requests": [{"t": -1, "in": 1, "out": 1}]}"#,
            "field 'trace \"k\" requests[0].t'",
        ),
        (
            r#"{"id": "y", "requests": [{"t": 0, "type": "x", "in": 1, "out": 1}]}"#,
            "requests[0].type",
        ),
        (r#"{"id": "e", "requests": []}"#, "the trace has no calls"),
        (r#"{"id": "m"}"#, "requests': missing"),
    ];
    for (i, (text, want)) in cases.iter().enumerate() {
        let err = AgentTraces::load(&write(&format!("bad{i}.json"), text))
            .unwrap_err()
            .to_string();
        assert!(err.contains(want), "{err} (wanted {want})");
        assert!(err.contains(&format!("bad{i}.json")), "{err}");
    }
}

/// Gaps are capped before the speed divides them; recorded times are not.
#[test]
fn the_cap_and_the_speed() {
    let call = Call {
        agent: 0,
        depth: 0,
        parents: vec![0],
        t_s: 600.0,
        gap_s: 300.0,
        gap_known: true,
        input_tokens: 1,
        output_tokens: 1,
        hash_ids: Vec::new(),
    };
    let r = Replay {
        speed: 2.0,
        ..Replay::default()
    };
    assert_eq!(r.gap(&call), Duration::from_secs(30));
    assert_eq!(r.at(&call), Duration::from_secs(300));
}

/// OpenTelemetry spans: a tool between two calls is the gap between them;
/// times as epoch milliseconds read as such; a parent outside the dump
/// makes a root; an agent's next call repeats its history's whole blocks.
#[test]
fn otel_spans_give_waits_gaps_and_growing_contexts() {
    let text = r#"{"trace_id": "o", "spans": [
      {"span_id": "x", "parent_span_id": "upstream", "name": "invoke_agent main",
       "start_time": 1764496800000, "end_time": 1764496805000},
      {"span_id": "c1", "parent_span_id": "x", "name": "chat m", "start_time": 1764496800000,
       "end_time": 1764496800250, "attributes": {"gen_ai.operation.name": "chat",
       "gen_ai.usage.input_tokens": 130, "gen_ai.usage.output_tokens": 7}},
      {"span_id": "t", "parent_span_id": "x", "name": "execute_tool grep",
       "start_time": 1764496800250, "end_time": 1764496801250},
      {"span_id": "c2", "parent_span_id": "x", "name": "chat m", "start_time": 1764496801500,
       "end_time": 1764496802000, "attributes": [
         {"key": "gen_ai.usage.prompt_tokens", "value": {"intValue": "300"}},
         {"key": "gen_ai.usage.completion_tokens", "value": {"intValue": 9}}]}]}"#;
    let t = AgentTraces::load(&write("o.json", text)).unwrap();
    assert_eq!(t.stats.format, "otel");
    let c = &t.trajectories[0].calls;
    assert_eq!(c.len(), 2);
    assert_eq!(c[1].parents, [0]);
    assert!((c[1].gap_s - 1.25).abs() < 1e-9, "{}", c[1].gap_s);
    assert!((c[1].t_s - 1.5).abs() < 1e-9, "{}", c[1].t_s);
    assert_eq!((c[1].input_tokens, c[1].output_tokens), (300, 9));
    // 130 tokens: 3 blocks of 64, 2 of them whole; the next call repeats those.
    assert_eq!(c[0].hash_ids.len(), 3);
    assert_eq!(c[1].hash_ids.len(), 5);
    assert_eq!(c[1].hash_ids[..2], c[0].hash_ids[..2]);
    assert_ne!(c[1].hash_ids[2], c[0].hash_ids[2]);
    let missing = text.replace("gen_ai.usage.input_tokens", "tokens_in");
    let err = AgentTraces::load(&write("o2.json", &missing))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("spans[1].attributes.gen_ai.usage.input_tokens': missing"),
        "{err}"
    );
}
