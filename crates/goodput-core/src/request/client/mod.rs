//! Client: sends one prepared request and records what happened, raw.
//!
//! Pooled keep-alive HTTP/1.1 connections, `https://` through rustls. The
//! request path is hand-written ([`h1`]) so that the request's own task
//! writes and reads the socket: `t_send` is taken right before the request's
//! `write`, `t_head` when the read completing the head returns, and each
//! event's arrival right after the `read` that brought its bytes, before any
//! parsing.
//!
//! Connections as real servers treat them. Before a pooled connection is
//! reused it is checked (a non-blocking peek) for having been closed by the
//! server while idle, and a closed one is discarded unused. Some servers
//! (llama.cpp's `llama-server`) close the connection after every streamed
//! response while their headers promise keep-alive; a closed loop writes
//! its next request microseconds after the last response ended, before the
//! FIN arrives, and the peek cannot see it. A request that fails on a
//! *reused* connection before any byte of the response arrived was never
//! processed (the server had closed its side before reading it), so it is
//! resent once on a fresh connection: its timing starts at the resend
//! (`t_connect`, `t_send` anew; the schedule lag shows the delay) and it
//! counts as a stale reuse. After [`CLOSES_BEFORE_NO_POOL`] such closes with
//! at least twice as many as successful reuses, the client stops pooling for the target and
//! the run says so. A failure on a fresh connection, or after any response
//! byte, fails the request: the server may have read it. Every failure
//! becomes an [`ErrorKind`] on the record; nothing here panics or aborts
//! the run.

mod error;
pub mod h1;
mod pooling;
pub mod proxy;
mod response;
pub mod sse;
pub mod target;
pub mod tls;
mod typed;
pub mod watchdog;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use tokio::net::TcpStream;

use crate::request::clock::RunClock;
use crate::request::protocol::{Endpoint, PreparedRequest};
use crate::request::record::{ErrorKind, RequestError, RequestRecord};
use crate::request::transport::Transport;
pub use error::ClientError;
use h1::{Conn, Stream};
pub use response::snippet;
use response::{
    a_web_page, err, no_content, read_body, read_head, read_stream, status_message, whole_response,
    Reader,
};
pub use target::BaseUrl;
use watchdog::Watchdog;

/// How to reach the server.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// The server's base URL (`http://host:port`; `/v1` is added when missing).
    pub url: String,
    /// The API route every request is sent to.
    pub endpoint: Endpoint,
    /// Extra headers, `Name: value`.
    pub headers: Vec<String>,
    /// Sent as `Authorization: Bearer ...`; never printed or written.
    pub api_key: Option<String>,
    /// Total time allowed for one request, from `t_send`.
    pub timeout: Duration,
    /// No bytes for this long ends the request as a timeout.
    pub idle_timeout: Duration,
    /// Time allowed to open a connection: TCP connect, proxy tunnel and TLS handshake.
    pub connect_timeout: Duration,
    /// Certificates trusted and presented over `https`.
    pub tls: tls::TlsOptions,
    /// Ignore `http_proxy`, `https_proxy`, `ALL_PROXY` and `NO_PROXY`.
    pub no_proxy: bool,
}

/// Closes of a reused connection seen (at the peek or by a resend) before
/// the client stops pooling for the target.
pub const CLOSES_BEFORE_NO_POOL: u64 = 8;

/// What the server did to pooled connections.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ConnectionStats {
    /// Pooled connections found closed before reuse, discarded unused.
    pub stale_discarded: u64,
    /// Requests resent on a fresh connection after a reused one closed
    /// before any byte of the response (the server never saw them).
    pub stale_resent: u64,
    /// The client stopped pooling: the server closes after each response.
    pub pooling_stopped: bool,
}

impl ConnectionStats {
    /// What happened between `before` and `self` (`pooling_stopped` as of now).
    pub fn since(self, before: ConnectionStats) -> ConnectionStats {
        ConnectionStats {
            stale_discarded: self.stale_discarded - before.stale_discarded,
            stale_resent: self.stale_resent - before.stale_resent,
            pooling_stopped: self.pooling_stopped,
        }
    }

    /// A note for the run, when the server closed connections under it.
    pub fn note(&self) -> Option<String> {
        if self.stale_discarded + self.stale_resent == 0 {
            return None;
        }
        let mut s = format!(
            "the server closed connections after its responses: {} found closed before reuse and discarded, {} requests resent on a fresh connection because a reused one closed before any byte of the answer (the server never read them; their timing starts at the resend)",
            self.stale_discarded, self.stale_resent
        );
        if self.pooling_stopped {
            s.push_str(&format!(
                "; after {CLOSES_BEFORE_NO_POOL} such closes goodput stopped reusing connections to this server, so every request opened its own (its connect time is in the `connect` figure, not in TTFT)"
            ));
        }
        Some(s)
    }
}

/// A cheap-to-clone handle to the connection pool and request settings.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    /// The proxy every connection goes through, from the environment.
    proxy: Option<proxy::Proxy>,
    /// Strings redacted from every message (longest first).
    secrets: Vec<String>,
    base: BaseUrl,
    addrs: Vec<SocketAddr>,
    tls: Option<(
        tokio_rustls::TlsConnector,
        rustls::pki_types::ServerName<'static>,
    )>,
    pool: Mutex<Vec<Conn>>,
    /// Header lines sent with every request, rendered once.
    header_lines: Vec<u8>,
    endpoint_path: String,
    /// The current run's id, sent in each request's `x-request-id`.
    run_id: AtomicU64,
    /// Pooled connections found closed by the server before reuse, discarded unused.
    stale_discarded: AtomicU64,
    /// Requests resent on a fresh connection after a reused one closed
    /// before any byte of the response.
    stale_resent: AtomicU64,
    /// Requests answered on a reused connection.
    reused_ok: AtomicU64,
    /// Set once the server showed it closes after each response: connections
    /// are no longer pooled.
    no_pool: AtomicBool,
    /// The context the server gives one sequence (0: not said), written
    /// on every record.
    sequence_context: AtomicU32,
    clock: RunClock,
    opts: ClientOptions,
    watchdog: Arc<Watchdog>,
}

fn header_line(out: &mut Vec<u8>, name: &str, value: &str) -> Result<(), ClientError> {
    let bad = |s: &str| s.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0);
    let name_ok = !name.is_empty() && name.bytes().all(|b| b.is_ascii_graphic() && b != b':');
    if !name_ok || bad(value) {
        return Err(ClientError::BadHeader(format!("{name}: ...")));
    }
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    out.extend_from_slice(value.as_bytes());
    out.extend_from_slice(b"\r\n");
    Ok(())
}

/// The addresses of `host` (the target, or the proxy it is reached through).
async fn resolve(host: String, port: u16) -> Result<Vec<SocketAddr>, ClientError> {
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), port))
        .await
        .map_err(|e| ClientError::Resolve {
            host: host.clone(),
            message: e.to_string(),
        })?
        .collect();
    if addrs.is_empty() {
        return Err(ClientError::Resolve {
            host,
            message: "no addresses".into(),
        });
    }
    Ok(addrs)
}

/// The header lines every request sends, rendered once: host, content
/// type, user agent, the API key, the user's headers, and (a plain-HTTP
/// request through a proxy) the proxy's credentials.
fn header_lines(
    opts: &ClientOptions,
    base: &BaseUrl,
    proxy: Option<&proxy::Proxy>,
) -> Result<Vec<u8>, ClientError> {
    let mut lines = Vec::new();
    header_line(&mut lines, "host", &base.authority())?;
    header_line(&mut lines, "content-type", "application/json")?;
    header_line(
        &mut lines,
        "user-agent",
        concat!("goodput/", env!("CARGO_PKG_VERSION")),
    )?;
    if opts.endpoint == Endpoint::Messages {
        // Anthropic's API takes the key in `x-api-key`, and names the
        // version of its API the request is written for.
        if let Some(key) = &opts.api_key {
            header_line(&mut lines, "x-api-key", key)
                .map_err(|_| ClientError::BadHeader("x-api-key: <key>".into()))?;
        }
        let version = crate::request::protocol::messages::ANTHROPIC_VERSION;
        header_line(&mut lines, "anthropic-version", version)?;
    } else if let Some(key) = &opts.api_key {
        header_line(&mut lines, "authorization", &format!("Bearer {key}"))
            .map_err(|_| ClientError::BadHeader("Authorization: Bearer <key>".into()))?;
    }
    for h in &opts.headers {
        let (name, value) = h
            .split_once(':')
            .ok_or_else(|| ClientError::BadHeader(h.clone()))?;
        header_line(&mut lines, name.trim(), value.trim())
            .map_err(|_| ClientError::BadHeader(h.clone()))?;
    }
    // A plain-HTTP request through a proxy carries the proxy's
    // credentials; an https one sends them only in its CONNECT.
    if let (Some(p), false) = (proxy, base.https) {
        if let Some(a) = &p.authorization {
            header_line(&mut lines, "proxy-authorization", a)?;
        }
    }
    Ok(lines)
}

/// What must never be printed or saved, even when a server echoes it back
/// in an error body: the API key, secret headers' values, the proxy's
/// credentials; longest first, so a secret containing another is redacted
/// whole.
fn secrets(opts: &ClientOptions, proxy: Option<&proxy::Proxy>) -> Vec<String> {
    let mut secrets: Vec<String> = opts.api_key.iter().cloned().collect();
    for h in &opts.headers {
        if let Some((name, value)) = h.split_once(':') {
            if is_secret_header(name.trim()) {
                secrets.push(value.trim().to_string());
                if let Some(token) = value.split_whitespace().nth(1) {
                    secrets.push(token.to_string());
                }
            }
        }
    }
    if let Some(a) = proxy.and_then(|p| p.authorization.clone()) {
        secrets.push(a.trim_start_matches("Basic ").to_string());
        secrets.push(a);
    }
    secrets.retain(|s| s.len() >= 4);
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    secrets
}

impl Client {
    /// Resolve the host once and prepare headers and TLS.
    pub async fn new(opts: ClientOptions, clock: RunClock) -> Result<Self, ClientError> {
        let base = BaseUrl::parse(&opts.url)?;
        let proxy = if opts.no_proxy {
            None
        } else {
            proxy::from_env(&base, |k| std::env::var(k).ok())?
        };
        // Through a proxy, only the proxy's name is resolved here (the
        // proxy resolves the target's, as with curl).
        let (host, port) = match &proxy {
            Some(p) => (p.host.clone(), p.port),
            None => (base.host.clone(), base.port),
        };
        let addrs = resolve(host, port).await?;
        let tls = if base.https {
            let config = tls::client_config(&opts.tls)?;
            let name = rustls::pki_types::ServerName::try_from(base.host.clone())
                .map_err(|e| ClientError::Tls(e.to_string()))?;
            Some((tokio_rustls::TlsConnector::from(config), name))
        } else {
            None
        };
        let lines = header_lines(&opts, &base, proxy.as_ref())?;
        let endpoint_path = base.path(opts.endpoint.path());
        let secrets = secrets(&opts, proxy.as_ref());
        Ok(Client {
            inner: Arc::new(Inner {
                proxy,
                secrets,
                base,
                addrs,
                tls,
                pool: Mutex::new(Vec::new()),
                header_lines: lines,
                endpoint_path,
                run_id: AtomicU64::new(0),
                stale_discarded: AtomicU64::new(0),
                stale_resent: AtomicU64::new(0),
                reused_ok: AtomicU64::new(0),
                no_pool: AtomicBool::new(false),
                sequence_context: AtomicU32::new(0),
                clock,
                opts,
                watchdog: Watchdog::start(clock),
            }),
        })
    }

    /// The parsed base URL requests go to.
    pub fn base(&self) -> &BaseUrl {
        &self.inner.base
    }

    /// What the server did to the pooled connections so far.
    pub fn connection_stats(&self) -> ConnectionStats {
        ConnectionStats {
            stale_discarded: self.inner.stale_discarded.load(Relaxed),
            stale_resent: self.inner.stale_resent.load(Relaxed),
            pooling_stopped: self.inner.no_pool.load(Relaxed),
        }
    }

    /// The server closed a connection after its response (found at the
    /// peek, or by a reused connection's failure before any byte). After
    /// [`CLOSES_BEFORE_NO_POOL`] of them, and at least twice as many as
    /// successful reuses, pooling stops: each request gets its own
    /// connection (a pool that fails most of its reuses saves nothing and
    /// costs the resent requests a round trip).
    fn closed_after_response(&self) {
        let closes =
            self.inner.stale_discarded.load(Relaxed) + self.inner.stale_resent.load(Relaxed);
        let ok = self.inner.reused_ok.load(Relaxed);
        if closes >= CLOSES_BEFORE_NO_POOL && closes >= 2 * ok {
            self.inner.no_pool.store(true, Relaxed);
            if let Ok(mut pool) = self.inner.pool.lock() {
                pool.clear();
            }
        }
    }

    /// Open `n` connections ahead of the measured phase (closed loop may do
    /// so: connection setup is then not inside any request's latency).
    /// Connections already pooled count toward `n`.
    pub async fn prewarm(&self, n: usize) {
        if self.inner.no_pool.load(Relaxed) {
            return;
        }
        let have = self.inner.pool.lock().map(|p| p.len()).unwrap_or(0);
        let mut opened = Vec::with_capacity(n.saturating_sub(have));
        for _ in have..n {
            match tokio::time::timeout(self.inner.opts.connect_timeout, self.connect()).await {
                Ok(Ok(c)) => opened.push(c),
                _ => break,
            }
        }
        if let Ok(mut pool) = self.inner.pool.lock() {
            pool.extend(opened);
        }
    }

    fn render(&self, method: &str, path: &str, body: &[u8], request_tag: &str) -> Vec<u8> {
        let mut out = Vec::with_capacity(256 + self.inner.header_lines.len() + body.len());
        let id = format!("{:08x}-{}", self.inner.run_id.load(Relaxed), request_tag);
        // Through a proxy, a plain-HTTP request names its target in full.
        let absolute;
        let path = match (&self.inner.proxy, self.inner.base.https) {
            (Some(_), false) => {
                absolute = format!("http://{}{path}", self.inner.base.authority());
                absolute.as_str()
            }
            _ => path,
        };
        h1::request_head(
            &mut out,
            method,
            path,
            &self.inner.header_lines,
            &id,
            body.len(),
        );
        out.extend_from_slice(body);
        out
    }

    /// A plain request outside the measured phase (for `/v1/models` and the
    /// probe), on a fresh connection: returns the status and the whole body.
    pub async fn simple(
        &self,
        method: &str,
        route: &str,
        body: Option<Bytes>,
        request_tag: &str,
    ) -> Result<(u16, Bytes), ClientError> {
        let path = self.inner.base.path(route);
        self.simple_at(method, path, body, request_tag).await
    }

    /// A plain GET of a path outside the API prefix (a server's `/metrics`).
    pub async fn get_path(
        &self,
        path: &str,
        request_tag: &str,
    ) -> Result<(u16, Bytes), ClientError> {
        self.simple_at("GET", path.to_string(), None, request_tag)
            .await
    }

    /// A plain POST of a JSON body to a path outside the API prefix (a
    /// server's `/tokenize`).
    pub async fn post_path(
        &self,
        path: &str,
        body: Bytes,
        request_tag: &str,
    ) -> Result<(u16, Bytes), ClientError> {
        self.simple_at("POST", path.to_string(), Some(body), request_tag)
            .await
    }

    async fn simple_at(
        &self,
        method: &str,
        path: String,
        body: Option<Bytes>,
        request_tag: &str,
    ) -> Result<(u16, Bytes), ClientError> {
        let clock = self.inner.clock;
        let fut = async {
            let mut conn = self
                .connect()
                .await
                .map_err(|e| ClientError::Request(e.message))?;
            let bytes = self.render(
                method,
                &path,
                body.as_deref().unwrap_or_default(),
                request_tag,
            );
            // Bounded by the timeout around this whole exchange.
            let mut timer = Reader::new(clock, None);
            conn.send(&bytes)
                .await
                .map_err(|e| ClientError::Request(e.to_string()))?;
            let (head, _) = read_head(&mut conn, &mut timer)
                .await
                .map_err(|e| ClientError::Request(e.message))?;
            let body = read_body(&mut conn, &head, &mut timer, 16 << 20)
                .await
                .map_err(|e| ClientError::Request(e.message))?;
            Ok((head.status, Bytes::from(body)))
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

    async fn connect(&self) -> Result<Conn, RequestError> {
        let mut last = String::new();
        for addr in &self.inner.addrs {
            let via = self.inner.proxy.as_ref();
            let mut stream = match TcpStream::connect(addr).await {
                Ok(s) => s,
                // Out of file descriptors is the client's own limit, never the server's fault.
                Err(e) if matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) => {
                    return Err(err(
                        ErrorKind::ClientLimit,
                        format!("opening a socket to {addr}: {e} (raise the open-files limit: ulimit -n)"),
                    ));
                }
                Err(e) => {
                    last = match via {
                        Some(p) => {
                            format!("proxy {} (from {}) at {addr}: {e}", p.authority(), p.from)
                        }
                        None => format!("{addr}: {e}"),
                    };
                    continue;
                }
            };
            if let (Some(p), true) = (via, self.inner.base.https) {
                let authority = format!("{}:{}", self.inner.base.host, self.inner.base.port);
                if let Err(why) = proxy::connect_tunnel(&mut stream, p, &authority).await {
                    return Err(err(
                        ErrorKind::Proxy,
                        format!("proxy {}: {why}", p.authority()),
                    ));
                }
            }
            let _ = stream.set_nodelay(true);
            let io = match &self.inner.tls {
                None => Stream::Plain(stream),
                Some((connector, name)) => match connector.connect(name.clone(), stream).await {
                    Ok(tls) => Stream::Tls(Box::new(tls)),
                    Err(e) => {
                        return Err(err(
                            ErrorKind::Connect,
                            format!("TLS handshake with {addr}: {e}"),
                        ))
                    }
                },
            };
            return Ok(Conn::new(io));
        }
        let kind = if self.inner.proxy.is_some() {
            ErrorKind::Proxy
        } else {
            ErrorKind::Connect
        };
        Err(err(kind, last))
    }

    /// A pooled connection the server has not closed, if there is one.
    /// Closed ones (the server dropped them while idle) are discarded here,
    /// before anything is written on them.
    fn checkout_pooled(&self) -> Option<Conn> {
        loop {
            let conn = self.inner.pool.lock().ok()?.pop()?;
            if conn.is_open() {
                return Some(conn);
            }
            self.inner.stale_discarded.fetch_add(1, Relaxed);
            self.closed_after_response();
        }
    }

    fn checkin(&self, conn: Conn) {
        if self.inner.no_pool.load(Relaxed) {
            return;
        }
        if let Ok(mut pool) = self.inner.pool.lock() {
            pool.push(conn);
        }
    }

    /// A new connection, its start recorded as the request's `t_connect`.
    async fn fresh(&self, rec: &mut RequestRecord) -> Result<Conn, RequestError> {
        rec.t_connect = Some(self.inner.clock.now_ns());
        match tokio::time::timeout(self.inner.opts.connect_timeout, self.connect()).await {
            Ok(r) => r,
            Err(_) => Err(err(
                ErrorKind::Connect,
                format!(
                    "connect timed out after {:?}",
                    self.inner.opts.connect_timeout
                ),
            )),
        }
    }

    /// Write the request on `conn` and read the response head; `t_send` is
    /// taken right before the write.
    async fn send_head(
        &self,
        mut conn: Conn,
        bytes: &[u8],
        rec: &mut RequestRecord,
    ) -> (Conn, Reader, Result<(h1::Head, u64), RequestError>) {
        let clock = self.inner.clock;
        let opts = &self.inner.opts;
        // Register first: the bookkeeping (a short lock) must not sit
        // between t_send and the write.
        let guard = self.inner.watchdog.register(
            conn.io.raw_fd(),
            clock.now_ns(),
            opts.timeout,
            opts.idle_timeout,
        );
        let mut timer = Reader::new(clock, Some(guard));
        rec.t_send = Some(clock.now_ns());
        let head = match conn.send(bytes).await {
            Ok(()) => read_head(&mut conn, &mut timer).await,
            Err(e) => Err(timer.failure(format!("writing the request: {e}"))),
        };
        (conn, timer, head)
    }

    async fn exchange(
        &self,
        req: &PreparedRequest,
        rec: &mut RequestRecord,
    ) -> Result<(), RequestError> {
        let clock = self.inner.clock;
        let mut bytes = self.render(
            "POST",
            &self.inner.endpoint_path,
            &req.body,
            &req.id.to_string(),
        );
        if let Some(line) = &req.header_line {
            // A priority class's header (`--priority-mix …:header=`), after
            // the request line.
            let at = bytes.iter().position(|&b| b == b'\n').map_or(0, |i| i + 1);
            bytes.splice(at..at, line.bytes());
        }
        let pooled = self.checkout_pooled();
        let reused = pooled.is_some();
        let conn = match pooled {
            Some(c) => c,
            None => self.fresh(rec).await?,
        };
        let mut answered_on_reuse = reused;
        let (mut conn, mut timer, head) = match self.send_head(conn, &bytes, rec).await {
            (conn, timer, Err(_)) if reused && timer.nothing_received() => {
                answered_on_reuse = false;
                // The server closed this connection after its last response
                // and never read the request: send it again, once, fresh.
                drop((timer, conn));
                self.inner.stale_resent.fetch_add(1, Relaxed);
                self.closed_after_response();
                let conn = self.fresh(rec).await?;
                self.send_head(conn, &bytes, rec).await
            }
            answer => answer,
        };
        if answered_on_reuse && head.is_ok() {
            self.inner.reused_ok.fetch_add(1, Relaxed);
        }
        let (head, at) = head?;
        rec.t_head = Some(at);
        conn.uses += 1;
        rec.http_status = Some(head.status);
        if !(200..300).contains(&head.status) {
            let body = read_body(&mut conn, &head, &mut timer, 2048)
                .await
                .unwrap_or_default();
            return Err(RequestError {
                kind: ErrorKind::HttpStatus,
                message: status_message(&head, &body),
                retry_after: head.retry_after.clone(),
            });
        }
        if head.is_html() {
            // A web page is never the API's answer, whatever its status: a
            // proxy's sign-in page, a gateway's error page. Parsing it as a
            // stream would find no event and blame a cut.
            let body = read_body(&mut conn, &head, &mut timer, 2048)
                .await
                .unwrap_or_default();
            return Err(a_web_page(&head, &body, req.stream));
        }
        let reusable = if req.stream {
            read_stream(&mut conn, &head, &mut timer, rec, self.inner.opts.endpoint).await?
        } else if let Some(sent) = req.inputs {
            let body = read_body(&mut conn, &head, &mut timer, 256 << 20).await?;
            let endpoint = self.inner.opts.endpoint;
            pooling::pooling_response(endpoint, &body, clock.now_ns(), sent, rec)?;
            true
        } else {
            let body = read_body(&mut conn, &head, &mut timer, 64 << 20).await?;
            whole_response(&body, clock.now_ns(), rec, self.inner.opts.endpoint)?;
            true
        };
        // Deregister from the watchdog before the connection can serve
        // another request.
        drop(timer);
        if reusable && !head.close && conn.buffered().is_empty() {
            self.checkin(conn);
        }
        if rec.events.is_empty() && req.inputs.is_none() {
            // A 200 that carried no content is no answer: counting it as a
            // success would report thousands of requests/s of nothing.
            return Err(no_content(head.status, rec));
        }
        Ok(())
    }
}

impl Transport for Client {
    fn begin_run(&self, run_id: u64) {
        self.inner.run_id.store(run_id, Relaxed);
        self.inner.watchdog.reset();
    }

    /// Send one request and record everything that happened. Never fails:
    /// failures are recorded on the returned record.
    async fn execute(&self, req: &PreparedRequest, t_sched: u64) -> RequestRecord {
        let mut rec = req.new_record(t_sched);
        rec.context_tokens = Some(self.inner.sequence_context.load(Relaxed)).filter(|&c| c > 0);
        if let Err(mut e) = self.exchange(req, &mut rec).await {
            e.message = self.redact(e.message);
            rec.error = Some(e);
            rec.t_done = self.inner.clock.now_ns();
        }
        rec
    }

    fn stop_all(&self, kind: ErrorKind) {
        self.inner.watchdog.fire_all(kind);
    }
}

/// A header whose value is a secret: never printed, saved or echoed.
pub fn is_secret_header(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n == "authorization"
        || n.contains("key")
        || n.contains("token")
        || n.contains("secret")
        || n == "cookie"
}

impl Client {
    /// The context the server gives one sequence, as it said when the run
    /// began; every record from now on carries it.
    pub fn set_sequence_context(&self, tokens: u32) {
        self.inner.sequence_context.store(tokens, Relaxed);
    }

    /// `text` with every secret (the API key, secret headers' values)
    /// replaced by `<redacted>`.
    pub fn redact(&self, text: String) -> String {
        let mut text = text;
        for s in &self.inner.secrets {
            if text.contains(s.as_str()) {
                text = text.replace(s.as_str(), "<redacted>");
            }
        }
        text
    }
}
