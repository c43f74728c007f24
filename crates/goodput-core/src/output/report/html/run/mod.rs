//! The runs of the HTML report: headline figures side by side, latency
//! CDFs and time series overlaid (one colour per file), then each run's
//! SLO verdict, errors, notes, workload and configuration.
//!
//! The table of headline figures is [`headline`], the charts [`charts`],
//! what the server's own metrics said [`server`], and each run's own
//! section [`detail`].

mod charts;
mod detail;
mod gpu;
mod groups;
mod headline;
mod server;
mod tasks;

use crate::output::report::html::chart::Chart;
use crate::output::report::html::format::{table_by_source, Source};
use crate::output::result::RunResult;
use charts::{cdf_chart, cdfs, time_charts};
use detail::detail;
use gpu::gpu_block;
use headline::headline_rows;
use server::server_block;

/// The runs' section: the headline table, the charts, the server's view,
/// then each run's own section.
pub(super) fn section(runs: &[(Source, &RunResult)]) -> String {
    let mut out = String::from("<section data-section=\"runs\">\n");
    out.push_str(if runs.len() == 1 {
        "<h2>Run</h2>\n"
    } else {
        "<h2>Runs</h2>\n"
    });
    let sources: Vec<Source> = runs.iter().map(|(s, _)| *s).collect();
    out.push_str(&table_by_source("Figure", &sources, &headline_rows(runs)));

    let cdfs: Vec<Chart> = cdfs()
        .map(|(m, id)| cdf_chart(runs, m, &id))
        .filter(Chart::has_points)
        .collect();
    if !cdfs.is_empty() {
        out.push_str("<h3>Latency distributions</h3>\n<div class=\"charts\">\n");
        for c in &cdfs {
            out.push_str(&c.render());
        }
        out.push_str("</div>\n");
    }
    let series: Vec<Chart> = time_charts(runs)
        .into_iter()
        .filter(Chart::has_points)
        .collect();
    if !series.is_empty() {
        out.push_str("<h3>Through the run</h3>\n<div class=\"charts\">\n");
        for c in &series {
            out.push_str(&c.render());
        }
        out.push_str("</div>\n");
    }
    out.push_str(&server_block(runs));
    out.push_str(&gpu_block(runs));
    for (source, r) in runs {
        out.push_str(&detail(*source, r, runs.len() > 1));
    }
    out.push_str("</section>\n");
    out
}
