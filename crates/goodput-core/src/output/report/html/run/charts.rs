//! The runs' charts: each latency distribution as a CDF, and throughput,
//! requests, requests in flight and failures through the run.

use crate::measure::metrics::{Metric, TimeSeries};
use crate::measure::stats::{pct_label, Distribution, QUANTILE_COUNT};
use crate::output::report::html::chart::{Axis, Chart, Guide, Series};
use crate::output::report::html::format::{ms_short, Source};
use crate::output::report::html::scale::AxisKind;
use crate::output::result::RunResult;

/// Most points a time-series line gets: finer buckets are summed into bins.
const MAX_BINS: usize = 60;
/// Narrowest bin (s): at tens of requests/s, a 0.1 s bucket holds a
/// handful of completions and its rate is mostly noise.
const MIN_BIN_S: f64 = 0.5;

/// The metrics drawn as CDFs (the headline ones), with their chart IDs
/// (`cdf-ttft`, …).
pub(super) fn cdfs() -> impl Iterator<Item = (Metric, String)> {
    Metric::headline().map(|m| (m, format!("cdf-{}", m.key())))
}

/// The CDF's points: `(value, % at or below)`, from the saved quantiles,
/// else from what older files hold (min, the percentiles, max).
pub(super) fn cdf_points(d: &Distribution) -> (Vec<(f64, f64)>, bool) {
    if d.quantiles.len() == QUANTILE_COUNT {
        let step = 100.0 / (QUANTILE_COUNT - 1) as f64;
        let pts = d
            .quantiles
            .iter()
            .enumerate()
            .map(|(i, &v)| (v, i as f64 * step))
            .collect();
        return (pts, true);
    }
    let mut pts = vec![(d.min, 0.0)];
    pts.extend(d.percentiles.iter().map(|(p, e)| (e.value, *p)));
    pts.push((d.max, 100.0));
    pts.sort_by(|a, b| a.1.total_cmp(&b.1));
    (pts, false)
}

/// The SLO terms' thresholds on `metric`, as guides.
fn slo_thresholds(r: &RunResult, metric: Metric, vertical: bool) -> Vec<Guide> {
    let Some(slo) = r.metrics.slo.as_ref().map(|s| &s.slo) else {
        return Vec::new();
    };
    slo.terms
        .iter()
        .filter(|t| t.metric == metric)
        .map(|t| {
            let name = format!(
                "SLO: p{} {} ≤ {}",
                pct_label(t.percentile),
                metric.info().short,
                ms_short(t.threshold_ms)
            );
            if vertical {
                Guide::Vertical {
                    x: t.threshold_ms,
                    name,
                }
            } else {
                Guide::Horizontal {
                    y: t.threshold_ms,
                    name,
                }
            }
        })
        .collect()
}

pub(super) fn cdf_chart(runs: &[(Source, &RunResult)], metric: Metric, id: &str) -> Chart {
    let info = metric.info();
    let of = if info.pooled {
        "token gaps"
    } else {
        "requests"
    };
    let mut chart = Chart::new(
        id,
        &format!("{} distribution", info.short),
        Axis::new(format!("{} (ms)", info.short), AxisKind::Auto),
        Axis::new(format!("{of} at or below (%)"), AxisKind::Fixed(0.0, 100.0)),
    );
    // Open-loop latencies also from the scheduled arrival (what the SLO judges).
    let from_schedule = match metric {
        Metric::Ttft => Some(Metric::TtftFromSchedule),
        Metric::E2el => Some(Metric::E2elFromSchedule),
        _ => None,
    };
    let mut coarse = false;
    for (source, r) in runs {
        let name = |what: &str| -> String {
            match (runs.len() > 1, what.is_empty()) {
                (true, true) => source.label.to_string(),
                (true, false) => format!("{} · {what}", source.label),
                (false, true) => info.short.to_string(),
                (false, false) => format!("{} {what}", info.short),
            }
        };
        if let Some(d) = r.metrics.get(metric) {
            let (pts, fine) = cdf_points(d);
            coarse |= !fine;
            chart.series.push(Series::new(name(""), source.colour, pts));
        }
        // A closed loop has no schedule: its "from scheduled arrival" figures
        // repeat the plain ones and get no series (nor a legend entry); nor
        // does a run that holds no such values.
        let scheduled = from_schedule
            .filter(|_| r.config.load.is_open())
            .and_then(|m| r.metrics.get(m))
            .map(cdf_points)
            .filter(|(pts, _)| !pts.is_empty());
        if let Some((pts, fine)) = scheduled {
            coarse |= !fine;
            chart
                .series
                .push(Series::new(name("from scheduled arrival"), source.colour, pts).dashed());
        }
        chart.guides.extend(slo_thresholds(r, metric, true));
    }
    let mut note = format!(
        "Share of {of} whose {} was at most x; read a percentile across at its height.",
        info.short
    );
    if from_schedule.is_some() && chart.series.iter().any(|s| s.hollow) {
        note.push_str(" Open-loop runs also show it timed from each request's scheduled arrival, as the SLO judges it.");
    }
    if coarse {
        note.push_str(" A file written before quantiles were saved gives only min, its percentiles and max: a coarse outline.");
    }
    chart.note(note)
}

/// Buckets summed (`mean` false) or averaged into at most [`MAX_BINS`]
/// bins: `(bin midpoint s, value per second or mean)`. A last bin shorter
/// than half the others joins the one before it, so a few buckets at the
/// end do not make a rate of their own.
fn bin(ts: &TimeSeries, values: &[f64], mean: bool) -> Vec<(f64, f64)> {
    if ts.bucket_s <= 0.0 || values.is_empty() {
        return Vec::new();
    }
    let per = values
        .len()
        .div_ceil(MAX_BINS)
        .max((MIN_BIN_S / ts.bucket_s).round() as usize)
        .max(1);
    let mut bounds: Vec<(usize, usize)> = (0..values.len())
        .step_by(per)
        .map(|start| (start, (start + per).min(values.len())))
        .collect();
    if bounds.len() > 1 {
        if let Some(&(start, end)) = bounds.last() {
            if (end - start) * 2 < per {
                bounds.pop();
                if let Some(prev) = bounds.last_mut() {
                    prev.1 = end;
                }
            }
        }
    }
    bounds
        .into_iter()
        .map(|(start, end)| {
            let chunk = &values[start..end];
            let width = chunk.len() as f64 * ts.bucket_s;
            let sum: f64 = chunk.iter().sum();
            let v = if mean {
                sum / chunk.len() as f64
            } else {
                sum / width
            };
            (start as f64 * ts.bucket_s + width / 2.0, v)
        })
        .collect()
}

pub(super) fn time_charts(runs: &[(Source, &RunResult)]) -> Vec<Chart> {
    let time = || Axis::new("time since the first measured send (s)", AxisKind::FromZero);
    let single = runs.len() == 1;
    let mut throughput = Chart::new(
        "ts-throughput",
        "Output throughput through the run",
        time(),
        Axis::new("output tokens/s", AxisKind::FromZero),
    );
    let mut requests = Chart::new(
        "ts-requests",
        "Requests through the run",
        time(),
        Axis::new("requests/s", AxisKind::FromZero),
    );
    let mut in_flight = Chart::new(
        "ts-in-flight",
        "Requests in flight",
        time(),
        Axis::new("requests in flight (mean)", AxisKind::FromZero),
    );
    let mut failures = Chart::new(
        "ts-failures",
        "Failures through the run",
        time(),
        Axis::new("failures/s", AxisKind::FromZero),
    );
    for (source, r) in runs {
        let ts = &r.metrics.timeseries;
        let label = |what: &str| -> String {
            if single {
                what.to_string()
            } else if what.is_empty() {
                source.label.to_string()
            } else {
                format!("{} · {what}", source.label)
            }
        };
        throughput.series.push(Series::new(
            label(""),
            source.colour,
            bin(ts, &ts.output_tokens, false),
        ));
        requests.series.push(Series::new(
            label("completions/s"),
            source.colour,
            bin(ts, &ts.completions, false),
        ));
        requests
            .series
            .push(Series::new(label("sends/s"), source.colour, bin(ts, &ts.sends, false)).dashed());
        in_flight.series.push(Series::new(
            label(""),
            source.colour,
            bin(ts, &ts.in_flight, true),
        ));
        if single {
            if let Some(s) = &r.metrics.steady_state {
                throughput.guides.push(Guide::Span {
                    x0: s.start_s,
                    x1: s.end_s,
                    name: "steady-state window".into(),
                });
            }
            for (k, (kind, v)) in ts.failures.iter().enumerate() {
                failures.series.push(Series::new(
                    kind.to_string(),
                    source.colour + 1 + k,
                    bin(ts, v, false),
                ));
            }
        } else if !ts.failures.is_empty() {
            let len = ts.failures.values().map(Vec::len).max().unwrap_or(0);
            let mut total = vec![0.0; len];
            for v in ts.failures.values() {
                for (t, x) in total.iter_mut().zip(v) {
                    *t += x;
                }
            }
            failures.series.push(Series::new(
                label(""),
                source.colour,
                bin(ts, &total, false),
            ));
        }
    }
    let bins = "Each point is the rate over one bin (at least 0.5 s, at most 60 bins).";
    vec![
        throughput.note(bins),
        requests.note(format!(
            "{bins} Sends stop at the end of the sending window; completions drain after it."
        )),
        in_flight.note("Each point is the mean number of requests in flight over its bin."),
        failures.note(format!("{bins} By the time each failure ended.")),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_bins_are_at_least_half_a_second_and_a_short_tail_joins_the_last() {
        let ts = crate::measure::metrics::TimeSeries {
            bucket_s: 0.1,
            ..Default::default()
        };
        // 12 buckets of 0.1 s: bins of 5, 5, then 2 joined to the second.
        let b = bin(&ts, &[1.0; 12], false);
        assert_eq!(b.len(), 2);
        assert!((b[0].0 - 0.25).abs() < 1e-9 && (b[0].1 - 10.0).abs() < 1e-9);
        assert!((b[1].0 - 0.85).abs() < 1e-9 && (b[1].1 - 10.0).abs() < 1e-9);
        let m = bin(&ts, &[4.0; 12], true);
        assert_eq!(m[1].1, 4.0);
    }
}
