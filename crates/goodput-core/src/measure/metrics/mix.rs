//! The workload as it was actually sent: the input and output length mix
//! of the measured requests, and how much of the prompts a prefix cache
//! could have served against how much the server says it served.

use serde::{Deserialize, Serialize};

use super::RequestMetrics;
use crate::request::record::RequestRecord;

/// A length distribution as sent (tokens).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LengthMix {
    pub count: u64,
    pub mean: f64,
    pub p50: u32,
    pub p90: u32,
    pub max: u32,
}

impl LengthMix {
    fn of(mut v: Vec<u32>) -> Option<LengthMix> {
        if v.is_empty() {
            return None;
        }
        v.sort_unstable();
        let at = |q: f64| v[((q * (v.len() - 1) as f64).round() as usize).min(v.len() - 1)];
        Some(LengthMix {
            count: v.len() as u64,
            mean: v.iter().map(|&x| f64::from(x)).sum::<f64>() / v.len() as f64,
            p50: at(0.5),
            p90: at(0.9),
            max: *v.last().unwrap_or(&0),
        })
    }
}

/// The measured requests' workload.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkloadMix {
    /// Prompt lengths by the client tokenizer (the length the workload
    /// built; for chat, the message contents), else the server's count,
    /// over every request sent: failed ones too.
    pub input_tokens: Option<LengthMix>,
    /// Output lengths as counted for the metrics, over completed requests.
    pub output_tokens: Option<LengthMix>,
    /// Σ cacheable leading tokens / Σ prompt tokens, by the client's count:
    /// the most a prefix cache could serve of this workload (an upper
    /// bound; servers cache in blocks and may evict).
    pub cacheable_share: Option<f64>,
    /// Σ server-reported `cached_tokens` / Σ server-reported prompt tokens,
    /// over the requests where the server said.
    pub cached_share: Option<f64>,
}

/// Accumulates the mix: prompts over every sent measured request, the rest
/// over completed ones.
#[derive(Debug, Default)]
pub struct MixAcc {
    input: Vec<u32>,
    output: Vec<u32>,
    cacheable: u64,
    client_prompt: u64,
    server_prompt: u64,
    server_cached: u64,
}

impl MixAcc {
    /// A request that reached the server, whatever its outcome: its prompt
    /// was sent (an over-long one the server refused with HTTP 400 too).
    pub fn add_sent(&mut self, m: &RequestMetrics) {
        if let Some(n) = m.client_input_tokens.or(m.input_tokens) {
            self.input.push(n);
        }
    }

    /// A completed request: its output, and the prefix-cache shares (the
    /// server reports cached tokens only for the requests it answered).
    pub fn add(&mut self, rec: &RequestRecord, m: &RequestMetrics) {
        self.output.push(m.output_tokens);
        if let Some(c) = m.client_input_tokens {
            self.client_prompt += u64::from(c);
            self.cacheable += u64::from(rec.cacheable_tokens.min(c));
        }
        if let Some(u) = rec.usage {
            if let (Some(p), Some(c)) = (u.prompt_tokens, u.cached_tokens) {
                self.server_prompt += u64::from(p);
                self.server_cached += u64::from(c);
            }
        }
    }

    pub fn summary(&self) -> WorkloadMix {
        WorkloadMix {
            input_tokens: LengthMix::of(self.input.clone()),
            output_tokens: LengthMix::of(self.output.clone()),
            cacheable_share: (self.client_prompt > 0)
                .then(|| self.cacheable as f64 / self.client_prompt as f64),
            cached_share: (self.server_prompt > 0)
                .then(|| self.server_cached as f64 / self.server_prompt as f64),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_and_shares() {
        let mut acc = MixAcc::default();
        for i in 1..=10u32 {
            let rec = RequestRecord {
                cacheable_tokens: if i > 5 { 50 } else { 0 },
                usage: Some(crate::request::record::ServerUsage {
                    prompt_tokens: Some(110),
                    cached_tokens: Some(if i > 5 { 48 } else { 0 }),
                    ..Default::default()
                }),
                ..Default::default()
            };
            let m = RequestMetrics {
                client_input_tokens: Some(100),
                output_tokens: i * 10,
                ..Default::default()
            };
            acc.add_sent(&m);
            acc.add(&rec, &m);
        }
        let s = acc.summary();
        let out = s.output_tokens.unwrap();
        assert_eq!(
            (out.count, out.mean, out.p50, out.p90, out.max),
            (10, 55.0, 60, 90, 100)
        );
        assert_eq!(s.input_tokens.unwrap().max, 100);
        assert_eq!(s.cacheable_share, Some(0.25));
        assert!((s.cached_share.unwrap() - 240.0 / 1100.0).abs() < 1e-12);
    }
}
