//! The sweeps of the HTML report: a summary side by side, the curves
//! overlaid (one colour per file) with SLO thresholds, knees and the goodput
//! point marked, then each sweep's points, workload and configuration.

use super::chart::{Axis, Chart, Guide, Mark, Series, Shape};
use super::format::{
    badge, config_block, escape, estimate, ms, num, row, share, short, swatch, table_by_source,
    Source,
};
use super::scale::AxisKind;
use super::workload::workload;
use crate::load::schedule::Load;
use crate::measure::metrics::Metric;
use crate::measure::stats::pct_label;
use crate::plan::sweep::{CurvePoint, SweepMode, SweepResult};

const KNEE_THROUGHPUT: &str = "throughput knee";
const KNEE_DEGRADATION: &str = "degradation knee";
const GOODPUT: &str = "goodput point";

type Pick = fn(&CurvePoint) -> Option<f64>;

/// The latency charts: metric, ID, p50 and p99 of a curve point.
const LATENCY: [(Metric, &str, Pick, Pick); 3] = [
    (
        Metric::Ttft,
        "sweep-ttft",
        |c| c.ttft_p50_ms,
        |c| c.ttft_p99_ms,
    ),
    (
        Metric::Tpot,
        "sweep-tpot",
        |c| c.tpot_p50_ms,
        |c| c.tpot_p99_ms,
    ),
    (
        Metric::E2el,
        "sweep-e2el",
        |c| c.e2el_p50_ms,
        |c| c.e2el_p99_ms,
    ),
];

pub(super) fn section(sweeps: &[(Source, &SweepResult)]) -> String {
    let mut out = String::from("<section data-section=\"sweeps\">\n");
    out.push_str(if sweeps.len() == 1 {
        "<h2>Sweep</h2>\n"
    } else {
        "<h2>Sweeps</h2>\n"
    });
    let sources: Vec<Source> = sweeps.iter().map(|(s, _)| *s).collect();
    out.push_str(&table_by_source("Figure", &sources, &summary_rows(sweeps)));
    let mut charts: Vec<Chart> = LATENCY
        .iter()
        .map(|&(m, id, p50, p99)| latency_chart(sweeps, m, id, p50, p99))
        .collect();
    charts.push(throughput_chart(sweeps));
    charts.push(cost_chart(sweeps));
    charts.push(energy_chart(sweeps));
    charts.push(super::frontier::frontier_chart(sweeps));
    out.push_str(
        "<p class=\"note\">▲ throughput knee: where throughput stops rising with offered load (kneedle). \
         ◆ degradation knee: the first load whose p99 TTFT exceeds the floor's by the factor. \
         ★ goodput point: the measured load nearest the goodput found.</p>\n",
    );
    out.push_str("<div class=\"charts\">\n");
    for c in charts.iter().filter(|c| c.has_points()) {
        out.push_str(&c.render());
    }
    out.push_str("</div>\n");
    for (source, s) in sweeps {
        out.push_str(&detail(*source, s, sweeps.len() > 1));
    }
    out.push_str("</section>\n");
    out
}

fn mode_words(s: &SweepResult) -> String {
    let list = |v: Vec<String>| v.join(", ");
    match &s.mode {
        None => "–".into(),
        Some(SweepMode::Auto) => "automatic grid".into(),
        Some(SweepMode::Rates(r)) => format!(
            "rates {} req/s",
            list(r.iter().map(|x| short(*x)).collect())
        ),
        Some(SweepMode::Concurrencies(c)) => {
            format!(
                "concurrencies {}",
                list(c.iter().map(|x| x.to_string()).collect())
            )
        }
        Some(SweepMode::Search { precision }) => {
            format!("goodput search to {} %", num(precision * 100.0))
        }
        Some(SweepMode::Frontier { .. }) => format!(
            "deployment frontier, concurrencies {}",
            list(
                s.frontier
                    .iter()
                    .flat_map(|f| &f.points)
                    .filter_map(|p| p.concurrency)
                    .map(|c| c.to_string())
                    .collect()
            )
        ),
    }
}

fn closed_loop(s: &SweepResult) -> bool {
    matches!(
        s.mode,
        Some(SweepMode::Concurrencies(_) | SweepMode::Frontier { .. })
    ) || s
        .curve
        .first()
        .and_then(|c| s.points.get(c.point))
        .is_some_and(|p| matches!(p.result.config.load, Load::Closed { .. }))
}

/// The summary's goodput cell: the rate, the console's verdict word, the
/// interval, the bracket and the SLO, then the notes (which wrap).
fn goodput_cell(s: &SweepResult) -> String {
    match &s.goodput {
        None => "<span class=\"muted\">no SLO given</span>".into(),
        Some(g) => {
            let bracket = match g.bracket.1 {
                Some(hi) => format!("between {} and {}", short(g.bracket.0), short(hi)),
                None => format!("at least {}", short(g.bracket.0)),
            };
            let interval = g.interval.map_or(String::new(), |(a, b)| {
                format!("95 % interval {}–{} {}; ", short(a), short(b), g.unit())
            });
            // The console's words: INCONCLUSIVE where it says so.
            let verdict = if g.inconclusive {
                badge("inconclusive", "INCONCLUSIVE")
            } else if g.confirmed {
                badge("pass", "confirmed")
            } else {
                String::new()
            };
            let unit = escape(g.unit());
            let mut cell = format!(
                "<b>{} {unit}</b> {verdict}<br><span class=\"ci\">{}bracket {} {unit} offered; SLO {}</span>",
                escape(&short(g.rate)),
                escape(&interval),
                escape(&bracket),
                escape(&g.slo)
            );
            // Notes wrap (a `ci` span does not): a long one is read whole,
            // not cut off behind a scrollbar.
            for n in &g.notes {
                cell.push_str(&format!(
                    "<br><span class=\"note wrap\">{}</span>",
                    escape(n)
                ));
            }
            cell
        }
    }
}

fn summary_rows(sweeps: &[(Source, &SweepResult)]) -> Vec<String> {
    let cells = |f: &dyn Fn(&SweepResult) -> String| -> Vec<String> {
        sweeps.iter().map(|(_, s)| f(s)).collect()
    };
    let mut rows = vec![
        row(
            "Model",
            &cells(&|s| {
                escape(
                    s.points
                        .first()
                        .map(|p| p.result.config.model.as_str())
                        .unwrap_or("–"),
                )
            }),
        ),
        row("Workload", &cells(&|s| escape(&s.workload))),
        row("Mode", &cells(&|s| escape(&mode_words(s)))),
        row(
            "Points",
            &cells(&|s| format!("{} on the curve, {} run", s.curve.len(), s.points.len())),
        ),
        row("Goodput", &cells(&goodput_cell)),
        row(
            "Throughput knee",
            &cells(&|s| match s.knees.throughput {
                Some(k) => format!("{} offered", escape(&offered_words(s, k.offered))),
                None => "none found".into(),
            }),
        ),
        row(
            "Degradation knee",
            &cells(&|s| match s.knees.degradation {
                Some(k) => format!(
                    "{} offered <span class=\"ci\">(p99 TTFT floor {}, factor {})</span>",
                    escape(&offered_words(s, k.offered)),
                    escape(
                        &s.knees
                            .floor_ttft_p99_ms
                            .map(ms)
                            .unwrap_or_else(|| "–".into())
                    ),
                    escape(&short(s.knees.degradation_factor))
                ),
                None => "none found".into(),
            }),
        ),
    ];
    if sweeps.iter().any(|(_, s)| s.capacity.is_some()) {
        rows.push(row(
            "Capacity (closed-loop probe)",
            &cells(&|s| {
                s.capacity
                    .map(|c| format!("{} req/s", num(c)))
                    .unwrap_or_else(|| "–".into())
            }),
        ));
    }
    if sweeps.iter().any(|(_, s)| s.stopped.is_some()) {
        rows.push(row(
            "Stopped early",
            &cells(&|s| escape(&s.stopped.as_ref().map_or("no".into(), |w| w.to_string()))),
        ));
    }
    rows.push(row(
        "Load time",
        &cells(&|s| format!("{} s", num(s.load_time_s))),
    ));
    rows
}

fn offered_words(s: &SweepResult, offered: f64) -> String {
    if closed_loop(s) {
        format!("concurrency {}", short(offered))
    } else {
        let unit = s.goodput.as_ref().map_or("req/s", |g| g.unit());
        format!("{} {unit}", short(offered))
    }
}

/// The curve index the goodput rate was found at, if it is on the curve.
/// The curve point nearest the goodput: its own rate for a grid's answer,
/// the nearest measured rate (within 10 %) for a search's fitted one.
fn goodput_index(s: &SweepResult) -> Option<usize> {
    let g = s.goodput.as_ref().filter(|g| g.rate > 0.0)?;
    let distance = |c: &crate::plan::sweep::CurvePoint| (c.offered / g.rate).ln().abs();
    s.curve
        .iter()
        .enumerate()
        .filter(|(_, c)| c.offered > 0.0 && distance(c) <= 0.1_f64.ln_1p())
        .min_by(|a, b| distance(a.1).total_cmp(&distance(b.1)))
        .map(|(i, _)| i)
}

/// The knees and goodput point of one sweep, placed by `at(curve point)`.
fn marks(
    s: &SweepResult,
    colour: usize,
    at: &dyn Fn(&CurvePoint) -> Option<(f64, f64)>,
) -> Vec<Mark> {
    let mut out = Vec::new();
    let mut place = |i: Option<usize>, shape: Shape, name: &str| {
        if let Some((x, y)) = i.and_then(|i| s.curve.get(i)).and_then(at) {
            out.push(Mark {
                x,
                y,
                shape,
                colour,
                name: name.into(),
            });
        }
    };
    place(
        s.knees.throughput.map(|k| k.curve_index),
        Shape::Triangle,
        KNEE_THROUGHPUT,
    );
    place(
        s.knees.degradation.map(|k| k.curve_index),
        Shape::Diamond,
        KNEE_DEGRADATION,
    );
    place(goodput_index(s), Shape::Star, GOODPUT);
    out
}

/// The SLO terms on `metric` of a sweep (its points share one SLO).
fn thresholds(s: &SweepResult, metric: Metric) -> Vec<Guide> {
    let Some(slo) = s.points.iter().find_map(|p| p.result.metrics.slo.as_ref()) else {
        return Vec::new();
    };
    slo.slo
        .terms
        .iter()
        .filter(|t| t.metric == metric)
        .map(|t| Guide::Horizontal {
            y: t.threshold_ms,
            name: format!(
                "SLO: p{} {} ≤ {}",
                pct_label(t.percentile),
                metric.info().short,
                super::format::ms_short(t.threshold_ms)
            ),
        })
        .collect()
}

fn name(single: bool, label: &str, what: &str) -> String {
    if single {
        what.into()
    } else {
        format!("{label} · {what}")
    }
}

fn latency_chart(
    sweeps: &[(Source, &SweepResult)],
    metric: Metric,
    id: &str,
    p50: Pick,
    p99: Pick,
) -> Chart {
    let short = metric.info().short;
    let mut chart = Chart::new(
        id,
        &format!("{short} against throughput"),
        Axis::new("achieved request throughput (req/s)", AxisKind::FromZero),
        Axis::new(format!("{short} (ms)"), AxisKind::Auto),
    )
    .note(format!(
        "Each point is one load of the sweep: solid line and filled dots p50, dashed line and hollow dots p99. Marks sit on the p99 {short}."
    ));
    let single = sweeps.len() == 1;
    for (source, s) in sweeps {
        // A search's short exploring points are dots apart from the line:
        // joined with the measuring points between them, by offered load,
        // the line zig-zags.
        let pts = |f: Pick, exploring: bool| -> Vec<(f64, f64)> {
            s.curve
                .iter()
                .filter(|c| is_exploring(s, c) == exploring)
                .filter_map(|c| f(c).map(|y| (c.request_throughput, y)))
                .collect()
        };
        chart.series.push(Series::new(
            name(single, source.label, "p50"),
            source.colour,
            pts(p50, false),
        ));
        chart.series.push(
            Series::new(
                name(single, source.label, "p99"),
                source.colour,
                pts(p99, false),
            )
            .dashed(),
        );
        let explored = pts(p99, true);
        if !explored.is_empty() {
            chart.series.push(
                Series::new(
                    name(
                        single,
                        source.label,
                        "p99 of exploring points (short, not joined)",
                    ),
                    source.colour,
                    explored,
                )
                .unjoined(),
            );
        }
        chart.guides.extend(thresholds(s, metric));
        chart.marks.extend(marks(s, source.colour, &|c| {
            p99(c).map(|y| (c.request_throughput, y))
        }));
    }
    chart
}

fn throughput_chart(sweeps: &[(Source, &SweepResult)]) -> Chart {
    let closed = sweeps.iter().filter(|(_, s)| closed_loop(s)).count();
    let x_title = if closed == 0 {
        "offered load (req/s)"
    } else if closed == sweeps.len() {
        "concurrency (requests in flight)"
    } else {
        "offered load (req/s; concurrency for closed loop)"
    };
    let mut chart = Chart::new(
        "sweep-throughput",
        "Throughput against offered load",
        Axis::new(x_title, AxisKind::FromZero),
        Axis::new("achieved request throughput (req/s)", AxisKind::FromZero),
    )
    .note(
        "Where the curve leaves the diagonal, the server stops keeping up with the load offered.",
    );
    if closed < sweeps.len() {
        chart.guides.push(Guide::Diagonal {
            name: "achieved = offered".into(),
        });
    }
    let single = sweeps.len() == 1;
    let mut unfinished = 0;
    for (source, s) in sweeps {
        let (drawn, ended_early): (Vec<&CurvePoint>, Vec<&CurvePoint>) =
            s.curve.iter().partition(|c| !ended_before_any_answer(s, c));
        unfinished += ended_early.len();
        let pts = |exploring: bool| -> Vec<(f64, f64)> {
            drawn
                .iter()
                .filter(|c| is_exploring(s, c) == exploring)
                .map(|c| (c.offered, c.request_throughput))
                .collect()
        };
        chart.series.push(Series::new(
            name(single, source.label, "requests/s"),
            source.colour,
            pts(false),
        ));
        let explored = pts(true);
        if !explored.is_empty() {
            chart.series.push(
                Series::new(
                    name(single, source.label, "exploring points (short, not joined)"),
                    source.colour,
                    explored,
                )
                .unjoined(),
            );
        }
        chart.marks.extend(marks(s, source.colour, &|c| {
            (!ended_before_any_answer(s, c)).then_some((c.offered, c.request_throughput))
        }));
    }
    if unfinished > 0 {
        chart.note.push_str(&format!(
            " Not drawn: {unfinished} point(s) that ended before any request completed or failed (past capacity, ended early): they measured no throughput, which is not a throughput of 0."
        ));
    }
    chart
}

/// A goodput search's short exploring point (its role `search`).
fn is_exploring(s: &SweepResult, c: &CurvePoint) -> bool {
    s.points
        .get(c.point)
        .is_some_and(|p| p.role == crate::plan::sweep::PointRole::Search)
}

/// A point that ended before any of its requests completed or failed: its
/// throughput is unmeasured, not 0 (drawing it at 0 would show a collapse
/// the server never had).
fn ended_before_any_answer(s: &SweepResult, c: &CurvePoint) -> bool {
    s.points
        .get(c.point)
        .is_some_and(|p| p.result.metrics.completed == 0 && p.result.metrics.failed == 0)
}

fn cost_chart(sweeps: &[(Source, &SweepResult)]) -> Chart {
    along_the_curve(
        sweeps,
        (
            "sweep-cost",
            "Cost per million good output tokens",
            "cost per million good output tokens",
            "cost",
        ),
        |c| c.cost_per_million_good_output_tokens,
    )
    .note(
        "Only output tokens of requests within the SLO count; in the currency of --cost-per-hour.",
    )
}

fn energy_chart(sweeps: &[(Source, &SweepResult)]) -> Chart {
    along_the_curve(
        sweeps,
        (
            "sweep-energy",
            "Output tokens per joule",
            "output tokens per joule (measured)",
            "tok/J",
        ),
        |c| c.output_tokens_per_joule,
    )
    .note(
        "Each point's output tokens over the energy its GPUs drew in its window (DCGM, NVML or the simulator's exporter): idle power included, so a lightly loaded server spends more per token.",
    )
}

/// A figure of each curve point against its achieved request throughput:
/// `(id, title, y axis, series name)`.
fn along_the_curve(
    sweeps: &[(Source, &SweepResult)],
    (id, title, y, series): (&str, &str, &str, &str),
    figure: fn(&CurvePoint) -> Option<f64>,
) -> Chart {
    let mut chart = Chart::new(
        id,
        title,
        Axis::new("achieved request throughput (req/s)", AxisKind::FromZero),
        Axis::new(y, AxisKind::Auto),
    );
    let single = sweeps.len() == 1;
    let at = |c: &CurvePoint| figure(c).map(|y| (c.request_throughput, y));
    for (source, s) in sweeps {
        let pts: Vec<(f64, f64)> = s.curve.iter().filter_map(at).collect();
        if pts.is_empty() {
            continue;
        }
        chart.series.push(Series::new(
            name(single, source.label, series),
            source.colour,
            pts,
        ));
        chart.marks.extend(marks(s, source.colour, &at));
    }
    chart
}

/// The columns of a sweep's table of points.
const POINT_COLUMNS: [&str; 13] = [
    "Offered",
    "Request throughput (req/s)",
    "Output tokens streamed (tok/s)",
    "p50 TTFT",
    "p99 TTFT",
    "p50 TPOT",
    "p99 TPOT",
    "p50 E2EL",
    "p99 E2EL",
    "SLO",
    "Cost / M good tokens",
    "Output tok/J",
    "Start and sample",
];

fn detail(source: Source, s: &SweepResult, several: bool) -> String {
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
    if let Some(slo) = s.points.iter().find_map(|p| p.result.metrics.slo.as_ref()) {
        out.push_str(&format!(
            "<p data-section=\"slo\">SLO: {}</p>\n",
            escape(&slo.slo.describe())
        ));
    }
    out.push_str("<h4>Points of the curve</h4>\n<div class=\"table-wrap\"><table>\n<thead><tr>");
    for h in POINT_COLUMNS {
        out.push_str(&format!("<th>{h}</th>"));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    let opt_ms = |x: Option<f64>| x.map(ms).unwrap_or_else(|| "–".into());
    for c in &s.curve {
        let slo = match c.meets {
            Some(true) => badge("pass", "meets"),
            Some(false) => badge("fail", "fails"),
            None => "–".into(),
        };
        let mut offered = escape(&offered_words(s, c.offered));
        if c.saturated {
            offered.push_str(&format!(" {}", badge("fail", "saturated")));
        }
        let cells = [
            offered,
            num(c.request_throughput),
            num(c.output_throughput),
            opt_ms(c.ttft_p50_ms),
            opt_ms(c.ttft_p99_ms),
            opt_ms(c.tpot_p50_ms),
            opt_ms(c.tpot_p99_ms),
            opt_ms(c.e2el_p50_ms),
            opt_ms(c.e2el_p99_ms),
            slo,
            c.cost_per_million_good_output_tokens
                .map(num)
                .unwrap_or_else(|| "–".into()),
            c.output_tokens_per_joule
                .map(|t| format!("{t:.3}"))
                .unwrap_or_else(|| "–".into()),
            point_remarks(&s.points[c.point]),
        ];
        out.push_str("<tr>");
        for (i, cell) in cells.iter().enumerate() {
            let class = if i == 0 || i == 9 || i == 12 {
                ""
            } else {
                " class=\"num\""
            };
            out.push_str(&format!("<td{class}>{cell}</td>"));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table></div>\n");
    out.push_str(
        "<p class=\"note\">Throughput: completed requests over the point's duration (first send to last response end), and the output tokens every request streamed, counted as they arrived, as the console and the CSV show them.</p>\n",
    );
    out.push_str(&tasks_table(s));
    for c in s.curve.iter().filter(|c| c.saturated) {
        let findings = &s.points[c.point].result.metrics.saturation.findings;
        out.push_str(&format!(
            "<p class=\"note\" data-saturated=\"{}\">Saturated at {}: {}</p>\n",
            c.point,
            escape(&offered_words(s, c.offered)),
            escape(&findings.join("; "))
        ));
    }
    if let Some(first) = s.points.first() {
        out.push_str(&workload(&first.result));
        out.push_str(&config_block(
            "Configuration of the first point (JSON)",
            &first.result.config,
        ));
    }
    out.push_str("</section>\n");
    out
}

/// An agent workload's points by their tasks: offered and completed
/// tasks/s, the duration's median and p90 with intervals, and the prefix
/// cache the trace allows beside what the server reported; empty for
/// other workloads.
fn tasks_table(s: &SweepResult) -> String {
    if s.points.iter().all(|p| p.result.metrics.tasks.is_none()) {
        return String::new();
    }
    let mut out = String::from("<div data-section=\"tasks\">\n<h4>Tasks of each point</h4>\n<div class=\"table-wrap\"><table>\n<thead><tr><th>Point</th><th>Load</th><th>Tasks completed (failed, cut)</th><th>Tasks/s</th><th>p50 task</th><th>p90 task</th><th>Cache: allowed / reported</th></tr></thead>\n<tbody>\n");
    let dash = || "–".to_string();
    for (i, p) in s.points.iter().enumerate() {
        let Some(t) = &p.result.metrics.tasks else {
            continue;
        };
        let pct = |q: f64| {
            t.duration
                .as_ref()
                .and_then(|d| d.percentiles.iter().find(|x| x.0 == q))
                .map_or_else(dash, |(_, e)| estimate(e, ms))
        };
        let load = match p.result.config.load {
            Load::Closed { concurrency } => format!("{concurrency} in flight"),
            Load::Open { rate, .. } => format!("{} tasks/s", short(rate)),
        };
        out.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td class=\"num\">{} ({}, {})</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{} / {}</td></tr>\n",
            i + 1,
            escape(&load),
            t.completed,
            t.failed,
            t.cut,
            num(t.throughput),
            pct(50.0),
            pct(90.0),
            t.cacheable_share.map_or_else(dash, share),
            t.cached_share.map_or_else(dash, share),
        ));
    }
    out.push_str("</tbody></table></div>\n</div>\n");
    out
}

/// How a point started (clean or over a queue) and whether its sample was
/// too small for the SLO's percentiles, escaped for a table cell.
fn point_remarks(p: &crate::plan::sweep::SweepPoint) -> String {
    let mut parts = Vec::new();
    if let Some(st) = &p.start {
        let text = crate::output::report::console::start_note(st);
        parts.push(if st.idle == Some(false) {
            badge("fail", &text)
        } else {
            escape(&text)
        });
    }
    if p.result.early_stop.is_none() {
        if let Some(w) = p
            .result
            .warnings
            .iter()
            .rfind(|w| w.kind == crate::measure::traps::Trap::TooFewForPercentile)
        {
            // Plain text that wraps in the narrow column, in the warning colour.
            parts.push(format!(
                "<span class=\"warn\">{}</span>",
                escape(w.message.split(':').next().unwrap_or(""))
            ));
        }
    }
    if parts.is_empty() {
        "–".into()
    } else {
        parts.join("<br>")
    }
}
