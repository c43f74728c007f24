//! The aggregator: one thread behind a channel, off the request path.
//!
//! Request tasks send finished records; the aggregator derives each
//! request's metrics ([`crate::measure::metrics`]), appends its line to the records
//! file (flushed once per batch, a batch being what arrived within a
//! millisecond, so a crash loses at most that), and accumulates the measured
//! phase. Nothing is locked and nothing on the request path waits for it.

use tokio::sync::mpsc;

/// Lower the calling thread's priority (as the aggregator does its own).
pub use crate::load::background::lower_thread_priority;
use crate::load::background::CoreOffer;
use crate::load::executor::{Msg, Progress, RunControl};
use crate::measure::metrics::{Collector, RequestMetrics};
use crate::tokenizer::Tokenizer;

mod records;

pub use records::{LineContext, RecordsSink};

/// Start the aggregator thread; it ends when every sender is dropped and
/// returns what it collected and the sink.
pub fn spawn(
    rx: mpsc::UnboundedReceiver<Msg>,
    sink: RecordsSink,
    tokenizer: Tokenizer,
    ctx: LineContext,
    collector: Collector,
    watchers: Watchers,
) -> std::io::Result<std::thread::JoinHandle<(Collector, RecordsSink)>> {
    std::thread::Builder::new()
        .name("goodput-aggregator".into())
        .spawn(move || aggregate(rx, sink, tokenizer, ctx, collector, watchers))
}

/// Who watches the run through the aggregator: live displays (`progress`),
/// an early end once the SLO verdict is settled, the live exposition.
pub struct Watchers {
    pub progress: std::sync::Arc<Progress>,
    pub early: Option<EarlyHook>,
    pub live: Option<std::sync::Arc<crate::measure::live::LiveMetrics>>,
}

/// The median of the last few TTFTs, for live displays.
#[derive(Default)]
struct RecentTtft {
    ring: std::collections::VecDeque<f64>,
    scratch: Vec<f64>,
}

impl RecentTtft {
    const LEN: usize = 256;

    fn push(&mut self, ms: f64) {
        if self.ring.len() == Self::LEN {
            self.ring.pop_front();
        }
        self.ring.push_back(ms);
    }

    fn p50_us(&mut self) -> u64 {
        if self.ring.is_empty() {
            return 0;
        }
        self.scratch.clear();
        self.scratch.extend(self.ring.iter().copied());
        let mid = self.scratch.len() / 2;
        let (_, m, _) = self.scratch.select_nth_unstable_by(mid, f64::total_cmp);
        (*m * 1e3).max(1.0) as u64
    }
}

/// What the aggregator needs to end a run early: the run's own control and
/// its send counter (for the requests still in flight at a look).
pub struct EarlyHook {
    pub control: RunControl,
    pub progress: std::sync::Arc<Progress>,
}

/// How long the aggregator lets records gather after a batch.
const BATCH_WINDOW: std::time::Duration = std::time::Duration::from_millis(1);

fn aggregate(
    mut rx: mpsc::UnboundedReceiver<Msg>,
    mut sink: RecordsSink,
    tokenizer: Tokenizer,
    ctx: LineContext,
    mut collector: Collector,
    watchers: Watchers,
) -> (Collector, RecordsSink) {
    let Watchers {
        progress,
        early,
        live,
    } = watchers;
    let mut measured_done = 0u64;
    let mut recent = RecentTtft::default();
    let mut offer = CoreOffer::default();
    lower_thread_priority();
    while let Some(first) = rx.blocking_recv() {
        let mut next = Some(first);
        while let Some(msg) = next.take() {
            match msg {
                Msg::MeasureStart(t) => collector.measure_start(t),
                Msg::Record(rec) => {
                    offer.tick();
                    if !rec.warmup && !rec.incomplete() {
                        measured_done += 1;
                    }
                    let m = RequestMetrics::derive(&rec, &tokenizer);
                    if let (false, Some(t)) = (rec.warmup, m.ttft_ms) {
                        recent.push(t);
                    }
                    collector.add(&rec, &m);
                    if let Some(live) = &live {
                        live.observe(&rec, &m);
                    }
                    sink.append(&rec, &m, &ctx);
                }
            }
            next = rx.try_recv().ok();
        }
        sink.flush();
        progress
            .recent_ttft_p50_us
            .store(recent.p50_us(), std::sync::atomic::Ordering::Relaxed);
        if let Some(hook) = &early {
            let sent = hook
                .progress
                .sent_measured
                .load(std::sync::atomic::Ordering::Relaxed);
            if collector
                .check_early(sent.saturating_sub(measured_done))
                .is_some()
            {
                hook.control.end_early();
            }
        }
        // Let the next records gather: a request task's send wakes this
        // thread only when it waits in `blocking_recv`, so at thousands of
        // requests a second one wake (and one records write) takes a batch
        // instead of each record costing the request path a futex call.
        std::thread::sleep(BATCH_WINDOW);
    }
    (collector, sink)
}
