//! The collector's tests: whole runs of hand-made records, summarized.

use super::*;
use crate::request::record::{ErrorKey, ErrorKind, Event, RequestError};
use goodput_common::tokenizer::Tokenizer;

const MS: u64 = 1_000_000;

fn ok(send: u64, done: u64) -> RequestRecord {
    RequestRecord {
        t_sched: send,
        t_send: Some(send),
        t_done: done,
        output_text: " the".into(),
        events: vec![Event {
            at_ns: done,
            text_end: 4,
            usage_completion_tokens: None,
            reasoning: false,
        }],
        ..Default::default()
    }
}

fn never_sent(sched: u64, done: u64) -> RequestRecord {
    RequestRecord {
        t_sched: sched,
        t_send: None,
        t_done: done,
        error: Some(RequestError {
            kind: ErrorKind::Connect,
            message: "refused".into(),
            retry_after: None,
        }),
        ..Default::default()
    }
}

fn collect(origin: u64, recs: &[RequestRecord]) -> RunMetrics {
    let tok = Tokenizer::from_spec("none").unwrap();
    let mut c = Collector::default();
    c.measure_start(origin);
    for r in recs {
        c.add(r, &RequestMetrics::derive(r, &tok));
    }
    c.summarize(&[50.0, 99.0], None, 0, None)
}

/// A run that ended with most of its requests still running is
/// saturated even though no trend could be fitted, and an empty
/// steady-state window reads +0, not -0.
#[test]
fn a_backlog_at_the_end_is_saturation() {
    let mut recs = vec![ok(0, 3000 * MS)];
    for i in 0..10u64 {
        let mut r = ok(i * 100 * MS, 5000 * MS);
        r.events.clear();
        r.error = Some(RequestError {
            kind: ErrorKind::Incomplete,
            message: "drain timeout".into(),
            retry_after: None,
        });
        recs.push(r);
    }
    let m = collect(0, &recs);
    assert!(m.saturation.saturated, "{:?}", m.saturation);
    assert!(m.saturation.findings.iter().any(|f| f.contains("10 of 11")));
    if let Some(s) = &m.steady_state {
        assert!(s.request_throughput.is_sign_positive());
    }
}

/// A request whose first token came 50 ms after its send and its last at `done`.
fn streamed(send: u64, done: u64) -> RequestRecord {
    let mut r = ok(send, done);
    r.events.insert(
        0,
        Event {
            at_ns: send + 50 * MS,
            text_end: 4,
            usage_completion_tokens: None,
            reasoning: false,
        },
    );
    r.output_text = " the the".into();
    r.events[1].text_end = 8;
    r
}

/// A request that had its first token 50 ms after its send, still running at `end`.
fn incomplete(send: u64, end: u64) -> RequestRecord {
    let mut r = streamed(send, end);
    r.events.truncate(1);
    r.error = Some(RequestError {
        kind: ErrorKind::Incomplete,
        message: "the point ended".into(),
        retry_after: None,
    });
    r
}

/// Long answers at a rate the server sustains leave most of a short
/// point's requests running at its end (Little's law: rate × E2EL in
/// flight); that is no backlog. The same point whose unfinished requests
/// are many times what the rate and latency explain is saturated.
#[test]
fn requests_still_running_are_a_backlog_only_beyond_littles_law() {
    let open = |recs: &[RequestRecord]| {
        let tok = Tokenizer::from_spec("none").unwrap();
        let mut c = Collector::new(Vec::new(), true);
        c.measure_start(0);
        for r in recs {
            c.add(r, &RequestMetrics::derive(r, &tok));
        }
        c.summarize(&[50.0, 99.0], None, 0, None)
    };
    // 3 requests a second for 8 s, each taking 7 s: the first 3 finish,
    // the 21 sent after 1 s are still running at the end (8 s), as ~21
    // (3/s × 7 s) would be on a server keeping up.
    let sends: Vec<u64> = (0..24).map(|i| i * 1000 * MS / 3).collect();
    let steady: Vec<RequestRecord> = sends
        .iter()
        .map(|&t| {
            if t + 7000 * MS <= 8000 * MS {
                streamed(t, t + 7000 * MS)
            } else {
                incomplete(t, 8000 * MS)
            }
        })
        .collect();
    let m = open(&steady);
    assert!(!m.saturation.saturated, "{:?}", m.saturation);
    // The same sends with 1 s answers would finish all but ~3; 21
    // unfinished is a backlog.
    let behind: Vec<RequestRecord> = sends
        .iter()
        .enumerate()
        .map(|(i, &t)| {
            if i < 3 {
                streamed(t, t + 1000 * MS)
            } else {
                incomplete(t, 8000 * MS)
            }
        })
        .collect();
    let m = open(&behind);
    assert!(m.saturation.saturated, "{:?}", m.saturation);
    assert!(
        m.saturation.findings.iter().any(|f| f.contains("21 of 24")),
        "{:?}",
        m.saturation.findings
    );
}

/// A request that never got a connection has no send time: it is a
/// failure of its kind, in no lag statistic, and the duration starts at
/// the first real send (not at 0).
#[test]
fn never_sent_requests_are_failures_outside_lag_and_duration() {
    let m = collect(
        1000 * MS,
        &[
            never_sent(1000 * MS, 1001 * MS),
            ok(1500 * MS, 2500 * MS),
            ok(1600 * MS, 2600 * MS),
        ],
    );
    assert_eq!((m.completed, m.failed, m.sent), (2, 1, 2));
    assert_eq!(
        m.errors
            .by_kind
            .get(&ErrorKey::new(ErrorKind::Connect, None)),
        Some(&1)
    );
    assert!((m.duration_s - 1.1).abs() < 1e-9, "{}", m.duration_s);
    let lag = m.get(Metric::ScheduleLag).unwrap();
    assert_eq!(lag.count, 2);
    assert_eq!(lag.min, 0.0);
}

/// The series starts at the measured phase's first scheduled send, not at
/// the first request to finish: a slow first request does not shift it.
#[test]
fn the_time_series_starts_at_the_first_send() {
    // Request 0 sent at 0 finishes last; request 1 sent at 100 ms finishes first.
    let recs = [ok(150 * MS, 200 * MS), ok(0, 900 * MS)];
    let m = collect(0, &recs);
    assert_eq!(&m.timeseries.sends[..2], &[1.0, 1.0]);
    assert_eq!(m.timeseries.completions[2], 1.0);
    assert_eq!(m.timeseries.completions[9], 1.0);
}

/// Little's law counts failed requests too: the in-flight time of every
/// sent request over the duration equals the in-flight series' mean.
#[test]
fn mean_in_flight_counts_failures() {
    let mut failed = ok(0, 1000 * MS);
    failed.events.clear();
    failed.error = Some(RequestError {
        kind: ErrorKind::HttpStatus,
        message: "500".into(),
        retry_after: None,
    });
    failed.http_status = Some(500);
    let m = collect(0, &[ok(0, 1000 * MS), failed]);
    assert!(
        (m.mean_in_flight - 2.0).abs() < 1e-9,
        "{}",
        m.mean_in_flight
    );
    let series_mean =
        m.timeseries.in_flight.iter().sum::<f64>() / m.timeseries.in_flight.len() as f64;
    assert!((series_mean - 2.0).abs() < 0.25, "{series_mean}");
    let http_500 = ErrorKey::new(ErrorKind::HttpStatus, Some(500));
    assert_eq!(m.timeseries.failures[&http_500][10], 1.0);
}

fn failed(send: u64, done: u64, status: u16) -> RequestRecord {
    RequestRecord {
        events: Vec::new(),
        http_status: Some(status),
        error: Some(RequestError {
            kind: ErrorKind::HttpStatus,
            message: format!("HTTP {status}"),
            retry_after: None,
        }),
        ..ok(send, done)
    }
}

/// The prompts sent are every sent request's, those the server refused
/// included; a request never sent has no prompt in the mix.
#[test]
fn input_tokens_sent_count_failed_requests() {
    let with_prompt = |mut r: RequestRecord, tokens: u32| {
        r.prompt_tokens_client = Some(tokens);
        r
    };
    let mut never = never_sent(0, MS);
    never.prompt_tokens_client = Some(5000);
    let m = collect(
        0,
        &[
            with_prompt(ok(0, 100 * MS), 100),
            with_prompt(ok(0, 200 * MS), 300),
            // Over the context limit: refused with a 400.
            with_prompt(failed(0, 10 * MS, 400), 9000),
            never,
        ],
    );
    let sent = m.workload.input_tokens.unwrap();
    assert_eq!((sent.count, sent.max), (3, 9000));
    assert!((sent.mean - 9400.0 / 3.0).abs() < 1e-9, "{}", sent.mean);
    // Outputs are those received: the completed requests'.
    assert_eq!(m.workload.output_tokens.unwrap().count, 2);
}

/// A steady closed loop at concurrency 1 completes the same number of
/// requests every second; its interval is still not zero-width.
#[test]
fn a_steady_closed_loop_rate_has_a_nonzero_interval() {
    let third = 333_333_333;
    let recs: Vec<RequestRecord> = (0..180u64)
        .map(|i| ok(i * third, (i + 1) * third))
        .collect();
    let m = collect(0, &recs);
    let r = m.throughput.request;
    assert!((r.value - 3.0).abs() < 1e-6, "{r:?}");
    let (lo, hi) = (r.lo.unwrap(), r.hi.unwrap());
    // Each side at least the 60 blocks' resolution (0.06 req/s), and far
    // narrower than a Poisson interval on 180 counts (± 0.45 req/s).
    assert!(r.value - lo > 0.05 && hi - r.value > 0.05, "{r:?}");
    assert!(hi - lo < 0.3, "{r:?}");
}

/// A server that stopped answering after 6 s of a 66 s run: the blocks
/// cover all 66 s (60 of them empty), so the interval is about the
/// whole-run rate and wide, not the first 6 s' spread moved onto it.
#[test]
fn a_rate_interval_covers_the_seconds_after_the_last_completion() {
    let mut recs: Vec<RequestRecord> = (0..30u64)
        .map(|i| ok(i * 200 * MS, (i + 1) * 200 * MS - 1))
        .collect();
    // The last request sent hung until its timeout at 66 s.
    recs.push(failed(5990 * MS, 66_000 * MS, 504));
    let m = collect(0, &recs);
    assert!((m.duration_s - 66.0).abs() < 1e-6, "{}", m.duration_s);
    let r = m.throughput.request;
    assert!((r.value - 30.0 / 66.0).abs() < 1e-6, "{r:?}");
    let (lo, hi) = (r.lo.unwrap(), r.hi.unwrap());
    // Batch means over 6 blocks of 5 and 60 of 0: every completion in
    // the first batch, so the spread is the whole rate's and more.
    assert!(lo < 0.25 && hi > 0.65, "{r:?}");
    assert!(lo >= 0.0 && hi < 2.0, "{r:?}");
}

/// An agent's call of task `task` (`calls` in all), of agent `agent` at
/// `depth`.
fn call(
    task: u64,
    turn: u32,
    calls: u32,
    agent: u32,
    depth: u32,
    send: u64,
    done: u64,
) -> RequestRecord {
    RequestRecord {
        session: Some((task, turn, calls)),
        agent: Some(std::sync::Arc::new(crate::request::record::AgentCall {
            trace: "t".into(),
            agent,
            depth,
            parents: Vec::new(),
        })),
        ..ok(send, done)
    }
}

/// Tasks are judged whole: one whose every call completed gives its
/// duration (first scheduled send to last end), one with a failed call
/// failed, one missing a call was cut; calls split by depth; the task
/// term judges the completed tasks' durations.
#[test]
fn tasks_are_judged_whole() {
    let tok = Tokenizer::from_spec("none").unwrap();
    let mut c = Collector::default();
    c.measure_start(0);
    let mut recs = Vec::new();
    // Ten complete tasks of three calls (a subagent's in the middle),
    // lasting 1 s to 10 s.
    for k in 0..10u64 {
        let end = (k + 1) * 1000 * MS;
        recs.push(call(k, 0, 3, 0, 0, 0, 100 * MS));
        recs.push(call(k, 1, 3, 1, 1, 200 * MS, end / 2));
        recs.push(call(k, 2, 3, 0, 0, end / 2, end));
    }
    // A failed task and a cut one.
    recs.push(call(10, 0, 3, 0, 0, 0, 100 * MS));
    let mut failed = call(10, 1, 3, 1, 1, 200 * MS, 300 * MS);
    failed.events.clear();
    failed.error = Some(RequestError {
        kind: ErrorKind::HttpStatus,
        message: "500".into(),
        retry_after: None,
    });
    recs.push(failed);
    recs.push(call(11, 0, 3, 0, 0, 0, 100 * MS));
    for r in &recs {
        c.add(r, &RequestMetrics::derive(r, &tok));
    }
    let slo = Slo {
        task_terms: vec![
            crate::measure::slo::TaskTerm {
                percentile: 90.0,
                threshold_ms: 9500.0,
            },
            crate::measure::slo::TaskTerm {
                percentile: 50.0,
                threshold_ms: 8000.0,
            },
        ],
        max_error_rate: 1.0,
        ..Default::default()
    };
    let m = c.summarize(&[50.0, 90.0], None, 0, Some(&slo));
    let t = m.tasks.expect("tasks");
    assert_eq!((t.tasks, t.completed, t.failed, t.cut), (12, 10, 1, 1));
    let d = t.duration.expect("durations");
    assert_eq!(d.percentiles[0].1.value, 5500.0);
    assert_eq!(d.percentiles[1].1.value, 9100.0);
    assert_eq!((t.calls_mean, t.subagents_mean), (3.0, 1.0));
    assert_eq!(
        t.by_depth
            .iter()
            .map(|d| (d.depth, d.calls))
            .collect::<Vec<_>>(),
        [(0, 22), (1, 10)]
    );
    let s = m.slo.expect("judged");
    assert_eq!(s.task_terms.len(), 2);
    assert!(s.task_terms[0].passes && s.task_terms[1].passes, "{s:?}");
    assert_eq!(s.task_terms[0].estimate.map(|e| e.value), Some(9100.0));
    // Ten tasks cannot settle a p90: its interval is open above.
    assert_eq!(s.task_terms[0].verdict, Verdict::Inconclusive);
    assert!(s.meets, "{:?}", s.reasons);
}
