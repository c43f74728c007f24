//! Waiting until an absolute instant, precisely.
//!
//! tokio's timer wheel has millisecond granularity, too coarse for open-loop
//! rates in the thousands per second. [`PreciseTimer`] sleeps with tokio
//! until about 2 ms before the target, then hands the last stretch to a
//! dedicated thread that sleeps on a high-resolution timer (timer slack set
//! to 1 µs) and wakes the task. No spinning, so it costs no CPU while waiting.
//! [`TokioTimer`] is plain tokio, for tests under paused time.

use std::future::Future;
use std::sync::mpsc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

pub trait Timer: Send + Sync + 'static {
    /// Resolve at (or as soon as possible after) `t`.
    fn sleep_until(&self, t: Instant) -> impl Future<Output = ()> + Send;
}

/// tokio's timer only (millisecond granularity; honours paused test time).
#[derive(Debug, Default, Clone, Copy)]
pub struct TokioTimer;

impl Timer for TokioTimer {
    fn sleep_until(&self, t: Instant) -> impl Future<Output = ()> + Send {
        tokio::time::sleep_until(tokio::time::Instant::from_std(t))
    }
}

/// tokio for the coarse wait, a high-resolution thread for the last stretch.
pub struct PreciseTimer {
    tx: Mutex<mpsc::Sender<(Instant, oneshot::Sender<()>)>>,
}

const COARSE_MARGIN: Duration = Duration::from_millis(2);

impl PreciseTimer {
    pub fn new() -> Self {
        let (tx, rx) = mpsc::channel::<(Instant, oneshot::Sender<()>)>();
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
            // Without the thread the oneshot senders are dropped at once and
            // `sleep_until` falls back to tokio's own precision.
        }
        PreciseTimer { tx: Mutex::new(tx) }
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
        if t - now > COARSE_MARGIN {
            tokio::time::sleep_until(tokio::time::Instant::from_std(t - COARSE_MARGIN)).await;
        }
        let (done_tx, done_rx) = oneshot::channel();
        let sent = self
            .tx
            .lock()
            .map(|tx| tx.send((t, done_tx)).is_ok())
            .unwrap_or(false);
        if !sent || done_rx.await.is_err() {
            tokio::time::sleep_until(tokio::time::Instant::from_std(t)).await;
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

#[cfg(test)]
mod paused_time_tests {
    use super::*;
    use crate::schedule::{Arrival, Load, Schedule};

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
        let origin = crate::clock::now();
        let timer = TokioTimer;
        let mut woke = Vec::new();
        let mut offsets = Vec::new();
        for i in 0..2000 {
            let off = sched.next_offset().unwrap();
            timer.sleep_until(origin + off).await;
            woke.push(crate::clock::now() - origin);
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
