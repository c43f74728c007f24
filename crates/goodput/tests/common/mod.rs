//! A scripted OpenAI-compatible streaming server for integration tests.
//!
//! It streams on a known schedule (first content event `ttft` after the
//! request is read, then one event every `interval`), logs its own receive
//! and write times per request, and misbehaves on demand, chosen per request
//! by the integer suffix of the `x-request-id` header goodput sends.
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

/// What the server does with one request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Behavior {
    Ok,
    /// Answer with this status (and `Retry-After: 7` for 429/503).
    Status(u16),
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
    /// A 200 stream with no content: the role chunk, a `stop` finish with
    /// zero tokens, `[DONE]`.
    Empty,
    /// 401 whose body echoes the request's `Authorization` and `X-Api-Key`
    /// headers, as some gateways do.
    EchoAuth,
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

fn request_id(tag: &str) -> Option<u64> {
    tag.rsplit('-').next()?.parse().ok()
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
    let (tx, mut rx) = tokio::sync::oneshot::channel::<()>();
    let log2 = log.clone();
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
            let log = log2.clone();
            let tls = tls.clone();
            tokio::spawn(async move {
                let svc =
                    hyper::service::service_fn(move |req| handle(req, script.clone(), log.clone()));
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
        _shutdown: tx,
    }
}

type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

async fn handle(
    req: Request<hyper::body::Incoming>,
    script: Script,
    log: Arc<Mutex<Vec<LogEntry>>>,
) -> Result<Response<Body>, Infallible> {
    let tag = req
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let path = req.uri().path().to_string();
    let echoed = ["authorization", "x-api-key"]
        .iter()
        .filter_map(|h| req.headers().get(*h).and_then(|v| v.to_str().ok()))
        .collect::<Vec<_>>()
        .join(" / ");
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let received = Instant::now();
    if path.ends_with("/models") {
        return Ok(json_response(
            200,
            r#"{"object":"list","data":[{"id":"scripted","object":"model"}]}"#,
        ));
    }
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let chat = path.ends_with("/chat/completions");
    if script.reject_pinning && (v.get("min_tokens").is_some() || v.get("ignore_eos").is_some()) {
        log.lock().unwrap().push(LogEntry {
            request_tag: format!("{tag}-rejected"),
            received,
            writes: vec![],
        });
        return Ok(json_response(
            400,
            r#"{"error":{"message":"Unrecognized request argument supplied: ignore_eos"}}"#,
        ));
    }
    let behavior = if tag.ends_with("-probe") || path.ends_with("/models") {
        // The probe and discovery see the same echo, when every request does.
        match (script.behavior)(u64::MAX) {
            Behavior::EchoAuth => Behavior::EchoAuth,
            _ => Behavior::Ok,
        }
    } else {
        request_id(&tag).map_or(Behavior::Ok, |id| (script.behavior)(id))
    };
    if behavior == Behavior::EchoAuth {
        let body =
            serde_json::json!({"error": {"message": format!("invalid credentials: {echoed}")}});
        return Ok(json_response(401, &body.to_string()));
    }
    if let Behavior::Status(code) = behavior {
        let mut r = json_response(code, r#"{"error":{"message":"scripted failure"}}"#);
        if code == 429 || code == 503 {
            r.headers_mut().insert("retry-after", "7".parse().unwrap());
        }
        return Ok(r);
    }
    if v["stream"] != true {
        let text: String = (0..script.events * script.tokens_per_event)
            .map(|_| " the")
            .collect();
        tokio::time::sleep(script.ttft).await;
        let body = if chat {
            serde_json::json!({"choices":[{"message":{"role":"assistant","content":text},"finish_reason":"length"}],
                "usage":{"prompt_tokens":1,"completion_tokens":script.events*script.tokens_per_event}})
        } else {
            serde_json::json!({"choices":[{"text":text,"finish_reason":"length"}],
                "usage":{"prompt_tokens":1,"completion_tokens":script.events*script.tokens_per_event}})
        };
        log.lock().unwrap().push(LogEntry {
            request_tag: tag,
            received,
            writes: vec![Instant::now()],
        });
        return Ok(json_response(200, &body.to_string()));
    }
    let max_tokens = v["max_tokens"].as_u64().unwrap_or(u64::MAX) as usize;
    let events = if tag.ends_with("-probe") {
        1
    } else {
        script
            .events
            .min(max_tokens.div_ceil(script.tokens_per_event))
    };
    let (tx, rx) = mpsc::channel::<Result<Frame<Bytes>, Infallible>>(64);
    let include_usage = script.usage && v["stream_options"]["include_usage"] == true;
    tokio::spawn(async move {
        let send = |s: String| {
            let tx = tx.clone();
            async move { tx.send(Ok(Frame::data(Bytes::from(s)))).await.is_ok() }
        };
        if chat && script.role_chunk {
            send("data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n".into()).await;
        }
        let mut writes = Vec::with_capacity(events);
        if behavior == Behavior::Empty {
            tokio::time::sleep_until((received + script.ttft).into()).await;
            send("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":0,\"total_tokens\":1}}\n\n".into()).await;
            send("data: [DONE]\n\n".into()).await;
            log.lock().unwrap().push(LogEntry {
                request_tag: tag,
                received,
                writes,
            });
            return;
        }
        let words: String = (0..script.tokens_per_event).map(|_| script.word).collect();
        for i in 0..events {
            tokio::time::sleep_until((received + script.ttft + script.interval * i as u32).into())
                .await;
            match behavior {
                Behavior::CutAfter(n)
                | Behavior::StallAfter(n)
                | Behavior::MalformedAfter(n)
                | Behavior::ErrorAfter(n)
                | Behavior::TextErrorAfter(n)
                    if i == n =>
                {
                    match behavior {
                        Behavior::TextErrorAfter(_) => {
                            send("data: channel closed\n\n".into()).await;
                            send("data: [DONE]\n\n".into()).await;
                        }
                        Behavior::MalformedAfter(_) => {
                            send("data: {not json\n\n".into()).await;
                        }
                        Behavior::ErrorAfter(_) => {
                            send("data: {\"error\":{\"message\":\"scripted engine error\",\"code\":500}}\n\n".into()).await;
                        }
                        Behavior::StallAfter(_) => {
                            tokio::time::sleep(Duration::from_secs(30)).await;
                        }
                        _ => {}
                    }
                    log.lock().unwrap().push(LogEntry {
                        request_tag: tag.clone(),
                        received,
                        writes,
                    });
                    return; // dropping tx ends the body without [DONE]
                }
                _ => {}
            }
            let finish = if i + 1 == events {
                format!("\"{}\"", script.finish)
            } else {
                "null".to_string()
            };
            let ev = if chat {
                format!("data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{words}\"}},\"finish_reason\":{finish}}}]}}\n\n")
            } else {
                format!("data: {{\"choices\":[{{\"index\":0,\"text\":\"{words}\",\"finish_reason\":{finish}}}]}}\n\n")
            };
            writes.push(Instant::now());
            if !send(ev).await {
                break;
            }
        }
        if include_usage {
            let n = events * script.tokens_per_event;
            send(format!("data: {{\"choices\":[],\"usage\":{{\"prompt_tokens\":1,\"completion_tokens\":{n},\"total_tokens\":{}}}}}\n\n", n + 1)).await;
        }
        send("data: [DONE]\n\n".into()).await;
        log.lock().unwrap().push(LogEntry {
            request_tag: tag,
            received,
            writes,
        });
    });
    let body = StreamBody::new(tokio_stream_from(rx));
    let mut resp = Response::new(BodyExt::boxed(body));
    resp.headers_mut()
        .insert("content-type", "text/event-stream".parse().unwrap());
    Ok(resp)
}

fn json_response(code: u16, body: &str) -> Response<Body> {
    let mut r = Response::new(BodyExt::boxed(Full::new(Bytes::from(body.to_string()))));
    *r.status_mut() = hyper::StatusCode::from_u16(code).unwrap();
    r.headers_mut()
        .insert("content-type", "application/json".parse().unwrap());
    r
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

/// Send SIGINT (Ctrl-C) to a child process.
pub fn sigint(child: &std::process::Child) {
    // SAFETY: signalling our own child process.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
}
