//! `/metrics`: the live state in Prometheus text format, with vLLM's metric
//! names (both the V1 names and the older ones scrapers still use), so that
//! features that scrape a server can be tested against the simulator.
//! Simulator-only series are prefixed `goodput_sim_`.

use std::fmt::Write;

use crate::engine::EngineCounters;
use crate::stats::{Histogram, LiveState, SimStats};

fn escape_label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

struct Out<'a> {
    buf: String,
    labels: &'a str,
}

impl Out<'_> {
    fn header(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.buf, "# HELP {name} {help}\n# TYPE {name} {kind}");
    }

    fn value(&mut self, name: &str, kind: &str, help: &str, v: f64) {
        self.header(name, kind, help);
        let _ = writeln!(self.buf, "{name}{{{}}} {v}", self.labels);
    }

    fn histogram(&mut self, name: &str, help: &str, h: &Histogram) {
        self.header(name, "histogram", help);
        let mut cumulative = 0;
        for (i, b) in h.bounds.iter().enumerate() {
            cumulative += h.counts[i];
            let _ = writeln!(
                self.buf,
                "{name}_bucket{{{},le=\"{b}\"}} {cumulative}",
                self.labels
            );
        }
        let _ = writeln!(
            self.buf,
            "{name}_bucket{{{},le=\"+Inf\"}} {}\n{name}_sum{{{}}} {}\n{name}_count{{{}}} {}",
            self.labels, h.count, self.labels, h.sum, self.labels, h.count
        );
    }
}

/// Render the state (and its summary, [`LiveState::summary`]) for the
/// served model `model_name`: vLLM's series first, then the simulator's own.
pub fn render(state: &LiveState, summary: &SimStats, model_name: &str) -> String {
    let labels = format!("model_name=\"{}\"", escape_label(model_name));
    let mut o = Out {
        buf: String::with_capacity(16 * 1024),
        labels: &labels,
    };
    scheduler_gauges(&mut o, state);
    token_counters(&mut o, &state.counters);
    spec_counters(&mut o, &state.counters, state.spec_tokens);
    finished_requests(&mut o, state);
    latency_histograms(&mut o, state);
    engine_steps(&mut o, state);
    engine_summary(&mut o, summary);
    o.buf
}

/// vLLM's `vllm:cache_config_info`: an info gauge (value 1) whose labels
/// describe the KV cache, as vLLM exports its `CacheConfig`; `goodput
/// calibrate` reads the capacity from it, as it does from vLLM.
pub fn cache_config_info(
    num_gpu_blocks: usize,
    block_size: usize,
    gpu_memory_utilization: f64,
    enable_prefix_caching: bool,
) -> String {
    format!(
        "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n\
         # TYPE vllm:cache_config_info gauge\n\
         vllm:cache_config_info{{block_size=\"{block_size}\",cache_dtype=\"auto\",enable_prefix_caching=\"{enable_prefix_caching}\",gpu_memory_utilization=\"{gpu_memory_utilization}\",num_gpu_blocks=\"{num_gpu_blocks}\"}} 1.0\n"
    )
}

/// vLLM's scheduler gauges: requests running and waiting, KV-cache usage
/// (under its V1 and its older name).
fn scheduler_gauges(o: &mut Out, state: &LiveState) {
    o.value(
        "vllm:num_requests_running",
        "gauge",
        "Number of requests in model execution batches.",
        state.running as f64,
    );
    o.value(
        "vllm:num_requests_waiting",
        "gauge",
        "Number of requests waiting to be processed.",
        state.waiting as f64,
    );
    o.value(
        "vllm:kv_cache_usage_perc",
        "gauge",
        "KV-cache usage. 1 means 100 percent usage.",
        state.kv_usage,
    );
    o.value(
        "vllm:gpu_cache_usage_perc",
        "gauge",
        "GPU KV-cache usage. 1 means 100 percent usage (older name).",
        state.kv_usage,
    );
}

/// vLLM's speculative-decoding counters (`vllm/v1/spec_decode/metrics.py`),
/// served, as vLLM serves them, only when speculation is on: drafts, draft
/// tokens, accepted tokens, and accepted tokens by draft position (0-based
/// `position` label).
fn spec_counters(o: &mut Out, c: &EngineCounters, spec_tokens: u32) {
    if spec_tokens == 0 {
        return;
    }
    for (name, help, v) in [
        (
            "vllm:spec_decode_num_drafts_total",
            "Number of spec decoding drafts.",
            c.spec_drafts,
        ),
        (
            "vllm:spec_decode_num_draft_tokens_total",
            "Number of draft tokens.",
            c.spec_draft_tokens,
        ),
        (
            "vllm:spec_decode_num_accepted_tokens_total",
            "Number of accepted tokens.",
            c.spec_accepted_tokens,
        ),
    ] {
        o.value(name, "counter", help, v as f64);
    }
    let name = "vllm:spec_decode_num_accepted_tokens_per_pos_total";
    o.header(name, "counter", "Accepted tokens per draft position.");
    for (pos, v) in c.spec_accepted_per_pos[..spec_tokens as usize]
        .iter()
        .enumerate()
    {
        let _ = writeln!(o.buf, "{name}{{{},position=\"{pos}\"}} {v}", o.labels);
    }
}

/// vLLM's counters: preemptions, prefix-cache lookups (V1 and older names),
/// prompt, cached-prompt and generated tokens.
fn token_counters(o: &mut Out, c: &EngineCounters) {
    for (name, help, v) in [
        (
            "vllm:num_preemptions_total",
            "Cumulative number of preemptions from the engine.",
            c.preemptions,
        ),
        (
            "vllm:prefix_cache_queries_total",
            "Prefix cache queries, in terms of number of queried tokens.",
            c.prefix_cache_queries,
        ),
        (
            "vllm:prefix_cache_hits_total",
            "Prefix cache hits, in terms of number of cached tokens.",
            c.prefix_cache_hits,
        ),
        (
            "vllm:gpu_prefix_cache_queries_total",
            "GPU prefix cache queries, in terms of number of queried tokens (older name).",
            c.prefix_cache_queries,
        ),
        (
            "vllm:gpu_prefix_cache_hits_total",
            "GPU prefix cache hits, in terms of number of cached tokens (older name).",
            c.prefix_cache_hits,
        ),
        (
            "vllm:prompt_tokens_total",
            "Number of prefill tokens processed.",
            c.prompt_tokens,
        ),
        (
            // The simulator schedules each request's prompt once, so its
            // cached tokens are its prefix-cache hits.
            "vllm:prompt_tokens_cached_total",
            "Number of cached prompt tokens (local prefix cache hits).",
            c.prefix_cache_hits,
        ),
        (
            "vllm:generation_tokens_total",
            "Number of generation tokens processed.",
            c.generation_tokens,
        ),
    ] {
        o.value(name, "counter", help, v as f64);
    }
}

/// vLLM's finished requests by reason (`stop`, `length`, `abort`).
fn finished_requests(o: &mut Out, state: &LiveState) {
    o.header(
        "vllm:request_success_total",
        "counter",
        "Count of successfully processed requests.",
    );
    for (reason, v) in [
        ("stop", state.finished_stop),
        ("length", state.finished_length),
        ("abort", state.finished_abort),
    ] {
        let _ = writeln!(
            o.buf,
            "vllm:request_success_total{{{},finished_reason=\"{reason}\"}} {v}",
            o.labels
        );
    }
}

/// vLLM's latency histograms: TTFT, inter-token latency (under its V1 and
/// its pre-0.11 name) and end-to-end latency.
fn latency_histograms(o: &mut Out, state: &LiveState) {
    o.histogram(
        "vllm:time_to_first_token_seconds",
        "Histogram of time to first token in seconds.",
        &state.ttft,
    );
    o.histogram(
        "vllm:time_per_output_token_seconds",
        "Histogram of time per output token in seconds.",
        &state.inter_token,
    );
    o.histogram(
        "vllm:inter_token_latency_seconds",
        "Histogram of inter-token latency in seconds.",
        &state.inter_token,
    );
    o.histogram(
        "vllm:e2e_request_latency_seconds",
        "Histogram of end to end request latency in seconds.",
        &state.e2e,
    );
}

/// The simulator's engine steps: how many, their modelled durations, and
/// how late each started.
fn engine_steps(o: &mut Out, state: &LiveState) {
    o.value(
        "goodput_sim_steps_total",
        "counter",
        "Engine steps run.",
        state.counters.steps as f64,
    );
    o.histogram(
        "goodput_sim_step_duration_seconds",
        "Modelled duration of each engine step in seconds.",
        &state.step_duration,
    );
    o.histogram(
        "goodput_sim_step_lateness_seconds",
        "How long after its deadline each engine step started, in seconds.",
        &state.lateness,
    );
}

/// The simulator's summary gauges: step lateness percentiles, the engine
/// thread's work time and its real-time priority.
fn engine_summary(o: &mut Out, summary: &SimStats) {
    for (name, help, v) in [
        (
            "goodput_sim_step_lateness_mean_seconds",
            "Mean step lateness, seconds.",
            summary.lateness_mean_s,
        ),
        (
            "goodput_sim_step_lateness_p50_seconds",
            "Median step lateness, seconds (exact to 1 microsecond).",
            summary.lateness_p50_s,
        ),
        (
            "goodput_sim_step_lateness_p99_seconds",
            "99th percentile of step lateness, seconds (exact to 1 microsecond).",
            summary.lateness_p99_s,
        ),
        (
            "goodput_sim_step_lateness_p999_seconds",
            "99.9th percentile of step lateness, seconds (exact to 1 microsecond).",
            summary.lateness_p999_s,
        ),
        (
            "goodput_sim_step_lateness_max_seconds",
            "Largest step lateness, seconds.",
            summary.lateness_max_s,
        ),
        (
            "goodput_sim_engine_work_max_seconds",
            "Longest wall time the engine thread spent on one step's work (wake-up to next sleep).",
            summary.engine_work_max_s,
        ),
    ] {
        o.value(name, "gauge", help, v);
    }
    o.value(
        "goodput_sim_engine_work_seconds_total",
        "counter",
        "Wall time the engine thread spent working between its sleeps.",
        summary.engine_work_s,
    );
    o.value(
        "goodput_sim_engine_realtime_priority",
        "gauge",
        "SCHED_FIFO priority of the engine thread (0: a normal thread).",
        summary.engine_priority.fifo.map_or(0.0, f64::from),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_vllm_names_and_cumulative_buckets() {
        let mut s = LiveState {
            running: 3,
            ..LiveState::default()
        };
        s.counters.preemptions = 2;
        s.ttft.observe(0.003);
        s.ttft.observe(0.5);
        s.lateness_exact.record_ns(1_200_000);
        let text = render(&s, &s.summary(), "m\"x");
        assert!(text.contains("vllm:num_requests_running{model_name=\"m\\\"x\"} 3"));
        assert!(text.contains("vllm:num_preemptions_total{model_name=\"m\\\"x\"} 2"));
        assert!(text.contains(
            "vllm:time_to_first_token_seconds_bucket{model_name=\"m\\\"x\",le=\"0.005\"} 1"
        ));
        assert!(text.contains(
            "vllm:time_to_first_token_seconds_bucket{model_name=\"m\\\"x\",le=\"+Inf\"} 2"
        ));
        assert!(text.contains("# TYPE goodput_sim_step_lateness_seconds histogram"));
        assert!(
            text.contains("goodput_sim_step_lateness_p99_seconds{model_name=\"m\\\"x\"} 0.0012")
        );
    }
}
