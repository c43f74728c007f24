//! The latency–throughput curve of a sweep and its knees, from its points.

use super::result::{CurvePoint, KneeAt, Knees, PointRole, SweepPoint};
use crate::load::schedule::Load;
use crate::measure::metrics::Metric;
use crate::output::result::RunResult;
use crate::plan::knee;

/// The curve (open-loop points by offered rate, or every point when none is
/// open loop) and the knees, by two methods.
pub(super) fn curve_and_knees(points: &[SweepPoint]) -> (Vec<CurvePoint>, Knees) {
    let open: Vec<usize> = (0..points.len())
        .filter(|&i| points[i].result.config.load.is_open())
        .collect();
    let chosen: Vec<usize> = if open.is_empty() {
        (0..points.len()).collect()
    } else {
        open
    };
    let mut curve: Vec<CurvePoint> = chosen.iter().map(|&i| curve_point(i, &points[i])).collect();
    curve.sort_by(|a, b| a.offered.total_cmp(&b.offered));
    let floor = points
        .iter()
        .find(|p| p.role == PointRole::Floor)
        .and_then(|p| p99(&p.result, Metric::Ttft))
        .or_else(|| curve.first().and_then(|c| c.ttft_p99_ms));
    let xs: Vec<f64> = curve.iter().map(|c| c.offered).collect();
    let ys: Vec<f64> = curve.iter().map(|c| c.output_throughput).collect();
    let ttfts: Vec<f64> = curve
        .iter()
        .map(|c| c.ttft_p99_ms.unwrap_or(f64::INFINITY))
        .collect();
    let knees = Knees {
        throughput: knee::kneedle(&xs, &ys).map(|i| KneeAt {
            curve_index: i,
            offered: xs[i],
        }),
        degradation: floor
            .and_then(|f| knee::degradation_knee(f, &ttfts, knee::DEFAULT_DEGRADATION_FACTOR))
            .map(|i| KneeAt {
                curve_index: i,
                offered: xs[i],
            }),
        degradation_factor: knee::DEFAULT_DEGRADATION_FACTOR,
        floor_ttft_p99_ms: floor,
    };
    (curve, knees)
}

pub(super) fn p(result: &RunResult, m: Metric, pct: f64) -> Option<f64> {
    result
        .metrics
        .get(m)
        .and_then(|d| d.percentiles.iter().find(|x| x.0 == pct))
        .map(|x| x.1.value)
}

fn p99(result: &RunResult, m: Metric) -> Option<f64> {
    p(result, m, 99.0)
}

fn curve_point(i: usize, pt: &SweepPoint) -> CurvePoint {
    let r = &pt.result;
    let offered = match r.config.load {
        Load::Open { rate, .. } => rate,
        Load::Closed { concurrency } => concurrency as f64,
    };
    let m = &r.metrics;
    let gpus = r.gpu_metrics.as_ref().and_then(|g| g.summary.as_ref());
    CurvePoint {
        point: i,
        offered,
        // One throughput per point, as the console's sweep table and the
        // CSV show it: completed requests over the run's duration, and
        // output tokens as they streamed, from every request. The
        // steady-state window's figures read 0 at an overloaded point whose
        // requests outlasted the window, and so would completed requests'
        // tokens where none completed.
        request_throughput: m.throughput.request.value,
        output_throughput: m.throughput.streamed_output,
        ttft_p50_ms: p(r, Metric::Ttft, 50.0),
        ttft_p99_ms: p99(r, Metric::Ttft),
        tpot_p50_ms: p(r, Metric::Tpot, 50.0),
        tpot_p99_ms: p99(r, Metric::Tpot),
        e2el_p50_ms: p(r, Metric::E2el, 50.0),
        e2el_p99_ms: p99(r, Metric::E2el),
        saturated: m.saturation.saturated,
        meets: pt.meets,
        cost_per_million_good_output_tokens: r
            .cost
            .as_ref()
            .and_then(|c| c.per_million_good_output_tokens),
        output_tokens_per_joule: gpus.and_then(|g| g.output_tokens_per_joule),
        mean_power_w: gpus.and_then(|g| g.mean_power_w),
    }
}
