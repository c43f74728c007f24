//! The coverage study's findings, kept (`examples/coverage` measures them
//! at full size; `BENCHMARKS.md` has the table). In virtual time on the
//! simulator's engine, so every replication is a real run's metrics from
//! the real `Collector`, and the same seeds always give the same answer:
//!
//! - the 95 % intervals of a run cover the long-run truth about 95 % of
//!   the time at a light load, where neighbouring requests are alike (the
//!   binomial and bootstrap intervals they replaced covered mean TPOT in
//!   40 % of runs there);
//! - near capacity in open loop, where a run is shorter than the server's
//!   memory, the run says so (its crowding index) and its latency intervals
//!   bound the long-run value from below only, which they do;
//! - a run's throughput intervals are about as wide as its plan's runs
//!   vary, read from what sets the run's duration (the 1 s blocks they
//!   replaced were 6 times too wide in a closed loop at 70 % of capacity);
//! - `compare` of two runs of the same plan calls some figure significant
//!   in at most about 5 % of pairs (Holm's correction over the figures),
//!   and flags a 10 % slower prefill in nearly every pair of 1,000-request
//!   runs.

#[path = "../examples/virtual_search/mod.rs"]
mod virtual_search;

use goodput_core::measure::{Metric, RequestMetrics};
use goodput_core::output::compare::{metrics_figures, Figure};
use goodput_core::tokenizer::Tokenizer;
use virtual_search::{Lengths, Run, Virtual};

const LENGTHS: Lengths = Lengths::Uniform(0.5);
/// A fifth of the README deployment's capacity (24.5 req/s at these
/// lengths).
const RATE: f64 = 4.9;

fn open(v: &Virtual, measured: u64, seed: u64) -> Run {
    let warmup = ((RATE * 2.0).ceil() as u64).clamp(8, 500);
    v.open(RATE, measured, warmup, seed, LENGTHS, None, false)
}

/// Pooled values of measured, completed requests of `runs`.
fn pooled(runs: &[Run], metric: Metric) -> Vec<f64> {
    let tokenizer = Tokenizer::from_spec("none").unwrap();
    let mut v: Vec<f64> = runs
        .iter()
        .flat_map(|r| r.records.iter())
        .filter(|r| !r.warmup && r.error.is_none())
        .filter_map(|r| metric.value(&RequestMetrics::derive(r, &tokenizer)))
        .collect();
    v.sort_by(f64::total_cmp);
    v
}

#[test]
fn a_runs_intervals_cover_the_long_run_truth() {
    let v = Virtual::readme();
    let truth_runs: Vec<Run> = (0..4).map(|s| open(&v, 6000, 1_000_000 + s)).collect();
    let tpot = pooled(&truth_runs, Metric::Tpot);
    let ttft = pooled(&truth_runs, Metric::Ttft);
    let mean_tpot = tpot.iter().sum::<f64>() / tpot.len() as f64;
    let p90_ttft = goodput_core::measure::percentile_of(ttft.as_slice(), 90.0).unwrap();
    let p50_tpot = goodput_core::measure::percentile_of(tpot.as_slice(), 50.0).unwrap();
    let reps = 60;
    let (mut mean_in, mut p90_in, mut p50_in) = (0, 0, 0);
    let covers = |e: &goodput_core::measure::Estimate, t: f64| {
        e.lo.is_none_or(|l| l <= t) && e.hi.is_none_or(|h| t <= h)
    };
    for seed in 0..reps {
        let m = open(&v, 400, seed).metrics;
        let (d_tpot, d_ttft) = (m.get(Metric::Tpot).unwrap(), m.get(Metric::Ttft).unwrap());
        mean_in += usize::from(covers(&d_tpot.mean, mean_tpot));
        let at = |d: &goodput_core::measure::Distribution, p: f64| {
            d.percentiles.iter().find(|x| x.0 == p).unwrap().1
        };
        p90_in += usize::from(covers(&at(d_ttft, 90.0), p90_ttft));
        p50_in += usize::from(covers(&at(d_tpot, 50.0), p50_tpot));
    }
    // 95 % claimed: at least 52 of 60 (87 %) leaves room for the 60
    // replications' own spread; the independent intervals covered mean
    // TPOT in 40 % of runs at this load.
    for (name, n) in [
        ("mean TPOT", mean_in),
        ("p90 TTFT", p90_in),
        ("p50 TPOT", p50_in),
    ] {
        assert!(n >= 52, "{name}: {n} of {reps} covered");
    }
}

/// 95 % of the README deployment's capacity.
const NEAR_CAPACITY: f64 = 23.3;

/// The throughputs' intervals against the spread of 30 runs of one plan: a
/// closed loop at 70 % of capacity (32 users) and an open loop near
/// capacity. Their mean half-width is within a factor of 2 of 1.96 × the
/// runs' standard deviation (but the closed loop's output throughput, which
/// keeps the conservative blocks), and they cover the runs' mean in most
/// runs.
#[test]
fn throughput_intervals_are_as_wide_as_the_runs_vary() {
    let v = Virtual::readme();
    let reps = 30;
    for (name, runs) in [
        (
            "closed loop, 32 users",
            (0..reps)
                .map(|s| v.closed(32, 400, 32, s, LENGTHS).metrics)
                .collect::<Vec<_>>(),
        ),
        (
            "open loop at 95 %",
            (0..reps)
                .map(|s| {
                    v.open(NEAR_CAPACITY, 400, 47, s, LENGTHS, None, false)
                        .metrics
                })
                .collect(),
        ),
    ] {
        type Of = fn(&goodput_core::measure::RunMetrics) -> goodput_core::measure::Estimate;
        let figures: [(&str, Of); 2] = [
            ("request", |m| m.throughput.request),
            ("output", |m| m.throughput.output),
        ];
        for (figure, of) in figures {
            let e: Vec<goodput_core::measure::Estimate> = runs.iter().map(of).collect();
            let n = e.len() as f64;
            let mean = e.iter().map(|x| x.value).sum::<f64>() / n;
            let sd = (e.iter().map(|x| (x.value - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
            let half = e
                .iter()
                .map(|x| (x.hi.unwrap() - x.lo.unwrap()) / 2.0)
                .sum::<f64>()
                / n;
            let w = half / (1.96 * sd);
            let covered = e
                .iter()
                .filter(|x| x.lo.unwrap() <= mean && mean <= x.hi.unwrap())
                .count();
            // A closed loop's output rate is kept no surer than its request
            // rate, which is conservative there.
            let widest = if name.starts_with("closed") && figure == "output" {
                f64::INFINITY
            } else {
                1.6
            };
            assert!(
                (0.6..=widest).contains(&w),
                "{name}, {figure}: width ratio {w:.2}"
            );
            assert!(
                covered >= 25,
                "{name}, {figure}: {covered} of {reps} covered"
            );
        }
    }
}

#[test]
fn near_capacity_a_run_bounds_the_long_run_latency_from_below_and_says_so() {
    let v = Virtual::readme();
    let at = |rate: f64, measured: u64, seed: u64| {
        let warmup = ((rate * 2.0).ceil() as u64).clamp(8, 500);
        v.open(rate, measured, warmup, seed, LENGTHS, None, false)
    };
    // The long run, as far as a test can afford it: its pooled mean E2EL
    // still reads low against longer pools (the study: 3,166-3,263 ms
    // over pools of 100,000), so a lower end above it is a real miss.
    let truth_runs: Vec<Run> = (0..2)
        .map(|s| at(NEAR_CAPACITY, 12_500, 1_000_000 + s))
        .collect();
    let e2el = pooled(&truth_runs, Metric::E2el);
    let truth = e2el.iter().sum::<f64>() / e2el.len() as f64;
    let reps = 20;
    let (mut long, mut covered, mut misses) = (0, 0, Vec::new());
    for seed in 0..reps {
        let m = at(NEAR_CAPACITY, 2000, seed).metrics;
        let c = m
            .crowding
            .expect("an open loop at a constant rate has a crowding index");
        long += usize::from(c.long_memory);
        let mean = m.get(Metric::E2el).unwrap().mean;
        if c.long_memory {
            assert!(mean.hi.is_none() && mean.lo.is_some(), "{mean:?}");
            let slo = m.slo.as_ref().unwrap();
            assert!(slo.terms.iter().all(|t| t.estimate.unwrap().hi.is_none()
                && t.verdict != goodput_core::measure::Verdict::Pass));
        }
        if mean.lo.is_none_or(|l| l <= truth) && mean.hi.is_none_or(|h| truth <= h) {
            covered += 1;
        } else {
            misses.push(format!("{seed}: {mean:?} index {:?}", c.index));
        }
    }
    // The study: long memory in 200 of 200 such runs, the mean E2EL
    // interval (its lower end one-sided) covering in 97 %; with the
    // two-sided lower end 98.5 %; with both ends, 75 %, nearly every miss
    // below.
    assert!(long >= 18, "long memory in {long} of {reps}");
    assert!(
        covered >= 18,
        "{covered} of {reps} covered {truth:.0}: {misses:?}"
    );
    // A fifth of capacity: requests barely wait for each other.
    let light = (0..10)
        .filter(|&s| {
            at(RATE, 2000, 100 + s)
                .metrics
                .crowding
                .is_some_and(|c| c.long_memory)
        })
        .count();
    assert!(light <= 1, "long memory in {light} of 10 light runs");
}

fn called(figs: &[Figure]) -> Vec<&str> {
    figs.iter()
        .filter(|f| f.significance.significant == Some(true))
        .map(|f| f.name.as_str())
        .collect()
}

#[test]
fn compare_rarely_calls_two_runs_of_one_plan_different_and_sees_a_slower_prefill() {
    let v = Virtual::readme();
    let percentiles = [50.0, 90.0, 95.0, 99.0];
    let pairs = 40;
    let mut alarms = Vec::new();
    for r in 0..pairs {
        let (a, b) = (open(&v, 200, 2 * r), open(&v, 200, 2 * r + 1));
        let figs = metrics_figures(&a.metrics, &b.metrics, &percentiles, None);
        let c = called(&figs);
        if !c.is_empty() {
            alarms.push(format!("pair {r}: {c:?}"));
        }
    }
    // At most 5 % in expectation: 4 of 40 leaves room for the pairs' own
    // spread (the study measured 2 % over 100 pairs).
    assert!(alarms.len() <= 4, "{} of {pairs}: {alarms:?}", alarms.len());

    let mut slow = Virtual::readme();
    slow.config.hardware.peak_tflops /= 1.1;
    let pairs = 10;
    let mut flagged = 0;
    for r in 0..pairs {
        let (a, b) = (open(&v, 1000, 2 * r), open(&slow, 1000, 2 * r + 1));
        let figs = metrics_figures(&a.metrics, &b.metrics, &percentiles, None);
        flagged += usize::from(called(&figs).iter().any(|n| n.contains("ttft")));
    }
    // The study: a TTFT figure flagged in 85 of 100 pairs at this load.
    assert!(
        flagged >= 7,
        "a 10 % slower prefill flagged in {flagged} of {pairs}"
    );
}
