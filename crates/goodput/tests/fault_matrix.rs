//! The fault matrix: every way a server, a proxy or the network fails a
//! request, under closed loop, open loop, and open loop with
//! `--max-concurrency`, against real HTTP on loopback.
//!
//! Each mode is one run against the raw scripted server, which picks each
//! request's fate by its id: every other request is normal, the others go
//! through [`FAULTS`] twice. A run must account for every request once
//! (`completed + failed + incomplete = sent`, one record per id, no id read
//! twice by the server: goodput never resends), name each failure's kind as
//! decided below, and still measure the normal requests beside the faulty
//! ones. Two faults need a run of their own: a closed port (connection
//! refused), and a server that closes idle keep-alive connections (a
//! success: such a connection is found closed before reuse and discarded).

mod common;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use common::reply::{request_id, PROXY_PAGE_TITLE, REDIRECT_TO};
use common::*;
use serde_json::Value;

/// What goodput must make of a request.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Expect {
    Ok,
    /// `error_kind: http_status` with this `http_status` (`http_<code>` in `errors.by_kind`).
    Http(u16),
    Kind(&'static str),
}

/// The first TTFT of the script; normal requests must be measured near it.
const TTFT: Duration = Duration::from_millis(60);
/// `--idle-timeout` of the matrix runs.
const IDLE_TIMEOUT: &str = "1s";

/// Each fault and the kind it must get. Why each kind:
const FAULTS: &[(Behavior, Expect)] = &[
    // The server answered, with a status: `http_<code>`, whatever the body
    // (JSON or an HTML page from nginx or a load balancer), and the
    // Retry-After of a 429 or 503 kept on the record for the user to read.
    (Behavior::Status(429), Expect::Http(429)),
    (Behavior::Status(500), Expect::Http(500)),
    (Behavior::StatusHtml(500), Expect::Http(500)),
    (Behavior::Status(503), Expect::Http(503)),
    (Behavior::StatusHtml(503), Expect::Http(503)),
    // A redirect is an answer too, and is not followed: following it would
    // send the request a second time, and goodput never resends one.
    (Behavior::Redirect(301), Expect::Http(301)),
    (Behavior::Redirect(302), Expect::Http(302)),
    // A 200 web page where an event stream was asked for is not the API's
    // answer (a proxy's sign-in page): `malformed`, naming the content
    // type. Parsed as a stream it would find no event and blame a cut.
    (Behavior::HtmlPage, Expect::Kind("malformed")),
    // So is a whole JSON answer from a server that ignored "stream": true:
    // no event came, and the message names the content type instead.
    (Behavior::NotStreamed, Expect::Kind("malformed")),
    // The connection closed or was reset after the request was written and
    // before any answer: nothing says whose failure it was but the broken
    // connection: `stream_cut` (not `connect`: the connection was open). On
    // a reused connection that is also how a server that closes after each
    // response looks (llama.cpp), so the request is resent once on a fresh
    // connection, where it meets the same fate: read at most twice.
    (Behavior::CloseBeforeHead, Expect::Kind("stream_cut")),
    (Behavior::ResetBeforeHead, Expect::Kind("stream_cut")),
    // No byte for --idle-timeout, before the head or mid-stream: `timeout`.
    (
        Behavior::SlowHead(Duration::from_secs(3)),
        Expect::Kind("timeout"),
    ),
    (Behavior::StallAfter(2), Expect::Kind("timeout")),
    // The body ended (properly framed) without [DONE] or a finish reason:
    // the engine stopped mid-answer.
    (Behavior::CutAfter(2), Expect::Kind("stream_cut")),
    // An error object in the stream is the server's own report; so is one
    // sent as a whole 200 JSON answer instead of a stream.
    (Behavior::ErrorAfter(2), Expect::Kind("server_error")),
    (Behavior::JsonError, Expect::Kind("server_error")),
    // An event that is not JSON, or not UTF-8 (an event stream is UTF-8
    // throughout; a proxy re-encoding it breaks it): `malformed`.
    (Behavior::MalformedAfter(2), Expect::Kind("malformed")),
    (Behavior::InvalidUtf8After(2), Expect::Kind("malformed")),
    // A 2xx that said nothing — a finish with zero tokens, or a body that
    // ended, properly framed, before any event — is no answer, and counting
    // it as a success would report a fast server.
    (Behavior::Empty, Expect::Kind("empty_response")),
    (Behavior::EmptyBody, Expect::Kind("empty_response")),
    // `Connection: close` and the connection closed mid-body: with the
    // body delimited by the close, the close *is* its end, so only the
    // missing [DONE] and finish reason show the cut; with a Content-Length
    // the body is short as well. Both: `stream_cut`.
    (
        Behavior::CloseMidBody {
            after: 2,
            length: false,
        },
        Expect::Kind("stream_cut"),
    ),
    (
        Behavior::CloseMidBody {
            after: 2,
            length: true,
        },
        Expect::Kind("stream_cut"),
    ),
    // Chunk extensions and a trailer are valid HTTP/1.1: a success.
    (Behavior::ChunkExtensions, Expect::Ok),
];

/// Every other request is normal; the others cycle through [`FAULTS`].
fn fate(id: u64) -> (Behavior, Expect) {
    if id.is_multiple_of(2) {
        (Behavior::Ok, Expect::Ok)
    } else {
        FAULTS[(id / 2) as usize % FAULTS.len()]
    }
}

/// Requests per run: each fault twice, as many normal ones.
fn requests() -> u64 {
    (FAULTS.len() * 2 * 2) as u64
}

fn by_kind_key(e: Expect) -> Option<String> {
    match e {
        Expect::Ok => None,
        Expect::Http(code) => Some(format!("http_{code}")),
        Expect::Kind(k) => Some(k.to_string()),
    }
}

fn s(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

/// The checks every run shares: every request accounted for once, and the
/// counts in the results the same as the records'. `run.sent_measured`
/// counts the measured requests issued, `run.sent` those that reached the
/// server (a `connect` failure never did).
fn check_accounting(v: &Value, recs: &[Value], n: u64) {
    let (completed, failed, incomplete) = (
        v["completed"].as_u64().unwrap(),
        v["failed"].as_u64().unwrap(),
        v["incomplete"].as_u64().unwrap(),
    );
    assert_eq!(v["run"]["sent_measured"].as_u64(), Some(n), "{}", v["run"]);
    assert_eq!(completed + failed + incomplete, n, "{}", v["errors"]);
    let reached = recs.iter().filter(|r| !r["send_s"].is_null()).count() as u64;
    assert_eq!(v["run"]["sent"].as_u64(), Some(reached), "{}", v["run"]);
    assert_eq!(incomplete, 0);
    let mut ids: Vec<u64> = recs
        .iter()
        .map(|r| r["request_id"].as_u64().unwrap())
        .collect();
    ids.sort_unstable();
    let count = ids.len();
    ids.dedup();
    assert_eq!(
        (count, ids.len()),
        (n as usize, n as usize),
        "one record per request id: {ids:?}"
    );
    assert!(recs.iter().all(|r| r["phase"] == "measure"));
    assert_eq!(
        recs.iter().filter(|r| r["ok"] == true).count() as u64,
        completed
    );
}

/// No request was read twice by the server, but one whose reused
/// connection closed before any byte of an answer (resent once, fresh).
fn check_sent_once(server: &ScriptedServer) {
    let seen = server.seen.lock().unwrap().clone();
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for tag in &seen {
        *counts.entry(tag.as_str()).or_default() += 1;
    }
    let resendable = |tag: &str| {
        request_id(tag).is_some_and(|id| {
            matches!(
                fate(id).0,
                Behavior::CloseBeforeHead | Behavior::ResetBeforeHead
            )
        })
    };
    let twice: Vec<_> = counts
        .iter()
        .filter(|(tag, &n)| n > 2 || (n == 2 && !resendable(tag)))
        .collect();
    assert!(twice.is_empty(), "read more than once: {twice:?}");
}

/// One mode of the matrix: the mixed run, then a run against a closed port.
async fn matrix(mode: &[&str]) {
    let server = start_raw(Script {
        ttft: TTFT,
        interval: Duration::from_millis(5),
        events: 4,
        behavior: Arc::new(|id| fate(id).0),
        ..Script::default()
    })
    .await;
    let n = requests();
    let (records, out) = (tmp("records.jsonl"), tmp("results.json"));
    let mut args = vec![
        "run".to_string(),
        "--url".into(),
        server.url(),
        "--num-prompts".into(),
        n.to_string(),
        "--input-tokens".into(),
        "8".into(),
        "--output-tokens".into(),
        "4".into(),
        "--timeout".into(),
        "10s".into(),
        "--idle-timeout".into(),
        IDLE_TIMEOUT.into(),
        "--records".into(),
        records.to_str().unwrap().into(),
        "--out".into(),
        out.to_str().unwrap().into(),
        "--quiet".into(),
    ];
    args.extend(mode.iter().map(|a| a.to_string()));
    let (code, stdout, stderr) = goodput_async(args).await;
    assert_eq!(code, 1, "half the requests failed: {stdout}\n{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let v = read_json(&out);
    let recs = read_records(&records);
    check_accounting(&v, &recs, n);
    check_sent_once(&server);

    // Each failure under its kind, in the records and in the results.
    let mut expected: BTreeMap<String, u64> = BTreeMap::new();
    for r in &recs {
        let id = r["request_id"].as_u64().unwrap();
        let (behavior, expect) = fate(id);
        let what = format!("request {id} ({behavior:?}): {r}");
        match expect {
            Expect::Ok => {
                assert_eq!(r["ok"], true, "{what}");
                let ttft = r["ttft_ms"].as_f64().unwrap();
                assert!(
                    (ttft - ms(TTFT)).abs() < 50.0,
                    "TTFT {ttft:.1} ms, scripted {} ms: {what}",
                    ms(TTFT)
                );
                assert_eq!(r["output_tokens"], 4, "{what}");
            }
            Expect::Http(code) => {
                assert_eq!(
                    (s(&r["error_kind"]), r["http_status"].as_u64()),
                    ("http_status", Some(code as u64)),
                    "{what}"
                );
            }
            Expect::Kind(kind) => assert_eq!(s(&r["error_kind"]), kind, "{what}"),
        }
        if let Some(k) = by_kind_key(expect) {
            *expected.entry(k).or_default() += 1;
        }
        // What each message must say for the user to act on it.
        let error = s(&r["error"]);
        let says = |needle: &str| {
            assert!(
                error.contains(needle),
                "'{needle}' not in the message: {what}"
            )
        };
        match behavior {
            Behavior::Status(429 | 503) | Behavior::StatusHtml(503) => {
                assert_eq!(r["retry_after"], "7", "{what}")
            }
            Behavior::StatusHtml(code) => {
                says(&format!("HTTP {code}: an HTML page titled \"{code} "))
            }
            Behavior::Redirect(_) => says(&format!("a redirect to {REDIRECT_TO}, not followed")),
            Behavior::HtmlPage => {
                says("content-type text/html");
                says(PROXY_PAGE_TITLE);
            }
            Behavior::NotStreamed => says("content-type application/json and not one event"),
            Behavior::JsonError => says("scripted overload (HTTP 200: an error object"),
            Behavior::InvalidUtf8After(_) => says("not valid UTF-8"),
            Behavior::EmptyBody => says("empty body"),
            Behavior::ResetBeforeHead => says("before any byte of the response"),
            Behavior::CloseBeforeHead => says("before the response head"),
            _ => {}
        }
        if !matches!(
            behavior,
            Behavior::Status(429 | 503) | Behavior::StatusHtml(503)
        ) {
            assert!(r["retry_after"].is_null(), "{what}");
        }
    }
    let by_kind: BTreeMap<String, u64> =
        serde_json::from_value(v["errors"]["by_kind"].clone()).unwrap();
    assert_eq!(by_kind, expected);

    // Connection refused: a closed port, every request `connect`, none sent.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let (records, out) = (tmp("records.jsonl"), tmp("results.json"));
    let mut args = six_requests(&format!("http://127.0.0.1:{port}"), &records, &out, mode);
    args.extend(argv(&["--model", "m"]));
    let (code, _, stderr) = goodput_async(args).await;
    assert_eq!(code, 3, "nothing completed: {stderr}");
    let v = read_json(&out);
    let recs = read_records(&records);
    check_accounting(&v, &recs, 6);
    assert_eq!(v["errors"]["by_kind"], serde_json::json!({"connect": 6}));
    for r in &recs {
        assert_eq!(r["error_kind"], "connect", "{r}");
        assert!(
            r["send_s"].is_null() && r["ttft_ms"].is_null(),
            "never sent: {r}"
        );
        assert!(s(&r["error"]).contains("refused"), "{r}");
    }
}

/// A quiet run of six small requests against `url`, with records and
/// results, in the load `mode`.
fn six_requests(
    url: &str,
    records: &std::path::Path,
    out: &std::path::Path,
    mode: &[&str],
) -> Vec<String> {
    let mut args = argv(&[
        "run",
        "--url",
        url,
        "--num-prompts",
        "6",
        "--input-tokens",
        "8",
        "--output-tokens",
        "4",
        "--records",
        records.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ]);
    args.extend(argv(mode));
    args
}

/// A server closing keep-alive connections idle for 60 ms, and requests
/// that leave them idle longer: closed loop through sessions whose users
/// think between turns, open loop at 5 requests/s.
async fn idle_close(mode: &[&str]) {
    let server = start_raw(Script {
        idle_close: Some(Duration::from_millis(60)),
        ..Script::quick()
    })
    .await;
    let (records, out) = (tmp("records.jsonl"), tmp("results.json"));
    let args = six_requests(&server.url(), &records, &out, mode);
    let (code, stdout, stderr) = goodput_async(args).await;
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let v = read_json(&out);
    let recs = read_records(&records);
    check_accounting(&v, &recs, 6);
    assert_eq!(v["completed"], 6);
    assert!(
        v["run"]["stale_connections_discarded"].as_u64().unwrap() >= 2,
        "{}",
        v["run"]
    );
    check_sent_once(&server);
}

const CLOSED: &[&str] = &["--concurrency", "6"];
const OPEN: &[&str] = &["--request-rate", "40"];
const OPEN_CAPPED: &[&str] = &["--request-rate", "40", "--max-concurrency", "6"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fault_in_closed_loop() {
    matrix(CLOSED).await;
    idle_close(&[
        "--concurrency",
        "2",
        "--turns",
        "3",
        "--think-time",
        "250ms",
    ])
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fault_in_open_loop() {
    matrix(OPEN).await;
    idle_close(&["--request-rate", "5", "--arrival", "constant"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fault_in_open_loop_with_a_concurrency_cap() {
    matrix(OPEN_CAPPED).await;
    idle_close(&[
        "--request-rate",
        "5",
        "--arrival",
        "constant",
        "--max-concurrency",
        "1",
    ])
    .await;
}
