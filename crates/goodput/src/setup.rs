//! What a measuring command sets up in the process before it measures: the
//! open-file limit, the async runtime, and the watch on SIGINT and SIGTERM.

use anyhow::{anyhow, Context};
use goodput_core::load::RunControl;

use crate::exit::{usage, Exit};

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

/// Keep the process off transparent huge pages. mimalloc asks for them on
/// its arenas, so touching one small allocation made a whole 2 MB page
/// resident and zeroed: a 1-request run peaked at 54 MB RSS (29 MB
/// without), start-up spent its system time clearing pages, and 10,000
/// streams went past 150 MB. A benchmark client gains nothing from them.
///
/// It runs from the binary's initializers, before mimalloc's own and before
/// `main`: mimalloc's process start-up and the first allocations come
/// before `main`, and called from `main` the first 2 MB of the arena were
/// already a huge page (a 1-request run: 18.1 MiB peak, 14.7 from here).
extern "C" fn no_huge_pages() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl with PR_SET_THP_DISABLE takes plain integers and only
    // changes this process's memory policy.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

/// [`no_huge_pages`] among the initializers: the priority (101, the first
/// one not reserved) runs it before those without one, mimalloc's included.
#[cfg(target_os = "linux")]
#[used]
#[link_section = ".init_array.00101"]
static NO_HUGE_PAGES_AT_LOAD: extern "C" fn() = no_huge_pages;

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
fn check_fd_limit(streams: Option<usize>, with_sim: bool) -> Result<(), Exit> {
    let (Some(n), Some(lim)) = (streams, open_file_limit()) else {
        return Ok(());
    };
    let need = fds_needed(n, with_sim);
    if lim.rlim_cur < need {
        return Err(usage(anyhow!(
            "{n} concurrent streams need about {need} open files, but the limit is {} (hard limit {}): raise it (`ulimit -n {need}` in the shell, `LimitNOFILE=` for systemd, `--ulimit nofile={need}` for Docker) or lower the concurrency",
            lim.rlim_cur,
            lim.rlim_max
        )));
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

/// What a run or sweep of `streams` connections (`None`: unbounded) does
/// to the process before any thread exists: raise the open-file limit,
/// stop when the streams cannot fit under it, grow the descriptor table,
/// then start compiling the tokenizer's split pattern.
pub fn before_threads(
    streams: Option<usize>,
    with_sim: bool,
    tokenizer: &goodput_core::tokenizer::Tokenizer,
) -> Result<(), Exit> {
    raise_fd_limit();
    check_fd_limit(streams, with_sim)?;
    reserve_fd_table(streams, with_sim);
    prepare_tokenizer(tokenizer);
    Ok(())
}

/// Compile a built-in encoding's split pattern on a thread of its own, at
/// a lower priority, while the run connects and probes. Nothing before the
/// first request counts under a built-in encoding (prompts of the word list
/// are counted by construction); the first count that needs the pattern (a
/// dataset's rows, the first answer's tokens) then finds it compiled, or
/// waits for this thread rather than compiling it again. It was 3 ms of a
/// 1-request run's way to its first request. Called after
/// [`reserve_fd_table`]: no thread may exist before it.
fn prepare_tokenizer(tokenizer: &goodput_core::tokenizer::Tokenizer) {
    if !tokenizer.is_enabled() || tokenizer.is_model_tokenizer() {
        return;
    }
    let tokenizer = tokenizer.clone();
    let spawned = std::thread::Builder::new()
        .name("goodput-split".into())
        .spawn(move || {
            goodput_core::load::lower_thread_priority();
            tokenizer.prepare();
        });
    // Without the thread the first count compiles it.
    drop(spawned);
}

/// The async runtime every request runs on: one thread (a current-thread
/// runtime) unless `threads` asks for more. Measured against a bytes-only
/// client (BENCHMARKS.md): one thread spent less CPU an event than two
/// workers and kept the TTFT tail tighter at 1,024 streams, since no event
/// waits for a wake-up across threads and no task state moves between cores.
pub fn runtime(threads: u16) -> Result<tokio::runtime::Runtime, Exit> {
    let mut builder = if threads <= 1 {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut b = tokio::runtime::Builder::new_multi_thread();
        b.worker_threads(usize::from(threads));
        b
    };
    builder
        .enable_all()
        .build()
        .context("starting the async runtime")
        .map_err(usage)
}

/// Watch SIGINT and SIGTERM: the first stops sending (and any preparation),
/// the second cancels requests in flight. The handlers are installed before
/// this returns, not when the watching task first runs: a signal that comes
/// while the caller goes on (model discovery's connect may complete without
/// yielding) must reach the watcher, never the default action that kills
/// the process without its document.
pub fn watch_signals(control: RunControl) {
    use tokio::signal::unix::{signal, SignalKind};
    let mut signals = [
        signal(SignalKind::interrupt()).ok(),
        signal(SignalKind::terminate()).ok(),
    ];
    tokio::spawn(async move {
        if next_signal(&mut signals).await {
            eprintln!("\ngoodput: stopping: no new requests; waiting for those in flight (signal again to cancel them)");
            control.stop_sending();
            if next_signal(&mut signals).await {
                eprintln!("goodput: cancelling requests in flight");
                control.cancel_in_flight();
            }
        }
    });
}

/// The next SIGINT or SIGTERM (false if neither can be watched).
async fn next_signal(signals: &mut [Option<tokio::signal::unix::Signal>; 2]) -> bool {
    async fn recv(s: &mut Option<tokio::signal::unix::Signal>) -> Option<()> {
        match s.as_mut() {
            Some(s) => s.recv().await,
            None => std::future::pending().await,
        }
    }
    if signals.iter().all(Option::is_none) {
        return false;
    }
    let [int, term] = signals;
    tokio::select! {
        Some(()) = recv(int) => true,
        Some(()) = recv(term) => true,
        else => false,
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
