//! The deployment frontier chart: each sweep's points, system output
//! throughput per GPU against tokens a second per user (MLPerf Endpoints'
//! `tps_per_user` = 1000 / p90 TPOT), and its Pareto frontier drawn as the
//! step function MLPerf asks for (no interpolation between points).

use super::chart::{Axis, Chart, Series};
use super::format::Source;
use super::scale::AxisKind;
use crate::plan::sweep::{frontier, Frontier, SweepResult};

/// The frontier a sweep saved (`--frontier`), else the one its points give.
fn of(s: &SweepResult) -> Frontier {
    s.frontier.clone().unwrap_or_else(|| {
        let agents = s.points.iter().any(|p| p.result.metrics.tasks.is_some());
        frontier(&s.points, agents)
    })
}

/// One frontier per sweep, overlaid: a staircase through its corners and
/// hollow dots for the points it dominates.
pub(super) fn frontier_chart(sweeps: &[(Source, &SweepResult)]) -> Chart {
    let fronts: Vec<Frontier> = sweeps.iter().map(|(_, s)| of(s)).collect();
    let agents = fronts.iter().any(|f| f.x == "e2e_interactivity");
    let x_title = if agents {
        "output tokens/s per user (e2e_interactivity: Σ output tokens / Σ E2EL)"
    } else {
        "output tokens/s per user (tps_per_user: 1000 / p90 TPOT)"
    };
    let mut chart = Chart::new(
        "sweep-frontier",
        "Deployment frontier: throughput against interactivity",
        Axis::new(x_title, AxisKind::FromZero),
        Axis::new("system output tokens/s per GPU", AxisKind::FromZero),
    )
    .note("Up and to the right is better. The line is the Pareto frontier as MLPerf Endpoints draws it, a step function over the points (not interpolated): at each per-user rate, the most throughput a point at least that interactive gave. Hollow dots are points the frontier dominates. GPUs from --gpus, else 1.");
    let single = sweeps.len() == 1;
    for ((source, _), f) in sweeps.iter().zip(&fronts) {
        let at = |i: &usize| {
            let p = &f.points[*i];
            p.tps_per_user.map(|x| (x, p.system_tps_per_gpu))
        };
        let corners: Vec<(f64, f64)> = f.steps.iter().filter_map(at).collect();
        let others: Vec<(f64, f64)> = (0..f.points.len())
            .filter(|i| !f.points[*i].on_frontier)
            .filter_map(|i| at(&i))
            .collect();
        let name = |what: &str| {
            if single {
                what.to_string()
            } else {
                format!("{} · {what}", source.label)
            }
        };
        chart
            .series
            .push(Series::new(name("frontier"), source.colour, corners).step());
        if !others.is_empty() {
            chart
                .series
                .push(Series::new(name("dominated points"), source.colour, others).unjoined());
        }
    }
    chart
}
