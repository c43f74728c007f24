//! Waiting until an absolute instant, precisely.
//!
//! tokio's timer wheel has millisecond granularity, too coarse for open-loop
//! rates in the thousands per second. [`PreciseTimer`] arms a `timerfd` at
//! the instant (an absolute `CLOCK_MONOTONIC` time, to the nanosecond, no
//! timer slack) and waits for it in the runtime's own epoll: the send loop
//! wakes on the runtime's thread with no other thread involved. Before it,
//! the last 2 ms of each wait went to a dedicated thread sleeping on a
//! high-resolution timer, which then woke the task: three thread hand-offs a
//! send, which at 20,000 requests a second cost more than the sends (issue
//! 22). That thread stays as the fallback: where no timerfd can be made, or
//! when a second wait overlaps the first. No spinning either way, so waiting
//! costs no CPU. [`TokioTimer`] is plain tokio, for tests under paused time.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

/// Waits until an absolute instant: what the executor's open loop waits on.
pub trait Timer: Send + Sync + 'static {
    /// Resolve at (or as soon as possible after) `t`.
    fn sleep_until(&self, t: Instant) -> impl Future<Output = ()> + Send;
}

/// tokio's timer only (millisecond granularity; honours paused test time).
#[cfg(test)]
#[derive(Debug, Default, Clone, Copy)]
pub struct TokioTimer;

#[cfg(test)]
impl Timer for TokioTimer {
    fn sleep_until(&self, t: Instant) -> impl Future<Output = ()> + Send {
        tokio::time::sleep_until(tokio::time::Instant::from_std(t))
    }
}

/// A wait handed to the fallback thread: the instant, and whom to wake.
type WaitQueue = mpsc::Sender<(Instant, oneshot::Sender<()>)>;

/// A timerfd in the runtime's epoll; else tokio for the coarse wait and a
/// high-resolution thread for the last stretch.
pub struct PreciseTimer {
    /// The fallback thread, started by the first wait that needs it.
    tx: OnceLock<Mutex<WaitQueue>>,
    fd: Option<timerfd::TimerFd>,
    /// A wait holds the timerfd; an overlapping one takes the thread.
    fd_busy: AtomicBool,
}

const COARSE_MARGIN: Duration = Duration::from_millis(2);

impl PreciseTimer {
    /// A timer with its own timerfd when made inside a tokio runtime (and
    /// the kernel gives one); else every wait goes to the fallback thread.
    pub fn new() -> Self {
        PreciseTimer {
            tx: OnceLock::new(),
            fd: timerfd::TimerFd::new(),
            fd_busy: AtomicBool::new(false),
        }
    }

    /// The fallback thread's queue, the thread started on first use: a
    /// closed-loop run, or an open loop whose waits never overlap, has no
    /// thread more than it needs.
    fn fallback(&self) -> &Mutex<WaitQueue> {
        self.tx.get_or_init(|| {
            let (tx, rx): (WaitQueue, _) = mpsc::channel();
            let spawned = std::thread::Builder::new()
                .name("goodput-timer".into())
                .spawn(move || {
                    set_fine_timer_slack();
                    while let Ok((t, done)) = rx.recv() {
                        let now = Instant::now();
                        if t > now {
                            std::thread::sleep(t - now);
                        }
                        let _ = done.send(());
                    }
                });
            if spawned.is_err() {
                // Without the thread the oneshot senders are dropped at once
                // and `sleep_until` falls back to tokio's own precision.
            }
            Mutex::new(tx)
        })
    }
}

impl Default for PreciseTimer {
    fn default() -> Self {
        Self::new()
    }
}

impl Timer for PreciseTimer {
    async fn sleep_until(&self, t: Instant) {
        let now = Instant::now();
        if t <= now {
            return;
        }
        if let Some(fd) = &self.fd {
            if !self.fd_busy.swap(true, Ordering::Acquire) {
                let _free = Free(&self.fd_busy);
                if fd.sleep_until(t).await {
                    return;
                }
            }
        }
        if t - now > COARSE_MARGIN {
            tokio::time::sleep_until(tokio::time::Instant::from_std(t - COARSE_MARGIN)).await;
        }
        let (done_tx, done_rx) = oneshot::channel();
        let sent = self
            .fallback()
            .lock()
            .map(|tx| tx.send((t, done_tx)).is_ok())
            .unwrap_or(false);
        if !sent || done_rx.await.is_err() {
            tokio::time::sleep_until(tokio::time::Instant::from_std(t)).await;
        }
    }
}

/// Frees the timerfd when its wait ends, or is dropped.
struct Free<'a>(&'a AtomicBool);

impl Drop for Free<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

#[cfg(target_os = "linux")]
mod timerfd {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::time::Instant;

    use tokio::io::unix::AsyncFd;

    /// A non-blocking `CLOCK_MONOTONIC` timerfd registered with the runtime.
    pub struct TimerFd(AsyncFd<OwnedFd>);

    impl TimerFd {
        /// `None` outside a runtime or where the kernel refuses one.
        pub fn new() -> Option<TimerFd> {
            tokio::runtime::Handle::try_current().ok()?;
            // SAFETY: timerfd_create takes plain flags; a valid result is a
            // new descriptor that nothing else owns.
            let raw = unsafe {
                libc::timerfd_create(
                    libc::CLOCK_MONOTONIC,
                    libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
                )
            };
            if raw < 0 {
                return None;
            }
            // SAFETY: `raw` is a fresh descriptor owned by nothing else.
            let fd = unsafe { OwnedFd::from_raw_fd(raw) };
            // SAFETY: the AsyncFd owns `fd`, so it stays open and the same
            // descriptor for as long as the registration lives.
            unsafe { AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE) }
                .ok()
                .map(TimerFd)
        }

        /// Wait until `t`; false if the timerfd failed (the caller then waits
        /// another way).
        pub async fn sleep_until(&self, t: Instant) -> bool {
            self.sleep_until_armed_early(t, std::time::Duration::ZERO)
                .await
        }

        /// The wait, with the timer armed `early` before `t`: what a thread
        /// preempted between reading the two clocks would arm (the tests).
        /// The timer may go off before `t` (or a readiness left from an
        /// earlier, cancelled wait may wake it): it is then read, re-armed
        /// for what is left, and waited on again. A one-shot timerfd that
        /// went off is disarmed, so waiting on it again without re-arming
        /// would never end.
        pub(super) async fn sleep_until_armed_early(
            &self,
            t: Instant,
            early: std::time::Duration,
        ) -> bool {
            loop {
                let left = t.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return true;
                }
                if !self.arm_in(left.saturating_sub(early)) {
                    return false;
                }
                let Ok(mut ready) = self.0.readable().await else {
                    return false;
                };
                // A stale readiness reads as WouldBlock and is cleared.
                let _ = ready.try_io(|inner| {
                    let mut expiries = [0u8; 8];
                    // SAFETY: reading 8 bytes into a buffer we own.
                    let n = unsafe {
                        libc::read(inner.get_ref().as_raw_fd(), expiries.as_mut_ptr().cast(), 8)
                    };
                    if n < 0 {
                        Err(std::io::Error::last_os_error())
                    } else {
                        Ok(())
                    }
                });
            }
        }

        /// Arm the timer to go off `after` from now. `after` was measured
        /// before this reads `CLOCK_MONOTONIC` (the clock `Instant` reads on
        /// Linux), so the timer goes off no earlier than the instant it was
        /// measured to. Arming resets any expiry a cancelled wait left behind.
        fn arm_in(&self, after: std::time::Duration) -> bool {
            let mut now = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: clock_gettime writes into the timespec we own.
            if unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) } != 0 {
                return false;
            }
            // time_t and c_long are i64 on the 64-bit Linux goodput targets.
            let at_ns = now.tv_sec * 1_000_000_000 + now.tv_nsec + after.as_nanos() as i64;
            let spec = libc::itimerspec {
                it_interval: libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                },
                it_value: libc::timespec {
                    tv_sec: (at_ns / 1_000_000_000) as _,
                    tv_nsec: (at_ns % 1_000_000_000) as libc::c_long,
                },
            };
            let fd = self.0.get_ref().as_raw_fd();
            // SAFETY: a valid timerfd and a properly initialised itimerspec.
            let armed = unsafe {
                libc::timerfd_settime(fd, libc::TFD_TIMER_ABSTIME, &spec, std::ptr::null_mut())
            };
            armed == 0
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod timerfd {
    use std::time::Instant;

    /// No timerfd here: the thread does the waits.
    pub struct TimerFd;

    impl TimerFd {
        pub fn new() -> Option<TimerFd> {
            None
        }

        pub async fn sleep_until(&self, _t: Instant) -> bool {
            false
        }
    }
}

/// Ask the kernel for 1 µs timer slack on this thread (default is 50 µs).
fn set_fine_timer_slack() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl with PR_SET_TIMERSLACK takes a plain integer argument and
    // only affects the calling thread.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1000 as libc::c_ulong, 0, 0, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn precise_timer_wakes_close_to_target() {
        let timer = PreciseTimer::new();
        let mut worst = Duration::ZERO;
        for i in 0..20 {
            let t = Instant::now() + Duration::from_micros(2500 + 300 * i);
            timer.sleep_until(t).await;
            let late = Instant::now().saturating_duration_since(t);
            assert!(Instant::now() >= t);
            worst = worst.max(late);
        }
        // Generous bound: tokio alone is often a full millisecond late.
        assert!(
            worst < Duration::from_millis(20),
            "worst lateness {worst:?}"
        );
    }
}

#[cfg(all(test, target_os = "linux"))]
mod timerfd_tests {
    use super::*;

    /// On one runtime thread the wait is the timerfd's; a wait cancelled
    /// before its instant leaves nothing behind for the next one, and an
    /// overlapping wait takes the thread.
    #[tokio::test(flavor = "current_thread")]
    async fn the_timerfd_waits_survive_cancellation_and_overlap() {
        let timer = PreciseTimer::new();
        assert!(timer.fd.is_some());
        // 50 ms against a 1 ms timeout: on a loaded machine (a CI run's
        // other test threads) tokio's timeout can fire 2 ms late, and a wait
        // 3 ms out then finished first.
        let soon = Instant::now() + Duration::from_millis(50);
        let cancelled = tokio::time::timeout(Duration::from_millis(1), timer.sleep_until(soon));
        assert!(cancelled.await.is_err());
        for i in 0..10 {
            let t = Instant::now() + Duration::from_micros(300 + 200 * i);
            timer.sleep_until(t).await;
            assert!(Instant::now() >= t);
        }
        let (a, b) = (
            Instant::now() + Duration::from_millis(4),
            Instant::now() + Duration::from_millis(3),
        );
        tokio::join!(timer.sleep_until(a), timer.sleep_until(b));
        assert!(Instant::now() >= a);
    }

    /// A timer that goes off before the instant (armed early, as when the
    /// thread is preempted between its two clock readings) is re-armed for
    /// what is left: the wait ends at the instant, not never. Before the
    /// fix, one open-loop run in a few of 80,000 requests stopped sending
    /// for good this way.
    #[tokio::test(flavor = "current_thread")]
    async fn a_timer_that_goes_off_early_is_rearmed() {
        let timer = PreciseTimer::new();
        let fd = timer.fd.as_ref().unwrap();
        for early_us in [50, 500, 3000] {
            let t = Instant::now() + Duration::from_millis(5);
            let early = Duration::from_micros(early_us);
            let waited =
                tokio::time::timeout(Duration::from_secs(5), fd.sleep_until_armed_early(t, early));
            assert_eq!(waited.await, Ok(true), "armed {early:?} early");
            assert!(Instant::now() >= t);
        }
    }
}

#[cfg(test)]
mod paused_time_tests {
    use super::*;
    use crate::load::schedule::{Arrival, Load, Schedule};

    /// Under paused tokio time: waits land exactly on origin + offset, and a
    /// late send (simulated by advancing time inside the loop) does not shift
    /// the arrivals after it: the schedule is anchored, not relative.
    #[tokio::test(start_paused = true)]
    async fn open_loop_waits_are_anchored_to_absolute_time() {
        let load = Load::Open {
            rate: 100.0,
            arrival: Arrival::Poisson,
            max_concurrency: None,
        };
        let mut sched = Schedule::new(load, 7);
        let origin = crate::request::clock::now();
        let timer = TokioTimer;
        let mut woke = Vec::new();
        let mut offsets = Vec::new();
        for i in 0..2000 {
            let off = sched.next_offset().unwrap();
            timer.sleep_until(origin + off).await;
            woke.push(crate::request::clock::now() - origin);
            offsets.push(off);
            if i == 10 {
                // The client stalls for 300 ms (e.g. a slow connect).
                tokio::time::advance(Duration::from_millis(300)).await;
            }
        }
        // After the stall the backlog is sent at once, then the schedule is
        // back on its original times: no drift.
        for (w, o) in woke.iter().zip(&offsets).skip(100) {
            let diff = w.as_secs_f64() - o.as_secs_f64();
            assert!(diff.abs() < 0.0011, "woke {w:?} for offset {o:?}");
        }
        let rate = 1999.0 / offsets[1999].as_secs_f64();
        assert!((rate - 100.0).abs() < 7.0, "mean rate {rate}");
    }
}
