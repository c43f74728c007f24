//! A one-line live progress display on stderr, only when stderr is a terminal.

use std::io::Write;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use goodput_core::executor::Progress;

/// Spawn the display; it stops when `done` resolves.
pub fn spawn(
    progress: Arc<Progress>,
    total: Option<u64>,
    done: tokio::sync::watch::Receiver<bool>,
) {
    tokio::spawn(async move {
        let start = Instant::now();
        let mut done = done;
        let mut tick = tokio::time::interval(Duration::from_millis(250));
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = done.wait_for(|d| *d) => break,
            }
            let sent = progress.sent.load(Relaxed);
            let finished = progress.finished.load(Relaxed);
            let of = total.map(|t| format!("/{t}")).unwrap_or_default();
            let mut err = std::io::stderr().lock();
            let _ = write!(
                err,
                "\r\x1b[2K{:>6.1}s  sent {sent}{of}  finished {finished}  in flight {}",
                start.elapsed().as_secs_f64(),
                sent.saturating_sub(finished)
            );
            let _ = err.flush();
        }
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K");
        let _ = err.flush();
    });
}
