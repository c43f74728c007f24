//! The open files a run's connections need, made room for before any
//! thread exists: the open-file limit raised to its hard limit, a check
//! that the run's streams fit under it (else the failures would be the
//! client's own, not the server's), and the descriptor table grown at once.

/// The process's open-file limit (`None` if it cannot be read).
fn open_file_limit() -> Option<libc::rlimit> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit on a properly initialised struct.
    (unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0).then_some(lim)
}

/// Raise the open-file limit to the hard limit: thousands of streams need thousands of sockets.
pub fn raise_fd_limit() {
    if let Some(mut lim) = open_file_limit().filter(|l| l.rlim_cur < l.rlim_max) {
        lim.rlim_cur = lim.rlim_max;
        // SAFETY: setrlimit on a properly initialised struct.
        unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) };
    }
}

/// Descriptors the process needs besides its connections (standard streams,
/// output files, the runtime's epoll and wakers, the simulator's listener).
const FD_OVERHEAD: u64 = 48;

/// Descriptors a run of `streams` connections needs: its sockets (both ends
/// with the built-in simulator in the same process) and the rest.
fn fds_needed(streams: usize, with_sim: bool) -> u64 {
    streams as u64 * if with_sim { 2 } else { 1 } + FD_OVERHEAD
}

/// Stop before sending when `streams` connections (twice that with the
/// built-in simulator in the same process, which holds the other end)
/// cannot fit under the open-file limit, after [`raise_fd_limit`]: the
/// failures would be the client's own, not the server's.
pub fn check_fd_limit(streams: Option<usize>, with_sim: bool) -> Result<(), String> {
    let (Some(n), Some(lim)) = (streams, open_file_limit()) else {
        return Ok(());
    };
    let need = fds_needed(n, with_sim);
    if lim.rlim_cur < need {
        return Err(format!(
            "{n} concurrent streams need about {need} open files, but the limit is {} (hard limit {}): raise it (`ulimit -n {need}` in the shell, `LimitNOFILE=` for systemd, `--ulimit nofile={need}` for Docker) or lower the concurrency",
            lim.rlim_cur,
            lim.rlim_max
        ));
    }
    Ok(())
}

/// Descriptors made room for when the run does not bound its connections
/// (open loop without `--max-concurrency`): a 512 KB table, enough for
/// 20,000 req/s of 3 s requests.
const UNBOUNDED_FDS: u64 = 65_536;

/// Grow the descriptor table now to hold every connection the run may open,
/// before any thread exists. The kernel doubles the table as descriptors
/// are allocated, and in a process of several threads each doubling waits
/// for an RCU grace period inside `socket()`: measured at 10,000 req/s in
/// open loop, the runtime thread blocked 11.6 and 20.5 ms in
/// `expand_files` → `synchronize_rcu` while the first thousand connections
/// opened, and every send scheduled meanwhile went out late (p99 schedule
/// lag 3–9 ms, where the one-thread bytes-only client, which never waits
/// there, had 0.2–0.6). A table only grows, so one descriptor placed at the
/// top and closed again leaves the room. Best effort: nothing changes when
/// no standard descriptor is open to duplicate.
pub fn reserve_fd_table(streams: Option<usize>, with_sim: bool) {
    let want = streams.map_or(UNBOUNDED_FDS, |n| fds_needed(n, with_sim));
    let Some(lim) = open_file_limit() else { return };
    let top = want.min(lim.rlim_cur).saturating_sub(1);
    let Ok(top) = libc::c_int::try_from(top) else {
        return;
    };
    for fd in 0..=2 {
        // SAFETY: F_DUPFD_CLOEXEC on a descriptor number only reads it; the
        // duplicate is ours alone and closed at once.
        let dup = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, top) };
        if dup >= 0 {
            // SAFETY: closing the descriptor just made.
            unsafe { libc::close(dup) };
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    /// The table's size as the kernel reports it.
    fn fd_table_size() -> u64 {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("FDSize:"))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    #[test]
    fn the_descriptor_table_is_grown_to_the_runs_connections_and_no_descriptor_is_left_open() {
        super::raise_fd_limit();
        let lim = super::open_file_limit().unwrap();
        let streams = 3_000u64.min(lim.rlim_cur.saturating_sub(super::FD_OVERHEAD) / 2);
        super::reserve_fd_table(Some(streams as usize), true);
        let need = super::fds_needed(streams as usize, true);
        assert!(
            fd_table_size() >= need,
            "FDSize {} for {streams} streams beside the simulator",
            fd_table_size()
        );
        // The descriptor that made the room is closed again.
        let top = (need - 1) as libc::c_int;
        // SAFETY: F_GETFD only asks whether the descriptor is open.
        assert_eq!(unsafe { libc::fcntl(top, libc::F_GETFD) }, -1);
    }
}
