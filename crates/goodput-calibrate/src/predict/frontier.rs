//! `goodput predict --frontier`: the deployment frontier forecast in
//! virtual time, as `goodput sweep --frontier` measures it — closed loops
//! at concurrency 1, doubled until output throughput is flat, filled to
//! MLPerf's 7 points — each point's output throughput and tokens a second
//! a user (1000 / p90 TPOT), with the Pareto corners. A grid of
//! configurations can be screened so in seconds before it is run.

use goodput_core::plan::{fill_frontier_plan, Frontier, FrontierPoint, FLAT_GAIN, PLAN_CAP};
use goodput_sim::closed_loop::simulate_closed_loop_with;
use goodput_sim::SimConfig;
use rand::rngs::StdRng;
use rand::SeedableRng;

use super::PredictOptions;
use crate::error::Error;

/// Requests a closed loop at concurrency `c` runs: its first `c` and last
/// `c` are its warm-up and drain, the rest measured.
fn requests(c: usize) -> usize {
    (8 * c).max(200)
}

/// numpy's linear percentile of `v` (sorted here).
fn percentile(v: &mut [f64], q: f64) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let h = (v.len() - 1) as f64 * q;
    let (lo, hi) = (h.floor() as usize, h.ceil() as usize);
    Some(v[lo] + (h - lo as f64) * (v[hi] - v[lo]))
}

/// One closed loop at concurrency `c`, as a frontier point.
fn point(config: &SimConfig, options: &PredictOptions, c: usize) -> Result<FrontierPoint, Error> {
    let n = requests(c);
    let mut rng = StdRng::seed_from_u64(options.seed ^ c as u64);
    let lengths: Vec<(usize, usize)> = (0..n)
        .map(|_| {
            (
                options.input_tokens.sample(&mut rng).max(1) as usize,
                options.output_tokens.sample(&mut rng).max(1) as usize,
            )
        })
        .collect();
    let report = simulate_closed_loop_with(config, c, n, |i| lengths[i]).map_err(Error::usage)?;
    // The loop is full from the c-th completion to the (n − c)-th (after
    // it, sending has stopped and the loop drains): the output tokens
    // produced between them over their span, and the latencies of the
    // requests sent after the first c and finished before the drain.
    let mut done: Vec<f64> = report
        .requests
        .iter()
        .filter_map(|o| o.token_times_s.last().copied())
        .collect();
    done.sort_by(f64::total_cmp);
    let (from, to) = match (
        done.get(c.saturating_sub(1)),
        done.get(n.saturating_sub(c + 1)),
    ) {
        (Some(&a), Some(&b)) if b > a => (a, b),
        _ => (0.0, 0.0),
    };
    let mut tokens = 0usize;
    let (mut tpots, mut ttfts) = (Vec::new(), Vec::new());
    for (i, o) in report.requests.iter().enumerate() {
        tokens += o
            .token_times_s
            .iter()
            .filter(|t| **t > from && **t <= to)
            .count();
        let finished_in = o.token_times_s.last().is_some_and(|t| *t <= to);
        if i >= c && finished_in {
            tpots.extend(o.tpot_s());
            ttfts.extend(o.ttft_s(report.arrivals_s[i]));
        }
    }
    let system_tps = if to > from {
        tokens as f64 / (to - from)
    } else {
        0.0
    };
    let gpus = f64::from(config.tensor_parallel.max(1)) * options.replicas as f64;
    let tpot90 = percentile(&mut tpots, 0.9);
    let tpot50 = percentile(&mut tpots, 0.5);
    let per_user = |t: Option<f64>| t.filter(|t| *t > 0.0).map(|t| 1.0 / t);
    Ok(FrontierPoint {
        point: 0,
        concurrency: Some(c),
        offered: c as f64,
        region: None,
        system_tps: system_tps * options.replicas as f64,
        system_tps_per_gpu: system_tps * options.replicas as f64 / gpus,
        tps_per_user: per_user(tpot90),
        tps_per_user_interval: None,
        tps_per_user_p50: per_user(tpot50),
        tps_per_user_by_concurrency: Some(system_tps / c as f64),
        ttft_p90_ms: percentile(&mut ttfts, 0.9).map(|t| t * 1e3),
        cost_per_million_output_tokens: None,
        meets: None,
        on_frontier: false,
    })
}

/// The frontier of the model, planned as `sweep --frontier` plans it. With
/// replicas, each runs `c` of the concurrency's streams (round-robin).
pub(super) fn frontier(config: &SimConfig, options: &PredictOptions) -> Result<Frontier, Error> {
    let mut points = Vec::new();
    let (mut c, mut best, mut flat) = (1usize, 0.0f64, 0);
    loop {
        let p = point(config, options, c)?;
        flat = if p.system_tps < best * (1.0 + FLAT_GAIN) {
            flat + 1
        } else {
            0
        };
        best = best.max(p.system_tps);
        points.push(p);
        if flat >= 2 || c >= PLAN_CAP {
            break;
        }
        c *= 2;
    }
    let run: Vec<usize> = points.iter().filter_map(|p| p.concurrency).collect();
    for c in fill_frontier_plan(&run) {
        points.push(point(config, options, c)?);
    }
    for (i, p) in points.iter_mut().enumerate() {
        p.point = i;
    }
    // A replica's concurrency is the deployment's over the replicas.
    if options.replicas > 1 {
        for p in &mut points {
            let c = p.concurrency.unwrap_or(1) * options.replicas;
            p.concurrency = Some(c);
            p.offered = c as f64;
            p.tps_per_user_by_concurrency = Some(p.system_tps / c as f64);
        }
    }
    let gpus = config.tensor_parallel.max(1) * options.replicas as u32;
    Ok(Frontier::from_points(points, "tps_per_user", gpus))
}
