//! Consistency across repeats (`--repeat K`): the same plan run K times.
//!
//! Each headline figure gets its mean across the repeats with a Student-t
//! 95 % interval (K − 1 degrees of freedom: the repeats are the sample, so
//! the interval says how far another repeat's figure may land, run-to-run
//! variation included, which no within-run interval can), and its
//! coefficient of variation. At temperature 0 the outputs are compared too:
//! the share of prompts whose answers were identical in every repeat.
//! Prompts are matched by request id (the same seed sends the same prompts
//! in the same order), and only when every repeat sent the same prompt text
//! — a per-run salt (`--cache-bust`) or per-run prefix makes them differ,
//! and then no share is given, with the reason.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::measure::metrics::Metric;
use crate::measure::stats::t_975;
use crate::output::result::RunResult;

/// One headline figure across the repeats.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Figure {
    /// Key as in a run's document (`request_throughput`, `p99_ttft_ms`).
    pub name: String,
    pub unit: String,
    /// Each repeat's value, in order (absent where a repeat had none).
    pub values: Vec<Option<f64>>,
    pub mean: f64,
    pub std: f64,
    /// Student-t 95 % interval of the mean (None with fewer than two values).
    pub lo: Option<f64>,
    pub hi: Option<f64>,
    /// Coefficient of variation: std / |mean| (None when the mean is 0 or
    /// there is one value).
    pub cv: Option<f64>,
}

/// Outputs compared across repeats.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IdenticalOutputs {
    /// Prompts completed in every repeat.
    pub prompts_compared: u64,
    /// Of those, prompts whose output was the same text in every repeat.
    pub identical: u64,
    pub share: Option<f64>,
    /// The temperature sent (None: the server's default).
    pub temperature: Option<f64>,
}

/// What `--repeat K` adds to its runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepeatSummary {
    pub repeats: usize,
    pub figures: Vec<Figure>,
    pub identical_outputs: Option<IdenticalOutputs>,
    /// Why outputs were not compared, when they were not.
    pub identical_outputs_note: Option<String>,
}

/// A `--repeat` result: every repeat's run and the summary across them.
#[derive(Debug, Clone, PartialEq)]
pub struct RepeatResult {
    /// Each repeat's run, in the order they ran.
    pub runs: Vec<RunResult>,
    /// Each headline figure across the repeats, and the outputs compared.
    pub summary: RepeatSummary,
}

impl RepeatSummary {
    /// `3 repeats`, `1 repeat`.
    pub fn repeats_words(&self) -> String {
        match self.repeats {
            1 => "1 repeat".into(),
            n => format!("{n} repeats"),
        }
    }
}

/// Mean, sample standard deviation, Student-t interval and CV of `values`.
fn figure(name: &str, unit: &str, values: Vec<Option<f64>>) -> Option<Figure> {
    let xs: Vec<f64> = values.iter().flatten().copied().collect();
    if xs.is_empty() {
        return None;
    }
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let std = if xs.len() > 1 {
        (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
    } else {
        0.0
    };
    let half = (xs.len() > 1).then(|| t_975(xs.len() - 1) * std / n.sqrt());
    Some(Figure {
        name: name.to_string(),
        unit: unit.to_string(),
        values,
        mean,
        std,
        lo: half.map(|h| mean - h),
        hi: half.map(|h| mean + h),
        cv: (mean != 0.0 && xs.len() > 1).then(|| std / mean.abs()),
    })
}

/// Summarize the repeats. `same_prompts`: whether every repeat sent the
/// same prompt text (Err: why not).
pub fn summarize(
    runs: &[RunResult],
    temperature: Option<f64>,
    same_prompts: Result<(), String>,
) -> RepeatSummary {
    let mut figures = Vec::new();
    let mut push = |name: &str, unit: &str, f: &dyn Fn(&RunResult) -> Option<f64>| {
        if let Some(fig) = figure(name, unit, runs.iter().map(f).collect()) {
            figures.push(fig);
        }
    };
    push("request_throughput", "req/s", &|r| {
        Some(r.metrics.throughput.request.value)
    });
    push("output_throughput", "tok/s", &|r| {
        Some(r.metrics.throughput.output.value)
    });
    push("total_token_throughput", "tok/s", &|r| {
        Some(r.metrics.throughput.total_token)
    });
    if runs.iter().any(|r| r.metrics.slo.is_some()) {
        push("request_goodput", "req/s", &|r| {
            r.metrics.slo.as_ref().map(|s| s.request_goodput)
        });
    }
    for metric in Metric::headline() {
        let key = metric.key();
        push(&format!("mean_{key}_ms"), "ms", &|r| {
            r.metrics.get(metric).map(|d| d.mean.value)
        });
        for p in [50.0, 99.0] {
            let label = if p == 50.0 {
                format!("median_{key}_ms")
            } else {
                format!("p99_{key}_ms")
            };
            push(&label, "ms", &|r| {
                r.metrics.get(metric).and_then(|d| {
                    d.percentiles
                        .iter()
                        .find(|(q, _)| *q == p)
                        .map(|(_, e)| e.value)
                })
            });
        }
    }
    push("error_rate", "share", &|r| {
        let m = &r.metrics;
        let n = m.completed + m.failed;
        (n > 0).then(|| m.failed as f64 / n as f64)
    });
    let (identical_outputs, identical_outputs_note) = match same_prompts {
        Err(why) => (None, Some(why)),
        Ok(()) => (Some(identical(runs, temperature)), None),
    };
    RepeatSummary {
        repeats: runs.len(),
        figures,
        identical_outputs,
        identical_outputs_note,
    }
}

/// Prompts completed in every repeat, and those answered alike in all.
fn identical(runs: &[RunResult], temperature: Option<f64>) -> IdenticalOutputs {
    let mut seen: HashMap<u64, (usize, u64, bool)> = HashMap::new();
    for (i, r) in runs.iter().enumerate() {
        for &(id, hash) in &r.output_hashes {
            let e = seen.entry(id).or_insert((0, hash, true));
            // Counted once per repeat (a request id appears once in a run).
            if e.0 == i {
                e.0 += 1;
                e.2 &= e.1 == hash;
            }
        }
    }
    let all: Vec<_> = seen.values().filter(|e| e.0 == runs.len()).collect();
    let compared = all.len() as u64;
    let same = all.iter().filter(|e| e.2).count() as u64;
    IdenticalOutputs {
        prompts_compared: compared,
        identical: same,
        share: (compared > 0).then(|| same as f64 / compared as f64),
        temperature,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn student_t_quantiles() {
        assert_eq!(t_975(2), 4.303);
        assert!((t_975(40) - 2.021).abs() < 1e-3, "{}", t_975(40));
        assert!((t_975(120) - 1.980).abs() < 1e-3, "{}", t_975(120));
    }

    #[test]
    fn interval_and_cv_of_three_values() {
        let f = figure("x", "u", vec![Some(10.0), Some(12.0), Some(14.0)]).unwrap();
        assert_eq!(f.mean, 12.0);
        assert_eq!(f.std, 2.0);
        // 12 ± 4.303 · 2 / √3
        let half = 4.303 * 2.0 / 3f64.sqrt();
        assert!((f.lo.unwrap() - (12.0 - half)).abs() < 1e-12);
        assert!((f.hi.unwrap() - (12.0 + half)).abs() < 1e-12);
        assert!((f.cv.unwrap() - 2.0 / 12.0).abs() < 1e-12);
        let one = figure("x", "u", vec![Some(5.0), None]).unwrap();
        assert_eq!((one.lo, one.cv), (None, None));
    }

    #[test]
    fn identical_outputs_are_matched_by_request_id() {
        let mut a = crate::output::report::console::tests::sample_result();
        let mut b = a.clone();
        let mut c = a.clone();
        a.output_hashes = vec![(1, 10), (2, 20), (3, 30), (4, 40)];
        b.output_hashes = vec![(2, 20), (1, 10), (3, 31), (4, 40)];
        // Request 4 failed in the third repeat: not compared.
        c.output_hashes = vec![(1, 10), (3, 30), (2, 20)];
        let s = summarize(&[a, b, c], Some(0.0), Ok(()));
        let i = s.identical_outputs.unwrap();
        assert_eq!((i.prompts_compared, i.identical), (3, 2));
        assert!((i.share.unwrap() - 2.0 / 3.0).abs() < 1e-12);
        let r = crate::output::report::console::tests::sample_result();
        let s = summarize(&[r.clone(), r], None, Err("salted".into()));
        assert_eq!(s.identical_outputs, None);
        assert_eq!(s.identical_outputs_note.as_deref(), Some("salted"));
        let f = s
            .figures
            .iter()
            .find(|f| f.name == "request_throughput")
            .unwrap();
        assert_eq!(f.std, 0.0);
        assert_eq!(f.cv, Some(0.0));
    }
}
