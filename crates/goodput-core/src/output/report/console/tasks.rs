//! Tasks: an agent trace's trajectories judged whole: how many completed,
//! their throughput and duration, what a task holds, the prefix-cache
//! share the trace allows beside what the server reported, and the calls
//! by depth (the main agent, its subagents).

use super::layout::{estimate, line, num, rule};
use crate::measure::metrics::TaskSummary;
use crate::measure::stats::{pct_label, Estimate};
use crate::output::result::RunResult;

/// An estimate in ms, printed in seconds.
pub(super) fn seconds(e: &Estimate) -> String {
    let s = |x: f64| x / 1e3;
    estimate(&Estimate {
        value: s(e.value),
        lo: e.lo.map(s),
        hi: e.hi.map(s),
    })
}

fn share(x: Option<f64>) -> String {
    x.map_or("-".into(), |x| format!("{:.1}%", x * 100.0))
}

fn ms(x: Option<f64>) -> String {
    x.map_or("-".into(), num)
}

/// The tasks of a run that replayed agent trajectories.
pub(super) fn tasks_section(out: &mut String, r: &RunResult) {
    let Some(t) = &r.metrics.tasks else {
        return;
    };
    rule(out, "Tasks (agent trajectories)", '-');
    counts(out, t);
    if let Some(d) = &t.duration {
        line(out, "Mean task duration (s):", seconds(&d.mean));
        for (p, e) in &d.percentiles {
            let label = match pct_label(*p).as_str() {
                "50" => "Median task duration (s):".to_string(),
                l => format!("P{l} task duration (s):"),
            };
            line(out, &label, seconds(e));
        }
    }
    line(
        out,
        "Calls, subagents a task (mean):",
        format!("{}, {}", num(t.calls_mean), num(t.subagents_mean)),
    );
    line(
        out,
        "Prompt, output tokens a task (mean):",
        format!(
            "{}, {}",
            num(t.input_tokens_mean),
            num(t.output_tokens_mean)
        ),
    );
    line(
        out,
        "Prefix cache, trace allows / reported:",
        format!("{} / {}", share(t.cacheable_share), share(t.cached_share)),
    );
    for d in &t.by_depth {
        let who = match d.depth {
            0 => "main agent".to_string(),
            1 => "subagents".to_string(),
            k => format!("depth {k}"),
        };
        line(
            out,
            &format!("Calls of {who}, p50/p90 TTFT (ms):"),
            format!("{}, {} / {}", d.calls, ms(d.ttft_p50_ms), ms(d.ttft_p90_ms)),
        );
        line(
            out,
            "  p50/p90 E2EL (ms), cache allows/got:",
            format!(
                "{} / {}, {} / {}",
                ms(d.e2el_p50_ms),
                ms(d.e2el_p90_ms),
                share(d.cacheable_share),
                share(d.cached_share)
            ),
        );
    }
}

fn counts(out: &mut String, t: &TaskSummary) {
    line(
        out,
        "Tasks (completed, failed, cut):",
        format!("{} ({}, {}, {})", t.tasks, t.completed, t.failed, t.cut),
    );
    line(out, "Task throughput (tasks/s):", num(t.throughput));
}
