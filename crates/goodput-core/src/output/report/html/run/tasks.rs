//! A run's tasks (an agent trace's trajectories): how many completed,
//! failed or were cut, the task throughput, the duration's mean and
//! percentiles with their intervals, what a task holds, the prefix-cache
//! share the trace allows beside what the server reported, the calls by
//! their agent's depth, and one task's timeline: its calls as bars, one
//! row per agent, and the waits between them (a tool, a user) dashed.

use crate::measure::metrics::TimelineCall;
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
    out.push_str("</tbody></table></div>\n");
    out.push_str(&timeline(&t.timeline));
    out.push_str("</div>\n");
    out
}

/// One task's calls as inline SVG: a row per agent (in the order they
/// first ran), a bar per call from its send to its end, and a dashed line
/// from the end of the last call it waited for to its send: the tool or
/// user time the trace recorded. `data-calls` counts the bars (`rect.call`).
fn timeline(calls: &[TimelineCall]) -> String {
    if calls.is_empty() {
        return String::new();
    }
    let mut agents: Vec<(u32, u32)> = Vec::new();
    for c in calls {
        if !agents.iter().any(|a| a.0 == c.agent) {
            agents.push((c.agent, c.depth));
        }
    }
    let (left, width, row) = (120.0, 600.0, 22.0);
    let end = calls.iter().map(|c| c.done_ms).fold(1e-9, f64::max);
    let x = |ms: f64| left + ms / end * width;
    let height = agents.len() as f64 * row + 30.0;
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {} {height}\" role=\"img\">\n",
        left + width + 40.0
    );
    for (i, (agent, depth)) in agents.iter().enumerate() {
        let who = if *agent == 0 {
            "main agent".to_string()
        } else {
            format!("subagent {agent} (depth {depth})")
        };
        svg.push_str(&format!(
            "<text x=\"4\" y=\"{}\" font-size=\"11\">{}</text>\n",
            i as f64 * row + 15.0,
            escape(&who)
        ));
    }
    let row_of = |agent: u32| agents.iter().position(|a| a.0 == agent).unwrap_or(0) as f64;
    for c in calls {
        let y = row_of(c.agent) * row + 4.0;
        let waited = c
            .parents
            .iter()
            .filter_map(|p| calls.iter().find(|o| o.call == *p))
            .map(|p| p.done_ms)
            .fold(None, |a: Option<f64>, d| Some(a.map_or(d, |a| a.max(d))));
        if let Some(w) = waited.filter(|w| c.send_ms > *w) {
            svg.push_str(&format!(
                "<line class=\"wait\" x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"#888\" stroke-dasharray=\"3 3\"/>\n",
                x(w),
                x(c.send_ms),
                y + 7.0,
                y + 7.0
            ));
        }
        svg.push_str(&format!(
            "<rect class=\"call\" x=\"{:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"14\" fill=\"#3b6ea5\"><title>{}</title></rect>\n",
            x(c.send_ms),
            (x(c.done_ms) - x(c.send_ms)).max(1.0),
            escape(&format!(
                "call {}: sent at {}, took {}",
                c.call,
                ms(c.send_ms),
                ms(c.done_ms - c.send_ms)
            ))
        ));
    }
    let axis = agents.len() as f64 * row + 18.0;
    for k in 0..=4 {
        let at = end * f64::from(k) / 4.0;
        svg.push_str(&format!(
            "<text x=\"{:.1}\" y=\"{axis:.1}\" font-size=\"10\" text-anchor=\"middle\">{}</text>\n",
            x(at),
            escape(&ms(at))
        ));
    }
    svg.push_str("</svg>\n");
    format!(
        "<figure class=\"chart\" data-timeline=\"task\" data-calls=\"{}\"><figcaption>One task's calls (of the first completed, the one of median duration): bars from send to end, a row per agent; dashed, the wait after the calls it waited for</figcaption>\n{svg}</figure>\n",
        calls.len()
    )
}
