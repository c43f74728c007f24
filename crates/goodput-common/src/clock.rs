//! The system-wide monotonic clock, in nanoseconds, for joining timestamps
//! across processes (goodput's records with a server's log, the simulator's
//! step times with a client's event times).

/// `CLOCK_MONOTONIC` now, in ns (what `std::time::Instant` reads on Linux),
/// comparable across processes; `None` where there is no such clock.
pub fn monotonic_ns() -> Option<u64> {
    #[cfg(unix)]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes into the timespec we own.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        (rc == 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
    }
    #[cfg(not(unix))]
    {
        None
    }
}
