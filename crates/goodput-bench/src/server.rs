//! The reference server: an OpenAI-compatible streaming endpoint with a known
//! token schedule that logs, per request, when it really wrote each token.
//!
//! Guarantees:
//! - The schedule is anchored to absolute time: token `i` of a request is due
//!   at `t_recv + ttft + i * interval`, where `t_recv` is the moment the whole
//!   request (head and body) had been read. Lateness never accumulates.
//! - Each token is one SSE event in its own HTTP chunk and its own `write`.
//!   The log records the monotonic time taken right before that write: the
//!   ground truth a client's measurements are compared with.
//! - All logged times are absolute `CLOCK_MONOTONIC` ns, comparable with a
//!   client's own monotonic timestamps (goodput's
//!   `run.clock_origin_monotonic_ns`).
//! - Besides the moment it read the request (`t_recv`, user space), the log
//!   keeps the kernel's receive time of the bytes that completed it
//!   (`SO_TIMESTAMPNS`, read with `recvmsg`), so how late the server got to
//!   the request can be told apart from how late the client sent it.
//! - Keep-alive: one connection serves any number of requests in sequence.
//! - Per token, no allocation and no formatting: the event bytes are built
//!   once per request, and the log lock is taken once per request.
//!
//! It is hand-rolled over tokio's `TcpStream` rather than built on a framework
//! so the write timestamps are exact and its CPU use stays small: it shares the
//! machine's cores with the client being measured.

use std::io::Write as _;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd as _, RawFd};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde::Deserialize;
use tokio::io::{AsyncWriteExt as _, Interest};
use tokio::net::{TcpSocket, TcpStream};

use crate::clock::{InstantMapper, RealtimeToMonotonic};
use crate::http::{self, HeadError, RequestHead};

/// Text of every generated token: one short, single-token word.
const TOKEN_TEXT: &str = " the";
/// Token count when a request sets no `max_tokens` (the OpenAI default).
const DEFAULT_MAX_TOKENS: u64 = 16;
/// Upper bound on tokens per request, so a typo cannot stream for hours.
const MAX_TOKENS_CAP: u64 = 100_000;
/// Listen backlog: 1,024 clients connecting at once must not see SYN drops.
const LISTEN_BACKLOG: u32 = 4096;

/// How the reference server answers.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Time from a request's arrival to its first token.
    pub ttft: Duration,
    /// Time between successive tokens.
    pub interval: Duration,
    /// Token count for every request, overriding the request's `max_tokens`.
    pub tokens_override: Option<u64>,
    /// Worker threads of the server's own tokio runtime.
    pub threads: usize,
    /// Model name served by `/v1/models` and echoed in events.
    pub model: String,
    /// Text of every streamed token event, JSON-escaped (`--event-bytes`).
    pub token_text: Arc<str>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            ttft: Duration::from_millis(100),
            interval: Duration::from_millis(10),
            tokens_override: None,
            threads: 1,
            model: "ref".to_string(),
            token_text: TOKEN_TEXT.into(),
        }
    }
}

/// Which completion API a request used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// `POST /v1/completions`
    Completions,
    /// `POST /v1/chat/completions`
    Chat,
}

/// What the server did for one completion request. Times are absolute
/// `CLOCK_MONOTONIC` nanoseconds.
#[derive(Debug, Clone)]
pub struct RequestLog {
    /// The request's `x-request-id` header, when it had one.
    pub request_id: Option<String>,
    /// Which API it used.
    pub endpoint: Endpoint,
    /// Whether the answer was streamed.
    pub streamed: bool,
    /// When the whole request had been read (user space: right after the
    /// `recvmsg` that completed it returned).
    pub recv_ns: u64,
    /// When the kernel received the bytes that completed the request (the
    /// socket's `SO_TIMESTAMPNS` receive timestamp of the last segment that
    /// read returned, converted from `CLOCK_REALTIME`); `None` when the
    /// kernel gave no timestamp.
    pub kernel_rx_ns: Option<u64>,
    /// When each content-bearing token event was handed to `write`, in order
    /// (for a non-streamed answer: the one write of the whole body).
    pub token_ns: Vec<u64>,
    /// Whether the whole answer was written (false: the client went away).
    pub complete: bool,
}

impl RequestLog {
    /// The server's TTFT: first token write minus arrival, in ms.
    pub fn ttft_ms(&self) -> Option<f64> {
        self.token_ns
            .first()
            .map(|&t| ns_to_ms(t.saturating_sub(self.recv_ns)))
    }

    /// First token write minus the kernel's receive time of the request, ms.
    pub fn ttft_from_kernel_rx_ms(&self) -> Option<f64> {
        let first = *self.token_ns.first()?;
        Some((first as f64 - self.kernel_rx_ns? as f64) / 1e6)
    }

    /// The server's own lateness in reading the request: user-space `t_recv`
    /// minus the kernel's receive time, ms.
    pub fn read_lateness_ms(&self) -> Option<f64> {
        Some((self.recv_ns as f64 - self.kernel_rx_ns? as f64) / 1e6)
    }

    /// How late each token write was against its deadline
    /// (`t_recv + ttft + i * interval`), in ms: the server's own slip.
    pub fn slips_ms<'a>(
        &'a self,
        ttft: Duration,
        interval: Duration,
    ) -> impl Iterator<Item = f64> + 'a {
        let first_due = self.recv_ns + ttft.as_nanos() as u64;
        let step = interval.as_nanos() as u64;
        self.token_ns
            .iter()
            .enumerate()
            .map(move |(i, &t)| (t as f64 - (first_due + i as u64 * step) as f64) / 1e6)
    }

    /// Differences between successive token writes, in ms.
    pub fn gaps_ms(&self) -> impl Iterator<Item = f64> + '_ {
        self.token_ns.windows(2).map(|w| ns_to_ms(w[1] - w[0]))
    }
}

fn ns_to_ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// The in-memory log of all completion requests, appended once per request.
#[derive(Debug)]
pub struct ServerLog {
    clock: InstantMapper,
    realtime: RealtimeToMonotonic,
    kernel_timestamps: bool,
    entries: Mutex<Vec<RequestLog>>,
}

impl ServerLog {
    fn new(kernel_timestamps: bool) -> Self {
        Self {
            clock: InstantMapper::new(),
            realtime: RealtimeToMonotonic::new(),
            kernel_timestamps,
            entries: Mutex::new(Vec::new()),
        }
    }

    /// `t` as absolute `CLOCK_MONOTONIC` ns.
    fn mono(&self, t: Instant) -> u64 {
        self.clock.ns(t)
    }

    /// Whether `SO_TIMESTAMPNS` could be enabled on the listening socket.
    pub fn kernel_timestamps(&self) -> bool {
        self.kernel_timestamps
    }

    fn push(&self, entry: RequestLog) {
        // A poisoned lock only means another connection task panicked while
        // pushing; the entries themselves are still whole.
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.push(entry);
    }

    /// Removes and returns everything logged so far.
    pub fn take(&self) -> Vec<RequestLog> {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        std::mem::take(&mut *entries)
    }
}

/// Writes `entries` to `path` as JSONL: one object per request with
/// `request_id`, `endpoint`, `streamed`, `complete`, `recv_ns`,
/// `kernel_rx_ns` and `token_ns` (absolute `CLOCK_MONOTONIC` ns).
pub fn write_log(path: &Path, entries: &[RequestLog]) -> anyhow::Result<()> {
    let file =
        std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut out = std::io::BufWriter::new(file);
    for entry in entries {
        let line = serde_json::json!({
            "request_id": entry.request_id,
            "endpoint": match entry.endpoint {
                Endpoint::Completions => "completions",
                Endpoint::Chat => "chat",
            },
            "streamed": entry.streamed,
            "complete": entry.complete,
            "recv_ns": entry.recv_ns,
            "kernel_rx_ns": entry.kernel_rx_ns,
            "token_ns": entry.token_ns,
        });
        writeln!(out, "{line}")?;
    }
    out.flush()
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// A running reference server on its own tokio runtime.
pub struct ReferenceServer {
    addr: SocketAddr,
    log: Arc<ServerLog>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl ReferenceServer {
    /// Binds `127.0.0.1:port` (0 = any free port) and starts serving.
    pub fn start(config: ServerConfig, port: u16) -> anyhow::Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(config.threads.max(1))
            .thread_name("ref-server")
            .enable_all()
            .build()
            .context("building the reference server's runtime")?;
        let listener = runtime.block_on(async {
            let socket = TcpSocket::new_v4()?;
            socket.set_reuseaddr(true)?;
            // Accepted sockets inherit the flag, so even the bytes that
            // arrive before `accept` returns carry a timestamp.
            let timestamps = enable_rx_timestamps(socket.as_raw_fd()).is_ok();
            socket.bind(SocketAddr::from(([127, 0, 0, 1], port)))?;
            Ok::<_, std::io::Error>((socket.listen(LISTEN_BACKLOG)?, timestamps))
        });
        let (listener, timestamps) =
            listener.with_context(|| format!("binding 127.0.0.1:{port}"))?;
        let log = Arc::new(ServerLog::new(timestamps));
        let shared = Arc::new(Shared {
            model_json: serde_json::to_string(&config.model)?,
            config,
            log: log.clone(),
            next_id: AtomicU64::new(1),
        });
        let addr = listener.local_addr()?;
        runtime.spawn(async move {
            loop {
                match listener.accept().await {
                    Ok((stream, _)) => {
                        tokio::spawn(serve_connection(stream, shared.clone()));
                    }
                    Err(e) => {
                        // Out of file descriptors, most likely: back off, go on.
                        eprintln!("reference server: accept failed: {e}");
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                }
            }
        });
        Ok(Self {
            addr,
            log,
            runtime: Some(runtime),
        })
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The server's request log.
    pub fn log(&self) -> &ServerLog {
        &self.log
    }
}

impl Drop for ReferenceServer {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_timeout(Duration::from_secs(1));
        }
    }
}

struct Shared {
    config: ServerConfig,
    model_json: String,
    log: Arc<ServerLog>,
    next_id: AtomicU64,
}

/// Per-connection buffers, reused across the requests of a keep-alive connection.
struct Buffers {
    input: Vec<u8>,
    out: Vec<u8>,
    token: Vec<u8>,
    last_token: Vec<u8>,
    scratch: Vec<u8>,
}

async fn serve_connection(mut stream: TcpStream, shared: Arc<Shared>) {
    if stream.set_nodelay(true).is_err() {
        return;
    }
    if shared.log.kernel_timestamps {
        // Inherited from the listener already; set again in case it was not.
        let _ = enable_rx_timestamps(stream.as_raw_fd());
    }
    let mut bufs = Buffers {
        input: Vec::with_capacity(4096),
        out: Vec::with_capacity(1024),
        token: Vec::with_capacity(512),
        last_token: Vec::with_capacity(512),
        scratch: Vec::with_capacity(512),
    };
    // Errors end the connection: the peer went away or sent garbage.
    let _ = connection_loop(&mut stream, &shared, &mut bufs).await;
}

async fn connection_loop(
    stream: &mut TcpStream,
    shared: &Shared,
    bufs: &mut Buffers,
) -> std::io::Result<()> {
    // Kernel receive time (CLOCK_REALTIME ns) of the last bytes read.
    let mut last_rx: Option<u64> = None;
    loop {
        let head_len = loop {
            if let Some(end) = http::head_end(&bufs.input) {
                break end;
            }
            if bufs.input.len() > http::MAX_HEAD_BYTES {
                return write_error(stream, 431, "request head too large").await;
            }
            if !read_more(stream, &mut bufs.input, &mut last_rx).await? {
                return Ok(());
            }
        };
        let head = match http::parse_head(&bufs.input[..head_len]) {
            Ok(head) => head,
            Err(HeadError::TooLarge) => {
                return write_error(stream, 413, "request body too large").await
            }
            Err(HeadError::Unsupported(what)) => return write_error(stream, 501, what).await,
            Err(HeadError::Malformed(what)) => return write_error(stream, 400, what).await,
        };
        let total = head_len + head.content_length;
        while bufs.input.len() < total {
            if !read_more(stream, &mut bufs.input, &mut last_rx).await? {
                return Ok(());
            }
        }
        let t_recv = Instant::now();
        let arrival = Arrival {
            t_recv,
            kernel_rx_ns: last_rx.map(|real| shared.log.realtime.to_monotonic(real)),
        };
        let body = bufs.input[head_len..total].to_vec();
        bufs.input.drain(..total);
        respond(stream, shared, bufs, &head, &body, arrival).await?;
        if head.close {
            return stream.shutdown().await;
        }
    }
}

/// When a request arrived.
#[derive(Debug, Clone, Copy)]
struct Arrival {
    /// Right after the read that completed it returned.
    t_recv: Instant,
    /// The kernel's receive time of its last bytes, `CLOCK_MONOTONIC` ns.
    kernel_rx_ns: Option<u64>,
}

/// Reads whatever is available into `input` with one `recvmsg`; false at end
/// of stream. `last_rx` becomes the kernel's receive timestamp of what was
/// read (`CLOCK_REALTIME` ns), or `None` when the kernel gave none.
async fn read_more(
    stream: &mut TcpStream,
    input: &mut Vec<u8>,
    last_rx: &mut Option<u64>,
) -> std::io::Result<bool> {
    input.reserve(4096);
    let fd = stream.as_raw_fd();
    loop {
        stream.readable().await?;
        match stream.try_io(Interest::READABLE, || recv_timestamped(fd, input)) {
            Ok((0, _)) => return Ok(false),
            Ok((_, rx)) => {
                *last_rx = rx;
                return Ok(true);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Turns on `SO_TIMESTAMPNS`: every `recvmsg` then carries the kernel's
/// receive time of the data it returned (for TCP, of the last segment).
fn enable_rx_timestamps(fd: RawFd) -> std::io::Result<()> {
    let on: libc::c_int = 1;
    // SAFETY: a valid socket fd and a pointer to a c_int of the given size.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// One non-blocking `recvmsg` into the spare capacity of `input`; returns the
/// byte count and the `SCM_TIMESTAMPNS` timestamp (`CLOCK_REALTIME` ns) when
/// the kernel attached one.
fn recv_timestamped(fd: RawFd, input: &mut Vec<u8>) -> std::io::Result<(usize, Option<u64>)> {
    let spare = input.spare_capacity_mut();
    let mut iov = libc::iovec {
        iov_base: spare.as_mut_ptr().cast(),
        iov_len: spare.len(),
    };
    // Room for a few control messages, aligned for cmsghdr.
    let mut control = [0u64; 16];
    // SAFETY: msghdr is plain old data; zeroed is a valid value.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control) as _;
    // SAFETY: iov points into `input`'s spare capacity of iov_len bytes and
    // msg_control at `control`; both outlive the call.
    let n = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_DONTWAIT) };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let n = n as usize;
    // SAFETY: recvmsg initialized the first n bytes of the spare capacity.
    unsafe { input.set_len(input.len() + n) };
    let mut stamp = None;
    // SAFETY: msg was filled by recvmsg; the CMSG_* walk stays within
    // msg_controllen, and the payload is read unaligned.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_TIMESTAMPNS
            {
                let ts: libc::timespec =
                    std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::timespec>());
                let ns = crate::clock::timespec_ns(&ts);
                if ns > 0 {
                    stamp = Some(ns);
                }
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
    }
    Ok((n, stamp))
}

async fn respond(
    stream: &mut TcpStream,
    shared: &Shared,
    bufs: &mut Buffers,
    head: &RequestHead,
    body: &[u8],
    arrival: Arrival,
) -> std::io::Result<()> {
    let t_recv = arrival.t_recv;
    let endpoint = match (head.method.as_str(), head.path.as_str()) {
        ("GET", "/v1/models") => {
            let body = format!(
                r#"{{"object":"list","data":[{{"id":{},"object":"model","owned_by":"goodput-bench"}}]}}"#,
                shared.model_json
            );
            return write_json(stream, 200, body.as_bytes()).await;
        }
        ("GET", "/health") => return write_json(stream, 200, b"{}").await,
        ("POST", "/v1/completions") => Endpoint::Completions,
        ("POST", "/v1/chat/completions") => Endpoint::Chat,
        _ => return write_error(stream, 404, "no such route").await,
    };
    let request: CompletionRequest = match serde_json::from_slice(body) {
        Ok(request) => request,
        Err(e) => return write_error(stream, 400, &format!("invalid JSON body: {e}")).await,
    };
    let plan = Plan {
        endpoint,
        id: shared.next_id.fetch_add(1, Ordering::Relaxed),
        tokens: shared.config.tokens_override.unwrap_or_else(|| {
            request
                .max_tokens
                .or(request.max_completion_tokens)
                .unwrap_or(DEFAULT_MAX_TOKENS)
                .min(MAX_TOKENS_CAP)
        }),
        prompt_tokens: request.prompt_tokens(),
        include_usage: request
            .stream_options
            .as_ref()
            .is_some_and(|o| o.include_usage),
    };
    let mut entry = RequestLog {
        request_id: head.request_id.clone(),
        endpoint,
        streamed: request.stream.unwrap_or(false),
        recv_ns: shared.log.mono(t_recv),
        kernel_rx_ns: arrival.kernel_rx_ns,
        token_ns: Vec::with_capacity(plan.tokens as usize),
        complete: false,
    };
    let result = if entry.streamed {
        stream_answer(stream, shared, bufs, &plan, t_recv, &mut entry).await
    } else {
        whole_answer(stream, shared, &plan, t_recv, &mut entry).await
    };
    entry.complete = result.is_ok();
    shared.log.push(entry);
    result
}

/// What one completion request will get.
struct Plan {
    endpoint: Endpoint,
    id: u64,
    tokens: u64,
    prompt_tokens: u64,
    include_usage: bool,
}

async fn stream_answer(
    stream: &mut TcpStream,
    shared: &Shared,
    bufs: &mut Buffers,
    plan: &Plan,
    t_recv: Instant,
    entry: &mut RequestLog,
) -> std::io::Result<()> {
    let created = unix_seconds();
    bufs.token.clear();
    bufs.last_token.clear();
    bufs.scratch.clear();
    token_event(&mut bufs.scratch, shared, plan, created, "null");
    push_chunk(&mut bufs.token, &bufs.scratch);
    bufs.scratch.clear();
    token_event(&mut bufs.scratch, shared, plan, created, "\"length\"");
    push_chunk(&mut bufs.last_token, &bufs.scratch);

    bufs.out.clear();
    bufs.out.extend_from_slice(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\n\r\n",
    );
    if plan.endpoint == Endpoint::Chat {
        // Like vLLM: a role-only chunk at once, before any content.
        bufs.scratch.clear();
        role_event(&mut bufs.scratch, shared, plan, created);
        push_chunk(&mut bufs.out, &bufs.scratch);
    }
    stream.write_all(&bufs.out).await?;

    let first_due = t_recv + shared.config.ttft;
    for i in 0..plan.tokens {
        let due = first_due + shared.config.interval * i as u32;
        tokio::time::sleep_until(tokio::time::Instant::from_std(due)).await;
        let event = if i + 1 == plan.tokens {
            &bufs.last_token
        } else {
            &bufs.token
        };
        let now = Instant::now();
        entry.token_ns.push(shared.log.mono(now));
        stream.write_all(event).await?;
    }

    bufs.out.clear();
    if plan.include_usage {
        bufs.scratch.clear();
        usage_event(&mut bufs.scratch, shared, plan, created);
        push_chunk(&mut bufs.out, &bufs.scratch);
    }
    push_chunk(&mut bufs.out, b"data: [DONE]\n\n");
    bufs.out.extend_from_slice(b"0\r\n\r\n");
    stream.write_all(&bufs.out).await
}

async fn whole_answer(
    stream: &mut TcpStream,
    shared: &Shared,
    plan: &Plan,
    t_recv: Instant,
    entry: &mut RequestLog,
) -> std::io::Result<()> {
    let last = shared.config.ttft + shared.config.interval * plan.tokens.saturating_sub(1) as u32;
    tokio::time::sleep_until(tokio::time::Instant::from_std(t_recv + last)).await;
    let text = TOKEN_TEXT.repeat(plan.tokens as usize);
    let (object, choice) = match plan.endpoint {
        Endpoint::Completions => ("text_completion", format!(r#""text":"{text}""#)),
        Endpoint::Chat => (
            "chat.completion",
            format!(r#""message":{{"role":"assistant","content":"{text}"}}"#),
        ),
    };
    let body = format!(
        r#"{{"id":"cmpl-{id}","object":"{object}","created":{created},"model":{model},"choices":[{{"index":0,{choice},"finish_reason":"length"}}],"usage":{{"prompt_tokens":{p},"completion_tokens":{n},"total_tokens":{t}}}}}"#,
        id = plan.id,
        created = unix_seconds(),
        model = shared.model_json,
        p = plan.prompt_tokens,
        n = plan.tokens,
        t = plan.prompt_tokens + plan.tokens,
    );
    entry.token_ns.push(shared.log.mono(Instant::now()));
    write_json(stream, 200, body.as_bytes()).await
}

/// Appends one HTTP/1.1 chunk holding `payload`.
fn push_chunk(out: &mut Vec<u8>, payload: &[u8]) {
    let _ = write!(out, "{:x}\r\n", payload.len());
    out.extend_from_slice(payload);
    out.extend_from_slice(b"\r\n");
}

fn event_prefix(out: &mut Vec<u8>, shared: &Shared, plan: &Plan, created: u64) {
    let (id_prefix, object) = match plan.endpoint {
        Endpoint::Completions => ("cmpl", "text_completion"),
        Endpoint::Chat => ("chatcmpl", "chat.completion.chunk"),
    };
    let _ = write!(
        out,
        r#"data: {{"id":"{id_prefix}-{id}","object":"{object}","created":{created},"model":{model},"#,
        id = plan.id,
        model = shared.model_json,
    );
}

fn token_event(out: &mut Vec<u8>, shared: &Shared, plan: &Plan, created: u64, finish_reason: &str) {
    event_prefix(out, shared, plan, created);
    let text = &shared.config.token_text;
    let _ = match plan.endpoint {
        Endpoint::Completions => write!(
            out,
            r#""choices":[{{"index":0,"text":"{text}","logprobs":null,"finish_reason":{finish_reason}}}]}}"#
        ),
        Endpoint::Chat => write!(
            out,
            r#""choices":[{{"index":0,"delta":{{"content":"{text}"}},"logprobs":null,"finish_reason":{finish_reason}}}]}}"#
        ),
    };
    out.extend_from_slice(b"\n\n");
}

fn role_event(out: &mut Vec<u8>, shared: &Shared, plan: &Plan, created: u64) {
    event_prefix(out, shared, plan, created);
    out.extend_from_slice(
        br#""choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}"#,
    );
    out.extend_from_slice(b"\n\n");
}

fn usage_event(out: &mut Vec<u8>, shared: &Shared, plan: &Plan, created: u64) {
    event_prefix(out, shared, plan, created);
    let _ = write!(
        out,
        r#""choices":[],"usage":{{"prompt_tokens":{p},"completion_tokens":{n},"total_tokens":{t}}}}}"#,
        p = plan.prompt_tokens,
        n = plan.tokens,
        t = plan.prompt_tokens + plan.tokens,
    );
    out.extend_from_slice(b"\n\n");
}

async fn write_json(stream: &mut TcpStream, status: u16, body: &[u8]) -> std::io::Result<()> {
    let mut out = Vec::with_capacity(body.len() + 128);
    let _ = write!(
        out,
        "HTTP/1.1 {status} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        reason(status),
        body.len()
    );
    out.extend_from_slice(body);
    stream.write_all(&out).await
}

async fn write_error(stream: &mut TcpStream, status: u16, message: &str) -> std::io::Result<()> {
    let body = serde_json::json!({"error": {"message": message, "type": "invalid_request_error"}});
    write_json(stream, status, body.to_string().as_bytes()).await
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        413 => "Payload Too Large",
        431 => "Request Header Fields Too Large",
        501 => "Not Implemented",
        _ => "Error",
    }
}

fn unix_seconds() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// The fields of a completion request the server acts on; others are ignored.
#[derive(Debug, Deserialize)]
struct CompletionRequest {
    stream: Option<bool>,
    max_tokens: Option<u64>,
    max_completion_tokens: Option<u64>,
    stream_options: Option<StreamOptions>,
    prompt: Option<serde_json::Value>,
    messages: Option<serde_json::Value>,
}

#[derive(Debug, Deserialize)]
struct StreamOptions {
    #[serde(default)]
    include_usage: bool,
}

impl CompletionRequest {
    /// A stand-in for a tokenizer: whitespace-separated words of the prompt
    /// (or of the messages' text), which is what synthetic prompts are made of.
    fn prompt_tokens(&self) -> u64 {
        fn words(value: &serde_json::Value) -> u64 {
            match value {
                serde_json::Value::String(s) => s.split_whitespace().count() as u64,
                serde_json::Value::Array(items) => items.iter().map(words).sum(),
                serde_json::Value::Object(map) => ["content", "text"]
                    .iter()
                    .filter_map(|k| map.get(*k))
                    .map(words)
                    .sum(),
                _ => 0,
            }
        }
        self.prompt
            .iter()
            .chain(self.messages.iter())
            .map(words)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompt_tokens_counts_words_of_prompt_or_messages() {
        let r: CompletionRequest = serde_json::from_str(r#"{"prompt":"a b  c"}"#).unwrap();
        assert_eq!(r.prompt_tokens(), 3);
        let r: CompletionRequest = serde_json::from_str(
            r#"{"messages":[{"role":"user","content":"a b"},{"role":"user","content":[{"type":"text","text":"c d e"}]}]}"#,
        )
        .unwrap();
        assert_eq!(r.prompt_tokens(), 5);
    }

    #[test]
    fn chunk_framing_is_hex_length() {
        let mut out = Vec::new();
        push_chunk(&mut out, &[b'x'; 26]);
        assert_eq!(&out[..4], b"1a\r\n");
        assert!(out.ends_with(b"x\r\n"));
    }
}
