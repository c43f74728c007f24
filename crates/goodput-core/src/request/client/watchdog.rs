//! Watchdog: request timeouts and cancellation without a timer per read.
//!
//! Measured first: polling a per-request timer (and a cancellation channel)
//! beside every socket read cost goodput a visible share of its CPU per
//! streamed event. Instead each request registers its socket here and stores
//! the time of its last read (one relaxed atomic store per read). One task
//! scans the in-flight requests every [`TICK`]; a request past its total
//! deadline or idle for longer than the idle timeout — or every request,
//! when the run is cancelled — is marked with the reason and its socket is
//! shut down, which ends the pending read at once. Timeouts are therefore
//! enforced to within one tick (50 ms).

use std::collections::HashMap;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::request::clock::RunClock;
use crate::request::record::ErrorKind;

/// How often the watchdog looks.
pub const TICK: Duration = Duration::from_millis(50);

const NONE: u8 = 0;
const TOTAL: u8 = 1;
const IDLE: u8 = 2;
const CANCELLED: u8 = 3;
const INCOMPLETE: u8 = 4;

/// Why a watched request was stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fired {
    TotalTimeout,
    IdleTimeout,
    Cancelled,
    Incomplete,
}

impl Fired {
    pub fn kind(self) -> ErrorKind {
        match self {
            Fired::TotalTimeout | Fired::IdleTimeout => ErrorKind::Timeout,
            Fired::Cancelled => ErrorKind::Cancelled,
            Fired::Incomplete => ErrorKind::Incomplete,
        }
    }
}

/// The shared state of one watched request.
#[derive(Debug)]
pub struct Watch {
    last_read_ns: AtomicU64,
    deadline_ns: u64,
    idle_ns: u64,
    fired: AtomicU8,
}

impl Watch {
    /// Note progress (a read that returned bytes).
    #[inline]
    pub fn touch(&self, now_ns: u64) {
        self.last_read_ns.store(now_ns, Ordering::Relaxed);
    }

    pub fn fired(&self) -> Option<Fired> {
        match self.fired.load(Ordering::Acquire) {
            TOTAL => Some(Fired::TotalTimeout),
            IDLE => Some(Fired::IdleTimeout),
            CANCELLED => Some(Fired::Cancelled),
            INCOMPLETE => Some(Fired::Incomplete),
            _ => None,
        }
    }
}

struct Entry {
    fd: RawFd,
    watch: Arc<Watch>,
}

#[derive(Default)]
struct Registry {
    next_id: u64,
    entries: HashMap<u64, Entry>,
    /// Set once the run is cancelled: requests registering later fire at once.
    cancelled: u8,
}

/// Watches every in-flight request of a client.
pub struct Watchdog {
    registry: Mutex<Registry>,
    clock: RunClock,
}

/// Deregisters its request when dropped.
pub struct Guard {
    dog: Arc<Watchdog>,
    id: u64,
    pub watch: Arc<Watch>,
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Ok(mut r) = self.dog.registry.lock() {
            r.entries.remove(&self.id);
        }
    }
}

fn shut(fd: RawFd) {
    // SAFETY: the fd belongs to a connection that stays open while it is
    // registered (the guard is dropped before the connection is), and
    // shutdown does not close or free it.
    unsafe {
        libc::shutdown(fd, libc::SHUT_RDWR);
    }
}

impl Watchdog {
    /// Create it and start its scanning task on the current runtime.
    pub fn start(clock: RunClock) -> Arc<Watchdog> {
        let dog = Arc::new(Watchdog {
            registry: Mutex::new(Registry::default()),
            clock,
        });
        let weak = Arc::downgrade(&dog);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(TICK);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                match weak.upgrade() {
                    Some(dog) => dog.scan(),
                    None => break,
                }
            }
        });
        dog
    }

    /// Watch a request on socket `fd` from `start_ns`.
    pub fn register(
        self: &Arc<Self>,
        fd: RawFd,
        start_ns: u64,
        total: Duration,
        idle: Duration,
    ) -> Guard {
        let watch = Arc::new(Watch {
            last_read_ns: AtomicU64::new(start_ns),
            deadline_ns: start_ns.saturating_add(total.as_nanos() as u64),
            idle_ns: idle.as_nanos() as u64,
            fired: AtomicU8::new(NONE),
        });
        let mut id = 0;
        if let Ok(mut r) = self.registry.lock() {
            id = r.next_id;
            r.next_id += 1;
            if r.cancelled != NONE {
                watch.fired.store(r.cancelled, Ordering::Release);
                shut(fd);
            }
            r.entries.insert(
                id,
                Entry {
                    fd,
                    watch: watch.clone(),
                },
            );
        }
        Guard {
            dog: self.clone(),
            id,
            watch,
        }
    }

    fn scan(&self) {
        let now = self.clock.now_ns();
        let Ok(r) = self.registry.lock() else {
            return;
        };
        for e in r.entries.values() {
            let w = &e.watch;
            if w.fired.load(Ordering::Relaxed) != NONE {
                continue;
            }
            let reason = if now >= w.deadline_ns {
                TOTAL
            } else if now.saturating_sub(w.last_read_ns.load(Ordering::Relaxed)) >= w.idle_ns {
                IDLE
            } else {
                continue;
            };
            w.fired.store(reason, Ordering::Release);
            shut(e.fd);
        }
    }

    /// A new run: requests registering from now on are no longer cancelled
    /// by an earlier run's stop (the drain timeout of one sweep point must not
    /// fail the next point's requests).
    pub fn reset(&self) {
        if let Ok(mut r) = self.registry.lock() {
            r.cancelled = NONE;
        }
    }

    /// Stop every watched request now, and any registering later.
    pub fn fire_all(&self, kind: ErrorKind) {
        let reason = if kind == ErrorKind::Incomplete {
            INCOMPLETE
        } else {
            CANCELLED
        };
        let Ok(mut r) = self.registry.lock() else {
            return;
        };
        r.cancelled = reason;
        for e in r.entries.values() {
            if e.watch.fired.load(Ordering::Relaxed) == NONE {
                e.watch.fired.store(reason, Ordering::Release);
                shut(e.fd);
            }
        }
    }
}
