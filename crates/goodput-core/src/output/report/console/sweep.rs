//! A sweep in the console: one line per point, the knees, and the goodput
//! headline.

use std::fmt::Write;

use super::layout::{line, num, rule};
use crate::load::schedule::Load;
use crate::measure::metrics::Metric;
use crate::measure::stats::pct_label;
use crate::plan::sweep::{SweepPoint, SweepResult};

/// How a sweep point's start was made clean, in a few words.
pub fn start_note(st: &crate::plan::sweep::PointStart) -> String {
    let mut s = match (st.by.as_str(), st.idle) {
        (_, Some(true)) if st.waited_s < 0.05 => "started idle".to_string(),
        (_, Some(true)) => format!("started idle after {:.1} s", st.waited_s),
        (_, Some(false)) => format!(
            "STARTED OVER A QUEUE of {:.0} (waited {:.0} s)",
            st.server_queue.unwrap_or(0.0),
            st.waited_s
        ),
        _ if st.abandoned == 0 => "nothing abandoned before it".to_string(),
        _ => format!(
            "waited {:.1} s for {} abandoned requests",
            st.waited_s, st.abandoned
        ),
    };
    if st.redone {
        s.push_str(", redone");
    }
    s
}

/// A sweep: one line per point, the knees, and the goodput headline.
pub fn sweep_summary(r: &SweepResult) -> String {
    let mut out = String::new();
    rule(&mut out, " Sweep ", '=');
    if let Some(t) = r.target().filter(|t| t.is_simulated()) {
        let _ = writeln!(out, "Target: {} — not a real server", t.describe());
    }
    // The GPUs' tokens per joule, where any point measured its energy.
    let energy = r.points.iter().any(|p| tokens_per_joule(p).is_some());
    let _ = writeln!(
        out,
        "{:>2}  {:<8} {:>12} {:>9} {:>9} {:>10} {:>10} {:>10} {:>10} {:>6}{}  {:<5} notes",
        "#",
        "role",
        "load",
        "sent/s",
        "req/s",
        "out tok/s",
        "p99 TTFT",
        "p99 TPOT",
        "p99 E2EL",
        "err%",
        if energy { "  tok/J" } else { "" },
        "SLO",
    );
    for (i, p) in r.points.iter().enumerate() {
        point_line(&mut out, i, p, energy);
    }
    let _ = writeln!(
        out,
        "  (latencies in ms; open-loop TTFT and E2EL from the scheduled arrival)"
    );
    super::frontier::frontier_section(&mut out, r.frontier.as_ref());
    knees_and_goodput(&mut out, r);
    out
}

/// A point's output tokens over its GPUs' measured energy.
fn tokens_per_joule(p: &SweepPoint) -> Option<f64> {
    let g = p.result.gpu_metrics.as_ref()?.summary.as_ref()?;
    g.output_tokens_per_joule
}

/// One point's line: its role, load, throughput, p99 latencies, error
/// rate, tokens per joule (with `energy`), SLO verdict and notes.
fn point_line(out: &mut String, i: usize, p: &SweepPoint, energy: bool) {
    let ms = |x: Option<f64>| x.map(|v| format!("{v:.1}")).unwrap_or_else(|| "-".into());
    let m = &p.result.metrics;
    let load = match p.result.config.load {
        Load::Closed { concurrency } => format!("c={concurrency}"),
        Load::Open { rate, .. } => format!("{rate:.2}/s"),
    };
    let pct = |metric: Metric| {
        m.get(metric)
            .and_then(|d| d.percentiles.iter().find(|x| x.0 == 99.0))
            .map(|x| x.1.value)
    };
    let ttft = if p.result.config.load.is_open() {
        Metric::TtftFromSchedule
    } else {
        Metric::Ttft
    };
    let slo = match p.meets {
        Some(true) => "pass",
        Some(false) => "FAIL",
        None => "-",
    };
    let notes = point_notes(p);
    let _ = writeln!(
        out,
        "{:>2}  {:<8} {:>12} {:>9} {:>9.2} {:>10.1} {:>10} {:>10} {:>10} {:>6.1}{}  {:<5} {}",
        i + 1,
        format!("{:?}", p.role).to_lowercase(),
        load,
        m.achieved_request_rate
            .map(|a| format!("{a:.2}"))
            .unwrap_or_else(|| "-".into()),
        m.throughput.request.value,
        m.throughput.streamed_output,
        ms(pct(ttft)),
        ms(pct(Metric::Tpot)),
        ms(pct(if p.result.config.load.is_open() {
            Metric::E2elFromSchedule
        } else {
            Metric::E2el
        })),
        m.errors.error_rate * 100.0,
        match (energy, tokens_per_joule(p)) {
            (false, _) => String::new(),
            (true, t) => format!(" {:>6}", t.map_or("-".into(), |t| format!("{t:.2}"))),
        },
        slo,
        notes.join(", ")
    );
}

/// What a point's line should say beside its figures: saturation, the
/// percentiles the search judged, how it started, a sample too small for
/// its verdict, an early end.
fn point_notes(p: &SweepPoint) -> Vec<String> {
    let m = &p.result.metrics;
    let mut notes = Vec::new();
    if m.saturation.saturated {
        notes.push("saturated".to_string());
    }
    if m.saturation.behind_schedule {
        notes.push("behind schedule".to_string());
    }
    if let Some(t) = &m.tasks {
        // An agent workload's load is tasks: what the point completed of
        // them, and the task term the SLO judged (else the median).
        let judged = m
            .slo
            .as_ref()
            .and_then(|s| s.task_terms.first())
            .and_then(|t| Some((t.term.percentile, t.estimate?.value)));
        let median = t
            .duration
            .as_ref()
            .and_then(|d| d.percentiles.iter().find(|p| p.0 == 50.0))
            .map(|p| (50.0, p.1.value));
        let duration = judged
            .or(median)
            .map(|(p, ms)| format!(", p{} task {:.1} s", pct_label(p), ms / 1e3))
            .unwrap_or_default();
        notes.push(format!(
            "{} tasks, {:.3} tasks/s{duration}",
            t.completed, t.throughput
        ));
    }
    if let Some(c) = &m.schedule_control {
        // What the search judged: the percentiles adjusted for the
        // point's own arrival schedule.
        let adjusted: Vec<String> = c
            .terms
            .iter()
            .map(|t| {
                format!(
                    "{} adj. {:.1}",
                    t.term.split("<=").next().unwrap_or(""),
                    t.adjusted_ms
                )
            })
            .collect();
        if !adjusted.is_empty() {
            notes.push(adjusted.join(", "));
        }
    }
    if let Some(st) = &p.start {
        notes.push(start_note(st));
    }
    if p.meets.is_some() && p.result.early_stop.is_none() {
        // The per-point warnings a verdict rests on: too few requests.
        let too_few = p
            .result
            .warnings
            .iter()
            .rfind(|w| w.kind == crate::measure::traps::Trap::TooFewForPercentile);
        if let Some(w) = too_few {
            notes.push(
                w.message
                    .split(':')
                    .next()
                    .unwrap_or(&w.message)
                    .to_string(),
            );
        }
    }
    if let Some(v) = p.result.early_stop {
        notes.push(format!(
            "ended early ({})",
            if v == crate::measure::verdict::Verdict::Pass {
                "settled pass"
            } else {
                "settled fail"
            }
        ));
    }
    notes
}

/// Below the points: the capacity, both knees, why the sweep stopped,
/// the load time, then the goodput's notes and headline.
fn knees_and_goodput(out: &mut String, r: &SweepResult) {
    if let Some(c) = r.capacity {
        line(out, "Capacity (closed-loop probe, req/s):", num(c));
    }
    let unit = if r
        .curve
        .iter()
        .any(|c| r.points[c.point].result.config.load.is_open())
    {
        r.goodput.as_ref().map_or("req/s", |g| g.unit())
    } else {
        "concurrency"
    };
    match r.knees.throughput {
        Some(k) => line(
            out,
            "Knee, throughput stops following load:",
            format!("{} {unit} (Kneedle)", num(k.offered)),
        ),
        None => line(
            out,
            "Knee, throughput stops following load:",
            "none found (throughput still follows load)",
        ),
    }
    match (r.knees.degradation, r.knees.floor_ttft_p99_ms) {
        (Some(k), Some(f)) => line(
            out,
            "Knee, p99 TTFT > floor + 20%:",
            format!("{} {unit} (floor {})", num(k.offered), num(f)),
        ),
        _ => line(out, "Knee, p99 TTFT > floor + 20%:", "none found"),
    }
    if let Some(why) = &r.stopped {
        line(out, "Stopped:", why);
    }
    match r.slo_met_up_to() {
        Some(Some(p)) => {
            let m = &p.result.metrics;
            line(
                out,
                "SLO met up to:",
                format!(
                    "{} ({} req/s, {} tok/s; {} requests)",
                    p.result.config.load,
                    num(m.throughput.request.value),
                    num(m.throughput.output.value),
                    m.completed
                ),
            );
        }
        Some(None) => line(out, "SLO met up to:", "no point met it"),
        None => {}
    }
    line(out, "Load time (s):", num(r.load_time_s));
    rule(out, "", '=');
    if let Some(g) = &r.goodput {
        for n in &g.notes {
            let _ = writeln!(out, "note: {n}");
        }
    }
    if let Some(h) = crate::plan::sweep::headline(r) {
        let _ = writeln!(out, "{h}");
    }
}
