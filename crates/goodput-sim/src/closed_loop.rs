//! A closed loop in virtual time: `concurrency` users, each sending its next
//! request the moment its previous one finishes.
//!
//! [`simulate`](crate::virtual_time::simulate) replays a fixed list of
//! arrivals; a closed loop's arrivals depend on the engine's own completion
//! times, so [`simulate_closed_loop`] drives the [`Engine`](crate::engine::Engine)
//! itself, the same way (jump from step end to step end, nothing random, no
//! wall clock). Every user starts at time 0 and every prompt is unique, so
//! the prefix cache never hits. This is the load under which published
//! per-user latencies at a fixed concurrency are measured (the TPOT rows of
//! the calibration).

use std::collections::VecDeque;

use crate::config::SimConfig;
use crate::engine::{EngineRequest, StepOutputs, TokenEvent};
use crate::error::SimError;
use crate::kv::block_hashes;
use crate::virtual_time::{VirtualOutcome, VirtualRequest};

/// Result of a closed-loop run.
#[derive(Debug, Clone, PartialEq)]
pub struct ClosedLoopReport {
    /// When each request was sent, seconds from the start, in sending order.
    pub arrivals_s: Vec<f64>,
    /// One outcome per request, in sending order.
    pub requests: Vec<VirtualOutcome>,
    /// Time the last step ended, seconds.
    pub end_s: f64,
}

impl ClosedLoopReport {
    /// Mean time per output token of the requests sent after the first
    /// `warmup` (those that produced at least 2 tokens), seconds.
    pub fn mean_tpot_s(&self, warmup: usize) -> Option<f64> {
        let tpots: Vec<f64> = self
            .requests
            .iter()
            .skip(warmup)
            .filter_map(VirtualOutcome::tpot_s)
            .collect();
        (!tpots.is_empty()).then(|| tpots.iter().sum::<f64>() / tpots.len() as f64)
    }
}

/// Run `requests` requests of `prompt_tokens` in / `output_tokens` out
/// through the engine `config` describes, `concurrency` at a time: each of
/// `concurrency` users sends its first request at time 0 and its next one
/// when the previous one's last token is produced (a rejected request is
/// replaced at once). A request reaches the engine's queue
/// `request_latency_ms` after it is sent, as in `simulate`.
pub fn simulate_closed_loop(
    config: &SimConfig,
    concurrency: usize,
    prompt_tokens: usize,
    output_tokens: usize,
    requests: usize,
) -> Result<ClosedLoopReport, SimError> {
    simulate_closed_loop_with(config, concurrency, requests, |_| {
        (prompt_tokens, output_tokens)
    })
}

/// [`simulate_closed_loop`] with each request's lengths chosen by
/// `lengths(i)` → `(prompt_tokens, output_tokens)` for the i-th request sent
/// (a random-length workload: the coverage study's closed-loop loads).
pub fn simulate_closed_loop_with(
    config: &SimConfig,
    concurrency: usize,
    requests: usize,
    mut lengths: impl FnMut(usize) -> (usize, usize),
) -> Result<ClosedLoopReport, SimError> {
    let mut engine = config.build_engine()?;
    let latency_s = config.request_latency_ms * 1e-3;
    let mut arrivals_s = Vec::with_capacity(requests);
    let mut outcomes: Vec<VirtualOutcome> = Vec::with_capacity(requests);
    // Sent but not yet in the engine's queue, in sending order (send times
    // never decrease, so neither do the times they reach the queue).
    let mut in_flight: VecDeque<usize> = VecDeque::new();
    // Send the next request at `at_s`, unless all have been sent.
    let send = |at_s: f64,
                in_flight: &mut VecDeque<usize>,
                arrivals_s: &mut Vec<f64>,
                outcomes: &mut Vec<VirtualOutcome>| {
        if arrivals_s.len() < requests {
            in_flight.push_back(arrivals_s.len());
            arrivals_s.push(at_s);
            outcomes.push(VirtualOutcome {
                token_times_s: Vec::new(),
                cached_tokens: 0,
                preemptions: 0,
                rejected: None,
            });
        }
    };
    for _ in 0..concurrency.min(requests) {
        send(0.0, &mut in_flight, &mut arrivals_s, &mut outcomes);
    }
    let mut out = StepOutputs::default();
    let mut now = 0.0_f64;
    loop {
        while let Some(&i) = in_flight.front() {
            let reaches_s = arrivals_s[i] + latency_s;
            if reaches_s > now {
                break;
            }
            in_flight.pop_front();
            let (prompt_tokens, output_tokens) = lengths(i);
            let prompt = VirtualRequest::unique(0.0, prompt_tokens, output_tokens, i as u32);
            let req = EngineRequest {
                id: i as u64,
                prompt_tokens,
                block_hashes: block_hashes(&prompt.prompt_token_ids),
                output_tokens,
                ..Default::default()
            };
            if let Err(e) = engine.add(req, reaches_s) {
                outcomes[i].rejected = Some(e);
                send(now, &mut in_flight, &mut arrivals_s, &mut outcomes);
            }
        }
        out.clear();
        match engine.step(now, &mut out) {
            Some(report) => {
                now = report.end_s();
                for &TokenEvent { id, time_s, .. } in &out.tokens {
                    outcomes[id as usize].token_times_s.push(time_s);
                }
                for f in &out.finished {
                    let o = &mut outcomes[f.id as usize];
                    o.cached_tokens = f.cached_tokens;
                    o.preemptions = f.preemptions;
                    send(f.end_s, &mut in_flight, &mut arrivals_s, &mut outcomes);
                }
            }
            None => match in_flight.front() {
                Some(&i) => now = now.max(arrivals_s[i] + latency_s),
                None => break,
            },
        }
    }
    Ok(ClosedLoopReport {
        arrivals_s,
        requests: outcomes,
        end_s: now,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::virtual_time::simulate;

    #[test]
    fn concurrency_one_is_a_chain_of_lone_requests() {
        let c = SimConfig::default();
        let r = simulate_closed_loop(&c, 1, 256, 16, 3).unwrap();
        let alone = simulate(&c, &[VirtualRequest::unique(0.0, 256, 16, 0)]).unwrap();
        let e2e = alone.end_s;
        assert_eq!(r.requests.len(), 3);
        for (i, (&sent, o)) in r.arrivals_s.iter().zip(&r.requests).enumerate() {
            // Each request is sent when the previous one ends, and runs alone.
            assert!((sent - i as f64 * e2e).abs() < 1e-9, "{i}: {sent}");
            assert_eq!(o.token_times_s.len(), 16);
            assert!((o.token_times_s[15] - sent - e2e).abs() < 1e-9);
        }
        assert!((r.end_s - 3.0 * e2e).abs() < 1e-9);
    }

    #[test]
    fn concurrency_holds_the_number_of_requests_in_flight() {
        let c = SimConfig::default();
        let r = simulate_closed_loop(&c, 8, 128, 32, 40).unwrap();
        assert_eq!(r.requests.len(), 40);
        assert!(r.requests.iter().all(|o| o.token_times_s.len() == 32));
        // At any send time, exactly 8 requests have been sent and not finished
        // (the one being replaced counts as finished).
        let ends: Vec<f64> = r.requests.iter().map(|o| o.token_times_s[31]).collect();
        for &t in &r.arrivals_s[8..] {
            let open = (0..r.arrivals_s.len())
                .filter(|&i| r.arrivals_s[i] <= t && ends[i] > t)
                .count();
            assert_eq!(open, 8, "at {t}");
        }
        // More users than the loop needs for a step: TPOT rises with them.
        let one = simulate_closed_loop(&c, 1, 128, 32, 4).unwrap();
        assert!(r.mean_tpot_s(8).unwrap() > one.mean_tpot_s(0).unwrap());
    }
}
