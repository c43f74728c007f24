//! The measured phase's window: from the first real send to the last end,
//! the time requests spent in flight within it (Little's law), and the
//! rates over it.
//!
//! Definitions (`docs/metrics.md`): `duration` runs from the first real
//! `t_send` of the measured phase to the last `t_done` of a request that
//! ended; a request that never got a connection has no send time and is in
//! no lag or duration figure. Mean in flight is the time every sent request
//! spent in flight within the run — failures included, and requests cut by
//! the drain timeout up to the run's last end — / duration: the average of
//! the in-flight series over the same span.

use super::outcomes::Outcome;
use crate::measure::metrics::RequestMetrics;
use crate::request::record::RequestRecord;

#[derive(Debug, Default)]
pub(super) struct SendWindow {
    first_send_ns: Option<u64>,
    last_send_ns: u64,
    /// The last end of a request that completed or failed.
    last_done_ns: u64,
    sends: u64,
    /// Σ (t_done − t_send) over sent requests that ended, ns.
    busy_ns: u128,
    /// (t_send, t_done) of requests cut by the drain timeout: in flight
    /// during the run, so part of Little's law up to the run's end.
    cut_intervals: Vec<(u64, u64)>,
    /// The sent requests' scheduled times: first, last, count.
    sched_first_ns: Option<u64>,
    sched_last_ns: u64,
    sched_count: u64,
    /// Output tokens streamed by every sent request, and the last end or
    /// cut of one (ns).
    streamed_tokens: u64,
    last_end_ns: u64,
}

/// The window's figures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct WindowFigures {
    /// Requests that reached the server (had a `t_send`).
    pub sends: u64,
    /// First send to last end (s); 0 when nothing was sent.
    pub duration_s: f64,
    /// Little's law: time in flight / duration.
    pub mean_in_flight: f64,
    /// Sends per second over the sending window (open loop only).
    pub achieved_request_rate: Option<f64>,
    /// The schedule's own rate over the same requests (open loop only).
    pub intended_request_rate: Option<f64>,
    /// Output tokens streamed per second, first send to last end or cut.
    pub streamed_output: f64,
}

impl SendWindow {
    /// A measured request. Scheduled and sent requests count toward the
    /// send window and the schedule's rate whatever their outcome; one
    /// still running at the drain timeout (incomplete) is in flight up to
    /// the run's end but not part of the duration.
    pub(super) fn add(&mut self, rec: &RequestRecord, m: &RequestMetrics, outcome: &Outcome) {
        let Some(t_send) = rec.t_send else {
            return;
        };
        // The schedule's intended rate over the same requests as the
        // achieved rate (sent ones): a connect failure is not lag.
        self.sched_first_ns = Some(
            self.sched_first_ns
                .map_or(rec.t_sched, |f| f.min(rec.t_sched)),
        );
        self.sched_last_ns = self.sched_last_ns.max(rec.t_sched);
        self.sched_count += 1;
        self.sends += 1;
        self.first_send_ns = Some(self.first_send_ns.map_or(t_send, |f| f.min(t_send)));
        self.last_send_ns = self.last_send_ns.max(t_send);
        if *outcome == Outcome::Incomplete {
            self.cut_intervals.push((t_send, rec.t_done));
        } else {
            self.last_done_ns = self.last_done_ns.max(rec.t_done);
            self.busy_ns += u128::from(rec.t_done.saturating_sub(t_send));
        }
        self.last_end_ns = self.last_end_ns.max(rec.t_done);
        self.streamed_tokens += if m.event_tokens.is_empty() {
            rec.events.len() as u64
        } else {
            m.event_tokens.iter().map(|&k| u64::from(k)).sum()
        };
    }

    pub(super) fn first_send_ns(&self) -> Option<u64> {
        self.first_send_ns
    }

    pub(super) fn last_send_ns(&self) -> u64 {
        self.last_send_ns
    }

    /// The window's figures; arrival rates only for an open loop (a closed
    /// loop sends when slots free).
    pub(super) fn finish(&self, open_loop: bool) -> WindowFigures {
        let duration_s = match self.first_send_ns {
            Some(f) => self.last_done_ns.saturating_sub(f) as f64 / 1e9,
            None => 0.0,
        };
        let first = self.first_send_ns.unwrap_or(0);
        let window = self.last_send_ns.saturating_sub(first) as f64 / 1e9;
        WindowFigures {
            sends: self.sends,
            duration_s,
            mean_in_flight: self.mean_in_flight(duration_s),
            achieved_request_rate: (open_loop && self.sends >= 2 && window > 0.0)
                .then(|| (self.sends - 1) as f64 / window),
            intended_request_rate: match (open_loop, self.sched_first_ns) {
                (true, Some(first)) if self.sched_count >= 2 && self.sched_last_ns > first => Some(
                    (self.sched_count - 1) as f64 / ((self.sched_last_ns - first) as f64 / 1e9),
                ),
                _ => None,
            },
            streamed_output: match self.first_send_ns {
                Some(f) if self.last_end_ns > f => {
                    self.streamed_tokens as f64 / ((self.last_end_ns - f) as f64 / 1e9)
                }
                _ => 0.0,
            },
        }
    }

    /// Time in flight within the run / `duration_s` (Little's law): ended
    /// requests whole, cut ones up to the last end.
    fn mean_in_flight(&self, duration_s: f64) -> f64 {
        if duration_s <= 0.0 {
            return 0.0;
        }
        let cut: u128 = self
            .cut_intervals
            .iter()
            .map(|&(s, d)| u128::from(d.min(self.last_done_ns).saturating_sub(s)))
            .sum();
        (self.busy_ns + cut) as f64 / 1e9 / duration_s
    }
}
