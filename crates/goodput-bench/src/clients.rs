//! What the bench's own client children share (the bytes-only floor in
//! [`crate::bytes_client`], the hyper client in [`crate::hyper_client`]):
//! what they are asked to do, the request they send, how the requests are
//! shared out over keep-alive connections on a tokio runtime (one thread
//! for the floor, two workers for the hyper client, as goodput runs), the
//! JSON summary they print, and the per-request timings file.
//!
//! Only the reading of a response differs between them, so their CPU per
//! token differs by what their way of reading costs, nothing else.

use std::future::Future;
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde::Serialize;

use crate::clock::monotonic_ns;

/// What a client child is asked to do.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Server address.
    pub addr: SocketAddr,
    /// Connections, each with one request in flight at a time.
    pub concurrency: usize,
    /// Requests in total, shared out over the connections.
    pub requests: usize,
    /// `max_tokens` of each request.
    pub max_tokens: u64,
    /// Words in each prompt.
    pub input_words: usize,
    /// Stop everything after this long.
    pub time_limit: Duration,
    /// Where to write per-request timings (JSONL), if anywhere.
    pub timings: Option<PathBuf>,
}

/// What a client child saw: printed as one JSON line on stdout.
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize)]
pub struct ClientSummary {
    /// Requests sent.
    pub requests: u64,
    /// Responses read to their end with status 200.
    pub ok: u64,
    /// Requests that failed (connection error, non-200, time limit).
    pub failed: u64,
    /// `data: ` lines seen, including usage chunks and `[DONE]`.
    pub data_events: u64,
    /// Response bytes read (the bytes-only client: the whole response; the
    /// hyper client: the body's data frames).
    pub bytes: u64,
    /// Wall time from start to the last response, in seconds.
    pub wall_s: f64,
    /// The first error seen, if any.
    pub first_error: Option<String>,
    /// The origin of the timings' `send_s` on `CLOCK_MONOTONIC`, ns.
    #[serde(default)]
    pub clock_origin_monotonic_ns: Option<u64>,
}

impl ClientSummary {
    fn add(&mut self, other: ClientSummary) {
        self.requests += other.requests;
        self.ok += other.ok;
        self.failed += other.failed;
        self.data_events += other.data_events;
        self.bytes += other.bytes;
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
    }
}

/// When one request was sent and its first token read, `CLOCK_MONOTONIC` ns.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    pub request_id: u64,
    pub ok: bool,
    pub send_ns: u64,
    pub first_event_ns: Option<u64>,
    /// The read that brought the start of the last content event (the
    /// bytes-only floor; `None` from the hyper client).
    pub last_event_ns: Option<u64>,
    /// The intended send time, in open loop ([`crate::open_floor`]).
    pub sched_ns: Option<u64>,
    /// A warm-up request (open loop: the first ones, as goodput's).
    pub warmup: bool,
}

/// One keep-alive connection's part of the run: number `index` of
/// `concurrency`, sending `share` requests one after another.
pub struct Connection {
    pub addr: SocketAddr,
    pub index: usize,
    pub concurrency: usize,
    pub share: usize,
    /// The JSON body of every request ([`request_body`]).
    pub body: String,
}

impl Connection {
    /// The run-wide id of this connection's request number `seq`; it goes
    /// in `x-request-id: <client>-<id>` and in the timings.
    pub fn request_id(&self, seq: usize) -> u64 {
        (seq * self.concurrency + self.index) as u64
    }
}

/// The runtime a client child runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runtime {
    /// One thread: the leanest a tokio client can be (no work stealing, no
    /// cross-thread wake-ups). The floor runs so.
    OneThread,
    /// Two workers, as goodput runs: what a client built like goodput pays.
    TwoWorkers,
}

/// Runs `connection` for every connection of `config` on `runtime` (named
/// `name` in errors), within the time limit, and returns the totals;
/// writes the timings file when asked for.
pub fn run<F, Fut>(
    config: &ClientConfig,
    name: &str,
    runtime: Runtime,
    connection: F,
) -> anyhow::Result<ClientSummary>
where
    F: Fn(Connection) -> Fut,
    Fut: Future<Output = (ClientSummary, Vec<Timing>)> + Send + 'static,
{
    let runtime = match runtime {
        Runtime::OneThread => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build(),
        Runtime::TwoWorkers => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build(),
    }
    .with_context(|| format!("building the {name} client's runtime"))?;
    runtime.block_on(run_async(config, connection))
}

async fn run_async<F, Fut>(config: &ClientConfig, connection: F) -> anyhow::Result<ClientSummary>
where
    F: Fn(Connection) -> Fut,
    Fut: Future<Output = (ClientSummary, Vec<Timing>)> + Send + 'static,
{
    anyhow::ensure!(config.concurrency > 0, "--concurrency must be at least 1");
    let start = Instant::now();
    let origin = monotonic_ns();
    let body = request_body(config.max_tokens, config.input_words);
    let mut tasks = tokio::task::JoinSet::new();
    for index in 0..config.concurrency {
        // Spread the remainder over the first connections.
        let share = config.requests / config.concurrency
            + usize::from(index < config.requests % config.concurrency);
        if share == 0 {
            continue;
        }
        tasks.spawn(connection(Connection {
            addr: config.addr,
            index,
            concurrency: config.concurrency,
            share,
            body: body.clone(),
        }));
    }
    let mut total = ClientSummary {
        clock_origin_monotonic_ns: Some(origin),
        ..ClientSummary::default()
    };
    let mut timings = Vec::with_capacity(config.requests);
    join_until(&mut tasks, start + config.time_limit, |(part, times)| {
        total.add(part);
        timings.extend(times);
    })
    .await
    .context("a connection task panicked")?;
    total.count_missing(config.requests);
    total.wall_s = start.elapsed().as_secs_f64();
    if let Some(path) = &config.timings {
        write_timings(path, origin, &timings)?;
    }
    Ok(total)
}

/// Joins `tasks` until they have all ended or `deadline` has passed, when
/// the rest are aborted; each result goes to `each`. An error is a task's
/// panic.
pub(crate) async fn join_until<T: 'static>(
    tasks: &mut tokio::task::JoinSet<T>,
    deadline: Instant,
    mut each: impl FnMut(T),
) -> Result<(), tokio::task::JoinError> {
    let deadline = tokio::time::Instant::from_std(deadline);
    loop {
        match tokio::time::timeout_at(deadline, tasks.join_next()).await {
            Ok(Some(result)) => each(result?),
            Ok(None) => return Ok(()),
            Err(_) => {
                tasks.abort_all();
                return Ok(());
            }
        }
    }
}

impl ClientSummary {
    /// Requests of the `requests` asked for that never ended (the time
    /// limit cut them off) count as sent and failed.
    pub(crate) fn count_missing(&mut self, requests: usize) {
        let missing = (requests as u64).saturating_sub(self.requests);
        if missing > 0 {
            self.requests += missing;
            self.failed += missing;
            self.first_error
                .get_or_insert_with(|| "time limit reached".to_string());
        }
    }
}

/// One JSON line per request, in the shape of goodput's records.
pub(crate) fn write_timings(
    path: &std::path::Path,
    origin: u64,
    timings: &[Timing],
) -> anyhow::Result<()> {
    let file =
        std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut out = std::io::BufWriter::new(file);
    for t in timings {
        let ttft_ms = t
            .first_event_ns
            .map(|first| (first as f64 - t.send_ns as f64) / 1e6);
        let last_event_ms = t
            .last_event_ns
            .map(|last| (last as f64 - t.send_ns as f64) / 1e6);
        let mut line = serde_json::json!({
            "request_id": t.request_id,
            "ok": t.ok,
            "send_s": (t.send_ns as f64 - origin as f64) / 1e9,
            "ttft_ms": ttft_ms,
            "last_event_ms": last_event_ms,
        });
        if let Some(sched) = t.sched_ns {
            line["sched_s"] = ((sched as f64 - origin as f64) / 1e9).into();
            line["schedule_lag_ms"] = ((t.send_ns as f64 - sched as f64) / 1e6).into();
            line["phase"] = if t.warmup { "warmup" } else { "measure" }.into();
        }
        writeln!(out, "{line}")?;
    }
    out.flush()
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// The JSON body of every request: the shape goodput sends for a completions
/// run (prompt, pinned output length, streaming with usage).
pub fn request_body(max_tokens: u64, input_words: usize) -> String {
    let prompt = vec!["the"; input_words].join(" ");
    serde_json::json!({
        "model": "ref",
        "prompt": prompt,
        "max_tokens": max_tokens,
        "min_tokens": max_tokens,
        "ignore_eos": true,
        "stream": true,
        "stream_options": {"include_usage": true},
    })
    .to_string()
}
