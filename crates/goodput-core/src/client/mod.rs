//! Client: sends one prepared request and records what happened, raw.
//!
//! Pooled keep-alive HTTP/1.1 connections (hyper's connection-level API, so
//! the moment a new connection starts opening is known and recorded as
//! `t_connect`), `https://` through rustls. The request path never retries a
//! request the server may have seen; the only resend is of a request that a
//! stale pooled connection refused before writing it. Every failure becomes
//! an [`ErrorKind`] on the record; nothing here panics or aborts the run.
//!
//! Timestamps: `t_send` just before the request is handed to the connection,
//! `t_head` when the response head is parsed, and each event's arrival when
//! the body frame holding it is read, before any JSON parsing.

pub mod openai;
pub mod sse;
pub mod target;
pub mod tls;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue};
use http::{HeaderMap, Method, Request};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio::time::Instant;

use crate::clock::RunClock;
use crate::record::{ErrorKind, Event, RequestError, RequestRecord};
use crate::workload::PreparedRequest;
use openai::Chunk;
use sse::SseParser;
pub use target::{BaseUrl, Endpoint};

/// Errors setting the client up (not request failures: those are records).
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("invalid URL '{url}': {why}")]
    BadUrl { url: String, why: String },
    #[error("cannot resolve {host}: {message}")]
    Resolve { host: String, message: String },
    #[error("invalid header '{0}': expected 'Name: value'")]
    BadHeader(String),
    #[error("TLS setup failed: {0}")]
    Tls(String),
    #[error("{0}")]
    Request(String),
}

/// How to reach the server.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    pub url: String,
    pub endpoint: Endpoint,
    /// Extra headers, `Name: value`.
    pub headers: Vec<String>,
    /// Sent as `Authorization: Bearer ...`; never printed or written.
    pub api_key: Option<String>,
    /// Total time allowed for one request, from `t_send`.
    pub timeout: Duration,
    /// No bytes for this long ends the request as a timeout.
    pub idle_timeout: Duration,
    pub connect_timeout: Duration,
    pub insecure: bool,
}

/// A cheap-to-clone handle to the connection pool and request settings.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    base: BaseUrl,
    addrs: Vec<SocketAddr>,
    tls: Option<(
        tokio_rustls::TlsConnector,
        rustls::pki_types::ServerName<'static>,
    )>,
    pool: Mutex<Vec<SendRequest<Full<Bytes>>>>,
    headers: HeaderMap,
    endpoint_path: String,
    run_tag: String,
    clock: RunClock,
    opts: ClientOptions,
}

type Body = Full<Bytes>;

impl Client {
    /// Resolve the host once and prepare headers and TLS.
    pub async fn new(
        opts: ClientOptions,
        clock: RunClock,
        run_tag: String,
    ) -> Result<Self, ClientError> {
        let base = BaseUrl::parse(&opts.url)?;
        let addrs: Vec<SocketAddr> = tokio::net::lookup_host((base.host.as_str(), base.port))
            .await
            .map_err(|e| ClientError::Resolve {
                host: base.host.clone(),
                message: e.to_string(),
            })?
            .collect();
        if addrs.is_empty() {
            return Err(ClientError::Resolve {
                host: base.host.clone(),
                message: "no addresses".into(),
            });
        }
        let tls = if base.https {
            let config = tls::client_config(opts.insecure)?;
            let name = rustls::pki_types::ServerName::try_from(base.host.clone())
                .map_err(|e| ClientError::Tls(e.to_string()))?;
            Some((tokio_rustls::TlsConnector::from(config), name))
        } else {
            None
        };
        let mut headers = HeaderMap::new();
        let authority = HeaderValue::from_str(&base.authority())
            .map_err(|_| ClientError::BadHeader(base.authority()))?;
        headers.insert(http::header::HOST, authority);
        headers.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        headers.insert(
            http::header::USER_AGENT,
            HeaderValue::from_static(concat!("goodput/", env!("CARGO_PKG_VERSION"))),
        );
        if let Some(key) = &opts.api_key {
            let mut v = HeaderValue::from_str(&format!("Bearer {key}"))
                .map_err(|_| ClientError::BadHeader("Authorization: Bearer <key>".into()))?;
            v.set_sensitive(true);
            headers.insert(http::header::AUTHORIZATION, v);
        }
        for h in &opts.headers {
            let (name, value) = h
                .split_once(':')
                .ok_or_else(|| ClientError::BadHeader(h.clone()))?;
            let name = HeaderName::from_bytes(name.trim().as_bytes())
                .map_err(|_| ClientError::BadHeader(h.clone()))?;
            let value = HeaderValue::from_str(value.trim())
                .map_err(|_| ClientError::BadHeader(h.clone()))?;
            headers.append(name, value);
        }
        let endpoint_path = base.path(opts.endpoint.path());
        Ok(Client {
            inner: Arc::new(Inner {
                base,
                addrs,
                tls,
                pool: Mutex::new(Vec::new()),
                headers,
                endpoint_path,
                run_tag,
                clock,
                opts,
            }),
        })
    }

    pub fn base(&self) -> &BaseUrl {
        &self.inner.base
    }

    /// The run tag in every `x-request-id` (`<tag>-<request_id>`).
    pub fn run_tag(&self) -> &str {
        &self.inner.run_tag
    }

    /// Open `n` connections ahead of the measured phase (closed loop may do
    /// so: connection setup is then not inside any request's latency).
    pub async fn prewarm(&self, n: usize) {
        let mut opened = Vec::with_capacity(n);
        for _ in 0..n {
            match tokio::time::timeout(self.inner.opts.connect_timeout, self.connect()).await {
                Ok(Ok(c)) => opened.push(c),
                _ => break,
            }
        }
        if let Ok(mut pool) = self.inner.pool.lock() {
            pool.extend(opened);
        }
    }

    /// A plain request outside the measured phase (for `/v1/models` and the
    /// probe): returns the status and the whole body.
    pub async fn simple(
        &self,
        method: Method,
        route: &str,
        body: Option<Bytes>,
        request_tag: &str,
    ) -> Result<(u16, Bytes), ClientError> {
        let path = self.inner.base.path(route);
        let fut = async {
            let mut sender = self
                .connect()
                .await
                .map_err(|e| ClientError::Request(e.message))?;
            let req = self.build(method, &path, body.unwrap_or_default(), request_tag);
            let resp = sender
                .send_request(req)
                .await
                .map_err(|e| ClientError::Request(e.to_string()))?;
            let status = resp.status().as_u16();
            let bytes = resp
                .into_body()
                .collect()
                .await
                .map_err(|e| ClientError::Request(e.to_string()))?
                .to_bytes();
            Ok((status, bytes))
        };
        match tokio::time::timeout(self.inner.opts.timeout, fut).await {
            Ok(r) => r,
            Err(_) => Err(ClientError::Request(format!(
                "no answer from {}{path} within {:?}",
                self.inner.base.authority(),
                self.inner.opts.timeout
            ))),
        }
    }

    fn build(&self, method: Method, path: &str, body: Bytes, request_tag: &str) -> Request<Body> {
        let mut req = Request::new(Full::new(body));
        *req.method_mut() = method;
        *req.uri_mut() = http::Uri::try_from(path).unwrap_or_else(|_| http::Uri::from_static("/"));
        let mut headers = self.inner.headers.clone();
        if let Ok(v) = HeaderValue::from_str(&format!("{}-{}", self.inner.run_tag, request_tag)) {
            headers.insert(HeaderName::from_static("x-request-id"), v);
        }
        *req.headers_mut() = headers;
        req
    }

    async fn connect(&self) -> Result<SendRequest<Body>, RequestError> {
        let fail = |message: String| RequestError {
            kind: ErrorKind::Connect,
            message,
            retry_after: None,
        };
        let mut last = String::new();
        for addr in &self.inner.addrs {
            let stream = match TcpStream::connect(addr).await {
                Ok(s) => s,
                Err(e) => {
                    last = format!("{addr}: {e}");
                    continue;
                }
            };
            let _ = stream.set_nodelay(true);
            let mut builder = hyper::client::conn::http1::Builder::new();
            builder.max_buf_size(1 << 20);
            return match &self.inner.tls {
                None => {
                    let (sender, conn) = builder
                        .handshake(TokioIo::new(stream))
                        .await
                        .map_err(|e| fail(e.to_string()))?;
                    tokio::spawn(conn);
                    Ok(sender)
                }
                Some((connector, name)) => {
                    let tls = connector
                        .connect(name.clone(), stream)
                        .await
                        .map_err(|e| fail(format!("TLS handshake with {addr}: {e}")))?;
                    let (sender, conn) = builder
                        .handshake(TokioIo::new(tls))
                        .await
                        .map_err(|e| fail(e.to_string()))?;
                    tokio::spawn(conn);
                    Ok(sender)
                }
            };
        }
        Err(fail(last))
    }

    fn checkout_pooled(&self) -> Option<SendRequest<Body>> {
        let mut pool = self.inner.pool.lock().ok()?;
        while let Some(s) = pool.pop() {
            if !s.is_closed() {
                return Some(s);
            }
        }
        None
    }

    fn checkin(&self, sender: SendRequest<Body>) {
        if sender.is_closed() {
            return;
        }
        if let Ok(mut pool) = self.inner.pool.lock() {
            pool.push(sender);
        }
    }

    /// Send one request and record everything that happened. Never fails:
    /// failures are recorded on the returned record.
    pub async fn execute(&self, req: &PreparedRequest, t_sched: u64) -> RequestRecord {
        let mut rec = RequestRecord {
            request_id: req.id,
            warmup: req.warmup,
            t_sched,
            prompt_tokens_client: req.prompt_tokens,
            max_tokens: req.max_tokens,
            streamed: req.stream,
            ..Default::default()
        };
        if let Err(e) = self.exchange(req, &mut rec).await {
            rec.error = Some(e);
            rec.t_done = self.inner.clock.now_ns();
        }
        rec
    }

    async fn exchange(
        &self,
        req: &PreparedRequest,
        rec: &mut RequestRecord,
    ) -> Result<(), RequestError> {
        let clock = self.inner.clock;
        let opts = &self.inner.opts;
        let tag = req.id.to_string();
        let mut pooled = self.checkout_pooled();
        let mut resent = false;
        let (mut sender, response) = loop {
            let mut sender = match pooled.take() {
                Some(s) => s,
                None => {
                    rec.t_connect = Some(clock.now_ns());
                    match tokio::time::timeout(opts.connect_timeout, self.connect()).await {
                        Ok(r) => r?,
                        Err(_) => {
                            return Err(err(
                                ErrorKind::Connect,
                                format!("connect timed out after {:?}", opts.connect_timeout),
                            ))
                        }
                    }
                }
            };
            let reused = rec.t_connect.is_none();
            let request = self.build(
                Method::POST,
                &self.inner.endpoint_path,
                req.body.clone(),
                &tag,
            );
            rec.t_send = clock.now_ns();
            let deadline = clock.instant(rec.t_send) + opts.timeout;
            let head = sender.try_send_request(request);
            match tokio::time::timeout_at(
                Instant::from_std(deadline.min(clock.instant(rec.t_send) + opts.idle_timeout)),
                head,
            )
            .await
            {
                Ok(Ok(resp)) => break (sender, resp),
                Ok(Err(e)) => {
                    let refused_unsent = e.message().is_some();
                    let stale = reused
                        && (refused_unsent
                            || e.error().is_canceled()
                            || e.error().is_incomplete_message());
                    if stale && !resent {
                        // A pooled connection the server had closed: the request
                        // never reached it. Resend once on a fresh connection.
                        resent = true;
                        pooled = self.checkout_pooled();
                        continue;
                    }
                    return Err(err(
                        ErrorKind::StreamCut,
                        format!("before response head: {}", e.into_error()),
                    ));
                }
                Err(_) => {
                    let kind = ErrorKind::Timeout;
                    return Err(err(kind, "no response head before the timeout".into()));
                }
            }
        };
        rec.t_head = Some(clock.now_ns());
        let status = response.status();
        rec.http_status = Some(status.as_u16());
        let deadline = clock.instant(rec.t_send) + opts.timeout;
        if !status.is_success() {
            let retry_after = response
                .headers()
                .get(http::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            let body = read_limited(response.into_body(), 2048, deadline, opts.idle_timeout).await;
            return Err(RequestError {
                kind: ErrorKind::HttpStatus,
                message: format!("HTTP {}: {}", status.as_u16(), body),
                retry_after,
            });
        }
        let mut body = response.into_body();
        let clean = if req.stream {
            read_stream(&mut body, rec, clock, deadline, opts.idle_timeout).await?
        } else {
            read_whole(&mut body, rec, clock, deadline, opts.idle_timeout).await?
        };
        if clean {
            // Let hyper finish the exchange so the connection can be reused.
            if sender.ready().await.is_ok() {
                self.checkin(sender);
            }
        }
        Ok(())
    }
}

fn err(kind: ErrorKind, message: String) -> RequestError {
    RequestError {
        kind,
        message,
        retry_after: None,
    }
}

/// Wait for the next body frame, bounded by the idle timeout and the total deadline.
async fn next_frame(
    body: &mut Incoming,
    deadline: std::time::Instant,
    idle: Duration,
) -> Result<Option<Bytes>, RequestError> {
    loop {
        let limit = deadline.min(std::time::Instant::now() + idle);
        match tokio::time::timeout_at(Instant::from_std(limit), body.frame()).await {
            Err(_) => {
                let msg = if std::time::Instant::now() >= deadline {
                    "total timeout reached while streaming".to_string()
                } else {
                    format!("no bytes for {idle:?} (idle timeout)")
                };
                return Err(err(ErrorKind::Timeout, msg));
            }
            Ok(None) => return Ok(None),
            Ok(Some(Err(e))) => {
                return Err(err(ErrorKind::StreamCut, format!("stream broken: {e}")))
            }
            Ok(Some(Ok(frame))) => {
                if let Ok(data) = frame.into_data() {
                    return Ok(Some(data));
                }
                // Trailers: keep reading.
            }
        }
    }
}

/// Read a streamed (SSE) response into `rec`. Returns whether the body was
/// read to its end (so the connection may be reused).
async fn read_stream(
    body: &mut Incoming,
    rec: &mut RequestRecord,
    clock: RunClock,
    deadline: std::time::Instant,
    idle: Duration,
) -> Result<bool, RequestError> {
    let mut parser = SseParser::new();
    let mut state = StreamState::default();
    rec.events
        .reserve(rec.max_tokens.unwrap_or(16).min(4096) as usize);
    loop {
        match next_frame(body, deadline, idle).await? {
            Some(data) => {
                let at = clock.now_ns();
                parser.feed(&data, |ev| state.on_event(ev, at, rec));
                if let Some(e) = state.failure.take() {
                    rec.t_done = at;
                    return Err(e);
                }
                if state.done {
                    rec.t_done = at;
                    // The terminating chunk usually came in the same read.
                    let rest = tokio::time::timeout(Duration::from_millis(50), body.frame()).await;
                    return Ok(matches!(rest, Ok(None)));
                }
            }
            None => {
                let at = clock.now_ns();
                parser.finish(|ev| state.on_event(ev, at, rec));
                rec.t_done = at;
                if let Some(e) = state.failure.take() {
                    return Err(e);
                }
                if state.done || rec.finish_reason.is_some() {
                    return Ok(true);
                }
                return Err(err(
                    ErrorKind::StreamCut,
                    format!(
                        "stream ended after {} content events without [DONE] or finish_reason",
                        rec.events.len()
                    ),
                ));
            }
        }
    }
}

#[derive(Default)]
struct StreamState {
    done: bool,
    failure: Option<RequestError>,
}

impl StreamState {
    fn on_event(&mut self, data: &[u8], at: u64, rec: &mut RequestRecord) {
        if self.done || self.failure.is_some() {
            return;
        }
        if data == b"[DONE]" {
            self.done = true;
            return;
        }
        let chunk = match Chunk::parse(data) {
            Ok(c) => c,
            Err(e) => {
                self.failure = Some(err(
                    ErrorKind::Malformed,
                    format!("event is not valid JSON ({e}): {}", snippet(data)),
                ));
                return;
            }
        };
        if let Some(msg) = chunk.error_message() {
            self.failure = Some(err(ErrorKind::ServerError, msg));
            return;
        }
        let d = chunk.deliver(&mut rec.output_text);
        if let Some(u) = chunk.usage {
            rec.usage = Some(u.into());
        }
        if d.answer_bytes + d.reasoning_bytes > 0 {
            let per_chunk_usage = if chunk.choices.as_ref().is_some_and(|c| !c.is_empty()) {
                chunk.usage.and_then(|u| u.completion_tokens)
            } else {
                None
            };
            rec.events.push(Event {
                at_ns: at,
                text_end: rec.output_text.len() as u32,
                usage_completion_tokens: per_chunk_usage,
                reasoning: d.answer_bytes == 0,
            });
        }
        if d.finish_reason.is_some() {
            rec.finish_reason = d.finish_reason;
        }
    }
}

/// Read a non-streamed response: the whole answer arrives as one event at the end.
async fn read_whole(
    body: &mut Incoming,
    rec: &mut RequestRecord,
    clock: RunClock,
    deadline: std::time::Instant,
    idle: Duration,
) -> Result<bool, RequestError> {
    let mut buf = Vec::new();
    while let Some(data) = next_frame(body, deadline, idle).await? {
        buf.extend_from_slice(&data);
    }
    let at = clock.now_ns();
    rec.t_done = at;
    let chunk = Chunk::parse(&buf).map_err(|e| {
        err(
            ErrorKind::Malformed,
            format!("response is not valid JSON ({e}): {}", snippet(&buf)),
        )
    })?;
    if let Some(msg) = chunk.error_message() {
        return Err(err(ErrorKind::ServerError, msg));
    }
    let d = chunk.deliver(&mut rec.output_text);
    rec.usage = chunk.usage.map(Into::into);
    rec.finish_reason = d.finish_reason;
    if d.answer_bytes + d.reasoning_bytes > 0 {
        rec.events.push(Event {
            at_ns: at,
            text_end: rec.output_text.len() as u32,
            usage_completion_tokens: None,
            reasoning: d.answer_bytes == 0,
        });
    }
    Ok(true)
}

async fn read_limited(
    mut body: Incoming,
    limit: usize,
    deadline: std::time::Instant,
    idle: Duration,
) -> String {
    let mut buf = Vec::new();
    while buf.len() < limit {
        match next_frame(&mut body, deadline, idle.min(Duration::from_secs(5))).await {
            Ok(Some(d)) => buf.extend_from_slice(&d),
            _ => break,
        }
    }
    snippet(&buf)
}

/// A short, printable excerpt of a body.
pub fn snippet(b: &[u8]) -> String {
    let s = String::from_utf8_lossy(&b[..b.len().min(300)]);
    let mut s = s.replace(['\n', '\r'], " ");
    if b.len() > 300 {
        s.push('…');
    }
    s
}
