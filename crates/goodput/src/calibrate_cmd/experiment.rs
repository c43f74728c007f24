//! The designed experiment of `goodput calibrate`, run through the same
//! executor, client and records as `goodput run`: each design point is a
//! closed-loop run whose records (with every event's arrival time) are read
//! back from memory.
//!
//! The points, in order:
//!
//! 1. **What the server says**: vLLM's `cache_config_info` on `/metrics`
//!    (KV blocks), `max_model_len` on `/v1/models`, llama.cpp's `/props`
//!    (slots, context, batch size).
//! 2. **A burst** of `--burst` short requests sent at once: the requests that
//!    got their first token before the first of them finished ran in the
//!    first batch, so their count is the largest batch (when fewer than the
//!    burst).
//! 3. **Batch-1 prefill**: one request at a time at each prompt length, two
//!    output tokens; the median TTFT from the send.
//! 4. **Decode**: B requests started together at each context, every gap
//!    between their tokens after the second; the median gap is the time of
//!    a step in which B sequences decode.
//! 5. **KV capacity**, when the server did not say: `B_max` requests of a
//!    long prompt at once; fewer than `B_max` in the first wave means the
//!    cache, not the batch limit, held them back.

use std::io::Write;
use std::sync::{Arc, Mutex};

use anyhow::anyhow;
use goodput_core::load::LengthSpec;
use goodput_core::load::{Progress, Warmup, WarmupPolicy};
use goodput_core::measure::RecordsSink;
use serde_json::Value;

use crate::cli::{CommonArgs, LoadArgs};
use crate::exit::{run_error, Exit};
use crate::session::Session;
use crate::spec;

/// One request as the records file tells it.
#[derive(Debug, Clone)]
pub struct Rec {
    pub ok: bool,
    /// When it was sent, ms after the run's start.
    pub send_ms: Option<f64>,
    /// Send to first token, ms.
    pub ttft_ms: Option<f64>,
    /// Send to last byte, ms.
    pub e2el_ms: Option<f64>,
    /// Each event's arrival after the send, ms, with its token count.
    pub events: Vec<(f64, u32)>,
    /// The server's own prompt token count (usage), else the client's.
    pub prompt_tokens: Option<u64>,
    pub error: Option<String>,
}

impl Rec {
    fn parse(line: &str) -> Option<Rec> {
        let v: Value = serde_json::from_str(line).ok()?;
        let times = v["event_times_ms"].as_array().cloned().unwrap_or_default();
        let tokens = v["event_tokens"].as_array().cloned().unwrap_or_default();
        let events = times
            .iter()
            .enumerate()
            .filter_map(|(i, t)| {
                let n = tokens.get(i).and_then(Value::as_u64).unwrap_or(1) as u32;
                Some((t.as_f64()?, n))
            })
            .collect();
        Some(Rec {
            ok: v["ok"].as_bool().unwrap_or(false),
            send_ms: v["send_s"].as_f64().map(|s| s * 1e3),
            ttft_ms: v["ttft_ms"].as_f64(),
            e2el_ms: v["e2el_ms"].as_f64(),
            events,
            prompt_tokens: v["server_prompt_tokens"]
                .as_u64()
                .or_else(|| v["input_tokens"].as_u64()),
            error: v["error"].as_str().map(str::to_string),
        })
    }

    /// Each event's time after the run's start, ms, with the tokens
    /// received before it.
    fn absolute(&self) -> Vec<(f64, u64)> {
        let send = self.send_ms.unwrap_or(0.0);
        let mut before = 0u64;
        self.events
            .iter()
            .map(|&(t, n)| {
                let e = (send + t, before);
                before += u64::from(n);
                e
            })
            .collect()
    }
}

/// The gaps between consecutive single-token events while every one of
/// `recs` was streaming (from the last first token to the first last
/// token), ms, each with the tokens its request had received before it.
/// Empty when the requests never all streamed at once.
pub fn common_gaps(recs: &[&Rec]) -> Vec<(f64, u64)> {
    let all: Vec<Vec<(f64, u64)>> = recs.iter().map(|r| r.absolute()).collect();
    let start = all
        .iter()
        .filter_map(|e| e.first().map(|x| x.0))
        .fold(f64::NEG_INFINITY, f64::max);
    let end = all
        .iter()
        .filter_map(|e| e.last().map(|x| x.0))
        .fold(f64::INFINITY, f64::min);
    let mut gaps = Vec::new();
    for (r, e) in recs.iter().zip(&all) {
        for (i, w) in e.windows(2).enumerate() {
            let single = r.events.get(i + 1).is_some_and(|x| x.1 == 1);
            if single && w[0].0 >= start && w[1].0 <= end {
                gaps.push((w[1].0 - w[0].0, w[1].1));
            }
        }
    }
    gaps
}

/// A `Write` into memory that the caller keeps a handle on.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .map_err(|_| std::io::Error::other("poisoned"))?
            .extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Runs design points against a prepared target.
pub struct Runner<'a> {
    pub session: &'a mut Session,
    /// The run flags every point starts from (the user's target flags).
    pub base: CommonArgs<LoadArgs>,
    pub quiet: bool,
    /// Server tokens per client token of a prompt (the burst measures it):
    /// design lengths are the server's, so a prompt of `n` is asked for as
    /// `n / scale` of the client's tokenizer.
    pub scale: f64,
}

impl Runner<'_> {
    /// `requests` requests, `concurrency` at a time (closed loop, no
    /// warm-up), of about `input` prompt tokens of the server's (see
    /// `scale`) and exactly `output` output tokens each; the records of the
    /// requests, in the order they ended.
    pub async fn point(
        &mut self,
        concurrency: usize,
        requests: u64,
        input: usize,
        output: u32,
    ) -> Result<Vec<Rec>, Exit> {
        let mut flags = self.base.clone();
        flags.load.concurrency = Some(concurrency);
        flags.load.request_rate = None;
        flags.bounds.num_prompts = Some(requests);
        flags.bounds.duration = None;
        flags.bounds.warmup = WarmupPolicy::Fixed(Warmup::None);
        let asked = (input as f64 / self.scale).round().max(1.0) as u32;
        flags.workload.input_tokens = LengthSpec::Fixed(asked);
        flags.workload.output_tokens = Some(LengthSpec::Fixed(output));
        let spec = spec::run_spec(spec::run_load(&flags.load), &flags)?;
        let buffer = Shared::default();
        let mut sink = RecordsSink::new(Some(Box::new(buffer.clone())), true);
        let progress = Arc::new(Progress::default());
        let stopped = || {
            crate::exit::Exit(
                crate::exit::Code::Interrupted,
                anyhow!("calibration interrupted: no profile written"),
            )
        };
        let result = match self
            .session
            .target
            .run(&spec, &mut sink, &self.session.control, progress)
            .await
        {
            Err(goodput_core::plan::RunError::Interrupted) => return Err(stopped()),
            r => r.map_err(run_error)?,
        };
        if result.exec.interrupted {
            return Err(stopped());
        }
        let bytes = buffer
            .0
            .lock()
            .map_err(|_| crate::exit::internal(anyhow!("the records buffer was poisoned")))?
            .clone();
        let recs: Vec<Rec> = String::from_utf8_lossy(&bytes)
            .lines()
            .filter_map(Rec::parse)
            .collect();
        Ok(recs)
    }

    /// A line of progress on standard error, unless `--quiet`.
    pub fn say(&self, line: impl AsRef<str>) {
        if !self.quiet {
            eprintln!("goodput calibrate: {}", line.as_ref());
        }
    }
}

/// The median of `v` (sorted in place); `None` when empty.
pub fn median(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// A robust spread of the values of `v` (sorted): 1.4826 × their median
/// absolute deviation (a normal's σ).
pub fn spread(v: &[f64]) -> f64 {
    let mut m: Vec<f64> = v.to_vec();
    let Some(mid) = median(&mut m) else {
        return f64::INFINITY;
    };
    let mut dev: Vec<f64> = v.iter().map(|x| (x - mid).abs()).collect();
    1.4826 * median(&mut dev).unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(send_ms: f64, events: &[f64]) -> Rec {
        Rec {
            ok: true,
            send_ms: Some(send_ms),
            ttft_ms: events.first().copied(),
            e2el_ms: events.last().copied(),
            events: events.iter().map(|&t| (t, 1)).collect(),
            prompt_tokens: Some(100),
            error: None,
        }
    }

    #[test]
    fn common_gaps_are_those_while_every_request_streamed() {
        // a streams from 10 to 60 ms, b (sent 20 ms later, its events at 40
        // to 90 ms after the run's start) from 40 to 90: both stream from 40
        // to 60 ms.
        let a = rec(0.0, &[10.0, 20.0, 30.0, 40.0, 50.0, 60.0]);
        let b = rec(20.0, &[20.0, 30.0, 40.0, 50.0, 60.0, 70.0]);
        let gaps = common_gaps(&[&a, &b]);
        // a: 40→50, 50→60 (tokens before the later event: 4, 5); b: its
        // first two gaps (1, 2).
        let mut before: Vec<u64> = gaps.iter().map(|g| g.1).collect();
        before.sort_unstable();
        assert_eq!(before, vec![1, 2, 4, 5]);
        assert!(gaps.iter().all(|g| (g.0 - 10.0).abs() < 1e-9));
    }

    #[test]
    fn medians_and_spreads() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&mut []), None);
        // MAD of 1,2,3,4,100 is 1: robust to the outlier.
        assert!((spread(&[1.0, 2.0, 3.0, 4.0, 100.0]) - 1.4826).abs() < 1e-9);
    }
}
