//! Live statistics of a running simulator: what `/metrics` renders and what
//! [`SimStats`] reports, in particular each step's lateness (how long after
//! its deadline a step actually started), the figure that says whether the
//! simulator kept real time.
//!
//! The engine thread updates [`LiveStats`] once per step under one short lock.

use std::sync::{Arc, Mutex, MutexGuard};

use crate::engine::EngineCounters;
use crate::priority::EnginePriority;

/// vLLM's TTFT buckets, seconds.
pub const TTFT_BUCKETS: &[f64] = &[
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
    20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
];
/// vLLM's per-output-token buckets, seconds.
pub const TPOT_BUCKETS: &[f64] = &[
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0,
    40.0, 80.0,
];
/// vLLM's end-to-end latency buckets, seconds.
pub const E2E_BUCKETS: &[f64] = &[
    0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0,
    480.0, 960.0, 1920.0, 7680.0,
];
/// Step lateness buckets, seconds (fine around 1 ms, where the target is;
/// exact percentiles are exported as gauges beside the histogram).
pub const LATENESS_BUCKETS: &[f64] = &[
    0.000_01, 0.000_025, 0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.000_75, 0.001, 0.001_5, 0.002,
    0.002_5, 0.005, 0.01, 0.025, 0.1,
];
/// Step duration buckets, seconds.
pub const STEP_BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1, 0.25, 0.5, 1.0,
];

/// A Prometheus-style cumulative histogram.
#[derive(Debug, Clone)]
pub struct Histogram {
    /// Upper bounds of the finite buckets, ascending.
    pub bounds: &'static [f64],
    /// Per-bucket (not cumulative) counts; the last is the +Inf bucket.
    pub counts: Vec<u64>,
    /// Sum of the values observed.
    pub sum: f64,
    /// Values observed.
    pub count: u64,
}

impl Histogram {
    /// An empty histogram with buckets up to `bounds` and a +Inf bucket.
    pub fn new(bounds: &'static [f64]) -> Self {
        Histogram {
            bounds,
            counts: vec![0; bounds.len() + 1],
            sum: 0.0,
            count: 0,
        }
    }

    /// Count `v` in the first bucket whose bound is at least `v`.
    pub fn observe(&mut self, v: f64) {
        let i = self.bounds.partition_point(|&b| b < v);
        self.counts[i] += 1;
        self.sum += v;
        self.count += 1;
    }
}

const EXACT_BINS: usize = 100_000; // 1 µs bins up to 100 ms

/// Lateness with 1 µs resolution up to 100 ms (beyond that, counted and the maximum kept).
#[derive(Debug, Clone)]
pub struct LatenessRecorder {
    bins: Vec<u32>,
    overflow: u64,
    count: u64,
    sum_ns: u128,
    max_ns: u64,
}

impl Default for LatenessRecorder {
    fn default() -> Self {
        LatenessRecorder {
            bins: vec![0; EXACT_BINS],
            overflow: 0,
            count: 0,
            sum_ns: 0,
            max_ns: 0,
        }
    }
}

impl LatenessRecorder {
    /// Record one step's lateness, ns.
    pub fn record_ns(&mut self, ns: u64) {
        let us = (ns / 1000) as usize;
        if let Some(b) = self.bins.get_mut(us) {
            *b = b.saturating_add(1);
        } else {
            self.overflow += 1;
        }
        self.count += 1;
        self.sum_ns += u128::from(ns);
        self.max_ns = self.max_ns.max(ns);
    }

    /// The q-quantile (0–1), seconds, to 1 µs (upper edge of its bin).
    pub fn quantile_s(&self, q: f64) -> f64 {
        self.quantiles_s([q])[0]
    }

    /// Several quantiles (ascending) in one pass over the bins.
    pub fn quantiles_s<const N: usize>(&self, qs: [f64; N]) -> [f64; N] {
        let mut out = [0.0; N];
        if self.count == 0 {
            return out;
        }
        let max_s = self.max_ns as f64 * 1e-9;
        let rank = |q: f64| ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut next = 0;
        let mut seen = 0u64;
        for (us, &n) in self.bins.iter().enumerate() {
            if n == 0 {
                continue;
            }
            seen += u64::from(n);
            while next < N && seen >= rank(qs[next]) {
                out[next] = ((us + 1) as f64 * 1e-6).min(max_s);
                next += 1;
            }
            if next == N {
                return out;
            }
        }
        for o in &mut out[next..] {
            *o = max_s;
        }
        out
    }

    /// Lateness samples recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Mean lateness, seconds (0 with no samples).
    pub fn mean_s(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum_ns as f64 / self.count as f64 * 1e-9
        }
    }

    /// Largest lateness, seconds.
    pub fn max_s(&self) -> f64 {
        self.max_ns as f64 * 1e-9
    }
}

/// A snapshot of a simulator's statistics.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct SimStats {
    /// Steps run by the engine thread.
    pub steps: u64,
    /// Steps whose lateness was recorded (those that started on a deadline).
    pub lateness_samples: u64,
    /// Mean step lateness, seconds.
    pub lateness_mean_s: f64,
    /// Median step lateness, seconds (exact to 1 µs).
    pub lateness_p50_s: f64,
    /// 99th percentile of step lateness, seconds (exact to 1 µs).
    pub lateness_p99_s: f64,
    /// 99.9th percentile of step lateness, seconds (exact to 1 µs).
    pub lateness_p999_s: f64,
    /// Largest step lateness, seconds.
    pub lateness_max_s: f64,
    /// Wall time the engine thread spent working (from a wake-up to the
    /// next sleep), in total and at most for one step.
    pub engine_work_s: f64,
    /// Engine work of the longest step (see `engine_work_s`), seconds.
    pub engine_work_max_s: f64,
    /// The scheduling priority the engine thread obtained.
    pub engine_priority: EnginePriority,
    /// Output tokens generated.
    pub generation_tokens: u64,
    /// Prompt tokens of requests admitted (counted at first admission).
    pub prompt_tokens: u64,
    /// Requests that produced their last token.
    pub finished_requests: u64,
    /// Sequences preempted.
    pub preemptions: u64,
    /// Prompt tokens found in the prefix cache, over every admission.
    pub prefix_cache_hits: u64,
    /// Sequences running at the last update.
    pub running: usize,
    /// Requests waiting at the last update.
    pub waiting: usize,
    /// Share of KV-cache blocks in use at the last update, 0–1.
    pub kv_cache_usage: f64,
}

/// Everything the engine thread publishes.
#[derive(Debug, Clone)]
pub struct LiveState {
    /// The engine's cumulative counters.
    pub counters: EngineCounters,
    /// Sequences running.
    pub running: usize,
    /// Requests waiting.
    pub waiting: usize,
    /// Share of KV-cache blocks in use, 0–1.
    pub kv_usage: f64,
    /// Time to first token from arrival at the engine, seconds.
    pub ttft: Histogram,
    /// Gaps between consecutive tokens of a request, seconds.
    pub inter_token: Histogram,
    /// Arrival at the engine to last token, seconds.
    pub e2e: Histogram,
    /// Step times, seconds.
    pub step_duration: Histogram,
    /// Step lateness (wake-up minus deadline) since the last
    /// `LiveStats::reset_lateness`, seconds.
    pub lateness: Histogram,
    /// The same lateness to 1 µs, for exact percentiles.
    pub lateness_exact: LatenessRecorder,
    /// Requests finished at `max_tokens` (finish reason `length`).
    pub finished_length: u64,
    /// Requests finished at their drawn length (finish reason `stop`).
    pub finished_stop: u64,
    /// Requests aborted because their client went away.
    pub finished_abort: u64,
    /// The scheduling priority the engine thread obtained.
    pub priority: EnginePriority,
    /// Wall time the engine thread spent working (wake-up to next sleep)
    /// since the last `LiveStats::reset_lateness`, ns.
    pub engine_work_ns: u64,
    /// The most of it for one step, ns.
    pub engine_work_max_ns: u64,
    /// What the GPUs have drawn (`/dcgm/metrics`).
    pub power: crate::power::PowerState,
    /// Draft tokens a step under speculative decoding (0: off).
    pub spec_tokens: u32,
}

impl Default for LiveState {
    fn default() -> Self {
        LiveState {
            counters: EngineCounters::default(),
            running: 0,
            waiting: 0,
            kv_usage: 0.0,
            ttft: Histogram::new(TTFT_BUCKETS),
            inter_token: Histogram::new(TPOT_BUCKETS),
            e2e: Histogram::new(E2E_BUCKETS),
            step_duration: Histogram::new(STEP_BUCKETS),
            lateness: Histogram::new(LATENESS_BUCKETS),
            lateness_exact: LatenessRecorder::default(),
            finished_length: 0,
            finished_stop: 0,
            finished_abort: 0,
            priority: EnginePriority::default(),
            engine_work_ns: 0,
            engine_work_max_ns: 0,
            power: crate::power::PowerState::default(),
            spec_tokens: 0,
        }
    }
}

impl LiveState {
    /// The summary figures (lateness percentiles in one pass).
    pub fn summary(&self) -> SimStats {
        let l = &self.lateness_exact;
        let [p50, p99, p999] = l.quantiles_s([0.5, 0.99, 0.999]);
        SimStats {
            steps: self.counters.steps,
            lateness_samples: l.count,
            lateness_mean_s: l.mean_s(),
            lateness_p50_s: p50,
            lateness_p99_s: p99,
            lateness_p999_s: p999,
            lateness_max_s: l.max_s(),
            engine_work_s: self.engine_work_ns as f64 * 1e-9,
            engine_work_max_s: self.engine_work_max_ns as f64 * 1e-9,
            engine_priority: self.priority,
            generation_tokens: self.counters.generation_tokens,
            prompt_tokens: self.counters.prompt_tokens,
            finished_requests: self.counters.finished,
            preemptions: self.counters.preemptions,
            prefix_cache_hits: self.counters.prefix_cache_hits,
            running: self.running,
            waiting: self.waiting,
            kv_cache_usage: self.kv_usage,
        }
    }

    /// Everything but the exact lateness bins (for rendering `/metrics`
    /// outside the lock, with [`LiveState::summary`]).
    pub fn without_exact(&self) -> LiveState {
        LiveState {
            counters: self.counters,
            running: self.running,
            waiting: self.waiting,
            kv_usage: self.kv_usage,
            ttft: self.ttft.clone(),
            inter_token: self.inter_token.clone(),
            e2e: self.e2e.clone(),
            step_duration: self.step_duration.clone(),
            lateness: self.lateness.clone(),
            // Not copied: 400 kB; the summary carries its percentiles.
            lateness_exact: LatenessRecorder {
                bins: Vec::new(),
                overflow: 0,
                count: 0,
                sum_ns: 0,
                max_ns: 0,
            },
            finished_length: self.finished_length,
            finished_stop: self.finished_stop,
            finished_abort: self.finished_abort,
            priority: self.priority,
            engine_work_ns: self.engine_work_ns,
            engine_work_max_ns: self.engine_work_max_ns,
            power: self.power.clone(),
            spec_tokens: self.spec_tokens,
        }
    }
}

/// Shared handle on the live state.
#[derive(Debug, Clone, Default)]
pub struct LiveStats(Arc<Mutex<LiveState>>);

impl LiveStats {
    /// Empty statistics of a server of `config`: its GPUs' power model and
    /// its speculative decoding.
    pub fn for_config(config: &crate::config::SimConfig) -> LiveStats {
        let stats = LiveStats::default();
        {
            let mut s = stats.lock();
            s.power = crate::power::PowerState::new(
                &config.hardware,
                config.tensor_parallel,
                config.gpu_memory_utilization,
            );
            s.spec_tokens = config.spec.tokens;
        }
        stats
    }

    /// Lock the state (a poisoned lock is taken as is).
    pub fn lock(&self) -> MutexGuard<'_, LiveState> {
        // A poisoned lock only means a panic elsewhere; the counters stay usable.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The summary figures now.
    pub fn snapshot(&self) -> SimStats {
        self.lock().summary()
    }

    /// A copy to render `/metrics` from, taken under a short lock.
    pub fn view(&self) -> (LiveState, SimStats) {
        let s = self.lock();
        (s.without_exact(), s.summary())
    }

    /// Forget the lateness samples (to measure a window).
    pub fn reset_lateness(&self) {
        let mut s = self.lock();
        s.lateness_exact = LatenessRecorder::default();
        s.lateness = Histogram::new(LATENESS_BUCKETS);
        s.engine_work_ns = 0;
        s.engine_work_max_ns = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lateness_quantiles_to_the_microsecond() {
        let mut r = LatenessRecorder::default();
        for us in 1..=100u64 {
            r.record_ns(us * 1000 - 500);
        }
        assert!(
            (r.quantile_s(0.5) - 50e-6).abs() < 1.5e-6,
            "{}",
            r.quantile_s(0.5)
        );
        assert!((r.quantile_s(0.99) - 99e-6).abs() < 1.5e-6);
        r.record_ns(2_000_000_000);
        assert_eq!(r.quantile_s(1.0), 2.0);
    }

    #[test]
    fn several_quantiles_in_one_pass_agree_with_one_at_a_time() {
        let mut r = LatenessRecorder::default();
        for i in 0..5000u64 {
            r.record_ns((i * 7919) % 3_000_000);
        }
        r.record_ns(200_000_000); // beyond the bins
        let qs = [0.5, 0.99, 0.999, 1.0];
        let all = r.quantiles_s(qs);
        for (q, v) in qs.iter().zip(all) {
            assert_eq!(v, r.quantile_s(*q), "q {q}");
        }
        assert_eq!(all[3], 0.2);
        let s = LiveState {
            lateness_exact: r,
            ..LiveState::default()
        };
        let v = s.without_exact();
        assert_eq!(s.summary().lateness_p99_s, all[1]);
        assert_eq!(v.lateness_exact.count(), 0);
    }

    #[test]
    fn histogram_puts_values_on_the_upper_bound_inclusive() {
        let mut h = Histogram::new(&[0.1, 1.0]);
        h.observe(0.1);
        h.observe(0.5);
        h.observe(5.0);
        assert_eq!(h.counts, vec![1, 1, 1]);
        assert_eq!(h.count, 3);
    }
}
