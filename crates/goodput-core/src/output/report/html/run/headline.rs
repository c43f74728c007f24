//! The table of headline figures, a column per run: model, load,
//! duration, requests, throughput, quality, latency percentiles, the SLO
//! verdict, errors, cost and saturation.

use crate::measure::metrics::Metric;
use crate::measure::metrics::RunMetrics;
use crate::measure::stats::{pct_label, Distribution};
use crate::output::report::html::format::{badge, escape, estimate, ms, num, row, share, Source};
use crate::output::result::RunResult;

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
pub(super) fn slo_badge(m: &RunMetrics) -> String {
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

/// The rows of the headline table, one cell per run.
pub(super) fn headline_rows(runs: &[(Source, &RunResult)]) -> Vec<String> {
    let mut rows = figure_rows(runs);
    rows.extend(inputs_rows(runs));
    rows.extend(latency_rows(runs));
    rows.extend(outcome_rows(runs));
    rows
}

/// Inputs of pooling requests and images of chat requests, where any run
/// had them (a run without shows a dash).
fn inputs_rows(runs: &[(Source, &RunResult)]) -> Vec<String> {
    let mut rows = Vec::new();
    let dash = || "–".to_string();
    if runs.iter().any(|(_, r)| r.metrics.inputs.is_some()) {
        rows.push(row(
            "Input throughput (inputs/s)",
            &cells(runs, &|r| {
                r.metrics.inputs.as_ref().map_or_else(dash, |i| {
                    format!(
                        "{} ({} inputs, {} per request)",
                        num(i.inputs_throughput),
                        i.inputs_total,
                        num(i.inputs_per_request_mean)
                    )
                })
            }),
        ));
    }
    if runs.iter().any(|(_, r)| r.metrics.images.is_some()) {
        rows.push(row(
            "Images",
            &cells(runs, &|r| {
                r.metrics.images.as_ref().map_or_else(dash, |i| {
                    let extra = i
                        .image_extra_prompt_tokens_mean
                        .map(|x| format!(", {x:+.1} server prompt tokens beyond text per request"))
                        .unwrap_or_default();
                    format!(
                        "{} in {} requests, {} bytes{extra}",
                        i.images_total, i.image_requests, i.image_bytes_total
                    )
                })
            }),
        ));
    }
    rows
}

/// One cell per run, made by `f`.
fn cells(runs: &[(Source, &RunResult)], f: &dyn Fn(&RunResult) -> String) -> Vec<String> {
    runs.iter().map(|(_, r)| f(r)).collect()
}

/// What ran and how much: model, load, duration, requests, throughput, and
/// quality where any run scored it.
fn figure_rows(runs: &[(Source, &RunResult)]) -> Vec<String> {
    let cells = |f: &dyn Fn(&RunResult) -> String| cells(runs, f);
    let mut rows = vec![
        row("Model", &cells(&|r| escape(&r.config.model))),
        row("Load", &cells(&|r| escape(&format!("{:#}", r.config.load)))),
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
    rows.extend(structured_rows(runs));
    rows
}

/// Tool calls and schema checks, where any run sent tools or a response
/// format: the time to the first tool call (median and highest saved
/// percentile) and the answers that kept to their schema.
fn structured_rows(runs: &[(Source, &RunResult)]) -> Vec<String> {
    let cells = |f: &dyn Fn(&RunResult) -> String| cells(runs, f);
    let mut rows = Vec::new();
    let metric = crate::measure::metrics::Metric::TimeToFirstToolCall;
    if runs.iter().any(|(_, r)| r.metrics.get(metric).is_some()) {
        rows.push(row(
            "Time to first tool call (p50 / highest, ms)",
            &cells(&|r| {
                r.metrics.get(metric).map_or("–".into(), |d| {
                    headline_percentiles(d)
                        .iter()
                        .filter_map(|p| d.percentiles.iter().find(|(q, _)| q == p))
                        .map(|(_, e)| estimate(e, ms))
                        .collect::<Vec<_>>()
                        .join(" / ")
                })
            }),
        ));
    }
    if runs
        .iter()
        .any(|(_, r)| r.metrics.structured_output.is_some())
    {
        rows.push(row(
            "Schema checks",
            &cells(&|r| {
                r.metrics
                    .structured_output
                    .as_ref()
                    .map_or("–".into(), |s| {
                        let mut text = format!(
                            "{} valid of {} checked ({} invalid) · {} tool calls",
                            s.valid,
                            s.checked,
                            s.invalid_share.map_or("–".into(), share),
                            s.tool_calls
                        );
                        if let Some(v) = s.first_violations.first() {
                            text.push_str(&format!(
                                "<br><span class=\"ci\">first violation: {}</span>",
                                escape(&v.reason)
                            ));
                        }
                        text
                    })
            }),
        ));
    }
    rows
}

/// The median and the highest saved percentile of each latency: the union
/// of what the runs saved.
fn latency_rows(runs: &[(Source, &RunResult)]) -> Vec<String> {
    let cells = |f: &dyn Fn(&RunResult) -> String| cells(runs, f);
    let mut rows = Vec::new();
    for metric in Metric::headline() {
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
    rows
}

/// How the runs came out: the SLO verdict and goodput, the error rate,
/// cost and saturation, each only where some run has it.
fn outcome_rows(runs: &[(Source, &RunResult)]) -> Vec<String> {
    let cells = |f: &dyn Fn(&RunResult) -> String| cells(runs, f);
    let mut rows = Vec::new();
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
