//! Every point starts clean: before a point, the server is brought back
//! to idle, so that no point inherits the previous one's backlog.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::result::SweepPoint;
use crate::executor::RunControl;
use crate::metrics::Metric;
use crate::target::PreparedTarget;

/// How a point's start was made clean: a point must not inherit the
/// previous point's backlog (a server that does not abort a request when
/// its client goes away keeps working on the ones a point abandoned).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointStart {
    /// `gauges`: the server's running + waiting gauges were polled until
    /// zero; `estimate`: without gauges, the client waited for the
    /// requests it abandoned to have had time to finish.
    pub by: String,
    /// Requests the previous point abandoned at its end (still running at
    /// the server, unless it aborts them).
    pub abandoned: u64,
    /// Seconds waited before the point.
    pub waited_s: f64,
    /// The server's running + waiting when the point started (gauges only).
    pub server_queue: Option<f64>,
    /// The server was idle when the point started: known from the gauges,
    /// None without them.
    pub idle: Option<bool>,
    /// The point was run again because its first run started over a queue.
    #[serde(default)]
    pub redone: bool,
}

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
