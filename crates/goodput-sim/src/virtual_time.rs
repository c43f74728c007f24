//! The engine in virtual time: discrete events, as fast as the CPU allows.
//!
//! [`simulate`] feeds requests to an [`Engine`](crate::engine::Engine) at their arrival times and
//! jumps the clock from step end to step end (or to the next arrival when the
//! engine is idle). Nothing reads a wall clock and nothing is random, so the
//! same configuration and requests always give the same token timeline; this
//! is what deterministic tests and reference answers (such as the true
//! capacity of a configuration) are computed with.

use crate::config::SimConfig;
use crate::engine::{
    EngineCounters, EngineRequest, Rejection, StepOutputs, StepReport, TokenEvent,
};
use crate::error::SimError;
use crate::kv::block_hashes;

/// One request of a virtual run.
#[derive(Debug, Clone, PartialEq)]
pub struct VirtualRequest {
    /// Arrival time, seconds from the start of the run.
    pub arrival_s: f64,
    /// Prompt token ids (their content drives the prefix cache).
    pub prompt_token_ids: Vec<u32>,
    /// Tokens to generate.
    pub output_tokens: usize,
}

impl VirtualRequest {
    /// A request whose prompt is `prompt_tokens` tokens that no other request
    /// shares (`salt` makes it unique).
    pub fn unique(arrival_s: f64, prompt_tokens: usize, output_tokens: usize, salt: u32) -> Self {
        let prompt_token_ids = (0..prompt_tokens as u32)
            .map(|i| {
                i.wrapping_mul(2_654_435_761)
                    .wrapping_add(salt.wrapping_mul(97))
            })
            .collect();
        VirtualRequest {
            arrival_s,
            prompt_token_ids,
            output_tokens,
        }
    }
}

/// What happened to one request.
#[derive(Debug, Clone, PartialEq)]
pub struct VirtualOutcome {
    /// Time each output token was produced, seconds from the start of the run.
    pub token_times_s: Vec<f64>,
    /// Prompt tokens served from the prefix cache.
    pub cached_tokens: usize,
    /// Times it was preempted and recomputed.
    pub preemptions: u32,
    /// Set when the engine refused the request.
    pub rejected: Option<Rejection>,
}

impl VirtualOutcome {
    /// Time to first token, from the request's arrival.
    pub fn ttft_s(&self, arrival_s: f64) -> Option<f64> {
        self.token_times_s.first().map(|t| t - arrival_s)
    }

    /// Time per output token after the first; `None` for fewer than 2 tokens.
    pub fn tpot_s(&self) -> Option<f64> {
        let n = self.token_times_s.len();
        (n >= 2).then(|| (self.token_times_s[n - 1] - self.token_times_s[0]) / (n - 1) as f64)
    }
}

/// Result of a virtual run.
#[derive(Debug, Clone, PartialEq)]
pub struct VirtualReport {
    /// One outcome per request, in the order given.
    pub requests: Vec<VirtualOutcome>,
    /// Every step, in order.
    pub steps: Vec<StepReport>,
    /// The engine's counters at the end of the run.
    pub counters: EngineCounters,
    /// Time the last step ended, seconds.
    pub end_s: f64,
}

impl VirtualReport {
    /// Output tokens per second over `[from_s, to_s)`.
    pub fn output_throughput(&self, from_s: f64, to_s: f64) -> f64 {
        let n: usize = self
            .requests
            .iter()
            .map(|r| {
                r.token_times_s
                    .iter()
                    .filter(|&&t| t >= from_s && t < to_s)
                    .count()
            })
            .sum();
        n as f64 / (to_s - from_s)
    }
}

/// Run `requests` through the engine `config` describes, in virtual time.
pub fn simulate(
    config: &SimConfig,
    requests: &[VirtualRequest],
) -> Result<VirtualReport, SimError> {
    let mut engine = config.build_engine()?;
    // A request reaches the engine's queue `request_latency_ms` after it
    // arrives (a calibrated server's HTTP and tokenization time).
    let latency_s = config.request_latency_ms * 1e-3;
    let reaches = |i: usize| requests[i].arrival_s + latency_s;
    let mut order: Vec<usize> = (0..requests.len()).collect();
    order.sort_by(|&a, &b| requests[a].arrival_s.total_cmp(&requests[b].arrival_s));
    let mut outcomes: Vec<VirtualOutcome> = requests
        .iter()
        .map(|_| VirtualOutcome {
            token_times_s: Vec::new(),
            cached_tokens: 0,
            preemptions: 0,
            rejected: None,
        })
        .collect();
    let mut steps = Vec::new();
    let mut out = StepOutputs::default();
    let mut next = 0;
    let mut now = 0.0_f64;
    loop {
        while next < order.len() && reaches(order[next]) <= now {
            let i = order[next];
            let r = &requests[i];
            let req = EngineRequest {
                id: i as u64,
                prompt_tokens: r.prompt_token_ids.len(),
                block_hashes: block_hashes(&r.prompt_token_ids),
                output_tokens: r.output_tokens,
                ..Default::default()
            };
            if let Err(e) = engine.add(req, reaches(i).max(0.0)) {
                outcomes[i].rejected = Some(e);
            }
            next += 1;
        }
        out.clear();
        match engine.step(now, &mut out) {
            Some(report) => {
                now = report.end_s();
                steps.push(report);
                for &TokenEvent { id, time_s, .. } in &out.tokens {
                    outcomes[id as usize].token_times_s.push(time_s);
                }
                for f in &out.finished {
                    let o = &mut outcomes[f.id as usize];
                    o.cached_tokens = f.cached_tokens;
                    o.preemptions = f.preemptions;
                }
            }
            None if next < order.len() => now = now.max(reaches(order[next])),
            None => break,
        }
    }
    Ok(VirtualReport {
        requests: outcomes,
        steps,
        counters: engine.counters(),
        end_s: now,
    })
}
