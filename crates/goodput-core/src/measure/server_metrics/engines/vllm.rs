//! vLLM's series read into a [`Snapshot`] (V1 engine names, with the
//! names older builds used as fallbacks).

use super::scope::Scope;
use super::snapshot::Snapshot;
use crate::measure::server_metrics::parse::Sample;

/// vLLM's accepted tokens by draft position, summed over engines.
fn by_position(s: &Scope) -> Vec<(u32, f64)> {
    const NAME: &str = "vllm:spec_decode_num_accepted_tokens_per_pos_total";
    let mut positions: Vec<u32> = (s.samples.iter())
        .filter(|x| x.name == NAME)
        .filter_map(|x| x.label("position")?.parse().ok())
        .collect();
    positions.sort_unstable();
    positions.dedup();
    (positions.into_iter())
        .filter_map(|p| {
            let at = p.to_string();
            Some((
                p,
                s.sum_where(&[NAME], |x| x.label("position") == Some(&at))?,
            ))
        })
        .collect()
}

/// vLLM's figures in one scrape (the model filter already applied).
pub(super) fn read(s: &Scope) -> Snapshot {
    let finished_ok = |x: &Sample| !matches!(x.label("finished_reason"), Some("abort" | "error"));
    let aborted = |x: &Sample| x.label("finished_reason") == Some("abort");
    Snapshot {
        running: s.gauge_sum(&["vllm:num_requests_running"]),
        waiting: s.gauge_sum(&["vllm:num_requests_waiting"]),
        kv_usage: s.max(&["vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"]),
        preemptions: s.sum(&["vllm:num_preemptions_total"]),
        prefix_queries: s.sum(&[
            "vllm:prefix_cache_queries_total",
            "vllm:gpu_prefix_cache_queries_total",
        ]),
        prefix_hits: s.sum(&[
            "vllm:prefix_cache_hits_total",
            "vllm:gpu_prefix_cache_hits_total",
        ]),
        prompt_tokens_cached: s.sum(&["vllm:prompt_tokens_cached_total"]),
        cache_hit_rate: s.max(&["vllm:gpu_prefix_cache_hit_rate"]),
        prompt_tokens: s.sum(&["vllm:prompt_tokens_total"]),
        generation_tokens: s.sum(&["vllm:generation_tokens_total"]),
        requests_finished: s.sum_where(&["vllm:request_success_total"], finished_ok),
        requests_aborted: s.sum_where(&["vllm:request_success_total"], aborted),
        spec_accepted_tokens: s.sum(&["vllm:spec_decode_num_accepted_tokens_total"]),
        spec_drafts: s.sum(&["vllm:spec_decode_num_drafts_total"]),
        spec_draft_tokens: s.sum(&["vllm:spec_decode_num_draft_tokens_total"]),
        spec_accepted_by_position: by_position(s),
        ttft: s.hist(&["vllm:time_to_first_token_seconds"]),
        queue_time: s.hist(&["vllm:request_queue_time_seconds"]),
        tpot: s.hist(&["vllm:request_time_per_output_token_seconds"]),
        // The old name held the same per-step samples before 0.11 renamed it.
        itl: s.hist(&[
            "vllm:inter_token_latency_seconds",
            "vllm:time_per_output_token_seconds",
        ]),
        e2e: s.hist(&["vllm:e2e_request_latency_seconds"]),
        ..Snapshot::default()
    }
}
