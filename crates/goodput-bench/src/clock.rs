//! System-wide clocks, so that times taken in different processes (the
//! reference server in the bench, goodput or the bytes-only client in a child)
//! and by the kernel can be compared.
//!
//! - [`monotonic_ns`]: `CLOCK_MONOTONIC`, what `std::time::Instant` reads on
//!   Linux and what goodput's `run.clock_origin_monotonic_ns` is on.
//! - [`InstantMapper`]: an `Instant` as `CLOCK_MONOTONIC` ns, through one
//!   paired reading of both clocks.
//! - [`RealtimeToMonotonic`]: the kernel's socket receive timestamps are on
//!   `CLOCK_REALTIME`; this converts them with an offset sampled in a tight
//!   sandwich of monotonic readings and refreshed every second.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Instant;

/// Reads `clock` (a `CLOCK_*` id) in ns.
fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own; the clocks
    // used here always exist on Linux.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    timespec_ns(&ts)
}

/// A `timespec` in ns (negative fields count as 0).
pub fn timespec_ns(ts: &libc::timespec) -> u64 {
    ts.tv_sec.max(0) as u64 * 1_000_000_000 + ts.tv_nsec.max(0) as u64
}

/// `CLOCK_MONOTONIC` now, ns.
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// `CLOCK_REALTIME` now, ns since the Unix epoch.
pub fn realtime_ns() -> u64 {
    clock_ns(libc::CLOCK_REALTIME)
}

/// Maps `Instant`s to `CLOCK_MONOTONIC` ns through one paired reading.
#[derive(Debug, Clone, Copy)]
pub struct InstantMapper {
    epoch: Instant,
    epoch_ns: u64,
}

impl InstantMapper {
    /// Pairs `Instant::now()` with `CLOCK_MONOTONIC`, read just before and
    /// just after it (the tightest of a few tries): the mapping is off by at
    /// most half that gap, tens of ns.
    pub fn new() -> Self {
        let mut best: Option<(u64, Self)> = None;
        for _ in 0..5 {
            let before = monotonic_ns();
            let epoch = Instant::now();
            let after = monotonic_ns();
            let gap = after - before;
            if best.as_ref().is_none_or(|(g, _)| gap < *g) {
                let epoch_ns = before + gap / 2;
                best = Some((gap, Self { epoch, epoch_ns }));
            }
        }
        best.map(|(_, m)| m).unwrap_or_else(|| Self {
            epoch: Instant::now(),
            epoch_ns: monotonic_ns(),
        })
    }

    /// `t` as `CLOCK_MONOTONIC` ns.
    pub fn ns(&self, t: Instant) -> u64 {
        match t.checked_duration_since(self.epoch) {
            Some(after) => self.epoch_ns + after.as_nanos() as u64,
            None => self
                .epoch_ns
                .saturating_sub(self.epoch.duration_since(t).as_nanos() as u64),
        }
    }
}

impl Default for InstantMapper {
    fn default() -> Self {
        Self::new()
    }
}

/// How often the realtime − monotonic offset is sampled again (it moves
/// when NTP slews or steps the realtime clock).
const OFFSET_REFRESH_NS: u64 = 1_000_000_000;

/// Converts `CLOCK_REALTIME` ns to `CLOCK_MONOTONIC` ns.
#[derive(Debug)]
pub struct RealtimeToMonotonic {
    /// realtime − monotonic, ns.
    offset_ns: AtomicI64,
    /// Monotonic time of the last sample, ns.
    sampled_at_ns: AtomicU64,
}

impl RealtimeToMonotonic {
    /// Samples the offset now.
    pub fn new() -> Self {
        let (offset, at) = sample_offset();
        Self {
            offset_ns: AtomicI64::new(offset),
            sampled_at_ns: AtomicU64::new(at),
        }
    }

    /// `realtime` (ns since the Unix epoch) on `CLOCK_MONOTONIC`, with the
    /// offset sampled again when it is over a second old.
    pub fn to_monotonic(&self, realtime: u64) -> u64 {
        let now = monotonic_ns();
        if now.saturating_sub(self.sampled_at_ns.load(Ordering::Relaxed)) > OFFSET_REFRESH_NS {
            let (offset, at) = sample_offset();
            self.offset_ns.store(offset, Ordering::Relaxed);
            self.sampled_at_ns.store(at, Ordering::Relaxed);
        }
        (realtime as i64 - self.offset_ns.load(Ordering::Relaxed)).max(0) as u64
    }
}

impl Default for RealtimeToMonotonic {
    fn default() -> Self {
        Self::new()
    }
}

/// (realtime − monotonic, monotonic) from the tightest of a few
/// monotonic–realtime–monotonic sandwiches.
fn sample_offset() -> (i64, u64) {
    let mut best = (u64::MAX, 0i64, 0u64);
    for _ in 0..5 {
        let before = monotonic_ns();
        let real = realtime_ns();
        let after = monotonic_ns();
        let gap = after - before;
        if gap < best.0 {
            let mono = before + gap / 2;
            best = (gap, real as i64 - mono as i64, mono);
        }
    }
    (best.1, best.2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instants_map_onto_the_monotonic_clock() {
        let mapper = InstantMapper::new();
        let before = monotonic_ns();
        let t = Instant::now();
        let after = monotonic_ns();
        let mapped = mapper.ns(t);
        // Within a few µs of the sandwich (the pairing is off by tens of ns).
        assert!(
            mapped + 5_000 >= before && mapped <= after + 5_000,
            "{before} {mapped} {after}"
        );
    }

    #[test]
    fn realtime_converts_to_monotonic() {
        let conv = RealtimeToMonotonic::new();
        let before = monotonic_ns();
        let real = realtime_ns();
        let after = monotonic_ns();
        let mono = conv.to_monotonic(real);
        assert!(
            mono + 50_000 >= before && mono <= after + 50_000,
            "{before} {mono} {after}"
        );
    }
}
