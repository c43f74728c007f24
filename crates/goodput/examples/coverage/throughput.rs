//! Other throughput intervals, measured beside the printed ones when
//! `COVERAGE_THROUGHPUT_ALT=1`: each keeps the run's own value and takes
//! its half-width from another reading of the run's variation.

use goodput_core::measure::batch;
use goodput_core::measure::Estimate;
use goodput_core::request::RequestRecord;

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

/// A request's prompt tokens as the server counted them.
fn prompt_tokens(r: &RequestRecord) -> f64 {
    r.usage.as_ref().and_then(|u| u.prompt_tokens).unwrap_or(0) as f64
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
    work(run, &mut out);
    for b in [16usize, 32] {
        work_batches(run, b, &mut out);
    }
    work_stalls(run, &mut out);
    out
}

/// Least squares of `y` on (1, x): the slope.
fn slope(rows: &[(f64, f64)]) -> Option<f64> {
    let n = rows.len() as f64;
    let mx = rows.iter().map(|r| r.0).sum::<f64>() / n;
    let my = rows.iter().map(|r| r.1).sum::<f64>() / n;
    let sxx: f64 = rows.iter().map(|r| (r.0 - mx).powi(2)).sum();
    let sxy: f64 = rows.iter().map(|r| (r.0 - mx) * (r.1 - my)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
}

/// The work each request brought, with a prompt's prefill counted once per
/// stream it stalls: in a closed loop of c users the duration is Σ E2EL / c,
/// a request's decode adds to its own E2EL only, and its prefill adds to
/// every E2EL in flight (c of them). The prefill's cost per prompt token
/// from the TTFTs, the decode's per output token from E2EL − TTFT; each
/// request's cost c·b·prompt + g·output, shifted so that the costs add up
/// to Σ E2EL; an iid variance of the ratios.
fn work_stalls(run: &Run, out: &mut Vec<(String, Estimate)>) {
    let m = &run.metrics;
    let (req, tok) = (m.throughput.request.value, m.throughput.output.value);
    let recs: Vec<_> = measured(run)
        .into_iter()
        .filter(|r| !r.events.is_empty())
        .collect();
    let n = recs.len();
    if n < 16 {
        return;
    }
    let ttft = |r: &RequestRecord| (r.events[0].at_ns.saturating_sub(r.t_sched)) as f64 / 1e9;
    let Some(b) = slope(
        &recs
            .iter()
            .map(|r| (prompt_tokens(r), ttft(r)))
            .collect::<Vec<_>>(),
    ) else {
        return;
    };
    let Some(g) = slope(
        &recs
            .iter()
            .map(|r| (tokens(r), e2el_s(r) - ttft(r)))
            .collect::<Vec<_>>(),
    ) else {
        return;
    };
    let c = m.mean_in_flight.max(1.0);
    let nf = n as f64;
    // A decode step without a prefill in it: the median gap between tokens.
    let mut gaps: Vec<f64> = recs
        .iter()
        .flat_map(|r| {
            r.events
                .windows(2)
                .map(|w| (w[1].at_ns.saturating_sub(w[0].at_ns)) as f64 / 1e9)
        })
        .collect();
    gaps.sort_by(f64::total_cmp);
    let s0 = gaps.get(gaps.len() / 2).copied().unwrap_or(g);
    let sum_e2el: f64 = recs.iter().map(|r| e2el_s(r)).sum();
    // The KV cache each request keeps read while it decodes, Σ (prompt + t)
    // over its tokens: its cost per token from its own decode time, read by
    // every stream in flight.
    let kv = |r: &RequestRecord| prompt_tokens(r) * tokens(r) + tokens(r) * tokens(r) / 2.0;
    let kappa = fit3(
        &recs
            .iter()
            .map(|r| (tokens(r), kv(r), e2el_s(r) - ttft(r)))
            .collect::<Vec<_>>(),
    )
    .map_or(0.0, |f| f[2].max(0.0));
    for (tag, cb, gg, ck) in [
        ("work-stalls", c * b.max(0.0), g.max(0.0), 0.0),
        ("work-own", b.max(0.0), g.max(0.0), 0.0),
        ("work-split", c * b.max(0.0), s0, 0.0),
        ("work-kv", c * b.max(0.0), s0, c * kappa),
    ] {
        let raw: Vec<f64> = recs
            .iter()
            .map(|r| cb * prompt_tokens(r) + gg * tokens(r) + ck * kv(r))
            .collect();
        let shift = (sum_e2el - raw.iter().sum::<f64>()) / nf;
        let cost: Vec<f64> = raw.iter().map(|x| x + shift).collect();
        let toks: Vec<f64> = recs.iter().map(|r| tokens(r)).collect();
        let sum_t: f64 = toks.iter().sum();
        let rel_var = |amount: &dyn Fn(usize) -> f64, total: f64| -> f64 {
            let r = total / sum_e2el;
            let z: Vec<f64> = (0..n).map(|i| amount(i) - r * cost[i]).collect();
            variance(&z) * nf / (total * total)
        };
        let rv_req = rel_var(&|_| 1.0, nf);
        let rv_tok = rel_var(&|i| toks[i], sum_t);
        let floor = 1.0 / nf;
        // The run's start (a first wave of c prompts, no completion before
        // the first E2EL) and its drain: each one E2EL's spread over c.
        let e2el: Vec<f64> = recs.iter().map(|r| e2el_s(r)).collect();
        let rv_ends = 2.0 * variance(&e2el) / c * c * c / (sum_e2el * sum_e2el);
        for (name, value, rv) in [("request", req, rv_req), ("output", tok, rv_tok)] {
            let rel = (1.96 * rv.sqrt()).max(floor);
            out.push((
                format!("{name}_throughput~{tag}"),
                closed(value, value * rel),
            ));
            let rel = (1.96 * (rv + rv_ends).sqrt()).max(floor);
            out.push((
                format!("{name}_throughput~{tag}+ends"),
                closed(value, value * rel),
            ));
        }
    }
}

/// Least squares of `y` on (x0, x1, x2), no intercept: the coefficients.
fn fit3_through_origin(rows: &[([f64; 3], f64)]) -> Option<[f64; 3]> {
    solve3(normal3(rows.iter().copied()))
}

/// The work's costs read from batches of completions rather than from each
/// request's own E2EL (a prompt's prefill stalls every stream in flight,
/// so its cost lands in its neighbours' E2ELs): Σ E2EL of each batch fitted
/// on its count, prompt tokens and output tokens; then each request's cost
/// from those coefficients, with an iid variance.
fn work_batches(run: &Run, b: usize, out: &mut Vec<(String, Estimate)>) {
    let m = &run.metrics;
    let (req, tok) = (m.throughput.request.value, m.throughput.output.value);
    let mut recs: Vec<_> = measured(run);
    recs.sort_by_key(|r| r.t_done);
    let n = recs.len();
    if n < 4 * b {
        return;
    }
    let xs: Vec<[f64; 3]> = recs
        .iter()
        .map(|r| [1.0, prompt_tokens(r), tokens(r)])
        .collect();
    let ys: Vec<f64> = recs.iter().map(|r| e2el_s(r)).collect();
    let rows: Vec<([f64; 3], f64)> = (0..b)
        .map(|j| {
            let (s, e) = (j * n / b, (j + 1) * n / b);
            let mut x = [0.0; 3];
            let mut y = 0.0;
            for i in s..e {
                for k in 0..3 {
                    x[k] += xs[i][k];
                }
                y += ys[i];
            }
            (x, y)
        })
        .collect();
    let Some(c) = fit3_through_origin(&rows) else {
        return;
    };
    let cost: Vec<f64> = xs
        .iter()
        .map(|x| c[0] * x[0] + c[1] * x[1] + c[2] * x[2])
        .collect();
    let sum_c: f64 = cost.iter().sum();
    let toks: Vec<f64> = recs.iter().map(|r| tokens(r)).collect();
    let sum_t: f64 = toks.iter().sum();
    let nf = n as f64;
    let rel_var = |amount: &dyn Fn(usize) -> f64, total: f64| -> f64 {
        let r = total / sum_c;
        let z: Vec<f64> = (0..n).map(|i| amount(i) - r * cost[i]).collect();
        variance(&z) * nf / (total * total)
    };
    let rv_req = rel_var(&|_| 1.0, nf);
    let rv_tok = rel_var(&|i| toks[i], sum_t);
    let sum_y: f64 = ys.iter().sum();
    let resid_ss: f64 = rows
        .iter()
        .map(|(x, y)| (y - (c[0] * x[0] + c[1] * x[1] + c[2] * x[2])).powi(2))
        .sum::<f64>()
        * b as f64
        / (b as f64 - 3.0);
    let rv_resid = resid_ss / (sum_y * sum_y);
    let floor = 1.0 / nf;
    for (name, value, rv) in [("request", req, rv_req), ("output", tok, rv_tok)] {
        let rel = (1.96 * rv.sqrt()).max(floor);
        out.push((
            format!("{name}_throughput~work-b{b}"),
            closed(value, value * rel),
        ));
        let rel2 = (1.96 * (rv + rv_resid).sqrt()).max(floor);
        out.push((
            format!("{name}_throughput~work-b{b}+resid"),
            closed(value, value * rel2),
        ));
    }
}

/// The normal equations of a least-squares fit on three columns.
fn normal3(rows: impl Iterator<Item = ([f64; 3], f64)>) -> [[f64; 4]; 3] {
    let mut a = [[0.0f64; 4]; 3];
    for (x, y) in rows {
        for i in 0..3 {
            for j in 0..3 {
                a[i][j] += x[i] * x[j];
            }
            a[i][3] += x[i] * y;
        }
    }
    a
}

/// Gauss–Jordan with partial pivoting on an augmented 3 × 3 system.
fn solve3(mut a: [[f64; 4]; 3]) -> Option<[f64; 3]> {
    for c in 0..3 {
        let p = (c..3).max_by(|&i, &j| a[i][c].abs().total_cmp(&a[j][c].abs()))?;
        a.swap(c, p);
        if a[c][c].abs() < 1e-12 {
            return None;
        }
        let pivot = a[c];
        for (r, row) in a.iter_mut().enumerate() {
            if r != c {
                let f = row[c] / pivot[c];
                for (x, y) in row.iter_mut().zip(pivot).skip(c) {
                    *x -= f * y;
                }
            }
        }
    }
    Some([a[0][3] / a[0][0], a[1][3] / a[1][1], a[2][3] / a[2][2]])
}

/// Least squares of `y` on (1, x1, x2): the coefficients.
fn fit3(rows: &[(f64, f64, f64)]) -> Option<[f64; 3]> {
    solve3(normal3(rows.iter().map(|&(x1, x2, y)| ([1.0, x1, x2], y))))
}

/// The work each request brought: its E2EL fitted on its prompt and output
/// tokens. A closed loop's duration is Σ E2EL / c, and the part of it that
/// varies from run to run is the workload's draw, which is independent
/// request by request: the ratio of completions (or tokens) to the fitted
/// E2ELs, with an iid variance; `+resid` adds the residuals' batch means.
fn work(run: &Run, out: &mut Vec<(String, Estimate)>) {
    let m = &run.metrics;
    let (req, tok) = (m.throughput.request.value, m.throughput.output.value);
    let mut recs: Vec<_> = measured(run);
    recs.sort_by_key(|r| r.t_done);
    if recs.len() < 16 {
        return;
    }
    let rows: Vec<(f64, f64, f64)> = recs
        .iter()
        .map(|r| (prompt_tokens(r), tokens(r), e2el_s(r)))
        .collect();
    let Some(b) = fit3(&rows) else { return };
    let fitted: Vec<f64> = rows
        .iter()
        .map(|&(x1, x2, _)| b[0] + b[1] * x1 + b[2] * x2)
        .collect();
    let resid: Vec<(f64, f64)> = rows
        .iter()
        .zip(&fitted)
        .map(|(&(_, _, y), f)| (y - f, 1.0))
        .collect();
    let n = recs.len() as f64;
    let sum_c: f64 = fitted.iter().sum();
    let toks: Vec<f64> = recs.iter().map(|r| tokens(r)).collect();
    let sum_t: f64 = toks.iter().sum();
    // Relative variance of Σ amount / Σ fitted under iid draws.
    let rel_var = |amount: &dyn Fn(usize) -> f64, total: f64| -> f64 {
        let r = total / sum_c;
        let z: Vec<f64> = (0..recs.len()).map(|i| amount(i) - r * fitted[i]).collect();
        variance(&z) * n / (total * total)
    };
    let rv_req = rel_var(&|_| 1.0, n);
    let rv_tok = rel_var(&|i| toks[i], sum_t);
    // The residuals' sum, by batch means: its variance relative to Σ E2EL.
    let resid_var = batch::spread(&resid).map(|s| s.variance).unwrap_or(0.0);
    let sum_e2el: f64 = rows.iter().map(|r| r.2).sum();
    let rv_resid = resid_var / (sum_e2el * sum_e2el);
    let floor = 1.0 / n;
    for (name, value, rv) in [("request", req, rv_req), ("output", tok, rv_tok)] {
        let rel = (1.96 * rv.sqrt()).max(floor);
        out.push((
            format!("{name}_throughput~work"),
            closed(value, value * rel),
        ));
        let rel2 = (1.96 * (rv + rv_resid).sqrt()).max(floor);
        out.push((
            format!("{name}_throughput~work+resid"),
            closed(value, value * rel2),
        ));
    }
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
            let rel = s.ratio_half_width(goodput_core::measure::Level::TwoSided) / ratio;
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
            let t = goodput_core::measure::t_975(s.df);
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
            let t = goodput_core::measure::t_975(s.df);
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
