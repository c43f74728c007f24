//! The goodput search run against the simulator's engine in virtual time:
//! the same search ([`goodput_core::plan::Search`]), the same metrics
//! ([`goodput_core::measure::Collector`], with the schedule adjustment) and
//! the same arrival schedules ([`goodput_core::load::Schedule`]) as a
//! real sweep, with the HTTP round trips replaced by the engine's token
//! times. A whole search takes milliseconds, so its accuracy can be judged
//! over many arrival samples against the sustained reference
//! ([`goodput_sim::reference`]).
//!
//! Shared by the `search_accuracy` example, `tests/search_virtual.rs` and
//! `tests/reference.rs`, each of which uses part of it.
#![allow(dead_code)]

use std::time::Duration;

use goodput_core::load::{Arrival, Load, Schedule};
use goodput_core::measure::ControlSpec;
use goodput_core::measure::Slo;
use goodput_core::measure::Verdict;
use goodput_core::measure::{Collector, EarlyStop, Metric, RequestMetrics, RunMetrics};
use goodput_core::plan::{Answer, Search, Step};
use goodput_core::request::{ErrorKind, Event, RequestError, RequestRecord, ServerUsage};
use goodput_core::tokenizer::Tokenizer;
use goodput_sim::closed_loop::simulate_closed_loop_with;
use goodput_sim::virtual_time::{simulate, VirtualOutcome, VirtualRequest};
use goodput_sim::{reference_goodput, RefMetric, RefPlan, RefTerm, RefWorkload, SimConfig};

/// A deployment and a workload of fixed lengths.
pub struct Virtual {
    pub config: SimConfig,
    pub input_tokens: usize,
    pub output_tokens: usize,
    pub slo: Slo,
    /// Keep the load on after the measured requests have been sent, with
    /// requests that are not measured, until every measured one is done:
    /// the measured requests' last ones then see the same load as the rest
    /// (a study of the drain's effect on the figures).
    pub cooldown: bool,
    /// The search's points end early once their verdict is settled, as a
    /// real sweep's do.
    pub early_stop: bool,
}

impl Virtual {
    /// The README's main job: the default preset, chat at 1,024 in / 128
    /// out, `ttft:p99<=200ms,tpot:p99<=50ms`.
    pub fn readme() -> Self {
        Virtual {
            config: SimConfig::default(),
            input_tokens: 1024,
            output_tokens: 128,
            cooldown: false,
            early_stop: true,
            slo: Slo {
                terms: goodput_core::measure::parse_terms(&[
                    "ttft:p99<=200ms,tpot:p99<=50ms".into()
                ])
                .expect("the README's SLO"),
                max_error_rate: 0.01,
                ..Default::default()
            },
        }
    }

    /// The same deployment `k` times slower: every engine step `k` times
    /// longer and the SLO's thresholds `k` times looser, so the same queue
    /// in slow motion, its goodput `k` times lower, while a search's
    /// windows stay as many seconds: its points hold `k` times fewer
    /// requests, as on a slow real server.
    pub fn slower(mut self, k: f64) -> Self {
        self.config.time_scale *= k;
        for t in &mut self.slo.terms {
            t.threshold_ms *= k;
        }
        self
    }

    /// The sustained goodput of this deployment, workload and SLO in
    /// virtual time ([`goodput_sim::reference`]): `schedules` Poisson
    /// schedules of `requests` each (after 40 warm-up requests) pooled per
    /// rate, the rate searched in `range` to `precision`.
    pub fn reference(
        &self,
        schedules: u64,
        requests: usize,
        range: (f64, f64),
        precision: f64,
    ) -> f64 {
        let terms: Vec<RefTerm> = self
            .slo
            .terms
            .iter()
            .map(|t| {
                let metric = match t.metric {
                    Metric::Ttft => RefMetric::Ttft,
                    Metric::Tpot => RefMetric::Tpot,
                    Metric::Itl => RefMetric::Itl,
                    _ => RefMetric::E2el,
                };
                RefTerm::new(metric, t.percentile, t.threshold_ms / 1e3)
            })
            .collect();
        reference_goodput(
            &self.config,
            &RefWorkload {
                input_tokens: self.input_tokens,
                output_tokens: self.output_tokens,
            },
            &terms,
            &RefPlan {
                requests_per_point: requests,
                warmup_requests: 40,
                seeds: schedules,
                seed: 0,
                max_error_rate: self.slo.max_error_rate,
            },
            range.0,
            range.1,
            precision,
        )
        .expect("a valid reference plan")
        .goodput
    }
}

/// Each request's prompt and output lengths.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Lengths {
    /// The workload's own lengths for every request.
    Fixed,
    /// Each length uniform in `[(1 − r)·x, (1 + r)·x]` around the
    /// workload's `x`, as `--random-range-ratio r` draws them.
    Uniform(f64),
}

impl Lengths {
    /// The i-th request's `(input, output)` lengths, drawn from `seed`.
    fn sampler(self, v: &Virtual, seed: u64) -> impl FnMut(usize) -> (usize, usize) {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ 0x1e46_7a5b);
        let (input, output) = (v.input_tokens, v.output_tokens);
        move |_| match self {
            Lengths::Fixed => (input, output),
            Lengths::Uniform(r) => {
                let mut draw = |x: usize| {
                    let lo = ((1.0 - r) * x as f64).round().max(1.0) as usize;
                    let hi = ((1.0 + r) * x as f64).round().max(lo as f64) as usize;
                    rng.random_range(lo..=hi)
                };
                let i = draw(input);
                (i, draw(output).max(2))
            }
        }
    }
}

/// A virtual run's metrics, its records (in the order they finished) and
/// its load time (s).
pub struct Run {
    pub metrics: RunMetrics,
    pub records: Vec<RequestRecord>,
    pub wall_s: f64,
    /// The verdict the run ended early on, as a sweep point ends.
    pub early: Option<Verdict>,
}

/// How the search is run: the sweep's defaults unless a caller changes them.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    pub precision: f64,
    /// `--search-time`: None for `auto` (sized to the answer).
    pub budget: Option<Duration>,
    pub explore: Duration,
    pub measure: Duration,
}

impl Default for Plan {
    fn default() -> Self {
        Plan {
            precision: 0.05,
            budget: None,
            explore: Duration::from_secs(8),
            measure: Duration::from_secs(40),
        }
    }
}

const NS: f64 = 1e9;
/// Every virtual run starts here on the run clock (any value > 0 does).
const ORIGIN_NS: u64 = 1_000_000_000;

impl Virtual {
    /// The concurrency-1 floor: (median TTFT ms, throughput req/s) of one
    /// request alone on the engine.
    pub fn floor(&self) -> (f64, f64) {
        let report = simulate(
            &self.config,
            &[VirtualRequest::unique(
                0.0,
                self.input_tokens,
                self.output_tokens,
                0,
            )],
        )
        .expect("the engine takes one request");
        let times = &report.requests[0].token_times_s;
        (times[0] * 1e3, 1.0 / times[times.len() - 1])
    }

    /// One open-loop point: `warmup` then `measured` Poisson arrivals at
    /// `rate` drawn as a real run draws them with `seed`; its metrics and
    /// its load time (s).
    pub fn point(
        &self,
        rate: f64,
        measured: u64,
        warmup: u64,
        seed: u64,
        control: Option<ControlSpec>,
    ) -> (RunMetrics, f64) {
        let run = self.open(rate, measured, warmup, seed, Lengths::Fixed, control, false);
        (run.metrics, run.wall_s)
    }

    /// An open-loop run: `warmup` then `measured` Poisson arrivals at
    /// `rate` drawn as a real run draws them with `seed`, each request's
    /// lengths from `lengths` (drawn from `seed` too); when `early`, it ends
    /// once the SLO verdict is settled, as a sweep's exploring points do.
    #[allow(clippy::too_many_arguments)]
    pub fn open(
        &self,
        rate: f64,
        measured: u64,
        warmup: u64,
        seed: u64,
        lengths: Lengths,
        control: Option<ControlSpec>,
        early: bool,
    ) -> Run {
        let load = Load::Open {
            rate,
            arrival: Arrival::Poisson,
            max_concurrency: None,
        };
        let mut schedule = Schedule::new(load, seed);
        let n = (warmup + measured) as usize;
        // A cool-down of 60 s of arrivals outlasts any measured request.
        let extra = if self.cooldown {
            (rate * 60.0).ceil() as usize
        } else {
            0
        };
        let arrivals: Vec<f64> = (0..n + extra)
            .map(|_| schedule.next_offset().expect("open loop").as_secs_f64())
            .collect();
        let mut draw = lengths.sampler(self, seed);
        let lens: Vec<(usize, usize)> = (0..n + extra).map(&mut draw).collect();
        let requests: Vec<VirtualRequest> = arrivals
            .iter()
            .zip(&lens)
            .enumerate()
            .map(|(i, (&a, &(inp, out)))| VirtualRequest::unique(a, inp, out, i as u32))
            .collect();
        let report = simulate(&self.config, &requests).expect("the engine runs the schedule");
        self.measure(
            load,
            &arrivals,
            &report.requests,
            &lens,
            warmup,
            n,
            seed,
            control,
            early,
        )
    }

    /// A closed-loop run: `concurrency` users, `warmup` then `measured`
    /// requests in the order they are sent, each request's lengths from
    /// `lengths` (drawn from `seed`).
    pub fn closed(
        &self,
        concurrency: usize,
        measured: u64,
        warmup: u64,
        seed: u64,
        lengths: Lengths,
    ) -> Run {
        let load = Load::Closed { concurrency };
        let n = (warmup + measured) as usize;
        // A cool-down of 4 more requests a user outlasts the measured ones.
        let extra = if self.cooldown { 4 * concurrency } else { 0 };
        let mut draw = lengths.sampler(self, seed);
        let lens: Vec<(usize, usize)> = (0..n + extra).map(&mut draw).collect();
        let report = simulate_closed_loop_with(&self.config, concurrency, n + extra, |i| lens[i])
            .expect("the engine runs the closed loop");
        self.measure(
            load,
            &report.arrivals_s,
            &report.requests,
            &lens,
            warmup,
            n,
            seed,
            None,
            false,
        )
    }

    /// The records of a virtual run, fed to the collector in the order
    /// they finish (as the aggregator sees them), and its metrics.
    #[allow(clippy::too_many_arguments)]
    fn measure(
        &self,
        load: Load,
        arrivals: &[f64],
        outcomes: &[VirtualOutcome],
        lens: &[(usize, usize)],
        warmup: u64,
        end: usize,
        seed: u64,
        control: Option<ControlSpec>,
        early: bool,
    ) -> Run {
        let tokenizer = Tokenizer::from_spec("none").expect("the null tokenizer");
        let planned = (end as u64).saturating_sub(warmup);
        let early_stop = early
            .then(|| EarlyStop::new(self.slo.terms.clone(), planned, 0.05))
            .flatten();
        let mut collector = Collector::new(self.slo.request_thresholds(), load.is_open())
            .with_schedule_control(control, load, &self.slo.terms)
            .with_arrivals(&load)
            .with_early_stop(early_stop);
        let at = |s: f64| ORIGIN_NS + (s * NS) as u64;
        collector.measure_start(at(arrivals[warmup as usize]));
        let mut records: Vec<RequestRecord> = arrivals
            .iter()
            .zip(outcomes)
            .zip(lens)
            .enumerate()
            .map(|(i, ((&a, out), &(input, output)))| {
                let mut rec = RequestRecord {
                    request_id: i as u64,
                    // The cool-down is left out as the warm-up is.
                    warmup: (i as u64) < warmup || i >= end,
                    t_sched: at(a),
                    t_send: Some(at(a)),
                    t_done: at(out.token_times_s.last().copied().unwrap_or(a)),
                    max_tokens: Some(output as u32),
                    streamed: true,
                    ..Default::default()
                };
                if out.rejected.is_some() || out.token_times_s.is_empty() {
                    rec.error = Some(RequestError {
                        kind: ErrorKind::HttpStatus,
                        message: "rejected by the engine".into(),
                        retry_after: None,
                    });
                    rec.http_status = Some(503);
                    return rec;
                }
                rec.events = out
                    .token_times_s
                    .iter()
                    .enumerate()
                    .map(|(k, &t)| Event {
                        at_ns: at(t),
                        text_end: 4 * (k as u32 + 1),
                        usage_completion_tokens: None,
                        reasoning: false,
                    })
                    .collect();
                rec.output_text = " the".repeat(out.token_times_s.len());
                rec.usage = Some(ServerUsage {
                    prompt_tokens: Some(input as u32),
                    completion_tokens: Some(out.token_times_s.len() as u32),
                    ..Default::default()
                });
                rec.finish_reason = Some("length".into());
                rec
            })
            .collect();
        feed(&mut collector, &mut records, &tokenizer);
        let mut percentiles = vec![50.0, 90.0, 95.0, 99.0];
        for t in &self.slo.terms {
            if !percentiles.contains(&t.percentile) {
                percentiles.push(t.percentile);
            }
        }
        let metrics = collector.summarize(&percentiles, None, seed, Some(&self.slo));
        let last = records.iter().map(|r| r.t_done).max().unwrap_or(ORIGIN_NS);
        Run {
            early: collector.early_verdict(),
            metrics,
            records,
            wall_s: (last - ORIGIN_NS) as f64 / NS,
        }
    }

    /// A whole search from the floor to its answer, the points sampled as a
    /// sweep with `--seed seed` samples them.
    pub fn search(&self, plan: Plan, seed: u64) -> (Answer, Search) {
        let (ttft_ms, throughput) = self.floor();
        // The sweep's windows: a few of the floor's answers at least (one
        // request alone: its E2EL is 1 / throughput). `SEARCH_WINDOWS=E,M`
        // sets other multiples (a study of them).
        let answer_s = 1.0 / throughput;
        let (explore, measure) = match std::env::var("SEARCH_WINDOWS") {
            Ok(w) => {
                let k: Vec<f64> = w.split(',').filter_map(|x| x.parse().ok()).collect();
                let at = |k: f64| Duration::from_secs_f64(k * answer_s);
                (plan.explore.max(at(k[0])), plan.measure.max(at(k[1])))
            }
            Err(_) => goodput_core::plan::search_windows(plan.explore, plan.measure, answer_s),
        };
        let (config, control) = goodput_core::plan::search_config(
            Some(ttft_ms),
            throughput,
            &self.slo,
            plan.precision,
            plan.budget.map_or(
                goodput_core::plan::Budget::Sized {
                    cap_s: f64::INFINITY,
                },
                |b| goodput_core::plan::Budget::Fixed(b.as_secs_f64()),
            ),
            explore,
            measure,
        );
        let mut search = Search::new(config);
        // Point 0 is the floor, as in a sweep.
        let mut index = 1u64;
        loop {
            let (rate, measured, measuring) = match search.next() {
                Step::Done => break,
                Step::Explore { rate } => (
                    rate,
                    (rate * search.config().explore_s).ceil() as u64,
                    false,
                ),
                Step::Measure { rate, requests } => (rate, requests, true),
            };
            // The sweep's automatic warm-up: 2 s of arrivals, 8 to 500.
            let warmup = ((rate * 2.0).ceil() as u64).clamp(8, 500);
            let run = self.open(
                rate,
                measured,
                warmup,
                seed.wrapping_add(index),
                Lengths::Fixed,
                control,
                // Exploring points end on a settled verdict; measuring
                // points run their length (as the sweep runs them).
                self.early_stop && !measuring,
            );
            index += 1;
            let load = Load::Open {
                rate,
                arrival: Arrival::Poisson,
                max_concurrency: None,
            };
            search.record(goodput_core::plan::observe_metrics(
                &run.metrics,
                &load,
                run.early,
                run.wall_s,
                measuring,
            ));
        }
        (search.answer(), search)
    }
}

/// Feed `records` to the collector in the order they finished, as the
/// aggregator sees them; when the collector's early stop settles the
/// verdict the run ends there (nothing more is sent, and what is in flight
/// is abandoned), and the records that finish later are dropped.
fn feed(collector: &mut Collector, records: &mut Vec<RequestRecord>, tokenizer: &Tokenizer) {
    records.sort_by_key(|r| r.t_done);
    // Measured sends in time order, for the requests in flight at a look.
    let mut sends: Vec<u64> = records
        .iter()
        .filter(|r| !r.warmup)
        .filter_map(|r| r.t_send)
        .collect();
    sends.sort_unstable();
    let mut measured_done = 0u64;
    for (i, rec) in records.iter().enumerate() {
        collector.add(rec, &RequestMetrics::derive(rec, tokenizer));
        if !rec.warmup && !rec.incomplete() {
            measured_done += 1;
        }
        let sent = sends.partition_point(|&t| t <= rec.t_done) as u64;
        if collector
            .check_early(sent.saturating_sub(measured_done))
            .is_some()
        {
            records.truncate(i + 1);
            return;
        }
    }
}
