//! Hugging Face TGI's series read into a [`Snapshot`]: no TTFT, KV-cache
//! or prefix-cache series; token counts from its per-request histograms.

use super::scope::Scope;
use super::snapshot::Snapshot;

/// TGI's figures in one scrape.
pub(super) fn read(s: &Scope) -> Snapshot {
    // TGI counts tokens only in per-request histograms; their sums are
    // cumulative token totals.
    let hist_sum = |name: &str| s.hist(&[name]).map(|h| h.sum);
    Snapshot {
        running: s.gauge_sum(&["tgi_batch_current_size"]),
        waiting: s.gauge_sum(&["tgi_queue_size"]),
        prompt_tokens: hist_sum("tgi_request_input_length"),
        generation_tokens: hist_sum("tgi_request_generated_tokens"),
        requests_finished: s.sum(&["tgi_request_success", "tgi_request_success_total"]),
        queue_time: s.hist(&["tgi_request_queue_duration"]),
        // Inference time (prefill included) over all generated tokens: not
        // quite a benchmark's TPOT, which leaves the first token out. It
        // reads low-biased on long answers and high on short ones.
        tpot: s.hist(&["tgi_request_mean_time_per_token_duration"]),
        e2e: s.hist(&["tgi_request_duration"]),
        ..Snapshot::default()
    }
}
