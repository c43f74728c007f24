//! Comparability: where two results were not measured alike — tokenizer,
//! workload, output pinning, load, endpoint, model, SLO, percentiles — each
//! a warning that names both sides, so a difference in the figures is not
//! read as a difference in the server when the benchmark itself changed.

use serde::Serialize;
use serde_json::{json, Value};

use crate::measure::stats::pct_label;
use crate::output::config::{RunConfig, WorkloadConfig};
use crate::output::result::RunResult;

/// Why the two results may not be comparable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WarningKind {
    Target,
    Tokenizer,
    Workload,
    OutputPinning,
    Load,
    Endpoint,
    Model,
    Slo,
    Percentiles,
    SweepPlan,
    /// A run whose requests queued behind each other for longer than it
    /// ran: its latency changes are not judged.
    Crowding,
    /// Two `--repeat` results drawn with different seeds: their repeats'
    /// spread holds the server's noise but not the schedule's, so no change
    /// is judged across them.
    Seeds,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Warning {
    pub kind: WarningKind,
    pub message: String,
}

/// A JSON value in a message: strings as `'text'`, the rest compact, cut at 80 characters.
fn show(v: &Value) -> String {
    let s = match v {
        Value::String(s) => format!("'{s}'"),
        Value::Null => "none".into(),
        v => v.to_string(),
    };
    if s.chars().count() > 80 {
        format!("{}…", s.chars().take(80).collect::<String>())
    } else {
        s
    }
}

/// Where two runs were not measured alike; `loads`: whether a different
/// load is worth a warning (not between two sweeps' first points). In
/// order: tokenizer, workload, output pinning, load, endpoint, model, SLO,
/// percentiles; before them all, what answered (a simulator against a
/// server).
pub fn run_warnings(base: &RunResult, new: &RunResult, loads: bool) -> Vec<Warning> {
    let (cb, cn) = (&base.config, &new.config);
    [
        target_warning(cb, cn),
        tokenizer_warning(base, new),
        workload_warning(cb.workload.as_ref(), cn.workload.as_ref()),
        pinning_warning(cb, cn),
        load_warning(base, new).filter(|_| loads),
        endpoint_warning(cb, cn),
        model_warning(base, new),
        slo_warning(cb, cn),
        percentiles_warning(&base.config.percentiles, &new.config.percentiles),
        crowding_warning(base, new),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// Either run crowded ([`crate::measure::metrics::Crowding`]): its latency intervals
/// bound the long-run values from below only, so a change towards its open
/// side is not judged (it shows as `n/a`).
fn crowding_warning(base: &RunResult, new: &RunResult) -> Option<Warning> {
    let crowded = |r: &RunResult| r.metrics.crowding.filter(|c| c.long_memory);
    let sides: Vec<String> = [("base", crowded(base)), ("new", crowded(new))]
        .into_iter()
        .filter_map(|(side, c)| {
            c.map(|c| match c.index {
                Some(i) => format!("{side} {i:.1}"),
                None => format!("{side} too short to read"),
            })
        })
        .collect();
    if sides.is_empty() {
        return None;
    }
    warning(
        WarningKind::Crowding,
        format!(
            "requests queued behind each other for longer than the run (crowding index {}, above {}): latency figures are bounded from below only, and a change is judged only where that lower end faces the other run; a lighter load judges them (a longer run at that load is as crowded), and two --repeat results with one seed judge a change across their repeats",
            sides.join(", "),
            crate::measure::metrics::CROWDING_LIMIT
        ),
    )
}

pub(super) fn warning(kind: WarningKind, message: String) -> Option<Warning> {
    Some(Warning { kind, message })
}

/// One side answered by goodput's simulated engine and the other not (or
/// by another preset): the change is then between a model of a server and
/// something else, not between two states of one server.
fn target_warning(cb: &RunConfig, cn: &RunConfig) -> Option<Warning> {
    let say = |c: &RunConfig| {
        c.target
            .as_ref()
            .map_or("an unrecorded target".to_string(), |t| t.describe())
    };
    let differ = match (&cb.target, &cn.target) {
        (Some(b), Some(n)) => b != n && (b.is_simulated() || n.is_simulated()),
        (b, n) => b.as_ref().or(n.as_ref()).is_some_and(|t| t.is_simulated()),
    };
    differ.then(|| Warning {
        kind: WarningKind::Target,
        message: format!(
            "target differs: BASE was answered by {}, NEW by {}: a simulated result is a model's forecast, not a measurement of the server",
            say(cb),
            say(cn)
        ),
    })
}

/// Different tokenizers, or the same one from files that differ (by hash).
fn tokenizer_warning(base: &RunResult, new: &RunResult) -> Option<Warning> {
    if base.config.tokenizer != new.config.tokenizer {
        return warning(
            WarningKind::Tokenizer,
            format!(
                "tokenizer differs: BASE counts tokens with '{}', NEW with '{}': token counts and the figures per token (tok/s, TPOT, ITL) are on different scales",
                base.config.tokenizer, new.config.tokenizer
            ),
        );
    }
    let hash = |c: &RunConfig| c.workload.as_ref()?.tokenizer.sha256.clone();
    let (hb, hn) = (hash(&base.config)?, hash(&new.config)?);
    (hb != hn).then(|| Warning {
        kind: WarningKind::Tokenizer,
        message: format!(
            "tokenizer files differ: '{}' in both, sha256 {}… in BASE, {}… in NEW",
            base.config.tokenizer,
            hb.chars().take(12).collect::<String>(),
            hn.chars().take(12).collect::<String>()
        ),
    })
}

/// Every saved key of the two workload descriptions that differs (`kind`
/// and `summary` first), compared as saved; the seed changes which
/// prompts, not what kind, so it is not a difference.
fn workload_warning(
    base: Option<&WorkloadConfig>,
    new: Option<&WorkloadConfig>,
) -> Option<Warning> {
    if base.is_none() && new.is_none() {
        return None;
    }
    let saved = |w: Option<&WorkloadConfig>| w.map_or(Value::Null, |w| json!(w));
    let (wb, wn) = (saved(base), saved(new));
    let empty = serde_json::Map::new();
    let (ob, on) = (
        wb.as_object().unwrap_or(&empty),
        wn.as_object().unwrap_or(&empty),
    );
    let mut keys: Vec<&String> = ob
        .keys()
        .chain(on.keys())
        .filter(|k| !["seed", "tokenizer", "kind", "summary"].contains(&k.as_str()))
        .collect();
    keys.sort();
    keys.dedup();
    let diffs: Vec<String> = ["kind", "summary"]
        .into_iter()
        .chain(keys.iter().map(|k| k.as_str()))
        .filter(|k| wb[*k] != wn[*k])
        .map(|k| format!("{k} {} vs {}", show(&wb[k]), show(&wn[k])))
        .collect();
    if diffs.is_empty() {
        return None;
    }
    warning(
        WarningKind::Workload,
        format!("workload differs: {}", diffs.join("; ")),
    )
}

/// `min_tokens`/`ignore_eos` sent on one side and not the other.
fn pinning_warning(cb: &RunConfig, cn: &RunConfig) -> Option<Warning> {
    let pin = |c: &RunConfig| (c.min_tokens_sent, c.ignore_eos_sent);
    if pin(cb) == pin(cn) {
        return None;
    }
    let words = |c: &RunConfig| {
        format!(
            "min_tokens {}, ignore_eos {}",
            c.min_tokens_sent, c.ignore_eos_sent
        )
    };
    warning(
        WarningKind::OutputPinning,
        format!(
            "output pinning differs: BASE sent {}, NEW {}: output lengths, and with them TPOT, E2EL and token throughput, may differ for that alone",
            words(cb),
            words(cn)
        ),
    )
}

fn load_warning(base: &RunResult, new: &RunResult) -> Option<Warning> {
    if base.config.load == new.config.load {
        return None;
    }
    warning(
        WarningKind::Load,
        format!(
            "load differs: BASE {}, NEW {}: latency and throughput depend on the load",
            base.config.load, new.config.load
        ),
    )
}

fn endpoint_warning(cb: &RunConfig, cn: &RunConfig) -> Option<Warning> {
    if cb.endpoint == cn.endpoint {
        return None;
    }
    warning(
        WarningKind::Endpoint,
        format!(
            "endpoint differs: BASE '{}', NEW '{}'",
            cb.endpoint, cn.endpoint
        ),
    )
}

fn model_warning(base: &RunResult, new: &RunResult) -> Option<Warning> {
    if base.config.model == new.config.model {
        return None;
    }
    warning(
        WarningKind::Model,
        format!(
            "model differs: BASE '{}', NEW '{}'",
            base.config.model, new.config.model
        ),
    )
}

fn slo_warning(cb: &RunConfig, cn: &RunConfig) -> Option<Warning> {
    if cb.slo == cn.slo {
        return None;
    }
    let words = |c: &RunConfig| match &c.slo {
        Some(s) if !s.describe().is_empty() => s.describe(),
        Some(_) => "an error-rate limit only".into(),
        None => "none".into(),
    };
    warning(
        WarningKind::Slo,
        format!(
            "SLO differs: BASE {}; NEW {}: goodput counts good requests against different thresholds",
            words(cb),
            words(cn)
        ),
    )
}

/// Percentiles one side reported and the other did not.
fn percentiles_warning(base: &[f64], new: &[f64]) -> Option<Warning> {
    let only = |a: &[f64], b: &[f64]| -> Vec<String> {
        a.iter()
            .filter(|p| !b.contains(p))
            .map(|p| format!("p{}", pct_label(*p)))
            .collect()
    };
    let (ob, on) = (only(base, new), only(new, base));
    let mut parts = Vec::new();
    if !ob.is_empty() {
        parts.push(format!("{} only in BASE", ob.join(", ")));
    }
    if !on.is_empty() {
        parts.push(format!("{} only in NEW", on.join(", ")));
    }
    if parts.is_empty() {
        return None;
    }
    warning(
        WarningKind::Percentiles,
        format!(
            "percentiles differ: {}: those figures have one side only",
            parts.join("; ")
        ),
    )
}
