//! The engine in real time: its own OS thread, steps on absolute deadlines.
//!
//! The thread first raises its own scheduling priority as far as the OS
//! allows ([`crate::priority`]), so that it gets a CPU the moment its timer
//! fires even when the HTTP threads and the benchmark client keep both cores
//! busy. Each step it runs the engine (bookkeeping only), sleeps until the
//! step's end with an absolute-deadline `clock_nanosleep` (timer slack 1 ns),
//! records the lateness (wake-up time minus deadline, read right after the
//! wake-up, before any other work), then hands the whole step's tokens to
//! the HTTP runtime in one message (one cross-thread wake-up a step, however
//! many streams), and starts the next step at that same deadline, so small
//! wake-up delays never accumulate. Requests and aborts arrive through a
//! channel and join at the next step boundary; with nothing to do, the
//! thread blocks on that channel.

use std::collections::HashMap;
use std::sync::mpsc::{Receiver, TryRecvError};

use tokio::sync::mpsc::UnboundedSender;

use crate::engine::{Engine, EngineRequest, FinishedRequest, Rejection, RequestId, StepOutputs};
use crate::priority::{self, EnginePriority, PriorityRequest};
use crate::stats::LiveStats;

/// Why a request stops generating.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinishReason {
    /// The drawn output length ran out (an end-of-sequence token).
    Stop,
    /// `max_tokens` (or the context limit) was reached.
    Length,
}

impl FinishReason {
    /// The OpenAI API's `finish_reason` value (`stop`, `length`).
    pub fn as_str(self) -> &'static str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::Length => "length",
        }
    }
}

/// Sent to a request's connection task.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// Output tokens `index` to `index + count - 1` were produced in one
    /// step (several under speculative decoding: one chunk); `done` is set
    /// on the last one.
    Token {
        /// 0-based index of the chunk's first token in the request's output.
        index: u32,
        /// Tokens in the chunk (at least 1).
        count: u32,
        /// On the last token, the finished request; `None` before it.
        done: Option<FinishedRequest>,
    },
    /// The engine refused the request.
    Rejected(Rejection),
}

/// A request handed to the engine thread.
#[derive(Debug)]
pub struct Submission {
    /// The request as the engine runs it.
    pub request: EngineRequest,
    /// When the server received it, engine seconds.
    pub arrival_s: f64,
    /// Why it stops once its last token is out (known when it is sent).
    pub reason: FinishReason,
    /// Where its tokens, or its rejection, go.
    pub events: UnboundedSender<StreamEvent>,
}

/// Messages to the engine thread.
#[derive(Debug)]
pub enum Command {
    /// Queue one request.
    Add(Box<Submission>),
    /// Drop a request whose client went away.
    Abort(RequestId),
    /// Requests that arrived together (a pooling request's inputs), added
    /// at once so that the next step sees them all.
    AddBatch(Vec<Submission>),
    /// Stop the thread.
    Shutdown,
}

/// The monotonic clock shared by the engine thread and the server, in
/// seconds since the simulator started.
#[derive(Debug, Clone, Copy)]
pub struct MonoClock {
    epoch_ns: u64,
}

/// `CLOCK_MONOTONIC` in ns: the engine sleeps to absolute deadlines on it.
#[cfg(unix)]
fn mono_ns() -> u64 {
    goodput_common::clock::monotonic_ns().unwrap_or(0)
}

#[cfg(not(unix))]
fn mono_ns() -> u64 {
    use std::sync::OnceLock;
    static START: OnceLock<std::time::Instant> = OnceLock::new();
    START
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_nanos() as u64
}

impl MonoClock {
    /// A clock whose zero is now.
    pub fn new() -> Self {
        MonoClock {
            epoch_ns: mono_ns(),
        }
    }

    /// Seconds since the clock was made.
    pub fn now_s(&self) -> f64 {
        mono_ns().saturating_sub(self.epoch_ns) as f64 * 1e-9
    }

    fn deadline_ns(&self, t_s: f64) -> u64 {
        self.epoch_ns + (t_s.max(0.0) * 1e9) as u64
    }

    /// Sleep until `t_s`; returns how late the wake-up was, nanoseconds.
    pub fn sleep_until(&self, t_s: f64) -> u64 {
        self.sleep_until_woke(t_s).0
    }

    /// Sleep until `t_s`; returns the lateness and the wake-up time, ns.
    fn sleep_until_woke(&self, t_s: f64) -> (u64, u64) {
        let deadline = self.deadline_ns(t_s);
        sleep_until_ns(deadline);
        let woke = mono_ns();
        (woke.saturating_sub(deadline), woke)
    }
}

impl Default for MonoClock {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(target_os = "linux")]
fn sleep_until_ns(deadline: u64) {
    let ts = libc::timespec {
        tv_sec: (deadline / 1_000_000_000) as _,
        tv_nsec: (deadline % 1_000_000_000) as libc::c_long,
    };
    loop {
        // SAFETY: an absolute sleep on CLOCK_MONOTONIC with a valid timespec.
        let rc = unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            )
        };
        if rc != libc::EINTR {
            break;
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn sleep_until_ns(deadline: u64) {
    let now = mono_ns();
    if deadline > now {
        std::thread::sleep(std::time::Duration::from_nanos(deadline - now));
    }
}

fn lower_timer_slack() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_TIMERSLACK only changes this thread's timer slack.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

struct Route {
    events: UnboundedSender<StreamEvent>,
    reason: FinishReason,
}

/// A step's tokens as chunks for their connections: a sequence's tokens of
/// one step are consecutive, and go as one chunk.
fn deliveries(out: &StepOutputs, routes: &HashMap<RequestId, Route>) -> Vec<Delivery> {
    let mut batch = Vec::with_capacity(out.tokens.len());
    for run in out.tokens.chunk_by(|a, b| a.id == b.id) {
        let (first, t) = (run[0], run[run.len() - 1]);
        let Some(route) = routes.get(&t.id) else {
            continue;
        };
        let done = if t.last {
            out.finished.iter().find(|f| f.id == t.id).copied()
        } else {
            None
        };
        let ev = StreamEvent::Token {
            index: first.index,
            count: run.len() as u32,
            done,
        };
        batch.push((route.events.clone(), ev));
    }
    batch
}

/// One token (or rejection) for one connection.
pub type Delivery = (UnboundedSender<StreamEvent>, StreamEvent);

/// How the engine thread talks to the HTTP side.
#[derive(Debug)]
pub struct EngineIo {
    /// Requests, aborts and shutdown from the HTTP side.
    pub commands: Receiver<Command>,
    /// Each step's deliveries, in one message, to the HTTP runtime's
    /// dispatcher ([`dispatch`]).
    pub deliver: UnboundedSender<Vec<Delivery>>,
    /// Scheduling priority to ask the OS for at start.
    pub priority: PriorityRequest,
    /// Told what priority the thread obtained, once it has started.
    pub started: std::sync::mpsc::Sender<EnginePriority>,
}

/// Runs on the HTTP runtime: hands each step's tokens to their connections.
/// Those wake-ups stay inside the runtime (no cross-thread wake-up each).
pub async fn dispatch(mut steps: tokio::sync::mpsc::UnboundedReceiver<Vec<Delivery>>) {
    while let Some(batch) = steps.recv().await {
        for (tx, ev) in batch {
            // A closed stream was abandoned; its `AbortGuard` told the engine.
            let _ = tx.send(ev);
        }
    }
}

/// The engine thread's main loop; returns on [`Command::Shutdown`] or when
/// every sender is gone.
pub fn run(mut engine: Engine, io: EngineIo, stats: LiveStats, clock: MonoClock) {
    let EngineIo {
        commands,
        deliver,
        priority: request,
        started,
    } = io;
    let obtained = priority::raise_current_thread(request);
    lower_timer_slack();
    stats.lock().priority = obtained;
    let _ = started.send(obtained);
    let mut routes: HashMap<RequestId, Route> = HashMap::new();
    let mut out = StepOutputs::default();
    let mut next_start: Option<f64> = None;
    // Wall time from each wake-up to the next sleep (the work of a step).
    let mut last_wake: Option<u64> = None;
    loop {
        if !engine.has_work() {
            next_start = None;
            last_wake = None;
            publish_idle(&engine, &stats);
            match commands.recv() {
                Ok(cmd) => {
                    if !apply(cmd, &mut engine, &mut routes, &stats) {
                        return;
                    }
                }
                Err(_) => return,
            }
        }
        loop {
            match commands.try_recv() {
                Ok(cmd) => {
                    if !apply(cmd, &mut engine, &mut routes, &stats) {
                        return;
                    }
                }
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => return,
            }
        }
        let start = next_start.unwrap_or_else(|| clock.now_s());
        out.clear();
        let Some(report) = engine.step(start, &mut out) else {
            next_start = None;
            last_wake = None;
            continue;
        };
        let end = report.end_s();
        let work_ns = last_wake.map_or(0, |w| mono_ns().saturating_sub(w));
        let (late_ns, woke_ns) = clock.sleep_until_woke(end);
        last_wake = Some(woke_ns);
        next_start = Some(end);

        let batch = deliveries(&out, &routes);
        if !batch.is_empty() {
            // Fails only while the server shuts down.
            let _ = deliver.send(batch);
        }
        let mut s = stats.lock();
        s.lateness_exact.record_ns(late_ns);
        s.lateness.observe(late_ns as f64 * 1e-9);
        s.step_duration.observe(report.time.total_s);
        s.power.step(&report.time, std::time::Instant::now());
        for t in &out.tokens {
            if t.index == 0 {
                s.ttft.observe(t.gap_s);
            } else {
                s.inter_token.observe(t.gap_s);
            }
        }
        for f in &out.finished {
            s.e2e.observe(f.end_s - f.arrival_s);
            match routes.remove(&f.id).map(|r| r.reason) {
                Some(FinishReason::Stop) => s.finished_stop += 1,
                Some(FinishReason::Length) | None => s.finished_length += 1,
            }
        }
        s.counters = engine.counters();
        s.running = engine.num_running();
        s.waiting = engine.num_waiting();
        s.kv_usage = engine.kv_usage();
        s.engine_work_ns += work_ns;
        s.engine_work_max_ns = s.engine_work_max_ns.max(work_ns);
    }
}

fn publish_idle(engine: &Engine, stats: &LiveStats) {
    let mut s = stats.lock();
    s.counters = engine.counters();
    s.running = engine.num_running();
    s.waiting = engine.num_waiting();
    s.kv_usage = engine.kv_usage();
}

/// Apply one command; `false` means shut down.
fn apply(
    cmd: Command,
    engine: &mut Engine,
    routes: &mut HashMap<RequestId, Route>,
    stats: &LiveStats,
) -> bool {
    match cmd {
        Command::Add(sub) => {
            let Submission {
                request,
                arrival_s,
                reason,
                events,
            } = *sub;
            let id = request.id;
            match engine.add(request, arrival_s) {
                Ok(()) => {
                    routes.insert(id, Route { events, reason });
                }
                Err(e) => {
                    let _ = events.send(StreamEvent::Rejected(e));
                }
            }
            true
        }
        Command::Abort(id) => {
            if routes.remove(&id).is_some() && engine.abort(id) {
                stats.lock().finished_abort += 1;
            }
            true
        }
        Command::AddBatch(subs) => {
            for sub in subs {
                apply(Command::Add(Box::new(sub)), engine, routes, stats);
            }
            true
        }
        Command::Shutdown => false,
    }
}
