//! What the GPUs drew over each run (`--gpu-metrics`, or the simulator's
//! exporter): energy, power, tokens per joule, load, and the power and
//! utilisation through the run.

use crate::measure::gpu::{GpuMetrics, GpuSample, GpuSummary};
use crate::output::report::html::chart::{Axis, Chart, Series};
use crate::output::report::html::format::{escape, num, row, table_by_source, Source};
use crate::output::report::html::scale::AxisKind;
use crate::output::result::RunResult;

/// A figure of the GPU table: its name and how a run's summary fills it.
type GpuFigure = (&'static str, fn(&GpuSummary) -> Option<String>);

const FIGURES: [GpuFigure; 9] = [
    ("GPUs", |s| Some(s.gpus.to_string())),
    ("Energy (J)", |s| s.energy_j.map(num)),
    ("Energy from", |s| {
        s.energy_from.map(|f| f.words().to_string())
    }),
    ("Window (s)", |s| Some(num(s.window_s))),
    ("Mean / peak power (W)", |s| {
        let side = |x: Option<f64>| x.map_or("–".into(), num);
        Some(format!(
            "{} / {}",
            side(s.mean_power_w),
            side(s.peak_power_w)
        ))
    }),
    ("Output tokens per joule (measured)", |s| {
        s.output_tokens_per_joule.map(|t| format!("{t:.3}"))
    }),
    ("Joules per request / output token", |s| {
        let side = |x: Option<f64>| x.map_or("–".into(), |j| format!("{j:.4}"));
        Some(format!(
            "{} / {}",
            side(s.joules_per_request),
            side(s.joules_per_output_token)
        ))
    }),
    ("Mean GPU utilisation (%)", |s| s.mean_util_pct.map(num)),
    ("Peak memory used a GPU (MiB)", |s| {
        s.peak_fb_used_mib.map(|m| format!("{m:.0}"))
    }),
];

/// The runs' GPU telemetry: a table, their notes, and the summed power
/// through each run.
pub(super) fn gpu_block(runs: &[(Source, &RunResult)]) -> String {
    let with: Vec<(Source, &GpuMetrics)> = runs
        .iter()
        .filter_map(|(s, r)| r.gpu_metrics.as_ref().map(|g| (*s, g)))
        .collect();
    if with.is_empty() {
        return String::new();
    }
    let mut out = String::from("<div data-section=\"gpus\">\n<h3>What the GPUs drew</h3>\n");
    let sources: Vec<Source> = with.iter().map(|(s, _)| *s).collect();
    let rows: Vec<String> = FIGURES
        .iter()
        .filter_map(|(name, cell)| {
            let cells: Vec<Option<String>> = (with.iter())
                .map(|(_, g)| g.summary.as_ref().and_then(cell))
                .collect();
            cells.iter().any(Option::is_some).then(|| {
                let cells: Vec<String> =
                    cells.into_iter().map(|c| c.unwrap_or("–".into())).collect();
                row(name, &cells)
            })
        })
        .collect();
    out.push_str(&table_by_source("Figure", &sources, &rows));
    for (source, g) in &with {
        for n in &g.notes {
            out.push_str(&format!(
                "<p class=\"note\">{}: {}</p>\n",
                escape(source.label),
                escape(n)
            ));
        }
    }
    let power = over_time(
        &with,
        ("gpu-power", "GPU power (all GPUs)", "power (W)"),
        |p| p.power_w,
    )
    .note("Each point is one scrape of the DCGM exporters, every GPU summed.");
    let util = over_time(
        &with,
        (
            "gpu-util",
            "GPU utilisation (mean of the GPUs)",
            "utilisation (%)",
        ),
        |p| p.util_pct,
    )
    .note("DCGM_FI_DEV_GPU_UTIL: the share of time a kernel ran, not how full the GPU was.");
    let charts: Vec<String> = [power, util]
        .iter()
        .filter(|c| c.has_points())
        .map(Chart::render)
        .collect();
    if !charts.is_empty() {
        out.push_str("<div class=\"charts\">\n");
        out.push_str(&charts.concat());
        out.push_str("</div>\n");
    }
    out.push_str("</div>\n");
    out
}

/// One of the GPUs' series through each run's measured phase: `(id,
/// title, y axis)` and the figure read from each scrape.
fn over_time(
    with: &[(Source, &GpuMetrics)],
    (id, title, y): (&str, &str, &str),
    figure: fn(&GpuSample) -> Option<f64>,
) -> Chart {
    let mut chart = Chart::new(
        id,
        title,
        Axis::new(
            "time since the measured phase started (s)",
            AxisKind::FromZero,
        ),
        Axis::new(y, AxisKind::FromZero),
    );
    for (source, g) in with {
        let points: Vec<(f64, f64)> = (g.series.iter())
            .filter(|p| p.t_s >= 0.0)
            .filter_map(|p| figure(p).map(|v| (p.t_s, v)))
            .collect();
        chart
            .series
            .push(Series::new(source.label.to_string(), source.colour, points));
    }
    chart
}
