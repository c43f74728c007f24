//! The run clock: one monotonic origin, nanosecond timestamps.
//!
//! Every timestamp in a run is `Instant - origin` in nanoseconds, so records
//! are plain integers, cheap to store and exact to subtract. `Instant` is
//! `CLOCK_MONOTONIC` on Linux (vDSO, ~20 ns a read). The clock is read
//! through tokio so that tests under paused time see virtual time; outside
//! tests this is the same `Instant::now()`.

use std::time::{Duration, Instant};

/// A run's time origin: every timestamp of the run is nanoseconds since it.
#[derive(Debug, Clone, Copy)]
pub struct RunClock {
    origin: Instant,
    /// The origin on the system-wide `CLOCK_MONOTONIC`, in ns (Linux), so
    /// records can be joined with another process's monotonic timestamps
    /// (a server's log, for example).
    origin_monotonic_ns: Option<u64>,
}

impl RunClock {
    /// The origin's `CLOCK_MONOTONIC` value is read on both sides of it,
    /// the tightest of a few tries kept: read once after it, a preemption
    /// between the two reads put it 0.13 ms late on a busy machine, and
    /// every time joined with a server's log (a kernel receive time before
    /// the request was sent) moved by that much.
    pub fn start() -> Self {
        let mut best: Option<(Instant, u64, u64)> = None;
        for _ in 0..8 {
            let before = monotonic_ns();
            let origin = now();
            let (Some(before), Some(after)) = (before, monotonic_ns()) else {
                return RunClock {
                    origin,
                    origin_monotonic_ns: None,
                };
            };
            let width = after.saturating_sub(before);
            if best.is_none_or(|(_, _, w)| width < w) {
                best = Some((origin, before + width / 2, width));
            }
            if width < 1_000 {
                break;
            }
        }
        let (origin, at, _) = best.expect("at least one try");
        RunClock {
            origin,
            origin_monotonic_ns: Some(at),
        }
    }

    /// The origin as `CLOCK_MONOTONIC` nanoseconds, where known.
    pub fn origin_monotonic_ns(&self) -> Option<u64> {
        self.origin_monotonic_ns
    }

    /// The instant the run's timestamps count from.
    pub fn origin(&self) -> Instant {
        self.origin
    }

    /// Nanoseconds since the origin.
    #[inline]
    pub fn now_ns(&self) -> u64 {
        self.ns(now())
    }

    /// Nanoseconds from the origin to `t` (0 for an instant before it).
    #[inline]
    pub fn ns(&self, t: Instant) -> u64 {
        t.saturating_duration_since(self.origin).as_nanos() as u64
    }

    /// The instant `ns` nanoseconds after the origin.
    pub fn instant(&self, ns: u64) -> Instant {
        self.origin + Duration::from_nanos(ns)
    }
}

/// The current instant (tokio's view, which equals `Instant::now()` unless a
/// test paused time).
#[inline]
pub fn now() -> Instant {
    tokio::time::Instant::now().into_std()
}

pub use goodput_common::clock::monotonic_ns;

#[cfg(test)]
mod tests {
    use super::*;

    /// The origin's monotonic value lies between reads taken before and
    /// after the clock started, and a timestamp taken later maps onto
    /// `CLOCK_MONOTONIC` within the bracket's width.
    #[test]
    fn the_origin_maps_onto_the_monotonic_clock() {
        let Some(before) = monotonic_ns() else {
            return;
        };
        let clock = RunClock::start();
        let after = monotonic_ns().unwrap();
        let at = clock.origin_monotonic_ns().unwrap();
        assert!(before <= at && at <= after, "{before} {at} {after}");
        let t0 = monotonic_ns().unwrap();
        let ns = clock.now_ns();
        let t1 = monotonic_ns().unwrap();
        let mapped = at + ns;
        // Within the reads around it, give or take the bracket (under 1 µs
        // on a quiet machine; 50 µs of slack for a busy one).
        assert!(
            mapped + 50_000 >= t0 && mapped <= t1 + 50_000,
            "{t0} {mapped} {t1}"
        );
    }
}
