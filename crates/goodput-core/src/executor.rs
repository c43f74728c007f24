//! Executor: the one engine every load shape runs on.
//!
//! It pulls requests from a [`RequestSource`], asks the [`Schedule`] when each
//! should go (unless the source carries its own time, as a trace does), waits
//! for that absolute instant (open loop) or for a free slot (closed loop, and
//! open loop under `--max-concurrency`), and spawns one task per request on a
//! [`Transport`]. Tasks send their finished [`RequestRecord`] down a channel
//! to the aggregator; nothing on this path locks shared results or grows with
//! the number of requests sent.
//!
//! Sessions run on the same loop: a slot is held by a *session* (a
//! single-turn request is a session of one turn), so closed loop means N
//! users each going through sessions. When a turn finishes, its task asks the
//! source's [`FollowUps`] for the next turn, built from the response, and
//! hands it back here with its ready time (the end of the turn plus the think
//! time) and the session's slot; the loop sends it when it is due.
//!
//! `t_sched` is the intended arrival time in open loop (so latency measured
//! from it corrects coordinated omission), the moment a slot freed in closed
//! loop, and the ready time of a session's next turn. A request the client
//! cannot send on time is sent late, with the lag on its record; none is
//! dropped. When sending ends (count, duration, Ctrl-C, or an exhausted
//! source), sessions' pending turns are not sent; requests in flight finish
//! up to the drain timeout and are then stopped as `incomplete`.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, watch, OwnedSemaphorePermit, Semaphore};

use crate::clock::RunClock;
use crate::protocol::PreparedRequest;
use crate::record::{ErrorKind, RequestRecord};
use crate::schedule::{Load, RampUp, Schedule};
use crate::timer::Timer;
use crate::transport::Transport;
use crate::workload::{FollowUps, Prefetch};

/// The slot count of an uncapped open loop: more than can ever be in
/// flight, and small enough that draining can acquire all of them at once.
const UNCAPPED: usize = 1 << 30;

/// Requests sent before the measured phase.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Warmup {
    None,
    Requests(u64),
    #[serde(with = "crate::serde_secs")]
    Duration(Duration),
}

/// How the warm-up is chosen: explicitly, or from the load (`auto`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WarmupPolicy {
    /// One request per slot in closed loop (at least 4); 2 s of arrivals in
    /// open loop (8 to 500 requests): enough that a cold server (first
    /// kernels compiled, caches empty) does not distort the measured phase.
    Auto,
    Fixed(Warmup),
}

impl WarmupPolicy {
    pub fn resolve(self, load: &Load) -> Warmup {
        match self {
            WarmupPolicy::Fixed(w) => w,
            WarmupPolicy::Auto => Warmup::Requests(match *load {
                Load::Closed { concurrency } => (concurrency as u64).max(4),
                Load::Open { rate, .. } if rate.is_finite() => {
                    ((rate * 2.0).ceil() as u64).clamp(8, 500)
                }
                Load::Open { .. } => 8,
            }),
        }
    }
}

/// What to run: the load, its bounds, and how to end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunPlan {
    pub load: Load,
    /// Measured requests to send (None: unbounded, `duration` must be set).
    pub num_prompts: Option<u64>,
    /// Sending window of the measured phase.
    #[serde(with = "crate::serde_secs::option")]
    pub duration: Option<Duration>,
    pub warmup: Warmup,
    /// How long in-flight requests may finish after sending ends.
    #[serde(with = "crate::serde_secs")]
    pub drain_timeout: Duration,
    pub seed: u64,
    /// The load rises to its target over this ramp; the steady-state window
    /// starts at its end.
    #[serde(default)]
    pub ramp_up: Option<RampUp>,
}

/// Stop signals for a running executor, shared with whoever handles signals.
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
    /// Also ends whatever is being prepared (model discovery, the probe).
    pub fn stop_sending(&self) {
        self.stop_tx.send_replace(true);
    }

    /// Cancel every in-flight request now (recorded as `cancelled`).
    pub fn cancel_in_flight(&self) {
        self.cancel_tx.send_replace(Some(ErrorKind::Cancelled));
    }

    /// End the run now because its outcome is settled (a sweep point whose
    /// SLO verdict is known): no more sends, and requests in flight are
    /// stopped as `incomplete` (neither completed nor failed).
    pub fn end_early(&self) {
        self.stop_tx.send_replace(true);
        self.cancel_tx.send_replace(Some(ErrorKind::Incomplete));
    }

    /// A control for one part of a run (a sweep point) that stops and
    /// cancels when this one does, and can also be ended on its own.
    pub fn child(&self) -> RunControl {
        let child = RunControl::new();
        // Already stopped: the child starts stopped (no window for a send).
        if self.is_stopping() {
            child.stop_tx.send_replace(true);
        }
        let parent = self.clone();
        let weak_stop = Arc::downgrade(&child.stop_tx);
        let weak_cancel = Arc::downgrade(&child.cancel_tx);
        tokio::spawn(async move {
            let mut stop = parent.stop_tx.subscribe();
            let mut cancel = parent.cancel_tx.subscribe();
            if stop.wait_for(|s| *s).await.is_err() {
                return;
            }
            match weak_stop.upgrade() {
                Some(s) => s.send_replace(true),
                None => return,
            };
            let kind = match cancel.wait_for(|c| c.is_some()).await {
                Ok(kind) => *kind,
                Err(_) => return,
            };
            if let Some(c) = weak_cancel.upgrade() {
                c.send_replace(kind);
            }
        });
        child
    }

    /// Whether a stop was asked for.
    pub fn is_stopping(&self) -> bool {
        *self.stop_tx.borrow()
    }

    /// Resolves when a stop is asked for.
    pub async fn stopped(&self) {
        let mut rx = self.stop_tx.subscribe();
        let _ = rx.wait_for(|s| *s).await;
    }
}

/// What the executor knows when it returns (records went to the channel).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExecSummary {
    pub sent_warmup: u64,
    pub sent_measured: u64,
    /// Sending was stopped by the user (a signal).
    pub interrupted: bool,
    /// In-flight requests were stopped when the drain timeout ended.
    pub drain_timed_out: bool,
    /// The request source ran out before the run's bounds were reached.
    pub source_exhausted: bool,
    /// When the target concurrency was first reached (closed loop): the
    /// start of the steady-state window.
    pub ramp_end_ns: Option<u64>,
    /// Records that could not be handed to the aggregator (it had stopped):
    /// an internal fault, never the server's.
    pub records_lost: u64,
}

/// What the executor sends the aggregator.
#[derive(Debug)]
pub enum Msg {
    /// The measured phase starts at this `t_sched` (ns): the origin of the
    /// run's time series. Sent before any measured request is.
    MeasureStart(u64),
    Record(Box<RequestRecord>),
}

/// Live counters for progress displays (read-only for observers).
#[derive(Debug, Default)]
pub struct Progress {
    pub sent: AtomicU64,
    /// Measured (not warm-up) requests sent.
    pub sent_measured: AtomicU64,
    pub finished: AtomicU64,
    pub failed: AtomicU64,
    /// Median TTFT of the last 256 measured requests that completed, in µs
    /// (0: none yet); kept by the aggregator, off the request path.
    pub recent_ttft_p50_us: AtomicU64,
}

/// A session's next turn, waiting for its ready time, holding its session's slot.
struct FollowUp {
    ready: Instant,
    request: PreparedRequest,
    permit: OwnedSemaphorePermit,
}

/// Sessions' turns waiting for their ready time, earliest first (then in
/// arrival order).
#[derive(Default)]
struct PendingTurns {
    heap: BinaryHeap<Reverse<(Instant, u64, FollowUpSlot)>>,
    seq: u64,
}

/// A follow-up in the heap (ordered by the tuple's first two fields only).
struct FollowUpSlot(FollowUp);

impl PartialEq for FollowUpSlot {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl Eq for FollowUpSlot {}
impl PartialOrd for FollowUpSlot {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for FollowUpSlot {
    fn cmp(&self, _: &Self) -> std::cmp::Ordering {
        std::cmp::Ordering::Equal
    }
}

impl PendingTurns {
    fn push(&mut self, f: FollowUp) {
        self.seq += 1;
        self.heap
            .push(Reverse((f.ready, self.seq, FollowUpSlot(f))));
    }

    fn next_ready(&self) -> Option<Instant> {
        self.heap.peek().map(|r| r.0 .0)
    }

    fn pop(&mut self) -> Option<FollowUp> {
        self.heap.pop().map(|r| r.0 .2 .0)
    }

    fn clear(&mut self) {
        self.heap.clear();
    }
}

/// What one request task needs.
struct TaskCtx<T> {
    transport: Arc<T>,
    follow_ups: Option<Arc<dyn FollowUps>>,
    records: mpsc::UnboundedSender<Msg>,
    follow_tx: mpsc::UnboundedSender<FollowUp>,
    progress: Arc<Progress>,
    lost: Arc<AtomicU64>,
    clock: RunClock,
}

impl<T> Clone for TaskCtx<T> {
    fn clone(&self) -> Self {
        TaskCtx {
            transport: self.transport.clone(),
            follow_ups: self.follow_ups.clone(),
            records: self.records.clone(),
            follow_tx: self.follow_tx.clone(),
            progress: self.progress.clone(),
            lost: self.lost.clone(),
            clock: self.clock,
        }
    }
}

fn spawn_request<T: Transport>(
    ctx: &TaskCtx<T>,
    req: PreparedRequest,
    t_sched: u64,
    permit: OwnedSemaphorePermit,
) {
    let ctx = ctx.clone();
    tokio::spawn(async move {
        let rec = ctx.transport.execute(&req, t_sched).await;
        ctx.progress.finished.fetch_add(1, Relaxed);
        if !rec.ok() {
            ctx.progress.failed.fetch_add(1, Relaxed);
        }
        let next = ctx
            .follow_ups
            .as_ref()
            .and_then(|f| f.next_turn(&req, &rec));
        if ctx.records.send(Msg::Record(Box::new(rec))).is_err() {
            ctx.lost.fetch_add(1, Relaxed);
        }
        // The session keeps its slot through the think time; a send error
        // means sending has ended, and dropping the follow-up frees the slot.
        if let Some((request, think)) = next {
            let ready = ctx.clock.instant(ctx.clock.now_ns()) + think;
            let _ = ctx.follow_tx.send(FollowUp {
                ready,
                request,
                permit,
            });
        }
    });
}

/// Run the plan to its end. Records of every request (warm-up included,
/// marked) are sent on `records`.
#[allow(clippy::too_many_arguments)]
pub async fn execute<T: Transport, Tm: Timer>(
    plan: &RunPlan,
    transport: Arc<T>,
    mut source: Prefetch,
    clock: RunClock,
    timer: &Tm,
    control: &RunControl,
    records: mpsc::UnboundedSender<Msg>,
    progress: Arc<Progress>,
) -> ExecSummary {
    let cap = plan
        .load
        .concurrency_cap()
        .unwrap_or(UNCAPPED)
        .min(UNCAPPED);
    // A closed-loop ramp opens its slots one by one (see below).
    let closed_ramp = plan.ramp_up.filter(|_| !plan.load.is_open() && cap > 1);
    let slots = Arc::new(Semaphore::new(if closed_ramp.is_some() { 1 } else { cap }));
    let mut schedule = Schedule::new(plan.load, plan.seed).with_ramp(plan.ramp_up);
    let mut stop_rx = control.stop_tx.subscribe();
    let cancel_rx = control.cancel_tx.subscribe();
    // Cancellation reaches requests through the transport (the client's
    // watchdog shuts their sockets down); the request path polls nothing for it.
    let canceller = {
        let mut rx = cancel_rx.clone();
        let transport = transport.clone();
        tokio::spawn(async move {
            if let Ok(kind) = rx.wait_for(|c| c.is_some()).await {
                if let Some(kind) = *kind {
                    transport.stop_all(kind);
                }
            }
        })
    };
    let (follow_tx, mut follow_rx) = mpsc::unbounded_channel::<FollowUp>();
    let lost = Arc::new(AtomicU64::new(0));
    let ctx = TaskCtx {
        transport: transport.clone(),
        follow_ups: source.follow_ups(),
        records: records.clone(),
        follow_tx,
        progress: progress.clone(),
        lost: lost.clone(),
        clock,
    };
    let mut books = Books::default();
    // Requests are built before the first send (up to the prefetch buffer),
    // so building never delays the schedule's start.
    tokio::select! {
        biased;
        _ = stop_rx.wait_for(|s| *s) => {}
        _ = source.primed() => {}
    }
    // Closed loop: ramp-up ends when the target concurrency's worth is out
    // (with --ramp-up: at the ramp's end, below).
    let ramp_at = (!plan.load.is_open() && plan.ramp_up.is_none()).then_some(cap as u64);
    // The schedule starts now, when sending starts (not at the run clock's origin).
    let origin = crate::clock::now();
    let opened = Arc::new(AtomicU64::new(1));
    let ramp_task = closed_ramp.map(|ramp| {
        let (slots, opened) = (slots.clone(), opened.clone());
        tokio::spawn(async move {
            for i in 1..cap {
                tokio::time::sleep_until((origin + ramp.slot_opens(i, cap)).into()).await;
                slots.add_permits(1);
                opened.fetch_add(1, Relaxed);
            }
        })
    });
    if let Some(r) = plan.ramp_up {
        books.summary.ramp_end_ns = Some(clock.ns(origin + r.duration));
    }
    let mut pending = PendingTurns::default();
    // The next new request and its intended time (None: as soon as a slot is free).
    let mut next_new: Option<(PreparedRequest, Option<Instant>)> = None;
    let mut source_done = false;

    'send: loop {
        if *stop_rx.borrow() {
            books.summary.interrupted = true;
            break;
        }
        let now = crate::clock::now();
        let in_warmup = match plan.warmup {
            Warmup::None => false,
            Warmup::Requests(n) => books.summary.sent_warmup < n,
            Warmup::Duration(d) => books.warmup_start.is_none_or(|s| now < s + d),
        };
        let measured_window_over =
            |at: Instant, start: Option<Instant>| match (plan.duration, start) {
                (Some(d), Some(s)) => at >= s + d,
                _ => false,
            };
        if !in_warmup {
            if plan
                .num_prompts
                .is_some_and(|n| books.summary.sent_measured >= n)
            {
                break;
            }
            if measured_window_over(now, books.measure_start) {
                break;
            }
        }
        if next_new.is_none() && !source_done {
            let next = tokio::select! {
                biased;
                _ = stop_rx.wait_for(|s| *s) => { books.summary.interrupted = true; break 'send; }
                p = source.next() => p,
            };
            match next {
                Some(mut p) => {
                    p.request.warmup = in_warmup;
                    let at = p.at.or_else(|| schedule.next_offset());
                    // An offset past every representable instant never comes.
                    let at = at.map(|o| {
                        origin
                            .checked_add(o)
                            .unwrap_or(origin + crate::units::MAX_DURATION)
                    });
                    next_new = Some((p.request, at));
                }
                None => source_done = true,
            }
        }
        // Without sessions, an exhausted source ends sending; with them, the
        // sessions in flight go on to their last turns (below).
        if next_new.is_none() && source_done && ctx.follow_ups.is_none() {
            books.summary.source_exhausted = true;
            break;
        }
        let new_at = next_new.as_ref().map(|(_, at)| at.unwrap_or(now));
        let follow_at = pending.next_ready();
        // The earlier of the two goes first; a follow-up already holds its slot.
        // A follow-up already due goes first even if a new request is due
        // earlier: it holds its slot, while the new one may be waiting for one
        // (comparing ready times alone would spin once both are past).
        let follow_first = match (follow_at, new_at) {
            (Some(f), Some(n)) => f <= n.max(now),
            (Some(_), None) => true,
            _ => false,
        };
        if follow_first {
            let f_at = follow_at.unwrap_or(now);
            tokio::select! {
                biased;
                _ = stop_rx.wait_for(|s| *s) => { books.summary.interrupted = true; break 'send; }
                Some(f) = follow_rx.recv() => {
                    pending.push(f);
                    continue;
                }
                _ = tokio::time::sleep_until(f_at.into()) => {}
            }
            let Some(f) = pending.pop() else {
                continue;
            };
            if !f.request.warmup && measured_window_over(f.ready, books.measure_start) {
                // Past the sending window: the turn is not sent (its slot
                // frees); the loop ends at the top once `now` is past it too.
                continue;
            }
            let t_sched = clock.ns(f.ready);
            books.send(&ctx, f.request, t_sched, f.permit, ramp_at);
            continue;
        }
        let Some(target) = new_at else {
            // Nothing to send now: wait for a session's next turn, or, once
            // the source is exhausted, for the last session to end (every
            // slot back).
            tokio::select! {
                biased;
                _ = stop_rx.wait_for(|s| *s) => { books.summary.interrupted = true; break 'send; }
                f = follow_rx.recv() => match f {
                    Some(f) => { pending.push(f); continue; }
                    None => break 'send,
                },
                _ = async {
                    if source_done {
                        drop(slots.acquire_many(cap as u32).await);
                    } else {
                        std::future::pending::<()>().await;
                    }
                } => {
                    books.summary.source_exhausted = true;
                    break 'send;
                }
            }
        };
        let is_warmup = next_new.as_ref().is_some_and(|(r, _)| r.warmup);
        let timed = next_new.as_ref().is_some_and(|(_, at)| at.is_some());
        // A duration-bounded run does not send arrivals past its end.
        if timed && !is_warmup && measured_window_over(target, books.measure_start) {
            break;
        }
        let permit = tokio::select! {
            biased;
            _ = stop_rx.wait_for(|s| *s) => { books.summary.interrupted = true; break 'send; }
            Some(f) = follow_rx.recv() => {
                pending.push(f);
                continue;
            }
            // A session's turn fell due while this request waits for a slot
            // (which may be held by that very session): send it first.
            _ = async {
                match follow_at {
                    Some(t) => tokio::time::sleep_until(t.into()).await,
                    None => std::future::pending().await,
                }
            } => continue,
            p = async {
                if timed { timer.sleep_until(target).await; }
                slots.clone().acquire_owned().await
            } => match p { Ok(p) => p, Err(_) => break 'send },
        };
        // Closed loop: the slot may have freed after the sending window closed.
        if !timed && !is_warmup && measured_window_over(crate::clock::now(), books.measure_start) {
            drop(permit);
            break;
        }
        let Some((req, _)) = next_new.take() else {
            continue;
        };
        let t_sched = if timed {
            clock.ns(target)
        } else {
            clock.now_ns()
        };
        books.send(&ctx, req, t_sched, permit, ramp_at);
    }

    // A ramp cut short opens its remaining slots, so the drain can take them all.
    if let Some(task) = ramp_task {
        task.abort();
        let _ = task.await;
        slots.add_permits(cap - opened.load(Relaxed) as usize);
    }
    // Sending is over: sessions' pending turns are dropped (freeing their
    // slots), and so is any turn finishing later (its channel is closed).
    drop(ctx);
    follow_rx.close();
    while follow_rx.try_recv().is_ok() {}
    pending.clear();
    // Drain: wait for every slot to come back, up to the drain timeout.
    let all = cap as u32;
    let drained = tokio::select! {
        r = tokio::time::timeout(plan.drain_timeout, drain(&slots, all, &mut follow_rx)) => r.is_ok(),
        _ = async { let mut c = cancel_rx.clone(); let _ = c.wait_for(|c| c.is_some()).await; } => false,
    };
    if !drained {
        if control.cancel_tx.borrow().is_none() {
            books.summary.drain_timed_out = true;
            control.cancel_tx.send_replace(Some(ErrorKind::Incomplete));
        }
        let _ =
            tokio::time::timeout(Duration::from_secs(5), drain(&slots, all, &mut follow_rx)).await;
    }
    canceller.abort();
    books.summary.records_lost = lost.load(Relaxed);
    books.summary
}

/// Wait until every slot is back, discarding session turns that still
/// arrive (each frees its slot when dropped).
async fn drain(
    slots: &Arc<Semaphore>,
    all: u32,
    follow_rx: &mut mpsc::UnboundedReceiver<FollowUp>,
) {
    loop {
        tokio::select! {
            r = slots.acquire_many(all) => { drop(r); return; }
            f = follow_rx.recv() => if f.is_none() {
                let _ = slots.acquire_many(all).await;
                return;
            },
        }
    }
}

/// What the send loop has booked so far: counts and the phases' starts.
#[derive(Default)]
struct Books {
    summary: ExecSummary,
    measure_start: Option<Instant>,
    warmup_start: Option<Instant>,
}

impl Books {
    /// Book one send (phase counters, the measured phase's start, the end
    /// of ramp-up once `ramp_at` measured requests are out) and spawn it.
    fn send<T: Transport>(
        &mut self,
        ctx: &TaskCtx<T>,
        req: PreparedRequest,
        t_sched: u64,
        permit: OwnedSemaphorePermit,
        ramp_at: Option<u64>,
    ) {
        ctx.progress.sent.fetch_add(1, Relaxed);
        let sched_instant = ctx.clock.instant(t_sched);
        if req.warmup {
            self.summary.sent_warmup += 1;
            self.warmup_start.get_or_insert(sched_instant);
        } else {
            self.summary.sent_measured += 1;
            ctx.progress.sent_measured.fetch_add(1, Relaxed);
            if self.measure_start.is_none() {
                self.measure_start = Some(sched_instant);
                let _ = ctx.records.send(Msg::MeasureStart(t_sched));
            }
            if ramp_at == Some(self.summary.sent_measured) {
                self.summary.ramp_end_ns = Some(t_sched);
            }
        }
        spawn_request(ctx, req, t_sched, permit);
    }
}

#[cfg(test)]
mod tests;
