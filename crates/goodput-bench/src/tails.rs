//! The TTFT tail after the first wave and the TPOT error of a client run, and
//! the other figures issue 22 adds to a run (busy core, first requests); the
//! side-by-side tables are rendered in [`crate::side_by_side`].
//!
//! The first wave: in a closed-loop run of `streams` streams, the first
//! `streams` requests sent (by the client's own send time) all start at once,
//! while the connections are still being opened; a client that starts its
//! TTFT clock before `connect` (vllm-bench) pays the connection set-up there,
//! and a dropped SYN costs it a 1 s retransmission. "After the first wave" is
//! every later request: connections open, the steady state.
//!
//! "All requests" are all the client sent, goodput's warm-up included (its
//! records keep it, `phase: warmup`): with the default warm-up of one request
//! per stream, goodput's first wave is its warm-up, and its requests after
//! the first wave are its measured phase. The accuracy tables count the
//! measured phase only, so goodput's "all" here can differ from them.
//!
//! TPOT error of a request = client TPOT − server TPOT, signed, ms, where
//! server TPOT = (last token write − first token write) / (tokens − 1) and
//! client TPOT = (last content event − first content event) / (tokens − 1),
//! `tokens` the server's count (as vllm-bench divides by the server's
//! `usage.completion_tokens`). Client event times come from goodput's
//! `event_times_ms`, vllm-bench's TTFT + ITLs, and the floor's `ttft_ms` and
//! `last_event_ms` (the read that brought the start of its last content
//! event). Requests with fewer than 2 tokens have no TPOT.

use std::collections::HashMap;
use std::time::Duration;

use crate::join::ClientRecord;
use crate::server::RequestLog;
use crate::stats::Spread;

/// Figures of a run added for issue 22; empty unless measured.
#[derive(Debug, Clone, Default)]
pub struct RunExtras {
    /// TTFT tails and TPOT error, for closed-loop runs joined with the log.
    pub tails: Option<Tails>,
    /// CPU the `bench spin` process used while it kept a core busy during
    /// the run (`--busy-core`); not charged to the client.
    pub busy_core_cpu: Option<Duration>,
    /// The spawn instant of the client on `CLOCK_MONOTONIC`, ns, and the
    /// server's log of the run's first requests (for `bench startup`).
    pub first_requests: Option<FirstRequests>,
}

/// When the first requests of a run reached the server, against the spawn of
/// the client; all absolute `CLOCK_MONOTONIC` ns.
#[derive(Debug, Clone, Copy)]
pub struct FirstRequests {
    /// Right before the measuring helper called `spawn` for the client.
    pub spawn_ns: u64,
    /// Kernel receive time (else user-space read time) of the first
    /// completion request the server logged (goodput: its probe).
    pub first_completion_ns: Option<u64>,
    /// The same for the first request whose `x-request-id` ends in an integer
    /// (a benchmark request; goodput's probe is not one).
    pub first_benchmark_ns: Option<u64>,
}

impl FirstRequests {
    /// From the server's log of a run whose client was spawned at `spawn_ns`.
    pub fn of(spawn_ns: u64, log: &[RequestLog]) -> Self {
        let arrival = |e: &RequestLog| e.kernel_rx_ns.unwrap_or(e.recv_ns);
        let numbered = |e: &&RequestLog| {
            e.request_id
                .as_deref()
                .and_then(|id| id.rsplit_once('-'))
                .is_some_and(|(_, n)| n.parse::<u64>().is_ok())
        };
        Self {
            spawn_ns,
            first_completion_ns: log.iter().map(arrival).min(),
            first_benchmark_ns: log.iter().filter(numbered).map(arrival).min(),
        }
    }

    /// Spawn to the first completion request, ms.
    pub fn until_first_completion_ms(&self) -> Option<f64> {
        self.first_completion_ns
            .map(|t| (t as f64 - self.spawn_ns as f64) / 1e6)
    }

    /// Spawn to the first benchmark request, ms.
    pub fn until_first_benchmark_ms(&self) -> Option<f64> {
        self.first_benchmark_ns
            .map(|t| (t as f64 - self.spawn_ns as f64) / 1e6)
    }
}

/// TTFT error over all requests and after the first wave, and TPOT error.
#[derive(Debug, Clone)]
pub struct Tails {
    /// Signed TTFT error of every joined successful request, ms.
    pub ttft_error_all: Spread,
    /// The same over the requests sent after the first wave.
    pub ttft_error_after: Spread,
    /// The same with the server's read lateness removed (client TTFT −
    /// (first token write − kernel receive time of the request)): the
    /// client's own share, whatever the bunching of its sends made the
    /// one-thread server's reads late.
    pub ttft_error_after_kernel: Spread,
    /// Signed TPOT error per request, ms.
    pub tpot_error: Spread,
}

/// Computes [`Tails`] of a run of `streams` streams from the client's
/// records (every phase: see the module docs) and the server's log.
pub fn of(records: &[ClientRecord], log: &[RequestLog], streams: usize) -> Tails {
    let by_id: HashMap<u64, &RequestLog> = log
        .iter()
        .filter_map(|e| {
            let (_, n) = e.request_id.as_deref()?.rsplit_once('-')?;
            Some((n.parse().ok()?, e))
        })
        .collect();
    let mut sent: Vec<&ClientRecord> = records.iter().collect();
    // Sent order; a record without a send time (never sent) goes last.
    sent.sort_by(|a, b| {
        let key = |r: &ClientRecord| r.send_s.unwrap_or(f64::INFINITY);
        key(a)
            .total_cmp(&key(b))
            .then(a.request_id.cmp(&b.request_id))
    });
    let (mut all, mut after, mut after_kernel, mut tpot) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (rank, record) in sent.iter().enumerate() {
        let Some(server) = by_id.get(&record.request_id).filter(|_| record.ok) else {
            continue;
        };
        if let (Some(client), Some(truth)) = (record.ttft_ms, server.ttft_ms()) {
            all.push(client - truth);
            if rank >= streams {
                after.push(client - truth);
                after_kernel.extend(server.ttft_from_kernel_rx_ms().map(|k| client - k));
            }
        }
        if let Some(error) = tpot_error_ms(record, server) {
            tpot.push(error);
        }
    }
    Tails {
        ttft_error_all: Spread::of(&all),
        ttft_error_after: Spread::of(&after),
        ttft_error_after_kernel: Spread::of(&after_kernel),
        tpot_error: Spread::of(&tpot),
    }
}

/// Client TPOT − server TPOT of one request, ms (see the module docs).
fn tpot_error_ms(record: &ClientRecord, server: &RequestLog) -> Option<f64> {
    let tokens = server.token_ns.len();
    if tokens < 2 {
        return None;
    }
    let (first, last) = match record.event_times_ms.as_deref() {
        Some([first, .., last]) => (*first, *last),
        Some(_) => return None,
        None => (record.ttft_ms?, record.last_event_ms?),
    };
    let steps = (tokens - 1) as f64;
    let server_span = (server.token_ns[tokens - 1] - server.token_ns[0]) as f64 / 1e6;
    Some((last - first) / steps - server_span / steps)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::Endpoint;

    fn entry(id: &str, recv_ms: u64, token_ms: &[u64]) -> RequestLog {
        let ms = 1_000_000;
        RequestLog {
            request_id: Some(id.to_string()),
            endpoint: Endpoint::Completions,
            streamed: true,
            recv_ns: recv_ms * ms,
            kernel_rx_ns: None,
            token_ns: token_ms.iter().map(|t| (recv_ms + t) * ms).collect(),
            complete: true,
        }
    }

    fn record(json: serde_json::Value) -> ClientRecord {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn the_first_wave_is_the_first_streams_requests_by_send_time() {
        // Two streams: requests 3 and 1 are sent first (the first wave) and
        // carry a 1 s connection delay; 0 and 2 come after.
        // The kernel had each request 1 ms before the server read it.
        let log: Vec<RequestLog> = (0..4)
            .map(|i| {
                let mut e = entry(&format!("c-{i}"), 1000, &[100, 110, 120]);
                e.kernel_rx_ns = Some(e.recv_ns - 1_000_000);
                e
            })
            .collect();
        let rec = |id: u64, send: f64, ttft: f64| {
            record(serde_json::json!({
                "request_id": id, "ok": true, "send_s": send, "ttft_ms": ttft,
                "event_times_ms": [ttft, ttft + 10.0, ttft + 20.5],
            }))
        };
        let mut first = rec(1, 0.0, 1100.0);
        // goodput's warm-up belongs to what it sent.
        first.phase = Some("warmup".to_string());
        let records = vec![
            rec(0, 0.3, 102.0),
            first,
            rec(2, 0.4, 101.0),
            rec(3, 0.0, 1100.0),
        ];
        let t = of(&records, &log, 2);
        assert_eq!(t.ttft_error_all.n, 4);
        assert_eq!(t.ttft_error_after.n, 2);
        assert!((t.ttft_error_after.max - 2.0).abs() < 1e-9, "{t:?}");
        assert!((t.ttft_error_all.max - 1000.0).abs() < 1e-9, "{t:?}");
        // Counted from the kernel's receive time, the server's TTFT is 1 ms longer.
        assert!((t.ttft_error_after_kernel.max - 1.0).abs() < 1e-9, "{t:?}");
        // Client span 20.5 ms over 2 steps against the server's 20 ms.
        assert_eq!(t.tpot_error.n, 4);
        assert!((t.tpot_error.p50 - 0.25).abs() < 1e-9, "{t:?}");
    }

    #[test]
    fn the_floor_tpot_comes_from_its_first_and_last_event() {
        let log = vec![entry("bytes-7", 0, &[100, 110, 120, 130, 140])];
        let records = vec![record(serde_json::json!({
            "request_id": 7, "ok": true, "send_s": 0.0, "ttft_ms": 100.5, "last_event_ms": 141.3,
        }))];
        let t = of(&records, &log, 1);
        // (141.3 − 100.5) / 4 − 40 / 4 = 0.2.
        assert!((t.tpot_error.p50 - 0.2).abs() < 1e-9, "{t:?}");
        // One stream, one request: nothing after the first wave.
        assert_eq!(t.ttft_error_after.n, 0);
    }

    #[test]
    fn failed_unmatched_and_one_token_requests_are_left_out() {
        let log = vec![entry("g-0", 0, &[100]), entry("g-probe", 0, &[100])];
        let records = vec![
            record(
                serde_json::json!({"request_id": 0, "ok": true, "send_s": 0.0, "ttft_ms": 101.0, "event_times_ms": [101.0]}),
            ),
            record(
                serde_json::json!({"request_id": 1, "ok": true, "send_s": 0.1, "ttft_ms": 101.0}),
            ),
            record(serde_json::json!({"request_id": 2, "ok": false, "error_kind": "timeout"})),
        ];
        let t = of(&records, &log, 1);
        assert_eq!(t.ttft_error_all.n, 1);
        assert_eq!(t.tpot_error.n, 0);
    }

    #[test]
    fn first_requests_prefer_kernel_times_and_skip_the_probe_for_benchmark() {
        let mut probe = entry("run-probe", 50, &[1]);
        probe.kernel_rx_ns = Some(49_000_000);
        let first = entry("run-0", 60, &[1]);
        let f = FirstRequests::of(10_000_000, &[first, probe]);
        assert_eq!(f.until_first_completion_ms(), Some(39.0));
        assert_eq!(f.until_first_benchmark_ms(), Some(50.0));
    }
}
