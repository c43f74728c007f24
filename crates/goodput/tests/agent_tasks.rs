//! Agents' tasks judged whole, against the built-in simulator: a task's
//! figures are what its calls' records say, a task under way when the
//! window closes runs to its end, a `task:` SLO term decides the exit
//! code, and a goodput search with a task term answers in tasks/s, with
//! the task figures in the console, the JSON, the CSV and the HTML.

mod common;

use std::collections::HashMap;

use common::*;

/// Four short tasks: a call, two subagents in parallel (one of two calls),
/// a join and a last call: six calls, two subagents each.
fn short_traces() -> String {
    let one = |k: usize| {
        format!(
            r#"{{"id": "t{k}", "block_size": 64, "requests": [
  {{"t": 0, "in": 256, "out": 16, "api_time": 0.15, "hash_ids": [1, 2, 3, 4]}},
  {{"t": 0.2, "type": "subagent", "agent_id": "a", "requests": [
     {{"t": 0, "in": 128, "out": 16, "api_time": 0.15, "hash_ids": [10, 11]}},
     {{"t": 0.2, "in": 256, "out": 16, "api_time": 0.15, "hash_ids": [10, 11, 12, 13]}}]}},
  {{"t": 0.2, "type": "subagent", "agent_id": "b", "requests": [
     {{"t": 0, "in": 128, "out": 16, "api_time": 0.15, "hash_ids": [20, 21]}}]}},
  {{"t": 0.6, "in": 512, "out": 16, "api_time": 0.15, "hash_ids": [1, 2, 3, 4, 5, 6, 7, 8]}},
  {{"t": 0.8, "in": 640, "out": 32, "hash_ids": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]}}]}}"#
        )
    };
    format!("[{}]", (0..4).map(one).collect::<Vec<_>>().join(",\n"))
}

fn p_ms(d: &serde_json::Value, p: &str) -> f64 {
    d[format!("{p}_ms")].as_f64().unwrap()
}

/// numpy's linear percentile of sorted values.
fn percentile(sorted: &[f64], p: f64) -> f64 {
    let pos = p / 100.0 * (sorted.len() - 1) as f64;
    let (i, f) = (pos.floor() as usize, pos.fract());
    let next = sorted[(i + 1).min(sorted.len() - 1)];
    sorted[i] + f * (next - sorted[i])
}

/// A run's task figures are its calls' records grouped by trajectory: the
/// duration from the first call's scheduled send to the last call's end,
/// six calls and two subagents a task, the cache the server reported. A
/// window of 2 s cuts no task: those under way run to their end, with
/// calls sent after it. The task term decides the exit code.
#[test]
fn task_figures_are_their_calls_and_tasks_run_to_their_end() {
    let dir = tmp("agent-tasks-run");
    std::fs::create_dir_all(&dir).unwrap();
    let traces = dir.join("short.json");
    std::fs::write(&traces, short_traces()).unwrap();
    let (records, out) = (dir.join("records.jsonl"), dir.join("run.json"));
    let html = dir.join("run.html");
    let _ = std::fs::remove_file(&records);
    let (code, stdout, stderr) = goodput(&[
        "run",
        "--html",
        html.to_str().unwrap(),
        "--trace",
        traces.to_str().unwrap(),
        "--concurrency",
        "2",
        "--duration",
        "2s",
        "--slo",
        "task:p90:10s",
        "--records",
        records.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--no-progress",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let doc = read_json(&out);
    validate_run_document(&doc);
    let t = &doc["tasks"];
    let recs = read_records(&records);
    let mut by_task: HashMap<u64, Vec<&serde_json::Value>> = HashMap::new();
    for r in &recs {
        by_task
            .entry(r["session_id"].as_u64().unwrap())
            .or_default()
            .push(r);
    }
    assert_eq!(t["tasks"].as_u64().unwrap(), by_task.len() as u64, "{t}");
    assert_eq!(t["cut"], 0, "the window cut a task: {t}");
    assert_eq!(t["failed"], 0, "{t}");
    assert_eq!(t["completed"], t["tasks"], "{t}");
    assert!(by_task.len() >= 4, "{}", by_task.len());
    // Durations from the records: last end less first scheduled send.
    let mut durations: Vec<f64> = by_task
        .values()
        .map(|calls| {
            assert_eq!(calls.len(), 6, "{calls:?}");
            let start = calls
                .iter()
                .map(|c| c["sched_s"].as_f64().unwrap())
                .fold(f64::INFINITY, f64::min);
            let end = calls
                .iter()
                .map(|c| c["done_s"].as_f64().unwrap())
                .fold(0.0, f64::max);
            (end - start) * 1e3
        })
        .collect();
    durations.sort_by(f64::total_cmp);
    let d = &t["duration"];
    for p in [50.0, 90.0] {
        let want = percentile(&durations, p);
        let got = p_ms(d, &format!("p{p}"));
        assert!(
            (got - want).abs() < 0.01,
            "p{p}: {got} vs {want} from the records"
        );
    }
    assert_eq!(t["calls_mean"], 6.0, "{t}");
    assert_eq!(t["subagents_mean"], 2.0, "{t}");
    let (cached, prompt) = recs.iter().fold((0.0, 0.0), |(c, p), r| {
        (
            c + r["cached_tokens"].as_f64().unwrap(),
            p + r["server_prompt_tokens"].as_f64().unwrap(),
        )
    });
    let share = t["cached_share"].as_f64().unwrap();
    assert!(
        (share - cached / prompt).abs() < 1e-9,
        "{share} vs {cached}/{prompt}"
    );
    // Depth 0 is the main agent's 3 calls a task, depth 1 its subagents' 3.
    let depths = t["by_depth"].as_array().unwrap();
    assert_eq!(depths.len(), 2, "{t}");
    assert_eq!(
        depths[0]["calls"].as_u64().unwrap(),
        3 * by_task.len() as u64
    );
    assert_eq!(
        depths[1]["calls"].as_u64().unwrap(),
        3 * by_task.len() as u64
    );
    // Tasks under way when the 2 s window closed went on: every task is
    // whole (six calls each, above), those whose calls straddle the
    // window's end (most runs have one or two) included.
    let first_send = recs
        .iter()
        .map(|r| r["send_s"].as_f64().unwrap())
        .fold(f64::INFINITY, f64::min);
    let sends = |calls: &Vec<&serde_json::Value>| {
        calls
            .iter()
            .map(|c| c["send_s"].as_f64().unwrap())
            .collect::<Vec<_>>()
    };
    for calls in by_task.values() {
        let s = sends(calls);
        let first = s.iter().copied().fold(f64::INFINITY, f64::min);
        assert!(
            first < first_send + 2.0 + 0.05,
            "a task started after the window: {s:?}"
        );
    }
    // The term judged the same durations.
    let term = &doc["slo"]["task_terms"][0];
    assert_eq!(term["estimate"]["value"].as_f64(), d["p90_ms"].as_f64());
    assert!(term["passes"].as_bool().unwrap(), "{term}");
    for want in [
        "Tasks (agent trajectories)",
        "Task throughput (tasks/s):",
        "P90 task duration (s):",
        "p90 task duration (s) <= 10s:",
        "Calls of subagents",
    ] {
        assert!(stdout.contains(want), "{want} not in:\n{stdout}");
    }
    assert!(!stdout.contains("Turn 1:"), "{stdout}");
    // The report draws one task: its six calls as bars, the waits dashed.
    let timeline = t["timeline"].as_array().unwrap();
    assert_eq!(timeline.len(), 6, "{t}");
    for c in timeline {
        let parents_done = c["parents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                timeline[p.as_u64().unwrap() as usize]["done_ms"]
                    .as_f64()
                    .unwrap()
            })
            .fold(0.0, f64::max);
        assert!(c["send_ms"].as_f64().unwrap() >= parents_done, "{c}");
    }
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("data-timeline=\"task\" data-calls=\"6\""),
        "no timeline"
    );
    assert_eq!(page.matches("<rect class=\"call\"").count(), 6);
    assert!(page.contains("data-section=\"tasks\""));
    // A term the tasks miss exits 1, naming it.
    let (code, stdout, _) = goodput(&[
        "run",
        "--trace",
        traces.to_str().unwrap(),
        "--concurrency",
        "2",
        "--duration",
        "1s",
        "--slo",
        "task:p90:100ms",
        "--no-progress",
    ]);
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("p90 task duration"), "{stdout}");
    // A sweep of trajectories needs loads it can give in tasks.
    let (code, _, stderr) = goodput(&["sweep", "--trace", traces.to_str().unwrap()]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--search goodput"), "{stderr}");
}

/// A goodput search held to `task:p90<=1.5s` offers tasks a second and
/// answers in them: each open point completed about the tasks it offered
/// (and six times as many calls), points that passed held the term and
/// points that failed missed it or saturated, and the task figures are in
/// the console, the JSON, the CSV and the HTML.
#[test]
fn a_search_with_a_task_slo_answers_in_tasks_per_second() {
    let dir = tmp("agent-tasks-search");
    std::fs::create_dir_all(&dir).unwrap();
    let traces = dir.join("short.json");
    std::fs::write(&traces, short_traces()).unwrap();
    let (out, csv, html) = (dir.join("s.json"), dir.join("s.csv"), dir.join("s.html"));
    let (code, stdout, stderr) = goodput(&[
        "sweep",
        "--trace",
        traces.to_str().unwrap(),
        "--search",
        "goodput",
        "--slo",
        "task:p90:1500ms",
        "--search-time",
        "60s",
        "--measure-time",
        "15s",
        "--point-time",
        "5s",
        "--out",
        out.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
        "--no-progress",
    ]);
    assert_eq!(code, 0, "{stderr}\n{stdout}");
    let doc = read_json(&out);
    let g = &doc["goodput"];
    assert_eq!(g["unit"], "tasks/s", "{g}");
    assert!(g["bracket"][0].as_f64().unwrap() > 0.0, "{g}");
    let headline = stdout
        .lines()
        .find(|l| l.starts_with("goodput: "))
        .unwrap_or_default();
    // Settled or not (60 s may not settle it), the line is in tasks/s.
    assert!(headline.contains("tasks/s"), "{stdout}");
    assert!(!headline.contains("req/s"), "{headline}");
    for p in doc["points"].as_array().unwrap() {
        let r = &p["result"];
        let t = &r["tasks"];
        let done = t["completed"].as_u64().unwrap();
        assert!(done > 0, "{t}");
        assert_eq!(t["cut"], 0, "{t}");
        if let Some(rate) = r["config"]["load"]["rate"].as_f64() {
            // Tasks/s, not req/s: completed tasks follow the offered rate
            // (within a short point's Poisson sample, and the tail of its
            // last tasks lengthens it), and calls run at six a task.
            let tasks_s = t["throughput"].as_f64().unwrap();
            let calls_s = r["request_throughput"].as_f64().unwrap();
            if done >= 20 && !r["saturation"]["saturated"].as_bool().unwrap() {
                assert!(
                    tasks_s > 0.5 * rate && tasks_s < 1.5 * rate,
                    "{tasks_s} tasks/s at {rate}"
                );
            }
            assert!(
                (calls_s / tasks_s - 6.0).abs() < 0.5,
                "{calls_s} / {tasks_s}"
            );
        }
        let term = &r["slo"]["task_terms"][0];
        let p90 = term["estimate"]["value"].as_f64().unwrap();
        match p["meets"].as_bool() {
            Some(true) => assert!(p90 <= 1500.0, "{term}"),
            Some(false) => assert!(
                p90 > 1500.0 || r["saturation"]["saturated"].as_bool().unwrap(),
                "{term}"
            ),
            None => {}
        }
    }
    assert!(stdout.contains("tasks, "), "{stdout}");
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut rows = csv::Reader::from_reader(text.as_bytes());
    let headers = rows.headers().unwrap().clone();
    let col = |name: &str| headers.iter().position(|h| h == name).expect(name);
    let (done, rate, p90) = (
        col("tasks_completed"),
        col("task_throughput_tasks_per_s"),
        col("task_duration_p90_s"),
    );
    let mut n = 0;
    for row in rows.records() {
        let row = row.unwrap();
        assert!(row[done].parse::<u64>().unwrap() > 0, "{row:?}");
        assert!(row[rate].parse::<f64>().unwrap() > 0.0, "{row:?}");
        assert!(row[p90].parse::<f64>().unwrap() > 0.1, "{row:?}");
        n += 1;
    }
    assert_eq!(n, doc["points"].as_array().unwrap().len());
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("data-section=\"tasks\""), "no tasks table");
    assert!(page.contains(" tasks/s</b>"), "no goodput in tasks/s");
}
