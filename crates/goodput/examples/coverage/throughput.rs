//! Other throughput intervals, measured beside the printed ones when
//! `COVERAGE_THROUGHPUT_ALT=1`: each keeps the run's own value and takes
//! its half-width from another reading of the run's variation.

use goodput_core::record::RequestRecord;
use goodput_core::stats::batch;
use goodput_core::stats::Estimate;

use crate::virtual_search::Run;

/// The measured, completed requests of a run.
fn measured(run: &Run) -> Vec<&RequestRecord> {
    run.records
        .iter()
        .filter(|r| !r.warmup && r.error.is_none())
        .collect()
}

/// A request's output tokens as the server counted them.
fn tokens(r: &RequestRecord) -> f64 {
    r.usage
        .as_ref()
        .and_then(|u| u.completion_tokens)
        .unwrap_or(0) as f64
}

/// A request's E2EL from its scheduled send, seconds.
fn e2el_s(r: &RequestRecord) -> f64 {
    (r.t_done - r.t_sched) as f64 / 1e9
}

/// The sample variance of `x`.
fn variance(x: &[f64]) -> f64 {
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)
}

fn closed(value: f64, half: f64) -> Estimate {
    Estimate {
        value,
        lo: Some((value - half).max(0.0)),
        hi: Some(value + half),
    }
}

/// Newey–West (Bartlett) variance of the mean of `x`, lag `l`.
fn newey_west(x: &[f64], l: usize) -> f64 {
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    let gamma = |k: usize| {
        x.iter()
            .zip(&x[k..])
            .map(|(a, b)| (a - mean) * (b - mean))
            .sum::<f64>()
            / n
    };
    let mut s = gamma(0);
    for k in 1..=l.min(x.len() - 1) {
        s += 2.0 * (1.0 - k as f64 / (l as f64 + 1.0)) * gamma(k);
    }
    s.max(0.0) / n
}

/// Flat-top (trapezoid) kernel variance of the mean of `x`: weight 1 to
/// lag `l/2`, falling to 0 at `l`; floored at a tenth of the lag-0 term.
fn flat_top(x: &[f64], l: usize) -> f64 {
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    let gamma = |k: usize| {
        x.iter()
            .zip(&x[k..])
            .map(|(a, b)| (a - mean) * (b - mean))
            .sum::<f64>()
            / n
    };
    let g0 = gamma(0);
    let mut s = g0;
    for k in 1..=l.min(x.len() - 1) {
        let w = (2.0 * (1.0 - k as f64 / l as f64)).min(1.0);
        s += 2.0 * w * gamma(k);
    }
    s.max(0.1 * g0) / n
}

/// Every other reading of the run's two throughputs.
pub fn alternatives(run: &Run) -> Vec<(String, Estimate)> {
    let mut out = Vec::new();
    whole_blocks(run, &mut out);
    steady_window(run, &mut out);
    little(run, &mut out);
    sends_and_departures(run, &mut out);
    out
}

/// The whole run's 1 s blocks, by kernels over their autocovariances.
fn whole_blocks(run: &Run, out: &mut Vec<(String, Estimate)>) {
    let m = &run.metrics;
    let (req, tok) = (m.throughput.request.value, m.throughput.output.value);
    let ts = &m.timeseries;
    let per = (1.0 / ts.bucket_s).round() as usize;
    let blocks = |v: &[f64]| -> Vec<f64> {
        (0..m.duration_s.floor() as usize)
            .map(|i| v.iter().skip(i * per).take(per).sum())
            .collect()
    };
    for (name, series, value) in [
        ("request", blocks(&ts.completions), req),
        ("output", blocks(&ts.output_tokens), tok),
    ] {
        if series.len() < 8 {
            continue;
        }
        let n = series.len() as f64;
        for (tag, l) in [
            ("nw3", n.powf(1.0 / 3.0).ceil() as usize),
            ("nw2", n.sqrt().ceil() as usize),
        ] {
            let half = 1.96 * newey_west(&series, l).sqrt();
            out.push((format!("{name}_throughput~{tag}"), closed(value, half)));
        }
        for (tag, l) in [("flat8", 8usize), ("flat16", 16usize)] {
            let half = 1.96 * flat_top(&series, l).sqrt();
            out.push((format!("{name}_throughput~{tag}"), closed(value, half)));
        }
    }
}

/// The steady window's blocks.
fn steady_window(run: &Run, out: &mut Vec<(String, Estimate)>) {
    let m = &run.metrics;
    let (req, tok) = (m.throughput.request.value, m.throughput.output.value);
    // The steady window's blocks (first completion to last send), by a
    // lag-corrected kernel, plus start and drain terms.
    {
        let recs: Vec<_> = measured(run);
        if recs.len() >= 16 {
            let first_send = recs.iter().map(|r| r.t_sched).min().unwrap_or(0);
            let last_send = recs.iter().map(|r| r.t_sched).max().unwrap_or(0);
            let first_done = recs.iter().map(|r| r.t_done).min().unwrap_or(0);
            let n_blocks = (last_send.saturating_sub(first_done) / 1_000_000_000) as usize;
            if n_blocks >= 8 {
                let mut counts = vec![0.0; n_blocks];
                let mut toks = vec![0.0; n_blocks];
                for r in &recs {
                    if r.t_done < first_done {
                        continue;
                    }
                    let b = ((r.t_done - first_done) / 1_000_000_000) as usize;
                    if b < n_blocks {
                        counts[b] += 1.0;
                        toks[b] += tokens(r);
                    }
                }
                let e2el: Vec<f64> = recs.iter().map(|r| e2el_s(r)).collect();
                let var_e2el = variance(&e2el);
                let c = m.mean_in_flight.max(1.0);
                let d = m.duration_s;
                let _ = first_send;
                for (name, series, value) in [("request", &counts, req), ("output", &toks, tok)] {
                    let mean = series.iter().sum::<f64>() / series.len() as f64;
                    if mean <= 0.0 {
                        continue;
                    }
                    let mid = n_blocks as f64;
                    for (tag, l) in [("mid-lag1", 2usize), ("mid-flat8", 8usize)] {
                        let rel_mid = flat_top(series, l) / (mean * mean);
                        let var_mid = mid * mid * rel_mid;
                        for (t2, extra) in [
                            ("", 0.0),
                            ("+e2el", 2.0 * var_e2el),
                            ("+e2el/c", 2.0 * var_e2el / c),
                        ] {
                            let half = 1.96 * value * (var_mid + extra).sqrt() / d;
                            out.push((format!("{name}_throughput~{tag}{t2}"), closed(value, half)));
                        }
                    }
                }
            }
        }
    }
}

/// Little's law ratios.
fn little(run: &Run, out: &mut Vec<(String, Estimate)>) {
    let m = &run.metrics;
    let (req, tok) = (m.throughput.request.value, m.throughput.output.value);
    // Little's law (a closed loop's population is fixed, so the duration is
    // Σ E2EL / c): the ratio of completions, or tokens, to the requests'
    // E2ELs, by batch means in send and in completion order.
    for (order, by_done) in [("send", false), ("done", true)] {
        let mut recs: Vec<_> = measured(run);
        if by_done {
            recs.sort_by_key(|r| r.t_done);
        } else {
            recs.sort_by_key(|r| r.t_sched);
        }
        let req_items: Vec<(f64, f64)> = recs.iter().map(|r| (1.0, e2el_s(r))).collect();
        let tok_items: Vec<(f64, f64)> = recs
            .iter()
            .map(|r| {
                let toks = tokens(r);
                (toks, e2el_s(r))
            })
            .collect();
        for (name, items, value) in [("request", &req_items, req), ("output", &tok_items, tok)] {
            let Some(s) = batch::spread(items) else {
                continue;
            };
            let ratio = s.amount / s.weight;
            let rel = s.ratio_half_width(goodput_core::stats::Level::TwoSided) / ratio;
            out.push((
                format!("{name}_throughput~little-{order}"),
                closed(value, value * rel),
            ));
        }
    }
}

/// The sends' and the departures' gaps.
fn sends_and_departures(run: &Run, out: &mut Vec<(String, Estimate)>) {
    let m = &run.metrics;
    let (req, tok) = (m.throughput.request.value, m.throughput.output.value);
    // The duration's variation: the sends' gaps (the arrival clock, or the
    // closed loop's completions) by batch means in send order, plus one
    // request's E2EL variance for the drain.
    let mut recs: Vec<_> = measured(run);
    recs.sort_by_key(|r| r.t_sched);
    if recs.len() >= 16 && m.duration_s > 0.0 {
        let origin = recs[0].t_sched;
        let mut prev = origin;
        let mut req_items = Vec::with_capacity(recs.len());
        let mut tok_items = Vec::with_capacity(recs.len());
        let mut e2el = Vec::with_capacity(recs.len());
        for r in &recs {
            let gap = (r.t_sched - prev) as f64 / 1e9;
            prev = r.t_sched;
            req_items.push((1.0, gap));
            let toks = tokens(r);
            tok_items.push((toks, gap));
            e2el.push(e2el_s(r));
        }
        let var_e2el = variance(&e2el);
        let d = m.duration_s;
        for (name, items, value) in [("request", &req_items, req), ("output", &tok_items, tok)] {
            let Some(s) = batch::spread(items) else {
                continue;
            };
            // Variance of the ratio Σ amount / Σ gaps, plus the drain's.
            let var_ratio = s.variance / (s.weight * s.weight);
            let var_drain = value * value * var_e2el / (d * d);
            let t = goodput_core::stats::t_975(s.df);
            let half = t * (var_ratio + var_drain).sqrt();
            out.push((format!("{name}_throughput~sends"), closed(value, half)));
            // The arrival clock alone (no drain term).
            out.push((
                format!("{name}_throughput~sends-only"),
                closed(value, t * var_ratio.sqrt()),
            ));
        }
    }
    // The departures: completion gaps in completion order, by batch means
    // (the ratio of completions, or tokens, to the time they took), plus the
    // first completion's offset from the first send as one E2EL.
    let mut done = recs.clone();
    done.sort_by_key(|r| r.t_done);
    if done.len() >= 16 && m.duration_s > 0.0 {
        let mut prev = done[0].t_done;
        let mut req_items = Vec::with_capacity(done.len());
        let mut tok_items = Vec::with_capacity(done.len());
        let mut e2el = Vec::with_capacity(done.len());
        for r in done.iter().skip(1) {
            let gap = (r.t_done - prev) as f64 / 1e9;
            prev = r.t_done;
            req_items.push((1.0, gap));
            let toks = tokens(r);
            tok_items.push((toks, gap));
        }
        for r in &done {
            e2el.push(e2el_s(r));
        }
        let var_e2el = variance(&e2el);
        let d = m.duration_s;
        for (name, items, value) in [("request", &req_items, req), ("output", &tok_items, tok)] {
            let Some(s) = batch::spread(items) else {
                continue;
            };
            let var_ratio = s.variance / (s.weight * s.weight);
            let var_first = value * value * var_e2el / (d * d);
            let t = goodput_core::stats::t_975(s.df);
            out.push((
                format!("{name}_throughput~departures"),
                closed(value, t * (var_ratio + var_first).sqrt()),
            ));
            out.push((
                format!("{name}_throughput~departures-only"),
                closed(value, t * var_ratio.sqrt()),
            ));
        }
    }
}

/// Where a run's duration goes: (first completion after the first send,
/// first completion to last send, last send to last completion), seconds,
/// and completions in the middle part.
pub type Parts = (f64, f64, f64, f64);

/// A run's [`Parts`].
pub fn parts(run: &Run) -> Parts {
    let recs: Vec<_> = measured(run);
    let first_send = recs.iter().map(|r| r.t_sched).min().unwrap_or(0);
    let last_send = recs.iter().map(|r| r.t_sched).max().unwrap_or(0);
    let first_done = recs.iter().map(|r| r.t_done).min().unwrap_or(0);
    let last_done = recs.iter().map(|r| r.t_done).max().unwrap_or(0);
    let mid = recs
        .iter()
        .filter(|r| r.t_done > first_done && r.t_done <= last_send)
        .count() as f64;
    let s = |a: u64, b: u64| b.saturating_sub(a) as f64 / 1e9;
    (
        s(first_send, first_done),
        s(first_done, last_send),
        s(last_send, last_done),
        mid,
    )
}
