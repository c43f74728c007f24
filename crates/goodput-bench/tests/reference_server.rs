//! Drives the real `bench` binary: `bench serve` on a free loopback port, the
//! bytes-only client against it, raw requests for the chat and models routes,
//! then checks the log `bench serve` writes when it stops; and the hyper
//! client against it, which must see and time what the bytes-only one does.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const TTFT_MS: u64 = 20;
const INTERVAL_MS: u64 = 2;

struct Serve {
    child: Child,
    addr: String,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_serve(log: &std::path::Path) -> Serve {
    let mut child = Command::new(env!("CARGO_BIN_EXE_bench"))
        .args(["serve", "--port", "0", "--duration-s", "60"])
        .args([
            "--ttft-ms",
            &TTFT_MS.to_string(),
            "--interval-ms",
            &INTERVAL_MS.to_string(),
        ])
        .arg("--log")
        .arg(log)
        .stdout(Stdio::piped())
        .spawn()
        .expect("bench serve starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("piped stdout"))
        .read_line(&mut line)
        .expect("bench serve prints its address");
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .expect("address line")
        .to_string();
    Serve { child, addr }
}

/// Sends one request and reads until the server's chunked terminator (or a
/// whole Content-Length body); returns the raw response.
fn exchange(addr: &str, request: &str) -> String {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = stream.read(&mut buf).expect("read");
        assert!(
            n > 0,
            "server closed early: {}",
            String::from_utf8_lossy(&response)
        );
        response.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&response);
        if text.ends_with("\r\n0\r\n\r\n")
            || (text.contains("content-length") && text.ends_with('}'))
        {
            return text.into_owned();
        }
    }
}

/// `CLOCK_MONOTONIC` now, ns: the clock the server logs on.
fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn post(path: &str, id: &str, body: &str) -> String {
    format!(
        "POST {path} HTTP/1.1\r\nhost: x\r\nx-request-id: {id}\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
}

#[test]
fn serves_streams_on_schedule_and_logs_every_token() {
    let dir = std::env::temp_dir().join(format!("goodput-bench-it-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log_path = dir.join("server-log.jsonl");
    let timings_path = dir.join("timings.jsonl");
    let started_ns = monotonic_ns();
    let serve = start_serve(&log_path);

    // The bytes-only client: 10 requests over 4 keep-alive connections.
    let output = Command::new(env!("CARGO_BIN_EXE_bench"))
        .args(["bytes-client", "--addr", &serve.addr])
        .args([
            "--concurrency",
            "4",
            "--requests",
            "10",
            "--max-tokens",
            "5",
            "--time-limit-s",
            "30",
        ])
        .arg("--timings")
        .arg(&timings_path)
        .output()
        .expect("bytes client runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let summary: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON summary");
    assert_eq!(summary["ok"], 10);
    assert_eq!(summary["failed"], 0);
    // 5 tokens + usage + [DONE] per response.
    assert_eq!(summary["data_events"], 70);
    let origin = summary["clock_origin_monotonic_ns"]
        .as_u64()
        .expect("clock origin");
    // Per request: sent, then its first token at least TTFT later.
    let timings: Vec<serde_json::Value> = std::fs::read_to_string(&timings_path)
        .expect("timings file")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(timings.len(), 10);
    let mut send_abs = std::collections::HashMap::new();
    for t in &timings {
        assert_eq!(t["ok"], true, "{t}");
        let ttft = t["ttft_ms"].as_f64().unwrap();
        assert!(ttft >= TTFT_MS as f64 && ttft < 5_000.0, "{t}");
        let send = origin + (t["send_s"].as_f64().unwrap() * 1e9) as u64;
        send_abs.insert(format!("bytes-{}", t["request_id"]), send);
    }

    // Chat: a role-only chunk first, then content events, no usage unless asked.
    let chat = exchange(
        &serve.addr,
        &post(
            "/v1/chat/completions",
            "chat-probe",
            r#"{"model":"ref","messages":[{"role":"user","content":"hi"}],"max_tokens":3,"stream":true,"unknown":1}"#,
        ),
    );
    assert!(chat.starts_with("HTTP/1.1 200 OK\r\n"), "{chat}");
    assert!(chat.contains("content-type: text/event-stream"));
    let role = chat
        .find(r#""delta":{"role":"assistant","content":""}"#)
        .expect("role chunk");
    let first_content = chat
        .find(r#""delta":{"content":" the"}"#)
        .expect("content chunk");
    assert!(role < first_content);
    assert_eq!(chat.matches(r#""delta":{"content":" the"}"#).count(), 3);
    assert!(!chat.contains("\"usage\""));
    assert!(chat.contains("data: [DONE]\n\n"));

    let models = exchange(&serve.addr, "GET /v1/models HTTP/1.1\r\nhost: x\r\n\r\n");
    assert!(models.contains(r#""id":"ref""#), "{models}");
    let missing = exchange(&serve.addr, "GET /nope HTTP/1.1\r\nhost: x\r\n\r\n");
    assert!(missing.starts_with("HTTP/1.1 404"), "{missing}");

    // Stop it with Ctrl-C so it writes its log.
    // SAFETY: sending a signal to our own child, which has not been reaped.
    unsafe { libc::kill(serve.child.id() as libc::pid_t, libc::SIGINT) };
    let mut serve = serve;
    let status = serve.child.wait().unwrap();
    assert!(status.success());
    let log = std::fs::read_to_string(&log_path).expect("server log");
    let entries: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(entries.len(), 11);
    let mut ids: Vec<&str> = entries
        .iter()
        .map(|e| e["request_id"].as_str().unwrap())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 11, "every request logged once under its own id");
    let stopped_ns = monotonic_ns();
    for entry in &entries {
        let recv = entry["recv_ns"].as_u64().unwrap();
        // Absolute CLOCK_MONOTONIC, the kernel's receive time a little before
        // the server read the request, and after the client sent it.
        assert!(started_ns < recv && recv < stopped_ns, "{entry}");
        let kernel = entry["kernel_rx_ns"]
            .as_u64()
            .expect("kernel receive timestamp");
        // Slack: the realtime-to-monotonic offset is sampled, not exact.
        let slack = 50_000;
        assert!(kernel <= recv + slack, "{entry}");
        if let Some(&send) = send_abs.get(entry["request_id"].as_str().unwrap()) {
            assert!(send <= kernel + slack, "sent at {send}: {entry}");
        }
        let tokens: Vec<u64> = entry["token_ns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_u64().unwrap())
            .collect();
        let expected = if entry["request_id"] == "chat-probe" {
            3
        } else {
            5
        };
        assert_eq!(tokens.len(), expected);
        assert_eq!(entry["complete"], true);
        // Token i is never written before its absolute deadline.
        for (i, t) in tokens.iter().enumerate() {
            let due = recv + (TTFT_MS + i as u64 * INTERVAL_MS) * 1_000_000;
            assert!(*t >= due, "token {i} written {} ns early", due - t);
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `bench hyper-client`: the same requests as the bytes-only client, the
/// same summary and timings, every event counted, ids `hyper-<id>`.
#[test]
fn the_hyper_client_reads_and_times_what_the_bytes_client_does() {
    let dir = std::env::temp_dir().join(format!("goodput-bench-hyper-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log_path = dir.join("server-log.jsonl");
    let timings_path = dir.join("timings.jsonl");
    let serve = start_serve(&log_path);
    let output = Command::new(env!("CARGO_BIN_EXE_bench"))
        .args(["hyper-client", "--addr", &serve.addr])
        .args([
            "--concurrency",
            "4",
            "--requests",
            "10",
            "--max-tokens",
            "5",
            "--time-limit-s",
            "30",
        ])
        .arg("--timings")
        .arg(&timings_path)
        .output()
        .expect("hyper client runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let summary: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON summary");
    assert_eq!(summary["ok"], 10, "{summary}");
    assert_eq!(summary["failed"], 0, "{summary}");
    // 5 tokens + usage + [DONE] per response.
    assert_eq!(summary["data_events"], 70, "{summary}");
    let timings: Vec<serde_json::Value> = std::fs::read_to_string(&timings_path)
        .expect("timings file")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(timings.len(), 10);
    for t in &timings {
        assert_eq!(t["ok"], true, "{t}");
        let ttft = t["ttft_ms"].as_f64().unwrap();
        assert!(ttft >= TTFT_MS as f64 && ttft < 5_000.0, "{t}");
    }
    // SAFETY: sending a signal to our own child, which has not been reaped.
    unsafe { libc::kill(serve.child.id() as libc::pid_t, libc::SIGINT) };
    let mut serve = serve;
    assert!(serve.child.wait().unwrap().success());
    let log = std::fs::read_to_string(&log_path).expect("server log");
    let mut ids: Vec<String> = log
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["request_id"].to_string())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 10, "{ids:?}");
    assert!(ids.iter().all(|id| id.starts_with("\"hyper-")), "{ids:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}
