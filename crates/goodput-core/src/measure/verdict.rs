//! Verdicts: judging an SLO term `metric:pQ<=T` with its uncertainty.
//!
//! An SLO term says "the q-quantile of metric M must be <= T". A run yields a
//! finite sample of per-request values, so its percentile is an estimate; this
//! module says whether the sample *settles* the term and, when it does not,
//! roughly how many more requests would.
//!
//! # Method
//!
//! **Binomial order-statistic intervals** (distribution-free; e.g. Conover,
//! *Practical Nonparametric Statistics*, §3.2; Hahn & Meeker, *Statistical
//! Intervals*, ch. 5). For n values from a continuous distribution, the
//! number B of values at or below the true q-quantile is Binomial(n, q), so
//! the order statistics `[x(l), x(u)]` cover it with probability
//! `P(l <= B <= u − 1)`; the ranks `(l, u)` are chosen so each tail has
//! probability at most `(1 − confidence)/2`, by
//! [`crate::measure::stats::binomial_ci_ranks`] at any confidence level (95 % for a
//! verdict, `1 − alpha/K` for a look). A rank outside `1..=n` leaves that
//! side open (`None`).
//!
//! [`judge`] gives the term a [`Verdict`]: `Pass` when the whole interval is
//! `<= T`, `Fail` when the whole interval is `> T`, `Inconclusive` otherwise
//! (an open upper bound can never pass, an open lower bound never fail). The
//! exit code follows the point estimate (`point_passes`), as `docs/cli.md#exit-codes`
//! says; the verdict is an annotation. Because the interval is
//! distribution-free, a wrong settled verdict (`Pass` while the true
//! quantile is above T, `Fail` while it is at or below T) has probability at
//! most 2.5 % on each side, whatever the latency distribution, ties included.
//!
//! **Multiple looks: Bonferroni over a pre-planned set of looks.** Stopping a
//! sweep point as soon as its interval clears the threshold, and looking
//! again and again, would inflate the 5 % error. The early stop
//! (`metrics::collector::early_stop`) fixes a geometric schedule of K looks
//! before the point starts and uses at each look a two-sided interval at
//! confidence `1 − alpha/K`. By the union bound, P(some look settles
//! wrongly) <= K · alpha/K = alpha, for any dependence between looks. This
//! is the Bonferroni group-sequential design; it is conservative compared
//! with Pocock (1977) or O'Brien–Fleming (1979) boundaries, which need the
//! joint distribution of the looks, and it needs nothing but the per-look
//! binomial bound.
//!
//! **More requests to settle.** Assuming the share `p̂ = #{x <= T}/n` stays
//! fixed as the run grows, [`judge`] finds the smallest total N at which the
//! exact 95 % binomial ranks at N put `floor(p̂·N)` outside `[l, u)` (so the
//! interval lies on one side of T), by doubling and bisection; the exact
//! boundary can wiggle by a few requests because ranks are integers. It is a
//! planning estimate, not a promise: `p̂` itself is uncertain.

use serde::{Deserialize, Serialize};

use crate::measure::stats::{binomial_ci_ranks, percentile_of, Estimate, Ordered};

/// Largest number of additional requests [`judge`] will suggest; beyond it
/// the term is reported as practically unsettleable (`None`).
pub const SETTLE_CAP: u64 = 10_000_000;

/// Whether the data settle an SLO term.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The whole confidence interval of the percentile is within the threshold.
    Pass,
    /// The whole confidence interval is above the threshold.
    Fail,
    /// The interval straddles the threshold, or is open on the deciding side.
    Inconclusive,
}

/// One SLO term judged on one run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TermJudgement {
    /// The quantile, as a fraction (0.99 for p99).
    pub q: f64,
    /// The term's threshold, in the metric's unit.
    pub threshold: f64,
    /// Number of values judged.
    pub count: usize,
    /// Point estimate (numpy's linear percentile) with its 95 %
    /// binomial order-statistic interval; open bounds are `None`. The value
    /// is NaN for an empty sample.
    pub estimate: Estimate,
    /// What the interval says.
    pub verdict: Verdict,
    /// Whether the point estimate is within the threshold: the exit code
    /// follows this, not the verdict.
    pub point_passes: bool,
    /// Estimated additional requests (same distribution) after which the
    /// interval would lie on one side of the threshold: `Some(0)` when the
    /// verdict is already settled, `None` when the share of values within
    /// the threshold equals q exactly, the sample is empty, or more than
    /// [`SETTLE_CAP`] would be needed.
    pub more_requests_to_settle: Option<u64>,
}

/// Judge the term "the `q`-quantile is `<= threshold`" on `sorted`, the
/// run's per-request values sorted ascending (finite values; `q` a fraction
/// in (0, 1)), with `in_time` the same values (or the first of them) in the
/// order they happened, whose dependence widens the interval
/// ([`crate::measure::stats::quantile_ranks`]). See the module documentation for the
/// rule.
pub fn judge(
    sorted: &(impl Ordered + ?Sized),
    in_time: Option<&[f64]>,
    q: f64,
    threshold: f64,
) -> TermJudgement {
    let n = sorted.count();
    let (l, u) = crate::measure::stats::quantile_ranks(
        sorted,
        in_time,
        q,
        crate::measure::stats::Level::TwoSided,
    );
    let (lo, hi) = bounds(sorted, l, u);
    let value = percentile_of(sorted, q * 100.0).unwrap_or(f64::NAN);
    let verdict = verdict_of(lo, hi, threshold);
    let within = sorted.count_le(threshold);
    let more_requests_to_settle = match verdict {
        Verdict::Pass | Verdict::Fail => Some(0),
        Verdict::Inconclusive if threshold.is_nan() => None,
        Verdict::Inconclusive => {
            more_to_settle(n, within, q).map(|more| scaled_for_dependence(n, more, q, (l, u)))
        }
    };
    TermJudgement {
        q,
        threshold,
        count: n,
        estimate: Estimate { value, lo, hi },
        verdict,
        point_passes: value <= threshold,
        more_requests_to_settle,
    }
}

/// `more` extra requests (counted for independent ones) scaled by how much
/// the dependence between requests widened the ranks `(l, u)` beyond the
/// binomial ones: a variance `D` times larger needs about `D` times the
/// requests. A planning figure, as the count it scales.
fn scaled_for_dependence(n: usize, more: u64, q: f64, (l, u): (usize, usize)) -> u64 {
    let (l0, u0) = binomial_ci_ranks(n, q, 0.95);
    let centre = q * n as f64;
    let ratio = |wide: f64, narrow: f64| {
        if narrow > 0.0 {
            (wide / narrow).powi(2)
        } else {
            1.0
        }
    };
    let d = ratio(u as f64 - centre, u0 as f64 - centre)
        .max(ratio(centre - l as f64, centre - l0 as f64))
        .max(1.0);
    let total = ((n as u64 + more) as f64 * d).ceil() as u64;
    total.saturating_sub(n as u64).max(more)
}

/// The order statistics at 1-based ranks `l` and `u`; `None` outside `1..=n`.
fn bounds(sorted: &(impl Ordered + ?Sized), l: usize, u: usize) -> (Option<f64>, Option<f64>) {
    let n = sorted.count();
    let at = |r: usize| (1..=n).contains(&r).then(|| sorted.at(r - 1));
    (at(l), at(u))
}

fn verdict_of(lo: Option<f64>, hi: Option<f64>, threshold: f64) -> Verdict {
    match (lo, hi) {
        (_, Some(h)) if h <= threshold => Verdict::Pass,
        (Some(l), _) if l > threshold => Verdict::Fail,
        _ => Verdict::Inconclusive,
    }
}

/// Smallest extra count after which, with `within/n` of the values still
/// within the threshold, the 95 % interval settles (see module docs).
fn more_to_settle(n: usize, within: usize, q: f64) -> Option<u64> {
    if n == 0 || !(q > 0.0 && q < 1.0) {
        return None;
    }
    let share = within as f64 / n as f64;
    if share == q {
        return None;
    }
    let pass_side = share > q;
    let settled = |total: usize| {
        let k = (within as u128 * total as u128 / n as u128) as usize;
        let (l, u) = binomial_ci_ranks(total, q, 0.95);
        if pass_side {
            k >= u
        } else {
            k < l
        }
    };
    let cap = n.saturating_add(SETTLE_CAP as usize);
    // Gallop: double until settled (or past the cap), then bisect.
    let (mut lo, mut hi) = (n, n);
    loop {
        hi = hi.saturating_mul(2).min(cap);
        if settled(hi) {
            break;
        }
        if hi >= cap {
            return None;
        }
        lo = hi;
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if settled(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some((hi - n) as u64)
}

/// The fewest values whose `q`-quantile (a fraction) has a finite 95 %
/// interval on both sides ([`binomial_ci_ranks`]): 368 for p99, 72 for
/// p95, 36 for p90 (`docs/metrics.md#requests-a-percentile-needs`). Below it a run cannot settle a term of that percentile
/// either way.
pub fn requests_to_bound(q: f64) -> u64 {
    if !(q > 0.0 && q < 1.0) {
        return u64::MAX;
    }
    let bounded = |n: usize| {
        let (l, u) = binomial_ci_ranks(n, q, 0.95);
        l >= 1 && u <= n
    };
    // Bounded is monotone in n: gallop up, then bisect.
    let mut hi = 2usize;
    while !bounded(hi) {
        if hi > 1 << 40 {
            return u64::MAX;
        }
        hi *= 2;
    }
    let mut lo = hi / 2;
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if bounded(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::stats::exact_coverage;
    use rand::rngs::StdRng;
    use rand::SeedableRng;
    use rand_distr::{Distribution, LogNormal};

    /// z for the standard normal's 0.99 quantile (true p99 of LogNormal(0, σ)
    /// is exp(σ·z)).
    const Z99: f64 = 2.326_347_874_040_841;

    fn sorted_sample<D: Distribution<f64>>(rng: &mut StdRng, d: &D, n: usize) -> Vec<f64> {
        let mut v: Vec<f64> = (0..n).map(|_| d.sample(rng)).collect();
        v.sort_by(f64::total_cmp);
        v
    }

    #[test]
    fn coverage_of_p99_and_median_by_simulation() {
        // 2,000 samples each: the Monte-Carlo standard error of a coverage
        // near 0.96 is sqrt(0.96·0.04/2000) = 0.0044.
        let mut rng = StdRng::seed_from_u64(20_240_611);
        let d = LogNormal::new(0.0, 0.5).unwrap();
        for (n, q, truth) in [(1000, 0.99, (0.5 * Z99).exp()), (200, 0.5, 1.0)] {
            let trials = 2000;
            let mut hits = 0;
            for _ in 0..trials {
                let v = sorted_sample(&mut rng, &d, n);
                let e = judge(&v, None, q, truth).estimate;
                let (lo, hi) = (e.lo.unwrap(), e.hi.unwrap());
                if lo <= truth && truth <= hi {
                    hits += 1;
                }
            }
            let mc = hits as f64 / trials as f64;
            let exact = exact_coverage(n, q, binomial_ci_ranks(n, q, 0.95));
            println!("coverage n={n} q={q}: simulated {mc:.4}, exact {exact:.4}");
            assert!((0.95..0.995).contains(&exact), "exact {exact}");
            assert!((0.95..0.995).contains(&mc), "simulated {mc}");
            // The simulation agrees with the exact coverage (4 standard errors).
            let se = (exact * (1.0 - exact) / trials as f64).sqrt();
            assert!((mc - exact).abs() < 4.0 * se, "{mc} vs {exact}");
        }
    }

    #[test]
    fn judge_pass_fail_inconclusive() {
        let mut rng = StdRng::seed_from_u64(7);
        let d = LogNormal::new(0.0, 0.5).unwrap();
        let v = sorted_sample(&mut rng, &d, 2000);
        let p99 = (0.5 * Z99).exp(); // 3.20

        let pass = judge(&v, None, 0.99, 2.0 * p99);
        assert_eq!(pass.verdict, Verdict::Pass);
        assert!(pass.point_passes);
        assert_eq!(pass.more_requests_to_settle, Some(0));

        let fail = judge(&v, None, 0.99, 0.5 * p99);
        assert_eq!(fail.verdict, Verdict::Fail);
        assert!(!fail.point_passes);
        assert_eq!(fail.more_requests_to_settle, Some(0));

        // Threshold at the sample's own p99: the interval straddles it, and
        // exactly 1,980 of 2,000 values (p̂ = q) are within it, so under the
        // fixed-share assumption no sample size settles it.
        let own = judge(&v, None, 0.99, pass.estimate.value);
        assert_eq!(own.verdict, Verdict::Inconclusive);
        assert_eq!(own.more_requests_to_settle, None);
        // Threshold at the 1,982nd value (p̂ = 0.991): still straddling,
        // settles on Pass with enough requests.
        let mid = judge(&v, None, 0.99, v[1981]);
        assert_eq!(mid.verdict, Verdict::Inconclusive);
        assert!(mid.point_passes);
        let more = mid.more_requests_to_settle.unwrap();
        assert!(more > 0, "{more}");
        println!("straddling p99 at n=2000 (p̂ = 0.991): {more} more requests to settle");

        // An open upper bound never passes: 100 values all far below T.
        let small = sorted_sample(&mut rng, &d, 100);
        let j = judge(&small, None, 0.99, 1e9);
        assert!(j.estimate.hi.is_none());
        assert_eq!(j.verdict, Verdict::Inconclusive);
        assert!(j.point_passes);
        // ... until enough requests make the upper bound finite (368 for p99).
        let more = j.more_requests_to_settle.unwrap();
        assert!((200..400).contains(&more), "{more}");

        let empty = judge(&[][..], None, 0.99, 1.0);
        assert_eq!(empty.verdict, Verdict::Inconclusive);
        assert!(!empty.point_passes);
        assert_eq!(empty.more_requests_to_settle, None);
        assert_eq!(
            serde_json::to_string(&[Verdict::Pass, Verdict::Fail, Verdict::Inconclusive]).unwrap(),
            r#"["pass","fail","inconclusive"]"#
        );
    }

    #[test]
    fn more_requests_to_settle_is_where_the_interval_clears() {
        // Values 1..=1000, T = 992.5: 992 of 1000 (p̂ = 0.992) within T for p99.
        let v: Vec<f64> = (1..=1000).map(f64::from).collect();
        let j = judge(&v, None, 0.99, 992.5);
        assert_eq!(j.verdict, Verdict::Inconclusive);
        let more = j.more_requests_to_settle.unwrap() as usize;
        // A normal approximation puts it near (1.96/0.002)²·0.0099 ≈ 9,500 in
        // total; the exact search must be in that region.
        assert!((6_000..14_000).contains(&(1000 + more)), "{more}");
        // A sample of the projected size with the same share passes; one of
        // 80 % of the extra does not.
        let at = |total: usize| -> Verdict {
            let within = 992 * total / 1000;
            let s: Vec<f64> = (0..total)
                .map(|i| if i < within { 1.0 } else { 1000.0 })
                .collect();
            judge(&s, None, 0.99, 992.5).verdict
        };
        assert_eq!(at(1000 + more), Verdict::Pass);
        assert_eq!(at(1000 + more * 8 / 10), Verdict::Inconclusive);

        // Below q: settles on Fail.
        let j = judge(&v, None, 0.99, 987.5);
        assert_eq!(j.verdict, Verdict::Inconclusive);
        assert!(j.more_requests_to_settle.unwrap() > 0);
        // Share exactly q: never settles under the fixed-share assumption.
        assert_eq!(judge(&v, None, 0.99, 990.5).more_requests_to_settle, None);
        // Share a hair above q: more than the cap.
        let v: Vec<f64> = (1..=100_000).map(f64::from).collect();
        assert_eq!(
            judge(&v, None, 0.99, 99_000.5).more_requests_to_settle,
            None
        );
        let j = judge(&v, None, 0.99, 99_001.5);
        assert_eq!(j.verdict, Verdict::Inconclusive);
        assert_eq!(j.more_requests_to_settle, None);
    }

    #[test]
    fn requests_to_bound_is_the_first_closed_interval() {
        for (q, n) in [(0.99, 368u64), (0.95, 72), (0.9, 36)] {
            let got = requests_to_bound(q);
            let closed = |n: u64| {
                let (l, u) = binomial_ci_ranks(n as usize, q, 0.95);
                l >= 1 && u <= n as usize
            };
            assert!(closed(got) && !closed(got - 1), "q {q}: {got}");
            assert_eq!(got, n, "q {q}");
        }
    }
}
