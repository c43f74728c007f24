//! The run clock: one monotonic origin, nanosecond timestamps.
//!
//! Every timestamp in a run is `Instant - origin` in nanoseconds, so records
//! are plain integers, cheap to store and exact to subtract. `Instant` is
//! `CLOCK_MONOTONIC` on Linux (vDSO, ~20 ns a read). The clock is read
//! through tokio so that tests under paused time see virtual time; outside
//! tests this is the same `Instant::now()`.

use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy)]
pub struct RunClock {
    origin: Instant,
    /// The origin on the system-wide `CLOCK_MONOTONIC`, in ns (Linux), so
    /// records can be joined with another process's monotonic timestamps
    /// (a server's log, for example).
    origin_monotonic_ns: Option<u64>,
}

impl RunClock {
    pub fn start() -> Self {
        let origin = now();
        RunClock {
            origin,
            origin_monotonic_ns: monotonic_ns(),
        }
    }

    /// The origin as `CLOCK_MONOTONIC` nanoseconds, where known.
    pub fn origin_monotonic_ns(&self) -> Option<u64> {
        self.origin_monotonic_ns
    }

    pub fn origin(&self) -> Instant {
        self.origin
    }

    /// Nanoseconds since the origin.
    #[inline]
    pub fn now_ns(&self) -> u64 {
        self.ns(now())
    }

    #[inline]
    pub fn ns(&self, t: Instant) -> u64 {
        t.saturating_duration_since(self.origin).as_nanos() as u64
    }

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
