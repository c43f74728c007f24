//! A recorded trace as a forecast's workload: arrivals at the trace's own
//! offsets, its input and output lengths, and its prompt blocks.
//!
//! **Rate and speed.** A trace has its own mean rate, `(n − 1) / span`
//! requests per second over its `n` rows (as goodput's `run` reports a
//! replay's `request_rate`). Offered at rate `r`, the trace is replayed at
//! speed `r / mean_rate`: request `j` arrives at `at_s[j] / speed`. At its
//! mean rate it arrives at its own offsets exactly (the speed is exactly
//! 1); at twice that rate every offset is halved. So a trace's goodput is
//! the highest replay speed, times the mean rate, at which the replay meets
//! the SLO and no queue builds.
//!
//! **Blocks.** A Mooncake-style row names its prompt's blocks of
//! `block_tokens` tokens by `hash_ids`: rows whose ids agree on their first
//! k blocks share those k blocks of prompt. The forecast writes block `h`'s
//! token `i` from `(h, i)` alone, so two prompts share exactly the tokens
//! the trace says they share, and the engine's prefix cache (16-token
//! blocks, hashed as a chain) hits on every whole engine block inside the
//! shared prefix and nowhere else. A last block cut short by the row's
//! length is that block's opening tokens; tokens past the last id, and
//! every token of a row without ids, are unique to the row.
//!
//! **One schedule.** A trace's arrivals are what they are: there is one
//! schedule, not a Poisson draw per seed ([`super::ForecastPlan::seeds`]
//! must be 1). Its first `warmup_requests` rows are the warm-up, the
//! rest (up to `requests_per_point`) are measured, and the replay ends
//! with the trace's last row.

use crate::error::SimError;

/// One request of a trace.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceRequest {
    /// Seconds after the trace's first request (re-based by
    /// [`ForecastTrace::new`]).
    pub at_s: f64,
    /// Prompt tokens (at least 1).
    pub input_tokens: u32,
    /// Output tokens, generated exactly (at least 1).
    pub output_tokens: u32,
    /// Ids of the prompt's blocks of [`ForecastTrace::block_tokens`]
    /// tokens, in order; empty: the prompt is unique.
    pub hash_ids: Vec<u64>,
}

/// A validated trace, its times re-based to its first request.
#[derive(Debug, Clone, PartialEq)]
pub struct ForecastTrace {
    requests: Vec<TraceRequest>,
    block_tokens: u32,
    mean_rate: f64,
}

impl ForecastTrace {
    /// At least two requests, times finite and never decreasing, spanning
    /// more than 0 s; lengths at least 1; `block_tokens` at least 1.
    pub fn new(mut requests: Vec<TraceRequest>, block_tokens: u32) -> Result<Self, SimError> {
        if block_tokens == 0 {
            return Err(SimError::invalid("block_tokens", "must be at least 1"));
        }
        if requests.len() < 2 {
            return Err(SimError::invalid(
                "trace",
                format!(
                    "{} request(s): a trace needs at least two to have a rate",
                    requests.len()
                ),
            ));
        }
        let mut last = f64::NEG_INFINITY;
        for (i, r) in requests.iter().enumerate() {
            if !r.at_s.is_finite() || r.at_s < last {
                return Err(SimError::invalid(
                    "trace",
                    format!(
                        "request {i}: time {} s must be finite and not before the previous one ({last} s)",
                        r.at_s
                    ),
                ));
            }
            if r.input_tokens == 0 || r.output_tokens == 0 {
                return Err(SimError::invalid(
                    "trace",
                    format!("request {i}: input and output lengths must be at least 1"),
                ));
            }
            last = r.at_s;
        }
        let first = requests[0].at_s;
        for r in &mut requests {
            r.at_s -= first;
        }
        let span = last - first;
        if span <= 0.0 {
            return Err(SimError::invalid(
                "trace",
                "every request arrives at the same time: the trace has no rate",
            ));
        }
        let mean_rate = (requests.len() - 1) as f64 / span;
        Ok(ForecastTrace {
            requests,
            block_tokens,
            mean_rate,
        })
    }

    /// The requests, in arrival order, times re-based to the first.
    pub fn requests(&self) -> &[TraceRequest] {
        &self.requests
    }

    /// Number of requests (at least two).
    pub fn len(&self) -> usize {
        self.requests.len()
    }

    /// Never: a trace has at least two requests.
    pub fn is_empty(&self) -> bool {
        self.requests.is_empty()
    }

    /// Tokens in each of the trace's prompt blocks (its rows' `hash_ids`).
    pub fn block_tokens(&self) -> u32 {
        self.block_tokens
    }

    /// Requests per second over the trace: `(n − 1) / span`.
    pub fn mean_rate(&self) -> f64 {
        self.mean_rate
    }

    /// The replay speed an offered `rate` (requests per second) means.
    pub fn speed(&self, rate: f64) -> f64 {
        rate / self.mean_rate
    }

    /// Request `j`'s arrival at `rate`, seconds; `None` past the end.
    pub fn arrival(&self, j: usize, rate: f64) -> Option<f64> {
        self.requests.get(j).map(|r| r.at_s / self.speed(rate))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(at_s: f64) -> TraceRequest {
        TraceRequest {
            at_s,
            input_tokens: 10,
            output_tokens: 2,
            hash_ids: Vec::new(),
        }
    }

    #[test]
    fn the_mean_rate_replays_the_offsets_and_double_halves_them() {
        let offsets = [0.0, 0.3, 0.7, 1.1, 2.0];
        let reqs = offsets.iter().map(|&t| request(10.0 + t)).collect();
        let trace = ForecastTrace::new(reqs, 16).unwrap();
        let mean = trace.mean_rate();
        assert_eq!(mean, 4.0 / 2.0);
        for (j, &t) in offsets.iter().enumerate() {
            let at = (10.0 + t) - 10.0;
            assert_eq!(trace.arrival(j, mean), Some(at));
            assert_eq!(trace.arrival(j, 2.0 * mean), Some(at / 2.0));
        }
        assert_eq!(trace.arrival(5, mean), None);
        assert_eq!(trace.speed(3.0 * mean), 3.0);
    }

    #[test]
    fn a_trace_without_a_rate_or_in_disorder_is_refused() {
        assert!(ForecastTrace::new(vec![request(0.0)], 16).is_err());
        assert!(ForecastTrace::new(vec![request(1.0), request(1.0)], 16).is_err());
        let e = ForecastTrace::new(vec![request(1.0), request(0.5)], 16).unwrap_err();
        assert!(e.to_string().contains("request 1"), "{e}");
        assert!(ForecastTrace::new(vec![request(0.0), request(1.0)], 0).is_err());
    }
}
