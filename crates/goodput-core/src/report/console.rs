//! The console summary, in `vllm bench serve`'s layout and section names,
//! with a 95 % interval after every estimate. Pure: a result in, text out.

use std::fmt::Write;

use crate::config::WorkloadConfig;
use crate::metrics::registry::Shown;
use crate::metrics::Metric;
use crate::report::saved::Saved;
use crate::result::RunResult;
use crate::schedule::Load;
use crate::slo::{format_ms, SloOutcome};
use crate::stats::{pct_label, Distribution, Estimate};
use crate::sweep::SweepResult;
use crate::verdict::Verdict;
use crate::workload::dataset::DatasetStats;

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

/// `mean 512.0, p50 510, p90 600, max 1024`.
fn mix(m: &crate::metrics::mix::LengthMix) -> String {
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
    if mix_.cacheable_share.is_some() || mix_.cached_share.is_some() {
        let pct = |x: Option<f64>| x.map_or("n/a".into(), |x| format!("{:.1}%", x * 100.0));
        line(
            out,
            "Prefix cache hits allowed / reported:",
            format!("{} / {}", pct(mix_.cacheable_share), pct(mix_.cached_share)),
        );
    }
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

/// The console text for labelled results: each one's summary (a run's
/// table, a sweep's, a repeat set's), headed by `# label` when there are
/// several.
pub fn render(items: &[(String, Saved)]) -> String {
    let mut out = String::new();
    for (label, saved) in items {
        if items.len() > 1 {
            let _ = writeln!(out, "# {label}");
        }
        out.push_str(&match saved {
            Saved::Run(r) => summary(r),
            Saved::Sweep(s) => sweep_summary(s),
            Saved::Repeat(r) => repeat_summary(r),
        });
    }
    out
}

/// Render the summary table.
pub fn summary(r: &RunResult) -> String {
    let m = &r.metrics;
    let mut out = String::new();
    workload(&mut out, r);
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
        Load::Closed { concurrency } => line(&mut out, "Maximum request concurrency:", concurrency),
        Load::Open {
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
    if let Some(slo) = &m.slo {
        line(
            &mut out,
            "Request goodput (req/s):",
            num(slo.request_goodput),
        );
        line(&mut out, "Token goodput (tok/s):", num(slo.token_goodput));
    }
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
    if let Some(slo) = &m.slo {
        slo_section(&mut out, slo);
    }
    if let Some(sessions) = &m.sessions {
        rule(&mut out, "Sessions", '-');
        line(
            &mut out,
            "Sessions (completed):",
            format!("{} ({})", sessions.sessions, sessions.sessions_completed),
        );
        line(&mut out, "Turns completed:", sessions.turns_completed);
        if let Some(d) = &sessions.duration {
            line(&mut out, "Mean session duration (ms):", estimate(&d.mean));
        }
        for t in &sessions.by_turn {
            line(
                &mut out,
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
    let sources: Vec<String> = m
        .tokens
        .input_sources
        .iter()
        .map(|(k, v)| format!("{} {v}", k.as_str()))
        .collect();
    line(&mut out, "Input token counts from:", sources.join(", "));
    if let Some(d) = m.tokens.input_server_minus_client_mean {
        line(
            &mut out,
            "Server minus client input:",
            format!("{d:+.1} tokens/request"),
        );
    }
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
    if let Some(c) = &r.cost {
        rule(&mut out, "Cost", '-');
        let money = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.6}"));
        line(&mut out, "Cost per request:", money(c.per_request));
        line(
            &mut out,
            "Cost per 1M output tokens:",
            money(c.per_million_output_tokens),
        );
        line(
            &mut out,
            "Cost per 1M good output tokens:",
            money(c.per_million_good_output_tokens),
        );
        if c.per_session.is_some() {
            line(&mut out, "Cost per session:", money(c.per_session));
        }
        if let Some(j) = c.output_tokens_per_joule {
            line(&mut out, "Output tokens per joule:", format!("{j:.3}"));
        }
        line(
            &mut out,
            "Output tok/s per GPU:",
            num(c.output_throughput_per_gpu),
        );
    }
    rule(&mut out, "", '=');
    for f in &m.saturation.findings {
        let _ = writeln!(out, "saturation: {f}");
    }
    if let Some(sm) = &r.server_metrics {
        server_section(&mut out, sm);
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
    out
}

/// What the server's own metrics said over the window, beside the client's
/// view: every figure its engine exposes, and no line for one it does not.
fn server_section(out: &mut String, sm: &crate::server_metrics::ServerMetrics) {
    let engine = sm.engine.map_or("unknown engine", |e| e.as_str());
    rule(out, &format!("Server ({engine})"), '-');
    let Some(s) = &sm.summary else {
        for n in &sm.notes {
            let _ = writeln!(out, "{n}");
        }
        return;
    };
    server_latency_lines(out, s);
    server_load_lines(out, s);
    server_token_lines(out, s);
    if sm.failed_scrapes > 0 {
        let _ = writeln!(
            out,
            "{} of {} scrapes of {} failed: {}",
            sm.failed_scrapes,
            sm.failed_scrapes + sm.scrapes,
            sm.url,
            sm.last_error.as_deref().unwrap_or("")
        );
    }
    for n in &sm.notes {
        let _ = writeln!(out, "note: {n}");
    }
}

/// `a / b`, a missing side as `-`.
fn server_pair(a: Option<f64>, b: Option<f64>, fmt: fn(f64) -> String) -> String {
    let side = |x: Option<f64>| x.map_or("-".into(), fmt);
    format!("{} / {}", side(a), side(b))
}

fn server_count(x: f64) -> String {
    format!("{x:.0}")
}

fn server_percent(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// The server's latency histograms: TTFT beside the client's, the means.
fn server_latency_lines(out: &mut String, s: &crate::server_metrics::ServerSummary) {
    let opt = |x: Option<f64>| x.map(num).unwrap_or_else(|| "-".into());
    if let Some(h) = &s.ttft_ms {
        let client = match (s.client_mean_ttft_ms, s.ttft_gap_ms) {
            (Some(c), Some(g)) => format!(" (client {}, gap {g:+.2})", num(c)),
            _ => String::new(),
        };
        line(
            out,
            "Server mean TTFT (ms):",
            format!("{}{client}", opt(h.mean)),
        );
        line(
            out,
            "Server median / P99 TTFT (ms):",
            format!("{} / {} (within buckets)", opt(h.p50), opt(h.p99)),
        );
    }
    for (label, h) in [
        ("Server mean queue time (ms):", &s.queue_time_ms),
        ("Server mean TPOT (ms):", &s.tpot_ms),
        ("Server mean ITL (ms):", &s.itl_ms),
        ("Server mean E2EL (ms):", &s.e2e_ms),
    ] {
        if let Some(h) = h {
            line(out, label, opt(h.mean));
        }
    }
}

/// The batch, the queue and the KV cache through the window.
fn server_load_lines(out: &mut String, s: &crate::server_metrics::ServerSummary) {
    if s.peak_kv_usage.is_some() {
        line(
            out,
            "KV-cache usage, peak / mean:",
            server_pair(s.peak_kv_usage, s.mean_kv_usage, server_percent),
        );
    }
    if s.peak_running.is_some() || s.peak_waiting.is_some() {
        line(
            out,
            "Running / waiting, peak:",
            server_pair(s.peak_running, s.peak_waiting, server_count),
        );
        line(
            out,
            "Running / waiting, mean:",
            server_pair(s.mean_running, s.mean_waiting, num),
        );
    }
    if let Some(p) = s.preemptions {
        line(out, "Preemptions:", server_count(p));
    }
    if let Some(b) = s.busy_slots_per_decode {
        let calls = s
            .decode_calls
            .map_or(String::new(), |c| format!(" over {c:.0} calls"));
        line(
            out,
            "Busy slots per decode call:",
            format!("{}{calls}", num(b)),
        );
    }
}

/// Tokens, requests, the prefix cache and (llama.cpp) slot time and speed.
fn server_token_lines(out: &mut String, s: &crate::server_metrics::ServerSummary) {
    if s.prompt_tokens.is_some() || s.generation_tokens.is_some() {
        line(
            out,
            "Prompt / generated tokens (server):",
            server_pair(s.prompt_tokens, s.generation_tokens, server_count),
        );
    }
    if let Some(share) = s.prefix_cache_hit_share {
        let of = match (s.prompt_tokens_cached, s.prompt_tokens) {
            (Some(c), Some(p)) => format!(" ({c:.0} of {p:.0} prompt tokens)"),
            _ => String::new(),
        };
        line(
            out,
            "Prefix-cache hit share:",
            format!("{}{of}", server_percent(share)),
        );
    }
    if let Some(n) = s.requests_finished {
        line(out, "Requests finished (server):", server_count(n));
    }
    if s.prompt_seconds.is_some() || s.generation_seconds.is_some() {
        line(
            out,
            "Prompt / generation slot time (s):",
            server_pair(s.prompt_seconds, s.generation_seconds, num),
        );
    }
    if s.prompt_tokens_per_slot_s.is_some() || s.generation_tokens_per_slot_s.is_some() {
        line(
            out,
            "Prefill / decode per slot (tok/s):",
            server_pair(
                s.prompt_tokens_per_slot_s,
                s.generation_tokens_per_slot_s,
                num,
            ),
        );
    }
}

/// A `--repeat` result: the last repeat's summary (every repeat is in the
/// results file), then each headline figure across the repeats.
pub fn repeat_summary(r: &crate::repeat::RepeatResult) -> String {
    let mut out = String::new();
    if let Some(last) = r.runs.last() {
        let _ = writeln!(out, "Repeat {} of {}:", r.runs.len(), r.summary.repeats);
        out.push_str(&summary(last));
    }
    let s = &r.summary;
    rule(&mut out, &format!(" Across {} ", s.repeats_words()), '=');
    let _ = writeln!(
        out,
        "{:<32} {:>30} {:>7}  each repeat",
        "figure", "mean [95% CI, Student t]", "CV"
    );
    for f in &s.figures {
        let mean = match (f.lo, f.hi) {
            (Some(lo), Some(hi)) => format!("{} [{}, {}]", num(f.mean), num(lo), num(hi)),
            _ => num(f.mean),
        };
        let values: Vec<String> = f.values.iter().map(|v| v.map_or("-".into(), num)).collect();
        let _ = writeln!(
            out,
            "{:<32} {:>30} {:>7}  {}",
            format!("{} ({})", f.name, f.unit),
            mean,
            f.cv.map_or("-".into(), |c| format!("{:.1}%", c * 100.0)),
            values.join(", ")
        );
    }
    match (&s.identical_outputs, &s.identical_outputs_note) {
        (Some(i), _) => {
            let _ = writeln!(
                out,
                "identical outputs in every repeat: {} of {} prompts{} ({})",
                i.identical,
                i.prompts_compared,
                i.share
                    .map_or(String::new(), |x| format!(", {:.1}%", x * 100.0)),
                match i.temperature {
                    Some(t) => format!("temperature {t}"),
                    None =>
                        "the server's default temperature: pass --temperature 0 for greedy decoding"
                            .into(),
                }
            );
        }
        (None, Some(note)) => {
            let _ = writeln!(out, "outputs not compared: {note}");
        }
        _ => {}
    }
    out
}

/// Each term with its estimate, interval and verdict, then the run's verdict.
fn slo_section(out: &mut String, slo: &SloOutcome) {
    rule(out, "SLO", '-');
    for t in &slo.terms {
        let label = format!(
            "p{} {} <= {}:",
            pct_label(t.term.percentile),
            t.term.metric.info().short,
            format_ms(t.term.threshold_ms)
        );
        let verdict = match (t.verdict, t.passes) {
            (Verdict::Pass, _) => "pass".to_string(),
            (Verdict::Fail, _) => "FAIL".to_string(),
            (Verdict::Inconclusive, p) => format!(
                "{} (inconclusive{})",
                if p { "pass" } else { "FAIL" },
                t.more_requests_to_settle
                    .map(|n| format!(": ~{n} more requests would settle it"))
                    .unwrap_or_default()
            ),
        };
        let value = t
            .estimate
            .as_ref()
            .map(estimate)
            .unwrap_or_else(|| "-".into());
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

/// A sweep: one line per point, the knees, and the goodput headline.
/// How a sweep point's start was made clean, in a few words.
pub fn start_note(st: &crate::sweep::PointStart) -> String {
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

pub fn sweep_summary(r: &SweepResult) -> String {
    let mut out = String::new();
    rule(&mut out, " Sweep ", '=');
    let _ = writeln!(
        out,
        "{:>2}  {:<8} {:>12} {:>9} {:>9} {:>10} {:>10} {:>10} {:>10} {:>6}  {:<5} notes",
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
        "SLO",
    );
    let ms = |x: Option<f64>| x.map(|v| format!("{v:.1}")).unwrap_or_else(|| "-".into());
    for (i, p) in r.points.iter().enumerate() {
        let m = &p.result.metrics;
        let load = match p.result.load {
            Load::Closed { concurrency } => format!("c={concurrency}"),
            Load::Open { rate, .. } => format!("{rate:.2}/s"),
        };
        let pct = |metric: Metric| {
            m.get(metric)
                .and_then(|d| d.percentiles.iter().find(|x| x.0 == 99.0))
                .map(|x| x.1.value)
        };
        let ttft = if p.result.load.is_open() {
            Metric::TtftFromSchedule
        } else {
            Metric::Ttft
        };
        let slo = match p.meets {
            Some(true) => "pass",
            Some(false) => "FAIL",
            None => "-",
        };
        let mut notes = Vec::new();
        if m.saturation.saturated {
            notes.push("saturated".to_string());
        }
        if m.saturation.behind_schedule {
            notes.push("behind schedule".to_string());
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
                .rfind(|w| w.kind == crate::traps::Trap::TooFewForPercentile);
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
                if v == crate::verdict::Verdict::Pass {
                    "settled pass"
                } else {
                    "settled fail"
                }
            ));
        }
        let _ = writeln!(
            out,
            "{:>2}  {:<8} {:>12} {:>9} {:>9.2} {:>10.1} {:>10} {:>10} {:>10} {:>6.1}  {:<5} {}",
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
            ms(pct(if p.result.load.is_open() {
                Metric::E2elFromSchedule
            } else {
                Metric::E2el
            })),
            m.errors.error_rate * 100.0,
            slo,
            notes.join(", ")
        );
    }
    let _ = writeln!(
        out,
        "  (latencies in ms; open-loop TTFT and E2EL from the scheduled arrival)"
    );
    if let Some(c) = r.capacity {
        line(&mut out, "Capacity (closed-loop probe, req/s):", num(c));
    }
    let unit = if r
        .curve
        .iter()
        .any(|c| r.points[c.point].result.load.is_open())
    {
        "req/s"
    } else {
        "concurrency"
    };
    match r.knees.throughput {
        Some(k) => line(
            &mut out,
            "Knee, throughput stops following load:",
            format!("{} {unit} (Kneedle)", num(k.offered)),
        ),
        None => line(
            &mut out,
            "Knee, throughput stops following load:",
            "none found (throughput still follows load)",
        ),
    }
    match (r.knees.degradation, r.knees.floor_ttft_p99_ms) {
        (Some(k), Some(f)) => line(
            &mut out,
            "Knee, p99 TTFT > floor + 20%:",
            format!("{} {unit} (floor {})", num(k.offered), num(f)),
        ),
        _ => line(&mut out, "Knee, p99 TTFT > floor + 20%:", "none found"),
    }
    if let Some(why) = &r.stopped {
        line(&mut out, "Stopped:", why);
    }
    line(&mut out, "Load time (s):", num(r.load_time_s));
    rule(&mut out, "", '=');
    if let Some(g) = &r.goodput {
        for n in &g.notes {
            let _ = writeln!(out, "note: {n}");
        }
    }
    if let Some(h) = crate::sweep::headline(r) {
        let _ = writeln!(out, "{h}");
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

    /// Request `i` of a deterministic run, sent at `send` (ns): TTFT
    /// 100 + i ms, then five tokens 10 ms apart with the server's usage; or,
    /// given a `failure`, a 503 that ended 2 ms after its send.
    pub(crate) fn sample_record(i: u64, send: u64, failure: Option<RequestError>) -> RequestRecord {
        const MS: u64 = 1_000_000;
        let mut r = RequestRecord {
            request_id: i,
            t_sched: send,
            t_send: Some(send),
            max_tokens: Some(5),
            prompt_tokens_client: Some(32),
            ..Default::default()
        };
        if let Some(e) = failure {
            r.http_status = Some(503);
            r.t_done = send + 2 * MS;
            r.error = Some(e);
            return r;
        }
        for k in 0..5u64 {
            r.output_text.push_str(" the");
            r.events.push(Event {
                at_ns: send + (100 + i) * MS + k * 10 * MS,
                text_end: r.output_text.len() as u32,
                usage_completion_tokens: None,
                reasoning: false,
            });
        }
        r.t_done = r.events.last().map_or(send, |e| e.at_ns);
        r.usage = Some(ServerUsage {
            prompt_tokens: Some(32),
            completion_tokens: Some(5),
            ..Default::default()
        });
        r
    }

    /// A deterministic run: 20 requests, 10 ms apart, TTFT 100 + i ms, one
    /// token every 10 ms, and one 503.
    pub(crate) fn sample_result() -> RunResult {
        let tok = Tokenizer::from_spec("none").unwrap();
        let mut c = Collector::default();
        const MS: u64 = 1_000_000;
        for i in 0..20u64 {
            let failure = (i == 7).then(|| RequestError {
                kind: ErrorKind::HttpStatus,
                message: "HTTP 503: overloaded".into(),
                retry_after: Some("1".into()),
            });
            let r = sample_record(i, i * 10 * MS, failure);
            let m = RequestMetrics::derive(&r, &tok);
            c.add(&r, &m);
        }
        let percentiles = vec![50.0, 90.0, 95.0, 99.0];
        let load = Load::Closed { concurrency: 4 };
        RunResult {
            run_id: "00000000000000aa".into(),
            config: crate::config::tests::sample_config(load, percentiles.clone()),
            model: "m".into(),
            tokenizer: "none".into(),
            load,
            metrics: c.summarize(&percentiles, None, 0, None),
            exec: ExecSummary::default(),
            connections: Default::default(),
            early_stop: None,
            cost: None,
            notes: vec!["an example note".into()],
            warnings: Vec::new(),
            percentiles,
            started_at: "2026-01-01T00:00:00Z".into(),
            clock_origin_monotonic_ns: None,
            output_hashes: Vec::new(),
            server_metrics: None,
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
