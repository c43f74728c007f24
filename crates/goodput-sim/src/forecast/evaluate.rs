//! One offered rate: run every schedule, pool the measured requests, judge.
//!
//! Metrics, percentiles and pooling are [`crate::reference`]'s, so that a
//! fixed-length, one-turn forecast on one replica is the reference's answer.
//! On top, a point fails when its queue grows ([`QueueGrowth`]), as goodput's
//! search calls a saturated point a fail.

use crate::config::SimConfig;
use crate::error::SimError;
use crate::reference::{RefMetric, RefTerm};

use super::driver::{Deployment, ForecastRequest, Run};
use super::workload::Book;

/// How each rate is run, and how finely the search looks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ForecastPlan {
    /// Measured requests per schedule (every turn counts, as in a real run);
    /// a trace's replay also ends with its last request.
    pub requests_per_point: usize,
    /// Requests sent first, at the same rate, and left out of every figure
    /// (a trace's first rows).
    pub warmup_requests: usize,
    /// Independent Poisson schedules per rate (at least 1), pooled; exactly
    /// 1 for a trace, which is one schedule.
    pub seeds: u64,
    /// Schedule `k` draws its arrivals from seed `seed + k` (as
    /// [`crate::reference`] does) and its contents from a hash of it.
    pub seed: u64,
    /// Largest share of failed measured requests (0–1) a passing point may have.
    pub max_error_rate: f64,
    /// The search stops when `(failing − passing) / failing < precision`.
    pub precision: f64,
    /// Threads the schedules of a point are spread over (at least 1). The
    /// answer does not depend on it.
    pub threads: usize,
}

impl Default for ForecastPlan {
    /// 5 schedules of 40 warm-up + 400 measured requests, at most 1 %
    /// failed, 2 % precision, one thread.
    fn default() -> Self {
        ForecastPlan {
            requests_per_point: 400,
            warmup_requests: 40,
            seeds: 5,
            seed: 0,
            max_error_rate: 0.01,
            precision: 0.02,
            threads: 1,
        }
    }
}

/// The engines' waiting queue over the sending window: the mean number of
/// requests waiting for their first token (from arrival, every request of
/// the schedule, warm-up included) over its first and last thirds, averaged
/// over the schedules.
///
/// **Rule.** The queue grew, and the point is saturated, when the last
/// third's level is above the first's by at least `max(5, 4 √(first + 1))`
/// and is at least `2 × first + 2`: goodput's own saturation rule
/// (`goodput-core`'s `metrics::saturation`, its first signal), so a Poisson
/// swell of a short queue is not growth but a queue that builds past
/// capacity is, however short the run. Its second signal (time in flight
/// rising while nothing waits) is not checked: in the engine that shows as
/// TPOT, which an SLO bounds directly.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QueueGrowth {
    /// Mean requests waiting over the window's first third, averaged over schedules.
    pub first_third: f64,
    /// Mean requests waiting over the window's last third, averaged over schedules.
    pub last_third: f64,
}

impl QueueGrowth {
    /// Whether the queue grew by the rule above (the point is saturated).
    pub fn grew(&self) -> bool {
        let (first, last) = (self.first_third, self.last_third);
        last - first >= 5.0_f64.max(4.0 * (first + 1.0).sqrt()) && last >= 2.0 * first + 2.0
    }
}

/// The outcome at one offered rate.
#[derive(Debug, Clone, PartialEq)]
pub struct ForecastPoint {
    /// Offered rate: new sessions per second (requests per second for
    /// one-turn workloads).
    pub rate: f64,
    /// One per SLO term, in order, seconds; `None` when no measured request
    /// had a value for the metric.
    pub percentiles: Vec<Option<f64>>,
    /// Share of measured requests that failed (refused, or no token).
    pub error_rate: f64,
    /// Output tokens of the measured requests per second from the first
    /// measured arrival to the last measured completion (summed over
    /// schedules: total tokens / total spans).
    pub output_throughput: f64,
    /// Completed measured requests per second over the same spans.
    pub request_throughput: f64,
    /// Share of the measured requests' prompt tokens the prefix cache served.
    pub cached_share: f64,
    /// The waiting queue's level over the sending window.
    pub queue: QueueGrowth,
    /// The queue grew ([`QueueGrowth::grew`]).
    pub saturated: bool,
    /// Every term met, errors within bounds, and not saturated.
    pub meets: bool,
}

/// Pooled figures of the measured requests of several schedules.
#[derive(Default)]
struct Pool {
    samples: Vec<Vec<f64>>,
    measured: usize,
    failed: usize,
    completed: usize,
    tokens: usize,
    span_s: f64,
    prompt_tokens: usize,
    cached_tokens: usize,
    first_third: f64,
    last_third: f64,
}

impl Pool {
    fn add(&mut self, slo: &[RefTerm], requests: &[ForecastRequest]) {
        let (mut first_send, mut last_done) = (f64::INFINITY, f64::NEG_INFINITY);
        let (mut window_start, mut window_end) = (f64::INFINITY, f64::NEG_INFINITY);
        for q in requests.iter().filter(|q| q.measured) {
            self.measured += 1;
            first_send = first_send.min(q.arrival_s);
            last_done = last_done.max(q.done_s());
            window_start = window_start.min(q.arrival_s);
            window_end = window_end.max(q.arrival_s);
            self.prompt_tokens += q.prompt_tokens;
            self.cached_tokens += q.cached_tokens;
            match (q.first_token_s, q.last_token_s) {
                (Some(first), Some(last)) if !q.failed() => {
                    self.completed += 1;
                    self.tokens += q.tokens;
                    for (values, term) in self.samples.iter_mut().zip(slo) {
                        values.extend(metric(term.metric, q, first, last));
                    }
                }
                _ => self.failed += 1,
            }
        }
        if last_done > first_send {
            self.span_s += last_done - first_send;
        }
        let third = (window_end - window_start) / 3.0;
        if third > 0.0 {
            self.first_third += waiting(requests, window_start, window_start + third);
            self.last_third += waiting(requests, window_end - third, window_end);
        }
    }
}

/// `metric` of one request, with [`RefMetric`]'s definitions (computed in
/// the same order, so the values are the reference's bit for bit).
fn metric(m: RefMetric, q: &ForecastRequest, first: f64, last: f64) -> Option<f64> {
    match m {
        RefMetric::Ttft => Some(first - q.arrival_s),
        RefMetric::E2el => Some(last - q.arrival_s),
        RefMetric::Tpot => (q.tokens >= 2).then(|| (last - first) / (q.tokens - 1) as f64),
        RefMetric::Itl => (q.tokens >= 2).then_some(q.max_gap_s),
    }
}

/// Mean number of requests waiting for a first token over `[from, to]`.
fn waiting(requests: &[ForecastRequest], from: f64, to: f64) -> f64 {
    let total: f64 = requests
        .iter()
        .map(|q| (q.started_s().min(to) - q.arrival_s.max(from)).max(0.0))
        .sum();
    total / (to - from)
}

/// Run `books` (one per schedule) at `rate` and judge the pooled measured
/// requests.
pub(crate) fn evaluate(
    config: &SimConfig,
    deployment: &Deployment,
    slo: &[RefTerm],
    plan: &ForecastPlan,
    books: &mut [Book],
    rate: f64,
) -> Result<ForecastPoint, SimError> {
    let runs = run_all(config, deployment, plan, books, rate)?;
    let mut pool = Pool {
        samples: vec![Vec::new(); slo.len()],
        ..Pool::default()
    };
    for requests in &runs {
        pool.add(slo, requests);
    }
    let schedules = runs.len().max(1) as f64;
    let queue = QueueGrowth {
        first_third: pool.first_third / schedules,
        last_third: pool.last_third / schedules,
    };
    let error_rate = pool.failed as f64 / pool.measured.max(1) as f64;
    let percentiles =
        crate::rate_search::pooled_percentiles(&mut pool.samples, slo.iter().map(|t| t.percentile));
    let saturated = queue.grew();
    let meets = !saturated
        && error_rate <= plan.max_error_rate
        && percentiles
            .iter()
            .zip(slo)
            .all(|(p, term)| p.is_some_and(|p| p <= term.threshold_s));
    let per_s = |n: usize| {
        if pool.span_s > 0.0 {
            n as f64 / pool.span_s
        } else {
            0.0
        }
    };
    Ok(ForecastPoint {
        rate,
        percentiles,
        error_rate,
        output_throughput: per_s(pool.tokens),
        request_throughput: per_s(pool.completed),
        cached_share: pool.cached_tokens as f64 / pool.prompt_tokens.max(1) as f64,
        queue,
        saturated,
        meets,
    })
}

/// Every schedule's requests at `rate`, in schedule order, spread over
/// `plan.threads` threads.
fn run_all(
    config: &SimConfig,
    deployment: &Deployment,
    plan: &ForecastPlan,
    books: &mut [Book],
    rate: f64,
) -> Result<Vec<Vec<ForecastRequest>>, SimError> {
    let one = |book: &mut Book| {
        Run::new(
            config,
            deployment,
            book,
            rate,
            plan.warmup_requests,
            plan.requests_per_point,
        )
        .map(Run::run)
    };
    let threads = plan.threads.clamp(1, books.len().max(1));
    if threads == 1 {
        return books.iter_mut().map(one).collect();
    }
    let chunk = books.len().div_ceil(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = books
            .chunks_mut(chunk)
            .map(|part| s.spawn(move || part.iter_mut().map(one).collect::<Vec<_>>()))
            .collect();
        let mut out = Vec::new();
        for h in handles {
            let part = h
                .join()
                .map_err(|_| SimError::invalid("threads", "a schedule's thread panicked"))?;
            for r in part {
                out.push(r?);
            }
        }
        Ok(out)
    })
}
