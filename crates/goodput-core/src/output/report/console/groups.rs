//! The per-group tables: one per grouping the run has (per model, per
//! priority class), a row per group with its share, completed requests,
//! p50 and p99 TTFT, p99 TPOT and, with an SLO, its verdict — so a reader
//! sees at a glance whether one adapter is slower or the low class starves.

use std::fmt::Write;

use super::layout::{num, rule};
use crate::measure::metrics::{GroupFigures, Metric};
use crate::output::result::RunResult;

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

#[cfg(test)]
pub(crate) mod tests {
    use crate::measure::metrics::{Collector, RequestMetrics};
    use crate::output::report::console::tests::{sample_record, sample_result};
    use crate::output::result::RunResult;
    use crate::tokenizer::Tokenizer;

    /// The sample run with its requests in two classes, `hi` (even) and
    /// `lo` (odd), and all to one model `m`.
    pub(crate) fn grouped_result() -> RunResult {
        let mut r = sample_result();
        let tok = Tokenizer::from_spec("none").unwrap();
        let mut c = Collector::new(Vec::new(), false);
        for i in 0..20u64 {
            let mut rec = sample_record(i, i * 10_000_000, None);
            rec.class = Some(if i % 2 == 0 { "hi" } else { "lo" }.into());
            rec.model = Some("m".into());
            c.add(&rec, &RequestMetrics::derive(&rec, &tok));
        }
        r.metrics = c.summarize(&r.config.percentiles, None, 0, None);
        r
    }

    #[test]
    fn a_table_per_grouping_with_a_row_per_group() {
        let text = super::super::summary(&grouped_result());
        assert!(text.contains("Per model"), "{text}");
        let rows: Vec<&str> = text
            .lines()
            .skip_while(|l| !l.contains("Per class"))
            .skip(2)
            .take(2)
            .collect();
        // Class hi: requests 0, 2, ..., 18, TTFT 100 + i ms: median 109.
        assert!(rows[0].starts_with("hi    "), "{rows:?}");
        let cells: Vec<&str> = rows[0].split_whitespace().collect();
        assert_eq!(cells[1..4], ["0.500", "10", "109.00"], "{rows:?}");
        assert!(rows[1].starts_with("lo "), "{rows:?}");
    }
}
