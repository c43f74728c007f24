//! Goodput: the completed requests that met every per-request threshold
//! (good requests and their output tokens), and the run judged against its
//! SLO — each term's percentile with its interval, the error rate, the
//! attainment — at the end of the run.

use super::latency::{Distributions, LatencySamples};
use super::outcomes::OutcomeCounts;
use crate::measure::metrics::RequestMetrics;
use crate::measure::slo::{
    self, Slo, SloOutcome, SloTerm, TaskTermOutcome, TermOutcome, Threshold,
};
use crate::measure::stats;
use crate::measure::verdict::Verdict;

#[derive(Debug, Default)]
pub(super) struct Goodput {
    /// Per-request thresholds of a good request.
    thresholds: Vec<Threshold>,
    good: u64,
    good_output_tokens: u64,
}

impl Goodput {
    pub(super) fn new(thresholds: Vec<Threshold>) -> Self {
        Goodput {
            thresholds,
            ..Default::default()
        }
    }

    /// A completed request, judged from the schedule in open loop.
    pub(super) fn add(&mut self, m: &RequestMetrics, open_loop: bool) {
        if slo::is_good(m, &self.thresholds, open_loop) {
            self.good += 1;
            self.good_output_tokens += u64::from(m.output_tokens);
        }
    }

    /// How the run did against `slo` over `duration_s`.
    pub(super) fn judge(
        &self,
        slo: &Slo,
        latency: &LatencySamples,
        d: &Distributions,
        outcomes: &OutcomeCounts,
        duration_s: f64,
        open_loop: bool,
    ) -> SloOutcome {
        let mut reasons = Vec::new();
        let terms: Vec<TermOutcome> = slo
            .terms
            .iter()
            .map(|&term| {
                let outcome = judge_term(term, latency, d, open_loop);
                if !outcome.passes {
                    reasons.push(match outcome.estimate {
                        Some(e) => format!(
                            "p{} {} {} > {}",
                            stats::pct_label(term.percentile),
                            term.metric.info().short,
                            slo::format_ms(e.value),
                            slo::format_ms(term.threshold_ms)
                        ),
                        None => format!("no {} values to judge {term}", term.metric.info().short),
                    });
                }
                outcome
            })
            .collect();
        let done = outcomes.done();
        let error_rate = outcomes.error_rate();
        let error_rate_ok = done > 0 && error_rate <= slo.max_error_rate;
        if !error_rate_ok {
            reasons.push(format!(
                "error rate {:.2}% > {:.2}%",
                error_rate * 100.0,
                slo.max_error_rate * 100.0
            ));
        }
        let attainment = if done > 0 {
            self.good as f64 / done as f64
        } else {
            0.0
        };
        if let Some(a) = slo.attainment.filter(|&a| attainment < a) {
            reasons.push(format!(
                "SLO attainment {:.1}% < {:.1}%",
                attainment * 100.0,
                a * 100.0
            ));
        }
        let per_s = |x: u64| {
            if duration_s > 0.0 {
                x as f64 / duration_s
            } else {
                0.0
            }
        };
        SloOutcome {
            slo: slo.clone(),
            inconclusive: terms.iter().any(|t| t.verdict == Verdict::Inconclusive),
            meets: reasons.is_empty(),
            terms,
            task_terms: Vec::new(),
            request_goodput: per_s(self.good),
            token_goodput: per_s(self.good_output_tokens),
            attainment,
            good_requests: self.good,
            error_rate_ok,
            reasons,
        }
    }
}

/// The task terms' outcomes join the run's: a term missed is a reason the
/// SLO is not met, an unsettled one leaves the verdict inconclusive.
pub(super) fn add_task_terms(outcome: &mut SloOutcome, task_terms: Vec<TaskTermOutcome>) {
    for t in task_terms.iter().filter(|t| !t.passes) {
        outcome.reasons.push(match t.estimate {
            Some(e) => format!(
                "p{} task duration {} > {}",
                stats::pct_label(t.term.percentile),
                slo::format_ms(e.value),
                slo::format_ms(t.term.threshold_ms)
            ),
            None => format!("no task completed to judge {}", t.term),
        });
    }
    outcome.inconclusive |= task_terms
        .iter()
        .any(|t| t.verdict == Verdict::Inconclusive);
    outcome.meets = outcome.reasons.is_empty();
    outcome.task_terms = task_terms;
}

/// One term on the latency a user saw: per-request values by binomial
/// order statistics, pooled ITL by its bootstrap interval.
fn judge_term(
    term: SloTerm,
    latency: &LatencySamples,
    d: &Distributions,
    open_loop: bool,
) -> TermOutcome {
    let judged = slo::judged_metric(term.metric, open_loop);
    let mut out = TermOutcome {
        term,
        judged,
        estimate: None,
        passes: false,
        verdict: Verdict::Inconclusive,
        more_requests_to_settle: None,
    };
    if judged.info().pooled {
        let e = d
            .get(&judged)
            .and_then(|d| d.percentiles.iter().find(|p| p.0 == term.percentile))
            .map(|p| p.1);
        out.estimate = e;
        out.passes = e.is_some_and(|e| e.value <= term.threshold_ms);
        out.verdict = match e {
            Some(e) if e.hi.is_some_and(|h| h <= term.threshold_ms) => Verdict::Pass,
            Some(e) if e.lo.is_some_and(|l| l > term.threshold_ms) => Verdict::Fail,
            _ => Verdict::Inconclusive,
        };
        return out;
    }
    let Some(v) = latency.values(judged).filter(|v| !v.is_empty()) else {
        return out;
    };
    let j = v.judge(term.percentile / 100.0, term.threshold_ms);
    out.estimate = Some(j.estimate);
    out.passes = j.point_passes;
    out.verdict = j.verdict;
    out.more_requests_to_settle = j
        .more_requests_to_settle
        .filter(|_| j.verdict == Verdict::Inconclusive);
    out
}

/// A long-memory run ([`super::crowding`]) bounds each term's long-run
/// value from below only: its estimate loses its upper end, and a pass it
/// settled is no longer settled (the point estimate, and the exit code with
/// it, still decide). No count of requests settles a pass then: the
/// crowding is the load's, and a longer run at it reads the same index
/// (docs/metrics.md "Crowding"), so a passing term has no
/// `more_requests_to_settle`; a failing one keeps its count (its lower end
/// can still settle the fail).
pub(super) fn open_upper_sides(outcome: &mut SloOutcome) {
    for t in &mut outcome.task_terms {
        open_upper_side(
            &mut t.estimate,
            &mut t.verdict,
            t.passes,
            &mut t.more_tasks_to_settle,
        );
    }
    for t in &mut outcome.terms {
        open_upper_side(
            &mut t.estimate,
            &mut t.verdict,
            t.passes,
            &mut t.more_requests_to_settle,
        );
    }
}

/// One term (of requests or of tasks) of a long-memory run, as
/// [`open_upper_sides`] says.
fn open_upper_side(
    estimate: &mut Option<stats::Estimate>,
    verdict: &mut Verdict,
    passes: bool,
    more_to_settle: &mut Option<u64>,
) {
    // The verdicts keep the two-sided rule (a settled fail: the 97.5 %
    // lower end over the threshold), and the estimate that lower end.
    if let Some(e) = estimate.as_mut() {
        e.hi = None;
    }
    if *verdict == Verdict::Pass {
        *verdict = Verdict::Inconclusive;
    }
    if *verdict == Verdict::Inconclusive && passes {
        *more_to_settle = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::slo::{parse_terms, Slo};
    use crate::measure::stats::Estimate;
    use crate::measure::Metric;

    /// In a crowded run a passing term, settled or not, loses its upper end
    /// and any count of requests that would settle it (none would at this
    /// load); a failing term keeps its count and a settled fail stays one.
    #[test]
    fn a_crowded_runs_passing_terms_have_no_count_to_settle() {
        let term = parse_terms(&["ttft:p99<=200ms".to_string()]).unwrap()[0];
        let outcome = |passes: bool, verdict: Verdict, more: Option<u64>| TermOutcome {
            term,
            judged: Metric::Ttft,
            estimate: Some(Estimate {
                value: if passes { 100.0 } else { 300.0 },
                lo: Some(90.0),
                hi: Some(if passes { 150.0 } else { 400.0 }),
            }),
            passes,
            verdict,
            more_requests_to_settle: more,
        };
        let terms = vec![
            outcome(true, Verdict::Pass, None),
            outcome(true, Verdict::Inconclusive, Some(500)),
            outcome(false, Verdict::Inconclusive, Some(300)),
            outcome(false, Verdict::Fail, None),
        ];
        let mut o = SloOutcome {
            slo: Slo {
                terms: vec![term],
                task_terms: Vec::new(),
                per_request: Vec::new(),
                attainment: None,
                max_error_rate: 0.01,
            },
            terms,
            task_terms: Vec::new(),
            request_goodput: 0.0,
            token_goodput: 0.0,
            attainment: 1.0,
            good_requests: 0,
            error_rate_ok: true,
            meets: true,
            inconclusive: false,
            reasons: Vec::new(),
        };
        open_upper_sides(&mut o);
        let got: Vec<(Verdict, Option<u64>)> = o
            .terms
            .iter()
            .map(|t| (t.verdict, t.more_requests_to_settle))
            .collect();
        assert_eq!(
            got,
            [
                (Verdict::Inconclusive, None),
                (Verdict::Inconclusive, None),
                (Verdict::Inconclusive, Some(300)),
                (Verdict::Fail, None),
            ]
        );
        assert!(o.terms.iter().all(|t| t.estimate.unwrap().hi.is_none()));
    }
}
