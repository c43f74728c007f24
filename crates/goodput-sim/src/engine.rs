//! The simulated engine: iteration-level (continuous) batching over a paged
//! KV cache, as vLLM schedules it.
//!
//! Each [`Engine::step`] builds one batch under a token budget
//! (`max_num_batched_tokens`) and a sequence cap (`max_num_seqs`): every
//! running sequence first gets its next token (a decode, or the next chunk of
//! an unfinished prefill), then the rest of the budget admits waiting requests
//! first come, first served. A request is admitted when the blocks of its
//! prompt fit (after prefix-cache hits); output blocks are allocated as it
//! decodes, and when a decode needs a block and none is free the newest
//! running sequence is preempted and later recomputed from scratch.
//! The step's duration comes from the [`Roofline`]; its tokens are stamped
//! with the step's end time. The engine never reads a clock: the caller
//! passes the time in, which is what lets the same engine run in real time
//! and in virtual time, where it is exactly deterministic.

use std::collections::VecDeque;

mod mixes;
pub use mixes::{LoraLimits, SchedulingPolicy};

use crate::kv::{blocks_for, BlockId, BlockPool, IntMap, BLOCK_SIZE};
use crate::roofline::{BatchShape, Roofline, StepTime};

/// Identifies a request inside the engine.
pub type RequestId = u64;

/// A request as the engine sees it.
#[derive(Debug, Clone, Default)]
pub struct EngineRequest {
    /// Unique among the requests the engine holds.
    pub id: RequestId,
    /// Prompt length, tokens.
    pub prompt_tokens: usize,
    /// Hash chain of the prompt's full blocks ([`crate::kv::block_hashes`]);
    /// empty disables prefix caching for this request.
    pub block_hashes: Vec<u64>,
    /// Tokens to generate (at least 1).
    pub output_tokens: usize,
    /// Lower is served first under the priority policy (vLLM's `priority`).
    pub priority: i64,
    /// The LoRA adapter it runs with (an index among the served adapters);
    /// `None`: the base model.
    pub adapter: Option<u32>,
}

/// Scheduler limits.
#[derive(Debug, Clone)]
pub struct EngineLimits {
    /// Most sequences running at once (vLLM's `max_num_seqs`).
    pub max_num_seqs: usize,
    /// Token budget of one step (vLLM's `max_num_batched_tokens`).
    pub max_num_batched_tokens: usize,
    /// Longest prompt + output accepted, tokens.
    pub max_model_len: usize,
    /// KV-cache blocks of `BLOCK_SIZE` (16) tokens.
    pub num_blocks: usize,
    /// Reuse cached blocks of matching prompt prefixes; when off, requests'
    /// block hashes are dropped.
    pub enable_prefix_caching: bool,
    /// How the waiting queue is ordered (the `mixes` module).
    pub scheduling_policy: SchedulingPolicy,
    /// LoRA adapters per batch, resident slots and load time (the `mixes` module).
    pub lora: LoraLimits,
    /// Speculative decoding ([`SpecDecode`]).
    pub spec: SpecDecode,
    /// Seed of the draft acceptances.
    pub seed: u64,
}

/// Most draft tokens a step ([`SpecDecode::tokens`]).
pub const MAX_SPEC_TOKENS: usize = 8;

/// Speculative decoding as vLLM runs it with a draft model or EAGLE heads:
/// every step, each decoding sequence's draft proposes `tokens` tokens and
/// the target model verifies them in the same forward pass (`tokens + 1`
/// positions a sequence); draft position `i` is accepted with probability
/// `acceptance` when the ones before it were, and the first rejection ends
/// the run of accepted tokens. The step emits the accepted tokens plus one
/// of the target's own (the bonus, or the correction), so a sequence gains
/// 1 to `tokens + 1` tokens a step, streamed as one chunk. The draft's own
/// forward passes cost `DRAFT_SHARE` of the target's step a draft token (a
/// head about one layer deep). A prefill's step emits its first token
/// alone, undrafted. The engine counts what vLLM's Prometheus counters do:
/// drafts, draft tokens, accepted tokens, accepted tokens by position.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct SpecDecode {
    /// Draft tokens a step (0: off).
    pub tokens: u32,
    /// Probability a draft token is accepted given the ones before it were.
    pub acceptance: f64,
}

impl Default for SpecDecode {
    fn default() -> Self {
        SpecDecode {
            tokens: 0,
            acceptance: 0.7,
        }
    }
}

/// A draft token's share of the target's step time.
const DRAFT_SHARE: f64 = 0.04;

/// One draft of `spec.tokens` tokens verified: how many were accepted,
/// counted as vLLM counts them.
fn draft(rng: &mut rand::rngs::StdRng, spec: SpecDecode, counters: &mut EngineCounters) -> usize {
    let mut accepted = 0;
    while accepted < spec.tokens as usize && rand::Rng::random_bool(rng, spec.acceptance) {
        counters.spec_accepted_per_pos[accepted] += 1;
        accepted += 1;
    }
    counters.spec_drafts += 1;
    counters.spec_draft_tokens += u64::from(spec.tokens);
    counters.spec_accepted_tokens += accepted as u64;
    accepted
}

impl SpecDecode {
    /// Whether the settings are in range.
    pub fn validate(&self) -> Result<(), crate::error::SimError> {
        if self.tokens as usize > MAX_SPEC_TOKENS {
            return Err(crate::error::SimError::invalid(
                "spec_tokens",
                format!("{} must be 0 to {MAX_SPEC_TOKENS}", self.tokens),
            ));
        }
        if !(0.0..=1.0).contains(&self.acceptance) {
            return Err(crate::error::SimError::invalid(
                "spec_acceptance",
                format!("{} must be in [0, 1]", self.acceptance),
            ));
        }
        Ok(())
    }
}

/// Why the engine refused a request.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Rejection {
    /// Prompt plus output exceed `max_model_len` (vLLM's 400 message).
    #[error(
        "This model's maximum context length is {max_model_len} tokens. However, you requested \
         {requested} tokens ({prompt} in the messages, {output} in the completion). Please reduce \
         the length of the messages or completion."
    )]
    TooLong {
        /// The context limit, tokens.
        max_model_len: usize,
        /// Prompt plus output, tokens.
        requested: usize,
        /// Prompt tokens.
        prompt: usize,
        /// Output tokens asked for.
        output: usize,
    },
    /// Prompt plus output need more blocks than the whole KV cache holds.
    #[error(
        "the request needs {needed} KV-cache blocks ({tokens} tokens) but the cache holds only \
         {available}; reduce the prompt or max_tokens"
    )]
    CacheTooSmall {
        /// Blocks the request needs.
        needed: usize,
        /// Prompt plus output, tokens.
        tokens: usize,
        /// Blocks in the whole cache.
        available: usize,
    },
    /// A request with this id is already queued or running.
    #[error("request id {0} is already in the engine")]
    Duplicate(RequestId),
}

/// One generated token.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TokenEvent {
    /// The request it belongs to.
    pub id: RequestId,
    /// 0-based index of the token in the request's output.
    pub index: u32,
    /// Engine time the token was produced (the end of its step), seconds.
    pub time_s: f64,
    /// Time since the previous token, or since arrival for the first, seconds.
    pub gap_s: f64,
    /// Whether this was the request's last token.
    pub last: bool,
}

/// A request that produced its last token.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FinishedRequest {
    /// The request.
    pub id: RequestId,
    /// Engine time it was added, seconds.
    pub arrival_s: f64,
    /// Engine time of its last token (the end of that step), seconds.
    pub end_s: f64,
    /// Prompt length, tokens.
    pub prompt_tokens: usize,
    /// Tokens generated.
    pub output_tokens: usize,
    /// Prompt tokens served from the prefix cache at first admission.
    pub cached_tokens: usize,
    /// Times it was preempted and recomputed.
    pub preemptions: u32,
}

/// What a step produced; buffers reused across steps.
#[derive(Debug, Default)]
pub struct StepOutputs {
    /// Tokens generated in the step, in batch order.
    pub tokens: Vec<TokenEvent>,
    /// Requests whose last token the step produced.
    pub finished: Vec<FinishedRequest>,
}

impl StepOutputs {
    /// Empty both lists, keeping their capacity.
    pub fn clear(&mut self) {
        self.tokens.clear();
        self.finished.clear();
    }
}

/// Summary of one step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepReport {
    /// Engine time the step started, seconds.
    pub start_s: f64,
    /// Its duration and the parts of it.
    pub time: StepTime,
    /// What it processed, summed over its sequences.
    pub shape: BatchShape,
    /// Sequences in the batch.
    pub num_seqs: usize,
    /// Of which decoding (the rest are prefilling).
    pub num_decodes: usize,
    /// Prefill tokens in the batch.
    pub prefill_tokens: usize,
    /// Sequences preempted while building the batch.
    pub preempted: usize,
    /// Requests admitted from the waiting queue.
    pub admitted: usize,
}

impl StepReport {
    /// Engine time the step ended (`start_s` plus its total time), seconds.
    pub fn end_s(&self) -> f64 {
        self.start_s + self.time.total_s
    }
}

/// Cumulative counters (the `/metrics` counters come from these).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct EngineCounters {
    /// Steps run.
    pub steps: u64,
    /// Admissions from the waiting queue, readmissions after preemption included.
    pub admissions: u64,
    /// Sequences preempted.
    pub preemptions: u64,
    /// Prompt tokens looked up in the prefix cache (at every admission).
    pub prefix_cache_queries: u64,
    /// Of which found in the cache.
    pub prefix_cache_hits: u64,
    /// Prompt tokens of requests admitted, counted at first admission only.
    pub prompt_tokens: u64,
    /// Output tokens generated.
    pub generation_tokens: u64,
    /// Requests that produced their last token.
    pub finished: u64,
    /// Requests dropped by `Engine::abort`.
    pub aborted: u64,
    /// LoRA adapters loaded because they were not resident.
    pub lora_loads: u64,
    /// Speculative decoding: drafts proposed (one a decoding sequence a step).
    pub spec_drafts: u64,
    /// Draft tokens proposed.
    pub spec_draft_tokens: u64,
    /// Draft tokens accepted.
    pub spec_accepted_tokens: u64,
    /// Drafts whose token at each position was accepted.
    pub spec_accepted_per_pos: [u64; MAX_SPEC_TOKENS],
}

#[derive(Debug)]
struct Sequence {
    req: EngineRequest,
    arrival_s: f64,
    generated: usize,
    computed: usize,
    blocks: Vec<BlockId>,
    registered: usize,
    cached_tokens: Option<usize>,
    preemptions: u32,
    last_token_s: f64,
}

impl Sequence {
    fn total(&self) -> usize {
        self.req.prompt_tokens + self.generated
    }

    /// `n` tokens made in the step that ended at `end_s` (the first with
    /// the gap since the last, the rest with none: one chunk); whether the
    /// last of them was the request's last.
    fn emit(&mut self, id: RequestId, n: usize, end_s: f64, tokens: &mut Vec<TokenEvent>) -> bool {
        let mut last = false;
        for k in 0..n {
            let index = self.generated;
            self.generated += 1;
            last = self.generated >= self.req.output_tokens;
            let gap_s = if k == 0 {
                end_s - self.last_token_s
            } else {
                0.0
            };
            tokens.push(TokenEvent {
                id,
                index: index as u32,
                time_s: end_s,
                gap_s,
                last,
            });
        }
        self.last_token_s = end_s;
        last
    }
}

/// The engine: waiting queue, running batch, KV cache.
#[derive(Debug)]
pub struct Engine {
    limits: EngineLimits,
    roofline: Roofline,
    pool: BlockPool,
    seqs: IntMap<RequestId, Sequence>,
    waiting: VecDeque<RequestId>,
    running: Vec<RequestId>,
    counters: EngineCounters,
    scheduled: Vec<(RequestId, usize)>,
    /// The LoRA adapters kept loaded (the `mixes` module).
    resident: mixes::Resident,
    /// Draws of the draft acceptances.
    spec_rng: rand::rngs::StdRng,
}

impl Engine {
    /// An empty engine with `limits`, timing its steps with `roofline`.
    pub fn new(limits: EngineLimits, roofline: Roofline) -> Self {
        let spec_rng = rand::SeedableRng::seed_from_u64(limits.seed ^ 0x5bec_dec0de);
        Engine {
            pool: BlockPool::new(limits.num_blocks),
            limits,
            roofline,
            seqs: IntMap::default(),
            waiting: VecDeque::new(),
            running: Vec::new(),
            counters: EngineCounters::default(),
            scheduled: Vec::new(),
            resident: mixes::Resident::default(),
            spec_rng,
        }
    }

    /// The scheduler limits it was built with.
    pub fn limits(&self) -> &EngineLimits {
        &self.limits
    }

    /// The step-time model.
    pub fn roofline(&self) -> &Roofline {
        &self.roofline
    }

    /// The cumulative counters so far.
    pub fn counters(&self) -> EngineCounters {
        self.counters
    }

    /// Sequences in the running batch.
    pub fn num_running(&self) -> usize {
        self.running.len()
    }

    /// Requests in the waiting queue (preempted ones included).
    pub fn num_waiting(&self) -> usize {
        self.waiting.len()
    }

    /// Share of KV-cache blocks in use, 0–1.
    pub fn kv_usage(&self) -> f64 {
        self.pool.usage()
    }

    /// Whether any request is running or waiting.
    pub fn has_work(&self) -> bool {
        !self.running.is_empty() || !self.waiting.is_empty()
    }

    /// Check a request against the limits without adding it.
    pub fn check(&self, prompt_tokens: usize, output_tokens: usize) -> Result<(), Rejection> {
        let requested = prompt_tokens + output_tokens;
        if requested > self.limits.max_model_len {
            return Err(Rejection::TooLong {
                max_model_len: self.limits.max_model_len,
                requested,
                prompt: prompt_tokens,
                output: output_tokens,
            });
        }
        let needed = blocks_for(requested);
        if needed > self.pool.num_blocks() {
            return Err(Rejection::CacheTooSmall {
                needed,
                tokens: requested,
                available: self.pool.num_blocks(),
            });
        }
        Ok(())
    }

    /// Queue a request that arrived at `now_s`.
    pub fn add(&mut self, mut req: EngineRequest, now_s: f64) -> Result<(), Rejection> {
        req.output_tokens = req.output_tokens.max(1);
        self.check(req.prompt_tokens, req.output_tokens)?;
        if self.seqs.contains_key(&req.id) {
            return Err(Rejection::Duplicate(req.id));
        }
        if !self.limits.enable_prefix_caching {
            req.block_hashes.clear();
        }
        let id = req.id;
        self.seqs.insert(
            id,
            Sequence {
                req,
                arrival_s: now_s,
                generated: 0,
                computed: 0,
                blocks: Vec::new(),
                registered: 0,
                cached_tokens: None,
                preemptions: 0,
                last_token_s: now_s,
            },
        );
        self.enqueue(id, false);
        Ok(())
    }

    /// (priority, arrival) of a known request.
    fn rank_of(&self, id: RequestId) -> (i64, f64) {
        self.seqs
            .get(&id)
            .map_or((i64::MAX, f64::MAX), |s| (s.req.priority, s.arrival_s))
    }

    /// Where `id` goes in `queue` under the priority policy: after every
    /// request of lower or equal (priority, arrival).
    fn ranked_position<'a>(
        &self,
        id: RequestId,
        queue: impl Iterator<Item = &'a RequestId>,
    ) -> usize {
        let key = self.rank_of(id);
        let mut n = 0;
        for &other in queue {
            if mixes::rank(self.rank_of(other), key) == std::cmp::Ordering::Greater {
                return n;
            }
            n += 1;
        }
        n
    }

    /// Put `id` in the waiting queue: at its end (a preempted request at its
    /// front) first come first served, by rank under the priority policy.
    fn enqueue(&mut self, id: RequestId, preempted: bool) {
        match self.limits.scheduling_policy {
            SchedulingPolicy::Fcfs if preempted => self.waiting.push_front(id),
            SchedulingPolicy::Fcfs => self.waiting.push_back(id),
            SchedulingPolicy::Priority => {
                let at = self.ranked_position(id, self.waiting.iter());
                self.waiting.insert(at, id);
            }
        }
    }

    /// Put an admitted `id` in the running list: last, or by rank under the
    /// priority policy (so that the last is always the one to preempt).
    fn run(&mut self, id: RequestId) {
        match self.limits.scheduling_policy {
            SchedulingPolicy::Fcfs => self.running.push(id),
            SchedulingPolicy::Priority => {
                let at = self.ranked_position(id, self.running.iter());
                self.running.insert(at, id);
            }
        }
    }

    /// Drop a request (its client went away). Returns whether it was known.
    pub fn abort(&mut self, id: RequestId) -> bool {
        let Some(seq) = self.seqs.remove(&id) else {
            return false;
        };
        self.pool.release(&seq.blocks);
        if let Some(i) = self.running.iter().position(|&r| r == id) {
            self.running.remove(i);
        } else if let Some(i) = self.waiting.iter().position(|&r| r == id) {
            self.waiting.remove(i);
        }
        self.counters.aborted += 1;
        true
    }

    fn preempt(&mut self, id: RequestId) {
        if let Some(seq) = self.seqs.get_mut(&id) {
            self.pool.release(&seq.blocks);
            seq.blocks.clear();
            seq.computed = 0;
            seq.registered = 0;
            seq.preemptions += 1;
            self.counters.preemptions += 1;
        }
        self.enqueue(id, true);
    }

    /// Schedule the running sequences; returns how many were preempted.
    fn schedule_running(&mut self, budget: &mut usize) -> usize {
        let mut preempted = 0;
        let mut i = 0;
        'running: while i < self.running.len() && *budget > 0 {
            let id = self.running[i];
            let Some(seq) = self.seqs.get(&id) else {
                self.running.remove(i);
                continue;
            };
            let new = (seq.total() - seq.computed).min(*budget);
            let needed = blocks_for(seq.computed + new);
            while self.seqs.get(&id).map_or(0, |s| s.blocks.len()) < needed {
                if let Some(b) = self.pool.allocate() {
                    if let Some(seq) = self.seqs.get_mut(&id) {
                        seq.blocks.push(b);
                    }
                    continue;
                }
                // No free block: preempt the newest running sequence (the
                // worst ranked under the priority policy).
                let Some(victim) = self.running.pop() else {
                    break 'running;
                };
                self.preempt(victim);
                preempted += 1;
                if victim == id {
                    break 'running;
                }
            }
            self.scheduled.push((id, new));
            *budget -= new;
            i += 1;
        }
        preempted
    }

    /// The distinct adapters of the batch scheduled so far.
    fn batch_adapters(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self
            .scheduled
            .iter()
            .filter_map(|(id, _)| self.seqs.get(id)?.req.adapter)
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Admit waiting requests in queue order (first come, first served, or
    /// by rank under the priority policy), skipping one whose adapter would
    /// exceed `max_loras`; returns how many.
    fn schedule_waiting(&mut self, budget: &mut usize) -> usize {
        let mut admitted = 0;
        let mut adapters = self.batch_adapters();
        let mut at = 0;
        while *budget > 0 && self.running.len() < self.limits.max_num_seqs {
            let Some(&id) = self.waiting.get(at) else {
                break;
            };
            let Some(seq) = self.seqs.get(&id) else {
                self.waiting.remove(at);
                continue;
            };
            if let (Some(a), Some(cap)) = (seq.req.adapter, self.limits.lora.max_loras) {
                if !adapters.contains(&a) && adapters.len() >= cap {
                    at += 1;
                    continue;
                }
            }
            let total = seq.total();
            // The last token is always computed, so at most (total - 1) tokens hit.
            let max_hits = seq.req.block_hashes.len().min((total - 1) / BLOCK_SIZE);
            let hashes = &seq.req.block_hashes[..max_hits];
            let hits = self.pool.cached_prefix(hashes);
            let fresh = blocks_for(total) - hits;
            if !self.pool.can_allocate(&hashes[..hits], fresh) {
                break;
            }
            let hit_hashes: Vec<u64> = hashes[..hits].to_vec();
            let mut blocks = Vec::with_capacity(blocks_for(total));
            for h in hit_hashes {
                if let Some(b) = self.pool.take_cached(h) {
                    blocks.push(b);
                }
            }
            for _ in 0..fresh {
                if let Some(b) = self.pool.allocate() {
                    blocks.push(b);
                }
            }
            let Some(seq) = self.seqs.get_mut(&id) else {
                break;
            };
            let hit_tokens = hits * BLOCK_SIZE;
            seq.blocks = blocks;
            seq.computed = hit_tokens;
            seq.registered = hits;
            if seq.cached_tokens.is_none() {
                seq.cached_tokens = Some(hit_tokens);
                self.counters.prompt_tokens += seq.req.prompt_tokens as u64;
            }
            self.counters.prefix_cache_queries += seq.req.prompt_tokens as u64;
            self.counters.prefix_cache_hits += hit_tokens as u64;
            self.counters.admissions += 1;
            let new = (total - hit_tokens).min(*budget);
            self.scheduled.push((id, new));
            *budget -= new;
            self.waiting.remove(at);
            self.run(id);
            if let Some(a) = self.seqs.get(&id).and_then(|s| s.req.adapter) {
                if !adapters.contains(&a) {
                    adapters.push(a);
                }
            }
            admitted += 1;
        }
        admitted
    }

    /// Load the batch's adapters that are not resident: each adds the load
    /// time to the step.
    fn load_adapters(&mut self, time: &mut crate::roofline::StepTime) {
        let Some(max_loras) = self.limits.lora.max_loras else {
            return;
        };
        let adapters = self.batch_adapters();
        if adapters.is_empty() {
            return;
        }
        let capacity = self.limits.lora.max_cpu_loras.unwrap_or(max_loras);
        let loaded = self.resident.use_batch(&adapters, capacity);
        if loaded > 0 {
            let s = loaded as f64 * self.limits.lora.load_s;
            time.overhead_s += s;
            time.total_s += s;
            self.counters.lora_loads += loaded as u64;
        }
    }

    /// What the scheduled batch processes, its decoding sequences and its
    /// prefill tokens. A decode under speculative decoding verifies the
    /// draft's tokens beside its own.
    fn batch_shape(&self) -> (BatchShape, usize, usize) {
        let mut shape = BatchShape::default();
        let mut num_decodes = 0;
        let mut prefill_tokens = 0;
        let drafts = self.limits.spec.tokens as u64;
        for &(id, new) in &self.scheduled {
            if let Some(seq) = self.seqs.get(&id) {
                let decoding = seq.generated > 0 && seq.computed + 1 == seq.total();
                if seq.computed + new >= seq.total() {
                    shape.streamed += 1;
                }
                if decoding {
                    num_decodes += 1;
                    shape.add(seq.computed as u64, new as u64 + drafts, true);
                } else {
                    prefill_tokens += new;
                    shape.add(seq.computed as u64, new as u64, false);
                }
            }
        }
        shape.held = self.seqs.len() as u64;
        (shape, num_decodes, prefill_tokens)
    }

    /// Run one step starting at `now_s`: build the batch, time it, and apply
    /// its results (stamped at the step's end) into `out`. `None` when there
    /// is nothing to run.
    pub fn step(&mut self, now_s: f64, out: &mut StepOutputs) -> Option<StepReport> {
        self.scheduled.clear();
        let mut budget = self.limits.max_num_batched_tokens;
        let preempted = self.schedule_running(&mut budget);
        let admitted = if preempted == 0 || self.scheduled.is_empty() {
            self.schedule_waiting(&mut budget)
        } else {
            0
        };
        if self.scheduled.is_empty() {
            return None;
        }

        let (shape, num_decodes, prefill_tokens) = self.batch_shape();
        let drafts = self.limits.spec.tokens as u64;
        let mut time = self.roofline.step_time(&shape);
        if drafts > 0 && num_decodes > 0 {
            // The draft's forward passes, weight-bound like the target's.
            let share = DRAFT_SHARE * drafts as f64;
            let parts = time.gemm_s + time.attention_s + time.communication_s + time.overhead_s;
            time.gemm_s += share * parts;
            time.total_s *= 1.0 + share;
        }
        self.load_adapters(&mut time);
        let end_s = now_s + time.total_s;
        self.counters.steps += 1;

        let mut any_finished = false;
        for i in 0..self.scheduled.len() {
            let (id, new) = self.scheduled[i];
            let Some(seq) = self.seqs.get_mut(&id) else {
                continue;
            };
            seq.computed += new;
            while seq.registered < seq.req.block_hashes.len()
                && (seq.registered + 1) * BLOCK_SIZE <= seq.computed
            {
                let (b, h) = (
                    seq.blocks[seq.registered],
                    seq.req.block_hashes[seq.registered],
                );
                self.pool.register(b, h);
                seq.registered += 1;
            }
            if seq.computed < seq.total() {
                continue; // a prefill chunk that did not reach the end
            }
            // A decode with a draft: its accepted tokens, then the target's own.
            let mut emit = 1;
            if drafts > 0 && seq.generated > 0 {
                let accepted = draft(&mut self.spec_rng, self.limits.spec, &mut self.counters);
                emit = (1 + accepted).min(seq.req.output_tokens - seq.generated);
                // Their KV was written by the verifying pass.
                seq.computed += emit - 1;
            }
            let last = seq.emit(id, emit, end_s, &mut out.tokens);
            self.counters.generation_tokens += emit as u64;
            if last {
                any_finished = true;
                out.finished.push(FinishedRequest {
                    id,
                    arrival_s: seq.arrival_s,
                    end_s,
                    prompt_tokens: seq.req.prompt_tokens,
                    output_tokens: seq.generated,
                    cached_tokens: seq.cached_tokens.unwrap_or(0),
                    preemptions: seq.preemptions,
                });
            }
        }
        if any_finished {
            for f in &out.finished {
                if let Some(seq) = self.seqs.remove(&f.id) {
                    self.pool.release(&seq.blocks);
                    self.counters.finished += 1;
                }
            }
            let seqs = &self.seqs;
            self.running.retain(|id| seqs.contains_key(id));
        }

        Some(StepReport {
            start_s: now_s,
            time,
            shape,
            num_seqs: self.scheduled.len(),
            num_decodes,
            prefill_tokens,
            preempted,
            admitted,
        })
    }
}

#[cfg(test)]
mod tests;
