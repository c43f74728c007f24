//! Fixtures shared by the report's tests (a deterministic run and its
//! records), and the console summary's own tests.

use super::*;
use crate::load::executor::ExecSummary;
use crate::load::schedule::Load;
use crate::measure::metrics::{Collector, RequestMetrics};
use crate::measure::stats::Estimate;
use crate::output::result::RunResult;
use crate::request::record::{ErrorKind, Event, RequestError, RequestRecord, ServerUsage};
use crate::tokenizer::Tokenizer;

/// Request `i` of a deterministic run, sent at `send` (ns): TTFT
/// 100 + i ms, then five tokens 10 ms apart with the server's usage; or,
/// given a `failure`, a 503 that ended 2 ms after its send.
pub(crate) fn sample_record(i: u64, send: u64, failure: Option<RequestError>) -> RequestRecord {
    const MS: u64 = 1_000_000;
    let mut r = RequestRecord {
        request_id: i,
        t_sched: send,
        t_send: Some(send),
        max_tokens: Some(5),
        prompt_tokens_client: Some(32),
        ..Default::default()
    };
    if let Some(e) = failure {
        r.http_status = Some(503);
        r.t_done = send + 2 * MS;
        r.error = Some(e);
        return r;
    }
    for k in 0..5u64 {
        r.output_text.push_str(" the");
        r.events.push(Event {
            at_ns: send + (100 + i) * MS + k * 10 * MS,
            text_end: r.output_text.len() as u32,
            usage_completion_tokens: None,
            reasoning: false,
        });
    }
    r.t_done = r.events.last().map_or(send, |e| e.at_ns);
    r.usage = Some(ServerUsage {
        prompt_tokens: Some(32),
        completion_tokens: Some(5),
        ..Default::default()
    });
    r
}

/// A deterministic run: 20 requests, 10 ms apart, TTFTs 100 to 119 ms in
/// a shuffled order (request `(3i + 6) mod 20` sent `i`-th, so that the
/// values do not trend with time, which batch means would read as
/// dependence), one token every 10 ms, and one 503 (request 7, sent 7th).
pub(crate) fn sample_result() -> RunResult {
    let tok = Tokenizer::from_spec("none").unwrap();
    let mut c = Collector::default();
    const MS: u64 = 1_000_000;
    for i in 0..20u64 {
        let failure = (i == 7).then(|| RequestError {
            kind: ErrorKind::HttpStatus,
            message: "HTTP 503: overloaded".into(),
            retry_after: Some("1".into()),
        });
        let r = sample_record((3 * i + 6) % 20, i * 10 * MS, failure);
        let m = RequestMetrics::derive(&r, &tok);
        c.add(&r, &m);
    }
    let percentiles = vec![50.0, 90.0, 95.0, 99.0];
    let load = Load::Closed { concurrency: 4 };
    RunResult {
        run_id: "00000000000000aa".into(),
        config: crate::output::config::tests::sample_config(load, percentiles.clone()),
        metrics: c.summarize(&percentiles, None, 0, None),
        exec: ExecSummary::default(),
        connections: Default::default(),
        early_stop: None,
        cost: None,
        notes: vec!["an example note".into()],
        warnings: Vec::new(),
        started_at: "2026-01-01T00:00:00Z".into(),
        clock_origin_monotonic_ns: None,
        output_hashes: Vec::new(),
        server_metrics: None,
        gpu_metrics: None,
        shards: None,
    }
}

#[test]
fn summary_table_snapshot() {
    insta::assert_snapshot!(summary(&sample_result()));
}

#[test]
fn estimates_show_open_bounds() {
    let e = Estimate {
        value: 1.0,
        lo: Some(0.5),
        hi: None,
    };
    assert_eq!(estimate(&e), "1.00 [0.50, -]");
    let e = Estimate {
        value: 1234.5,
        lo: None,
        hi: None,
    };
    assert_eq!(estimate(&e), "1234.5 [open]");
}

/// vLLM's auto-tune script reads `Request throughput (req/s):` with
/// `sed 's/[^0-9.]//g'` and `P99 E2EL (ms):` with `awk '{print $NF}'`:
/// with the intervals apart both read the figure alone.
#[test]
fn intervals_apart_leave_vllm_s_lines_as_vllm_prints_them() {
    let text = "Request throughput (req/s):              12.34 [12.28, 12.40]\n\
                P99 E2EL (ms):                           310.20 [300.10, -]\n\
                -----------TTFT from scheduled arrival------------\n\
                P99 E2EL (ms):                           320.50 [305.00, -]\n\
                Request goodput (req/s):                 11.00\n\
                Steady-state output throughput (tok/s):  1636.5 (0.1-15.0 s)\n";
    let out = super::intervals_apart(text);
    let lines: Vec<&str> = out.lines().collect();
    let digits = |l: &str| {
        l.chars()
            .filter(|c| c.is_ascii_digit() || *c == '.')
            .collect::<String>()
    };
    let throughput: Vec<&&str> = lines
        .iter()
        .filter(|l| l.contains("Request throughput (req/s)"))
        .collect();
    assert_eq!(throughput.len(), 1, "{out}");
    assert_eq!(digits(throughput[0]), "12.34");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("p99_e2el (ttft from scheduled arrival)")
                && l.ends_with(" [305.00, -]")),
        "a label under a second section is named with it: {out}"
    );
    let e2el = lines.iter().find(|l| l.contains("P99 E2EL (ms)")).unwrap();
    assert_eq!(e2el.split_whitespace().last(), Some("310.20"));
    assert!(
        out.contains("request_throughput                       [12.28, 12.40]"),
        "{out}"
    );
    assert!(
        out.contains("p99_e2el                                 [300.10, -]"),
        "{out}"
    );
    assert!(out.contains("Steady-state output throughput (tok/s):  1636.5 (0.1-15.0 s)"));
}
