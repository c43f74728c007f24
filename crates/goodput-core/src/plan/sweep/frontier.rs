//! The deployment frontier: system output throughput against what each
//! user gets, over a sweep's points, as MLPerf Endpoints v1.0 (draft,
//! `endpoints_rules.md` §4–5) plots it — `system_tps` against
//! `tps_per_user = 1000 / p90 TPOT` — with the other two "per user"
//! figures of the field named beside it, its Pareto step function, and the
//! concurrency plan that places the points in MLPerf's regions.
//!
//! The plan (`sweep --frontier`): closed-loop points from concurrency 1,
//! doubled until the system's output throughput stops growing (two
//! doublings in a row adding less than [`FLAT_GAIN`]), then filled with
//! geometric midpoints until it holds [`MIN_POINTS`]. Doubling from 1 puts
//! a point in each of MLPerf's three log₂ regions between `C_min = 1` and
//! `C_max`, the highest concurrency run, whenever `C_max` ≥ 8.

use std::time::Duration;

use super::curve::p;
use super::pareto::{Frontier, FrontierPoint, MIN_POINTS};
use super::result::SweepPoint;
use super::{PointPlan, PointRole, Runner, Step};
use crate::load::schedule::Load;
use crate::measure::metrics::Metric;
use crate::plan::target::RunError;

/// A doubling that adds less than this share of output throughput is flat.
pub const FLAT_GAIN: f64 = 0.10;
/// The plan's highest concurrency when none is given and throughput keeps
/// growing.
pub const PLAN_CAP: usize = 4096;

/// The frontier of a sweep's points (`agents`: x is the e2e interactivity).
pub fn frontier(points: &[SweepPoint], agents: bool) -> Frontier {
    let gpus = points
        .iter()
        .find_map(|p| p.result.cost.as_ref().map(|c| c.spec.gpus.max(1)))
        .unwrap_or(1);
    let out: Vec<FrontierPoint> = points
        .iter()
        .enumerate()
        .filter(|(_, pt)| pt.result.metrics.completed > 0)
        .map(|(i, pt)| point(i, pt, agents, gpus))
        .collect();
    let x = if agents {
        "e2e_interactivity"
    } else {
        "tps_per_user"
    };
    Frontier::from_points(out, x, gpus)
}

fn closed(load: &Load) -> Option<usize> {
    match load {
        Load::Closed { concurrency } => Some(*concurrency),
        Load::Open { .. } => None,
    }
}

fn point(i: usize, pt: &SweepPoint, agents: bool, gpus: u32) -> FrontierPoint {
    let r = &pt.result;
    let m = &r.metrics;
    let concurrency = closed(&r.config.load);
    let system_tps = m.throughput.output.value;
    let tpot90 = m
        .get(Metric::Tpot)
        .and_then(|d| d.percentiles.iter().find(|x| x.0 == 90.0))
        .map(|x| x.1);
    let invert = |v: Option<f64>| v.filter(|v| *v > 0.0).map(|v| 1000.0 / v);
    let (x, interval) = if agents {
        let e = m
            .interactivity
            .as_ref()
            .map(|i| &i.mlperf_e2e_interactivity);
        (e.map(|e| e.value), e.map(|e| (e.lo, e.hi)))
    } else {
        (
            invert(tpot90.as_ref().map(|e| e.value)),
            tpot90.map(|e| (invert(e.hi), invert(e.lo))),
        )
    };
    FrontierPoint {
        point: i,
        concurrency,
        offered: concurrency
            .map_or_else(|| r.config.load.offered_rate().unwrap_or(0.0), |c| c as f64),
        region: None,
        system_tps,
        system_tps_per_gpu: system_tps / f64::from(gpus),
        tps_per_user: x,
        tps_per_user_interval: interval,
        tps_per_user_p50: invert(p(r, Metric::Tpot, 50.0)),
        tps_per_user_by_concurrency: concurrency.map(|c| system_tps / c as f64),
        ttft_p90_ms: p(r, Metric::Ttft, 90.0),
        cost_per_million_output_tokens: r.cost.as_ref().and_then(|c| c.per_million_output_tokens),
        meets: pt.meets,
        on_frontier: false,
    }
}

/// The concurrencies to add to `run` (sorted) until it holds MLPerf's 7
/// points (`MIN_POINTS`): geometric midpoints of the widest gaps first,
/// below the top; then doublings past the top when no gap is left.
pub fn fill(run: &[usize]) -> Vec<usize> {
    let mut all: Vec<usize> = run.to_vec();
    all.sort_unstable();
    all.dedup();
    let mut added = Vec::new();
    while all.len() < MIN_POINTS {
        let gap = all
            .windows(2)
            .map(|w| (w[0], w[1]))
            .filter(|(a, b)| b - a > 1)
            .max_by(|x, y| {
                let r = |(a, b): (usize, usize)| b as f64 / a as f64;
                r(*x).total_cmp(&r(*y))
            });
        let next = match gap {
            Some((a, b)) => {
                let mid = ((a * b) as f64).sqrt().round() as usize;
                mid.clamp(a + 1, b - 1)
            }
            None => all.last().map_or(1, |&top| top * 2),
        };
        all.push(next);
        all.sort_unstable();
        added.push(next);
    }
    added
}

impl Runner<'_> {
    /// The frontier's points: `given` concurrencies in order, or doubling
    /// from 1 until output throughput is flat for two doublings (or `max`),
    /// then [`fill`]ed to [`MIN_POINTS`]. Every point is a full run.
    pub(super) async fn frontier(
        &mut self,
        given: &[usize],
        max: Option<usize>,
    ) -> Result<(), RunError> {
        if !given.is_empty() {
            for &c in given {
                if let Step::Stop = self.frontier_point(c).await? {
                    return Ok(());
                }
            }
            return Ok(());
        }
        let cap = max.unwrap_or(PLAN_CAP).max(1);
        let (mut c, mut best, mut flat) = (1usize, 0.0f64, 0);
        let mut run = Vec::new();
        loop {
            if let Step::Stop = self.frontier_point(c).await? {
                return Ok(());
            }
            run.push(c);
            let last = self.last().map(|p| &p.result.metrics);
            let tps = last.map_or(0.0, |m| m.throughput.output.value);
            let failing = last.is_some_and(|m| m.errors.error_rate > 0.5);
            flat = if tps < best * (1.0 + FLAT_GAIN) {
                flat + 1
            } else {
                0
            };
            best = best.max(tps);
            if flat >= 2 || failing || c >= cap {
                break;
            }
            c = (c * 2).min(cap);
        }
        let mut more = fill(&run);
        more.sort_unstable();
        for c in more {
            if max.is_some_and(|m| c > m) {
                continue;
            }
            if let Step::Stop = self.frontier_point(c).await? {
                return Ok(());
            }
        }
        Ok(())
    }

    /// One point of the frontier at concurrency `c`, its window at least
    /// four answers long: by Little's law an answer at `c` takes at most
    /// `c` / the best request throughput so far (a point whose answers
    /// outlast its window and drain completes nothing: on the simulator's
    /// default deployment, 4 s points at 256 and 512 did).
    async fn frontier_point(&mut self, c: usize) -> Result<Step, RunError> {
        let best = self
            .result
            .points
            .iter()
            .map(|p| p.result.metrics.throughput.request.value)
            .fold(0.0, f64::max);
        let answer_s = if best > 0.0 { c as f64 / best } else { 0.0 };
        let window = self
            .spec
            .point_time
            .max(Duration::from_secs_f64(4.0 * answer_s));
        let load = Load::Closed { concurrency: c };
        self.point(PointPlan::new(PointRole::Grid, load, window, false))
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plan_is_filled_to_seven_points_in_its_widest_gaps() {
        // A server flat from concurrency 4: 1, 2, 4, 8 were run.
        assert_eq!(fill(&[1, 2, 4, 8]), vec![6, 3, 5]);
        // No gap left: doubled past the top.
        assert_eq!(fill(&[1, 2, 3]), vec![6, 4, 5, 12]);
        assert!(fill(&[1, 2, 4, 8, 16, 32, 64]).is_empty());
    }
}
