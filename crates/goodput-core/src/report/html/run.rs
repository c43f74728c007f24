//! The runs of the HTML report: headline figures side by side, latency
//! CDFs and time series overlaid (one colour per file), then each run's
//! SLO verdict, errors, notes, workload and configuration.

use serde_json::Value;

use super::chart::{Axis, Chart, Guide, Series};
use super::format::{
    badge, config_block, escape, estimate, ms, num, row, share, swatch, table_by_source, Source,
};
use super::scale::AxisKind;
use crate::metrics::{Metric, RunMetrics, TimeSeries};
use crate::result::RunResult;
use crate::schedule::Load;
use crate::stats::{pct_label, Distribution, QUANTILE_COUNT};
use crate::verdict::Verdict;

/// Most points a time-series line gets: finer buckets are summed into bins.
const MAX_BINS: usize = 60;
/// Narrowest bin (s): at tens of requests/s, a 0.1 s bucket holds a
/// handful of completions and its rate is mostly noise.
const MIN_BIN_S: f64 = 0.5;

/// The metrics drawn as CDFs, with their chart IDs.
const CDFS: [(Metric, &str); 4] = [
    (Metric::Ttft, "cdf-ttft"),
    (Metric::Tpot, "cdf-tpot"),
    (Metric::Itl, "cdf-itl"),
    (Metric::E2el, "cdf-e2el"),
];

pub(super) fn section(runs: &[(Source, &RunResult)]) -> String {
    let mut out = String::from("<section data-section=\"runs\">\n");
    out.push_str(if runs.len() == 1 {
        "<h2>Run</h2>\n"
    } else {
        "<h2>Runs</h2>\n"
    });
    let sources: Vec<Source> = runs.iter().map(|(s, _)| *s).collect();
    out.push_str(&table_by_source("Figure", &sources, &headline_rows(runs)));

    let cdfs: Vec<Chart> = CDFS
        .iter()
        .map(|&(m, id)| cdf_chart(runs, m, id))
        .filter(Chart::has_points)
        .collect();
    if !cdfs.is_empty() {
        out.push_str("<h3>Latency distributions</h3>\n<div class=\"charts\">\n");
        for c in &cdfs {
            out.push_str(&c.render());
        }
        out.push_str("</div>\n");
    }
    let series: Vec<Chart> = time_charts(runs)
        .into_iter()
        .filter(Chart::has_points)
        .collect();
    if !series.is_empty() {
        out.push_str("<h3>Through the run</h3>\n<div class=\"charts\">\n");
        for c in &series {
            out.push_str(&c.render());
        }
        out.push_str("</div>\n");
    }
    out.push_str(&server_block(runs));
    for (source, r) in runs {
        out.push_str(&detail(*source, r, runs.len() > 1));
    }
    out.push_str("</section>\n");
    out
}

/// What the server's own metrics said (`--server-metrics`): its TTFT beside
/// the client's, every other figure its engine exposes, what its scrape
/// needed saying, and KV-cache use, the batch and the queue through the run.
fn server_block(runs: &[(Source, &RunResult)]) -> String {
    let with: Vec<ServerRun> = runs
        .iter()
        .filter_map(|(s, r)| r.server_metrics.as_ref().map(|m| (*s, *r, m)))
        .collect();
    if with.is_empty() {
        return String::new();
    }
    let mut out = String::from("<div data-section=\"server\">\n<h3>What the server saw</h3>\n");
    let sources: Vec<Source> = with.iter().map(|(s, _, _)| *s).collect();
    let rows = server_rows(&with);
    out.push_str(&table_by_source("Figure", &sources, &rows));
    out.push_str(&server_notes(&with));
    let time = || {
        Axis::new(
            "time since the measured phase started (s)",
            AxisKind::FromZero,
        )
    };
    let mut kv = Chart::new(
        "server-kv",
        "Server KV-cache usage",
        time(),
        Axis::new("KV-cache usage (%)", AxisKind::FromZero),
    );
    let mut batch = Chart::new(
        "server-batch",
        "Server: running and waiting requests",
        time(),
        Axis::new("requests", AxisKind::FromZero),
    );
    let single = with.len() == 1;
    for (source, _, m) in &with {
        let label = |what: &str| {
            if single {
                what.to_string()
            } else {
                format!("{} · {what}", source.label)
            }
        };
        let points = |f: &dyn Fn(&crate::server_metrics::ServerSample) -> Option<f64>| {
            m.series
                .iter()
                .filter(|p| p.t_s >= 0.0)
                .filter_map(|p| f(p).map(|v| (p.t_s, v)))
                .collect::<Vec<_>>()
        };
        kv.series.push(Series::new(
            label("KV-cache usage"),
            source.colour,
            points(&|p| p.kv_usage.map(|v| v * 100.0)),
        ));
        batch.series.push(Series::new(
            label("running"),
            source.colour,
            points(&|p| p.running),
        ));
        batch
            .series
            .push(Series::new(label("waiting"), source.colour, points(&|p| p.waiting)).dashed());
    }
    let charts: Vec<Chart> = [kv, batch]
        .into_iter()
        .filter(Chart::has_points)
        .map(|c| c.note("Each point is one scrape of the server's /metrics."))
        .collect();
    if !charts.is_empty() {
        out.push_str("<div class=\"charts\">\n");
        for c in &charts {
            out.push_str(&c.render());
        }
        out.push_str("</div>\n");
    }
    out.push_str("</div>\n");
    out
}

type ServerRun<'a> = (
    Source<'a>,
    &'a RunResult,
    &'a crate::server_metrics::ServerMetrics,
);

/// One row of the server table, a cell per run; `None` (no row) where no
/// run's engine filled it, so an engine's table has no row it never fills.
fn server_row(
    name: &str,
    with: &[ServerRun],
    cell: &dyn Fn(&crate::server_metrics::ServerSummary) -> Option<String>,
) -> Option<String> {
    let cells: Vec<Option<String>> = with
        .iter()
        .map(|(_, _, m)| m.summary.as_ref().and_then(cell))
        .collect();
    cells.iter().any(Option::is_some).then(|| {
        let cells: Vec<String> = cells.into_iter().map(|c| c.unwrap_or("–".into())).collect();
        row(name, &cells)
    })
}

/// `a / b` where either is there, a missing side as `–`.
fn server_pair(a: Option<f64>, b: Option<f64>, fmt: fn(f64) -> String) -> Option<String> {
    (a.is_some() || b.is_some()).then(|| {
        let side = |x: Option<f64>| x.map_or("–".into(), fmt);
        format!("{} / {}", side(a), side(b))
    })
}

fn server_pct(v: f64) -> String {
    format!("{:.1} %", v * 100.0)
}

fn server_count(v: f64) -> String {
    format!("{v:.0}")
}

/// A figure of the server table: its name and how a run's summary fills it.
type ServerFigure = (
    &'static str,
    fn(&crate::server_metrics::ServerSummary) -> Option<String>,
);

/// The server's latency figures, beside the client's TTFT.
fn server_latency_figures() -> Vec<ServerFigure> {
    vec![
        ("Server mean TTFT (ms)", |s| {
            s.ttft_ms.as_ref()?.mean.map(num)
        }),
        ("Client mean TTFT (ms)", |s| s.client_mean_ttft_ms.map(num)),
        ("Client minus server TTFT (ms)", |s| {
            s.ttft_gap_ms.map(|v| format!("{v:+.2}"))
        }),
        ("Server P99 TTFT (ms, within buckets)", |s| {
            s.ttft_ms.as_ref()?.p99.map(num)
        }),
        ("Server mean queue time (ms)", |s| {
            s.queue_time_ms.as_ref()?.mean.map(num)
        }),
        ("Server mean TPOT (ms)", |s| {
            s.tpot_ms.as_ref()?.mean.map(num)
        }),
        ("Server mean ITL (ms)", |s| s.itl_ms.as_ref()?.mean.map(num)),
        ("Server mean E2EL (ms)", |s| {
            s.e2e_ms.as_ref()?.mean.map(num)
        }),
    ]
}

/// The server's load, cache, token and (llama.cpp) slot figures.
fn server_load_figures() -> Vec<ServerFigure> {
    vec![
        ("Peak KV-cache usage", |s| s.peak_kv_usage.map(server_pct)),
        ("Mean KV-cache usage", |s| s.mean_kv_usage.map(server_pct)),
        ("Peak running / waiting", |s| {
            server_pair(s.peak_running, s.peak_waiting, server_count)
        }),
        ("Mean running / waiting", |s| {
            server_pair(s.mean_running, s.mean_waiting, num)
        }),
        ("Preemptions", |s| s.preemptions.map(server_count)),
        ("Prefix-cache hit share", |s| {
            s.prefix_cache_hit_share.map(server_pct)
        }),
        ("Prompt tokens from the prefix cache", |s| {
            s.prompt_tokens_cached.map(server_count)
        }),
        ("Prompt / generated tokens (server)", |s| {
            server_pair(s.prompt_tokens, s.generation_tokens, server_count)
        }),
        ("Requests finished (server)", |s| {
            s.requests_finished.map(server_count)
        }),
        ("Prompt / generation slot time (s)", |s| {
            server_pair(s.prompt_seconds, s.generation_seconds, num)
        }),
        ("Prefill / decode per slot (tok/s)", |s| {
            server_pair(
                s.prompt_tokens_per_slot_s,
                s.generation_tokens_per_slot_s,
                num,
            )
        }),
        ("Busy slots per decode call", |s| {
            s.busy_slots_per_decode.map(num)
        }),
        ("Decode calls", |s| s.decode_calls.map(server_count)),
    ]
}

/// The server table's rows: the engine, then every figure any run's
/// engine filled.
fn server_rows(with: &[ServerRun]) -> Vec<String> {
    let engine = row(
        "Engine",
        &with
            .iter()
            .map(|(_, _, m)| m.engine.map_or("unknown", |e| e.as_str()).to_string())
            .collect::<Vec<_>>(),
    );
    let figures = server_latency_figures()
        .into_iter()
        .chain(server_load_figures());
    std::iter::once(engine)
        .chain(figures.filter_map(|(name, cell)| server_row(name, with, &cell)))
        .collect()
}

/// The notes each run's scrape left (how it was read, what the window held).
fn server_notes(with: &[ServerRun]) -> String {
    let notes: Vec<String> = with
        .iter()
        .flat_map(|(source, _, m)| {
            m.notes.iter().map(move |n| match with.len() {
                1 => escape(n),
                _ => format!("{}: {}", escape(source.label), escape(n)),
            })
        })
        .collect();
    if notes.is_empty() {
        return String::new();
    }
    let mut out = String::from("<ul class=\"plain\" data-section=\"server-notes\">\n");
    for n in notes {
        out.push_str(&format!("<li>{n}</li>\n"));
    }
    out.push_str("</ul>\n");
    out
}

/// The load in words: `open loop, 15 req/s (poisson)`.
pub(super) fn load_words(load: &Load) -> String {
    match *load {
        Load::Closed { concurrency } => format!("closed loop, {concurrency} in flight"),
        Load::Open {
            rate,
            arrival,
            max_concurrency,
        } => {
            let rate = if rate.is_finite() {
                format!("{} req/s", super::format::short(rate))
            } else {
                "all at once".into()
            };
            let cap = max_concurrency
                .map(|c| format!(", at most {c} in flight"))
                .unwrap_or_default();
            format!("open loop, {rate} ({arrival}){cap}")
        }
    }
}

/// The median and the highest saved percentile (p99 by default).
fn headline_percentiles(d: &Distribution) -> Vec<f64> {
    let mut ps = Vec::new();
    if d.percentiles.iter().any(|(p, _)| *p == 50.0) {
        ps.push(50.0);
    }
    if let Some((p, _)) = d.percentiles.iter().rev().find(|(p, _)| *p > 50.0) {
        ps.push(*p);
    }
    ps
}

/// The run's SLO verdict as a badge.
fn slo_badge(m: &RunMetrics) -> String {
    match &m.slo {
        None => "<span class=\"muted\">no SLO given</span>".into(),
        Some(s) if s.meets && s.inconclusive => badge("inconclusive", "meets (inconclusive)"),
        Some(s) if s.meets => badge("pass", "meets"),
        Some(_) => badge("fail", "fails"),
    }
}

/// The verdict with the reasons it fails, for the headline table.
fn slo_cell(m: &RunMetrics) -> String {
    match &m.slo {
        Some(s) if !s.meets => {
            let mut cell = slo_badge(m);
            for reason in &s.reasons {
                cell.push_str(&format!("<br><span class=\"ci\">{}</span>", escape(reason)));
            }
            cell
        }
        _ => slo_badge(m),
    }
}

fn headline_rows(runs: &[(Source, &RunResult)]) -> Vec<String> {
    let cells = |f: &dyn Fn(&RunResult) -> String| -> Vec<String> {
        runs.iter().map(|(_, r)| f(r)).collect()
    };
    let mut rows = vec![
        row("Model", &cells(&|r| escape(&r.model))),
        row("Load", &cells(&|r| escape(&load_words(&r.load)))),
        row(
            "Duration",
            &cells(&|r| format!("{} s", num(r.metrics.duration_s))),
        ),
        row(
            "Requests",
            &cells(&|r| {
                let m = &r.metrics;
                let mut s = format!("{} completed, {} failed", m.completed, m.failed);
                if m.incomplete > 0 {
                    s.push_str(&format!(", {} incomplete", m.incomplete));
                }
                s
            }),
        ),
        row(
            "Request throughput (req/s)",
            &cells(&|r| estimate(&r.metrics.throughput.request, num)),
        ),
        row(
            "Output throughput (tokens/s)",
            &cells(&|r| estimate(&r.metrics.throughput.output, num)),
        ),
        row(
            "Total token throughput (tokens/s)",
            &cells(&|r| num(r.metrics.throughput.total_token)),
        ),
    ];
    if runs.iter().any(|(_, r)| r.metrics.quality.is_some()) {
        rows.push(row(
            "Quality vs references",
            &cells(&|r| {
                r.metrics.quality.as_ref().map_or("–".into(), |q| {
                    format!(
                        "BLEU {:.2} · ROUGE-L F1 {:.3} · exact {:.1} % ({} scored)",
                        q.bleu,
                        q.rouge_l_f1,
                        q.exact_match_share * 100.0,
                        q.scored
                    )
                })
            }),
        ));
    }
    // Latency percentiles: the union of what the runs saved.
    for (metric, _) in CDFS {
        let mut ps: Vec<f64> = Vec::new();
        for (_, r) in runs {
            if let Some(d) = r.metrics.get(metric) {
                for p in headline_percentiles(d) {
                    if !ps.contains(&p) {
                        ps.push(p);
                    }
                }
            }
        }
        ps.sort_by(f64::total_cmp);
        for p in ps {
            let name = format!("p{} {}", pct_label(p), metric.info().short);
            rows.push(row(
                &name,
                &cells(&|r| {
                    r.metrics
                        .get(metric)
                        .and_then(|d| d.percentiles.iter().find(|(q, _)| *q == p))
                        .map(|(_, e)| estimate(e, ms))
                        .unwrap_or_else(|| "–".into())
                }),
            ));
        }
    }
    if runs.iter().any(|(_, r)| r.metrics.slo.is_some()) {
        rows.push(row("SLO", &cells(&|r| slo_cell(&r.metrics))));
        rows.push(row(
            "Request goodput (req/s)",
            &cells(&|r| {
                r.metrics
                    .slo
                    .as_ref()
                    .map(|s| num(s.request_goodput))
                    .unwrap_or_else(|| "–".into())
            }),
        ));
    }
    if runs.iter().any(|(_, r)| r.metrics.failed > 0) {
        rows.push(row(
            "Error rate",
            &cells(&|r| share(r.metrics.errors.error_rate)),
        ));
    }
    if runs.iter().any(|(_, r)| r.cost.is_some()) {
        rows.push(row(
            "Cost per million output tokens",
            &cells(&|r| {
                r.cost
                    .as_ref()
                    .and_then(|c| c.per_million_output_tokens)
                    .map(num)
                    .unwrap_or_else(|| "–".into())
            }),
        ));
    }
    if runs.iter().any(|(_, r)| r.metrics.saturation.saturated) {
        rows.push(row(
            "Saturation",
            &cells(&|r| {
                if r.metrics.saturation.saturated {
                    badge("fail", "saturated")
                } else {
                    "no".into()
                }
            }),
        ));
    }
    rows
}

/// The CDF's points: `(value, % at or below)`, from the saved quantiles,
/// else from what older files hold (min, the percentiles, max).
pub(super) fn cdf_points(d: &Distribution) -> (Vec<(f64, f64)>, bool) {
    if d.quantiles.len() == QUANTILE_COUNT {
        let step = 100.0 / (QUANTILE_COUNT - 1) as f64;
        let pts = d
            .quantiles
            .iter()
            .enumerate()
            .map(|(i, &v)| (v, i as f64 * step))
            .collect();
        return (pts, true);
    }
    let mut pts = vec![(d.min, 0.0)];
    pts.extend(d.percentiles.iter().map(|(p, e)| (e.value, *p)));
    pts.push((d.max, 100.0));
    pts.sort_by(|a, b| a.1.total_cmp(&b.1));
    (pts, false)
}

/// The SLO terms' thresholds on `metric`, as guides.
fn slo_thresholds(r: &RunResult, metric: Metric, vertical: bool) -> Vec<Guide> {
    let Some(slo) = r.metrics.slo.as_ref().map(|s| &s.slo) else {
        return Vec::new();
    };
    slo.terms
        .iter()
        .filter(|t| t.metric == metric)
        .map(|t| {
            let name = format!(
                "SLO: p{} {} ≤ {}",
                pct_label(t.percentile),
                metric.info().short,
                super::format::ms_short(t.threshold_ms)
            );
            if vertical {
                Guide::Vertical {
                    x: t.threshold_ms,
                    name,
                }
            } else {
                Guide::Horizontal {
                    y: t.threshold_ms,
                    name,
                }
            }
        })
        .collect()
}

fn cdf_chart(runs: &[(Source, &RunResult)], metric: Metric, id: &str) -> Chart {
    let info = metric.info();
    let of = if info.pooled {
        "token gaps"
    } else {
        "requests"
    };
    let mut chart = Chart::new(
        id,
        &format!("{} distribution", info.short),
        Axis::new(format!("{} (ms)", info.short), AxisKind::Auto),
        Axis::new(format!("{of} at or below (%)"), AxisKind::Fixed(0.0, 100.0)),
    );
    // Open-loop latencies also from the scheduled arrival (what the SLO judges).
    let from_schedule = match metric {
        Metric::Ttft => Some(Metric::TtftFromSchedule),
        Metric::E2el => Some(Metric::E2elFromSchedule),
        _ => None,
    };
    let mut coarse = false;
    for (source, r) in runs {
        let name = |what: &str| -> String {
            match (runs.len() > 1, what.is_empty()) {
                (true, true) => source.label.to_string(),
                (true, false) => format!("{} · {what}", source.label),
                (false, true) => info.short.to_string(),
                (false, false) => format!("{} {what}", info.short),
            }
        };
        if let Some(d) = r.metrics.get(metric) {
            let (pts, fine) = cdf_points(d);
            coarse |= !fine;
            chart.series.push(Series::new(name(""), source.colour, pts));
        }
        // A closed loop has no schedule: its "from scheduled arrival" figures
        // repeat the plain ones and get no series (nor a legend entry); nor
        // does a run that holds no such values.
        let scheduled = from_schedule
            .filter(|_| r.load.is_open())
            .and_then(|m| r.metrics.get(m))
            .map(cdf_points)
            .filter(|(pts, _)| !pts.is_empty());
        if let Some((pts, fine)) = scheduled {
            coarse |= !fine;
            chart
                .series
                .push(Series::new(name("from scheduled arrival"), source.colour, pts).dashed());
        }
        chart.guides.extend(slo_thresholds(r, metric, true));
    }
    let mut note = format!(
        "Share of {of} whose {} was at most x; read a percentile across at its height.",
        info.short
    );
    if from_schedule.is_some() && chart.series.iter().any(|s| s.hollow) {
        note.push_str(" Open-loop runs also show it timed from each request's scheduled arrival, as the SLO judges it.");
    }
    if coarse {
        note.push_str(" A file written before quantiles were saved gives only min, its percentiles and max: a coarse outline.");
    }
    chart.note(note)
}

/// Buckets summed (`mean` false) or averaged into at most [`MAX_BINS`]
/// bins: `(bin midpoint s, value per second or mean)`. A last bin shorter
/// than half the others joins the one before it, so a few buckets at the
/// end do not make a rate of their own.
pub(super) fn bin(ts: &TimeSeries, values: &[f64], mean: bool) -> Vec<(f64, f64)> {
    if ts.bucket_s <= 0.0 || values.is_empty() {
        return Vec::new();
    }
    let per = values
        .len()
        .div_ceil(MAX_BINS)
        .max((MIN_BIN_S / ts.bucket_s).round() as usize)
        .max(1);
    let mut bounds: Vec<(usize, usize)> = (0..values.len())
        .step_by(per)
        .map(|start| (start, (start + per).min(values.len())))
        .collect();
    if bounds.len() > 1 {
        if let Some(&(start, end)) = bounds.last() {
            if (end - start) * 2 < per {
                bounds.pop();
                if let Some(prev) = bounds.last_mut() {
                    prev.1 = end;
                }
            }
        }
    }
    bounds
        .into_iter()
        .map(|(start, end)| {
            let chunk = &values[start..end];
            let width = chunk.len() as f64 * ts.bucket_s;
            let sum: f64 = chunk.iter().sum();
            let v = if mean {
                sum / chunk.len() as f64
            } else {
                sum / width
            };
            (start as f64 * ts.bucket_s + width / 2.0, v)
        })
        .collect()
}

fn time_charts(runs: &[(Source, &RunResult)]) -> Vec<Chart> {
    let time = || Axis::new("time since the first measured send (s)", AxisKind::FromZero);
    let single = runs.len() == 1;
    let mut throughput = Chart::new(
        "ts-throughput",
        "Output throughput through the run",
        time(),
        Axis::new("output tokens/s", AxisKind::FromZero),
    );
    let mut requests = Chart::new(
        "ts-requests",
        "Requests through the run",
        time(),
        Axis::new("requests/s", AxisKind::FromZero),
    );
    let mut in_flight = Chart::new(
        "ts-in-flight",
        "Requests in flight",
        time(),
        Axis::new("requests in flight (mean)", AxisKind::FromZero),
    );
    let mut failures = Chart::new(
        "ts-failures",
        "Failures through the run",
        time(),
        Axis::new("failures/s", AxisKind::FromZero),
    );
    for (source, r) in runs {
        let ts = &r.metrics.timeseries;
        let label = |what: &str| -> String {
            if single {
                what.to_string()
            } else if what.is_empty() {
                source.label.to_string()
            } else {
                format!("{} · {what}", source.label)
            }
        };
        throughput.series.push(Series::new(
            label(""),
            source.colour,
            bin(ts, &ts.output_tokens, false),
        ));
        requests.series.push(Series::new(
            label("completions/s"),
            source.colour,
            bin(ts, &ts.completions, false),
        ));
        requests
            .series
            .push(Series::new(label("sends/s"), source.colour, bin(ts, &ts.sends, false)).dashed());
        in_flight.series.push(Series::new(
            label(""),
            source.colour,
            bin(ts, &ts.in_flight, true),
        ));
        if single {
            if let Some(s) = &r.metrics.steady_state {
                throughput.guides.push(Guide::Span {
                    x0: s.start_s,
                    x1: s.end_s,
                    name: "steady-state window".into(),
                });
            }
            for (k, (kind, v)) in ts.failures.iter().enumerate() {
                failures.series.push(Series::new(
                    kind.clone(),
                    source.colour + 1 + k,
                    bin(ts, v, false),
                ));
            }
        } else if !ts.failures.is_empty() {
            let len = ts.failures.values().map(Vec::len).max().unwrap_or(0);
            let mut total = vec![0.0; len];
            for v in ts.failures.values() {
                for (t, x) in total.iter_mut().zip(v) {
                    *t += x;
                }
            }
            failures.series.push(Series::new(
                label(""),
                source.colour,
                bin(ts, &total, false),
            ));
        }
    }
    let bins = "Each point is the rate over one bin (at least 0.5 s, at most 60 bins).";
    vec![
        throughput.note(bins),
        requests.note(format!(
            "{bins} Sends stop at the end of the sending window; completions drain after it."
        )),
        in_flight.note("Each point is the mean number of requests in flight over its bin."),
        failures.note(format!("{bins} By the time each failure ended.")),
    ]
}

fn detail(source: Source, r: &RunResult, several: bool) -> String {
    let m = &r.metrics;
    let mut out = String::from("<section class=\"run-detail\">\n");
    out.push_str(&format!(
        "<h3>{}{}</h3>\n",
        if several {
            swatch(source.colour)
        } else {
            String::new()
        },
        escape(source.label)
    ));
    out.push_str(&format!(
        "<p class=\"muted\">Run {} · started {}</p>\n",
        escape(&r.run_id),
        escape(&r.started_at)
    ));
    if let Some(slo) = &m.slo {
        out.push_str("<div data-section=\"slo\">\n<h4>SLO</h4>\n");
        out.push_str(&format!(
            "<p>{} {} · {} of {} requests good ({}) · request goodput {} req/s</p>\n",
            slo_badge(m),
            escape(&slo.slo.describe()),
            slo.good_requests,
            m.completed + m.failed,
            share(slo.attainment),
            num(slo.request_goodput)
        ));
        if !slo.reasons.is_empty() {
            out.push_str("<ul class=\"plain\">\n");
            for reason in &slo.reasons {
                out.push_str(&format!("<li>{}</li>\n", escape(reason)));
            }
            out.push_str("</ul>\n");
        }
        out.push_str("<div class=\"table-wrap\"><table>\n<thead><tr><th>Term</th><th>Judged on</th><th>Estimate [95 %]</th><th>Verdict</th><th>More requests to settle</th></tr></thead>\n<tbody>\n");
        for t in &slo.terms {
            let verdict = match t.verdict {
                Verdict::Pass => badge("pass", "pass"),
                Verdict::Fail => badge("fail", "fail"),
                Verdict::Inconclusive if t.passes => {
                    badge("inconclusive", "inconclusive (passes as estimated)")
                }
                Verdict::Inconclusive => badge("inconclusive", "inconclusive (fails as estimated)"),
            };
            out.push_str(&format!(
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td></tr>\n",
                escape(&format!(
                    "p{} {} ≤ {}",
                    pct_label(t.term.percentile),
                    t.term.metric.info().short,
                    super::format::ms_short(t.term.threshold_ms)
                )),
                escape(t.judged.key()),
                t.estimate
                    .as_ref()
                    .map(|e| estimate(e, ms))
                    .unwrap_or_else(|| "no data".into()),
                verdict,
                t.more_requests_to_settle
                    .map(|n| n.to_string())
                    .unwrap_or_else(|| "–".into())
            ));
        }
        out.push_str("</tbody></table></div>\n");
        if !slo.error_rate_ok {
            out.push_str(&format!(
                "<p class=\"warn\">Error rate {} is above the SLO's {}.</p>\n",
                share(m.errors.error_rate),
                share(slo.slo.max_error_rate)
            ));
        }
        out.push_str("</div>\n");
    }
    if m.failed > 0 || !m.errors.by_kind.is_empty() {
        out.push_str("<div data-section=\"errors\">\n<h4>Errors by kind</h4>\n");
        out.push_str(&format!(
            "<p>{} of {} requests failed ({}).</p>\n",
            m.failed,
            m.completed + m.failed,
            share(m.errors.error_rate)
        ));
        out.push_str("<div class=\"table-wrap\"><table>\n<thead><tr><th>Kind</th><th>Count</th><th>Share of failures</th><th>Example</th></tr></thead>\n<tbody>\n");
        let total: u64 = m.errors.by_kind.values().sum();
        for (kind, n) in &m.errors.by_kind {
            let example = m
                .errors
                .examples
                .get(kind)
                .map(String::as_str)
                .unwrap_or("");
            out.push_str(&format!(
                "<tr><td>{}</td><td class=\"num\">{n}</td><td class=\"num\">{}</td><td class=\"example\">{}</td></tr>\n",
                escape(kind),
                share(*n as f64 / total.max(1) as f64),
                escape(example)
            ));
        }
        out.push_str("</tbody></table></div>\n</div>\n");
    }
    let mut notes: Vec<String> = r.notes.clone();
    notes.extend(m.saturation.findings.iter().cloned());
    if r.exec.interrupted {
        notes.push("The run was interrupted.".into());
    }
    if r.exec.drain_timed_out {
        notes.push("The drain timed out: requests still in flight are counted incomplete.".into());
    }
    if r.exec.records_lost > 0 {
        notes.push(format!("{} records were lost.", r.exec.records_lost));
    }
    if !notes.is_empty() {
        out.push_str("<div data-section=\"notes\">\n<h4>Notes</h4>\n<ul class=\"plain\">\n");
        for n in &notes {
            out.push_str(&format!("<li>{}</li>\n", escape(n)));
        }
        out.push_str("</ul>\n</div>\n");
    }
    out.push_str(&workload(r));
    out.push_str(&config_block("Full configuration (JSON)", &r.config));
    out.push_str("</section>\n");
    out
}

/// A JSON value in a table cell: strings as they are, others as JSON.
fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "–".into(),
        other => other.to_string(),
    }
}

/// The workload as asked (`config.workload`) and as sent (the measured mix).
pub(super) fn workload(r: &RunResult) -> String {
    let w = r.config.workload.as_ref();
    let mut out = String::from("<div data-section=\"workload\">\n<h4>Workload</h4>\n");
    if let Some(w) = w {
        out.push_str(&format!("<p>{}</p>\n", escape(&w.summary)));
    }
    let mut rows = String::new();
    let tokenizer = w.map_or(&r.tokenizer, |w| &w.tokenizer.spec);
    rows.push_str(&row("tokenizer", &[escape(tokenizer)]));
    // Every other saved key of the description, as saved (sorted by key).
    if let Some(Value::Object(o)) = w.map(|w| serde_json::json!(w)) {
        for (k, v) in &o {
            if matches!(k.as_str(), "summary" | "tokenizer") {
                continue;
            }
            rows.push_str(&row(k, &[escape(&plain(v))]));
        }
    }
    out.push_str(&format!(
        "<div class=\"table-wrap\"><table>\n<tbody>\n{rows}</tbody></table></div>\n"
    ));
    let mix = &r.metrics.workload;
    if mix.input_tokens.is_some() || mix.output_tokens.is_some() {
        out.push_str("<div class=\"table-wrap\"><table>\n<thead><tr><th>Length as sent (tokens)</th><th>Requests</th><th>Mean</th><th>p50</th><th>p90</th><th>Max</th></tr></thead>\n<tbody>\n");
        for (name, l) in [("input", &mix.input_tokens), ("output", &mix.output_tokens)] {
            if let Some(l) = l {
                out.push_str(&format!(
                    "<tr><th scope=\"row\">{name}</th><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>\n",
                    l.count,
                    num(l.mean),
                    l.p50,
                    l.p90,
                    l.max
                ));
            }
        }
        out.push_str("</tbody></table></div>\n");
    }
    let shares: Vec<String> = [
        ("cacheable by prefix (client count)", mix.cacheable_share),
        ("served from cache (server count)", mix.cached_share),
    ]
    .iter()
    .filter_map(|(name, v)| v.map(|v| format!("{name}: {}", share(v))))
    .collect();
    if !shares.is_empty() {
        out.push_str(&format!(
            "<p>Prompt tokens {}.</p>\n",
            escape(&shares.join("; "))
        ));
    }
    out.push_str("</div>\n");
    out
}
