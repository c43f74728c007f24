//! A run's tasks (an agent trace's trajectories): how many completed,
//! failed or were cut, the task throughput, the duration's mean and
//! percentiles with their intervals, what a task holds, the prefix-cache
//! share the trace allows beside what the server reported, and the calls
//! by their agent's depth.

use crate::measure::stats::pct_label;
use crate::output::report::html::format::{escape, estimate, ms, num, share};
use crate::output::result::RunResult;

/// The section; empty for a run without tasks.
pub(super) fn tasks(r: &RunResult) -> String {
    let Some(t) = &r.metrics.tasks else {
        return String::new();
    };
    let or_dash = |x: Option<f64>, f: fn(f64) -> String| x.map_or("–".to_string(), f);
    let mut out = String::from("<div data-section=\"tasks\">\n<h4>Tasks</h4>\n");
    out.push_str(&format!(
        "<p>{} tasks: {} completed, {} failed, {} cut · {} tasks/s · per task {} calls, {} subagents, {} prompt and {} output tokens · prefix cache: the trace allows {}, the server reported {}</p>\n",
        t.tasks,
        t.completed,
        t.failed,
        t.cut,
        num(t.throughput),
        num(t.calls_mean),
        num(t.subagents_mean),
        num(t.input_tokens_mean),
        num(t.output_tokens_mean),
        or_dash(t.cacheable_share, share),
        or_dash(t.cached_share, share),
    ));
    if let Some(d) = &t.duration {
        out.push_str("<div class=\"table-wrap\"><table>\n<thead><tr><th>Task duration</th><th>Estimate [95 %]</th></tr></thead>\n<tbody>\n");
        out.push_str(&format!(
            "<tr><td>mean</td><td class=\"num\">{}</td></tr>\n",
            estimate(&d.mean, ms)
        ));
        for (p, e) in &d.percentiles {
            out.push_str(&format!(
                "<tr><td>p{}</td><td class=\"num\">{}</td></tr>\n",
                escape(&pct_label(*p)),
                estimate(e, ms)
            ));
        }
        out.push_str("</tbody></table></div>\n");
    }
    out.push_str("<div class=\"table-wrap\"><table>\n<thead><tr><th>Agent depth</th><th>Calls</th><th>p50 / p90 TTFT</th><th>p50 / p90 E2EL</th><th>Output tokens a call</th><th>Cache: allowed / reported</th></tr></thead>\n<tbody>\n");
    for d in &t.by_depth {
        let who = match d.depth {
            0 => "0 (main agent)".to_string(),
            k => format!("{k} (subagents)"),
        };
        out.push_str(&format!(
            "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{} / {}</td><td class=\"num\">{} / {}</td><td class=\"num\">{}</td><td class=\"num\">{} / {}</td></tr>\n",
            escape(&who),
            d.calls,
            or_dash(d.ttft_p50_ms, ms),
            or_dash(d.ttft_p90_ms, ms),
            or_dash(d.e2el_p50_ms, ms),
            or_dash(d.e2el_p90_ms, ms),
            num(d.output_tokens_mean),
            or_dash(d.cacheable_share, share),
            or_dash(d.cached_share, share),
        ));
    }
    out.push_str("</tbody></table></div>\n</div>\n");
    out
}
