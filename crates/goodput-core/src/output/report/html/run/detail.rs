//! Each run's own section: its SLO terms, errors by kind, notes, workload
//! and full configuration.

use super::headline::slo_badge;
use crate::measure::metrics::RunMetrics;
use crate::measure::slo::SloOutcome;
use crate::measure::stats::pct_label;
use crate::measure::verdict::Verdict;
use crate::output::report::html::format::{
    badge, config_block, escape, estimate, ms, ms_short, num, share, swatch, Source,
};
use crate::output::report::html::workload::workload;
use crate::output::result::RunResult;

/// A run's own section: who it is, its SLO terms, errors by kind, notes,
/// the workload and the full configuration.
pub(super) fn detail(source: Source, r: &RunResult, several: bool) -> String {
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
        out.push_str(&slo_terms(m, slo));
    }
    out.push_str(&super::groups::groups(r));
    out.push_str(&super::tasks::tasks(r));
    if m.failed > 0 || !m.errors.by_kind.is_empty() {
        out.push_str(&errors_by_kind(m));
    }
    if let Some(s) = &r.shards {
        out.push_str(&shards(s));
    }
    out.push_str(&notes(r));
    out.push_str(&workload(r));
    out.push_str(&config_block("Full configuration (JSON)", &r.config));
    out.push_str("</section>\n");
    out
}

/// A sharded run's shards: a row each (its sent requests, start, lag, CPU,
/// clock), the missing ones in words.
fn shards(s: &crate::plan::shard::merge::ShardsReport) -> String {
    let mut out = String::from("<div data-section=\"shards\">\n<h4>Shards</h4>\n");
    let whole = s.parts.iter().filter(|p| p.whole).count();
    out.push_str(&format!(
        "<p>{whole} of {} shards merged{}</p>\n",
        s.shards,
        s.start_skew_ms
            .map(|k| format!(" · they started sending within {} ms of each other", num(k)))
            .unwrap_or_default()
    ));
    out.push_str("<div class=\"table-wrap\"><table>\n<thead><tr><th>Shard</th><th>Sent</th><th>Started (ms)</th><th>Schedule lag p50 / p99 (ms)</th><th>CPU (cores)</th><th>Clock ± (ms)</th></tr></thead>\n<tbody>\n");
    let or_dash = |x: Option<f64>| x.map_or("–".to_string(), num);
    for p in &s.parts {
        out.push_str(&format!(
            "<tr><td>{}{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{} / {}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>\n",
            p.shard,
            if p.whole { "" } else { " (cut short)" },
            p.sent_measured,
            or_dash(p.start_ms),
            or_dash(p.schedule_lag_p50_ms),
            or_dash(p.schedule_lag_p99_ms),
            or_dash(p.cpu_cores),
            num(p.clock_rtt_ns as f64 / 2e6)
        ));
    }
    out.push_str("</tbody></table></div>\n");
    if !s.lost.is_empty() {
        out.push_str("<ul class=\"plain\">\n");
        for l in &s.lost {
            out.push_str(&format!(
                "<li>{} shard {}: {}</li>\n",
                badge("fail", "missing"),
                l.shard,
                escape(&l.why)
            ));
        }
        out.push_str("</ul>\n");
    }
    out.push_str("</div>\n");
    out
}

/// The SLO in words with its verdict, the reasons it fails, then a row per
/// term: what it was judged on, its estimate, verdict and the requests
/// that would settle it.
fn slo_terms(m: &RunMetrics, slo: &SloOutcome) -> String {
    let mut out = String::new();
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
        let verdict = verdict_badge(t.verdict, t.passes);
        out.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td></tr>\n",
            escape(&format!(
                "p{} {} ≤ {}",
                pct_label(t.term.percentile),
                t.term.metric.info().short,
                ms_short(t.term.threshold_ms)
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
    for t in &slo.task_terms {
        out.push_str(&format!(
            "<tr><td>{}</td><td>task duration</td><td>{}</td><td>{}</td><td class=\"num\">{}</td></tr>\n",
            escape(&format!(
                "p{} task ≤ {}",
                pct_label(t.term.percentile),
                ms_short(t.term.threshold_ms)
            )),
            t.estimate
                .as_ref()
                .map(|e| estimate(e, ms))
                .unwrap_or_else(|| "no data".into()),
            verdict_badge(t.verdict, t.passes),
            t.more_tasks_to_settle
                .map(|n| format!("{n} tasks"))
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
    out
}

/// A term's verdict as a badge; an unsettled one says what its point
/// estimate says.
fn verdict_badge(v: Verdict, passes: bool) -> String {
    match v {
        Verdict::Pass => badge("pass", "pass"),
        Verdict::Fail => badge("fail", "fail"),
        Verdict::Inconclusive if passes => {
            badge("inconclusive", "inconclusive (passes as estimated)")
        }
        Verdict::Inconclusive => badge("inconclusive", "inconclusive (fails as estimated)"),
    }
}

/// Failures by kind: count, share of failures and an example message.
fn errors_by_kind(m: &RunMetrics) -> String {
    let mut out = String::new();
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
            escape(&kind.to_string()),
            share(*n as f64 / total.max(1) as f64),
            escape(example)
        ));
    }
    out.push_str("</tbody></table></div>\n</div>\n");
    out
}

/// The run's notes, saturation findings, and how it ended when not as
/// planned (interrupted, drain timed out, records lost).
fn notes(r: &RunResult) -> String {
    let m = &r.metrics;
    let mut out = String::new();
    let mut notes: Vec<String> = r.notes.clone();
    notes.extend(m.saturation.findings.iter().cloned());
    notes.extend(m.crowding.and_then(|c| c.note()));
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
    out
}
