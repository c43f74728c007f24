//! One run's console summary: the workload, then `vllm bench serve`'s
//! sections (requests, throughput, each latency distribution), the SLO,
//! sessions, the client, errors, cost, the server's own view, and the
//! notes and warnings.

use std::fmt::Write;

use super::layout::{estimate, line, num, rule};
use super::server::server_section;
use crate::load::schedule::Load;
use crate::load::workload::dataset::DatasetStats;
use crate::measure::cost::CostEnergy;
use crate::measure::metrics::registry::Shown;
use crate::measure::metrics::{ChunkSizes, Metric, CHUNK_SIZES};
use crate::measure::slo::{format_ms, SloOutcome};
use crate::measure::stats::{pct_label, Distribution};
use crate::measure::verdict::Verdict;
use crate::output::config::WorkloadConfig;
use crate::output::result::RunResult;

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

/// `mean 512.0, p50 510, p90 600, max 1024`.
fn mix(m: &crate::measure::metrics::mix::LengthMix) -> String {
    format!(
        "mean {:.1}, p50 {}, p90 {}, max {}",
        m.mean, m.p50, m.p90, m.max
    )
}

/// The workload above the figures: a throughput without the prompts that
/// produced it means nothing.
fn workload(out: &mut String, r: &RunResult) {
    let mix_ = &r.metrics.workload;
    rule(out, " Workload ", '=');
    simulated_line(out, r);
    if let Some(w) = &r.config.workload {
        workload_asked(out, w);
    }
    if let Some(i) = &mix_.input_tokens {
        line(out, "Input tokens (sent):", mix(i));
    }
    if let Some(o) = &mix_.output_tokens {
        line(out, "Output tokens (received):", mix(o));
    }
    if let Some(q) = &r.metrics.quality {
        line(
            out,
            "Quality vs references:",
            format!(
                "BLEU {:.2}, ROUGE-L F1 {:.3}, exact {:.1}% ({} scored)",
                q.bleu,
                q.rouge_l_f1,
                q.exact_match_share * 100.0,
                q.scored
            ),
        );
    }
    if let Some(s) = &r.metrics.structured_output {
        line(out, "Schema checks:", schema_checks(s));
    }
    if mix_.cacheable_share.is_some() || mix_.cached_share.is_some() {
        let pct = |x: Option<f64>| x.map_or("n/a".into(), |x| format!("{:.1}%", x * 100.0));
        line(
            out,
            "Prefix cache hits allowed / reported:",
            format!("{} / {}", pct(mix_.cacheable_share), pct(mix_.cached_share)),
        );
    }
}

/// `Schema checks:` valid of checked, the invalid share, the tool calls,
/// and the first violation's reason.
fn schema_checks(s: &crate::measure::metrics::StructuredOutput) -> String {
    let mut text = format!(
        "{} valid of {} checked ({} invalid), {} tool calls in {} requests",
        s.valid,
        s.checked,
        s.invalid_share
            .map_or("n/a".into(), |x| format!("{:.1}%", x * 100.0)),
        s.tool_calls,
        s.requests_with_tool_calls
    );
    if let Some(v) = s.first_violations.first() {
        text.push_str(&format!("; first violation: {}", v.reason));
    }
    text
}

/// The workload as it was asked for: in words, the tokenizer, the seed and
/// how a dataset was read.
fn workload_asked(out: &mut String, w: &WorkloadConfig) {
    line(out, "Workload:", &w.summary);
    let tok = &w.tokenizer;
    // The kind as the results JSON names it (`hugging_face`).
    let kind = serde_json::to_value(tok.kind).unwrap_or_default();
    let kind = kind.as_str().unwrap_or("");
    line(
        out,
        "Tokenizer (client counts):",
        match &tok.sha256 {
            Some(h) => format!("{} ({kind}, sha256 {}…)", tok.name, &h[..h.len().min(12)]),
            None => format!("{} ({kind})", tok.name),
        },
    );
    line(out, "Seed:", w.seed);
    if let Some(d) = w.dataset() {
        dataset_lines(out, d);
    }
}

/// Rows of a dataset read, used, dropped and reused.
fn dataset_lines(out: &mut String, d: &DatasetStats) {
    line(
        out,
        "Dataset rows read / used:",
        format!(
            "{} / {} ({})",
            d.rows_read,
            d.rows_selected,
            d.sampling.as_str()
        ),
    );
    let dropped = d.rows_skipped + d.rows_dropped_input_filter + d.rows_dropped_output_filter;
    if dropped > 0 {
        line(
            out,
            "Dataset rows dropped:",
            format!(
                "{} unusable, {} by input filter, {} by output filter",
                d.rows_skipped, d.rows_dropped_input_filter, d.rows_dropped_output_filter
            ),
        );
    }
    if d.cycled {
        line(
            out,
            "Dataset rows reused:",
            "yes (--dataset-exhausted cycle)",
        );
    }
}

/// Render the summary table: the workload, then each section in
/// `vllm bench serve`'s order, then what the reader should know.
pub fn summary(r: &RunResult) -> String {
    let mut out = String::new();
    workload(&mut out, r);
    requests_and_load(&mut out, r);
    throughput(&mut out, r);
    super::inputs::inputs_section(&mut out, r);
    latency_sections(&mut out, r);
    interactivity_section(&mut out, r);
    if let Some(slo) = &r.metrics.slo {
        let crowded = r.metrics.crowding.is_some_and(|c| c.long_memory);
        slo_section(&mut out, slo, crowded);
    }
    super::groups::groups_section(&mut out, r);
    // An agent's trajectories are its tasks, not chat sessions.
    if r.metrics.tasks.is_some() {
        super::tasks::tasks_section(&mut out, r);
    } else {
        sessions_section(&mut out, r);
    }
    client_section(&mut out, r);
    shards_section(&mut out, r);
    errors_section(&mut out, r);
    cost_section(&mut out, r);
    closing_lines(&mut out, r);
    out
}

/// `Target: simulated (PRESET) — not a real server`, for a simulated run
/// (a server's run needs no such line).
fn simulated_line(out: &mut String, r: &RunResult) {
    if let Some(t) = r.config.target.as_ref().filter(|t| t.is_simulated()) {
        line(
            out,
            "Target:",
            format!("{} — not a real server", t.describe()),
        );
    }
}

/// The result's headline: requests by outcome, the load, the duration
/// and the token totals.
fn requests_and_load(out: &mut String, r: &RunResult) {
    let m = &r.metrics;
    rule(out, " Serving Benchmark Result ", '=');
    simulated_line(out, r);
    line(out, "Successful requests:", m.completed);
    line(out, "Failed requests:", m.failed);
    if m.incomplete > 0 {
        line(
            out,
            "Incomplete requests (drain timeout, cancelled):",
            m.incomplete,
        );
    }
    match r.config.load {
        Load::Closed { concurrency } => line(out, "Maximum request concurrency:", concurrency),
        Load::Open {
            rate,
            arrival,
            max_concurrency,
        } => {
            line(
                out,
                "Offered request rate (req/s):",
                // `inf` sends every request at once: no arrival process.
                if rate.is_finite() {
                    format!("{rate} ({arrival})")
                } else {
                    "inf (every request at once)".to_string()
                },
            );
            if let Some(c) = max_concurrency {
                line(out, "Maximum request concurrency:", c);
            }
            if let Some(a) = m.achieved_request_rate {
                line(out, "Achieved request rate (req/s):", num(a));
            }
        }
    }
    line(out, "Benchmark duration (s):", num(m.duration_s));
    line(out, "Total input tokens:", m.total_input_tokens);
    line(out, "Total generated tokens:", m.total_output_tokens);
}

/// Throughput with its interval, goodput under an SLO, and the steady-state
/// window's output throughput.
fn throughput(out: &mut String, r: &RunResult) {
    let m = &r.metrics;
    line(
        out,
        "Request throughput (req/s):",
        estimate(&m.throughput.request),
    );
    // A pooling endpoint generates nothing: its output figures are not
    // zeros worth a line (its inputs/s are in the Inputs section).
    let generates = !r.config.endpoint.is_pooling();
    if generates {
        line(
            out,
            "Output token throughput (tok/s):",
            estimate(&m.throughput.output),
        );
    }
    line(
        out,
        "Total Token throughput (tok/s):",
        num(m.throughput.total_token),
    );
    if let Some(slo) = &m.slo {
        line(out, "Request goodput (req/s):", num(slo.request_goodput));
        line(out, "Token goodput (tok/s):", num(slo.token_goodput));
    }
    if let Some(s) = m.steady_state.as_ref().filter(|_| generates) {
        line(
            out,
            "Steady-state output throughput (tok/s):",
            format!(
                "{} ({:.1}-{:.1} s)",
                num(s.output_throughput),
                s.start_s,
                s.end_s
            ),
        );
    }
}

/// A section per latency distribution the registry shows for this load.
fn latency_sections(out: &mut String, r: &RunResult) {
    let m = &r.metrics;
    let itl_count = m.get(Metric::Itl).map(|d| d.count);
    for metric in Metric::ALL {
        let Some(d) = m.get(metric) else {
            continue;
        };
        let info = metric.info();
        let shown = match info.shown {
            Shown::Always => true,
            Shown::OpenLoop => r.config.load.is_open(),
            Shown::UnlessSameAsItl => Some(d.count) != itl_count,
            Shown::Never => false,
        };
        if shown {
            section(out, info.title, info.short, d, info.note);
        }
    }
    if let Some(c) = &m.tokens.decode_chunks {
        chunk_line(out, c, r);
    }
}

/// How many tokens the decode chunks carried, and what that estimates.
fn chunk_line(out: &mut String, c: &ChunkSizes, r: &RunResult) {
    let last = c.shares.len();
    let shares: Vec<String> = (c.shares.iter().enumerate())
        .map(|(i, s)| {
            let more = match i + 1 == last && last == CHUNK_SIZES {
                true => "+",
                false => "",
            };
            format!("{}{more}: {:.1}%", i + 1, s * 100.0)
        })
        .collect();
    line(
        out,
        "Tokens per decode chunk:",
        format!(
            "{:.2} mean over {} chunks ({})",
            c.mean_tokens,
            c.chunks,
            shares.join(", ")
        ),
    );
    let counted = (r.server_metrics.as_ref())
        .and_then(|s| s.summary.as_ref())
        .is_some_and(|s| s.spec_decode.is_some());
    if !counted {
        let _ = writeln!(
            out,
            "  the stream's: with speculative decoding, an estimate of the mean acceptance length (the server counted none); a batched stream raises it too"
        );
    }
}

/// Interactivity, the two ways the field defines it, each named.
fn interactivity_section(out: &mut String, r: &RunResult) {
    if let Some(i) = &r.metrics.interactivity {
        rule(out, "Interactivity (tok/s a user)", '-');
        line(
            out,
            "MLPerf e2e_interactivity:",
            estimate(&i.mlperf_e2e_interactivity),
        );
        line(
            out,
            "InferenceX e2e_norm_intvty:",
            estimate(&i.inferencex_e2e_norm_intvty),
        );
    }
}

/// Multi-turn sessions: how many, how long, and TTFT turn by turn.
fn sessions_section(out: &mut String, r: &RunResult) {
    let m = &r.metrics;
    if let Some(sessions) = &m.sessions {
        rule(out, "Sessions", '-');
        line(
            out,
            "Sessions (completed):",
            format!("{} ({})", sessions.sessions, sessions.sessions_completed),
        );
        line(out, "Turns completed:", sessions.turns_completed);
        if let Some(d) = &sessions.duration {
            line(out, "Mean session duration (ms):", estimate(&d.mean));
        }
        for t in &sessions.by_turn {
            line(
                out,
                &format!("Turn {}: median TTFT (ms), cached:", t.turn + 1),
                format!(
                    "{} ({} requests), {}",
                    num(t.ttft_p50_ms),
                    t.completed,
                    t.cached_share
                        .map_or("-".into(), |c| format!("{:.0}% of prompt", c * 100.0))
                ),
            );
        }
    }
}

/// The client's side: schedule lag, requests in flight, and where token
/// counts came from.
fn client_section(out: &mut String, r: &RunResult) {
    let m = &r.metrics;
    rule(out, "Client", '-');
    if let Some(d) = m.get(Metric::ScheduleLag) {
        let p99 = d
            .percentiles
            .iter()
            .find(|(p, _)| *p == 99.0)
            .map(|(_, e)| e.value);
        line(out, "Mean schedule lag (ms):", num(d.mean.value));
        if let Some(p) = p99 {
            line(out, "P99 schedule lag (ms):", num(p));
        }
    }
    line(out, "Mean in flight (Little's law):", num(m.mean_in_flight));
    let sources: Vec<String> = m
        .tokens
        .output_sources
        .iter()
        .map(|(k, v)| format!("{} {v}", k.as_str()))
        .collect();
    // Nothing completed: no count had a source; no blank line.
    if !sources.is_empty() {
        line(out, "Output token counts from:", sources.join(", "));
    }
    let sources: Vec<String> = m
        .tokens
        .input_sources
        .iter()
        .map(|(k, v)| format!("{} {v}", k.as_str()))
        .collect();
    if !sources.is_empty() {
        line(out, "Input token counts from:", sources.join(", "));
    }
    if let Some(d) = m.tokens.input_server_minus_client_mean {
        line(
            out,
            "Server minus client input:",
            format!("{d:+.1} tokens/request"),
        );
    }
    if let Some(s) = m.tokens.count_discrepancy_share {
        line(
            out,
            "Server/client count differ >5%:",
            format!("{:.1}%", s * 100.0),
        );
    }
}

/// A sharded run's shards: how far apart they started, each one's lag,
/// CPU and clock, and any shard missing from the result.
fn shards_section(out: &mut String, r: &RunResult) {
    let Some(s) = &r.shards else {
        return;
    };
    rule(out, "Shards", '-');
    let whole = s.parts.iter().filter(|p| p.whole).count();
    line(
        out,
        "Shards merged / planned:",
        format!("{whole} / {}", s.shards),
    );
    if let Some(skew) = s.start_skew_ms {
        line(out, "Start skew (ms):", num(skew));
    }
    for p in &s.parts {
        let lag = p.schedule_lag_p99_ms.map_or("-".to_string(), num);
        let cpu = p.cpu_cores.map_or("-".to_string(), |c| format!("{c:.2}"));
        line(
            out,
            &format!("Shard {}:", p.shard),
            format!(
                "sent {}, lag p99 {lag} ms, CPU {cpu} cores, clock ±{:.3} ms",
                p.sent_measured,
                p.clock_rtt_ns as f64 / 2e6
            ),
        );
    }
    for l in &s.lost {
        line(out, &format!("Shard {} MISSING:", l.shard), l.why.clone());
    }
    if let Some(n) = s.unaccounted_requests.filter(|_| !s.lost.is_empty()) {
        line(out, "Unaccounted requests:", n.to_string());
    }
}

/// Failures by kind, with an example message of each.
fn errors_section(out: &mut String, r: &RunResult) {
    let m = &r.metrics;
    if m.failed > 0 {
        rule(out, "Errors", '-');
        line(
            out,
            "Error rate:",
            format!("{:.2}%", m.errors.error_rate * 100.0),
        );
        for (kind, n) in &m.errors.by_kind {
            line(out, &format!("  {kind}:"), n);
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
}

/// Cost per request, per million tokens and per GPU (`--cost-per-hour`),
/// tokens per joule, and the energy's cost (`--energy-price`).
fn cost_section(out: &mut String, r: &RunResult) {
    if let Some(c) = &r.cost {
        rule(out, "Cost", '-');
        let money = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.6}"));
        if c.spec.per_hour.is_some() {
            line(out, "Cost per request:", money(c.per_request));
            line(
                out,
                "Cost per 1M output tokens:",
                money(c.per_million_output_tokens),
            );
            line(
                out,
                "Cost per 1M good output tokens:",
                money(c.per_million_good_output_tokens),
            );
        }
        if c.per_session.is_some() {
            line(out, "Cost per session:", money(c.per_session));
        }
        // Files written before `energy_from` was: measured where the run
        // read the GPUs.
        let measured = r.gpu_metrics.as_ref().and_then(|g| g.energy_j()).is_some();
        let from = match c.energy_from {
            Some(CostEnergy::Measured) => " (the GPUs' measured energy)",
            None if measured => " (the GPUs' measured energy)",
            _ => " (--power-watts, assumed)",
        };
        if let Some(j) = c.output_tokens_per_joule {
            line(out, "Output tokens per joule:", format!("{j:.3}{from}"));
        }
        if let Some(e) = c.energy_cost_per_million_output_tokens {
            line(
                out,
                "Energy cost per 1M output tokens:",
                format!("{e:.6}{from}"),
            );
        }
        line(
            out,
            "Output tok/s per GPU:",
            num(c.output_throughput_per_gpu),
        );
    }
}

/// Below the table: saturation findings, the server's own view, then the
/// run's notes and warnings.
fn closing_lines(out: &mut String, r: &RunResult) {
    let m = &r.metrics;
    rule(out, "", '=');
    for f in &m.saturation.findings {
        let _ = writeln!(out, "saturation: {f}");
    }
    if let Some(note) = m.crowding.and_then(|c| c.note()) {
        let _ = writeln!(out, "crowding: {note}");
    }
    if let Some(sm) = &r.server_metrics {
        server_section(out, sm);
    }
    if let Some(g) = &r.gpu_metrics {
        super::server::gpu_section(out, g);
    }
    if r.exec.interrupted {
        let _ = writeln!(
            out,
            "note: stopped by a signal after {} measured requests were sent; the figures cover those",
            r.exec.sent_measured
        );
    }
    for n in &r.notes {
        let _ = writeln!(out, "note: {n}");
    }
    for w in &r.warnings {
        let _ = writeln!(out, "warning: {}", w.message);
    }
}

/// Each term with its estimate, interval and verdict, then the run's
/// verdict. In a `crowded` run a passing term cannot settle (its upper end
/// is open at this load), and says so instead of a count.
fn slo_section(out: &mut String, slo: &SloOutcome, crowded: bool) {
    rule(out, "SLO", '-');
    type Show = fn(&crate::measure::stats::Estimate) -> String;
    let requests = slo.terms.iter().map(|t| {
        let label = format!(
            "p{} {} <= {}:",
            pct_label(t.term.percentile),
            t.term.metric.info().short,
            format_ms(t.term.threshold_ms)
        );
        let more = t.more_requests_to_settle.map(|n| (n, "requests"));
        let show: Show = estimate;
        (
            label,
            show,
            t.estimate,
            t.verdict,
            t.passes,
            t.term.threshold_ms,
            more,
        )
    });
    let tasks = slo.task_terms.iter().map(|t| {
        let label = format!(
            "p{} task duration (s) <= {}:",
            pct_label(t.term.percentile),
            format_ms(t.term.threshold_ms)
        );
        let more = t.more_tasks_to_settle.map(|n| (n, "tasks"));
        let show: Show = super::tasks::seconds;
        (
            label,
            show,
            t.estimate,
            t.verdict,
            t.passes,
            t.term.threshold_ms,
            more,
        )
    });
    for (label, show, e, verdict, passes, threshold_ms, more) in requests.chain(tasks) {
        let value = e.as_ref().map(show).unwrap_or_else(|| "-".into());
        let more = match more {
            None if crowded && passes => Unsettled::Crowded,
            None => Unsettled::Unknown,
            Some(m) => Unsettled::After(m),
        };
        let verdict = verdict_text(verdict, passes, e, threshold_ms, more);
        line(out, &label, format!("{value}  {verdict}"));
    }
    line(
        out,
        "Good requests (SLO attainment):",
        format!("{} ({:.1}%)", slo.good_requests, slo.attainment * 100.0),
    );
    let verdict = if slo.meets {
        "yes".to_string()
    } else {
        format!("NO: {}", slo.reasons.join("; "))
    };
    line(out, "Meets the SLO:", verdict);
}

/// What would settle an unsettled term.
enum Unsettled<'a> {
    /// About this many more requests (or tasks).
    After((u64, &'a str)),
    /// A pass in a crowded run: no count at this load.
    Crowded,
    /// Not known.
    Unknown,
}

/// A term's verdict in words: pass, FAIL, or, unsettled, what its point
/// estimate says (it decides the exit code) and what would settle it.
fn verdict_text(
    verdict: Verdict,
    passes: bool,
    e: Option<crate::measure::stats::Estimate>,
    threshold_ms: f64,
    more: Unsettled,
) -> String {
    match verdict {
        Verdict::Pass => "pass".to_string(),
        Verdict::Fail => "FAIL".to_string(),
        Verdict::Inconclusive => format!(
            "{} on its estimate{} (unsettled{})",
            if passes { "pass" } else { "FAIL" },
            e.filter(|e| threshold_ms > 0.0 && e.value.is_finite())
                .map(|e| format!(", {:.0}% of the threshold", e.value / threshold_ms * 100.0))
                .unwrap_or_default(),
            match more {
                Unsettled::After((n, what)) => format!(": ~{n} more {what} would settle it"),
                Unsettled::Crowded => ": a crowded run bounds it from below only".to_string(),
                Unsettled::Unknown => String::new(),
            }
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::stats::Estimate;

    /// A passing term a crowded run cannot settle says why instead of a
    /// count; an unsettled term elsewhere says how many more would do.
    #[test]
    fn an_unsettled_pass_says_what_would_settle_it() {
        let e = Some(Estimate {
            value: 50.0,
            lo: Some(40.0),
            hi: None,
        });
        let text = |more| verdict_text(Verdict::Inconclusive, true, e, 200.0, more);
        assert_eq!(
            text(Unsettled::Crowded),
            "pass on its estimate, 25% of the threshold (unsettled: a crowded run bounds it from below only)"
        );
        assert_eq!(
            text(Unsettled::After((195, "requests"))),
            "pass on its estimate, 25% of the threshold (unsettled: ~195 more requests would settle it)"
        );
        assert_eq!(
            text(Unsettled::Unknown),
            "pass on its estimate, 25% of the threshold (unsettled)"
        );
    }
}
