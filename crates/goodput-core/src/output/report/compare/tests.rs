//! Comparisons of constructed results: figures, significance by intervals
//! and by ranks, warnings, sweeps, and the Markdown snapshot.

use std::collections::BTreeMap;

use super::*;
use crate::load::schedule::Load;
use crate::measure::metrics::Metric;
use crate::measure::stats::Distribution;
use crate::measure::stats::Estimate;
use crate::output::config::tests::synthetic_workload;
use crate::output::report::console::tests::sample_result;
use crate::output::result::RunResult;
use crate::plan::sweep::{CurvePoint, PointRole, SweepPoint, SweepResult};

/// Every value and bound of a distribution times `k`.
pub(crate) fn scale(d: &mut Distribution, k: f64) {
    let s = |e: &mut Estimate| {
        e.value *= k;
        e.lo = e.lo.map(|x| x * k);
        e.hi = e.hi.map(|x| x * k);
    };
    s(&mut d.mean);
    for (_, e) in d.percentiles.iter_mut() {
        s(e);
    }
    d.std *= k;
    d.min *= k;
    d.max *= k;
}

/// The sample run, and a NEW one whose TTFT is 20 % slower, throughput 5 %
/// lower, with a p99.9 and no p95, on another run id.
fn pair() -> (RunResult, RunResult) {
    let base = sample_result();
    let mut new = sample_result();
    new.run_id = "00000000000000bb".into();
    scale(
        new.metrics.distributions.get_mut(&Metric::Ttft).unwrap(),
        1.2,
    );
    new.metrics.throughput.output.value *= 0.95;
    (base, new)
}

fn find<'a>(figs: &'a [Figure], name: &str) -> &'a Figure {
    figs.iter().find(|f| f.name == name).unwrap_or_else(|| {
        panic!(
            "no {name} in {:?}",
            figs.iter().map(|f| &f.name).collect::<Vec<_>>()
        )
    })
}

fn run_input<'a>(label: &'a str, saved: &'a Saved) -> Input<'a> {
    Input {
        label,
        saved,
        records: None,
    }
}

#[test]
fn run_figures_cover_the_summary_under_vllm_names() {
    let (base, new) = pair();
    let figs = run_figures(&base, &new, None);
    let names: Vec<&str> = figs.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        &names[..4],
        [
            "request_throughput",
            "output_throughput",
            "total_token_throughput",
            "error_rate"
        ]
    );
    for m in ["ttft", "tpot", "itl", "e2el"] {
        for s in ["mean", "median", "p90", "p95", "p99"] {
            assert!(
                names.contains(&format!("{s}_{m}_ms").as_str()),
                "{s}_{m}_ms in {names:?}"
            );
        }
    }
    let p99 = find(&figs, "p99_ttft_ms");
    let (b, n) = (p99.base.unwrap(), p99.new.unwrap());
    assert!((n / b - 1.2).abs() < 1e-9);
    assert!((p99.relative_change.unwrap() - 0.2).abs() < 1e-9);
    assert!((p99.change.unwrap() - (n - b)).abs() < 1e-9);
    let out = find(&figs, "output_throughput");
    assert!((out.relative_change.unwrap() + 0.05).abs() < 1e-9);
    // Unchanged figures: no change, and (by intervals) not significant.
    let tpot = find(&figs, "median_tpot_ms");
    assert_eq!(tpot.change, Some(0.0));
    assert_eq!(tpot.significance.method, Method::Intervals);
    assert_eq!(tpot.significance.significant, Some(false));
    assert_eq!(
        find(&figs, "total_token_throughput").significance,
        Significance::NOT_AVAILABLE
    );
    // One 503 in each: error rates equal, p = 1.
    let err = find(&figs, "error_rate");
    assert_eq!(err.significance.method, Method::TwoProportions);
    assert_eq!(err.significance.significant, Some(false));
}

#[test]
fn significance_by_intervals() {
    let (base, mut new) = pair();
    // The median TTFT of the sample is ~110 ms with a binomial interval of
    // about ±5 ms: 1.2x moves it ~20 ms, clear of the interval.
    let figs = run_figures(&base, &new, None);
    let median = find(&figs, "median_ttft_ms");
    assert_eq!(median.significance.method, Method::Intervals);
    assert_eq!(median.significance.significant, Some(true), "{median:?}");
    // p99 of 19 values has an open upper bound facing the higher NEW: the
    // data cannot say whether it moved.
    let p99 = find(&figs, "p99_ttft_ms");
    assert_eq!(p99.significance.significant, None, "{p99:?}");
    // 1 % slower: within the intervals.
    new = sample_result();
    scale(
        new.metrics.distributions.get_mut(&Metric::Ttft).unwrap(),
        1.01,
    );
    let figs = run_figures(&base, &new, None);
    assert_eq!(
        find(&figs, "median_ttft_ms").significance.significant,
        Some(false)
    );
    // A figure with no interval at all is n/a.
    for (_, e) in new
        .metrics
        .distributions
        .get_mut(&Metric::Ttft)
        .unwrap()
        .percentiles
        .iter_mut()
    {
        e.lo = None;
        e.hi = None;
    }
    let figs = run_figures(&base, &new, None);
    assert_eq!(find(&figs, "median_ttft_ms").significance.describe(), "n/a");
}

#[test]
fn the_mean_is_judged_by_batch_means_when_both_runs_have_records() {
    let (base, new) = pair();
    let values = |k: f64| {
        let ttft: Vec<f64> = (0..19).map(|i| (100 + i) as f64 * k).collect();
        Samples::from_values(BTreeMap::from([(Metric::Ttft, ttft)]))
    };
    let (sb, sn) = (values(1.0), values(1.2));
    let figs = run_figures(&base, &new, Some((&sb, &sn)));
    let mean = find(&figs, "mean_ttft_ms");
    assert_eq!(mean.significance.method, Method::BatchMeans, "{mean:?}");
    assert_eq!(mean.significance.significant, Some(true), "{mean:?}");
    // Percentiles are judged on their saved (batch-means) intervals; the
    // p99 of 19 requests has an open side, so it is not known.
    assert_eq!(
        find(&figs, "median_ttft_ms").significance.method,
        Method::Intervals
    );
    assert_eq!(find(&figs, "p99_ttft_ms").significance.method, Method::None);
    // Metrics without values in the records, and ITL always, fall back to
    // intervals (a p90 of 19 has an open upper side: not known).
    assert_eq!(
        find(&figs, "mean_itl_ms").significance.method,
        Method::Intervals
    );
    // The same values on both sides: not significant.
    let figs = run_figures(&base, &new, Some((&sb, &sb)));
    let f = find(&figs, "mean_ttft_ms");
    assert_eq!(f.significance.significant, Some(false));
    assert!(f.significance.p_value.unwrap() > 0.9);
}

#[test]
fn warnings_name_what_differs() {
    let (base, mut new) = pair();
    assert!(run_warnings(&base, &new, true).is_empty());
    new.config.tokenizer = "tiktoken:o200k_base".into();
    new.config.model = "other".into();
    new.config.load = Load::Closed { concurrency: 8 };
    new.config.workload = Some(synthetic_workload("chat, input 64 / output 16 tokens", 3));
    new.config.min_tokens_sent = false;
    new.config.endpoint = crate::request::protocol::Endpoint::Completions;
    new.config.percentiles = vec![50.0, 90.0, 99.0, 99.9];
    for d in new.metrics.distributions.values_mut() {
        d.percentiles.retain(|(p, _)| *p != 95.0);
    }
    let w = run_warnings(&base, &new, true);
    let kinds: Vec<WarningKind> = w.iter().map(|w| w.kind).collect();
    assert_eq!(
        kinds,
        [
            WarningKind::Tokenizer,
            WarningKind::Workload,
            WarningKind::OutputPinning,
            WarningKind::Load,
            WarningKind::Endpoint,
            WarningKind::Model,
            WarningKind::Percentiles
        ]
    );
    assert_eq!(w[3].message, "load differs: BASE concurrency 4, NEW concurrency 8: latency and throughput depend on the load");
    assert_eq!(
        w[6].message,
        "percentiles differ: p95 only in BASE; p99.9 only in NEW: those figures have one side only"
    );
    assert!(
        w[1].message
            .contains("summary none vs 'chat, input 64 / output 16 tokens'"),
        "{}",
        w[1].message
    );
    assert!(!w[1].message.contains("seed"), "{}", w[1].message);
    // Without --fail-on gates on them, a missing side is a '-' and n/a.
    let figs = run_figures(&base, &new, None);
    let p95 = find(&figs, "p95_ttft_ms");
    assert_eq!(
        (p95.new, p95.change, p95.significance.significant),
        (None, None, None)
    );
    assert!(find(&figs, "p99.9_ttft_ms").base.is_none());
}

#[test]
fn compare_judges_gates_and_refuses_mismatched_inputs() {
    let (base, new) = pair();
    let (b, n) = (
        Saved::Run(Box::new(base.clone())),
        Saved::Run(Box::new(new)),
    );
    let gates: Vec<FailOn> = ["p99_ttft_ms>+10%", "output_throughput<-10%"]
        .iter()
        .map(|g| g.parse().unwrap())
        .collect();
    let c = compare(run_input("a.json", &b), run_input("b.json", &n), &gates).unwrap();
    assert!(c.failed());
    assert_eq!(c.gates[0].message, "p99_ttft_ms: +20.0% > +10%");
    assert!(!c.gates[1].failed);
    // A run against a sweep.
    let s = Saved::Sweep(Box::default());
    let e = compare(run_input("a", &b), run_input("s", &s), &[]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "BASE is a run and NEW is a sweep: compare a run with a run, a sweep with a sweep, or a --repeat result with another"
    );
    // Records of another run.
    let other = RecordSamples::from_runs([("ffff".to_string(), Samples::default())]);
    let with = Input {
        records: Some(&other),
        ..run_input("a", &b)
    };
    let e = compare(with, run_input("b", &n), &[]).unwrap_err();
    assert_eq!(e.to_string(), "the BASE records have no measured request of run 00000000000000aa (the records of another run?)");
    // Records on one side only: a note, and intervals.
    let mine = RecordSamples::from_runs([(base.run_id.clone(), Samples::default())]);
    let with = Input {
        records: Some(&mine),
        ..run_input("a", &b)
    };
    let c = compare(with, run_input("b", &n), &[]).unwrap();
    assert!(
        c.notes[0].starts_with("records were given for one side only"),
        "{:?}",
        c.notes
    );
    // A gate on a figure neither has.
    let g: FailOn = "request_goodput<-5%".parse().unwrap();
    let e = compare(run_input("a", &b), run_input("b", &n), &[g]).unwrap_err();
    assert!(
        e.to_string().contains(
            "'request_goodput' is not a figure of these results; they have: request_throughput"
        ),
        "{e}"
    );
}

fn sweep(rates: &[f64], goodput: Option<f64>) -> SweepResult {
    let points: Vec<SweepPoint> = rates
        .iter()
        .enumerate()
        .map(|(i, &rate)| {
            let mut r = sample_result();
            r.run_id = format!("{i:016x}");
            r.config.load = Load::Open {
                rate,
                arrival: crate::load::schedule::Arrival::Poisson,
                max_concurrency: None,
            };
            SweepPoint {
                role: PointRole::Grid,
                meets: Some(true),
                wall_s: 1.0,
                result: r,
                start: None,
            }
        })
        .collect();
    let curve = rates
        .iter()
        .enumerate()
        .map(|(i, &offered)| CurvePoint {
            point: i,
            offered,
            request_throughput: 1.0,
            output_throughput: 1.0,
            ttft_p50_ms: None,
            ttft_p99_ms: None,
            tpot_p50_ms: None,
            tpot_p99_ms: None,
            e2el_p50_ms: None,
            e2el_p99_ms: None,
            saturated: false,
            meets: Some(true),
            cost_per_million_good_output_tokens: None,
            output_tokens_per_joule: None,
            mean_power_w: None,
        })
        .collect();
    SweepResult {
        mode: Some(crate::plan::sweep::SweepMode::Rates(rates.to_vec())),
        points,
        curve,
        goodput: goodput.map(|rate| crate::plan::sweep::Goodput {
            rate,
            bracket: (rate, None),
            slo: "p99 TTFT <= 200 ms".into(),
            workload: "w".into(),
            notes: vec![],
            confirmed: false,
            interval: None,
            method: None,
            inconclusive: false,
            unit: None,
        }),
        ..Default::default()
    }
}

#[test]
fn sweeps_compare_goodput_and_matched_points() {
    let (b, n) = (
        Saved::Sweep(Box::new(sweep(&[2.0, 6.0, 12.0], Some(12.0)))),
        Saved::Sweep(Box::new(sweep(&[2.0, 6.0, 20.0], Some(6.0)))),
    );
    let g: FailOn = "goodput<-10%".parse().unwrap();
    let c = compare(run_input("a", &b), run_input("b", &n), &[g]).unwrap();
    assert_eq!(c.gates[0].message, "goodput: -50.0% < -10%");
    let s = c.sweep.as_ref().unwrap();
    assert_eq!(s.offered_unit, "req/s");
    let loads: Vec<f64> = s.points.iter().map(|p| p.offered).collect();
    assert_eq!(loads, [2.0, 6.0]);
    assert_eq!(s.points[0].figures.len(), sweep::CURVE_FIGURES.len());
    assert_eq!(
        (s.only_base.as_slice(), s.only_new.as_slice()),
        (&[12.0][..], &[20.0][..])
    );
    assert_eq!(
        s.explanation.as_deref(),
        Some("2 of the loads match; only in BASE: 12 req/s; only in NEW: 20 req/s")
    );
    assert_eq!(c.warnings[0].kind, WarningKind::SweepPlan);
    // No load in common: said so, with the remedy.
    let n = Saved::Sweep(Box::new(sweep(&[3.0, 7.0], Some(6.0))));
    let c = compare(run_input("a", &b), run_input("b", &n), &[]).unwrap();
    let e = c.sweep.unwrap().explanation.unwrap();
    assert!(e.starts_with("no offered load in common (BASE 2, 6, 12 req/s; NEW 3, 7 req/s): rerun both with the same --rates"), "{e}");
    // Sweep text mentions brackets, curve and explanation.
    let c = compare(run_input("a", &b), run_input("b", &b), &[]).unwrap();
    let t = render::text(&c);
    assert!(t.contains("goodput brackets (search brackets, not confidence intervals): BASE 12.00–untested, NEW 12.00–untested"), "{t}");
    assert!(t.contains("curve, matched by offered load (req/s):"), "{t}");
    assert!(t.contains("result: PASS (no --fail-on gates)"), "{t}");
}

/// The Markdown of a fixed pair: a failing and a passing gate, a warning,
/// and significance by ranks for TTFT.
#[test]
fn markdown_snapshot() {
    let (base, mut new) = pair();
    new.config.percentiles = vec![50.0, 90.0, 99.0];
    for d in new.metrics.distributions.values_mut() {
        d.percentiles.retain(|(p, _)| *p != 95.0);
    }
    let ttft = |k: f64| {
        let v: Vec<f64> = (0..19).map(|i| (100 + i) as f64 * k).collect();
        Samples::from_values(BTreeMap::from([(Metric::Ttft, v)]))
    };
    let rb = RecordSamples::from_runs([(base.run_id.clone(), ttft(1.0))]);
    let rn = RecordSamples::from_runs([(new.run_id.clone(), ttft(1.2))]);
    let (b, n) = (Saved::Run(Box::new(base)), Saved::Run(Box::new(new)));
    let gates: Vec<FailOn> = [
        "p99_ttft_ms>+10%",
        "output_throughput<-10%",
        "p50_tpot_ms>+2",
    ]
    .iter()
    .map(|g| g.parse().unwrap())
    .collect();
    let c = compare(
        Input {
            label: "main.json",
            saved: &b,
            records: Some(&rb),
        },
        Input {
            label: "pr.json",
            saved: &n,
            records: Some(&rn),
        },
        &gates,
    )
    .unwrap();
    let md = render::markdown(&c);
    assert!(
        md.starts_with(
            "### goodput compare: FAIL — `p99_ttft_ms>+10%` (p99_ttft_ms: +20.0% > +10%)\n"
        ),
        "{md}"
    );
    insta::assert_snapshot!(md);
}

#[test]
fn text_and_json_carry_the_same_verdict() {
    let (base, new) = pair();
    let (b, n) = (Saved::Run(Box::new(base)), Saved::Run(Box::new(new)));
    let g: FailOn = "p99_ttft_ms>+10%".parse().unwrap();
    let c = compare(run_input("a.json", &b), run_input("b.json", &n), &[g]).unwrap();
    let t = render::text(&c);
    assert!(
        t.contains("  FAIL  p99_ttft_ms>+10%: p99_ttft_ms: +20.0% > +10% (significance n/a)"),
        "{t}"
    );
    assert!(t.ends_with("result: FAIL (1 of 1 gates failed)\n"), "{t}");
    let j = render::json(&c);
    assert_eq!(j["verdict"], "fail");
    assert_eq!(j["kind"], "compare");
    assert_eq!(j["gates"][0]["failed"], true);
    let p99 = j["figures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "p99_ttft_ms")
        .unwrap();
    assert_eq!(p99["unit"], "ms");
    assert_eq!(p99["method"], "none");
    assert_eq!(p99["significant"], serde_json::Value::Null);
    assert!((p99["relative_change"].as_f64().unwrap() - 0.2).abs() < 1e-9);
}

#[test]
fn sweep_points_are_judged_on_their_own_intervals() {
    let (b, n) = (
        Saved::Sweep(Box::new(sweep(&[2.0, 6.0], None))),
        Saved::Sweep(Box::new(sweep(&[2.0, 6.0], None))),
    );
    // Records of the first point only (run ids are the point indices).
    let ttft = |k: f64| {
        let v: Vec<f64> = (0..19).map(|i| (100 + i) as f64 * k).collect();
        Samples::from_values(BTreeMap::from([(Metric::Ttft, v)]))
    };
    let rb = RecordSamples::from_runs([(format!("{:016x}", 0), ttft(1.0))]);
    let rn = RecordSamples::from_runs([(format!("{:016x}", 0), ttft(1.5))]);
    let c = compare(
        Input {
            records: Some(&rb),
            ..run_input("a", &b)
        },
        Input {
            records: Some(&rn),
            ..run_input("b", &n)
        },
        &[],
    )
    .unwrap();
    let s = c.sweep.unwrap();
    // The points' figures are percentiles and throughputs, judged on their
    // own saved intervals (records decide only a mean, which a curve
    // point does not show).
    let at = |i: usize| find(&s.points[i].figures, "median_ttft_ms").significance;
    assert_eq!(at(0).method, Method::Intervals);
    assert_eq!(at(1).method, Method::Intervals);
    // Without an SLO there is no goodput, and nothing to gate.
    assert!(c.figures.is_empty());
    let g: FailOn = "goodput<-5%".parse().unwrap();
    let e = compare(run_input("a", &b), run_input("b", &n), &[g]).unwrap_err();
    assert!(
        e.to_string()
            .ends_with("they have: none (a sweep without an SLO has no goodput)"),
        "{e}"
    );
}
