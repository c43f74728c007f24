//! The live counters in words, as a progress display shows them.

use std::sync::atomic::Ordering::Relaxed;

use super::Progress;

impl Progress {
    /// The words a progress display shows after its bar: the completion
    /// `rate` (req/s), requests in flight, the recent median TTFT, errors.
    pub fn status(&self, rate: f64) -> String {
        let p = self;
        let sent = p.sent.load(Relaxed);
        let finished = p.finished.load(Relaxed);
        let failed = p.failed.load(Relaxed);
        let ttft = p.recent_ttft_p50_us.load(Relaxed);
        let ttft = if ttft == 0 {
            "–".to_string()
        } else if ttft >= 10_000_000 {
            format!("{:.1} s", ttft as f64 / 1e6)
        } else {
            format!("{:.0} ms", ttft as f64 / 1e3)
        };
        let phase = if sent > 0 && p.sent_measured.load(Relaxed) == 0 {
            "warm-up · "
        } else {
            ""
        };
        format!(
            "{phase}{rate:.1} req/s · in flight {} · p50 TTFT {ttft} · errors {failed}",
            sent.saturating_sub(finished)
        )
    }
}
