//! `goodput compare`: two saved results side by side — every figure of the
//! summary with its change from BASE to NEW and whether that change is
//! larger than the runs' noise ([`significance`]), the `--fail-on` gates
//! judged on them ([`gate`]), and a warning wherever the two were not
//! measured alike. Pure: results (and records' values) in, a [`Comparison`]
//! out; [`render`] turns it into text, Markdown or JSON.
//!
//! Runs are compared figure by figure ([`run_figures`]); sweeps by their
//! goodput headline and their curve points matched by offered load
//! ([`sweep`]).

pub mod comparability;
pub mod gate;
pub mod render;
pub mod samples;
pub mod significance;
pub mod sweep;

use serde::Serialize;

use crate::metrics::{Metric, RunMetrics};
use crate::report::saved::Saved;
use crate::result::RunResult;
use crate::stats::{pct_label, Distribution, Estimate};

pub use comparability::{describe_load, run_warnings, Warning, WarningKind};
pub use gate::{FailOn, GateError, GateOutcome};
pub use samples::{RecordSamples, RecordsError, Samples};
pub use significance::{Method, Significance, ALPHA};
pub use sweep::{PointComparison, SweepComparison};

/// A figure's unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Unit {
    #[serde(rename = "req/s")]
    RequestsPerSecond,
    #[serde(rename = "tok/s")]
    TokensPerSecond,
    /// A share of requests, 0 to 1 (the error rate).
    #[serde(rename = "share")]
    Share,
    #[serde(rename = "ms")]
    Milliseconds,
}

impl Unit {
    /// The unit column: `req/s`, `tok/s`, `share`, `ms`.
    pub fn as_str(self) -> &'static str {
        match self {
            Unit::RequestsPerSecond => "req/s",
            Unit::TokensPerSecond => "tok/s",
            Unit::Share => "share",
            Unit::Milliseconds => "ms",
        }
    }

    /// After a number: `ms`, `req/s`; nothing for a share.
    pub fn suffix(self) -> &'static str {
        match self {
            Unit::Share => "",
            u => u.as_str(),
        }
    }
}

/// `182.40`, `1234.5`; a share to four decimals.
pub fn format_value(x: f64, unit: Unit) -> String {
    match unit {
        Unit::Share => format!("{x:.4}"),
        _ if x.abs() >= 1000.0 => format!("{x:.1}"),
        _ => format!("{x:.2}"),
    }
}

/// `+21.40`, `-0.0100`: a change, without its unit.
pub fn format_signed(x: f64, unit: Unit) -> String {
    match unit {
        Unit::Share => format!("{x:+.4}"),
        _ if x.abs() >= 1000.0 => format!("{x:+.1}"),
        _ => format!("{x:+.2}"),
    }
}

/// `+21.40 ms`, `-0.0100`: a change, with its unit.
pub fn format_change(x: f64, unit: Unit) -> String {
    match unit.suffix() {
        "" => format_signed(x, unit),
        s => format!("{} {s}", format_signed(x, unit)),
    }
}

/// `+21.4%` for a relative change of 0.214.
pub fn format_relative(r: f64) -> String {
    format!("{:+.1}%", r * 100.0)
}

/// One figure of both results.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Figure {
    /// vLLM's flat key (`p99_ttft_ms`, `request_throughput`), or `goodput`.
    pub name: String,
    pub unit: Unit,
    pub base: Option<f64>,
    pub new: Option<f64>,
    /// NEW − BASE, in the unit.
    pub change: Option<f64>,
    /// (NEW − BASE) / BASE, a fraction; null when BASE is 0 and NEW is not.
    pub relative_change: Option<f64>,
    #[serde(flatten)]
    pub significance: Significance,
}

impl Figure {
    /// The figure with its changes computed; its significance is n/a unless both sides have a value.
    pub fn new(
        name: impl Into<String>,
        unit: Unit,
        base: Option<f64>,
        new: Option<f64>,
        significance: Significance,
    ) -> Figure {
        let both = base.zip(new);
        Figure {
            name: name.into(),
            unit,
            base,
            new,
            change: both.map(|(b, n)| n - b),
            relative_change: both.and_then(|(b, n)| {
                if b != 0.0 {
                    Some((n - b) / b.abs())
                } else {
                    (n == b).then_some(0.0)
                }
            }),
            significance: if both.is_some() {
                significance
            } else {
                Significance::NOT_AVAILABLE
            },
        }
    }
}

/// What was compared, on one side.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Side {
    /// The file, as the user named it.
    pub label: String,
    /// `run` or `sweep`.
    pub kind: &'static str,
    pub run_id: Option<String>,
    pub started_at: Option<String>,
    /// A run's load, in words.
    pub load: Option<String>,
    /// A sweep's number of points.
    pub points: Option<usize>,
    /// Per-request values (records) were given.
    pub records: bool,
}

/// Two results compared, and the gates judged.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub base: Side,
    pub new: Side,
    pub warnings: Vec<Warning>,
    pub notes: Vec<String>,
    /// A run's figures, or a sweep's headline (goodput).
    pub figures: Vec<Figure>,
    /// The curves of two sweeps.
    pub sweep: Option<SweepComparison>,
    pub gates: Vec<GateOutcome>,
}

impl Comparison {
    /// Some gate failed.
    pub fn failed(&self) -> bool {
        self.gates.iter().any(|g| g.failed)
    }
}

/// One side's input: a results file, its name, and optionally its records.
#[derive(Debug, Clone, Copy)]
pub struct Input<'a> {
    pub label: &'a str,
    pub saved: &'a Saved,
    pub records: Option<&'a RecordSamples>,
}

/// Why two results cannot be compared.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CompareError {
    #[error(
        "BASE is a {base} and NEW is a {new}: compare a run with a run, or a sweep with a sweep"
    )]
    KindMismatch {
        base: &'static str,
        new: &'static str,
    },
    #[error("a --repeat result holds several runs: compare one of them (`goodput report` shows each), or compare two --repeat results' across-repeat intervals by eye; a test across repeats is not built yet")]
    Repeats,
    #[error("the {side} records have no measured request of {what} (the records of another run?)")]
    RecordsDoNotMatch { side: &'static str, what: String },
    #[error(transparent)]
    Gate(#[from] GateError),
}

fn kind(s: &Saved) -> &'static str {
    match s {
        Saved::Run(_) => "run",
        Saved::Sweep(_) => "sweep",
        Saved::Repeat(_) => "repeat",
    }
}

fn side(input: &Input) -> Side {
    let run = match input.saved {
        Saved::Run(r) => Some(r.as_ref()),
        Saved::Sweep(_) | Saved::Repeat(_) => None,
    };
    Side {
        label: input.label.to_string(),
        kind: kind(input.saved),
        run_id: run.map(|r| r.run_id.clone()),
        started_at: input.saved.runs().first().map(|r| r.started_at.clone()),
        load: run.map(|r| describe_load(&r.load)),
        points: match input.saved {
            Saved::Sweep(s) => Some(s.points.len()),
            Saved::Repeat(r) => Some(r.runs.len()),
            Saved::Run(_) => None,
        },
        records: input.records.is_some(),
    }
}

/// Compare NEW with BASE and judge the gates.
pub fn compare(base: Input, new: Input, gates: &[FailOn]) -> Result<Comparison, CompareError> {
    for (name, input) in [("BASE", &base), ("NEW", &new)] {
        if let Some(records) = input.records {
            let runs = input.saved.runs();
            if !runs.iter().any(|r| records.run(&r.run_id).is_some()) {
                return Err(CompareError::RecordsDoNotMatch {
                    side: name,
                    what: match input.saved {
                        Saved::Run(r) => format!("run {}", r.run_id),
                        Saved::Sweep(_) => "any point of the sweep".into(),
                        Saved::Repeat(_) => "any repeat".into(),
                    },
                });
            }
        }
    }
    let mut notes = Vec::new();
    if base.records.is_some() != new.records.is_some() {
        notes.push(
            "records were given for one side only: latency significance comes from the saved intervals (give both --base-records and --new-records for the rank test)".into(),
        );
    }
    let records = base.records.zip(new.records);
    let (warnings, figures, sweep) = match (base.saved, new.saved) {
        (Saved::Run(b), Saved::Run(n)) => {
            let samples = records.and_then(|(rb, rn)| rb.run(&b.run_id).zip(rn.run(&n.run_id)));
            (run_warnings(b, n, true), run_figures(b, n, samples), None)
        }
        (Saved::Sweep(b), Saved::Sweep(n)) => {
            let (warnings, figures, s) = sweep::compare(b, n, records);
            (warnings, figures, Some(s))
        }
        (Saved::Repeat(_), _) | (_, Saved::Repeat(_)) => return Err(CompareError::Repeats),
        (b, n) => {
            return Err(CompareError::KindMismatch {
                base: kind(b),
                new: kind(n),
            })
        }
    };
    let gates = gate::check(gates, &figures)?;
    Ok(Comparison {
        base: side(&base),
        new: side(&new),
        warnings,
        notes,
        figures,
        sweep,
        gates,
    })
}

/// The latency metrics compared, in the summary's order.
const LATENCY: [Metric; 4] = [Metric::Ttft, Metric::Tpot, Metric::Itl, Metric::E2el];

fn bounds(e: &Estimate) -> (Option<f64>, Option<f64>) {
    (e.lo, e.hi)
}

fn by_intervals(base: Option<&Estimate>, new: Option<&Estimate>) -> Significance {
    match (base, new) {
        (Some(b), Some(n)) => significance::intervals_apart(bounds(b), bounds(n)),
        _ => Significance::NOT_AVAILABLE,
    }
}

/// Every figure of two runs' summaries, under vLLM's flat key names:
/// throughputs, goodput, error rate, then mean, median and each percentile
/// (of either run) of TTFT, TPOT, ITL and E2EL. With both runs' per-request
/// values, TTFT, TPOT and E2EL are judged by the rank test; otherwise (and
/// ITL always: its pooled per-token values are not independent draws) by
/// their saved intervals.
pub fn run_figures(
    base: &RunResult,
    new: &RunResult,
    samples: Option<(&Samples, &Samples)>,
) -> Vec<Figure> {
    let (b, n) = (&base.metrics, &new.metrics);
    let (tb, tn) = (&b.throughput, &n.throughput);
    let mut out = vec![
        Figure::new(
            "request_throughput",
            Unit::RequestsPerSecond,
            Some(tb.request.value),
            Some(tn.request.value),
            by_intervals(Some(&tb.request), Some(&tn.request)),
        ),
        Figure::new(
            "output_throughput",
            Unit::TokensPerSecond,
            Some(tb.output.value),
            Some(tn.output.value),
            by_intervals(Some(&tb.output), Some(&tn.output)),
        ),
        Figure::new(
            "total_token_throughput",
            Unit::TokensPerSecond,
            Some(tb.total_token),
            Some(tn.total_token),
            Significance::NOT_AVAILABLE,
        ),
    ];
    let goodput = |m: &RunMetrics| m.slo.as_ref().map(|s| s.request_goodput);
    if goodput(b).is_some() || goodput(n).is_some() {
        out.push(Figure::new(
            "request_goodput",
            Unit::RequestsPerSecond,
            goodput(b),
            goodput(n),
            Significance::NOT_AVAILABLE,
        ));
    }
    out.push(Figure::new(
        "error_rate",
        Unit::Share,
        Some(b.errors.error_rate),
        Some(n.errors.error_rate),
        significance::two_proportions(
            b.failed,
            b.completed + b.failed,
            n.failed,
            n.completed + n.failed,
        ),
    ));
    let mut percentiles: Vec<f64> = base
        .percentiles
        .iter()
        .chain(&new.percentiles)
        .copied()
        .collect();
    percentiles.sort_by(f64::total_cmp);
    percentiles.dedup();
    for metric in LATENCY {
        let (db, dn) = (b.get(metric), n.get(metric));
        if db.is_none() && dn.is_none() {
            continue;
        }
        let rank = samples
            .filter(|_| samples::METRICS.contains(&metric))
            .and_then(|(sb, sn)| significance::by_rank_test(sb.get(metric), sn.get(metric)));
        let figure = |name: String, pick: &dyn Fn(&Distribution) -> Option<&Estimate>| {
            let (eb, en) = (db.and_then(pick), dn.and_then(pick));
            Figure::new(
                name,
                Unit::Milliseconds,
                eb.map(|e| e.value),
                en.map(|e| e.value),
                rank.unwrap_or_else(|| by_intervals(eb, en)),
            )
        };
        let key = metric.key();
        out.push(figure(format!("mean_{key}_ms"), &|d| Some(&d.mean)));
        for &p in &percentiles {
            let name = if p == 50.0 {
                format!("median_{key}_ms")
            } else {
                format!("p{}_{key}_ms", pct_label(p))
            };
            out.push(figure(name, &|d| {
                d.percentiles.iter().find(|x| x.0 == p).map(|x| &x.1)
            }));
        }
    }
    out
}

#[cfg(test)]
pub(crate) mod tests;
