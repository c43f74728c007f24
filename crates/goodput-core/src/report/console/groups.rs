//! The per-group tables: one per grouping the run has (per model, per
//! priority class), a row per group with its share, completed requests,
//! p50 and p99 TTFT, p99 TPOT and, with an SLO, its verdict — so a reader
//! sees at a glance whether one adapter is slower or the low class starves.

use std::fmt::Write;

use super::layout::{num, rule};
use crate::metrics::{GroupFigures, Metric};
use crate::result::RunResult;

/// The tables, after the run's SLO section; nothing for a run without groups.
pub(super) fn groups_section(out: &mut String, r: &RunResult) {
    let Some(groups) = &r.metrics.groups else {
        return;
    };
    let slo = r.metrics.slo.is_some();
    for (grouping, map) in groups.groupings() {
        let title = match grouping {
            "by_model" => "Per model",
            _ => "Per class",
        };
        rule(out, title, '-');
        let width = map.keys().map(String::len).max().unwrap_or(0).max(5);
        let _ = write!(
            out,
            "{:<width$} {:>6} {:>6} {:>9} {:>9} {:>9}",
            "Group", "Share", "Done", "p50 TTFT", "p99 TTFT", "p99 TPOT"
        );
        out.push_str(if slo { "  SLO\n" } else { "\n" });
        for (name, g) in map {
            row(out, name, g, width, slo);
        }
        let _ = writeln!(out, "  latencies in ms; share of the measured requests");
    }
}

fn row(out: &mut String, name: &str, g: &GroupFigures, width: usize, slo: bool) {
    let ms = |m: Metric, p: f64| g.percentile(m, p).map_or_else(|| "-".into(), num);
    let _ = write!(
        out,
        "{name:<width$} {:>6.3} {:>6} {:>9} {:>9} {:>9}",
        g.share,
        g.completed,
        ms(Metric::Ttft, 50.0),
        ms(Metric::Ttft, 99.0),
        ms(Metric::Tpot, 99.0),
    );
    if slo {
        let verdict = g.slo.as_ref().map_or("-", |s| s.words());
        let _ = write!(out, "  {verdict}");
    }
    out.push('\n');
}
