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
//! | preemptions | `vllm:num_preemptions_total` | `sglang:num_retracted_requests_total` | — | — |
//! | prefix_queries / prefix_hits | `vllm:prefix_cache_{queries,hits}_total`, `vllm:gpu_prefix_cache_{queries,hits}_total` | `sglang:prompt_tokens_total` / `sglang:cached_tokens_total` | — | prompt + cached / `llamacpp:prompt_tokens_cached_total` (where served) |
//! | cache_hit_rate | `vllm:gpu_prefix_cache_hit_rate` (V0) | `sglang:cache_hit_rate` | — | — |
//! | prompt_tokens | `vllm:prompt_tokens_total` | `sglang:prompt_tokens_total` | sum of `tgi_request_input_length` | `llamacpp:prompt_tokens_total` (+ cached) |
//! | generation_tokens | `vllm:generation_tokens_total` | `sglang:generation_tokens_total` | sum of `tgi_request_generated_tokens` | `llamacpp:tokens_predicted_total` |
//! | requests_finished | `vllm:request_success_total` (not `abort`/`error`) | `sglang:num_requests_total` | `tgi_request_success` | — |
//! | ttft | `vllm:time_to_first_token_seconds` | `sglang:time_to_first_token_seconds` | — | — |
//! | queue_time | `vllm:request_queue_time_seconds` | `sglang:queue_time_seconds` | `tgi_request_queue_duration` | — |
//! | tpot (per request) | `vllm:request_time_per_output_token_seconds` | `sglang:request_time_per_output_token_seconds` (some newer builds) | `tgi_request_mean_time_per_token_duration` | — |
//! | itl (per token) | `vllm:inter_token_latency_seconds`, `vllm:time_per_output_token_seconds` | `sglang:inter_token_latency_seconds`, `sglang:time_per_output_token_seconds` | — | — |
//! | e2e | `vllm:e2e_request_latency_seconds` | `sglang:e2e_request_latency_seconds` | `tgi_request_duration` | — |
//! | prompt_seconds / generation_seconds | — | — | — | `llamacpp:prompt_seconds_total` / `llamacpp:tokens_predicted_seconds_total` |
//!
//! Sources: vLLM `vllm/v1/metrics/loggers.py` and `docs/design/metrics.md`;
//! SGLang `python/sglang/srt/metrics/collector.py` and its production-metrics
//! page; TGI `router/src/server.rs` (bucket layout) and
//! `docs/source/reference/metrics.md`; llama.cpp `tools/server/server.cpp` /
//! `server-task.cpp` (`to_metrics`) and the server README.
//!
//! Combining label sets: one scrape can hold several series of one metric
//! (vLLM data-parallel engines under `engine`, SGLang DP ranks under
//! `dp_rank`, vLLM's `finished_reason`, SGLang's `cache_source` and
//! `is_streaming`). Those are disjoint shares of the work, so counts,
//! counters and histogram buckets are summed. SGLang's TP/PP/EP ranks are
//! not: with `--enable-metrics-for-all-schedulers` every rank of one
//! scheduler reports the same batch, so series that differ only in
//! [`REPLICA_LABELS`] are copies and the largest is taken, once. SGLang's
//! per-priority breakdowns (`priority="<n>"`) repeat the total kept under
//! `priority=""` and are dropped. Fractions (KV usage, a hit-rate gauge) are
//! never summed: the largest is taken, the most loaded engine being the one
//! that limits the server.

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
    /// Prompt tokens looked up in the prefix cache (counter).
    pub prefix_queries: Option<f64>,
    /// Of those, tokens found in it (counter).
    pub prefix_hits: Option<f64>,
    /// A hit-rate gauge 0..1 for engines without the counters (max over
    /// engines). SGLang computes it per scheduling step, so it is the rate
    /// of the last step, not of a window: prefer the counters.
    pub cache_hit_rate: Option<f64>,
    /// Prompt tokens, cached ones included (counter).
    pub prompt_tokens: Option<f64>,
    /// Generated tokens (counter).
    pub generation_tokens: Option<f64>,
    /// Requests the engine finished normally (counter).
    pub requests_finished: Option<f64>,
    /// Time to first token per request.
    pub ttft: Option<Hist>,
    /// Time waiting before first scheduled, per request.
    pub queue_time: Option<Hist>,
    /// Each request's mean time per output token (one observation per
    /// request, as a benchmark's TPOT).
    pub tpot: Option<Hist>,
    /// Inter-token latency (one observation per token: weighted by tokens,
    /// so long answers dominate it).
    pub itl: Option<Hist>,
    /// Server-side end-to-end latency per request.
    pub e2e: Option<Hist>,
    /// llama.cpp only: seconds spent on prompts, summed over slots (counter).
    pub prompt_seconds: Option<f64>,
    /// llama.cpp only: seconds spent generating, summed over slots (counter).
    pub generation_seconds: Option<f64>,
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
            prompt_seconds: counter(self.prompt_seconds, earlier.prompt_seconds),
            generation_seconds: counter(self.generation_seconds, earlier.generation_seconds),
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
/// ([`MODEL_LABELS`]) equals it; series without such a label are kept, as
/// TGI and llama.cpp never label by model.
pub fn snapshot(samples: &[Sample], model: Option<&str>) -> Snapshot {
    let engine = Engine::detect(samples);
    let scope = Scope {
        samples: samples
            .iter()
            .filter(|s| {
                model.is_none_or(|m| {
                    MODEL_LABELS
                        .iter()
                        .all(|k| s.label(k).is_none_or(|v| v == m))
                })
            })
            // SGLang with priority scheduling writes each queue's total under
            // `priority=""` and a per-priority breakdown beside it; keeping
            // both would count every request twice.
            .filter(|s| s.label("priority").is_none_or(str::is_empty))
            .collect(),
    };
    let snap = match engine {
        Some(Engine::Vllm) => vllm(&scope),
        Some(Engine::Sglang) => sglang(&scope),
        Some(Engine::Tgi) => tgi(&scope),
        Some(Engine::LlamaCpp) => llamacpp(&scope),
        Some(Engine::Unknown) | None => Snapshot::default(),
    };
    Snapshot { engine, ..snap }
}

fn vllm(s: &Scope) -> Snapshot {
    let finished_ok = |x: &Sample| !matches!(x.label("finished_reason"), Some("abort" | "error"));
    Snapshot {
        running: s.sum(&["vllm:num_requests_running"]),
        waiting: s.sum(&["vllm:num_requests_waiting"]),
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
        cache_hit_rate: s.max(&["vllm:gpu_prefix_cache_hit_rate"]),
        prompt_tokens: s.sum(&["vllm:prompt_tokens_total"]),
        generation_tokens: s.sum(&["vllm:generation_tokens_total"]),
        requests_finished: s.sum_where(&["vllm:request_success_total"], finished_ok),
        ttft: s.hist(&["vllm:time_to_first_token_seconds"]),
        queue_time: s.hist(&["vllm:request_queue_time_seconds"]),
        tpot: s.hist(&["vllm:request_time_per_output_token_seconds"]),
        // The old name held the same per-token samples before 0.11 renamed it.
        itl: s.hist(&[
            "vllm:inter_token_latency_seconds",
            "vllm:time_per_output_token_seconds",
        ]),
        e2e: s.hist(&["vllm:e2e_request_latency_seconds"]),
        ..Snapshot::default()
    }
}

fn sglang(s: &Scope) -> Snapshot {
    let prefix_hits = s.sum(&["sglang:cached_tokens_total"]);
    let prompt_tokens = s.sum(&["sglang:prompt_tokens_total"]);
    Snapshot {
        running: s.sum(&["sglang:num_running_reqs"]),
        waiting: s.sum(&["sglang:num_queue_reqs"]),
        kv_usage: s.max(&["sglang:token_usage"]),
        preemptions: s.sum(&["sglang:num_retracted_requests_total"]),
        // Every prompt token is looked up in the radix cache; only meaningful
        // where the cached-token counter exists to pair with it.
        prefix_queries: prefix_hits.and(prompt_tokens),
        prefix_hits,
        cache_hit_rate: s.max(&["sglang:cache_hit_rate"]),
        prompt_tokens,
        generation_tokens: s.sum(&["sglang:generation_tokens_total"]),
        requests_finished: s.sum(&["sglang:num_requests_total"]),
        ttft: s.hist(&["sglang:time_to_first_token_seconds"]),
        queue_time: s.hist(&["sglang:queue_time_seconds"]),
        tpot: s.hist(&["sglang:request_time_per_output_token_seconds"]),
        itl: s.hist(&[
            "sglang:inter_token_latency_seconds",
            "sglang:time_per_output_token_seconds",
        ]),
        e2e: s.hist(&["sglang:e2e_request_latency_seconds"]),
        ..Snapshot::default()
    }
}

fn tgi(s: &Scope) -> Snapshot {
    // TGI counts tokens only in per-request histograms; their sums are
    // cumulative token totals.
    let hist_sum = |name: &str| s.hist(&[name]).map(|h| h.sum);
    Snapshot {
        running: s.sum(&["tgi_batch_current_size"]),
        waiting: s.sum(&["tgi_queue_size"]),
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

fn llamacpp(s: &Scope) -> Snapshot {
    // `prompt_tokens_total` counts only tokens actually evaluated; builds
    // that also count the ones reused from the cache let both be rebuilt.
    let computed = s.sum(&["llamacpp:prompt_tokens_total"]);
    let cached = s.sum(&["llamacpp:prompt_tokens_cached_total"]);
    let all = match (computed, cached) {
        (Some(p), Some(c)) => Some(p + c),
        (p, _) => p,
    };
    Snapshot {
        running: s.sum(&["llamacpp:requests_processing"]),
        waiting: s.sum(&["llamacpp:requests_deferred"]),
        kv_usage: s.max(&["llamacpp:kv_cache_usage_ratio"]),
        prefix_queries: cached.and(all),
        prefix_hits: cached,
        prompt_tokens: all,
        generation_tokens: s.sum(&["llamacpp:tokens_predicted_total"]),
        prompt_seconds: s.sum(&["llamacpp:prompt_seconds_total"]),
        generation_seconds: s.sum(&["llamacpp:tokens_predicted_seconds_total"]),
        ..Snapshot::default()
    }
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
        close(w.prefix_queries, 20_000.0);
        close(w.prefix_hits, 6_000.0);
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
    fn llamacpp_older_and_newer_builds() {
        // Before mid-2025 the server still reported KV usage.
        let old = "llamacpp:kv_cache_usage_ratio 0.25\nllamacpp:kv_cache_tokens 2048\n\
                   llamacpp:prompt_tokens_total 100\n";
        close(snap(old).kv_usage, 0.25);
        // Builds that count cached prompt tokens separately.
        let new = "llamacpp:prompt_tokens_total 700\nllamacpp:prompt_tokens_cached_total 300\n";
        let s = snap(new);
        close(s.prompt_tokens, 1000.0);
        close(s.prefix_queries, 1000.0);
        close(s.prefix_hits, 300.0);
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
        assert_eq!(snapshot(&samples, Some("c")).running, None);
        close(snapshot(&samples, Some("c")).waiting, 1.0);
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
        close(s.prefix_hits, 42.0);
        close(s.prefix_queries, 100.0);
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
}
