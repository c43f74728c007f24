//! A scripted OpenAI-compatible streaming server for integration tests.
//!
//! It streams on a known schedule (first content event `ttft` after the
//! request is read, then one event every `interval`), logs its own receive
//! and write times per request, and misbehaves on demand, chosen per request
//! by the integer suffix of the `x-request-id` header goodput sends. Each
//! answer is a [`reply::Reply`], played by hyper ([`start`], [`start_tls`])
//! or, for what hyper will not do to a connection, over raw TCP
//! ([`start_raw`]). Also: helpers to run, spawn and signal the binary.
#![allow(dead_code)]

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::sync::mpsc;

pub mod raw;
pub mod reply;
pub mod shards;

#[allow(unused_imports)]
pub use raw::start_raw;
use reply::{Framing, HeadPlan, Incoming, Step};

/// What the server does with one request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Behavior {
    Ok,
    /// Answer with this status and a JSON error body (and `Retry-After: 7`
    /// for 429/503).
    Status(u16),
    /// Answer with this status and an HTML error page, as nginx or a load
    /// balancer in front of the server does (`Retry-After: 7` for 429/503).
    StatusHtml(u16),
    /// Redirect (301, 302...) to [`reply::REDIRECT_TO`].
    Redirect(u16),
    /// A 200 `text/html` page where a stream was asked for: what a proxy's
    /// sign-in page looks like to a client.
    HtmlPage,
    /// A whole JSON completion (`application/json`) where a stream was
    /// asked for, as a server that ignores `"stream": true` answers.
    NotStreamed,
    /// A 200 `application/json` error object where a stream was asked for.
    JsonError,
    /// Read the request and never answer, the connection open.
    Hang,
    /// Send the response head only after this long.
    SlowHead(Duration),
    /// Close the stream after this many content events, without `[DONE]`.
    CutAfter(usize),
    /// Stop sending (but keep the connection open) after this many events.
    StallAfter(usize),
    /// Send a non-JSON event after this many events.
    MalformedAfter(usize),
    /// Send an in-stream error object after this many events.
    ErrorAfter(usize),
    /// Send a plain-text event (`data: channel closed`) and then `[DONE]`
    /// after this many events, as an engine whose worker died does.
    TextErrorAfter(usize),
    /// After this many events, an event whose JSON string holds bytes that
    /// are not UTF-8.
    InvalidUtf8After(usize),
    /// A 200 stream with no content: the role chunk, a `stop` finish with
    /// zero tokens, `[DONE]`.
    Empty,
    /// A 200 `text/event-stream` whose body is empty (properly framed).
    EmptyBody,
    /// 401 whose body echoes the request's `Authorization` and `X-Api-Key`
    /// headers, as some gateways do.
    EchoAuth,
    /// Raw server only: read the request, then close the connection before
    /// any byte of the answer.
    CloseBeforeHead,
    /// Raw server only: read the request, then reset the connection (RST).
    ResetBeforeHead,
    /// Raw server only: `Connection: close`, the body delimited by the close
    /// (`length`: with a `Content-Length` promising more than is sent), and
    /// the connection closed after this many content events.
    CloseMidBody {
        after: usize,
        length: bool,
    },
    /// Raw server only: a normal stream whose every chunk carries a chunk
    /// extension and whose body ends with a trailer.
    ChunkExtensions,
}

#[derive(Clone)]
pub struct Script {
    pub ttft: Duration,
    pub interval: Duration,
    pub events: usize,
    /// Words per content event (each word is one token).
    pub tokens_per_event: usize,
    /// Chat: send a role-only chunk at once, like vLLM.
    pub role_chunk: bool,
    pub usage: bool,
    /// Answer 400 to requests carrying `min_tokens` or `ignore_eos`, as hosted APIs do.
    pub reject_pinning: bool,
    /// The text of one token (" the" by default: one token in o200k too).
    pub word: &'static str,
    /// The last event's finish reason ("length" by default).
    pub finish: &'static str,
    pub behavior: Arc<dyn Fn(u64) -> Behavior + Send + Sync>,
    /// What the pinning probe gets (`Ok`, or `Hang` to hold goodput in its probe).
    pub probe: Behavior,
    /// What `/v1/models` gets (`Ok`, or `Hang` to hold goodput in discovery).
    pub models: Behavior,
    /// Raw server only: close a keep-alive connection that carried no
    /// request for this long, as servers with a keep-alive timeout do.
    pub idle_close: Option<Duration>,
    /// The first this many events carry `reasoning_content` (a reasoning model).
    pub reasoning_events: usize,
}

impl Script {
    /// A short, fast stream: first token after 5 ms, 4 events 2 ms apart.
    pub fn quick() -> Script {
        Script {
            ttft: Duration::from_millis(5),
            interval: Duration::from_millis(2),
            events: 4,
            ..Script::default()
        }
    }
}

impl Default for Script {
    fn default() -> Self {
        Script {
            ttft: Duration::from_millis(100),
            interval: Duration::from_millis(10),
            events: 20,
            tokens_per_event: 1,
            role_chunk: true,
            usage: true,
            reject_pinning: false,
            word: " the",
            finish: "length",
            behavior: Arc::new(|_| Behavior::Ok),
            probe: Behavior::Ok,
            models: Behavior::Ok,
            idle_close: None,
            reasoning_events: 0,
        }
    }
}

/// What the server did for one request.
#[derive(Debug, Clone)]
pub struct LogEntry {
    pub request_tag: String,
    pub received: Instant,
    /// When each content event was handed to the connection.
    pub writes: Vec<Instant>,
}

pub struct ScriptedServer {
    pub addr: SocketAddr,
    pub log: Arc<Mutex<Vec<LogEntry>>>,
    /// The `x-request-id` of every request read, in order, whatever its
    /// answer (a request read twice was sent twice).
    pub seen: Arc<Mutex<Vec<String>>>,
    _shutdown: tokio::sync::oneshot::Sender<()>,
}

impl ScriptedServer {
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn tls_url(&self) -> String {
        format!("https://localhost:{}", self.addr.port())
    }

    /// Log entries of measured requests, keyed by request id.
    pub fn by_id(&self) -> std::collections::HashMap<u64, LogEntry> {
        self.log
            .lock()
            .unwrap()
            .iter()
            .filter_map(|e| Some((e.request_tag.rsplit('-').next()?.parse().ok()?, e.clone())))
            .collect()
    }
}

pub async fn start(script: Script) -> ScriptedServer {
    start_with(script, None).await
}

/// The same server behind TLS, with a fresh self-signed certificate for `localhost`.
pub async fn start_tls(script: Script) -> ScriptedServer {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let der = rustls::pki_types::CertificateDer::from(cert.cert.der().to_vec());
    let key = rustls::pki_types::PrivateKeyDer::try_from(cert.signing_key.serialize_der()).unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![der], key)
    .unwrap();
    start_with(
        script,
        Some(tokio_rustls::TlsAcceptor::from(Arc::new(config))),
    )
    .await
}

pub async fn start_with(script: Script, tls: Option<tokio_rustls::TlsAcceptor>) -> ScriptedServer {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (tx, mut rx) = tokio::sync::oneshot::channel::<()>();
    let (log2, seen2) = (log.clone(), seen.clone());
    tokio::spawn(async move {
        loop {
            let (stream, _) = tokio::select! {
                r = listener.accept() => match r { Ok(s) => s, Err(_) => continue },
                _ = &mut rx => break,
            };
            // Each event goes out when written, as LLM servers send them
            // (Nagle would hold a small write behind an unacknowledged one).
            let _ = stream.set_nodelay(true);
            let script = script.clone();
            let (log, seen) = (log2.clone(), seen2.clone());
            let tls = tls.clone();
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |req| {
                    handle(req, script.clone(), log.clone(), seen.clone())
                });
                let http = hyper::server::conn::http1::Builder::new();
                let _ = match tls {
                    None => http.serve_connection(TokioIo::new(stream), svc).await,
                    Some(acceptor) => match acceptor.accept(stream).await {
                        Ok(s) => http.serve_connection(TokioIo::new(s), svc).await,
                        Err(_) => return,
                    },
                };
            });
        }
    });
    ScriptedServer {
        addr,
        log,
        seen,
        _shutdown: tx,
    }
}

type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

async fn handle(
    req: Request<hyper::body::Incoming>,
    script: Script,
    log: Arc<Mutex<Vec<LogEntry>>>,
    seen: Arc<Mutex<Vec<String>>>,
) -> Result<Response<Body>, Infallible> {
    let header = |name: &str| {
        req.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let tag = header("x-request-id").unwrap_or_default();
    let echoed = ["authorization", "x-api-key"]
        .iter()
        .filter_map(|h| header(h))
        .collect::<Vec<_>>()
        .join(" / ");
    let path = req.uri().path().to_string();
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let received = Instant::now();
    seen.lock().unwrap().push(tag.clone());
    let incoming = Incoming {
        tag,
        path,
        body: serde_json::from_slice(&body).unwrap_or_default(),
        echoed,
    };
    let r = reply::reply(&script, &incoming);
    match r.head {
        HeadPlan::At(d) => tokio::time::sleep_until((received + d).into()).await,
        HeadPlan::Never => std::future::pending::<()>().await,
        // hyper cannot drop a connection before its head: a test that
        // scripts it must serve with start_raw, and is wrong otherwise.
        HeadPlan::Close | HeadPlan::Reset => {
            panic!(
                "{:?} needs the raw server: start the test with start_raw",
                r.head
            )
        }
    }
    let mut resp = match r.framing {
        Framing::Length => {
            let mut body = Vec::new();
            let mut writes = Vec::new();
            for step in &r.steps {
                if let Step::Send { bytes, content } = step {
                    body.extend_from_slice(bytes);
                    if *content {
                        writes.push(Instant::now());
                    }
                }
            }
            if let Some(tag) = r.log_tag.clone() {
                log.lock().unwrap().push(LogEntry {
                    request_tag: tag,
                    received,
                    writes,
                });
            }
            Response::new(BodyExt::boxed(Full::new(Bytes::from(body))))
        }
        Framing::Chunked { extensions: false } => {
            let (tx, rx) = mpsc::channel::<Result<Frame<Bytes>, Infallible>>(64);
            let (steps, tag) = (r.steps.clone(), r.log_tag.clone());
            tokio::spawn(async move {
                let mut writes = Vec::new();
                for step in steps {
                    match step {
                        Step::At(d) => tokio::time::sleep_until((received + d).into()).await,
                        Step::Stall(d) => tokio::time::sleep(d).await,
                        Step::Send { bytes, content } => {
                            if content {
                                writes.push(Instant::now());
                            }
                            if tx.send(Ok(Frame::data(Bytes::from(bytes)))).await.is_err() {
                                break;
                            }
                        }
                    }
                }
                if let Some(tag) = tag {
                    log.lock().unwrap().push(LogEntry {
                        request_tag: tag,
                        received,
                        writes,
                    });
                }
                // Dropping tx ends the body (properly framed).
            });
            Response::new(BodyExt::boxed(StreamBody::new(tokio_stream_from(rx))))
        }
        // Chunk extensions and close-delimited bodies are written by hand.
        other => panic!("{other:?} needs the raw server: start the test with start_raw"),
    };
    *resp.status_mut() = hyper::StatusCode::from_u16(r.status).unwrap();
    for (name, value) in &r.headers {
        resp.headers_mut().insert(*name, value.parse().unwrap());
    }
    Ok(resp)
}

/// Adapt an mpsc receiver into a `Stream` without extra crates.
fn tokio_stream_from<T>(rx: mpsc::Receiver<T>) -> impl futures_core::Stream<Item = T> {
    ReceiverStream(rx)
}

struct ReceiverStream<T>(mpsc::Receiver<T>);

impl<T> futures_core::Stream for ReceiverStream<T> {
    type Item = T;
    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<T>> {
        self.0.poll_recv(cx)
    }
}

/// The arguments with `--warmup 0` added to `run` and `sweep` when they do
/// not set a warm-up: these tests count requests, and the default (`auto`)
/// warm-up would add requests of its own. Tests of the warm-up set it.
pub fn pinned(args: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let measuring = matches!(args.first(), Some(&"run") | Some(&"sweep"));
    if measuring && !args.contains(&"--warmup") && !args.iter().any(|a| a.starts_with("--warmup="))
    {
        v.extend(["--warmup".to_string(), "0".to_string()]);
    }
    v
}

/// Owned arguments, for `goodput_async`.
pub fn argv(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

/// The proxy variables goodput honours: removed from every child, so a
/// machine's own proxy settings never route the tests' loopback traffic
/// (the proxy tests set them explicitly).
pub const PROXY_VARS: [&str; 8] = [
    "http_proxy",
    "HTTP_PROXY",
    "https_proxy",
    "HTTPS_PROXY",
    "all_proxy",
    "ALL_PROXY",
    "no_proxy",
    "NO_PROXY",
];

/// A command for the goodput binary with the proxy variables removed.
pub fn goodput_command() -> std::process::Command {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_goodput"));
    for v in PROXY_VARS {
        c.env_remove(v);
    }
    c
}

/// Give the child `cmd` starts a hard open-files limit of `n`, which it
/// cannot raise (set between fork and exec).
pub fn limit_open_files(cmd: &mut std::process::Command, n: u64) {
    use std::os::unix::process::CommandExt;
    // SAFETY: setrlimit in the child before exec, on a local struct.
    unsafe {
        cmd.pre_exec(move || {
            let lim = libc::rlimit {
                rlim_cur: n as libc::rlim_t,
                rlim_max: n as libc::rlim_t,
            };
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
            Ok(())
        });
    }
}

/// Run the goodput binary with these arguments; returns (exit code, stdout, stderr).
pub fn goodput(args: &[&str]) -> (i32, String, String) {
    let out = goodput_command()
        .args(pinned(args))
        .output()
        .expect("run goodput");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Run goodput on a blocking thread so the scripted server keeps serving.
pub async fn goodput_async(args: Vec<String>) -> (i32, String, String) {
    tokio::task::spawn_blocking(move || {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        goodput(&refs)
    })
    .await
    .unwrap()
}

pub fn read_records(path: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// A fresh path in a new temporary directory. The name holds the time as
/// well as the process id: a process id is reused, and a directory left by
/// an earlier process would hand its old records file (appended to, not
/// replaced) to a new test.
pub fn tmp(name: &str) -> std::path::PathBuf {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let dir = std::env::temp_dir().join(format!(
        "goodput-test-{}-{nanos}-{}",
        std::process::id(),
        N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    std::fs::create_dir(&dir).unwrap();
    dir.join(name)
}

/// The results JSON written by `--out`.
pub fn read_json(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Start goodput as a child (stdout and stderr piped), to signal it.
pub fn spawn_goodput(args: &[&str]) -> std::process::Child {
    goodput_command()
        .args(pinned(args))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn goodput")
}

/// Send a signal to a child process.
pub fn signal(child: &std::process::Child, signal: i32) {
    // SAFETY: signalling our own child process.
    unsafe {
        libc::kill(child.id() as i32, signal);
    }
}

/// Send SIGINT (Ctrl-C) to a child process.
pub fn sigint(child: &std::process::Child) {
    signal(child, libc::SIGINT);
}

/// Send SIGTERM (what `kill`, systemd and Kubernetes send) to a child process.
pub fn sigterm(child: &std::process::Child) {
    signal(child, libc::SIGTERM);
}

/// Poll `ready` every 20 ms until it holds; panic naming `what` after `within`.
pub async fn wait_until(what: &str, within: Duration, ready: impl Fn() -> bool) {
    let start = Instant::now();
    while !ready() {
        assert!(start.elapsed() < within, "not {what} after {within:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Lines in a file so far (0 when it does not exist yet).
pub fn line_count(path: &std::path::Path) -> usize {
    std::fs::read_to_string(path).map_or(0, |s| s.lines().count())
}

/// A plain HTTP/1.1 GET on loopback (`Connection: close`, read to the end):
/// the status and the body.
pub fn http_get(addr: &str, path: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).expect("read");
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").expect("a head");
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        let mut out = String::new();
        let mut rest = body;
        while let Some((size, after)) = rest.split_once("\r\n") {
            let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
            if n == 0 {
                break;
            }
            out.push_str(&after[..n]);
            rest = &after[n + 2..];
        }
        out
    } else {
        body.to_string()
    };
    (status, body)
}

/// The value of one Prometheus series (`name{labels}` exactly as exposed).
pub fn prom_value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
}

/// A results document against the committed schema: every violation, with
/// where it is, fails the test.
pub fn validate_run_document(doc: &serde_json::Value) {
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../../../../schema/run.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "schema violations:\n{}",
        errors.join("\n")
    );
}

/// A server that accepts connections and never answers.
pub async fn silent_server() -> (std::net::SocketAddr, Arc<std::sync::atomic::AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let a = accepted.clone();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((sock, _)) = listener.accept().await {
            a.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            held.push(sock);
        }
    });
    (addr, accepted)
}

/// A Prometheus text endpoint on a loopback port: every GET is answered
/// with `body(n)` (n counting the scrapes from 0), then the connection is
/// closed. Returns its URL (`/metrics`).
pub async fn metrics_endpoint(body: impl Fn(usize) -> String + Send + Sync + 'static) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/metrics", listener.local_addr().unwrap());
    let body = Arc::new(body);
    let count = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                continue;
            };
            let (body, count) = (body.clone(), count.clone());
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    match sock.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let text = body(count.fetch_add(1, std::sync::atomic::Ordering::SeqCst));
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/plain; version=0.0.4\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    text.len()
                );
                let _ = sock.write_all(head.as_bytes()).await;
                let _ = sock.write_all(text.as_bytes()).await;
            });
        }
    });
    url
}
