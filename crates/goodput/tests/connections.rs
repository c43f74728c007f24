//! Connections and their records: what the client does when a server
//! closes, resets or never answers a connection (requests never sent have
//! no send time; a request is resent once only when no byte of its answer
//! came; idle connections closed by the server are discarded before
//! reuse), that every record carries its end time, and that the process
//! has room for its connections before it opens them. Against a raw
//! HTTP/1.1 server with full control over its connections.

mod common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

// ---------------------------------------------------------------------------
// A raw HTTP/1.1 server: full control over connections (keep-alive, closing
// idle connections, closing after reading a request).

/// What the raw server does with the n-th request (0-based) on a connection.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Action {
    Respond,
    /// Read the request, then close the connection without a byte of answer.
    CloseAfterRead,
    /// Answer with a head promising keep-alive, then close (llama.cpp's
    /// `llama-server` after every streamed response).
    RespondThenClose,
    /// Read the request, write the response head, then close.
    HeadThenClose,
}

struct RawServer {
    addr: std::net::SocketAddr,
    /// Request ids (the x-request-id suffix) in the order they were read.
    seen: Arc<Mutex<Vec<String>>>,
}

async fn read_request(sock: &mut TcpStream, buf: &mut Vec<u8>) -> Option<(String, String)> {
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_string();
            let len: usize = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse().unwrap_or(0))
                })
                .unwrap_or(0);
            while buf.len() < end + 4 + len {
                let mut tmp = [0u8; 4096];
                let n = sock.read(&mut tmp).await.ok()?;
                if n == 0 {
                    return None;
                }
                buf.extend_from_slice(&tmp[..n]);
            }
            buf.drain(..end + 4 + len);
            let path = head.split_whitespace().nth(1).unwrap_or("").to_string();
            let id = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("x-request-id:")
                        .map(|v| v.trim().to_string())
                })
                .unwrap_or_default();
            return Some((path, id));
        }
        let mut tmp = [0u8; 4096];
        let n = sock.read(&mut tmp).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&tmp[..n]);
    }
}

const SSE: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" the\"},\"finish_reason\":null}]}\n\n\
data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" cat\"},\"finish_reason\":\"length\"}]}\n\n\
data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2}}\n\n\
data: [DONE]\n\n";

/// `policy(request index on the connection)`; `idle_close`: close a
/// keep-alive connection after this long without a request.
async fn raw_server(policy: fn(usize) -> Action, idle_close: Option<Duration>) -> RawServer {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen2 = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let seen = seen2.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                for n in 0.. {
                    let req = match idle_close {
                        Some(d) => {
                            match tokio::time::timeout(d, read_request(&mut sock, &mut buf)).await {
                                Ok(r) => r,
                                Err(_) => return, // idle: close the keep-alive connection
                            }
                        }
                        None => read_request(&mut sock, &mut buf).await,
                    };
                    let Some((path, id)) = req else { return };
                    if path.ends_with("/models") {
                        let body = r#"{"data":[{"id":"raw"}]}"#;
                        let _ = sock.write_all(format!("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}", body.len()).as_bytes()).await;
                        continue;
                    }
                    seen.lock()
                        .unwrap()
                        .push(id.rsplit('-').next().unwrap_or("").to_string());
                    let action = policy(n);
                    if action == Action::CloseAfterRead {
                        return;
                    }
                    let head = format!("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nkeep-alive: timeout=5, max=100\r\ncontent-length: {}\r\n\r\n", SSE.len());
                    if action == Action::HeadThenClose {
                        let _ = sock.write_all(head.as_bytes()).await;
                        return;
                    }
                    let _ = sock.write_all(format!("{head}{SSE}").as_bytes()).await;
                    if action == Action::RespondThenClose {
                        return;
                    }
                }
            });
        }
    });
    RawServer { addr, seen }
}

fn counts(seen: &[String]) -> HashMap<String, usize> {
    let mut m = HashMap::new();
    for id in seen {
        *m.entry(id.clone()).or_insert(0) += 1;
    }
    m
}

// ---------------------------------------------------------------------------

/// A request that never got a connection has no send time, no
/// schedule lag and no connect time, and is a client-side failure.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_that_never_got_a_connection_have_no_send_time() {
    let server = start(Script::quick()).await;
    let records = tmp("records.jsonl");
    let out = tmp("results.json");
    let url = server.url();
    let (records_arg, out_arg) = (
        records.to_str().unwrap().to_string(),
        out.to_str().unwrap().to_string(),
    );
    let output = tokio::task::spawn_blocking(move || {
        let mut cmd = goodput_command();
        cmd.args([
            "run",
            "--url",
            &url,
            // Open loop without a cap: the descriptors needed cannot be
            // known before sending, so the run goes ahead and meets EMFILE.
            "--request-rate",
            "inf",
            "--num-prompts",
            "300",
            "--input-tokens",
            "16",
            "--output-tokens",
            "4",
            "--records",
            &records_arg,
            "--out",
            &out_arg,
            "--quiet",
            "--warmup",
            "0",
        ]);
        // A hard limit of 64 descriptors cannot be raised, so some connects
        // fail with EMFILE.
        limit_open_files(&mut cmd, 64);
        cmd.output().unwrap()
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let recs = read_records(&records);
    assert_eq!(recs.len(), 300, "{stderr}");
    let never_sent: Vec<&serde_json::Value> =
        recs.iter().filter(|r| r["send_s"].is_null()).collect();
    assert!(
        !never_sent.is_empty(),
        "the descriptor limit must bite for this test to mean anything: {stderr}"
    );
    for r in &never_sent {
        assert_eq!(r["error_kind"], "client_limit", "{r}");
        assert!(
            r["schedule_lag_ms"].is_null() && r["connect_ms"].is_null() && r["ttft_ms"].is_null(),
            "{r}"
        );
        assert!(r["done_s"].as_f64().unwrap() >= r["sched_s"].as_f64().unwrap());
    }
    assert!(recs.iter().filter(|r| r["ok"] == true).count() > 0);
    let v = read_json(&out);
    assert!(
        v["schedule_lag"]["min_ms"].as_f64().unwrap() >= 0.0,
        "{}",
        v["schedule_lag"]
    );
    assert_eq!(
        v["schedule_lag"]["count"].as_u64().unwrap(),
        300 - never_sent.len() as u64
    );
    assert_eq!(
        v["errors"]["by_kind"]["client_limit"].as_u64().unwrap(),
        never_sent.len() as u64
    );
    assert!(
        v["errors"]["by_kind"].get("connect").is_none(),
        "the client's own limit is never a connect error"
    );
    // The duration starts at the first real send, not at the run clock's origin.
    let first_send = recs
        .iter()
        .filter_map(|r| r["send_s"].as_f64())
        .fold(f64::MAX, f64::min);
    let last_done = recs
        .iter()
        .filter(|r| !r["send_s"].is_null())
        .map(|r| r["done_s"].as_f64().unwrap())
        .fold(0.0, f64::max);
    assert!((v["duration"].as_f64().unwrap() - (last_done - first_send)).abs() < 0.01);
}

/// The process runs off transparent huge pages (set from its initializers,
/// before the allocator's first page; `BENCHMARKS.md` has what they cost):
/// the kernel says so for a run waiting on model discovery, and the
/// descriptor table is already grown for its connections.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_is_off_huge_pages_and_its_descriptor_table_is_grown_before_it_connects() {
    let (addr, accepted) = silent_server().await;
    let url = format!("http://{addr}");
    // As many streams as the hard descriptor limit allows, up to 3,000
    // (goodput raises its soft limit to the hard one).
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit on a properly initialised struct.
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) }, 0);
    let streams = 3_000u64.min(lim.rlim_max.saturating_sub(100));
    let mut child = spawn_goodput(&["run", "--url", &url, "--concurrency", &streams.to_string()]);
    let seen = accepted.clone();
    wait_until("discovery started", Duration::from_secs(30), move || {
        seen.load(std::sync::atomic::Ordering::SeqCst) > 0
    })
    .await;
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap();
    child.kill().unwrap();
    let _ = child.wait();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.trim().to_string())
    };
    // Kernels before 5.0 do not report it.
    if let Some(thp) = field("THP_enabled:") {
        assert_eq!(thp, "0", "{status}");
    }
    let fds: u64 = field("FDSize:").unwrap().parse().unwrap();
    assert!(
        fds >= streams,
        "FDSize {fds} before {streams} streams connect"
    );
}

/// A pooled connection the server closed while idle is
/// found closed before anything is written on it, discarded and counted;
/// every request reaches the server exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_closed_while_idle_are_discarded_before_reuse() {
    let server = raw_server(|_| Action::Respond, Some(Duration::from_millis(60))).await;
    let out = tmp("results.json");
    let (code, stdout, err) = goodput_async(argv(&[
        "run",
        "--url",
        &format!("http://{}", server.addr),
        "--request-rate",
        "4",
        "--arrival",
        "constant",
        "--num-prompts",
        "5",
        "--input-tokens",
        "8",
        "--output-tokens",
        "2",
        "--no-pin-output",
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ]))
    .await;
    assert_eq!(code, 0, "{stdout}\n{err}");
    let v = read_json(&out);
    assert_eq!(v["completed"], 5);
    assert!(
        v["run"]["stale_connections_discarded"].as_u64().unwrap() >= 3,
        "{}",
        v["run"]
    );
    let seen = server.seen.lock().unwrap().clone();
    assert!(
        counts(&seen).values().all(|&n| n == 1),
        "a request was sent twice: {seen:?}"
    );
}

/// A reused connection the server closed before a
/// byte of the answer (it had closed its side after the last response, or
/// it read the request and dropped it) gets the request once more on a
/// fresh connection, never twice; once any byte of the answer arrived, the
/// server may have worked on it and the request fails instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_is_resent_once_only_when_no_byte_of_the_answer_came() {
    // Every connection answers its first request, then reads the second and closes.
    let server = raw_server(
        |n| {
            if n == 0 {
                Action::Respond
            } else {
                Action::CloseAfterRead
            }
        },
        None,
    )
    .await;
    let records = tmp("records.jsonl");
    let out = tmp("results.json");
    let (code, stdout, err) = goodput_async(argv(&[
        "run",
        "--url",
        &format!("http://{}", server.addr),
        "--concurrency",
        "1",
        "--num-prompts",
        "3",
        "--input-tokens",
        "8",
        "--output-tokens",
        "2",
        "--no-pin-output",
        "--records",
        records.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ]))
    .await;
    assert_eq!(code, 0, "{stdout}\n{err}");
    let recs = read_records(&records);
    assert_eq!(recs.len(), 3, "{stdout}\n{err}");
    assert!(recs.iter().all(|r| r["ok"] == true), "{recs:?}");
    let seen = server.seen.lock().unwrap().clone();
    assert!(
        counts(&seen).values().all(|&n| n <= 2),
        "a request was sent three times: {seen:?}"
    );
    let v = read_json(&out);
    assert!(
        v["run"]["stale_reuse_resent"].as_u64().unwrap() >= 1,
        "{}",
        v["run"]
    );
    assert_eq!(v["failed"], 0);

    // The head arrived, then the connection closed: not resent.
    let server = raw_server(
        |n| {
            if n == 0 {
                Action::Respond
            } else {
                Action::HeadThenClose
            }
        },
        None,
    )
    .await;
    let records = tmp("records-cut.jsonl");
    let (_, stdout, err) = goodput_async(argv(&[
        "run",
        "--url",
        &format!("http://{}", server.addr),
        "--concurrency",
        "1",
        "--num-prompts",
        "3",
        "--input-tokens",
        "8",
        "--output-tokens",
        "2",
        "--no-pin-output",
        "--records",
        records.to_str().unwrap(),
        "--quiet",
    ]))
    .await;
    let recs = read_records(&records);
    assert_eq!(recs.len(), 3, "{stdout}\n{err}");
    let seen = server.seen.lock().unwrap().clone();
    assert!(
        counts(&seen).values().all(|&n| n == 1),
        "a request was sent twice: {seen:?}"
    );
    assert_eq!(recs[0]["ok"], true);
    assert_eq!(recs[1]["error_kind"], "stream_cut", "{}", recs[1]);
    assert_eq!(
        recs[2]["ok"], true,
        "the next request opens a new connection"
    );
}

/// A server that closes after every response while its headers promise
/// keep-alive (llama.cpp's `llama-server`): a closed loop writes its next
/// request before the close arrives; none of those may count as a failure.
/// The client resends them, then stops pooling and says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_closing_after_each_response_is_no_failure() {
    let server = raw_server(|_| Action::RespondThenClose, None).await;
    let out = tmp("results.json");
    let (code, stdout, err) = goodput_async(argv(&[
        "run",
        "--url",
        &format!("http://{}", server.addr),
        "--concurrency",
        "4",
        "--num-prompts",
        "60",
        "--input-tokens",
        "8",
        "--output-tokens",
        "2",
        "--no-pin-output",
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ]))
    .await;
    assert_eq!(code, 0, "{stdout}\n{err}");
    let v = read_json(&out);
    assert_eq!(v["completed"], 60, "{}", v["run"]);
    assert_eq!(v["failed"], 0, "{}", v["errors"]);
    let run = &v["run"];
    let closes = run["stale_connections_discarded"].as_u64().unwrap()
        + run["stale_reuse_resent"].as_u64().unwrap();
    assert!(closes >= 8, "{run}");
    assert_eq!(run["connection_pooling_stopped"], true, "{run}");
    assert!(
        run["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().contains("stopped reusing connections")),
        "{run}"
    );
    let seen = server.seen.lock().unwrap().clone();
    assert!(
        counts(&seen).values().all(|&n| n == 1),
        "a request reached the server twice: {seen:?}"
    );
}

/// Every record says when its response ended or failed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_record_carries_its_end_time() {
    use common::Behavior;
    let server = start(Script {
        behavior: Arc::new(|id| match id % 3 {
            1 => Behavior::Status(500),
            2 => Behavior::CutAfter(2),
            _ => Behavior::Ok,
        }),
        ..Script::quick()
    })
    .await;
    let records = tmp("records.jsonl");
    let _ = goodput_async(argv(&[
        "run",
        "--url",
        &server.url(),
        "--concurrency",
        "2",
        "--num-prompts",
        "9",
        "--input-tokens",
        "8",
        "--output-tokens",
        "4",
        "--records",
        records.to_str().unwrap(),
        "--quiet",
    ]))
    .await;
    let recs = read_records(&records);
    assert_eq!(recs.len(), 9);
    for r in &recs {
        let done = r["done_s"]
            .as_f64()
            .unwrap_or_else(|| panic!("no done_s: {r}"));
        assert!(done >= r["send_s"].as_f64().unwrap(), "{r}");
        if r["error_kind"] == "stream_cut" {
            // The cut came after the last token.
            assert!(
                done * 1e3
                    >= r["send_s"].as_f64().unwrap() * 1e3 + r["e2el_ms"].as_f64().unwrap() - 0.01,
                "{r}"
            );
        }
    }
    assert!(recs.iter().any(|r| r["error_kind"] == "http_status"));
}
