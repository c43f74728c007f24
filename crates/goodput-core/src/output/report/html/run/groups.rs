//! A run's per-group tables (per model, per priority class): a row per
//! group with its share, counts, throughput, p50/p99 TTFT with intervals,
//! p99 TPOT and E2EL, and its SLO verdict when the run has an SLO.

use crate::measure::metrics::{GroupFigures, Metric};
use crate::output::report::html::format::{badge, escape, estimate, ms, num, share};
use crate::output::result::RunResult;

/// The tables; empty for a run without groups.
pub(super) fn groups(r: &RunResult) -> String {
    let Some(groups) = &r.metrics.groups else {
        return String::new();
    };
    let slo = r.metrics.slo.is_some();
    let mut out = String::new();
    for (grouping, map) in groups.groupings() {
        let (title, column) = match grouping {
            "by_model" => ("Per model", "Model"),
            _ => ("Per class", "Class"),
        };
        out.push_str(&format!(
            "<div data-section=\"{grouping}\">\n<h4>{title}</h4>\n<div class=\"table-wrap\"><table>\n<thead><tr><th>{column}</th><th>Share</th><th>Completed</th><th>Failed</th><th>Requests/s</th><th>p50 TTFT</th><th>p99 TTFT</th><th>p99 TPOT</th><th>p99 E2EL</th>{}</tr></thead>\n<tbody>\n",
            if slo { "<th>SLO</th>" } else { "" }
        ));
        for (name, g) in map {
            out.push_str(&row(name, g, slo));
        }
        out.push_str("</tbody></table></div>\n</div>\n");
    }
    out
}

fn row(name: &str, g: &GroupFigures, slo: bool) -> String {
    let pct = |m: Metric, p: f64| {
        g.get(m)
            .and_then(|d| d.percentiles.iter().find(|x| x.0 == p))
            .map_or_else(|| "–".to_string(), |(_, e)| estimate(e, ms))
    };
    let verdict = match (&g.slo, slo) {
        (Some(s), true) => {
            let class = if s.inconclusive {
                "inconclusive"
            } else if s.meets {
                "pass"
            } else {
                "fail"
            };
            format!("<td>{}</td>", badge(class, s.words()))
        }
        (None, true) => "<td>–</td>".into(),
        (_, false) => String::new(),
    };
    format!(
        "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>{verdict}</tr>\n",
        escape(name),
        share(g.share),
        g.completed,
        g.failed,
        num(g.request_throughput.value),
        pct(Metric::Ttft, 50.0),
        pct(Metric::Ttft, 99.0),
        pct(Metric::Tpot, 99.0),
        pct(Metric::E2el, 99.0),
    )
}

#[cfg(test)]
mod tests {
    use crate::output::report::console::tests::sample_result;
    use crate::output::report::saved::Saved;

    #[test]
    fn the_run_section_has_a_table_per_grouping() {
        let plain =
            super::super::super::render(&[("a".into(), Saved::Run(Box::new(sample_result())))]);
        assert!(!plain.contains("data-section=\"by_class\""));
        let r = crate::output::report::console::grouped_result();
        let html = super::super::super::render(&[("a".into(), Saved::Run(Box::new(r)))]);
        for needle in [
            "data-section=\"by_model\"",
            "data-section=\"by_class\"",
            "<th>Class</th>",
            "<tr><td>hi</td><td class=\"num\">50.0 %</td><td class=\"num\">10</td>",
        ] {
            assert!(
                html.contains(needle),
                "{needle}\n{}",
                &html[html.find("by_class").unwrap_or(0)..]
            );
        }
    }
}
