//! The threads beside the request path (the aggregator, the request
//! builder): they lower their own priority and offer their core in a
//! burst, so the runtime thread that sends requests and reads events
//! waits on neither.

/// Ask the kernel to prefer the request path over this thread: aggregation
/// comes in bursts as responses end, exactly when new requests are written
/// and first events arrive, and it can wait. Lowering one's own priority
/// needs no privilege.
pub fn lower_thread_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: gettid has no arguments; setpriority on our own thread id only
    // changes this thread's nice value.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, 10);
    }
}

/// A background thread (the aggregator, the request builder) offering its
/// core (`sched_yield`) every 32 items of a burst. Their lower priority does
/// not get them preempted at once: the runtime thread was seen waiting,
/// runnable, 2–4 ms on a core where the builder ran a refill of half its
/// buffer (at 10,000 req/s in open loop, most of the schedule lag left:
/// p99 0.77–1.73 ms before, 0.25–0.73 after, against the bytes-only
/// client's 0.26–0.48; BENCHMARKS.md), and 3 ms behind the aggregator when
/// a closed-loop wave of 1,024 answers ended together. A yield with nobody
/// waiting costs under a µs.
#[derive(Default)]
pub(crate) struct CoreOffer {
    items: u32,
}

impl CoreOffer {
    const EVERY: u32 = 32;

    /// One more item done: offer the core when it is the 32nd since the last offer.
    pub(crate) fn tick(&mut self) {
        self.items = self.items.wrapping_add(1);
        if self.items.is_multiple_of(Self::EVERY) {
            std::thread::yield_now();
        }
    }
}
