//! A grid sweep: its points in order (stopping after two saturated ones
//! in a row), and its goodput: the highest offered rate among the points that
//! met the SLO, and whether the pass it rests on is large enough for the
//! SLO's percentiles (else the sweep confirms it with a larger point, and
//! a failing confirmation outweighs the small pass).

use std::time::Duration;

use super::observe;
use super::{
    Goodput, PointPlan, PointRole, Runner, Step, StopReason, SweepPoint, SweepResult, SweepSpec,
};
use crate::load::schedule::Load;
use crate::plan::target::RunError;

/// Without a search: the highest offered rate among the points that met the
/// SLO, bracketed by the lowest failing rate above it.
pub(super) fn goodput_from_points(r: &SweepResult, spec: &SweepSpec) -> Goodput {
    let open: Vec<&SweepPoint> = r
        .points
        .iter()
        .filter(|p| p.result.config.load.is_open())
        .collect();
    let rate_of = |p: &SweepPoint| p.result.config.load.offered_rate().unwrap_or(0.0);
    let need = spec.base.slo.as_ref().map_or(0, observe::min_requests);
    let best = best_passing(&r.points, need).map_or(0.0, |b| b.0);
    let fail = open
        .iter()
        .filter(|p| p.meets == Some(false) && rate_of(p) > best)
        .map(|p| rate_of(p))
        .fold(None, |a: Option<f64>, x| Some(a.map_or(x, |a| a.min(x))));
    let mut notes = Vec::new();
    if let Some(why) = &r.stopped {
        notes.push(format!(
            "the sweep stopped early ({why}): goodput is among the points measured"
        ));
    }
    if open.is_empty() {
        notes.push("no open-loop point: goodput is a request rate; use --rates, sweep alone, or --search goodput".into());
    } else if best == 0.0 {
        notes.push("no point met the SLO".into());
    }
    // A pass on fewer requests than the percentiles need, unsettled, is no
    // answer (unless a point of the same rate large enough passed too).
    let weak = best_passing(&r.points, need).filter(|b| b.1).and_then(|_| {
        open.iter()
            .find(|p| p.meets == Some(true) && rate_of(p) == best && is_weak(p, need))
    });
    if let Some(p) = weak {
        notes.push(format!(
            "inconclusive: the best passing point held {} {}, fewer than the {need} the SLO's percentiles need to be bounded (a longer --point-time, or --search goodput, sizes points for it)",
            held(p),
            if p.result.metrics.tasks.is_some() { "tasks" } else { "requests" }
        ));
    }
    Goodput {
        rate: best,
        bracket: (best, fail),
        slo: spec
            .base
            .slo
            .as_ref()
            .map(|s| s.describe())
            .unwrap_or_default(),
        workload: r.workload.clone(),
        notes,
        confirmed: false,
        interval: None,
        method: Some(crate::plan::search::Method::Bracket),
        inconclusive: weak.is_some(),
        unit: spec
            .base
            .workload
            .source
            .is_agents()
            .then(|| "tasks/s".into()),
    }
}

/// A point too small to bound the SLO's percentiles, its verdict unsettled.
fn is_weak(p: &SweepPoint, need: u64) -> bool {
    p.result.early_stop.is_none() && held(p) < need
}

/// What a point held for its percentiles: its completed requests, or an
/// agent workload's completed tasks.
fn held(p: &SweepPoint) -> u64 {
    let m = &p.result.metrics;
    m.tasks.as_ref().map_or(m.completed, |t| t.completed)
}

/// The highest open-loop rate that met the SLO, and whether every pass at
/// it is [weak](is_weak). A weak pass at a rate where a confirming point
/// failed does not count.
pub(super) fn best_passing(points: &[SweepPoint], need: u64) -> Option<(f64, bool)> {
    let rate_of = |p: &SweepPoint| p.result.config.load.offered_rate().unwrap_or(0.0);
    let open = points.iter().filter(|p| p.result.config.load.is_open());
    let refuted = |rate: f64| {
        points
            .iter()
            .any(|q| q.role == PointRole::Confirm && q.meets == Some(false) && rate_of(q) == rate)
    };
    let passing: Vec<&SweepPoint> = open
        .filter(|p| p.meets == Some(true))
        .filter(|p| !(is_weak(p, need) && refuted(rate_of(p))))
        .collect();
    let best = passing.iter().map(|p| rate_of(p)).reduce(f64::max)?;
    let weak = passing
        .iter()
        .filter(|p| rate_of(p) == best)
        .all(|p| is_weak(p, need));
    Some((best, weak))
}

impl Runner<'_> {
    /// Run loads in order; stop once two points in a row are saturated.
    pub(super) async fn grid(&mut self, loads: Vec<Load>) -> Result<(), RunError> {
        let mut saturated_in_a_row = 0;
        for load in loads {
            if let Step::Stop = self
                .point(PointPlan::new(
                    PointRole::Grid,
                    load,
                    self.spec.point_time,
                    false,
                ))
                .await?
            {
                return Ok(());
            }
            let sat = self
                .last()
                .is_some_and(|p| p.result.metrics.saturation.saturated);
            saturated_in_a_row = if sat { saturated_in_a_row + 1 } else { 0 };
            if saturated_in_a_row >= 2 {
                self.result.stopped = Some(StopReason::Saturated);
                return Ok(());
            }
        }
        Ok(())
    }

    /// A grid's answer resting on a point too small for the SLO's
    /// percentiles is no answer: that rate is run again as a confirming
    /// point sized for them (ending early once its verdict is settled). A
    /// confirmation that fails outweighs the small pass at its rate, and
    /// the next lower passing rate is confirmed in turn (two at most).
    pub(super) async fn confirm_grid(&mut self) -> Result<(), RunError> {
        let Some(slo) = &self.spec.base.slo else {
            return Ok(());
        };
        let need = observe::min_requests(slo);
        for _ in 0..2 {
            let Some((rate, true)) = best_passing(&self.result.points, need) else {
                return Ok(());
            };
            // 10 % over the count, and time for a sparse sample of it.
            let requests = need + need / 10;
            let window = self
                .spec
                .point_time
                .max(Duration::from_secs_f64(requests as f64 * 1.2 / rate));
            let plan = PointPlan {
                requests: Some(requests),
                ..PointPlan::new(PointRole::Confirm, self.open(rate), window, true)
            };
            if let Step::Stop = self.point(plan).await? {
                return Ok(());
            }
        }
        Ok(())
    }
}
