//! The console summary, in `vllm bench serve`'s layout and section names,
//! with a 95 % interval after every estimate. Pure: a result in, text out.

use std::fmt::Write;

use crate::metrics::registry::Shown;
use crate::metrics::Metric;
use crate::result::RunResult;
use crate::stats::{pct_label, Distribution, Estimate};

const WIDTH: usize = 50;

fn rule(out: &mut String, title: &str, fill: char) {
    let pad = WIDTH.saturating_sub(title.len());
    let left = pad / 2;
    let _ = writeln!(
        out,
        "{}{}{}",
        fill.to_string().repeat(left),
        title,
        fill.to_string().repeat(pad - left)
    );
}

fn line(out: &mut String, label: &str, value: impl std::fmt::Display) {
    let _ = writeln!(out, "{label:<40} {value}");
}

fn num(x: f64) -> String {
    if x.abs() >= 1000.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

/// `182.40 [176.00, 190.20]`, an open side shown as `-`.
pub fn estimate(e: &Estimate) -> String {
    let side = |x: Option<f64>| x.map(num).unwrap_or_else(|| "-".into());
    if e.lo.is_none() && e.hi.is_none() {
        return format!("{} [open]", num(e.value));
    }
    format!("{} [{}, {}]", num(e.value), side(e.lo), side(e.hi))
}

fn section(out: &mut String, title: &str, short: &str, d: &Distribution, note: &str) {
    rule(out, title, '-');
    line(out, &format!("Mean {short} (ms):"), estimate(&d.mean));
    for (p, e) in &d.percentiles {
        let label = if *p == 50.0 {
            format!("Median {short} (ms):")
        } else {
            format!("P{} {short} (ms):", pct_label(*p))
        };
        line(out, &label, estimate(e));
    }
    if !note.is_empty() {
        let _ = writeln!(out, "  {note}");
    }
}

/// Render the summary table.
pub fn summary(r: &RunResult) -> String {
    let m = &r.metrics;
    let mut out = String::new();
    rule(&mut out, " Serving Benchmark Result ", '=');
    line(&mut out, "Successful requests:", m.completed);
    line(&mut out, "Failed requests:", m.failed);
    if m.incomplete > 0 {
        line(
            &mut out,
            "Incomplete requests (drain timeout):",
            m.incomplete,
        );
    }
    match r.load {
        crate::schedule::Load::Closed { concurrency } => {
            line(&mut out, "Maximum request concurrency:", concurrency)
        }
        crate::schedule::Load::Open {
            rate,
            arrival,
            max_concurrency,
        } => {
            line(
                &mut out,
                "Offered request rate (req/s):",
                format!("{rate} ({arrival})"),
            );
            if let Some(c) = max_concurrency {
                line(&mut out, "Maximum request concurrency:", c);
            }
            if let Some(a) = m.achieved_request_rate {
                line(&mut out, "Achieved request rate (req/s):", num(a));
            }
        }
    }
    line(&mut out, "Benchmark duration (s):", num(m.duration_s));
    line(&mut out, "Total input tokens:", m.total_input_tokens);
    line(&mut out, "Total generated tokens:", m.total_output_tokens);
    line(
        &mut out,
        "Request throughput (req/s):",
        estimate(&m.throughput.request),
    );
    line(
        &mut out,
        "Output token throughput (tok/s):",
        estimate(&m.throughput.output),
    );
    line(
        &mut out,
        "Total Token throughput (tok/s):",
        num(m.throughput.total_token),
    );
    if let Some(s) = &m.steady_state {
        line(
            &mut out,
            "Steady-state output throughput (tok/s):",
            format!(
                "{} ({:.1}-{:.1} s)",
                num(s.output_throughput),
                s.start_s,
                s.end_s
            ),
        );
    }
    let itl_count = m.get(Metric::Itl).map(|d| d.count);
    for metric in Metric::ALL {
        let Some(d) = m.get(metric) else {
            continue;
        };
        let info = metric.info();
        let shown = match info.shown {
            Shown::Always => true,
            Shown::OpenLoop => r.load.is_open(),
            Shown::UnlessSameAsItl => Some(d.count) != itl_count,
            Shown::Never => false,
        };
        if shown {
            section(&mut out, info.title, info.short, d, info.note);
        }
    }
    rule(&mut out, "Client", '-');
    if let Some(d) = m.get(Metric::ScheduleLag) {
        let p99 = d
            .percentiles
            .iter()
            .find(|(p, _)| *p == 99.0)
            .map(|(_, e)| e.value);
        line(&mut out, "Mean schedule lag (ms):", num(d.mean.value));
        if let Some(p) = p99 {
            line(&mut out, "P99 schedule lag (ms):", num(p));
        }
    }
    line(
        &mut out,
        "Mean in flight (Little's law):",
        num(m.mean_in_flight),
    );
    let sources: Vec<String> = m
        .tokens
        .output_sources
        .iter()
        .map(|(k, v)| format!("{} {v}", k.as_str()))
        .collect();
    line(&mut out, "Output token counts from:", sources.join(", "));
    if let Some(s) = m.tokens.count_discrepancy_share {
        line(
            &mut out,
            "Server/client count differ >5%:",
            format!("{:.1}%", s * 100.0),
        );
    }
    if m.failed > 0 {
        rule(&mut out, "Errors", '-');
        line(
            &mut out,
            "Error rate:",
            format!("{:.2}%", m.errors.error_rate * 100.0),
        );
        for (kind, n) in &m.errors.by_kind {
            line(&mut out, &format!("  {kind}:"), n);
        }
        for (kind, msg) in &m.errors.examples {
            let mut msg = msg.clone();
            if msg.len() > 120 {
                let cut = (0..=120)
                    .rev()
                    .find(|&i| msg.is_char_boundary(i))
                    .unwrap_or(0);
                msg.truncate(cut);
                msg.push('…');
            }
            let _ = writeln!(out, "  e.g. {kind}: {msg}");
        }
    }
    rule(&mut out, "", '=');
    for n in &r.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::executor::ExecSummary;
    use crate::metrics::{Collector, RequestMetrics};
    use crate::record::{ErrorKind, Event, RequestError, RequestRecord, ServerUsage};
    use crate::schedule::Load;
    use crate::tokenizer::Tokenizer;

    /// A deterministic run: 20 requests, 10 ms apart, TTFT 100 + i ms, one
    /// token every 10 ms, and one 503.
    pub(crate) fn sample_result() -> RunResult {
        let tok = Tokenizer::from_spec("none").unwrap();
        let mut c = Collector::default();
        const MS: u64 = 1_000_000;
        for i in 0..20u64 {
            let send = i * 10 * MS;
            let mut r = RequestRecord {
                request_id: i,
                t_sched: send,
                t_send: Some(send),
                max_tokens: Some(5),
                prompt_tokens_client: Some(32),
                ..Default::default()
            };
            if i == 7 {
                r.http_status = Some(503);
                r.t_done = send + 2 * MS;
                r.error = Some(RequestError {
                    kind: ErrorKind::HttpStatus,
                    message: "HTTP 503: overloaded".into(),
                    retry_after: Some("1".into()),
                });
            } else {
                for k in 0..5u64 {
                    r.output_text.push_str(" the");
                    r.events.push(Event {
                        at_ns: send + (100 + i) * MS + k * 10 * MS,
                        text_end: r.output_text.len() as u32,
                        usage_completion_tokens: None,
                        reasoning: false,
                    });
                }
                r.t_done = r.events.last().unwrap().at_ns;
                r.usage = Some(ServerUsage {
                    prompt_tokens: Some(32),
                    completion_tokens: Some(5),
                    ..Default::default()
                });
            }
            let m = RequestMetrics::derive(&r, &tok);
            c.add(&r, &m);
        }
        let percentiles = vec![50.0, 90.0, 95.0, 99.0];
        let load = Load::Closed { concurrency: 4 };
        RunResult {
            run_id: "00000000000000aa".into(),
            config: serde_json::json!({"load": load, "percentiles": percentiles}),
            model: "m".into(),
            tokenizer: "none".into(),
            load,
            metrics: c.summarize(&percentiles, None, 0),
            exec: ExecSummary::default(),
            stale_connections_discarded: 0,
            notes: vec!["an example note".into()],
            percentiles,
            started_at: "2026-01-01T00:00:00Z".into(),
            clock_origin_monotonic_ns: None,
        }
    }

    #[test]
    fn summary_table_snapshot() {
        insta::assert_snapshot!(summary(&sample_result()));
    }

    #[test]
    fn estimates_show_open_bounds() {
        let e = Estimate {
            value: 1.0,
            lo: Some(0.5),
            hi: None,
        };
        assert_eq!(estimate(&e), "1.00 [0.50, -]");
        let e = Estimate {
            value: 1234.5,
            lo: None,
            hi: None,
        };
        assert_eq!(estimate(&e), "1234.5 [open]");
    }
}
