//! The server's own metrics in the console summary (`--server-metrics`).

use std::fmt::Write;

use super::layout::{line, num, rule};

/// What the server's own metrics said over the window, beside the client's
/// view: every figure its engine exposes, and no line for one it does not.
pub(super) fn server_section(out: &mut String, sm: &crate::measure::server_metrics::ServerMetrics) {
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
    if let Some(sd) = &s.spec_decode {
        spec_decode_lines(out, sd);
    }
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

/// Speculative decoding over the window: the acceptance rate, the mean
/// acceptance length and the acceptance by draft position.
fn spec_decode_lines(
    out: &mut String,
    sd: &crate::measure::server_metrics::results::SpecDecodeSummary,
) {
    if let Some(r) = sd.acceptance_rate {
        let of = match (sd.accepted_tokens, sd.draft_tokens) {
            (Some(a), Some(d)) => format!(" ({a:.0} of {d:.0} draft tokens)"),
            _ => String::new(),
        };
        line(
            out,
            "Spec decoding acceptance rate:",
            format!("{}{of}", server_percent(r)),
        );
    }
    if let Some(l) = sd.mean_acceptance_length {
        line(
            out,
            "Mean acceptance length (tokens a step):",
            format!("{l:.2} (the bonus token included)"),
        );
    }
    if !sd.acceptance_by_position.is_empty() {
        let by: Vec<String> = (sd.acceptance_by_position.iter())
            .map(|r| format!("{r:.3}"))
            .collect();
        line(out, "Acceptance by draft position:", by.join(", "));
    }
}

/// What the GPUs drew over the window (`--gpu-metrics`, or the
/// simulator's exporter): energy and where it came from, power, tokens per
/// joule, and the GPUs' load.
pub(super) fn gpu_section(out: &mut String, g: &crate::measure::gpu::GpuMetrics) {
    rule(out, "GPUs (DCGM)", '-');
    let Some(s) = &g.summary else {
        for n in &g.notes {
            let _ = writeln!(out, "{n}");
        }
        return;
    };
    let models: Vec<&str> = (s.per_gpu.iter())
        .filter_map(|w| w.id.model.as_deref())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    line(out, "GPUs:", format!("{} {}", s.gpus, models.join(", ")));
    if let Some(e) = s.energy_j {
        let from = s.energy_from.map_or("-", |f| f.words());
        line(
            out,
            "Energy (J):",
            format!("{} over {:.1} s ({from})", num(e), s.window_s),
        );
    }
    line(
        out,
        "Mean / peak power (W):",
        server_pair(s.mean_power_w, s.peak_power_w, num),
    );
    if let Some(t) = s.output_tokens_per_joule {
        line(
            out,
            "Output tokens per joule (measured):",
            format!("{t:.3}"),
        );
    }
    if s.joules_per_request.is_some() || s.joules_per_output_token.is_some() {
        line(
            out,
            "Joules per request / output token:",
            server_pair(s.joules_per_request, s.joules_per_output_token, |j| {
                format!("{j:.4}")
            }),
        );
    }
    if let Some(u) = s.mean_util_pct {
        line(out, "Mean GPU utilisation (%):", format!("{u:.1}"));
    }
    if let Some(m) = s.peak_fb_used_mib {
        line(out, "Peak memory used a GPU (MiB):", format!("{m:.0}"));
    }
    if let Some(c) = s.mean_sm_clock_mhz {
        line(out, "Mean SM clock (MHz):", format!("{c:.0}"));
    }
    if g.failed_scrapes > 0 {
        let _ = writeln!(
            out,
            "{} of {} rounds of GPU scrapes failed: {}",
            g.failed_scrapes,
            g.scrapes,
            g.last_error.as_deref().unwrap_or("")
        );
    }
    for n in &g.notes {
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
fn server_latency_lines(out: &mut String, s: &crate::measure::server_metrics::ServerSummary) {
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
            format!(
                "{} / {} (interpolated in the server's histogram buckets: as coarse as they are; the client's percentiles above are exact)",
                opt(h.p50),
                opt(h.p99)
            ),
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
fn server_load_lines(out: &mut String, s: &crate::measure::server_metrics::ServerSummary) {
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
fn server_token_lines(out: &mut String, s: &crate::measure::server_metrics::ServerSummary) {
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
