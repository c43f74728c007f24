//! Comparability: where two results were not measured alike — tokenizer,
//! workload, output pinning, load, endpoint, model, SLO, percentiles — each
//! a warning that names both sides, so a difference in the figures is not
//! read as a difference in the server when the benchmark itself changed.

use serde::Serialize;
use serde_json::Value;

use crate::result::RunResult;
use crate::schedule::Load;
use crate::slo::Slo;
use crate::stats::pct_label;

/// Why the two results may not be comparable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WarningKind {
    Tokenizer,
    Workload,
    OutputPinning,
    Load,
    Endpoint,
    Model,
    Slo,
    Percentiles,
    SweepPlan,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Warning {
    pub kind: WarningKind,
    pub message: String,
}

/// `20 req/s (poisson)`, `concurrency 8`.
pub fn describe_load(load: &Load) -> String {
    match *load {
        Load::Closed { concurrency } => format!("concurrency {concurrency}"),
        Load::Open {
            rate,
            arrival,
            max_concurrency,
        } => {
            let cap = max_concurrency
                .map(|c| format!(", at most {c} in flight"))
                .unwrap_or_default();
            format!("{rate} req/s ({arrival}{cap})")
        }
    }
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
/// load is worth a warning (not between two sweeps' first points).
pub fn run_warnings(base: &RunResult, new: &RunResult, loads: bool) -> Vec<Warning> {
    let mut out = Vec::new();
    let mut warn = |kind, message: String| out.push(Warning { kind, message });
    let (cb, cn) = (&base.config, &new.config);
    if base.tokenizer != new.tokenizer {
        warn(
            WarningKind::Tokenizer,
            format!(
                "tokenizer differs: BASE counts tokens with '{}', NEW with '{}': token counts and the figures per token (tok/s, TPOT, ITL) are on different scales",
                base.tokenizer, new.tokenizer
            ),
        );
    } else {
        let hash = |c: &Value| {
            c["workload"]["tokenizer"]["sha256"]
                .as_str()
                .map(String::from)
        };
        if let (Some(hb), Some(hn)) = (hash(cb), hash(cn)) {
            if hb != hn {
                warn(
                    WarningKind::Tokenizer,
                    format!(
                        "tokenizer files differ: '{}' in both, sha256 {}… in BASE, {}… in NEW",
                        base.tokenizer,
                        hb.chars().take(12).collect::<String>(),
                        hn.chars().take(12).collect::<String>()
                    ),
                );
            }
        }
    }
    let (wb, wn) = (&cb["workload"], &cn["workload"]);
    let empty = serde_json::Map::new();
    if wb.is_object() || wn.is_object() {
        let (ob, on) = (
            wb.as_object().unwrap_or(&empty),
            wn.as_object().unwrap_or(&empty),
        );
        // The seed changes which prompts, not what kind: not a difference.
        let mut keys: Vec<&String> = ob
            .keys()
            .chain(on.keys())
            .filter(|k| !["seed", "tokenizer", "kind", "summary"].contains(&k.as_str()))
            .collect();
        keys.sort();
        keys.dedup();
        let order = ["kind", "summary"];
        let diffs: Vec<String> = order
            .iter()
            .copied()
            .chain(keys.iter().map(|k| k.as_str()))
            .filter(|k| wb[*k] != wn[*k])
            .map(|k| format!("{k} {} vs {}", show(&wb[k]), show(&wn[k])))
            .collect();
        if !diffs.is_empty() {
            warn(
                WarningKind::Workload,
                format!("workload differs: {}", diffs.join("; ")),
            );
        }
    }
    let pin = |c: &Value| (c["min_tokens_sent"].clone(), c["ignore_eos_sent"].clone());
    if pin(cb) != pin(cn) {
        let words = |c: &Value| {
            let (m, i) = pin(c);
            format!("min_tokens {}, ignore_eos {}", show(&m), show(&i))
        };
        warn(
            WarningKind::OutputPinning,
            format!(
                "output pinning differs: BASE sent {}, NEW {}: output lengths, and with them TPOT, E2EL and token throughput, may differ for that alone",
                words(cb),
                words(cn)
            ),
        );
    }
    if loads && cb["load"] != cn["load"] {
        warn(
            WarningKind::Load,
            format!(
                "load differs: BASE {}, NEW {}: latency and throughput depend on the load",
                describe_load(&base.load),
                describe_load(&new.load)
            ),
        );
    }
    if cb["endpoint"] != cn["endpoint"] {
        warn(
            WarningKind::Endpoint,
            format!(
                "endpoint differs: BASE {}, NEW {}",
                show(&cb["endpoint"]),
                show(&cn["endpoint"])
            ),
        );
    }
    if base.model != new.model {
        warn(
            WarningKind::Model,
            format!("model differs: BASE '{}', NEW '{}'", base.model, new.model),
        );
    }
    if cb["slo"] != cn["slo"] {
        let words = |c: &Value| match serde_json::from_value::<Option<Slo>>(c["slo"].clone()) {
            Ok(Some(s)) if !s.describe().is_empty() => s.describe(),
            Ok(Some(_)) => "an error-rate limit only".into(),
            Ok(None) => "none".into(),
            Err(_) => show(&c["slo"]),
        };
        warn(
            WarningKind::Slo,
            format!(
                "SLO differs: BASE {}; NEW {}: goodput counts good requests against different thresholds",
                words(cb),
                words(cn)
            ),
        );
    }
    let only = |a: &[f64], b: &[f64]| -> Vec<String> {
        a.iter()
            .filter(|p| !b.contains(p))
            .map(|p| format!("p{}", pct_label(*p)))
            .collect()
    };
    let (ob, on) = (
        only(&base.percentiles, &new.percentiles),
        only(&new.percentiles, &base.percentiles),
    );
    if !ob.is_empty() || !on.is_empty() {
        let mut parts = Vec::new();
        if !ob.is_empty() {
            parts.push(format!("{} only in BASE", ob.join(", ")));
        }
        if !on.is_empty() {
            parts.push(format!("{} only in NEW", on.join(", ")));
        }
        warn(
            WarningKind::Percentiles,
            format!(
                "percentiles differ: {}: those figures have one side only",
                parts.join("; ")
            ),
        );
    }
    out
}
