//! Two runs compared figure by figure, under vLLM's flat key names.

use super::figure::{Figure, Unit};
use super::samples::{self, Samples};
use super::significance::{self, Significance};
use crate::measure::metrics::{Metric, RunMetrics};
use crate::measure::stats::{pct_label, Distribution, Estimate};
use crate::output::result::RunResult;

/// Answers that broke their schema, of those checked: a share, as the
/// error rate is; only where either run checked answers.
fn schema_figure(b: &RunMetrics, n: &RunMetrics) -> Option<Figure> {
    if b.structured_output.is_none() && n.structured_output.is_none() {
        return None;
    }
    let counts = |m: &RunMetrics| {
        m.structured_output
            .as_ref()
            .map_or((0, 0), |s| (s.invalid, s.checked))
    };
    let ((xb, nb), (xn, nn)) = (counts(b), counts(n));
    let share = |m: &RunMetrics| m.structured_output.as_ref().and_then(|s| s.invalid_share);
    Some(Figure::new(
        "schema_invalid_share",
        Unit::Share,
        share(b),
        share(n),
        significance::two_proportions(xb, nb, xn, nn),
    ))
}

fn by_intervals(base: Option<&Estimate>, new: Option<&Estimate>) -> Significance {
    match (base, new) {
        (Some(b), Some(n)) => significance::by_intervals(b, n),
        _ => Significance::NOT_AVAILABLE,
    }
}

/// A crowded run's latency estimate has a one-sided 95 % lower end
/// ([`crate::measure::stats::Level::Lower`]); the interval test reads a two-sided
/// one, so its lower half is widened by z(97.5 %) / z(95 %).
fn two_sided(e: &Estimate, crowded: bool) -> Estimate {
    use crate::measure::stats::Level;
    if !crowded {
        return *e;
    }
    let widen = Level::TwoSided.z() / Level::Lower.z();
    Estimate {
        lo: e.lo.map(|l| e.value - (e.value - l) * widen),
        ..*e
    }
}

/// Every figure of two runs' summaries, under vLLM's flat key names:
/// throughputs, goodput, error rate, then mean, median and each percentile
/// (of either run) of TTFT, TPOT, ITL and E2EL. With both runs' per-request
/// values, the means of TTFT, TPOT and E2EL are judged by batch means over
/// every request; otherwise (and ITL and every percentile always) by their
/// saved intervals.
/// Inputs/s of pooling requests, when either run had them.
fn inputs_figure(b: &RunMetrics, n: &RunMetrics) -> Option<Figure> {
    let inputs = |m: &RunMetrics| m.inputs.as_ref().map(|i| i.inputs_throughput);
    (inputs(b).is_some() || inputs(n).is_some()).then(|| {
        Figure::new(
            "inputs_throughput",
            Unit::InputsPerSecond,
            inputs(b),
            inputs(n),
            Significance::NOT_AVAILABLE,
        )
    })
}

pub fn run_figures(
    base: &RunResult,
    new: &RunResult,
    samples: Option<(&Samples, &Samples)>,
) -> Vec<Figure> {
    let mut percentiles: Vec<f64> = base
        .config
        .percentiles
        .iter()
        .chain(&new.config.percentiles)
        .copied()
        .collect();
    percentiles.sort_by(f64::total_cmp);
    percentiles.dedup();
    let mut out = metrics_figures(&base.metrics, &new.metrics, &percentiles, samples);
    // Tokens per joule of the GPUs' measured energy, when either run read it.
    let per_joule = |r: &RunResult| {
        let g = r.gpu_metrics.as_ref()?.summary.as_ref()?;
        g.output_tokens_per_joule
    };
    // Speculative decoding's acceptance, when either server counted it.
    let spec = |r: &RunResult| {
        let s = r.server_metrics.as_ref()?.summary.as_ref()?;
        s.spec_decode.clone()
    };
    if spec(base).is_some() || spec(new).is_some() {
        let (b, n) = (
            spec(base).unwrap_or_default(),
            spec(new).unwrap_or_default(),
        );
        out.push(Figure::new(
            "spec_acceptance_rate",
            Unit::Share,
            b.acceptance_rate,
            n.acceptance_rate,
            Significance::NOT_AVAILABLE,
        ));
        out.push(Figure::new(
            "spec_mean_acceptance_length",
            Unit::TokensPerStep,
            b.mean_acceptance_length,
            n.mean_acceptance_length,
            Significance::NOT_AVAILABLE,
        ));
    }
    if per_joule(base).is_some() || per_joule(new).is_some() {
        out.insert(
            3,
            Figure::new(
                "output_tokens_per_joule",
                Unit::TokensPerJoule,
                per_joule(base),
                per_joule(new),
                Significance::NOT_AVAILABLE,
            ),
        );
    }
    out
}

/// `run_figures` from the two runs' metrics and the percentiles either
/// reported (ascending, without repeats): what the coverage study compares.
pub fn metrics_figures(
    b: &RunMetrics,
    n: &RunMetrics,
    percentiles: &[f64],
    samples: Option<(&Samples, &Samples)>,
) -> Vec<Figure> {
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
    out.extend(inputs_figure(b, n));
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
    out.extend(schema_figure(b, n));
    out.extend(latency_figures(b, n, percentiles, samples));
    out.extend(group_figures(b, n, percentiles));
    super::figure::holm(&mut out);
    out
}

/// The mean and each percentile of TTFT, TPOT, ITL, E2EL (and time to
/// first tool call) of two runs. With both records, the mean is judged on
/// the per-request values by batch means; every percentile (and the mean
/// otherwise) on the saved intervals.
fn latency_figures(
    b: &RunMetrics,
    n: &RunMetrics,
    percentiles: &[f64],
    samples: Option<(&Samples, &Samples)>,
) -> Vec<Figure> {
    let mut out = Vec::new();
    for metric in Metric::compared() {
        let (db, dn) = (b.get(metric), n.get(metric));
        if db.is_none() && dn.is_none() {
            continue;
        }
        // A crowded run bounds its latencies from below only (its intervals'
        // upper sides are open): its per-request values cannot judge a
        // change either.
        let means = samples
            .filter(|_| samples::METRICS.contains(&metric))
            .filter(|_| !b.long_memory() && !n.long_memory())
            .and_then(|(sb, sn)| significance::by_batch_means(sb.get(metric), sn.get(metric)));
        let figure = |name: String,
                      pick: &dyn Fn(&Distribution) -> Option<&Estimate>,
                      by_values: Option<Significance>| {
            let eb = db.and_then(pick).map(|e| two_sided(e, b.long_memory()));
            let en = dn.and_then(pick).map(|e| two_sided(e, n.long_memory()));
            Figure::new(
                name,
                Unit::Milliseconds,
                eb.map(|e| e.value),
                en.map(|e| e.value),
                by_values.unwrap_or_else(|| by_intervals(eb.as_ref(), en.as_ref())),
            )
        };
        let key = metric.key();
        out.push(figure(format!("mean_{key}_ms"), &|d| Some(&d.mean), means));
        for &p in percentiles {
            let name = if p == 50.0 {
                format!("median_{key}_ms")
            } else {
                format!("p{}_{key}_ms", pct_label(p))
            };
            out.push(figure(
                name,
                &|d| d.percentiles.iter().find(|x| x.0 == p).map(|x| &x.1),
                None,
            ));
        }
    }
    out
}

/// Each group both runs have (`by_model.NAME.`, `by_class.NAME.` before
/// the figure's name): its throughputs, error rate, and mean and
/// percentiles of TTFT, TPOT, ITL and E2EL, judged by their saved
/// intervals (per-request values are not kept per group).
fn group_figures(b: &RunMetrics, n: &RunMetrics, percentiles: &[f64]) -> Vec<Figure> {
    let (Some(gb), Some(gn)) = (&b.groups, &n.groups) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for ((grouping, mb), (_, mn)) in [("by_model", &gb.by_model), ("by_class", &gb.by_class)]
        .into_iter()
        .zip([("by_model", &gn.by_model), ("by_class", &gn.by_class)])
    {
        for (name, xb) in mb {
            let Some(xn) = mn.get(name) else {
                continue;
            };
            let prefix = format!("{grouping}.{name}.");
            for (figure, unit, eb, en) in [
                (
                    "request_throughput",
                    Unit::RequestsPerSecond,
                    &xb.request_throughput,
                    &xn.request_throughput,
                ),
                (
                    "output_throughput",
                    Unit::TokensPerSecond,
                    &xb.output_throughput,
                    &xn.output_throughput,
                ),
            ] {
                out.push(Figure::new(
                    format!("{prefix}{figure}"),
                    unit,
                    Some(eb.value),
                    Some(en.value),
                    by_intervals(Some(eb), Some(en)),
                ));
            }
            let rate = |g: &crate::measure::metrics::GroupFigures| {
                let done = g.completed + g.failed;
                (done > 0).then(|| g.failed as f64 / done as f64)
            };
            out.push(Figure::new(
                format!("{prefix}error_rate"),
                Unit::Share,
                rate(xb),
                rate(xn),
                significance::two_proportions(
                    xb.failed,
                    xb.completed + xb.failed,
                    xn.failed,
                    xn.completed + xn.failed,
                ),
            ));
            for metric in Metric::compared() {
                let (db, dn) = (xb.get(metric), xn.get(metric));
                if db.is_none() && dn.is_none() {
                    continue;
                }
                let key = metric.key();
                let figure = |name: String, pick: &dyn Fn(&Distribution) -> Option<&Estimate>| {
                    let (eb, en) = (db.and_then(pick), dn.and_then(pick));
                    Figure::new(
                        name,
                        Unit::Milliseconds,
                        eb.map(|e| e.value),
                        en.map(|e| e.value),
                        by_intervals(eb, en),
                    )
                };
                out.push(figure(format!("{prefix}mean_{key}_ms"), &|d| Some(&d.mean)));
                for &p in percentiles {
                    let label = if p == 50.0 {
                        "median".to_string()
                    } else {
                        format!("p{}", pct_label(p))
                    };
                    out.push(figure(format!("{prefix}{label}_{key}_ms"), &|d| {
                        d.percentiles.iter().find(|x| x.0 == p).map(|x| &x.1)
                    }));
                }
            }
        }
    }
    out
}
