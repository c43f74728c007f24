//! The goodput search run against the simulator's engine in virtual time:
//! the same search ([`goodput_core::search`]), the same metrics
//! ([`goodput_core::metrics::Collector`], with the schedule adjustment) and
//! the same arrival schedules ([`goodput_core::schedule::Schedule`]) as a
//! real sweep, with the HTTP round trips replaced by the engine's token
//! times. A whole search takes milliseconds, so its accuracy can be judged
//! over many arrival samples against the sustained reference
//! ([`goodput_sim::reference`]).
//!
//! Shared by the `search_accuracy` example, `tests/search_virtual.rs` and
//! `tests/reference.rs`, each of which uses part of it.
#![allow(dead_code)]

use std::time::Duration;

use goodput_core::metrics::control::ControlSpec;
use goodput_core::metrics::{Collector, Metric, RequestMetrics, RunMetrics};
use goodput_core::record::{ErrorKind, Event, RequestError, RequestRecord, ServerUsage};
use goodput_core::schedule::{Arrival, Load, Schedule};
use goodput_core::search::{Answer, Search, Step};
use goodput_core::slo::Slo;
use goodput_core::tokenizer::Tokenizer;
use goodput_sim::virtual_time::{simulate, VirtualRequest};
use goodput_sim::{reference_goodput, RefMetric, RefPlan, RefTerm, RefWorkload, SimConfig};

/// A deployment and a workload of fixed lengths.
pub struct Virtual {
    pub config: SimConfig,
    pub input_tokens: usize,
    pub output_tokens: usize,
    pub slo: Slo,
}

impl Virtual {
    /// The README's main job: the default preset, chat at 1,024 in / 128
    /// out, `ttft:p99<=200ms,tpot:p99<=50ms`.
    pub fn readme() -> Self {
        Virtual {
            config: SimConfig::default(),
            input_tokens: 1024,
            output_tokens: 128,
            slo: Slo {
                terms: goodput_core::slo::parse_terms(&["ttft:p99<=200ms,tpot:p99<=50ms".into()])
                    .expect("the README's SLO"),
                max_error_rate: 0.01,
                ..Default::default()
            },
        }
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

/// How the search is run: the sweep's defaults unless a caller changes them.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    pub precision: f64,
    pub budget: Duration,
    pub explore: Duration,
    pub measure: Duration,
}

impl Default for Plan {
    fn default() -> Self {
        Plan {
            precision: 0.05,
            budget: Duration::from_secs(270),
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
        let load = Load::Open {
            rate,
            arrival: Arrival::Poisson,
            max_concurrency: None,
        };
        let mut schedule = Schedule::new(load, seed);
        let n = (warmup + measured) as usize;
        let arrivals: Vec<f64> = (0..n)
            .map(|_| schedule.next_offset().expect("open loop").as_secs_f64())
            .collect();
        let requests: Vec<VirtualRequest> = arrivals
            .iter()
            .enumerate()
            .map(|(i, &a)| {
                VirtualRequest::unique(a, self.input_tokens, self.output_tokens, i as u32)
            })
            .collect();
        let report = simulate(&self.config, &requests).expect("the engine runs the schedule");
        let tokenizer = Tokenizer::from_spec("none").expect("the null tokenizer");
        let mut collector = Collector::new(self.slo.request_thresholds(), true)
            .with_schedule_control(control, load, &self.slo.terms);
        let at = |s: f64| ORIGIN_NS + (s * NS) as u64;
        collector.measure_start(at(arrivals[warmup as usize]));
        let mut records: Vec<RequestRecord> = arrivals
            .iter()
            .zip(&report.requests)
            .enumerate()
            .map(|(i, (&a, out))| {
                let mut rec = RequestRecord {
                    request_id: i as u64,
                    warmup: (i as u64) < warmup,
                    t_sched: at(a),
                    t_send: Some(at(a)),
                    t_done: at(out.token_times_s.last().copied().unwrap_or(a)),
                    max_tokens: Some(self.output_tokens as u32),
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
                    prompt_tokens: Some(self.input_tokens as u32),
                    completion_tokens: Some(out.token_times_s.len() as u32),
                    ..Default::default()
                });
                rec.finish_reason = Some("length".into());
                rec
            })
            .collect();
        // The aggregator sees requests as they finish.
        records.sort_by_key(|r| r.t_done);
        for rec in &records {
            collector.add(rec, &RequestMetrics::derive(rec, &tokenizer));
        }
        let mut percentiles = vec![50.0, 90.0, 95.0, 99.0];
        for t in &self.slo.terms {
            if !percentiles.contains(&t.percentile) {
                percentiles.push(t.percentile);
            }
        }
        let metrics = collector.summarize(&percentiles, None, seed, Some(&self.slo));
        let last = records.iter().map(|r| r.t_done).max().unwrap_or(ORIGIN_NS);
        (metrics, (last - ORIGIN_NS) as f64 / NS)
    }

    /// A whole search from the floor to its answer, the points sampled as a
    /// sweep with `--seed seed` samples them.
    pub fn search(&self, plan: Plan, seed: u64) -> (Answer, Search) {
        let (ttft_ms, throughput) = self.floor();
        let (config, control) = goodput_core::sweep::search_config(
            Some(ttft_ms),
            throughput,
            &self.slo,
            plan.precision,
            plan.budget,
            plan.explore,
            plan.measure,
        );
        let mut search = Search::new(config);
        // Point 0 is the floor, as in a sweep.
        let mut index = 1u64;
        loop {
            let (rate, measured, measuring) = match search.next() {
                Step::Done => break,
                Step::Explore { rate } => (
                    rate,
                    (rate * plan.explore.as_secs_f64()).ceil() as u64,
                    false,
                ),
                Step::Measure { rate, requests } => (rate, requests, true),
            };
            // The sweep's automatic warm-up: 2 s of arrivals, 8 to 500.
            let warmup = ((rate * 2.0).ceil() as u64).clamp(8, 500);
            let (metrics, wall_s) =
                self.point(rate, measured, warmup, seed.wrapping_add(index), control);
            index += 1;
            let load = Load::Open {
                rate,
                arrival: Arrival::Poisson,
                max_concurrency: None,
            };
            search.record(goodput_core::sweep::observe_metrics(
                &metrics, &load, None, wall_s, measuring,
            ));
        }
        (search.answer(), search)
    }
}
