//! `goodput compare`: two saved results side by side — every figure of the
//! summary with its change from BASE to NEW and whether that change is
//! larger than the runs' noise ([`significance`]), the `--fail-on` gates
//! judged on them ([`gate`]), and a warning wherever the two were not
//! measured alike. Pure: results (and records' values) in, a [`Comparison`]
//! out; [`render`] turns it into text, Markdown or JSON.
//!
//! Runs are compared figure by figure ([`run_figures`]); two `--repeat`
//! results by each figure's values across their repeats ([`repeats`]);
//! sweeps by their goodput headline and their curve points matched by
//! offered load ([`sweep`]).

pub mod comparability;
pub mod gate;
pub mod render;
pub mod samples;
pub mod significance;
pub mod sweep;

mod figure;
mod repeats;
mod run;

use serde::Serialize;

use crate::output::report::saved::Saved;

pub use comparability::{run_warnings, Warning};
pub use figure::Figure;
pub use gate::{FailOn, GateError, GateOutcome};
pub use repeats::repeats_figures;
pub use run::{metrics_figures, run_figures};
pub use samples::{RecordSamples, Samples};
pub use sweep::SweepComparison;
#[cfg(test)]
pub(crate) use {
    comparability::WarningKind, figure::Unit, significance::Method, significance::Significance,
};

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
    /// A sweep's number of points, or a `--repeat` result's repeats.
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
    /// The file, as the user named it.
    pub label: &'a str,
    /// The results read from it.
    pub saved: &'a Saved,
    /// Its per-request values from a records file, when one was given.
    pub records: Option<&'a RecordSamples>,
}

/// Why two results cannot be compared.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CompareError {
    /// One side is a run and the other a sweep.
    #[error(
        "BASE is a {base} and NEW is a {new}: compare a run with a run, a sweep with a sweep, or a --repeat result with another"
    )]
    KindMismatch {
        /// BASE's kind: `run`, `sweep` or `repeat`.
        base: &'static str,
        /// NEW's kind: `run`, `sweep` or `repeat`.
        new: &'static str,
    },
    /// A side's records hold no measured request of its results' runs.
    #[error("the {side} records have no measured request of {what} (the records of another run?)")]
    RecordsDoNotMatch {
        /// `BASE` or `NEW`.
        side: &'static str,
        /// What was looked for, in words (`run ID`, `any point of the sweep`).
        what: String,
    },
    /// A `--fail-on` gate could not be judged.
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
        // A repeat's runs share their load; a sweep's points do not.
        load: match input.saved {
            Saved::Repeat(r) => r.runs.first(),
            _ => run,
        }
        .map(|r| r.config.load.to_string()),
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
            "records were given for one side only: latency significance comes from the saved intervals (give both --base-records and --new-records to judge the means on every request)".into(),
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
        (Saved::Repeat(b), Saved::Repeat(n)) => {
            let (warnings, figures, said) = repeats::compare(b, n, records.is_some());
            notes.extend(said);
            (warnings, figures, None)
        }
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

#[cfg(test)]
pub(crate) mod tests;
