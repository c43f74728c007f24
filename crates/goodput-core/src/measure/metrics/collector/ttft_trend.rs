//! A bounded sample of (send time, TTFT) points of the measured phase, for
//! the saturation check's TTFT trend ([`crate::measure::metrics::saturation`]).

use crate::measure::metrics::{Metric, RequestMetrics};
use crate::measure::slo;
use crate::request::record::RequestRecord;

/// Most (send time, TTFT) points kept for the saturation trend.
const TTFT_POINTS: usize = 1 << 16;

#[derive(Debug, Default)]
pub(super) struct TtftTrend {
    /// (send time since the origin in s, the TTFT a user saw in ms).
    points: Vec<(f32, f32)>,
    /// Every `stride`-th TTFT point is kept (doubling as the run grows past
    /// [`TTFT_POINTS`]): the trend fit needs a bounded sample.
    stride: u64,
    seen: u64,
}

impl TtftTrend {
    /// A completed request's TTFT — from the schedule in open loop, the
    /// latency a user saw — at its send time since `origin_ns`.
    pub(super) fn add(
        &mut self,
        rec: &RequestRecord,
        m: &RequestMetrics,
        origin_ns: Option<u64>,
        open_loop: bool,
    ) {
        let (Some(t_send), Some(origin), Some(ttft)) = (
            rec.t_send,
            origin_ns,
            slo::judged_metric(Metric::Ttft, open_loop).value(m),
        ) else {
            return;
        };
        let at = t_send.saturating_sub(origin) as f64 / 1e9;
        self.seen += 1;
        if !self.seen.is_multiple_of(self.stride.max(1)) {
            return;
        }
        self.points.push((at as f32, ttft as f32));
        if self.points.len() >= TTFT_POINTS {
            // Keep every other point; from now on take half as many.
            let mut i = 0;
            self.points.retain(|_| {
                i += 1;
                i % 2 == 0
            });
            self.stride = self.stride.max(1) * 2;
        }
    }

    /// The points kept, as (s, ms).
    pub(super) fn finish(&self) -> Vec<(f64, f64)> {
        self.points
            .iter()
            .map(|&(t, v)| (t as f64, v as f64))
            .collect()
    }
}
