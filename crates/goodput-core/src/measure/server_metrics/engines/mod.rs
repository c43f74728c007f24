//! One scrape of an inference server's `/metrics`, read into a canonical
//! [`Snapshot`] whatever the engine calls things.
//!
//! The names below were read from each engine's own source (see the table);
//! they drift between releases, so each field lists every name it accepts,
//! newest first, and takes the first one the scrape has. It never adds an old
//! and a new name together: vLLM 0.9–0.10 serves both spellings of the
//! prefix-cache counters with the same values.
//!
//! | field | vLLM | SGLang | TGI | llama.cpp |
//! |---|---|---|---|---|
//! | running | `vllm:num_requests_running` | `sglang:num_running_reqs` | `tgi_batch_current_size` | `llamacpp:requests_processing` |
//! | waiting | `vllm:num_requests_waiting` | `sglang:num_queue_reqs` | `tgi_queue_size` | `llamacpp:requests_deferred` |
//! | kv_usage | `vllm:kv_cache_usage_perc`, `vllm:gpu_cache_usage_perc` | `sglang:token_usage` | — | `llamacpp:kv_cache_usage_ratio` (old builds) |
//! | preemptions | `vllm:num_preemptions_total` | `sglang:num_retracted_requests_total`, `sglang:total_retracted_reqs` (≤ 0.5.2: a gauge holding the running count) | — | — |
//! | prompt_tokens_cached | `vllm:prompt_tokens_cached_total` (recent builds) | `sglang:cached_tokens_total` | — | — |
//! | prefix_queries / prefix_hits | `vllm:prefix_cache_{queries,hits}_total`, `vllm:gpu_prefix_cache_{queries,hits}_total` | — | — | — |
//! | cache_hit_rate | `vllm:gpu_prefix_cache_hit_rate` (V0) | `sglang:cache_hit_rate` | — | — |
//! | prompt_tokens | `vllm:prompt_tokens_total` | `sglang:prompt_tokens_total` | sum of `tgi_request_input_length` | `llamacpp:prompt_tokens_total` (evaluated tokens only) |
//! | generation_tokens | `vllm:generation_tokens_total` | `sglang:generation_tokens_total` | sum of `tgi_request_generated_tokens` | `llamacpp:tokens_predicted_total` |
//! | requests_finished | `vllm:request_success_total` (not `abort`/`error`) | `sglang:num_requests_total` | `tgi_request_success` | — |
//! | requests_aborted | `vllm:request_success_total{finished_reason="abort"}` | `sglang:num_aborted_requests_total` | — | — |
//! | spec_accepted_tokens | `vllm:spec_decode_num_accepted_tokens_total` | — | — | — |
//! | ttft | `vllm:time_to_first_token_seconds` | `sglang:time_to_first_token_seconds` | — | — |
//! | queue_time | `vllm:request_queue_time_seconds` | `sglang:queue_time_seconds` | `tgi_request_queue_duration` | — |
//! | tpot (per request) | `vllm:request_time_per_output_token_seconds` | `sglang:request_time_per_output_token_seconds` (some builds) | `tgi_request_mean_time_per_token_duration` | — |
//! | itl (per token) | `vllm:inter_token_latency_seconds`, `vllm:time_per_output_token_seconds` (< 0.11) | `sglang:inter_token_latency_seconds` | — | — |
//! | e2e | `vllm:e2e_request_latency_seconds` | `sglang:e2e_request_latency_seconds` | `tgi_request_duration` | — |
//! | prompt_seconds / generation_seconds | — | — | — | `llamacpp:prompt_seconds_total` / `llamacpp:tokens_predicted_seconds_total` |
//! | decode_calls / busy_slot_decodes | — | — | — | `llamacpp:n_decode_total` / that times `llamacpp:n_busy_slots_per_decode` |
//!
//! Left out on purpose: SGLang's `sglang:time_per_output_token_seconds`
//! (builds up to 0.5.2) observed, at every streamed chunk, the request's
//! running mean so far (some builds: a request's whole latency, first token
//! included, over its tokens): neither one figure per token (an ITL) nor a
//! benchmark's TPOT, so it is not read, and a note says so. llama.cpp has
//! never served a cached-prompt-token counter: its `prompt_tokens_total`
//! counts only the tokens it evaluated, so no prefix-cache share can be
//! read from it. vLLM's prefix-cache query and hit counters count lookups,
//! not requests: a request the scheduler tried again was counted again
//! (until July 2026), so the hit share reads `vllm:prompt_tokens_cached_total`
//! over the prompt tokens (each request counted once, when its prefill is
//! done) and falls back on the lookups, with a note, only on builds without
//! it ([`prefix_hit_share`]).
//!
//! Sources: vLLM `vllm/v1/metrics/loggers.py` and `vllm/v1/metrics/stats.py`;
//! SGLang `python/sglang/srt/observability/metrics_collector.py` (formerly
//! `metrics/collector.py`), `managers/tokenizer_manager.py` and its
//! production-metrics page; TGI `router/src/server.rs` (names and bucket
//! layout); llama.cpp `tools/server/server-context.cpp` (`/metrics`) and the
//! server README.
//!
//! The model filter: vLLM and SGLang label every series with the served
//! model's name (`model_name`), and a run names the model it asks for. A
//! LoRA adapter or a second `--served-model-name` is not what the server
//! labels its series with (vLLM labels them all with the first served name),
//! so where no series of the engine's family carries the run's model, every
//! model's series are read and summed, and the snapshot says which models
//! it summed ([`select_model`]).
//!
//! Combining label sets: one scrape can hold several series of one metric
//! (vLLM data-parallel engines under `engine`, SGLang DP ranks under
//! `dp_rank`, vLLM's `finished_reason`, SGLang's `cache_source`, the
//! request's `priority` and custom labels on SGLang's request-side series).
//! Those are disjoint shares of the work, so counts, counters and histogram
//! buckets are summed over every label but `le`. SGLang's TP/PP/EP ranks
//! are not: with `--enable-metrics-for-all-schedulers` every rank of one
//! scheduler reports the same batch, so series that differ only in
//! [`REPLICA_LABELS`] are copies and the largest is taken, once. One
//! exception to summing: SGLang's scheduler writes its running and queued
//! request gauges as a total under `priority=""` with a per-priority
//! breakdown beside it, which is left out where the total is there
//! (`Scope::gauge_sum`); its request-side series (tokens, latencies) carry
//! each request's own priority and no total, and are summed. Fractions (KV
//! usage, a hit-rate gauge) are never summed: the largest is taken, the most
//! loaded engine being the one that limits the server.

mod engine;
mod hist;
mod llamacpp;
mod model;
mod scope;
mod sglang;
mod snapshot;
mod tgi;
mod vllm;

#[cfg(test)]
mod tests;

pub use engine::Engine;
pub use hist::Hist;
pub use model::select_model;
pub use snapshot::{prefix_hit_share, window_notes, Snapshot};

use super::parse::Sample;
use scope::Scope;

/// Reads one scrape. `model`: keep only series whose model label
/// ([`MODEL_LABELS`]) equals it, and series without one (TGI and llama.cpp
/// never label by model); see [`select_model`] for when none does.
pub fn snapshot(samples: &[Sample], model: Option<&str>) -> Snapshot {
    let engine = Engine::detect(samples);
    let (samples, fallback) = select_model(samples, engine, model);
    let scope = Scope { samples };
    let snap = match engine {
        Some(Engine::Vllm) => vllm::read(&scope),
        Some(Engine::Sglang) => sglang::read(&scope),
        Some(Engine::Tgi) => tgi::read(&scope),
        Some(Engine::LlamaCpp) => llamacpp::read(&scope),
        Some(Engine::Unknown) | None => Snapshot::default(),
    };
    let mut notes: Vec<String> = fallback.into_iter().collect();
    notes.extend(snap.notes.iter().cloned());
    Snapshot {
        engine,
        notes,
        ..snap
    }
}
