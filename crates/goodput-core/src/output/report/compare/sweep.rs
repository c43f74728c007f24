//! Two sweeps compared: the goodput headline (its rate, a gateable figure,
//! and its search bracket — a bracket, not a confidence interval, so its
//! change has no significance), and the curve points matched by offered
//! load, each pair compared as two runs on the figures of the curve. Loads
//! that do not match are listed, with what would make them match.

use serde::Serialize;

use super::comparability::{run_warnings, Warning, WarningKind};
use super::figure::{Figure, Unit};
use super::run::run_figures;
use super::samples::RecordSamples;
use super::significance::Significance;
use crate::plan::sweep::{Goodput, SweepMode, SweepResult};

/// The figures shown at each matched load.
pub const CURVE_FIGURES: [&str; 9] = [
    "request_throughput",
    "output_throughput",
    "median_ttft_ms",
    "p99_ttft_ms",
    "median_tpot_ms",
    "p99_tpot_ms",
    "median_e2el_ms",
    "p99_e2el_ms",
    "error_rate",
];

/// Two sweeps' curves, matched by offered load.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweepComparison {
    /// What the offered load is: `req/s` (open loop) or `concurrency`.
    pub offered_unit: &'static str,
    pub base_goodput: Option<Goodput>,
    pub new_goodput: Option<Goodput>,
    pub points: Vec<PointComparison>,
    /// Offered loads of one sweep only.
    pub only_base: Vec<f64>,
    pub only_new: Vec<f64>,
    /// Why some or all points could not be matched.
    pub explanation: Option<String>,
}

/// One offered load, in both sweeps.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PointComparison {
    pub offered: f64,
    pub figures: Vec<Figure>,
}

/// Offered load → index into `points`, by curve order (the last point at a load wins:
/// a search's confirming rerun comes after the point it confirms).
fn curve(r: &SweepResult) -> (bool, Vec<(f64, usize)>) {
    let mut out: Vec<(f64, usize)> = Vec::new();
    let mut open = false;
    for c in &r.curve {
        let Some(p) = r.points.get(c.point) else {
            continue;
        };
        open |= p.result.config.load.is_open();
        match out.iter_mut().find(|(o, _)| same_load(*o, c.offered)) {
            Some(slot) => slot.1 = c.point,
            None => out.push((c.offered, c.point)),
        }
    }
    (open, out)
}

fn same_load(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * a.abs().max(b.abs())
}

fn loads(v: &[f64], unit: &str) -> String {
    let list: Vec<String> = v.iter().map(|x| format!("{x}")).collect();
    format!("{} {unit}", list.join(", "))
}

fn describe_mode(m: &Option<SweepMode>) -> String {
    let list = |v: Vec<String>| v.join(", ");
    match m {
        None => "unknown".into(),
        Some(SweepMode::Auto) => "auto".into(),
        Some(SweepMode::Rates(r)) => {
            format!("rates {}", list(r.iter().map(|x| x.to_string()).collect()))
        }
        Some(SweepMode::Concurrencies(c)) => format!(
            "concurrencies {}",
            list(c.iter().map(|x| x.to_string()).collect())
        ),
        Some(SweepMode::Search { precision }) => {
            format!("goodput search (precision {}%)", precision * 100.0)
        }
        Some(SweepMode::Frontier { concurrencies, .. }) => format!(
            "frontier {}",
            list(concurrencies.iter().map(|x| x.to_string()).collect())
        )
        .trim_end()
        .to_string(),
    }
}

/// Warnings, the headline figures (goodput) and the curves of two sweeps.
pub(super) fn compare(
    base: &SweepResult,
    new: &SweepResult,
    records: Option<(&RecordSamples, &RecordSamples)>,
) -> (Vec<Warning>, Vec<Figure>, SweepComparison) {
    let mut warnings = plan_warnings(base, new);
    let figures = goodput_figure(base, new).into_iter().collect();
    let curves = compare_curves(base, new, records, &mut warnings);
    (warnings, figures, curves)
}

/// Where the two sweeps were not measured alike: their first points' run
/// warnings (not the load, which a curve varies), and their plans.
fn plan_warnings(base: &SweepResult, new: &SweepResult) -> Vec<Warning> {
    let mut warnings = match (base.points.first(), new.points.first()) {
        (Some(b), Some(n)) => run_warnings(&b.result, &n.result, false),
        _ => Vec::new(),
    };
    if base.mode != new.mode {
        warnings.push(Warning {
            kind: WarningKind::SweepPlan,
            message: format!(
                "sweep plans differ: BASE {}, NEW {}",
                describe_mode(&base.mode),
                describe_mode(&new.mode)
            ),
        });
    }
    warnings
}

/// The goodput headline, when either sweep found one: its rate, gateable;
/// a search bracket is no interval, so it has no significance.
fn goodput_figure(base: &SweepResult, new: &SweepResult) -> Option<Figure> {
    let (gb, gn) = (base.goodput.as_ref(), new.goodput.as_ref());
    (gb.is_some() || gn.is_some()).then(|| {
        Figure::new(
            super::gate::GOODPUT,
            Unit::RequestsPerSecond,
            gb.map(|g| g.rate),
            gn.map(|g| g.rate),
            Significance::NOT_AVAILABLE,
        )
    })
}

/// The curves matched by offered load, each matched pair compared as two
/// runs; a different load at the same offered load adds a warning.
fn compare_curves(
    base: &SweepResult,
    new: &SweepResult,
    records: Option<(&RecordSamples, &RecordSamples)>,
    warnings: &mut Vec<Warning>,
) -> SweepComparison {
    let ((open_b, cb), (open_n, cn)) = (curve(base), curve(new));
    let unit = |open| if open { "req/s" } else { "concurrency" };
    let mut out = SweepComparison {
        offered_unit: unit(open_b),
        base_goodput: base.goodput.clone(),
        new_goodput: new.goodput.clone(),
        points: Vec::new(),
        only_base: Vec::new(),
        only_new: Vec::new(),
        explanation: None,
    };
    if cb.is_empty() || cn.is_empty() {
        out.explanation = Some(format!(
            "{} has no curve points: only the headline is compared",
            if cb.is_empty() { "BASE" } else { "NEW" }
        ));
        return out;
    }
    if open_b != open_n {
        out.explanation = Some(format!(
            "BASE's curve is in {} and NEW's in {}: no point can be matched",
            unit(open_b),
            unit(open_n)
        ));
        return out;
    }
    let mut load_warned = false;
    for &(offered, ib) in &cb {
        let Some(&(_, inew)) = cn.iter().find(|(o, _)| same_load(*o, offered)) else {
            out.only_base.push(offered);
            continue;
        };
        let (rb, rn) = (&base.points[ib].result, &new.points[inew].result);
        if !load_warned && rb.config.load != rn.config.load {
            load_warned = true;
            warnings.push(Warning {
                kind: WarningKind::Load,
                message: format!(
                    "load differs at the same offered load: BASE {}, NEW {}",
                    rb.config.load, rn.config.load
                ),
            });
        }
        let samples = records.and_then(|(sb, sn)| sb.run(&rb.run_id).zip(sn.run(&rn.run_id)));
        let figures = run_figures(rb, rn, samples)
            .into_iter()
            .filter(|f| CURVE_FIGURES.contains(&f.name.as_str()))
            .collect();
        out.points.push(PointComparison { offered, figures });
    }
    out.only_new = cn
        .iter()
        .filter(|(o, _)| !cb.iter().any(|(b, _)| same_load(*b, *o)))
        .map(|(o, _)| *o)
        .collect();
    out.explanation = unmatched(&out);
    out
}

/// What to say about loads of one sweep only: none in common, or which.
fn unmatched(out: &SweepComparison) -> Option<String> {
    let u = out.offered_unit;
    if out.points.is_empty() {
        return Some(format!(
            "no offered load in common (BASE {}; NEW {}): rerun both with the same --rates or --concurrencies to compare the curves point by point",
            loads(&out.only_base, u),
            loads(&out.only_new, u)
        ));
    }
    let mut parts = Vec::new();
    if !out.only_base.is_empty() {
        parts.push(format!("only in BASE: {}", loads(&out.only_base, u)));
    }
    if !out.only_new.is_empty() {
        parts.push(format!("only in NEW: {}", loads(&out.only_new, u)));
    }
    (!parts.is_empty()).then(|| {
        format!(
            "{} of the loads match; {}",
            out.points.len(),
            parts.join("; ")
        )
    })
}
