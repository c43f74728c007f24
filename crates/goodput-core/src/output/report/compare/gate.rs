//! `--fail-on` gates: a bound on how far a figure may move from BASE to NEW.
//!
//! Grammar: `FIGURE>+N%` / `FIGURE<-N%` (relative change: `>+10%` fails
//! when NEW is more than 10 % above BASE) and `FIGURE>+N` / `FIGURE<-N`
//! (absolute change, in the figure's own unit: ms, req/s, tok/s, or a share
//! for `error_rate`). The sign is required: it says a change is meant, not
//! a bound on the new value. Spaces around the parts are allowed. A gate
//! fails on the point change alone; whether that change is significant is
//! reported beside it, not required.

use std::str::FromStr;

use serde::Serialize;

use super::figure::{format_change, format_relative, format_value, Figure};
use super::significance::Significance;

/// Fixed figure names (the latency ones are `mean_`/`median_`/`pNN_` +
/// metric + `_ms`).
const FIXED: [&str; 10] = [
    "request_throughput",
    "output_throughput",
    "total_token_throughput",
    "request_goodput",
    "error_rate",
    "inputs_throughput",
    "schema_invalid_share",
    "output_tokens_per_joule",
    "spec_acceptance_rate",
    "spec_mean_acceptance_length",
];
/// Latency metrics with figures, by their key (the registry's compared
/// ones).
fn latency() -> Vec<&'static str> {
    crate::measure::metrics::Metric::compared()
        .map(crate::measure::metrics::Metric::key)
        .collect()
}
/// A sweep's headline figure.
pub const GOODPUT: &str = "goodput";

/// The figure names `--fail-on` knows, in words (for error messages).
pub fn valid_names() -> String {
    format!(
        "{}, {GOODPUT} (sweeps), and mean_X_ms, median_X_ms, pNN_X_ms for X in {} (e.g. p99_ttft_ms, p99.9_itl_ms); a group's as by_model.NAME.FIGURE or by_class.NAME.FIGURE (e.g. by_class.interactive.p99_ttft_ms)",
        FIXED.join(", "),
        latency().join(", ")
    )
}

/// The canonical spelling of a figure name (`p50_` is `median_`), or `None`
/// when no result could have it.
pub fn canonical_name(name: &str) -> Option<String> {
    if let Some(g) = group_name(name) {
        return Some(g);
    }
    if FIXED.contains(&name) || name == GOODPUT {
        return Some(name.to_string());
    }
    let rest = name.strip_suffix("_ms")?;
    let (stat, metric) = rest.split_once('_')?;
    if !latency().contains(&metric) {
        return None;
    }
    match stat {
        "mean" | "median" => Some(name.to_string()),
        _ => {
            let p: f64 = stat.strip_prefix('p')?.parse().ok()?;
            if !(p > 0.0 && p < 100.0) {
                return None;
            }
            if p == 50.0 {
                Some(format!("median_{metric}_ms"))
            } else {
                Some(format!(
                    "p{}_{metric}_ms",
                    crate::measure::stats::pct_label(p)
                ))
            }
        }
    }
}

/// `by_class.NAME.FIGURE` with FIGURE canonically spelled; a group's name
/// may hold dots (`llama-3.1-8b`): the first split whose rest is a figure
/// of a group decides.
fn group_name(name: &str) -> Option<String> {
    let grouping = crate::measure::metrics::GROUPINGS
        .into_iter()
        .find(|g| name.starts_with(g) && name[g.len()..].starts_with('.'))?;
    let rest = &name[grouping.len() + 1..];
    rest.match_indices('.').find_map(|(i, _)| {
        let figure = canonical_name(&rest[i + 1..])?;
        let group_figure = figure.ends_with("_ms")
            || ["request_throughput", "output_throughput", "error_rate"].contains(&figure.as_str());
        (i > 0 && group_figure).then(|| format!("{grouping}.{}.{figure}", &rest[..i]))
    })
}

/// One `--fail-on` expression.
#[derive(Debug, Clone, PartialEq)]
pub struct FailOn {
    /// As written.
    pub expression: String,
    /// The figure, canonically spelled.
    pub figure: String,
    /// `>`: fails when the change is above the bound; `<`: below it.
    pub above: bool,
    /// In percent when `relative`, else in the figure's unit; signed.
    pub bound: f64,
    /// The bound is on the relative change from BASE (`N%`), not the absolute one.
    pub relative: bool,
}

const FORMS: &str = "expected FIGURE>+N% or FIGURE<-N% (relative change from BASE), or FIGURE>+N or FIGURE<-N (absolute change, in the figure's unit), e.g. 'p99_ttft_ms>+10%', 'output_throughput<-5%', 'p99_ttft_ms>+20'";

impl FromStr for FailOn {
    type Err = String;

    fn from_str(s: &str) -> Result<FailOn, String> {
        let err = |why: String| format!("--fail-on '{s}': {why}");
        let Some(at) = s.find(['>', '<']) else {
            return Err(err(format!("no '>' or '<'; {FORMS}")));
        };
        let (name, rest) = (s[..at].trim(), &s[at..]);
        let above = rest.starts_with('>');
        let rest = rest[1..].trim();
        if rest.starts_with(['=', '>', '<']) {
            return Err(err(format!("'>=' and '<=' are not supported; {FORMS}")));
        }
        if name.is_empty() {
            return Err(err(format!("no figure before the comparison; {FORMS}")));
        }
        let figure = canonical_name(name)
            .ok_or_else(|| err(format!("unknown figure '{name}'; valid: {}", valid_names())))?;
        let (number, relative) = match rest.strip_suffix('%') {
            Some(n) => (n.trim_end(), true),
            None => (rest, false),
        };
        if !number.starts_with(['+', '-']) {
            return Err(err(format!(
                "the change needs a sign ('{name}{}+{number}{}' or '-'): a bound on the new value alone is not supported; {FORMS}",
                if above { '>' } else { '<' },
                if relative { "%" } else { "" }
            )));
        }
        let bound = number
            .parse::<f64>()
            .ok()
            .filter(|b| b.is_finite())
            .ok_or_else(|| err(format!("'{number}' is not a number; {FORMS}")))?;
        Ok(FailOn {
            expression: s.to_string(),
            figure,
            above,
            bound,
            relative,
        })
    }
}

impl FailOn {
    /// `> +10%`, `< -20 ms`.
    pub fn describe_bound(&self, unit: &str) -> String {
        let op = if self.above { '>' } else { '<' };
        if self.relative {
            format!("{op} {:+}%", self.bound)
        } else if unit.is_empty() {
            format!("{op} {:+}", self.bound)
        } else {
            format!("{op} {:+} {unit}", self.bound)
        }
    }
}

/// A gate judged against the figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GateOutcome {
    pub expression: String,
    pub figure: String,
    pub failed: bool,
    /// The change the bound was held against: percent when the gate is
    /// relative (null when BASE is 0), else in the figure's unit.
    pub change: Option<f64>,
    /// `p99_ttft_ms: +21.4% > +10%`, or `... not > +10%` when it passed.
    pub message: String,
    /// Whether the change is significant: a change past the bound that is
    /// judged not significant does not fail the gate.
    pub significance: Significance,
}

/// Why a gate cannot be judged on these results.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GateError {
    #[error(
        "--fail-on '{expression}': '{figure}' is not a figure of these results; they have: {valid}"
    )]
    NotInResults {
        expression: String,
        figure: String,
        valid: String,
    },
    #[error("--fail-on '{expression}': '{figure}' has no value in {side}")]
    Missing {
        expression: String,
        figure: String,
        side: &'static str,
    },
}

/// Judge every gate; an error when a gate's figure is absent.
pub fn check(gates: &[FailOn], figures: &[Figure]) -> Result<Vec<GateOutcome>, GateError> {
    gates.iter().map(|g| check_one(g, figures)).collect()
}

fn check_one(g: &FailOn, figures: &[Figure]) -> Result<GateOutcome, GateError> {
    let Some(f) = figures.iter().find(|f| f.name == g.figure) else {
        return Err(GateError::NotInResults {
            expression: g.expression.clone(),
            figure: g.figure.clone(),
            valid: if figures.is_empty() {
                "none (a sweep without an SLO has no goodput)".into()
            } else {
                figures
                    .iter()
                    .map(|f| f.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            },
        });
    };
    let missing = |side| GateError::Missing {
        expression: g.expression.clone(),
        figure: g.figure.clone(),
        side,
    };
    let base = f.base.ok_or_else(|| missing("BASE"))?;
    let new = f.new.ok_or_else(|| missing("NEW"))?;
    let unit = f.unit.suffix();
    // From a BASE of 0 any rise is an infinite relative change.
    let change = if g.relative {
        f.relative_change
            .map(|r| r * 100.0)
            .unwrap_or(if new > base {
                f64::INFINITY
            } else {
                f64::NEG_INFINITY
            })
    } else {
        new - base
    };
    // A change equal to the bound up to rounding (121.4 − 100 is
    // 21.400000000000006) does not cross it.
    let slack = 1e-9 * g.bound.abs().max(1.0);
    let past = if g.above {
        change > g.bound + slack
    } else {
        change < g.bound - slack
    };
    // A change past the bound that the runs' noise explains (judged not
    // significant, after the family correction) does not fail: a gate that
    // fails on noise gets switched off. Where significance is not known
    // the point change decides, as before.
    let noise = f.significance.significant == Some(false);
    let failed = past && !noise;
    let shown = if g.relative {
        match f.relative_change {
            Some(r) => format_relative(r),
            None => format!("from 0 to {}", format_value(new, f.unit)),
        }
    } else {
        format_change(new - base, f.unit)
    };
    let bound = g.describe_bound(unit);
    let message = if failed {
        format!("{}: {shown} {bound}", g.figure)
    } else if past {
        format!(
            "{}: {shown} {bound}, but within the runs' noise ({}): not failed",
            g.figure,
            f.significance.reason()
        )
    } else {
        format!("{}: {shown}, not {bound}", g.figure)
    };
    Ok(GateOutcome {
        expression: g.expression.clone(),
        figure: g.figure.clone(),
        failed,
        change: change.is_finite().then_some(change),
        message,
        significance: f.significance,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::report::compare::{Figure, Unit};

    fn parse(s: &str) -> FailOn {
        s.parse().unwrap()
    }

    /// A group's figure: its grouping, its name (dots and all), then a
    /// figure of a group, canonically spelled.
    #[test]
    fn group_figures_parse() {
        assert_eq!(
            parse("by_class.interactive.p50_ttft_ms>+10%").figure,
            "by_class.interactive.median_ttft_ms"
        );
        assert_eq!(
            parse("by_model.llama-3.1-8b.p99.9_itl_ms>+5%").figure,
            "by_model.llama-3.1-8b.p99.9_itl_ms"
        );
        assert_eq!(
            parse("by_model.a.request_throughput<-5%").figure,
            "by_model.a.request_throughput"
        );
        for bad in [
            "by_class.p99_ttft_ms>+1%",
            "by_class.x.total_token_throughput>+1%",
            "by_tier.x.p99_ttft_ms>+1%",
            "by_class.x.goodput>+1%",
        ] {
            assert!(bad.parse::<FailOn>().is_err(), "{bad}");
        }
    }

    #[test]
    fn expressions_parse() {
        let g = parse("p99_ttft_ms>+10%");
        assert_eq!(
            (g.figure.as_str(), g.above, g.bound, g.relative),
            ("p99_ttft_ms", true, 10.0, true)
        );
        let g = parse(" output_throughput < -5 % ");
        assert_eq!(
            (g.figure.as_str(), g.above, g.bound, g.relative),
            ("output_throughput", false, -5.0, true)
        );
        let g = parse("p99_ttft_ms>+20");
        assert_eq!((g.bound, g.relative), (20.0, false));
        let g = parse("error_rate>+0.005");
        assert_eq!((g.bound, g.relative), (0.005, false));
        // p50 is the median; fractional percentiles keep their label.
        assert_eq!(parse("p50_ttft_ms>+5%").figure, "median_ttft_ms");
        assert_eq!(parse("p99.9_itl_ms>+5%").figure, "p99.9_itl_ms");
        assert_eq!(parse("goodput<-5%").figure, "goodput");
        assert_eq!(parse("p99_ttft_ms>+10%").describe_bound("ms"), "> +10%");
        assert_eq!(parse("p99_ttft_ms<-20").describe_bound("ms"), "< -20 ms");
    }

    #[test]
    fn bad_expressions_say_what_is_valid() {
        let err = |s: &str| s.parse::<FailOn>().unwrap_err();
        let e = err("p99_ttft_ms=10%");
        assert!(
            e.starts_with("--fail-on 'p99_ttft_ms=10%': no '>' or '<'"),
            "{e}"
        );
        assert!(e.contains("FIGURE>+N%"), "{e}");
        let e = err("p99_ttft_ms>10%");
        assert!(e.contains("needs a sign ('p99_ttft_ms>+10%'"), "{e}");
        let e = err("p99_ttft_ms>=+10%");
        assert!(e.contains("'>=' and '<=' are not supported"), "{e}");
        let e = err("p99_ttft_ms>+ten%");
        assert!(e.contains("'+ten' is not a number"), "{e}");
        assert!(err("p99_ttft_ms>+inf").contains("not a number"));
        let e = err("p99_ttf_ms>+10%");
        assert!(
            e.contains("unknown figure 'p99_ttf_ms'; valid: request_throughput"),
            "{e}"
        );
        assert!(e.contains("p99_ttft_ms"), "{e}");
        assert!(err(">+10%").contains("no figure"));
        assert!(err("p100_ttft_ms>+1%").contains("unknown figure"));
        assert!(err("mean_ttft>+1%").contains("unknown figure"));
    }

    fn figure(name: &str, base: f64, new: f64) -> Figure {
        Figure::new(
            name,
            Unit::Milliseconds,
            Some(base),
            Some(new),
            Significance::NOT_AVAILABLE,
        )
    }

    #[test]
    fn gates_fail_when_the_change_crosses_the_bound() {
        let figs = vec![
            figure("p99_ttft_ms", 100.0, 121.4),
            figure("output_throughput", 1000.0, 960.0),
            figure("error_rate", 0.0, 0.02),
        ];
        let out = check(
            &[
                parse("p99_ttft_ms>+10%"),
                parse("p99_ttft_ms>+25%"),
                parse("p99_ttft_ms>+20"),
                parse("output_throughput<-5%"),
                parse("output_throughput<-3%"),
                parse("error_rate>+10%"),
            ],
            &figs,
        )
        .unwrap();
        let failed: Vec<bool> = out.iter().map(|o| o.failed).collect();
        assert_eq!(failed, [true, false, true, false, true, true]);
        assert_eq!(out[0].message, "p99_ttft_ms: +21.4% > +10%");
        assert_eq!(out[1].message, "p99_ttft_ms: +21.4%, not > +25%");
        assert_eq!(out[2].message, "p99_ttft_ms: +21.40 ms > +20 ms");
        assert_eq!(out[3].message, "output_throughput: -4.0%, not < -5%");
        assert_eq!(out[5].message, "error_rate: from 0 to 0.02 > +10%");
        assert_eq!(out[5].change, None);
        // Exactly at the bound does not cross it.
        let at = check(&[parse("p99_ttft_ms>+21.4")], &figs).unwrap();
        assert!(!at[0].failed, "{at:?}");
    }

    #[test]
    fn gates_on_absent_figures_are_errors() {
        let figs = vec![Figure::new(
            "p95_ttft_ms",
            Unit::Milliseconds,
            Some(1.0),
            None,
            Significance::NOT_AVAILABLE,
        )];
        let e = check(&[parse("p99_ttft_ms>+10%")], &figs).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--fail-on 'p99_ttft_ms>+10%': 'p99_ttft_ms' is not a figure of these results; they have: p95_ttft_ms"
        );
        let e = check(&[parse("p95_ttft_ms>+10%")], &figs).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--fail-on 'p95_ttft_ms>+10%': 'p95_ttft_ms' has no value in NEW"
        );
    }
}
