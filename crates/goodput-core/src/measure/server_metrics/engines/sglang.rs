//! SGLang's series read into a [`Snapshot`], the names of builds up to
//! 0.5.2 included, its running-mean TPOT histogram left out with a note.

use super::scope::Scope;
use super::snapshot::Snapshot;

/// SGLang's `sglang:time_per_output_token_seconds` (builds up to 0.5.2):
/// present, but not read.
const SGLANG_RUNNING_MEAN: &str = "sglang:time_per_output_token_seconds";

/// SGLang's figures in one scrape (the model filter already applied).
pub(super) fn read(s: &Scope) -> Snapshot {
    let mut notes = Vec::new();
    if s.has_hist(SGLANG_RUNNING_MEAN) {
        notes.push(format!(
            "SGLang's {SGLANG_RUNNING_MEAN} is left out: builds up to 0.5.2 observe a request's running mean at every streamed chunk (some, its whole latency over its tokens, first token included), which is neither a time per output token nor an inter-token latency"
        ));
    }
    Snapshot {
        running: s.gauge_sum(&["sglang:num_running_reqs"]),
        waiting: s.gauge_sum(&["sglang:num_queue_reqs"]),
        kv_usage: s.max(&["sglang:token_usage"]),
        // Up to 0.5.2 the running count was a gauge under another name.
        preemptions: s.sum(&[
            "sglang:num_retracted_requests_total",
            "sglang:total_retracted_reqs",
        ]),
        prompt_tokens_cached: s.sum(&["sglang:cached_tokens_total"]),
        cache_hit_rate: s.max(&["sglang:cache_hit_rate"]),
        prompt_tokens: s.sum(&["sglang:prompt_tokens_total"]),
        generation_tokens: s.sum(&["sglang:generation_tokens_total"]),
        requests_finished: s.sum(&["sglang:num_requests_total"]),
        requests_aborted: s.sum(&["sglang:num_aborted_requests_total"]),
        // Gauges of the scheduler's recent steps, averaged over DP ranks
        // by taking the largest (no window counters in the builds read).
        spec_accept_rate_gauge: s.max(&["sglang:spec_accept_rate"]),
        spec_accept_length_gauge: s.max(&["sglang:spec_accept_length"]),
        // Added to each finished request's verifying steps, as the
        // generated tokens are: the window's acceptance length.
        spec_verify_calls: s.sum(&["sglang:spec_verify_calls_total"]),
        ttft: s.hist(&["sglang:time_to_first_token_seconds"]),
        queue_time: s.hist(&["sglang:queue_time_seconds"]),
        tpot: s.hist(&["sglang:request_time_per_output_token_seconds"]),
        // Per token even when a step emits several: SGLang divides the gap
        // by the new tokens and observes it once for each.
        itl: s.hist(&["sglang:inter_token_latency_seconds"]),
        e2e: s.hist(&["sglang:e2e_request_latency_seconds"]),
        notes,
        ..Snapshot::default()
    }
}
