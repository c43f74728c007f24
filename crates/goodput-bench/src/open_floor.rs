//! The bytes-only client in open loop: the floor of schedule lag.
//!
//! One sender on a one-thread tokio runtime waits for each Poisson arrival
//! of goodput's own schedule (the same [`Schedule`], the same seed, the same
//! [`PreciseTimer`]: a timerfd in the runtime's epoll) and spawns the
//! request: a pooled keep-alive connection (a new one when none is idle),
//! the request written right after the send time is read, the response only
//! scanned ([`crate::bytes_client::read_response`]). No prompt building, no
//! records, no aggregator, no parsing: whatever schedule lag goodput shows
//! above this client's at the same rate is its own; what this client shows
//! is the machine's.
//!
//! Timings are written as the closed-loop floor's are, with `sched_s` and
//! `schedule_lag_ms` added, so the bench reads them as goodput's records.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::Context as _;
use goodput_core::load::{Arrival, Load, Schedule};
use goodput_core::load::{PreciseTimer, Timer as _};
use goodput_core::load::{Warmup, WarmupPolicy};
use tokio::io::AsyncWriteExt as _;
use tokio::net::TcpStream;

use crate::clients::{self, ClientConfig, ClientSummary, Timing};
use crate::clock::monotonic_ns;

/// The seed goodput's runs use by default, so both send the same arrivals.
const SEED: u64 = 0;

/// Sends `config.requests` requests at Poisson arrivals of `rate` req/s,
/// the first ones marked warm-up as goodput marks its own (the caller adds
/// them to the count, as goodput sends them on top of its `--num-prompts`).
pub fn run(config: &ClientConfig, rate: f64) -> anyhow::Result<ClientSummary> {
    anyhow::ensure!(rate > 0.0 && rate.is_finite(), "--rate must be positive");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("building the open-loop floor's runtime")?;
    runtime.block_on(run_async(config, rate))
}

type Pool = Arc<Mutex<Vec<TcpStream>>>;

async fn run_async(config: &ClientConfig, rate: f64) -> anyhow::Result<ClientSummary> {
    let start = Instant::now();
    let body: Arc<str> = clients::request_body(config.max_tokens, config.input_words).into();
    let timer = PreciseTimer::new();
    let pool: Pool = Arc::new(Mutex::new(Vec::new()));
    let load = Load::Open {
        rate,
        arrival: Arrival::Poisson,
        max_concurrency: None,
    };
    let mut schedule = Schedule::new(load, SEED);
    // goodput's own warm-up for this load: those requests are sent and
    // marked, and the bench leaves them out as it leaves out goodput's.
    let warmup = match WarmupPolicy::Auto.resolve(&load) {
        Warmup::Requests(n) => n,
        _ => 0,
    };
    let mut tasks = tokio::task::JoinSet::new();
    let mut outcomes: Vec<Outcome> = Vec::with_capacity(config.requests);
    let origin_instant = Instant::now();
    let origin = monotonic_ns();
    for request_id in 0..config.requests as u64 {
        let Some(offset) = schedule.next_offset() else {
            break;
        };
        let at = origin_instant + offset;
        timer.sleep_until(at).await;
        let sched_ns = origin + offset.as_nanos() as u64;
        tasks.spawn(request(
            config.addr,
            body.clone(),
            pool.clone(),
            request_id,
            sched_ns,
            request_id < warmup,
        ));
        // Finished tasks are reaped as the run goes, so the set stays small.
        while let Some(done) = tasks.try_join_next() {
            outcomes.push(done.context("a request task panicked")?);
        }
    }
    let mut total = ClientSummary {
        clock_origin_monotonic_ns: Some(origin),
        ..ClientSummary::default()
    };
    let mut timings = Vec::with_capacity(config.requests);
    clients::join_until(&mut tasks, start + config.time_limit, |o| outcomes.push(o))
        .await
        .context("a request task panicked")?;
    for (timing, scan, error) in outcomes {
        total.requests += 1;
        match (scan, error) {
            (Some((events, bytes)), _) => {
                total.ok += 1;
                total.data_events += events;
                total.bytes += bytes;
            }
            (None, error) => {
                total.failed += 1;
                if let Some(e) = error {
                    total.first_error.get_or_insert(e);
                }
            }
        }
        timings.push(timing);
    }
    total.count_missing(config.requests);
    total.wall_s = start.elapsed().as_secs_f64();
    if let Some(path) = &config.timings {
        clients::write_timings(path, origin, &timings)?;
    }
    Ok(total)
}

/// What one request did: its timing, `(events, bytes)` when it succeeded,
/// its error when it failed.
type Outcome = (Timing, Option<(u64, u64)>, Option<String>);

/// One request on a pooled connection (or a new one), its outcome kept.
async fn request(
    addr: std::net::SocketAddr,
    body: Arc<str>,
    pool: Pool,
    request_id: u64,
    sched_ns: u64,
    warmup: bool,
) -> Outcome {
    let mut head = Vec::with_capacity(body.len() + 200);
    crate::bytes_client::write_request(&mut head, addr, request_id, &body);
    let mut send_ns = 0;
    let mut first_event_ns = None;
    let mut last_event_ns = None;
    let pooled = pool.lock().ok().and_then(|mut p| p.pop());
    let result = async {
        let mut stream = match pooled {
            Some(s) => s,
            None => {
                let s = TcpStream::connect(addr).await?;
                s.set_nodelay(true)?;
                s
            }
        };
        send_ns = monotonic_ns();
        stream.write_all(&head).await?;
        let mut buf = vec![0u8; READ_BUFFER];
        let scan = crate::bytes_client::read_response(
            &mut stream,
            &mut buf,
            &mut first_event_ns,
            &mut last_event_ns,
        )
        .await?;
        if let Ok(mut p) = pool.lock() {
            p.push(stream);
        }
        Ok::<_, std::io::Error>(scan)
    }
    .await;
    let timing = Timing {
        request_id,
        ok: result.is_ok(),
        send_ns,
        first_event_ns,
        last_event_ns,
        sched_ns: Some(sched_ns),
        warmup,
    };
    match result {
        Ok(scan) => (timing, Some((scan.events, scan.bytes)), None),
        Err(e) => (timing, None, Some(e.to_string())),
    }
}

/// Read buffer per request: the short answers of an open-loop run fit in a
/// few KB (the closed-loop floor's 64 KB buffer is for long ones).
const READ_BUFFER: usize = 4 * 1024;
