//! SLOs: what a run must meet, and whether it did.
//!
//! Grammar (`docs/metrics.md#slos-and-goodput-of-a-run`): a term is
//! `METRIC:pQ<=X` with METRIC one of `ttft`, `tpot`, `itl`, `e2el` (the
//! registry's SLO names), Q any percentile in (0, 100) (`median` is p50) and
//! X a duration (`200ms`, `1.5s`, `500us`; a bare number is ms). vLLM's
//! `--goodput ttft:200 tpot:50` spelling gives per-request thresholds in ms.
//!
//! A request is *good* when every threshold holds for it (an `itl` threshold
//! is checked against the request's largest per-token gap; an undefined
//! TPOT passes; a failed request is never good). A run *meets* the SLO when
//! every term's percentile is within its threshold (the point estimate
//! decides; each term also gets a verdict on its 95 % interval: pass, fail,
//! or inconclusive with how many more requests would settle it), the error
//! rate is at most the allowed maximum, and, in DistServe's joint form
//! (`--slo-attainment A`), at least A of the requests are good.
//!
//! The latencies judged are the ones a user saw: from `t_sched` in open loop
//! (coordinated omission corrected), from `t_send` in closed loop.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::measure::metrics::{Metric, RequestMetrics};
use crate::measure::stats::{pct_label, Estimate};
use crate::measure::verdict::Verdict;

/// One term: `metric:pQ<=threshold`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SloTerm {
    /// `ttft`, `tpot`, `itl` or `e2el`.
    pub metric: Metric,
    /// Percentile, 0 < p < 100.
    pub percentile: f64,
    /// The most the percentile may be, ms.
    pub threshold_ms: f64,
}

const GRAMMAR: &str = "expected METRIC:pQ:THRESHOLD or METRIC:pQ<=THRESHOLD, e.g. ttft:p99:200ms, tpot:p90:50ms, e2el:median:2s (metrics: ttft, tpot, itl, e2el)";

fn parse_threshold_ms(s: &str) -> Option<f64> {
    let s = s.trim();
    let (num, scale) = if let Some(n) = s.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix("us").or_else(|| s.strip_suffix("µs")) {
        (n, 1e-3)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1e3)
    } else {
        (s, 1.0)
    };
    let v: f64 = num.trim().parse().ok()?;
    (v.is_finite() && v > 0.0 && v * scale <= 1e10).then_some(v * scale)
}

fn slo_metric(name: &str) -> Result<Metric, String> {
    Metric::from_slo_name(name.trim()).ok_or_else(|| {
        format!(
            "unknown SLO metric '{}': valid metrics are ttft, tpot, itl, e2el",
            name.trim()
        )
    })
}

impl FromStr for SloTerm {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = |why: &str| format!("invalid SLO term '{s}': {why} ({GRAMMAR})");
        let (metric, rest) = s.split_once(':').ok_or_else(|| bad("no ':'"))?;
        let metric = slo_metric(metric).map_err(|e| bad(&e))?;
        let (percentile, threshold_ms) = percentile_and_threshold(rest).map_err(bad)?;
        Ok(SloTerm {
            metric,
            percentile,
            threshold_ms,
        })
    }
}

/// `p99<=200ms`, or the shell-safe `p99:200ms` (no character a shell reads
/// as a redirection, so it works unquoted); `<` alone is read as `<=` (for
/// a continuous figure the bounds are the same).
fn percentile_and_threshold(rest: &str) -> Result<(f64, f64), &'static str> {
    let (pct, threshold) = rest
        .split_once("<=")
        .or_else(|| rest.split_once('<'))
        .or_else(|| rest.split_once(':'))
        .ok_or("no ':' or '<=' before the threshold")?;
    let pct = pct.trim();
    let percentile = if pct == "median" {
        50.0
    } else {
        match pct.strip_prefix('p').and_then(|p| p.parse::<f64>().ok()) {
            Some(p) if p > 0.0 && p < 100.0 => p,
            _ => return Err("the percentile must be pQ with 0 < Q < 100, or median"),
        }
    };
    let threshold_ms =
        parse_threshold_ms(threshold).ok_or("the threshold must be a positive duration")?;
    Ok((percentile, threshold_ms))
}

/// A term on whole tasks (an agent's trajectories): `task:pQ<=X`, the
/// percentile of the durations of the tasks that completed, from the first
/// call's scheduled send to the last call's end.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TaskTerm {
    /// Percentile, 0 < p < 100.
    pub percentile: f64,
    /// The most the percentile may be, ms.
    pub threshold_ms: f64,
}

impl fmt::Display for TaskTerm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "task:p{}<={}",
            pct_label(self.percentile),
            format_ms(self.threshold_ms)
        )
    }
}

/// One `--slo` term: on each request's latency, or on whole tasks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum AnyTerm {
    /// On each request's latency: `ttft:p99<=200ms`.
    Request(SloTerm),
    /// On whole tasks: `task:p90<=120s`.
    Task(TaskTerm),
}

impl FromStr for AnyTerm {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.split_once(':') {
            Some((m, rest)) if m.trim() == "task" => {
                let (percentile, threshold_ms) = percentile_and_threshold(rest).map_err(|why| {
                    format!("invalid SLO term '{s}': {why} (a task term is task:pQ:DURATION, e.g. task:p90:120s)")
                })?;
                Ok(AnyTerm::Task(TaskTerm {
                    percentile,
                    threshold_ms,
                }))
            }
            _ => s.parse().map(AnyTerm::Request),
        }
    }
}

impl fmt::Display for SloTerm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.metric.info().slo_name.unwrap_or("?");
        write!(
            f,
            "{name}:p{}<={}",
            pct_label(self.percentile),
            format_ms(self.threshold_ms)
        )
    }
}

/// `200ms`, `1.5s`, `500us`.
pub fn format_ms(ms: f64) -> String {
    let trim = |x: f64| {
        let s = format!("{x:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    };
    if ms >= 1000.0 {
        format!("{}s", trim(ms / 1000.0))
    } else if ms < 1.0 {
        format!("{}us", trim(ms * 1000.0))
    } else {
        format!("{}ms", trim(ms))
    }
}

/// Parse `--slo` values: each may hold several comma-separated terms.
pub fn parse_terms(values: &[String]) -> Result<Vec<SloTerm>, String> {
    parse_list(values)
}

/// One `--slo` value (comma-separated terms), request and task terms alike.
pub fn any_terms(s: &str) -> Result<Vec<AnyTerm>, String> {
    parse_list(&[s.to_string()])
}

/// One `--slo` value of request terms only (`predict`: a forecast has no tasks).
pub fn request_terms(s: &str) -> Result<Vec<SloTerm>, String> {
    parse_list(&[s.to_string()])
}

fn parse_list<T: FromStr<Err = String>>(values: &[String]) -> Result<Vec<T>, String> {
    values
        .iter()
        .flat_map(|v| v.split(','))
        .filter(|t| !t.trim().is_empty())
        .map(str::parse)
        .collect()
}

/// A per-request threshold (vLLM's `--goodput ttft:200`, in ms).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Threshold {
    /// The figure checked on each request: `ttft`, `tpot`, `itl` or `e2el`.
    pub metric: Metric,
    /// The most the request's value may be for it to be good, ms.
    pub threshold_ms: f64,
}

impl FromStr for Threshold {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || {
            format!("invalid --goodput threshold '{s}': expected METRIC:MS, e.g. ttft:200 tpot:50 e2el:2000 (metrics: ttft, tpot, itl, e2el)")
        };
        let (m, v) = s.split_once(':').ok_or_else(bad)?;
        let metric = slo_metric(m).map_err(|_| bad())?;
        let threshold_ms = v
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|x| x.is_finite() && *x > 0.0)
            .ok_or_else(bad)?;
        Ok(Threshold {
            metric,
            threshold_ms,
        })
    }
}

/// What a run is held to.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Slo {
    /// Percentile terms (`--slo`); they decide whether the run meets the SLO.
    pub terms: Vec<SloTerm>,
    /// Terms on whole tasks (`--slo task:p90<=120s`), for agent trajectories.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub task_terms: Vec<TaskTerm>,
    /// Per-request thresholds for request goodput (`--goodput`); when empty,
    /// the terms' thresholds are used per request.
    pub per_request: Vec<Threshold>,
    /// DistServe's joint form: at least this share of requests must be good.
    pub attainment: Option<f64>,
    /// Largest error rate (failed / finished, 0–1) a passing run may have
    /// (`--max-error-rate`).
    pub max_error_rate: f64,
}

impl Slo {
    /// Whether anything makes a run pass or fail beyond the error rate.
    pub fn is_gate(&self) -> bool {
        !self.terms.is_empty() || !self.task_terms.is_empty() || self.attainment.is_some()
    }

    /// The SLO of the flags: `--slo` terms (request and task terms
    /// alike), `--goodput` thresholds, `--slo-attainment` and
    /// `--max-error-rate`; `None` when nothing asks for one.
    pub fn from_flags(
        terms: &[AnyTerm],
        per_request: Vec<Threshold>,
        attainment: Option<f64>,
        max_error_rate: f64,
    ) -> Option<Slo> {
        let mut slo = Slo {
            per_request,
            attainment,
            max_error_rate,
            ..Slo::default()
        };
        for t in terms {
            match *t {
                AnyTerm::Request(t) => slo.terms.push(t),
                AnyTerm::Task(t) => slo.task_terms.push(t),
            }
        }
        (slo.is_gate() || !slo.per_request.is_empty()).then_some(slo)
    }

    /// The thresholds a request must meet to be good.
    pub fn request_thresholds(&self) -> Vec<Threshold> {
        if !self.per_request.is_empty() {
            return self.per_request.clone();
        }
        self.terms
            .iter()
            .map(|t| Threshold {
                metric: t.metric,
                threshold_ms: t.threshold_ms,
            })
            .collect()
    }

    /// The terms in words: `p99 TTFT <= 200 ms, p99 TPOT <= 50 ms`.
    pub fn describe(&self) -> String {
        let mut parts: Vec<String> = self
            .terms
            .iter()
            .map(|t| {
                format!(
                    "p{} {} <= {}",
                    pct_label(t.percentile),
                    t.metric.info().short,
                    spaced(t.threshold_ms)
                )
            })
            .collect();
        parts.extend(self.task_terms.iter().map(|t| {
            format!(
                "p{} task duration <= {}",
                pct_label(t.percentile),
                spaced(t.threshold_ms)
            )
        }));
        if let Some(a) = self.attainment {
            let th: Vec<String> = self
                .request_thresholds()
                .iter()
                .map(|t| format!("{} <= {}", t.metric.info().short, spaced(t.threshold_ms)))
                .collect();
            parts.push(format!(
                "{:.0}% of requests with {}",
                a * 100.0,
                th.join(" and ")
            ));
        }
        parts.join(", ")
    }
}

fn spaced(ms: f64) -> String {
    let s = format_ms(ms);
    let split = s.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(s.len());
    format!("{} {}", &s[..split], &s[split..])
}

/// The metric whose values a term judges: the latency a user saw.
pub fn judged_metric(metric: Metric, open_loop: bool) -> Metric {
    match (metric, open_loop) {
        (Metric::Ttft, true) => Metric::TtftFromSchedule,
        (Metric::E2el, true) => Metric::E2elFromSchedule,
        (m, _) => m,
    }
}

/// Whether one completed request is good (`thresholds` from [`Slo::request_thresholds`]).
pub fn is_good(m: &RequestMetrics, thresholds: &[Threshold], open_loop: bool) -> bool {
    thresholds.iter().all(|t| {
        match judged_metric(t.metric, open_loop).value(m) {
            Some(v) => v <= t.threshold_ms,
            // An undefined TPOT (fewer than 2 tokens) passes; a request with
            // no first token has no TTFT and cannot be good.
            None => t.metric == Metric::Tpot || t.metric == Metric::Itl,
        }
    })
}

/// One term's outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TermOutcome {
    pub term: SloTerm,
    /// The figure judged (its key in the results).
    pub judged: Metric,
    /// The percentile with its 95 % interval (None: no values).
    pub estimate: Option<Estimate>,
    /// The point estimate is within the threshold (this decides the exit code).
    pub passes: bool,
    /// Pass or fail on the whole interval, else inconclusive.
    pub verdict: Verdict,
    /// More requests (of the same distribution) that would settle an inconclusive verdict.
    pub more_requests_to_settle: Option<u64>,
}

/// One task term's outcome: the percentile of the completed tasks'
/// durations with its interval, judged as a request term is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskTermOutcome {
    pub term: TaskTerm,
    /// The percentile with its 95 % interval (None: no task completed).
    pub estimate: Option<Estimate>,
    /// The point estimate is within the threshold.
    pub passes: bool,
    /// Pass or fail on the whole interval, else inconclusive.
    pub verdict: Verdict,
    /// More tasks (of the same distribution) that would settle an inconclusive verdict.
    pub more_tasks_to_settle: Option<u64>,
}

/// How a run did against its SLO.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SloOutcome {
    pub slo: Slo,
    pub terms: Vec<TermOutcome>,
    /// The task terms' outcomes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub task_terms: Vec<TaskTermOutcome>,
    /// Good requests / duration (req/s).
    pub request_goodput: f64,
    /// Output tokens of good requests / duration (tokens/s).
    pub token_goodput: f64,
    /// Good / all requests sent (completed, failed, and never sent alike).
    pub attainment: f64,
    pub good_requests: u64,
    pub error_rate_ok: bool,
    /// Every term passes (point estimates), the error rate is within bounds,
    /// and the attainment is reached (joint form).
    pub meets: bool,
    /// Some term's interval straddles its threshold.
    pub inconclusive: bool,
    /// Why it does not meet the SLO, in words (empty when it does).
    pub reasons: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_parse_and_print_back() {
        let t: SloTerm = "ttft:p99<=200ms".parse().unwrap();
        assert_eq!(
            (t.metric, t.percentile, t.threshold_ms),
            (Metric::Ttft, 99.0, 200.0)
        );
        assert_eq!(t.to_string(), "ttft:p99<=200ms");
        let t: SloTerm = "e2el:median<=2.5s".parse().unwrap();
        assert_eq!(
            (t.metric, t.percentile, t.threshold_ms),
            (Metric::E2el, 50.0, 2500.0)
        );
        assert_eq!(t.to_string(), "e2el:p50<=2.5s");
        let t: SloTerm = " itl:p99.9<=500us".parse().unwrap();
        assert_eq!((t.percentile, t.threshold_ms), (99.9, 0.5));
        assert_eq!(
            "tpot:p90<=50".parse::<SloTerm>().unwrap().threshold_ms,
            50.0
        );
        let terms = parse_terms(&[
            "ttft:p99<=200ms,tpot:p99<=50ms".into(),
            "e2el:p90<=5s".into(),
        ])
        .unwrap();
        assert_eq!(terms.len(), 3);
    }

    /// The shell-safe spelling (`ttft:p99:200ms`, no `<` or `=` for the
    /// shell to read as a redirection) and `<` alone mean what `<=` means.
    #[test]
    fn the_shell_safe_spelling_is_the_same_term() {
        for (safe, full) in [
            ("ttft:p99:200ms", "ttft:p99<=200ms"),
            ("tpot:p90:50ms", "tpot:p90<=50ms"),
            ("e2el:median:2.5s", "e2el:median<=2.5s"),
            ("itl:p99.9:500us", "itl:p99.9<=500us"),
            ("ttft:p99<200ms", "ttft:p99<=200ms"),
        ] {
            assert_eq!(
                safe.parse::<SloTerm>().unwrap(),
                full.parse::<SloTerm>().unwrap(),
                "{safe}"
            );
        }
        let terms = parse_terms(&["ttft:p99:200ms,tpot:p99:50ms".into()]).unwrap();
        assert_eq!(
            terms,
            parse_terms(&["ttft:p99<=200ms,tpot:p99<=50ms".into()]).unwrap()
        );
        assert!("ttft:p99:".parse::<SloTerm>().is_err());
        assert!("ttft:p99".parse::<SloTerm>().is_err());
    }

    /// `task:` terms hold task durations; the others stay request terms.
    #[test]
    fn task_terms_parse_beside_request_terms() {
        let mut terms = any_terms("task:p90:120s,ttft:p99<=200ms").unwrap();
        terms.extend(any_terms("task:median<=1.5s").unwrap());
        assert_eq!(
            terms,
            [
                AnyTerm::Task(TaskTerm {
                    percentile: 90.0,
                    threshold_ms: 120_000.0
                }),
                AnyTerm::Request("ttft:p99<=200ms".parse().unwrap()),
                AnyTerm::Task(TaskTerm {
                    percentile: 50.0,
                    threshold_ms: 1500.0
                }),
            ]
        );
        let AnyTerm::Task(t) = terms[0] else {
            unreachable!()
        };
        assert_eq!(t.to_string(), "task:p90<=120s");
        let e = "task:p100:1s".parse::<AnyTerm>().unwrap_err();
        assert!(e.contains("task:p90:120s"), "{e}");
        assert!("tasks:p90:1s".parse::<AnyTerm>().is_err());
        let slo = Slo {
            task_terms: vec![t],
            ..Default::default()
        };
        assert!(slo.is_gate());
        assert_eq!(slo.describe(), "p90 task duration <= 120 s");
    }

    #[test]
    fn bad_terms_say_what_is_valid() {
        for bad in [
            "ttft<=200ms",
            "ttfb:p99<=1s",
            "ttft:p100<=1s",
            "ttft:p0<=1s",
            "ttft:p99<=0ms",
            "ttft:p99<=fast",
            "ttft:q99<=1s",
            "connect:p99<=1s",
            "ttft:p99<=1e400ms",
        ] {
            let e = bad.parse::<SloTerm>().unwrap_err();
            assert!(
                e.contains("ttft:p99:200ms") || e.contains("valid metrics"),
                "{bad}: {e}"
            );
        }
        assert!("ttft:200".parse::<Threshold>().is_ok());
        assert!("ttft:-1"
            .parse::<Threshold>()
            .unwrap_err()
            .contains("ttft:200"));
    }

    #[test]
    fn good_requests_meet_every_threshold() {
        let m = RequestMetrics {
            ttft_ms: Some(150.0),
            ttft_sched_ms: Some(250.0),
            tpot_ms: None,
            max_itl_ms: Some(9.0),
            ..Default::default()
        };
        let th = [
            Threshold {
                metric: Metric::Ttft,
                threshold_ms: 200.0,
            },
            Threshold {
                metric: Metric::Tpot,
                threshold_ms: 50.0,
            },
        ];
        assert!(
            is_good(&m, &th, false),
            "closed loop judges from send; undefined TPOT passes"
        );
        assert!(
            !is_good(&m, &th, true),
            "open loop judges from the scheduled arrival"
        );
        let none = RequestMetrics::default();
        assert!(
            !is_good(&none, &th, false),
            "no first token, no TTFT: not good"
        );
    }

    #[test]
    fn descriptions_read_as_words() {
        let slo = Slo {
            terms: parse_terms(&["ttft:p99<=200ms,tpot:p99<=50ms".into()]).unwrap(),
            ..Default::default()
        };
        assert_eq!(slo.describe(), "p99 TTFT <= 200 ms, p99 TPOT <= 50 ms");
    }
}
