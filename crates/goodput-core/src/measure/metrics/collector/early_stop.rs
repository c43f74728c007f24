//! Ending a sweep point as soon as its SLO verdict is settled.

use super::latency::LatencySamples;
use crate::measure::slo::{self, SloTerm};
use crate::measure::stats::{self, Ordered};
use crate::measure::verdict::Verdict;

/// Ends a sweep point as soon as its SLO verdict is settled.
///
/// Looks are planned up front at 32, 64, 128, ... finished measured requests
/// (up to the point's planned size), and each uses a binomial
/// order-statistic interval at confidence 1 − α/K for K looks (Bonferroni),
/// so the chance that any look settles a term wrongly stays below α whatever
/// happens between looks (see `crate::measure::verdict`). Responses finish out of
/// order — slow ones last — so a look counts the requests still in flight
/// against a pass (as if they were infinitely slow) and in favour of a fail
/// (as if they were instant), and failed requests against a pass: an early
/// verdict is the one the rest of the run could not overturn. Pooled ITL
/// terms are never settled early (their per-token values are not
/// independent draws). The binomial argument assumes independent requests;
/// queueing makes neighbours' latencies correlated, which is why a settled
/// verdict is only used to end a sweep point, and is reported as such.
#[derive(Debug, Clone)]
pub struct EarlyStop {
    terms: Vec<SloTerm>,
    looks: Vec<u64>,
    next: usize,
    confidence: f64,
    settled: Option<Verdict>,
}

impl EarlyStop {
    /// Looks up to `planned` finished requests; `alpha` is the overall error.
    pub fn new(terms: Vec<SloTerm>, planned: u64, alpha: f64) -> Option<EarlyStop> {
        let mut looks = Vec::new();
        let mut n = 32u64;
        while n < planned {
            looks.push(n);
            n *= 2;
        }
        if terms.is_empty() || looks.is_empty() {
            return None;
        }
        let k = looks.len() as f64;
        Some(EarlyStop {
            terms,
            looks,
            next: 0,
            confidence: 1.0 - alpha / k,
            settled: None,
        })
    }

    /// The verdict a look settled; `None` until one does.
    pub fn settled(&self) -> Option<Verdict> {
        self.settled
    }

    /// At a planned look — `done` measured requests finished, `failed` of
    /// them failed, `pending` sent but not finished — whether the verdict
    /// is settled. Returns the verdict once, when it settles.
    pub(super) fn look(
        &mut self,
        latency: &LatencySamples,
        done: u64,
        failed: u64,
        pending: u64,
        open_loop: bool,
    ) -> Option<Verdict> {
        if self.settled.is_some() {
            return None;
        }
        let next = *self.looks.get(self.next)?;
        if done < next {
            return None;
        }
        let mut all_pass = true;
        let mut any_fail = false;
        for term in &self.terms {
            let judged = slo::judged_metric(term.metric, open_loop);
            if judged.info().pooled {
                all_pass = false;
                continue;
            }
            let (passes, fails) = self.term_settles(term, &latency.view(judged), failed, pending);
            all_pass &= passes;
            any_fail |= fails;
        }
        self.next += 1;
        // A pass also needs the error-rate and attainment limits, which the
        // run checks at its end: it is only settled early with no failure yet.
        let settled = if any_fail {
            Some(Verdict::Fail)
        } else if all_pass && failed == 0 {
            Some(Verdict::Pass)
        } else {
            None
        };
        self.settled = settled;
        settled
    }

    /// Whether one term, on the finished values `v` so far, passes whatever
    /// the requests still in flight turn out to be, and whether it fails.
    fn term_settles(
        &self,
        term: &SloTerm,
        v: &(impl Ordered + ?Sized),
        failed: u64,
        pending: u64,
    ) -> (bool, bool) {
        let q = term.percentile / 100.0;
        // Pass: failed and in-flight requests as if infinitely slow (after v).
        let n_pass = v.count() + (failed + pending) as usize;
        let (_, u) = stats::binomial_ci_ranks(n_pass, q, self.confidence);
        let passes = u >= 1 && u <= v.count() && v.at(u - 1) <= term.threshold_ms;
        // Fail: in-flight requests as if instant (before v).
        let n_fail = v.count() + pending as usize;
        let (l, _) = stats::binomial_ci_ranks(n_fail, q, self.confidence);
        let fails = l > pending as usize
            && l <= n_fail
            && v.at(l - 1 - pending as usize) > term.threshold_ms;
        (passes, fails)
    }
}
