//! The forecast as `goodput predict` says it: the curve, the answer and
//! its interval on the console, and the same as JSON (`--out`).

use std::path::Path;

use serde_json::json;

use super::{Forecast, LEFT_OUT};
use crate::error::Error;

impl Forecast {
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
        let a = &self.options;
        let mut w = match &self.replay {
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
        if self.options.turns.is_some() {
            "sessions/s"
        } else {
            "req/s"
        }
    }

    /// The curve, the answer with its interval, the workload and the SLO,
    /// and what the model leaves out: what `goodput predict` prints.
    pub fn console(&self) -> String {
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
        for p in &self.curve {
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
        s += &match &self.replay {
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
        s += &self.frontier_words();
        s += &format!("{LEFT_OUT}\nAnswered in {:.1} s.\n", self.elapsed_s);
        s += "====================================================\n";
        let interval = match self.interval {
            Some((a, b)) => format!(
                " (95% interval {a:.2}–{b:.2} from {} draws of the calibration, the model's error and the schedules)",
                self.draws
            ),
            None => String::new(),
        };
        let speed = self.replay.as_ref().map_or(String::new(), |r| {
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

    /// The forecast frontier (`--frontier`): a line per closed loop.
    fn frontier_words(&self) -> String {
        let Some(f) = &self.frontier else {
            return String::new();
        };
        let opt = |x: Option<f64>| x.map_or("-".into(), |v| format!("{v:.1}"));
        let mut s = format!(
            "--- Frontier (closed loops, {} GPU(s)) ---\n{:>7} {:>13} {:>11} {:>17} {:>9}  frontier\n",
            f.gpus, "load", "system tok/s", "tok/s/GPU", "tok/s/user (p90)", "p90 TTFT"
        );
        for p in &f.points {
            s += &format!(
                "{:>7} {:>13.1} {:>11.1} {:>17} {:>9}  {}\n",
                format!("c={}", p.concurrency.unwrap_or(0)),
                p.system_tps,
                p.system_tps_per_gpu,
                opt(p.tps_per_user),
                opt(p.ttft_p90_ms),
                if p.on_frontier { "*" } else { "" }
            );
        }
        s
    }

    /// How the replay at `--trace-speed` fares.
    fn recorded_words(&self) -> String {
        let (Some(r), Some(rate)) = (&self.replay, self.recorded) else {
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
        let (Some(r), Some(t)) = (&self.replay, &self.options.trace) else {
            return serde_json::Value::Null;
        };
        json!({
            "stats": r.stats,
            "mean_rate": r.trace.mean_rate(),
            "speed": r.speed(self.central.goodput),
            "first_failing_speed": self.central.first_failing.map(|f| r.speed(f)),
            "curve_speed": t.speed,
        })
    }

    /// The forecast as JSON: the answer, its interval, the trace's speed,
    /// the curve, the plan and what the model leaves out.
    pub fn json(&self) -> serde_json::Value {
        let curve: Vec<_> = self
            .curve
            .iter()
            .map(|p| {
                json!({
                    "rate": p.rate,
                    "speed": self.replay.as_ref().map(|r| r.speed(p.rate)),
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
            "speed": self.replay.as_ref().map(|r| r.speed(self.central.goodput)),
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
            "frontier": self.frontier,
            "left_out": LEFT_OUT,
            "elapsed_s": self.elapsed_s,
        })
    }

    /// Write [`Forecast::json`] to `path`, pretty-printed.
    pub fn write_json(&self, path: &Path) -> Result<(), Error> {
        let text = serde_json::to_string_pretty(&self.json()).map_err(Error::usage)?;
        std::fs::write(path, text + "\n")
            .map_err(|e| Error::context(format!("writing {}", path.display()), e))
    }
}
