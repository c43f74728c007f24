//! What a run keeps of the server's metrics: the time series, the summary
//! of the measured window (`summarise`), the notes its figures need, and
//! the client's figures set beside the server's.

use serde::{Deserialize, Serialize};

use super::engines::{self, Engine, Snapshot};

/// One point of the server's time series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerSample {
    /// Seconds since the measured phase started (negative: warm-up).
    pub t_s: f64,
    pub running: Option<f64>,
    pub waiting: Option<f64>,
    /// KV-cache use, 0..1.
    pub kv_usage: Option<f64>,
    /// Preemptions since the window started.
    pub preemptions: Option<f64>,
    /// Tokens the server generated per second since the previous sample.
    pub generation_tokens_per_s: Option<f64>,
}

/// The server's figures over the measured window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerSummary {
    pub window_s: f64,
    pub peak_kv_usage: Option<f64>,
    pub mean_kv_usage: Option<f64>,
    pub peak_running: Option<f64>,
    pub mean_running: Option<f64>,
    pub peak_waiting: Option<f64>,
    pub mean_waiting: Option<f64>,
    pub preemptions: Option<f64>,
    pub prefix_cache_queries: Option<f64>,
    pub prefix_cache_hits: Option<f64>,
    /// Hits over queries in the window; or the engine's hit-rate gauge at
    /// the end where it has no counters (SGLang's older builds).
    pub prefix_cache_hit_share: Option<f64>,
    pub prompt_tokens: Option<f64>,
    pub generation_tokens: Option<f64>,
    pub requests_finished: Option<f64>,
    /// The server's own latency histograms over the window: mean (exact,
    /// from the sums) and median / p99 (interpolated inside buckets, as
    /// Prometheus' `histogram_quantile`: as coarse as the buckets).
    pub ttft_ms: Option<HistSummary>,
    pub queue_time_ms: Option<HistSummary>,
    pub tpot_ms: Option<HistSummary>,
    pub itl_ms: Option<HistSummary>,
    pub e2e_ms: Option<HistSummary>,
    /// The client's mean TTFT over the same requests (filled by the run).
    pub client_mean_ttft_ms: Option<f64>,
    /// Client minus server mean TTFT: time outside the engine's clock.
    pub ttft_gap_ms: Option<f64>,
    /// Prompt tokens served from the prefix cache, each request counted
    /// once (vLLM's `prompt_tokens_cached`, SGLang's `cached_tokens`); over
    /// `prompt_tokens` it is the hit share.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens_cached: Option<f64>,
    /// llama.cpp: seconds its slots spent evaluating prompts, summed over
    /// slots (two slots in one decode each count its whole time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_seconds: Option<f64>,
    /// llama.cpp: seconds its slots spent generating, summed over slots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation_seconds: Option<f64>,
    /// llama.cpp: prompt tokens evaluated per second of a slot's prompt
    /// time: one slot's prefill speed, not the server's throughput (and
    /// without the tokens reused from the cache, which cost no time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens_per_slot_s: Option<f64>,
    /// llama.cpp: tokens generated per second of a slot's generation time:
    /// one stream's decode speed, not the server's throughput.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation_tokens_per_slot_s: Option<f64>,
    /// llama.cpp: `llama_decode()` calls in the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decode_calls: Option<f64>,
    /// llama.cpp: the mean number of busy slots per decode call in the
    /// window: how many requests one batch carried.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busy_slots_per_decode: Option<f64>,
    /// Speculative decoding over the window, where the server exposes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_decode: Option<SpecDecodeSummary>,
}

/// Speculative decoding as the server counted it over the window
/// (docs/metrics.md, "Speculative decoding").
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SpecDecodeSummary {
    /// `counters` (vLLM: the window's drafts and tokens), `verify_calls`
    /// (SGLang's verifying steps over the window, its rate a gauge) or
    /// `gauges` (SGLang: its scheduler's recent rates at the window's end).
    pub from: String,
    /// Drafts proposed in the window (one a decoding sequence a step).
    pub drafts: Option<f64>,
    /// Draft tokens proposed.
    pub draft_tokens: Option<f64>,
    /// Draft tokens accepted.
    pub accepted_tokens: Option<f64>,
    /// Accepted over proposed draft tokens.
    pub acceptance_rate: Option<f64>,
    /// Tokens a verifying step emitted for a sequence, the bonus token
    /// included: 1 + accepted / drafts.
    pub mean_acceptance_length: Option<f64>,
    /// The share of drafts whose token at each position (from 0) was
    /// accepted.
    pub acceptance_by_position: Vec<f64>,
}

/// The window's speculative decoding: vLLM's counters, else SGLang's
/// verifying steps, else its gauges.
fn spec_decode(d: &Snapshot) -> Option<SpecDecodeSummary> {
    let per =
        |n: Option<f64>, over: Option<f64>| n.zip(over.filter(|s| *s > 0.0)).map(|(n, s)| n / s);
    if d.spec_drafts.is_some() || d.spec_draft_tokens.is_some() {
        return Some(SpecDecodeSummary {
            from: "counters".into(),
            drafts: d.spec_drafts,
            draft_tokens: d.spec_draft_tokens,
            accepted_tokens: d.spec_accepted_tokens,
            acceptance_rate: per(d.spec_accepted_tokens, d.spec_draft_tokens),
            mean_acceptance_length: per(d.spec_accepted_tokens, d.spec_drafts).map(|a| 1.0 + a),
            acceptance_by_position: (d.spec_accepted_by_position.iter())
                .filter_map(|(_, v)| per(Some(*v), d.spec_drafts))
                .collect(),
        });
    }
    // SGLang: each request's first token is its prefill's, every other
    // one a verifying step's (accepted drafts and the bonus token).
    let verified = d
        .generation_tokens
        .zip(d.requests_finished)
        .map(|(g, n)| g - n);
    if let Some(length) = per(verified, d.spec_verify_calls) {
        return Some(SpecDecodeSummary {
            from: "verify_calls".into(),
            acceptance_rate: d.spec_accept_rate_gauge,
            mean_acceptance_length: Some(length),
            ..SpecDecodeSummary::default()
        });
    }
    // SGLang serves its gauges at 0 when it does not speculate.
    let length = d.spec_accept_length_gauge.filter(|l| *l > 0.0);
    length.is_some().then(|| SpecDecodeSummary {
        from: "gauges".into(),
        acceptance_rate: d.spec_accept_rate_gauge,
        mean_acceptance_length: length,
        ..SpecDecodeSummary::default()
    })
}

/// A server histogram over the window, in ms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistSummary {
    pub count: f64,
    pub mean: Option<f64>,
    pub p50: Option<f64>,
    pub p99: Option<f64>,
}

fn hist_summary(h: &Option<engines::Hist>) -> Option<HistSummary> {
    let h = h.as_ref().filter(|h| h.count > 0.0)?;
    Some(HistSummary {
        count: h.count,
        mean: h.mean().map(|s| s * 1e3),
        p50: h.quantile(0.5).map(|s| s * 1e3),
        p99: h.quantile(0.99).map(|s| s * 1e3),
    })
}

/// What was scraped during one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerMetrics {
    pub url: String,
    pub engine: Option<Engine>,
    pub interval_s: f64,
    pub scrapes: u64,
    pub failed_scrapes: u64,
    /// The last scrape error, if any.
    pub last_error: Option<String>,
    /// None when there was no window (no baseline, or the server restarted).
    pub summary: Option<ServerSummary>,
    /// What the figures need said: how the scrape was read (a model filter
    /// that matched nothing, a series left out), what the window held
    /// (aborts, speculative decoding), where a figure is weaker than it
    /// looks.
    #[serde(default)]
    pub notes: Vec<String>,
    pub series: Vec<ServerSample>,
}

fn max_opt(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, y) => x.or(y),
    }
}

/// The window `d`, the time series and the window's length as the summary,
/// with the notes its figures need.
pub(super) fn summarise(
    d: &Snapshot,
    series: &[ServerSample],
    window_s: f64,
) -> (ServerSummary, Vec<String>) {
    let window: Vec<&ServerSample> = series.iter().filter(|p| p.t_s >= 0.0).collect();
    let mean = |f: &dyn Fn(&ServerSample) -> Option<f64>| {
        let v: Vec<f64> = window.iter().filter_map(|p| f(p)).collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    };
    let peak = |f: &dyn Fn(&ServerSample) -> Option<f64>| {
        window.iter().fold(None, |m, p| max_opt(m, f(p)))
    };
    let per =
        |n: Option<f64>, over: Option<f64>| n.zip(over.filter(|s| *s > 0.0)).map(|(n, s)| n / s);
    let (hit_share, hit_note) = engines::prefix_hit_share(d);
    let mut notes: Vec<String> = hit_note.into_iter().collect();
    notes.extend(engines::window_notes(d));
    let summary = ServerSummary {
        window_s,
        peak_kv_usage: peak(&|p| p.kv_usage),
        mean_kv_usage: mean(&|p| p.kv_usage),
        peak_running: peak(&|p| p.running),
        mean_running: mean(&|p| p.running),
        peak_waiting: peak(&|p| p.waiting),
        mean_waiting: mean(&|p| p.waiting),
        preemptions: d.preemptions,
        prefix_cache_queries: d.prefix_queries,
        prefix_cache_hits: d.prefix_hits,
        prefix_cache_hit_share: hit_share,
        prompt_tokens: d.prompt_tokens,
        generation_tokens: d.generation_tokens,
        requests_finished: d.requests_finished,
        ttft_ms: hist_summary(&d.ttft),
        queue_time_ms: hist_summary(&d.queue_time),
        tpot_ms: hist_summary(&d.tpot),
        itl_ms: hist_summary(&d.itl),
        e2e_ms: hist_summary(&d.e2e),
        client_mean_ttft_ms: None,
        ttft_gap_ms: None,
        prompt_tokens_cached: d.prompt_tokens_cached,
        prompt_seconds: d.prompt_seconds,
        generation_seconds: d.generation_seconds,
        prompt_tokens_per_slot_s: per(
            d.prompt_tokens_evaluated.or(d.prompt_tokens),
            d.prompt_seconds,
        ),
        generation_tokens_per_slot_s: per(d.generation_tokens, d.generation_seconds),
        decode_calls: d.decode_calls,
        busy_slots_per_decode: per(d.busy_slot_decodes, d.decode_calls),
        spec_decode: spec_decode(d),
    };
    let from = summary.spec_decode.as_ref().map(|s| s.from.as_str());
    if from == Some("verify_calls") {
        notes.push("the mean acceptance length is SGLang's over the window: (generated tokens − finished requests) / sglang:spec_verify_calls_total, each request's first token its prefill's; the acceptance rate is its sglang:spec_accept_rate gauge at the window's end (its last logging interval; builds before April 2026 count the bonus token as accepted, so the rate reads high)".into());
    }
    if from == Some("gauges") {
        notes.push("the speculative-decoding acceptance is SGLang's gauges at the window's end (sglang:spec_accept_rate, sglang:spec_accept_length): the rates of its scheduler's last logging interval, not of the whole window (builds before April 2026 count the bonus token in the rate as accepted, so it reads high)".into());
    }
    (summary, notes)
}

impl ServerMetrics {
    /// Put the client's mean TTFT beside the server's; `completed`: the
    /// client's completed measured requests, to say when the two windows
    /// did not hold the same requests.
    pub fn set_client_ttft(&mut self, client_mean_ttft_ms: Option<f64>, completed: u64) {
        if let Some(s) = self.summary.as_mut() {
            // The server's TTFT count is the one aligned with the measured
            // requests (observed at each first token).
            if let Some(n) = s
                .ttft_ms
                .as_ref()
                .map(|h| h.count)
                .filter(|n| (n - completed as f64).abs() >= 0.5)
            {
                self.notes.push(format!(
                    "the server observed {n:.0} first tokens in the window and the client measured {completed} requests (warm-up requests whose first token came after the first measured send, failed requests, or another client's): the TTFT comparison is approximate"
                ));
            }
            if let Some(n) = s
                .requests_finished
                .filter(|n| (n - completed as f64).abs() >= 0.5)
            {
                self.notes.push(format!(
                    "the server finished {n:.0} requests in the window and the client measured {completed}: its E2EL and token counts include warm-up requests still running when the measured phase began (--warmup 0 makes them match)"
                ));
            }
            s.client_mean_ttft_ms = client_mean_ttft_ms;
            s.ttft_gap_ms = client_mean_ttft_ms
                .zip(s.ttft_ms.as_ref().and_then(|h| h.mean))
                .map(|(c, srv)| c - srv);
        }
    }
}

impl ServerMetrics {
    /// Compare the server's generated tokens over the window with the
    /// output tokens the client counted on its completed requests; where
    /// the server has no finished-requests counter to say so (llama.cpp),
    /// a gap above 1 % is said: warm-up answers still running when the
    /// measured phase began, or failed requests' partial answers.
    pub fn set_client_output_tokens(&mut self, client: u64) {
        let Some(s) = self.summary.as_ref() else {
            return;
        };
        let (Some(server), None) = (s.generation_tokens, s.requests_finished) else {
            return;
        };
        let c = client as f64;
        if (server - c).abs() > 0.01 * c.max(1.0) {
            self.notes.push(format!(
                "the server generated {server:.0} tokens in the window and the client counted {client} on its completed requests: the server's figure includes warm-up answers still running when the measured phase began and failed requests' partial answers (--warmup 0 makes them match)"
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ttft_gap_is_the_client_minus_the_server_and_a_count_mismatch_is_said() {
        let summary = |count: f64| ServerSummary {
            ttft_ms: Some(HistSummary {
                count,
                mean: Some(100.0),
                p50: None,
                p99: None,
            }),
            ..ServerSummary::default()
        };
        let mut m = ServerMetrics {
            url: "u".into(),
            engine: Some(Engine::Vllm),
            interval_s: 1.0,
            scrapes: 2,
            failed_scrapes: 0,
            last_error: None,
            summary: Some(summary(300.0)),
            notes: Vec::new(),
            series: Vec::new(),
        };
        m.set_client_ttft(Some(104.5), 300);
        let s = m.summary.as_ref().unwrap();
        assert_eq!(s.ttft_gap_ms, Some(4.5));
        assert!(m.notes.is_empty());
        m.summary = Some(summary(308.0));
        m.set_client_ttft(Some(104.5), 300);
        assert!(m.notes[0].contains("308 first tokens"), "{:?}", m.notes);
        // Warm-up requests that finish in the window are in the server's E2EL and counts.
        m.notes.clear();
        m.summary = Some(ServerSummary {
            requests_finished: Some(309.0),
            ..summary(300.0)
        });
        m.set_client_ttft(Some(104.5), 300);
        assert_eq!(m.notes.len(), 1);
        assert!(
            m.notes[0].contains("finished 309 requests"),
            "{:?}",
            m.notes
        );
    }

    #[test]
    fn sglang_speculates_by_its_verify_counter_else_its_gauges_and_not_at_zero() {
        use super::super::fixtures;
        use super::super::parse::parse;
        let snap = |t: &str| engines::snapshot(&parse(t).samples, None);
        // 0.5.2 serves sglang:spec_accept_length 0 without speculation.
        let plain = snap(fixtures::SGLANG_V052_T1)
            .delta(&snap(fixtures::SGLANG_V052_T0))
            .unwrap();
        assert_eq!(plain.spec_accept_length_gauge, Some(0.0));
        assert_eq!(spec_decode(&plain), None);
        // 1,000 requests of 201 tokens over 80,000 verifying steps: 2.5
        // tokens a step after each one's prefill token.
        let window = Snapshot {
            generation_tokens: Some(201_000.0),
            requests_finished: Some(1_000.0),
            spec_verify_calls: Some(80_000.0),
            spec_accept_rate_gauge: Some(0.48),
            spec_accept_length_gauge: Some(2.6),
            ..plain.clone()
        };
        let sd = spec_decode(&window).unwrap();
        assert_eq!(sd.from, "verify_calls");
        assert_eq!(sd.mean_acceptance_length, Some(2.5));
        assert_eq!(sd.acceptance_rate, Some(0.48));
        let (_, notes) = summarise(&window, &[], 10.0);
        assert!(
            notes.iter().any(|n| n.contains("spec_verify_calls_total")),
            "{notes:?}"
        );
        let gauges = Snapshot {
            spec_verify_calls: None,
            ..window
        };
        let sd = spec_decode(&gauges).unwrap();
        assert_eq!(sd.from, "gauges");
        assert_eq!(sd.mean_acceptance_length, Some(2.6));
    }

    #[test]
    fn a_server_generating_more_than_the_client_counted_is_said() {
        let mut m = ServerMetrics {
            url: String::new(),
            engine: None,
            interval_s: 1.0,
            scrapes: 2,
            failed_scrapes: 0,
            last_error: None,
            summary: Some(ServerSummary {
                generation_tokens: Some(4872.0),
                ..Default::default()
            }),
            notes: Vec::new(),
            series: Vec::new(),
        };
        m.set_client_output_tokens(4850);
        assert!(m.notes.is_empty(), "within 1 %: {:?}", m.notes);
        m.set_client_output_tokens(4800);
        assert!(m.notes[0].contains("4872"), "{:?}", m.notes);
    }
}
