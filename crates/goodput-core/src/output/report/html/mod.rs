//! The HTML report: saved results in, one self-contained HTML page out.
//!
//! Pure: [`render`] takes labelled results (a file name and what it holds)
//! and returns the page; nothing is read or written. The page needs no
//! network and no JavaScript: CSS is inline, every chart is inline SVG drawn
//! by plotters' SVG backend (text as `<text>`, so no font files), and the
//! page holds no `<script>` at all. Several files overlay their curves on
//! the same charts, one colour per file, named in each chart's legend.
//!
//! What it shows:
//! - runs: headline figures with their 95 % intervals and the SLO verdict,
//!   the TTFT, TPOT, ITL and E2EL distributions as CDFs (from each
//!   distribution's saved quantiles, so the per-request records are not
//!   needed), throughput, requests and in-flight requests through the run,
//!   errors by kind, the workload and the full configuration;
//! - sweeps: the latency–throughput curves (p50 and p99 of TTFT, TPOT and
//!   E2EL against achieved request throughput) with the SLO thresholds, the
//!   knees and the goodput point marked; throughput against offered load;
//!   cost per million good output tokens along the curve (when costed); and
//!   the interactivity trade-off (output tokens/s per user, 1000 / p50 TPOT,
//!   against output tokens/s per GPU), then each sweep's points.
//!
//! Every text that comes from a results file (labels, model names, the
//! configuration, workload descriptions, notes, error messages) goes
//! through [`escape`].
//!
//! # Hooks for browser tests
//!
//! Each chart is `<figure class="chart" data-chart="ID" data-points="N">`,
//! with one `<svg>` inside. Every plotted data point is exactly one
//! `<circle>` in that SVG and nothing else there is a circle (lines are
//! polylines, SLO thresholds dashed polylines, knee and goodput marks
//! polygons, legends HTML outside the SVG), so counting `svg circle` in the
//! figure gives `N`. Chart IDs, each at most once per page:
//!
//! | ID | points (circles) |
//! |---|---|
//! | `cdf-ttft`, `cdf-tpot`, `cdf-itl`, `cdf-e2el` | per run: the distribution's 101 quantiles (older files: min, the saved percentiles, max); open-loop runs add TTFT and E2EL from the scheduled arrival |
//! | `ts-throughput` | per run: one per time bin (output tokens/s) |
//! | `ts-requests` | per run: one per time bin for completions/s, and for sends/s |
//! | `ts-in-flight` | per run: one per time bin (mean requests in flight) |
//! | `ts-failures` | per failure kind (one run) or per run: one per time bin; only with failures |
//! | `sweep-ttft`, `sweep-tpot`, `sweep-e2el` | per sweep: one per curve point with a p50, one per curve point with a p99 |
//! | `sweep-throughput` | per sweep: one per curve point |
//! | `sweep-cost` | per sweep: one per costed curve point; only when some point is costed |
//! | `sweep-frontier` | per sweep: one per point with a completed request and a p90 TPOT above zero (the frontier's corners joined as a staircase, the dominated points hollow and unjoined) |
//!
//! An agent run's task timeline is `<figure class="chart"
//! data-timeline="task" data-calls="N">`, one `rect.call` per call and no
//! circle.
//!
//! Sections carry `data-section`: `runs`, `sweeps`, and per run `slo`
//! (only with an SLO), `tasks` (only for agent trajectories), `errors`
//! (only with failures), `workload`, `config`.

mod chart;
mod format;
mod frontier;
mod run;
mod scale;
mod sweep;
#[cfg(test)]
mod tests;
mod workload;

use crate::output::report::saved::Saved;
use crate::output::result::RunResult;
use crate::plan::sweep::SweepResult;

pub use format::escape;
use format::{swatch, trim, Source};

/// The page for labelled saved results: `label` is what the reader knows
/// the file by (its name); runs and sweeps may be mixed.
pub fn render(items: &[(String, Saved)]) -> String {
    // Each repeat of a `--repeat` result is shown as a run of its own.
    let repeat_labels: Vec<Vec<String>> = items
        .iter()
        .map(|(label, saved)| match saved {
            Saved::Repeat(r) => (1..=r.runs.len())
                .map(|i| format!("{label} · repeat {i}"))
                .collect(),
            _ => Vec::new(),
        })
        .collect();
    let mut runs: Vec<(Source, &RunResult)> = Vec::new();
    let mut sweeps: Vec<(Source, &SweepResult)> = Vec::new();
    let mut repeats = Vec::new();
    for (i, (label, saved)) in items.iter().enumerate() {
        let source = Source { label, colour: i };
        match saved {
            Saved::Run(r) => runs.push((source, r)),
            Saved::Sweep(s) => sweeps.push((source, s)),
            Saved::Repeat(r) => {
                repeats.push((source, &r.summary));
                for (run, label) in r.runs.iter().zip(&repeat_labels[i]) {
                    runs.push((Source { label, colour: i }, run));
                }
            }
        }
    }
    let labels: Vec<&str> = items.iter().map(|(l, _)| l.as_str()).collect();
    let mut out = String::new();
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    out.push_str("<meta name=\"generator\" content=\"goodput ");
    out.push_str(env!("CARGO_PKG_VERSION"));
    out.push_str("\">\n");
    out.push_str(&format!(
        "<title>goodput report: {}</title>\n",
        escape(&labels.join(", "))
    ));
    out.push_str("<style>\n");
    out.push_str(include_str!("style.css"));
    out.push_str("</style>\n</head>\n<body>\n<main>\n");
    out.push_str(&header(items));
    if !sweeps.is_empty() {
        out.push_str(&sweep::section(&sweeps));
    }
    for (source, summary) in &repeats {
        out.push_str(&repeat_section(source, summary));
    }
    if !runs.is_empty() {
        out.push_str(&run::section(&runs));
    }
    if items.is_empty() {
        out.push_str("<p class=\"warn\">No results were given.</p>\n");
    }
    out.push_str(&format!(
        "<footer>Written by goodput {}. Intervals are 95 %; an open side (–) needs more samples to bound.</footer>\n",
        env!("CARGO_PKG_VERSION")
    ));
    out.push_str("</main>\n</body>\n</html>\n");
    out
}

fn header(items: &[(String, Saved)]) -> String {
    let mut out = String::from("<header>\n<h1>goodput report</h1>\n<ul class=\"files\">\n");
    for (i, (label, saved)) in items.iter().enumerate() {
        let what = match saved {
            Saved::Run(r) => format!(
                "run · {} · {} · started {}",
                r.config.model,
                r.config
                    .workload_summary()
                    .unwrap_or("workload not recorded"),
                r.started_at
            ),
            Saved::Repeat(r) => format!(
                "{} repeats · {} · {}",
                r.runs.len(),
                r.runs.first().map_or("", |r| r.config.model.as_str()),
                r.runs
                    .first()
                    .and_then(|r| r.config.workload_summary())
                    .unwrap_or("workload not recorded"),
            ),
            Saved::Sweep(s) => {
                let model = s
                    .points
                    .first()
                    .map(|p| p.result.config.model.as_str())
                    .unwrap_or("no points");
                format!(
                    "sweep · {model} · {} · {} points",
                    s.workload,
                    s.curve.len()
                )
            }
        };
        let simulated = match saved.target().filter(|t| t.is_simulated()) {
            Some(t) => format!(
                " <span class=\"simulated\">{} — not a real server</span>",
                escape(&t.describe())
            ),
            None => String::new(),
        };
        out.push_str(&format!(
            "<li>{}<b>{}</b> <span class=\"muted\">{}</span>{simulated}</li>\n",
            swatch(i),
            escape(label),
            escape(&what)
        ));
    }
    out.push_str("</ul>\n");
    if items
        .iter()
        .any(|(_, s)| s.target().is_some_and(|t| t.is_simulated()))
    {
        out.push_str("<p class=\"simulated banner\">Simulated: these figures come from goodput's simulated engine, not from a server.</p>\n");
    }
    out.push_str("</header>\n");
    out
}

/// Consistency across repeats: each headline figure's mean with its
/// Student-t interval, its coefficient of variation and every repeat's value.
fn repeat_section(source: &Source, s: &crate::plan::repeat::RepeatSummary) -> String {
    let mut out = format!(
        "<section>\n<h2>{}{} across {}</h2>\n",
        swatch(source.colour),
        escape(source.label),
        s.repeats_words()
    );
    let fmt = |x: f64| trim(format!("{x:.3}"));
    out.push_str("<table>\n<thead><tr><th>figure</th><th>mean [95 % interval, Student t]</th><th>CV</th><th>each repeat</th></tr></thead>\n<tbody>\n");
    for f in &s.figures {
        let interval = match (f.lo, f.hi) {
            (Some(lo), Some(hi)) => format!(" [{}, {}]", fmt(lo), fmt(hi)),
            _ => String::new(),
        };
        let values: Vec<String> = f.values.iter().map(|v| v.map_or("–".into(), fmt)).collect();
        out.push_str(&format!(
            "<tr><td>{} <span class=\"muted\">{}</span></td><td class=\"num\">{}{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>\n",
            escape(&f.name),
            escape(&f.unit),
            fmt(f.mean),
            interval,
            f.cv.map_or("–".into(), |c| format!("{:.1} %", c * 100.0)),
            values.join(", ")
        ));
    }
    out.push_str("</tbody>\n</table>\n");
    match (&s.identical_outputs, &s.identical_outputs_note) {
        (Some(i), _) => out.push_str(&format!(
            "<p>Identical outputs in every repeat: <b>{}</b> of {} prompts{}{}.</p>\n",
            i.identical,
            i.prompts_compared,
            i.share
                .map_or(String::new(), |s| format!(" ({:.1} %)", s * 100.0)),
            match i.temperature {
                Some(t) => format!(", temperature {t}"),
                None => ", the server's default temperature (not 0: outputs may differ by design)"
                    .into(),
            }
        )),
        (None, Some(note)) => out.push_str(&format!(
            "<p class=\"muted\">Outputs not compared: {}</p>\n",
            escape(note)
        )),
        _ => {}
    }
    out.push_str("</section>\n");
    out
}
