//! Every point starts clean: before a point, the server is brought back
//! to idle, so that no point inherits the previous one's backlog.

use std::time::{Duration, Instant};

use super::result::{PointStart, SweepPoint};
use crate::load::executor::RunControl;
use crate::measure::metrics::Metric;
use crate::plan::target::PreparedTarget;

/// Bring the server back to idle before a point, after `points`: poll its
/// running + waiting gauges until zero where it exposes them, else wait for
/// the requests the previous point abandoned to have had time to finish (at
/// the best throughput measured so far, plus one floor latency). Bounded by
/// twice `point_time` (`--point-time`, at least 30 s), and cut short when
/// `control` stops. None before the first point.
pub(super) async fn settle(
    target: &PreparedTarget,
    points: &[SweepPoint],
    point_time: Duration,
    control: &RunControl,
) -> Option<PointStart> {
    let prev = points.last()?;
    let abandoned = prev.result.metrics.incomplete;
    let cap = (2 * point_time).max(Duration::from_secs(30));
    let t0 = Instant::now();
    if let Some(mut queue) = target.server_queue().await {
        while queue > 0.0 && t0.elapsed() < cap && !control.is_stopping() {
            tokio::time::sleep(Duration::from_millis(100)).await;
            queue = target.server_queue().await.unwrap_or(queue);
        }
        return Some(PointStart {
            by: "gauges".into(),
            abandoned,
            waited_s: t0.elapsed().as_secs_f64(),
            server_queue: Some(queue),
            idle: Some(queue <= 0.0),
            redone: false,
        });
    }
    let wait = if abandoned == 0 {
        Duration::ZERO
    } else {
        let best = points
            .iter()
            .map(|p| p.result.metrics.throughput.request.value)
            .fold(0.0, f64::max);
        let floor_e2el_s = points
            .first()
            .and_then(|p| p.result.metrics.get(Metric::E2el))
            .map_or(0.0, |d| d.mean.value / 1e3);
        let s = if best > 0.0 {
            abandoned as f64 / best + floor_e2el_s
        } else {
            cap.as_secs_f64()
        };
        Duration::from_secs_f64(s).min(cap)
    };
    let _ = tokio::time::timeout(wait, control.stopped()).await;
    Some(PointStart {
        by: "estimate".into(),
        abandoned,
        waited_s: t0.elapsed().as_secs_f64(),
        server_queue: None,
        idle: None,
        redone: false,
    })
}
