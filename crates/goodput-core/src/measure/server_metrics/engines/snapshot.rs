//! One scrape in engine-neutral terms ([`Snapshot`]), the window between
//! two of them, and what a window needs said: where its prefix-cache hit
//! share came from and what its latency figures hold.

use super::engine::Engine;
use super::hist::Hist;

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
    /// Drafts proposed by speculative decoding (counter, vLLM): one per
    /// decoding sequence per step.
    pub spec_drafts: Option<f64>,
    /// Draft tokens proposed (counter, vLLM).
    pub spec_draft_tokens: Option<f64>,
    /// Accepted tokens by 0-based draft position (counters, vLLM's
    /// `position` label), in position order; empty where not exposed.
    pub spec_accepted_by_position: Vec<(u32, f64)>,
    /// SGLang's acceptance gauges (`sglang:spec_accept_rate`,
    /// `sglang:spec_accept_length`): its scheduler's recent values, not a
    /// window's.
    pub spec_accept_rate_gauge: Option<f64>,
    /// See [`Snapshot::spec_accept_rate_gauge`].
    pub spec_accept_length_gauge: Option<f64>,
    /// SGLang's verifying steps of finished requests
    /// (`sglang:spec_verify_calls_total`, a counter since mid-2026).
    pub spec_verify_calls: Option<f64>,
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
            spec_drafts: counter(self.spec_drafts, earlier.spec_drafts),
            spec_draft_tokens: counter(self.spec_draft_tokens, earlier.spec_draft_tokens),
            spec_verify_calls: counter(self.spec_verify_calls, earlier.spec_verify_calls),
            spec_accepted_by_position: (self.spec_accepted_by_position.iter())
                .map(|&(p, now)| {
                    let before = (earlier.spec_accepted_by_position.iter())
                        .find(|(q, _)| *q == p)
                        .map(|(_, v)| *v);
                    (p, counter(Some(now), before).unwrap_or(0.0))
                })
                .collect(),
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
