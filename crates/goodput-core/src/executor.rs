//! Executor: the one engine every load shape runs on.
//!
//! It pulls requests from the [`Workload`], asks the [`Schedule`] when each
//! should go, waits for that absolute instant (open loop) or for a free slot
//! (closed loop, and open loop under `--max-concurrency`), and spawns one
//! task per request. Tasks send their finished [`RequestRecord`] down a
//! channel to the aggregator; nothing on this path locks shared results or
//! grows with the number of requests sent.
//!
//! `t_sched` is the intended arrival time in open loop (so latency measured
//! from it corrects coordinated omission) and the moment a slot freed in
//! closed loop. A request the client cannot send on time is sent late, with
//! the lag on its record; none is dropped.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, watch, Semaphore};

use crate::client::Client;
use crate::clock::RunClock;
use crate::record::{ErrorKind, RequestRecord};
use crate::schedule::{Load, Schedule};
use crate::timer::Timer;
use crate::workload::Workload;

/// The slot count of an uncapped open loop: more than can ever be in
/// flight, and small enough that draining can acquire all of them at once.
const UNCAPPED: usize = 1 << 30;

/// Requests sent before the measured phase.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Warmup {
    None,
    Requests(u64),
    #[serde(with = "secs")]
    Duration(Duration),
}

mod secs {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;
    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        Ok(Duration::from_secs_f64(f64::deserialize(d)?))
    }
}

/// What to run: the load, its bounds, and how to end.
#[derive(Debug, Clone)]
pub struct RunPlan {
    pub load: Load,
    /// Measured requests to send (None: unbounded, `duration` must be set).
    pub num_prompts: Option<u64>,
    /// Sending window of the measured phase.
    pub duration: Option<Duration>,
    pub warmup: Warmup,
    /// How long in-flight requests may finish after sending ends.
    pub drain_timeout: Duration,
    pub seed: u64,
}

/// Stop signals for a running executor, shared with whoever handles Ctrl-C.
#[derive(Clone)]
pub struct RunControl {
    stop_tx: Arc<watch::Sender<bool>>,
    cancel_tx: Arc<watch::Sender<Option<ErrorKind>>>,
}

impl Default for RunControl {
    fn default() -> Self {
        Self::new()
    }
}

impl RunControl {
    pub fn new() -> Self {
        RunControl {
            stop_tx: Arc::new(watch::channel(false).0),
            cancel_tx: Arc::new(watch::channel(None).0),
        }
    }

    /// Stop sending; in-flight requests may finish (up to the drain timeout).
    pub fn stop_sending(&self) {
        self.stop_tx.send_replace(true);
    }

    /// Cancel every in-flight request now (recorded as `cancelled`).
    pub fn cancel_in_flight(&self) {
        self.cancel_tx.send_replace(Some(ErrorKind::Cancelled));
    }
}

/// What the executor knows when it returns (records went to the channel).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ExecSummary {
    pub sent_warmup: u64,
    pub sent_measured: u64,
    /// Sending was stopped by the user (Ctrl-C).
    pub interrupted: bool,
    /// In-flight requests cancelled when the drain timeout ended.
    pub drain_timed_out: bool,
    /// When the target concurrency was first reached (closed loop): the
    /// start of the steady-state window.
    pub ramp_end_ns: Option<u64>,
}

/// Live counters for progress displays (read-only for observers).
#[derive(Debug, Default)]
pub struct Progress {
    pub sent: std::sync::atomic::AtomicU64,
    pub finished: std::sync::atomic::AtomicU64,
}

/// Run the plan to its end. Records of every request (warm-up included,
/// marked) are sent on `records`.
#[allow(clippy::too_many_arguments)]
pub async fn execute<T: Timer>(
    plan: &RunPlan,
    client: Client,
    mut workload: Workload,
    clock: RunClock,
    timer: T,
    control: RunControl,
    records: mpsc::UnboundedSender<RequestRecord>,
    progress: Arc<Progress>,
) -> ExecSummary {
    use std::sync::atomic::Ordering::Relaxed;
    let cap = plan
        .load
        .concurrency_cap()
        .unwrap_or(UNCAPPED)
        .min(UNCAPPED);
    let slots = Arc::new(Semaphore::new(cap));
    let mut schedule = Schedule::new(plan.load, plan.seed);
    let mut stop_rx = control.stop_tx.subscribe();
    let cancel_rx = control.cancel_tx.subscribe();
    // Cancellation reaches requests through the client's watchdog, which
    // shuts their sockets down; the request path itself polls nothing for it.
    let canceller = {
        let mut rx = cancel_rx.clone();
        let client = client.clone();
        tokio::spawn(async move {
            if let Ok(kind) = rx.wait_for(|c| c.is_some()).await {
                if let Some(kind) = *kind {
                    client.stop_all(kind);
                }
            }
        })
    };
    let mut summary = ExecSummary::default();
    // The schedule starts now, when sending starts (not at the run clock's origin,
    // which precedes model discovery, tokenizer loading and the probe).
    let origin = crate::clock::now();
    let mut measure_start: Option<std::time::Instant> = None;
    let mut warmup_start: Option<std::time::Instant> = None;

    'send: loop {
        if *stop_rx.borrow() {
            summary.interrupted = true;
            break;
        }
        let now = crate::clock::now();
        let warmup = match plan.warmup {
            Warmup::None => false,
            Warmup::Requests(n) => summary.sent_warmup < n,
            Warmup::Duration(d) => warmup_start.is_none_or(|s| now < s + d),
        };
        if !warmup {
            if plan.num_prompts.is_some_and(|n| summary.sent_measured >= n) {
                break;
            }
            if let (Some(d), Some(s)) = (plan.duration, measure_start) {
                if now >= s + d {
                    break;
                }
            }
        }
        let req = workload.next_request(warmup);
        let offset = schedule.next_offset();
        if let Some(off) = offset {
            let target = origin + off;
            // A duration-bounded run does not send arrivals past its end.
            if let (false, Some(d), Some(s)) = (warmup, plan.duration, measure_start) {
                if target >= s + d {
                    break;
                }
            }
            tokio::select! {
                biased;
                _ = stop_rx.wait_for(|s| *s) => { summary.interrupted = true; break 'send; }
                _ = timer.sleep_until(target) => {}
            }
        }
        let permit = tokio::select! {
            biased;
            _ = stop_rx.wait_for(|s| *s) => { summary.interrupted = true; break 'send; }
            p = slots.clone().acquire_owned() => match p { Ok(p) => p, Err(_) => break 'send },
        };
        // Closed loop: the slot may have freed after the sending window closed.
        if let (false, None, Some(d), Some(s)) = (warmup, offset, plan.duration, measure_start) {
            if crate::clock::now() >= s + d {
                drop(permit);
                break;
            }
        }
        let t_sched = match offset {
            Some(off) => clock.ns(origin + off),
            None => clock.now_ns(),
        };
        let sched_instant = clock.instant(t_sched);
        if warmup {
            summary.sent_warmup += 1;
            warmup_start.get_or_insert(sched_instant);
        } else {
            summary.sent_measured += 1;
            measure_start.get_or_insert(sched_instant);
            if !plan.load.is_open() && summary.sent_measured == cap as u64 {
                summary.ramp_end_ns = Some(t_sched);
            }
        }
        progress.sent.fetch_add(1, Relaxed);
        let client = client.clone();
        let tx = records.clone();
        let progress = progress.clone();
        tokio::spawn(async move {
            let rec = client.execute(&req, t_sched).await;
            progress.finished.fetch_add(1, Relaxed);
            let _ = tx.send(rec);
            drop(permit);
        });
    }

    // Drain: wait for every slot to come back, up to the drain timeout.
    let all = cap as u32;
    let drained = tokio::select! {
        r = tokio::time::timeout(plan.drain_timeout, slots.acquire_many(all)) => r.is_ok(),
        _ = async { let mut c = cancel_rx.clone(); let _ = c.wait_for(|c| c.is_some()).await; } => false,
    };
    if !drained {
        if control.cancel_tx.borrow().is_none() {
            summary.drain_timed_out = true;
            control.cancel_tx.send_replace(Some(ErrorKind::Incomplete));
        }
        let _ = tokio::time::timeout(Duration::from_secs(5), slots.acquire_many(all)).await;
    }
    canceller.abort();
    summary
}
