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

use std::sync::Arc;
use std::time::Instant;

use anyhow::{anyhow, Context};
use goodput_core::load::{load_trace, TraceStats};
use goodput_core::measure::Metric;
use goodput_sim::calibrate::Profile;
use goodput_sim::forecast::{
    evaluate_rates, forecast_goodput, forecast_goodput_near, Deployment, ForecastAnswer,
    ForecastPlan, ForecastPoint, ForecastTrace, ForecastWorkload, Routing, Sessions, SharedPrefix,
    TraceRequest,
};
use goodput_sim::{RefMetric, RefTerm, SimConfig};
use serde_json::json;

use crate::cli::{PredictArgs, RoutingArg};
use crate::exit::{usage, Code, Exit};

/// What the forecast leaves out, said with every answer.
const LEFT_OUT: &str = "The model leaves out: the network and the client (requests are sent exactly when scheduled), \
routing beyond round-robin and least-outstanding, faults and timeouts, sampling and speculative decoding, \
and anything of the server the calibration did not see (its prefix cache was not measured: hits follow the simulator's).";

/// Where the model comes from.
struct Model {
    config: SimConfig,
    /// The profile, for draws and its quality.
    profile: Option<Profile>,
    describe: String,
}

fn model(args: &PredictArgs) -> Result<Model, Exit> {
    if let Some(path) = &args.profile {
        let profile = Profile::read(path).map_err(usage)?;
        let config = profile
            .sim_config()
            .with_context(|| format!("the profile {}", path.display()))
            .map_err(usage)?;
        let describe = format!(
            "profile {} ({}, calibrated {}, fit rms error {:.1} %)",
            path.display(),
            profile.calibration.source_url,
            profile.calibration.date,
            profile.calibration.rms_relative_error * 100.0
        );
        return Ok(Model {
            config,
            profile: Some(profile),
            describe,
        });
    }
    let spec = args
        .sim
        .clone()
        .unwrap_or_else(|| "llama-3.1-8b,h100-sxm".into());
    let config = goodput_sim::SimArgs::from_spec(&spec)
        .and_then(|a| a.to_config())
        .map_err(usage)?;
    Ok(Model {
        config,
        profile: None,
        describe: format!("built-in deployment '{spec}' (no calibration: no interval)"),
    })
}

fn terms(args: &PredictArgs) -> Result<Vec<RefTerm>, Exit> {
    args.slo
        .iter()
        .flatten()
        .map(|t| {
            let metric = match t.metric {
                Metric::Ttft => RefMetric::Ttft,
                Metric::Tpot => RefMetric::Tpot,
                Metric::Itl => RefMetric::Itl,
                Metric::E2el => RefMetric::E2el,
                other => {
                    return Err(usage(anyhow!(
                        "--slo: predict forecasts ttft, tpot, itl and e2el, not {other:?}"
                    )))
                }
            };
            Ok(RefTerm::new(metric, t.percentile, t.threshold_ms / 1e3))
        })
        .collect()
}

fn workload(args: &PredictArgs) -> ForecastWorkload {
    ForecastWorkload {
        input: args.input_tokens.clone(),
        output: args.output_tokens.clone(),
        prefix: args.prefix_tokens.map(|tokens| SharedPrefix {
            tokens,
            groups: args.prefix_groups,
        }),
        sessions: args.turns.clone().map(|turns| Sessions {
            turns,
            think_time: args.think_time,
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
    fn load(args: &PredictArgs) -> Result<Option<Replay>, Exit> {
        let Some(path) = &args.replay.trace else {
            return Ok(None);
        };
        let loaded = load_trace(path, &args.replay.options()).map_err(usage)?;
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
        let trace = ForecastTrace::new(requests, args.replay.trace_block_tokens)
            .with_context(|| format!("the trace {}", path.display()))
            .map_err(usage)?;
        Ok(Some(Replay {
            stats: loaded.stats,
            trace: Arc::new(trace),
        }))
    }

    fn speed(&self, rate: f64) -> f64 {
        self.trace.speed(rate)
    }

    /// One schedule: the first tenth of the rows warm up, the rest are measured.
    fn plan(&self, args: &PredictArgs) -> ForecastPlan {
        let rows = self.trace.len();
        ForecastPlan {
            requests_per_point: rows - rows / 10,
            warmup_requests: rows / 10,
            seeds: 1,
            ..plan(args)
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
fn plan(args: &PredictArgs) -> ForecastPlan {
    // Every replica sees as many requests as one alone would: a shorter
    // run per replica would let its queue grow less.
    let requests = args.requests as usize * args.replicas;
    ForecastPlan {
        requests_per_point: requests,
        warmup_requests: (requests / 10).max(20),
        seeds: args.schedules.unwrap_or(4),
        seed: args.seed,
        max_error_rate: args.max_error_rate,
        precision: args.precision,
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
    fn goodput_near(&self, config: &SimConfig, guess: f64, k: usize) -> Result<f64, Exit> {
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
        .map_err(usage)
    }

    /// The goodput of `config`: a coarse search (one short schedule) finds
    /// the edge, the plan's search measures it within a bracket around it.
    fn goodput(&self, config: &SimConfig) -> Result<ForecastAnswer, Exit> {
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
    ) -> Result<ForecastAnswer, Exit> {
        forecast_goodput(
            config,
            &self.deployment,
            &self.workload,
            &self.slo,
            plan,
            lo,
            hi,
        )
        .map_err(usage)
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

pub fn main(args: PredictArgs) -> Result<Code, Exit> {
    let started = Instant::now();
    let model = model(&args)?;
    let replay = Replay::load(&args)?;
    if replay.is_some() && args.schedules.is_some() {
        eprintln!("goodput: note: --schedules is ignored with --trace: a trace is one schedule, replayed at every rate");
    }
    let question = Question {
        deployment: Deployment {
            replicas: args.replicas,
            routing: match args.routing {
                RoutingArg::RoundRobin => Routing::RoundRobin,
                RoutingArg::LeastOutstanding => Routing::LeastOutstanding,
            },
        },
        workload: match &replay {
            Some(r) => ForecastWorkload {
                trace: Some(r.trace.clone()),
                ..ForecastWorkload::fixed(1, 1)
            },
            None => workload(&args),
        },
        slo: terms(&args)?,
        plan: replay
            .as_ref()
            .map_or_else(|| plan(&args), |r| r.plan(&args)),
    };
    let central = question.goodput(&model.config)?;
    let mut draws = Vec::new();
    if let Some(profile) = &model.profile {
        let configs = profile
            .draws(args.draws as usize, args.seed)
            .map_err(usage)?;
        for (k, c) in configs.iter().enumerate() {
            draws.push(question.goodput_near(c, central.goodput.max(1e-3), k)?);
        }
        draws.sort_by(f64::total_cmp);
    }
    // The central answer is one draw of the model too: the interval holds it.
    let interval = (draws.len() >= 2).then(|| {
        (
            quantile(&draws, 0.025).min(central.goodput),
            quantile(&draws, 0.975).max(central.goodput),
        )
    });
    let mut rates: Vec<f64> = if args.rates.is_empty() {
        let g = central.goodput.max(1e-3);
        [0.25, 0.5, 0.75, 0.9, 1.0, 1.1, 1.25, 1.5]
            .iter()
            .map(|f| f * g)
            .collect()
    } else {
        args.rates.clone()
    };
    // The replay at --trace-speed (1: as recorded) is a point of the curve.
    let recorded = replay
        .as_ref()
        .map(|r| r.trace.mean_rate() * args.replay.trace_speed);
    rates.extend(recorded.filter(|r| !rates.contains(r)));
    let curve = evaluate_rates(
        &model.config,
        &question.deployment,
        &question.workload,
        &question.slo,
        &question.plan,
        &rates,
    )
    .map_err(usage)?;
    let elapsed = started.elapsed().as_secs_f64();
    let report = Report {
        args: &args,
        model: &model,
        question: &question,
        replay: replay.as_ref(),
        recorded,
        central: &central,
        interval,
        draws: draws.len(),
        curve: &curve,
        elapsed_s: elapsed,
    };
    print!("{}", report.console());
    if let Some(path) = &args.out {
        let text = serde_json::to_string_pretty(&report.json()).map_err(|e| usage(anyhow!(e)))?;
        std::fs::write(path, text + "\n")
            .with_context(|| format!("writing {}", path.display()))
            .map_err(usage)?;
    }
    Ok(Code::Ok)
}

/// What `predict` says.
struct Report<'a> {
    args: &'a PredictArgs,
    model: &'a Model,
    question: &'a Question,
    replay: Option<&'a Replay>,
    /// The rate of the replay at `--trace-speed`.
    recorded: Option<f64>,
    central: &'a ForecastAnswer,
    interval: Option<(f64, f64)>,
    draws: usize,
    curve: &'a [ForecastPoint],
    elapsed_s: f64,
}

impl Report<'_> {
    fn slo_words(&self) -> String {
        self.question
            .slo
            .iter()
            .map(|t| {
                format!(
                    "p{} {} <= {} ms",
                    t.percentile,
                    t.metric.name().to_uppercase(),
                    t.threshold_s * 1e3
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn workload_words(&self) -> String {
        let a = self.args;
        let mut w = match self.replay {
            Some(r) => r.words(),
            None => format!(
                "input {} / output {} tokens",
                a.input_tokens, a.output_tokens
            ),
        };
        if let Some(p) = a.prefix_tokens {
            w += &format!(", shared prefix {p} tokens x {} groups", a.prefix_groups);
        }
        if let Some(t) = &a.turns {
            w += &format!(", sessions of {t} turns, think {}", a.think_time);
        }
        let r = self.question.deployment.replicas;
        if r > 1 {
            w += &format!(", {r} replicas ({:?})", self.question.deployment.routing);
        }
        w
    }

    fn unit(&self) -> &'static str {
        if self.args.turns.is_some() {
            "sessions/s"
        } else {
            "req/s"
        }
    }

    fn console(&self) -> String {
        let mut s = String::new();
        s += &format!(
            "===================== Forecast =====================\nModel: {}\n",
            self.model.describe
        );
        s += &format!(
            "{:>10} {:>9} {:>10} {:>8} {:>8}",
            "rate", "req/s", "out tok/s", "cached", "queue"
        );
        for t in &self.question.slo {
            s += &format!(" {:>12}", format!("p{} {}", t.percentile, t.metric.name()));
        }
        s += "  SLO\n";
        for p in self.curve {
            s += &format!(
                "{:>10.2} {:>9.2} {:>10.1} {:>7.0}% {:>8}",
                p.rate,
                p.request_throughput,
                p.output_throughput,
                p.cached_share * 100.0,
                if p.saturated { "grows" } else { "steady" }
            );
            for v in &p.percentiles {
                s += &format!(
                    " {:>12}",
                    v.map_or("-".into(), |x| format!("{:.1}", x * 1e3))
                );
            }
            s += if p.meets { "  pass\n" } else { "  FAIL\n" };
        }
        let plan = &self.question.plan;
        s += &match self.replay {
            Some(_) => format!(
                "  (latencies in ms, of the trace's {} measured requests after {} warm-up rows, replayed at each rate)\n",
                plan.requests_per_point, plan.warmup_requests
            ),
            None => format!(
                "  (latencies in ms, pooled over {} Poisson schedules of {} requests at each rate)\n",
                plan.seeds, plan.requests_per_point
            ),
        };
        s += &self.recorded_words();
        s += &format!("{LEFT_OUT}\nAnswered in {:.1} s.\n", self.elapsed_s);
        s += "====================================================\n";
        let interval = match self.interval {
            Some((a, b)) => format!(
                " (95% interval {a:.2}–{b:.2} from {} draws of the calibration, the model's error and the schedules)",
                self.draws
            ),
            None => String::new(),
        };
        let speed = self.replay.map_or(String::new(), |r| {
            format!(
                " = the trace at {:.3}x its mean rate",
                r.speed(self.central.goodput)
            )
        });
        s += &format!(
            "predicted goodput: {:.2} {}{speed}{interval} at {} ({})\n",
            self.central.goodput,
            self.unit(),
            self.slo_words(),
            self.workload_words()
        );
        s
    }

    /// How the replay at `--trace-speed` fares.
    fn recorded_words(&self) -> String {
        let (Some(r), Some(rate)) = (self.replay, self.recorded) else {
            return String::new();
        };
        let Some(p) = self.curve.iter().find(|p| p.rate == rate) else {
            return String::new();
        };
        format!(
            "  The trace at speed {} ({rate:.2} req/s) {} the SLO{}.\n",
            r.speed(rate),
            if p.meets { "meets" } else { "misses" },
            if p.saturated {
                ", and its queue grows"
            } else {
                ""
            }
        )
    }

    /// The trace's part of the JSON (`null` without one).
    fn trace_json(&self) -> serde_json::Value {
        let Some(r) = self.replay else {
            return serde_json::Value::Null;
        };
        json!({
            "stats": r.stats,
            "mean_rate": r.trace.mean_rate(),
            "speed": r.speed(self.central.goodput),
            "first_failing_speed": self.central.first_failing.map(|f| r.speed(f)),
            "curve_speed": self.args.replay.trace_speed,
        })
    }

    fn json(&self) -> serde_json::Value {
        let curve: Vec<_> = self
            .curve
            .iter()
            .map(|p| {
                json!({
                    "rate": p.rate,
                    "speed": self.replay.map(|r| r.speed(p.rate)),
                    "request_throughput": p.request_throughput,
                    "output_throughput": p.output_throughput,
                    "cached_share": p.cached_share,
                    "error_rate": p.error_rate,
                    "saturated": p.saturated,
                    "meets": p.meets,
                    "percentiles_ms": self.question.slo.iter().zip(&p.percentiles).map(|(t, v)| json!({
                        "term": t.to_string(),
                        "value_ms": v.map(|x| x * 1e3),
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        json!({
            "goodput": self.central.goodput,
            "unit": self.unit(),
            "speed": self.replay.map(|r| r.speed(self.central.goodput)),
            "trace": self.trace_json(),
            "interval": self.interval.map(|(a, b)| json!({"low": a, "high": b, "draws": self.draws})),
            "first_failing": self.central.first_failing,
            "slo": self.question.slo.iter().map(|t| t.to_string()).collect::<Vec<_>>(),
            "workload": self.workload_words(),
            "replicas": self.question.deployment.replicas,
            "model": self.model.describe,
            "plan": {
                "schedules": self.question.plan.seeds,
                "requests_per_schedule": self.question.plan.requests_per_point,
                "warmup_requests": self.question.plan.warmup_requests,
                "precision": self.question.plan.precision,
                "seed": self.question.plan.seed,
            },
            "curve": curve,
            "left_out": LEFT_OUT,
            "elapsed_s": self.elapsed_s,
        })
    }
}
