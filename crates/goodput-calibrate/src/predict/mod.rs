//! `goodput predict`: a deployment's sustained goodput and its
//! latency–throughput curve, forecast in virtual time from a profile
//! (`goodput calibrate`) or a built-in deployment (`--sim`), for a workload
//! and an SLO, on N replicas.
//!
//! The answer is the simulator's forecast ([`goodput_sim::forecast`]): the
//! highest Poisson rate at which the pooled percentiles of several long
//! schedules meet the SLO and no queue builds — the sustained goodput a
//! `goodput sweep --search goodput` measures. Its interval carries what the
//! forecast does not know: the same search on simulators drawn from the
//! fit's covariance and the model's own error (its residuals' rms, see
//! [`Profile::draws`]), each over schedules of its own (the forecast's own
//! sampling of a finite pool).
//!
//! With `--trace`, the workload is the trace, read by goodput-core's
//! loader (as `run` reads it): one schedule, the trace's own arrivals
//! scaled to each rate, so the goodput is a replay speed times the trace's
//! mean rate, and the answer says which speed.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use goodput_core::load::{load_trace, LengthSpec, TraceOptions, TraceStats};
use goodput_core::measure::{Metric, SloTerm};
use goodput_core::units::DurationSpec;
use goodput_sim::calibrate::Profile;
use goodput_sim::forecast::{
    evaluate_rates, forecast_goodput, forecast_goodput_near, Deployment, ForecastAnswer,
    ForecastPlan, ForecastPoint, ForecastTrace, ForecastWorkload, Routing, Sessions, SharedPrefix,
    TraceRequest,
};
use goodput_sim::{RefMetric, RefTerm, SimConfig};

use crate::error::Error;

mod frontier;
mod report;

/// What the forecast leaves out, said with every answer.
const LEFT_OUT: &str = "The model leaves out: the network and the client (requests are sent exactly when scheduled), \
routing beyond round-robin and least-outstanding, faults and timeouts, sampling and speculative decoding, \
and anything of the server the calibration did not see (its prefix cache was not measured: hits follow the simulator's).";

/// What `goodput predict` was asked: the model (a profile or a built-in
/// deployment), the deployment, the SLO, the workload (synthetic or a
/// trace) and the forecast's plan.
#[derive(Debug, Clone)]
pub struct PredictOptions {
    /// The profile `goodput calibrate` wrote (or any simulator config file).
    pub profile: Option<PathBuf>,
    /// A built-in deployment instead of a profile, as `--sim` takes it;
    /// neither: llama-3.1-8b on an H100 SXM.
    pub sim: Option<String>,
    /// Model replicas behind one endpoint.
    pub replicas: usize,
    /// How requests are spread over the replicas.
    pub routing: Routing,
    /// The SLO's terms (ttft, tpot, itl and e2el only).
    pub slo: Vec<SloTerm>,
    /// Largest share of failed requests (0 to 1) a passing rate may have.
    pub max_error_rate: f64,
    /// Prompt length in tokens (without a trace).
    pub input_tokens: LengthSpec,
    /// Output length in tokens (without a trace).
    pub output_tokens: LengthSpec,
    /// Tokens of a shared prefix every prompt starts with.
    pub prefix_tokens: Option<u32>,
    /// Distinct shared prefixes.
    pub prefix_groups: u32,
    /// Multi-turn sessions: turns per session.
    pub turns: Option<LengthSpec>,
    /// Time between a turn's response and the session's next turn.
    pub think_time: DurationSpec,
    /// A trace instead of the synthetic workload.
    pub trace: Option<TraceReplay>,
    /// Rates of the latency–throughput curve, req/s; empty: eight rates
    /// from a quarter of the goodput to 1.5 times it.
    pub rates: Vec<f64>,
    /// Measured requests per Poisson schedule at each rate, per replica.
    pub requests: u64,
    /// Poisson schedules pooled at each rate (default 4; a trace is one).
    pub schedules: Option<u64>,
    /// Draws from the calibration's uncertainty for the interval (0: none).
    pub draws: u64,
    /// Relative precision of the rate search.
    pub precision: f64,
    /// Seed of the schedules, the lengths and the draws.
    pub seed: u64,
    /// Also forecast the deployment frontier (closed loops, as `sweep
    /// --frontier` runs them).
    pub frontier: bool,
}

/// A trace replayed as the workload: its arrivals scaled to each rate.
#[derive(Debug, Clone)]
pub struct TraceReplay {
    /// The trace file.
    pub path: PathBuf,
    /// How goodput-core's loader reads and slices it (its block size is
    /// the forecaster's too).
    pub options: TraceOptions,
    /// The replay speed whose rate is also a point of the curve (1: as
    /// recorded).
    pub speed: f64,
}

/// Where the model comes from.
struct Model {
    config: SimConfig,
    /// The profile, for draws and its quality.
    profile: Option<Profile>,
    describe: String,
}

fn model(options: &PredictOptions) -> Result<Model, Error> {
    if let Some(path) = &options.profile {
        let profile = Profile::read(path).map_err(Error::usage)?;
        let config = profile
            .sim_config()
            .map_err(|e| Error::context(format!("the profile {}", path.display()), e))?;
        let mut describe = format!(
            "profile {} ({}, calibrated {}, fit rms error {:.1} %)",
            path.display(),
            profile.calibration.source_url,
            profile.calibration.date,
            profile.calibration.rms_relative_error * 100.0
        );
        let held = profile.step.held_token_ns;
        if held > 0.0 {
            describe += &format!(
                "; the server slows as requests wait on it: {:.1} µs a streamed token for each request it holds",
                held * 1e-3
            );
        }
        return Ok(Model {
            config,
            profile: Some(profile),
            describe,
        });
    }
    let spec = options
        .sim
        .clone()
        .unwrap_or_else(|| "llama-3.1-8b,h100-sxm".into());
    let config = goodput_sim::SimArgs::from_spec(&spec)
        .and_then(|a| a.to_config())
        .map_err(Error::usage)?;
    Ok(Model {
        config,
        profile: None,
        describe: format!("built-in deployment '{spec}' (no calibration: no interval)"),
    })
}

fn terms(options: &PredictOptions) -> Result<Vec<RefTerm>, Error> {
    options
        .slo
        .iter()
        .map(|t| {
            let metric = match t.metric {
                Metric::Ttft => RefMetric::Ttft,
                Metric::Tpot => RefMetric::Tpot,
                Metric::Itl => RefMetric::Itl,
                Metric::E2el => RefMetric::E2el,
                other => {
                    return Err(Error::usage(format!(
                        "--slo: predict forecasts ttft, tpot, itl and e2el, not {other:?}"
                    )))
                }
            };
            Ok(RefTerm::new(metric, t.percentile, t.threshold_ms / 1e3))
        })
        .collect()
}

fn workload(options: &PredictOptions) -> ForecastWorkload {
    ForecastWorkload {
        input: options.input_tokens.clone(),
        output: options.output_tokens.clone(),
        prefix: options.prefix_tokens.map(|tokens| SharedPrefix {
            tokens,
            groups: options.prefix_groups,
        }),
        sessions: options.turns.clone().map(|turns| Sessions {
            turns,
            think_time: options.think_time,
        }),
        trace: None,
    }
}

/// A `--trace` workload: the file as the loader read it, and the
/// forecaster's trace.
struct Replay {
    stats: TraceStats,
    trace: Arc<ForecastTrace>,
}

impl Replay {
    /// Errors name the file (and, from the loader, the line and field).
    fn load(options: &PredictOptions) -> Result<Option<Replay>, Error> {
        let Some(replay) = &options.trace else {
            return Ok(None);
        };
        let path = &replay.path;
        let loaded = load_trace(path, &replay.options).map_err(Error::usage)?;
        let requests = loaded
            .rows
            .iter()
            .map(|row| TraceRequest {
                at_s: row.at_s,
                input_tokens: row.input_tokens,
                output_tokens: row.output_tokens,
                hash_ids: row.hash_ids.clone(),
            })
            .collect();
        let trace = ForecastTrace::new(requests, replay.options.block_tokens)
            .map_err(|e| Error::context(format!("the trace {}", path.display()), e))?;
        Ok(Some(Replay {
            stats: loaded.stats,
            trace: Arc::new(trace),
        }))
    }

    fn speed(&self, rate: f64) -> f64 {
        self.trace.speed(rate)
    }

    /// One schedule: the first tenth of the rows warm up, the rest are measured.
    fn plan(&self, options: &PredictOptions) -> ForecastPlan {
        let rows = self.trace.len();
        ForecastPlan {
            requests_per_point: rows - rows / 10,
            warmup_requests: rows / 10,
            seeds: 1,
            ..plan(options)
        }
    }

    fn words(&self) -> String {
        let s = &self.stats;
        format!(
            "trace {} ({}, {} requests over {:.1} s: mean {:.3} req/s{})",
            s.name,
            s.format,
            self.trace.len(),
            s.span_s,
            self.trace.mean_rate(),
            s.block_tokens
                .map_or(String::new(), |b| format!(", blocks of {b} tokens"))
        )
    }
}

/// The plan of a synthetic workload.
fn plan(options: &PredictOptions) -> ForecastPlan {
    // Every replica sees as many requests as one alone would: a shorter
    // run per replica would let its queue grow less.
    let requests = options.requests as usize * options.replicas;
    ForecastPlan {
        requests_per_point: requests,
        warmup_requests: (requests / 10).max(20),
        seeds: options.schedules.unwrap_or(4),
        seed: options.seed,
        max_error_rate: options.max_error_rate,
        precision: options.precision,
        threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
    }
}

/// Draw `k`'s schedules start at seed `seed + stride × (k + 1)`: apart from
/// the central answer's (`seed` … `seed + schedules − 1`) and each other's.
const DRAW_SEED_STRIDE: u64 = 1_000_003;

/// Everything one forecast needs but the simulator.
struct Question {
    deployment: Deployment,
    workload: ForecastWorkload,
    slo: Vec<RefTerm>,
    plan: ForecastPlan,
}

impl Question {
    /// The goodput of draw `k`, a simulator drawn from the calibration,
    /// searched from the central answer `guess` outwards on schedules of
    /// its own: the forecast's own sampling (a finite pool of schedules)
    /// enters the band with the calibration's uncertainty and the model's
    /// error.
    fn goodput_near(&self, config: &SimConfig, guess: f64, k: usize) -> Result<f64, Error> {
        let plan = ForecastPlan {
            seed: self
                .plan
                .seed
                .wrapping_add(DRAW_SEED_STRIDE.wrapping_mul(k as u64 + 1)),
            ..self.plan
        };
        forecast_goodput_near(
            config,
            &self.deployment,
            &self.workload,
            &self.slo,
            &plan,
            guess,
            1.25,
        )
        .map(|a| a.goodput)
        .map_err(Error::usage)
    }

    /// The goodput of `config`: a coarse search (one short schedule) finds
    /// the edge, the plan's search measures it within a bracket around it.
    fn goodput(&self, config: &SimConfig) -> Result<ForecastAnswer, Error> {
        let replicas = self.deployment.replicas as f64;
        let (mut lo, mut hi) = {
            {
                // A trace is replayed whole, coarsely too.
                let coarse = match self.workload.trace {
                    Some(_) => ForecastPlan {
                        precision: 0.2,
                        ..self.plan
                    },
                    None => ForecastPlan {
                        requests_per_point: 300,
                        warmup_requests: 30,
                        seeds: 1,
                        precision: 0.2,
                        ..self.plan
                    },
                };
                let a = self.search(config, &coarse, 0.001, 20_000.0 * replicas)?;
                if a.goodput <= 0.0 {
                    return Ok(a);
                }
                (a.goodput / 2.0, a.goodput * 2.0)
            }
        };
        // Widen until the bracket holds the edge (a draw may move it far).
        for _ in 0..6 {
            let a = self.search(config, &self.plan, lo, hi)?;
            if a.goodput <= lo && a.first_failing == Some(lo) {
                (lo, hi) = (lo / 4.0, lo);
            } else if a.first_failing.is_none() {
                (lo, hi) = (hi, hi * 4.0);
            } else {
                return Ok(a);
            }
        }
        self.search(config, &self.plan, lo, hi)
    }

    fn search(
        &self,
        config: &SimConfig,
        plan: &ForecastPlan,
        lo: f64,
        hi: f64,
    ) -> Result<ForecastAnswer, Error> {
        forecast_goodput(
            config,
            &self.deployment,
            &self.workload,
            &self.slo,
            plan,
            lo,
            hi,
        )
        .map_err(Error::usage)
    }
}

/// The `q`-quantile (0–1) of sorted `v`, linearly interpolated.
fn quantile(v: &[f64], q: f64) -> f64 {
    let x = q * (v.len() - 1) as f64;
    let (i, f) = (x.floor() as usize, x.fract());
    if i + 1 < v.len() {
        v[i] * (1.0 - f) + v[i + 1] * f
    } else {
        v[i]
    }
}

/// A forecast about to be made: the model and the trace read, nothing
/// searched yet.
pub struct Prediction {
    options: PredictOptions,
    /// When the question was put: the answer says how long it took.
    started: Instant,
    model: Model,
    replay: Option<Replay>,
}

impl Prediction {
    /// Read the profile (or build the built-in deployment) and the trace.
    /// Errors name the file (and, from the trace's loader, the line and
    /// field).
    pub fn new(options: PredictOptions) -> Result<Prediction, Error> {
        let started = Instant::now();
        let model = model(&options)?;
        let replay = Replay::load(&options)?;
        Ok(Prediction {
            options,
            started,
            model,
            replay,
        })
    }

    /// What the options ask that the forecast does not do, said before it
    /// starts (the binary prints it as a note on standard error).
    pub fn note(&self) -> Option<&'static str> {
        (self.replay.is_some() && self.options.schedules.is_some()).then_some(
            "--schedules is ignored with --trace: a trace is one schedule, replayed at every rate",
        )
    }

    /// The forecast: the central goodput, its interval from the draws of
    /// the calibration, and the latency–throughput curve.
    pub fn forecast(self) -> Result<Forecast, Error> {
        let Prediction {
            options,
            started,
            model,
            replay,
        } = self;
        let question = Question {
            deployment: Deployment {
                replicas: options.replicas,
                routing: options.routing,
            },
            workload: match &replay {
                Some(r) => ForecastWorkload {
                    trace: Some(r.trace.clone()),
                    ..ForecastWorkload::fixed(1, 1)
                },
                None => workload(&options),
            },
            slo: terms(&options)?,
            plan: replay
                .as_ref()
                .map_or_else(|| plan(&options), |r| r.plan(&options)),
        };
        let central = question.goodput(&model.config)?;
        let draws = draws(&options, &model, &question, &central)?;
        // The central answer is one draw of the model too: the interval holds it.
        let interval = (draws.len() >= 2).then(|| {
            (
                quantile(&draws, 0.025).min(central.goodput),
                quantile(&draws, 0.975).max(central.goodput),
            )
        });
        let mut rates: Vec<f64> = if options.rates.is_empty() {
            let g = central.goodput.max(1e-3);
            [0.25, 0.5, 0.75, 0.9, 1.0, 1.1, 1.25, 1.5]
                .iter()
                .map(|f| f * g)
                .collect()
        } else {
            options.rates.clone()
        };
        // The replay at --trace-speed (1: as recorded) is a point of the curve.
        let recorded = replay
            .as_ref()
            .zip(options.trace.as_ref())
            .map(|(r, t)| r.trace.mean_rate() * t.speed);
        rates.extend(recorded.filter(|r| !rates.contains(r)));
        let curve = evaluate_rates(
            &model.config,
            &question.deployment,
            &question.workload,
            &question.slo,
            &question.plan,
            &rates,
        )
        .map_err(Error::usage)?;
        let frontier = match options.frontier {
            true => Some(frontier::frontier(&model.config, &options)?),
            false => None,
        };
        Ok(Forecast {
            frontier,
            elapsed_s: started.elapsed().as_secs_f64(),
            options,
            model,
            question,
            replay,
            recorded,
            central,
            interval,
            draws: draws.len(),
            curve,
        })
    }
}

/// The goodput of each draw of the profile's calibration, sorted (none
/// without a profile).
fn draws(
    options: &PredictOptions,
    model: &Model,
    question: &Question,
    central: &ForecastAnswer,
) -> Result<Vec<f64>, Error> {
    let mut draws = Vec::new();
    if let Some(profile) = &model.profile {
        let configs = profile
            .draws(options.draws as usize, options.seed)
            .map_err(Error::usage)?;
        for (k, c) in configs.iter().enumerate() {
            draws.push(question.goodput_near(c, central.goodput.max(1e-3), k)?);
        }
        draws.sort_by(f64::total_cmp);
    }
    Ok(draws)
}

/// What `predict` says: the forecast and how it was made
/// ([`Forecast::console`], [`Forecast::json`]).
pub struct Forecast {
    options: PredictOptions,
    model: Model,
    question: Question,
    replay: Option<Replay>,
    /// The rate of the replay at `--trace-speed`.
    recorded: Option<f64>,
    central: ForecastAnswer,
    interval: Option<(f64, f64)>,
    draws: usize,
    curve: Vec<ForecastPoint>,
    frontier: Option<goodput_core::plan::Frontier>,
    elapsed_s: f64,
}
