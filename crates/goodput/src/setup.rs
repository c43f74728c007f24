//! What a measuring command sets up in the process before it measures: the
//! open files its connections need (goodput-core's `load` makes the room),
//! the async runtime, and the watch on SIGINT and SIGTERM.

use anyhow::{anyhow, Context};
use goodput_core::load::{check_fd_limit, RunControl};
pub use goodput_core::load::{raise_fd_limit, reserve_fd_table};

use crate::exit::{usage, Exit};

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
    check_fd_limit(streams, with_sim).map_err(|e| usage(anyhow!(e)))?;
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
