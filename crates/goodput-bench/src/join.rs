//! Joining goodput's per-request records with the reference server's log, and
//! the figures computed from the pair: TTFT and ITL error against the server's
//! truth, and the open-loop arrival figures.
//!
//! The join key is the `x-request-id` header goodput sends,
//! `<run-tag>-<request_id>`: the integer after the last `-` is the record's
//! `request_id`. Requests whose suffix is not an integer (the probe) are not
//! part of any figure here.
//!
//! Definitions (all in ms):
//! - TTFT error of a request = client `ttft_ms` − server TTFT, where server
//!   TTFT = first token write − arrival of the full request. Signed: positive
//!   means the client reported more than the server spent.
//! - ITL error of a gap k ≥ 1 = (client event k − client event k−1) −
//!   (server write k − server write k−1), matched by event index within a
//!   request; requests whose event count differs from the server's token count
//!   are counted and left out. The tables give percentiles of |ITL error|.
//!
//! Decomposition of the TTFT error, per request, on the shared
//! `CLOCK_MONOTONIC` (client times: the results' `run.clock_origin_monotonic_ns`
//! + `send_s`, + `event_times_ms` / `ttft_ms`; server times: its log):
//! - send delay = kernel receive time of the request − client send time
//!   (the client's write path and loopback);
//! - server read lateness = server `t_recv` (user space) − kernel receive time;
//! - first-event delay = client first-event time − server first token write
//!   (loopback, and the client's read and timestamp delay);
//! - per-event delay = client event i time − server write i (pooled over
//!   events, requests whose event count matches the server's only).
//!
//! TTFT error = send delay + server read lateness + first-event delay, exactly.
//! "TTFT error, server read lateness removed" = client TTFT − (first write −
//! kernel receive time) = send delay + first-event delay: what is left when
//! the server's TTFT is counted from the kernel's receive time.

use std::collections::HashMap;
use std::path::Path;

use anyhow::Context as _;
use serde::Deserialize;

use crate::server::RequestLog;
use crate::stats::Spread;

/// The fields of one goodput record line that the bench uses.
#[derive(Debug, Clone, Deserialize)]
pub struct ClientRecord {
    /// Integer request id, also the suffix of the `x-request-id` header.
    pub request_id: u64,
    /// The shard that sent it, in a sharded run's merged records.
    #[serde(default)]
    pub shard: Option<u32>,
    /// Whether the request succeeded.
    pub ok: bool,
    /// `warmup` or `measure`.
    #[serde(default)]
    pub phase: Option<String>,
    /// Intended send time, s since run start.
    #[serde(default)]
    pub sched_s: Option<f64>,
    /// Actual send time, s since run start.
    #[serde(default)]
    pub send_s: Option<f64>,
    /// Time to first content-bearing event, ms.
    #[serde(default)]
    pub ttft_ms: Option<f64>,
    /// send_s − sched_s, ms.
    #[serde(default)]
    pub schedule_lag_ms: Option<f64>,
    /// Arrival of each content-bearing event, ms since the request was sent.
    #[serde(default)]
    pub event_times_ms: Option<Vec<f64>>,
    /// The last content-bearing event, ms since the request was sent (the
    /// bytes-only floor's timings, which keep no other event times).
    #[serde(default)]
    pub last_event_ms: Option<f64>,
    /// Failure kind, null when ok.
    #[serde(default)]
    pub error_kind: Option<String>,
}

impl ClientRecord {
    /// Whether the record belongs to the measured phase (records without a
    /// phase are taken as measured).
    pub fn is_measured(&self) -> bool {
        self.phase.as_deref().is_none_or(|p| p == "measure")
    }
}

/// Reads a records file (JSONL); a bad line is reported with its number.
pub fn read_records(path: &Path) -> anyhow::Result<Vec<ClientRecord>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading records {}", path.display()))?;
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| {
            serde_json::from_str(line)
                .with_context(|| format!("{}:{}: not a goodput record", path.display(), i + 1))
        })
        .collect()
}

/// Server log entries by the integer suffix of their request id.
pub fn index_log(log: &[RequestLog]) -> HashMap<u64, &RequestLog> {
    log.iter()
        .filter_map(|entry| {
            let id = entry.request_id.as_deref()?;
            let (_, suffix) = id.rsplit_once('-')?;
            Some((suffix.parse().ok()?, entry))
        })
        .collect()
}

/// How closely the client's TTFT and ITL matched the server's truth.
#[derive(Debug, Clone)]
pub struct Accuracy {
    /// Measured-phase records.
    pub measured: usize,
    /// Measured-phase records that failed.
    pub failed: usize,
    /// Successful measured records found in the server log.
    pub matched: usize,
    /// Successful measured records with no server log entry.
    pub unmatched: usize,
    /// Matched requests whose client event count differs from the server's
    /// token count (left out of ITL error).
    pub event_count_mismatch: usize,
    /// Matched requests without `event_times_ms` (left out of ITL error).
    pub missing_event_times: usize,
    /// Server TTFT of matched requests.
    pub true_ttft: Spread,
    /// Client-reported TTFT of matched requests.
    pub reported_ttft: Spread,
    /// Signed TTFT error per request.
    pub ttft_error: Spread,
    /// Server gaps between token writes.
    pub true_itl: Spread,
    /// Client gaps between event arrivals.
    pub reported_itl: Spread,
    /// |ITL error| per gap.
    pub itl_abs_error: Spread,
    /// Median of the signed ITL error per gap.
    pub itl_error_p50_signed: f64,
    /// Failed measured records by `error_kind`, most frequent first.
    pub error_kinds: Vec<(String, usize)>,
    /// Where the TTFT error comes from.
    pub decomposition: Decomposition,
}

/// The TTFT error taken apart on the shared monotonic clock (see the module
/// documentation); all in ms.
#[derive(Debug, Clone)]
pub struct Decomposition {
    /// Matched requests with a TTFT whose server entry has a kernel receive time.
    pub with_kernel_rx: usize,
    /// Kernel receive time − client send time.
    pub send_delay: Spread,
    /// Server `t_recv` − kernel receive time.
    pub read_lateness: Spread,
    /// Client first-event time − server first write.
    pub first_event_delay: Spread,
    /// Client event i time − server write i, pooled.
    pub event_delay: Spread,
    /// Client TTFT − (server first write − kernel receive time).
    pub ttft_error_kernel: Spread,
}

/// Computes [`Accuracy`] from a client's records and the server's log;
/// `origin_ns` is the records' clock origin on `CLOCK_MONOTONIC` (goodput's
/// `run.clock_origin_monotonic_ns`), needed for the client-side parts of the
/// decomposition.
pub fn accuracy(records: &[ClientRecord], log: &[RequestLog], origin_ns: Option<u64>) -> Accuracy {
    let by_id = index_log(log);
    // Server times relative to the client's origin, ns.
    let rel = |t: u64| origin_ns.map(|o| (t as i128 - o as i128) as f64);
    let (mut send_delay, mut read_late, mut first_delay, mut event_delay, mut ttft_kernel) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut with_kernel_rx = 0;
    let measured: Vec<&ClientRecord> = records.iter().filter(|r| r.is_measured()).collect();
    let failed = measured.iter().filter(|r| !r.ok).count();
    let (mut true_ttft, mut reported_ttft, mut ttft_error) = (Vec::new(), Vec::new(), Vec::new());
    let (mut true_itl, mut reported_itl, mut itl_abs, mut itl_signed) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut matched, mut unmatched, mut mismatch, mut missing) = (0, 0, 0, 0);
    for record in measured.iter().filter(|r| r.ok) {
        let Some(server) = by_id.get(&record.request_id) else {
            unmatched += 1;
            continue;
        };
        matched += 1;
        if let (Some(client), Some(truth)) = (record.ttft_ms, server.ttft_ms()) {
            true_ttft.push(truth);
            reported_ttft.push(client);
            ttft_error.push(client - truth);
            if let Some(kernel_ttft) = server.ttft_from_kernel_rx_ms() {
                with_kernel_rx += 1;
                ttft_kernel.push(client - kernel_ttft);
                read_late.extend(server.read_lateness_ms());
            }
            // Client send time relative to its origin, ns.
            let send = record.send_s.map(|s| s * 1e9);
            if let (Some(send), Some(first)) = (send, server.token_ns.first()) {
                if let Some(first) = rel(*first) {
                    first_delay.push((send + client * 1e6 - first) / 1e6);
                }
                if let Some(kernel) = server.kernel_rx_ns.and_then(rel) {
                    send_delay.push((kernel - send) / 1e6);
                }
            }
        }
        let Some(times) = record.event_times_ms.as_deref() else {
            missing += 1;
            continue;
        };
        if times.len() != server.token_ns.len() {
            mismatch += 1;
            continue;
        }
        if let Some(send) = record.send_s.map(|s| s * 1e9) {
            for (&t, &write) in times.iter().zip(&server.token_ns) {
                if let Some(write) = rel(write) {
                    event_delay.push((send + t * 1e6 - write) / 1e6);
                }
            }
        }
        for (client_pair, server_gap) in times.windows(2).zip(server.gaps_ms()) {
            let client_gap = client_pair[1] - client_pair[0];
            true_itl.push(server_gap);
            reported_itl.push(client_gap);
            itl_abs.push((client_gap - server_gap).abs());
            itl_signed.push(client_gap - server_gap);
        }
    }
    Accuracy {
        measured: measured.len(),
        failed,
        matched,
        unmatched,
        event_count_mismatch: mismatch,
        missing_event_times: missing,
        true_ttft: Spread::of(&true_ttft),
        reported_ttft: Spread::of(&reported_ttft),
        ttft_error: Spread::of(&ttft_error),
        true_itl: Spread::of(&true_itl),
        reported_itl: Spread::of(&reported_itl),
        itl_abs_error: Spread::of(&itl_abs),
        itl_error_p50_signed: Spread::of(&itl_signed).p50,
        error_kinds: error_kinds(&measured),
        decomposition: Decomposition {
            with_kernel_rx,
            send_delay: Spread::of(&send_delay),
            read_lateness: Spread::of(&read_late),
            first_event_delay: Spread::of(&first_delay),
            event_delay: Spread::of(&event_delay),
            ttft_error_kernel: Spread::of(&ttft_kernel),
        },
    }
}

/// goodput's `run.clock_origin_monotonic_ns` from its results JSON.
pub fn clock_origin(results: &serde_json::Value) -> Option<u64> {
    results
        .get("run")?
        .get("clock_origin_monotonic_ns")?
        .as_u64()
}

/// Failed records counted by `error_kind`, most frequent first.
fn error_kinds(records: &[&ClientRecord]) -> Vec<(String, usize)> {
    let mut counts: HashMap<String, usize> = HashMap::new();
    for record in records.iter().filter(|r| !r.ok) {
        let kind = record
            .error_kind
            .clone()
            .unwrap_or_else(|| "unknown".to_string());
        *counts.entry(kind).or_default() += 1;
    }
    let mut out: Vec<(String, usize)> = counts.into_iter().collect();
    out.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    out
}

/// Arrival figures of an open-loop run.
#[derive(Debug, Clone)]
pub struct OpenLoop {
    /// Measured-phase records.
    pub measured: usize,
    /// Measured-phase records that failed.
    pub failed: usize,
    /// (n − 1) / (last send_s − first send_s) over measured records, req/s.
    pub send_rate: f64,
    /// The same over the intended send times, req/s.
    pub sched_rate: f64,
    /// (n − 1) / span of the server's arrival times of the measured requests, req/s.
    pub server_arrival_rate: f64,
    /// Schedule lag of measured records, ms.
    pub lag: Spread,
    /// Failed measured records by `error_kind`, most frequent first.
    pub error_kinds: Vec<(String, usize)>,
}

/// Computes [`OpenLoop`] from goodput's records and the server's log.
pub fn open_loop(records: &[ClientRecord], log: &[RequestLog]) -> OpenLoop {
    let by_id = index_log(log);
    let measured: Vec<&ClientRecord> = records.iter().filter(|r| r.is_measured()).collect();
    let sends: Vec<f64> = measured.iter().filter_map(|r| r.send_s).collect();
    let scheds: Vec<f64> = measured.iter().filter_map(|r| r.sched_s).collect();
    let arrivals: Vec<f64> = measured
        .iter()
        .filter_map(|r| by_id.get(&r.request_id))
        .map(|e| e.recv_ns as f64 / 1e9)
        .collect();
    let lags: Vec<f64> = measured.iter().filter_map(|r| r.schedule_lag_ms).collect();
    OpenLoop {
        measured: measured.len(),
        failed: measured.iter().filter(|r| !r.ok).count(),
        send_rate: rate(&sends),
        sched_rate: rate(&scheds),
        server_arrival_rate: rate(&arrivals),
        lag: Spread::of(&lags),
        error_kinds: error_kinds(&measured),
    }
}

/// Events per second over the span of `times` (seconds): (n − 1) / span.
fn rate(times: &[f64]) -> f64 {
    let min = times.iter().copied().fold(f64::INFINITY, f64::min);
    let max = times.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if times.len() < 2 || max <= min {
        return f64::NAN;
    }
    (times.len() - 1) as f64 / (max - min)
}

/// A number from goodput's result JSON at `path` (object keys): a number
/// itself, or the first of `value`, `mean`, `rate` inside an object there.
pub fn result_number(results: &serde_json::Value, path: &[&str]) -> Option<f64> {
    let found = path.iter().try_fold(results, |v, key| v.get(key))?;
    match found {
        serde_json::Value::Number(n) => n.as_f64(),
        serde_json::Value::Object(map) => ["value", "mean", "rate"]
            .iter()
            .find_map(|k| map.get(*k).and_then(serde_json::Value::as_f64)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::Endpoint;

    fn server_entry(id: &str, recv_ns: u64, token_ms: &[u64]) -> RequestLog {
        RequestLog {
            request_id: Some(id.to_string()),
            endpoint: Endpoint::Completions,
            streamed: true,
            recv_ns,
            kernel_rx_ns: None,
            token_ns: token_ms.iter().map(|ms| recv_ns + ms * 1_000_000).collect(),
            complete: true,
        }
    }

    fn record(line: &str) -> ClientRecord {
        serde_json::from_str(line).unwrap()
    }

    #[test]
    fn joins_by_request_id_suffix_and_computes_errors() {
        let log = vec![
            server_entry("run-a-b-probe", 0, &[100]),
            server_entry("run-a-b-0", 5_000_000, &[100, 110, 120]),
            server_entry("run-a-b-1", 9_000_000, &[100, 110]),
        ];
        let records = vec![
            record(
                r#"{"request_id":0,"ok":true,"phase":"measure","ttft_ms":102.0,"event_times_ms":[102.0,112.5,121.0],"extra":1}"#,
            ),
            // Event count differs from the server's: left out of ITL.
            record(
                r#"{"request_id":1,"ok":true,"phase":"measure","ttft_ms":101.0,"event_times_ms":[101.0]}"#,
            ),
            record(r#"{"request_id":2,"ok":false,"phase":"measure","error_kind":"timeout"}"#),
            record(r#"{"request_id":3,"ok":true,"phase":"warmup","ttft_ms":1.0}"#),
            record(r#"{"request_id":4,"ok":true,"phase":"measure","ttft_ms":1.0}"#),
        ];
        let mut log = log;
        log.push(server_entry("run-a-b-5", 0, &[100]));
        let mut records = records;
        records.push(record(r#"{"request_id":5,"ok":true,"ttft_ms":100.0}"#));
        let a = accuracy(&records, &log, None);
        assert_eq!(a.measured, 5);
        assert_eq!(a.failed, 1);
        assert_eq!(a.matched, 3);
        assert_eq!(a.missing_event_times, 1);
        assert_eq!(a.unmatched, 1);
        assert_eq!(a.event_count_mismatch, 1);
        assert_eq!(a.ttft_error.n, 3);
        assert!((a.ttft_error.max - 2.0).abs() < 1e-9);
        assert!((a.ttft_error.p50 - 1.0).abs() < 1e-9);
        // Gaps: client 10.5 and 8.5 against server 10 and 10.
        assert_eq!(a.itl_abs_error.n, 2);
        assert!((a.itl_abs_error.max - 1.5).abs() < 1e-9);
        assert!((a.itl_abs_error.p50 - 1.0).abs() < 1e-9);
        assert!((a.itl_error_p50_signed - -0.5).abs() < 1e-9);
        assert_eq!(a.error_kinds, vec![("timeout".to_string(), 1)]);
        // No kernel times, no client origin: no decomposition.
        assert_eq!(a.decomposition.with_kernel_rx, 0);
        assert_eq!(a.decomposition.send_delay.n, 0);
        assert_eq!(a.decomposition.first_event_delay.n, 0);
    }

    #[test]
    fn decomposes_the_ttft_error_on_the_shared_clock() {
        // Client origin at 1 s of CLOCK_MONOTONIC; the request is sent at
        // send_s = 2 s (3 s absolute), the kernel has it 0.2 ms later, the
        // server reads it 0.5 ms after that and writes tokens at 100 and
        // 110 ms after its read; the client sees them 0.1 and 0.3 ms later.
        let ms = 1_000_000u64;
        let send = 3_000 * ms;
        let kernel = send + ms / 5;
        let recv = kernel + ms / 2;
        let mut entry = server_entry("run-7", recv, &[100, 110]);
        entry.kernel_rx_ns = Some(kernel);
        let ttft = (entry.token_ns[0] + ms / 10 - send) as f64 / 1e6;
        let second = (entry.token_ns[1] + 3 * ms / 10 - send) as f64 / 1e6;
        let records = vec![record(&format!(
            r#"{{"request_id":7,"ok":true,"send_s":2.0,"ttft_ms":{ttft},"event_times_ms":[{ttft},{second}]}}"#
        ))];
        let a = accuracy(&records, &[entry], Some(1_000 * ms));
        let d = &a.decomposition;
        let close = |x: f64, y: f64| (x - y).abs() < 1e-6;
        assert_eq!(d.with_kernel_rx, 1);
        assert!(close(d.send_delay.p50, 0.2), "{d:?}");
        assert!(close(d.read_lateness.p50, 0.5), "{d:?}");
        assert!(close(d.first_event_delay.p50, 0.1), "{d:?}");
        assert_eq!(d.event_delay.n, 2);
        assert!(close(d.event_delay.max, 0.3), "{d:?}");
        // The parts add up to the TTFT error; without the read lateness,
        // send delay + first-event delay remain.
        assert!(close(a.ttft_error.p50, 0.2 + 0.5 + 0.1), "{a:?}");
        assert!(close(d.ttft_error_kernel.p50, 0.2 + 0.1), "{d:?}");
    }

    #[test]
    fn open_loop_rates_come_from_spans() {
        let log: Vec<RequestLog> = (0..5)
            .map(|i| server_entry(&format!("t-{i}"), i * 250_000_000, &[1]))
            .collect();
        let records: Vec<ClientRecord> = (0..5)
            .map(|i| {
                record(&format!(
                    r#"{{"request_id":{i},"ok":true,"phase":"measure","sched_s":{s},"send_s":{s2},"schedule_lag_ms":{l}}}"#,
                    s = i as f64 * 0.5,
                    s2 = i as f64 * 0.5 + 0.001,
                    l = i as f64,
                ))
            })
            .collect();
        let o = open_loop(&records, &log);
        assert!((o.sched_rate - 2.0).abs() < 1e-9);
        assert!((o.send_rate - 2.0).abs() < 1e-9);
        assert!((o.server_arrival_rate - 4.0).abs() < 1e-9);
        assert_eq!(o.lag.max, 4.0);
    }

    #[test]
    fn clock_origin_is_read_exactly() {
        let v: serde_json::Value =
            serde_json::from_str(r#"{"run":{"clock_origin_monotonic_ns":123456789012345678}}"#)
                .unwrap();
        assert_eq!(clock_origin(&v), Some(123_456_789_012_345_678));
        assert_eq!(clock_origin(&serde_json::json!({"run": {}})), None);
    }

    #[test]
    fn result_number_reads_plain_and_nested_values() {
        let v = serde_json::json!({"a": 3.5, "b": {"mean": 2}, "c": "x", "d": {"p99_ms": 1.25}});
        assert_eq!(result_number(&v, &["a"]), Some(3.5));
        assert_eq!(result_number(&v, &["b"]), Some(2.0));
        assert_eq!(result_number(&v, &["c"]), None);
        assert_eq!(result_number(&v, &["d", "p99_ms"]), Some(1.25));
        assert_eq!(result_number(&v, &["d", "p50_ms"]), None);
    }
}
