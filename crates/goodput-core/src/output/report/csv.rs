//! The CSV summary: one row per run or sweep point, every scalar figure a
//! column whose header carries its unit (`_ms`, `_req_per_s`,
//! `_tok_per_s`, `_usd`, `_s`, `_share`). Pure: results in, text out.
//!
//! Columns are the same for every row of one file: metric columns come
//! from the metric registry, and the percentile columns are the union of
//! the percentiles the rows report (a row without one leaves it empty).

use crate::load::schedule::Load;
use crate::measure::metrics::Metric;
use crate::measure::stats::{pct_label, Estimate};
use crate::output::report::saved::Saved;
use crate::output::result::RunResult;

/// One row: where it comes from, and the run.
struct Row<'a> {
    source: &'a str,
    point: Option<usize>,
    role: Option<String>,
    run: &'a RunResult,
    /// The sweep point's figures on its sweep's frontier (`--frontier`).
    frontier: Option<&'a crate::plan::sweep::FrontierPoint>,
}

fn rows(items: &[(String, Saved)]) -> Vec<Row<'_>> {
    let mut out = Vec::new();
    for (label, saved) in items {
        match saved {
            Saved::Run(r) => out.push(Row {
                source: label,
                point: None,
                role: None,
                run: r,
                frontier: None,
            }),
            Saved::Repeat(r) => {
                for (i, run) in r.runs.iter().enumerate() {
                    out.push(Row {
                        source: label,
                        point: Some(i),
                        role: Some("repeat".into()),
                        run,
                        frontier: None,
                    });
                }
            }
            Saved::Sweep(s) => {
                for (i, p) in s.points.iter().enumerate() {
                    out.push(Row {
                        source: label,
                        point: Some(i),
                        role: serde_json::to_value(p.role)
                            .ok()
                            .and_then(|v| v.as_str().map(str::to_string)),
                        run: &p.result,
                        frontier: s
                            .frontier
                            .as_ref()
                            .and_then(|f| f.points.iter().find(|fp| fp.point == i)),
                    });
                }
            }
        }
    }
    out
}

type Cell = Option<String>;

fn num(x: f64) -> Cell {
    x.is_finite().then(|| format!("{x}"))
}

fn opt(x: Option<f64>) -> Cell {
    x.and_then(num)
}

/// A column: its header and how a row fills it.
struct Column<'f> {
    header: String,
    value: Box<dyn Fn(&Row) -> Cell + 'f>,
}

fn col<'f>(header: &str, value: impl Fn(&Row) -> Cell + 'f) -> Column<'f> {
    Column {
        header: header.to_string(),
        value: Box::new(value),
    }
}

/// An estimate as three columns: the value and its 95 % interval.
fn estimate_cols<'f>(
    name: &str,
    unit: &str,
    get: impl Fn(&RunResult) -> Option<Estimate> + Copy + 'f,
) -> Vec<Column<'f>> {
    vec![
        col(&format!("{name}_{unit}"), move |r| {
            opt(get(r.run).map(|e| e.value))
        }),
        col(&format!("{name}_ci_lo_{unit}"), move |r| {
            opt(get(r.run).and_then(|e| e.lo))
        }),
        col(&format!("{name}_ci_hi_{unit}"), move |r| {
            opt(get(r.run).and_then(|e| e.hi))
        }),
    ]
}

/// Every column of the file, in order; `percentiles`: the union the rows
/// report.
fn columns(percentiles: &[f64]) -> Vec<Column<'static>> {
    [
        identity_columns(),
        count_columns(),
        throughput_columns(),
        latency_columns(percentiles),
        cost_columns(),
        workload_columns(),
        quality_columns(),
        structured_columns(),
        server_columns(),
        inputs_columns(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// Where the row comes from and what ran: source, point, role, run,
/// model, load and workload.
fn identity_columns() -> Vec<Column<'static>> {
    vec![
        col("source", |r| Some(r.source.to_string())),
        col("point", |r| r.point.map(|p| p.to_string())),
        col("role", |r| r.role.clone()),
        col("run_id", |r| Some(r.run.run_id.clone())),
        col("started_at", |r| Some(r.run.started_at.clone())),
        col("model", |r| Some(r.run.config.model.clone())),
        col("target", |r| {
            r.run.config.target.as_ref().map(|t| t.describe())
        }),
        col("load_mode", |r| {
            Some(
                match r.run.config.load {
                    Load::Closed { .. } => "closed",
                    Load::Open { .. } => "open",
                }
                .to_string(),
            )
        }),
        col("concurrency", |r| {
            r.run.config.load.concurrency_cap().map(|c| c.to_string())
        }),
        col("offered_rate_req_per_s", |r| {
            opt(r.run.config.load.offered_rate())
        }),
        col("workload", |r| {
            r.run.config.workload_summary().map(str::to_string)
        }),
    ]
}

/// Requests by outcome, the error rate, the duration and token totals.
fn count_columns() -> Vec<Column<'static>> {
    vec![
        col("completed", |r| Some(r.run.metrics.completed.to_string())),
        col("failed", |r| Some(r.run.metrics.failed.to_string())),
        col("incomplete", |r| Some(r.run.metrics.incomplete.to_string())),
        col("error_rate_share", |r| num(r.run.metrics.errors.error_rate)),
        col("duration_s", |r| num(r.run.metrics.duration_s)),
        col("total_input_tokens", |r| {
            Some(r.run.metrics.total_input_tokens.to_string())
        }),
        col("total_output_tokens", |r| {
            Some(r.run.metrics.total_output_tokens.to_string())
        }),
    ]
}

/// Throughputs with their intervals, requests in flight, goodput and the
/// SLO verdict.
fn throughput_columns() -> Vec<Column<'static>> {
    let mut c = Vec::new();
    c.extend(estimate_cols("request_throughput", "req_per_s", |r| {
        Some(r.metrics.throughput.request)
    }));
    c.extend(estimate_cols("output_throughput", "tok_per_s", |r| {
        Some(r.metrics.throughput.output)
    }));
    c.push(col("streamed_output_throughput_tok_per_s", |r| {
        num(r.run.metrics.throughput.streamed_output)
    }));
    c.push(col("total_token_throughput_tok_per_s", |r| {
        num(r.run.metrics.throughput.total_token)
    }));
    c.push(col("achieved_request_rate_req_per_s", |r| {
        opt(r.run.metrics.achieved_request_rate)
    }));
    c.push(col("mean_in_flight", |r| num(r.run.metrics.mean_in_flight)));
    c.push(col("request_goodput_req_per_s", |r| {
        opt(r.run.metrics.slo.as_ref().map(|s| s.request_goodput))
    }));
    c.push(col("token_goodput_tok_per_s", |r| {
        opt(r.run.metrics.slo.as_ref().map(|s| s.token_goodput))
    }));
    c.push(col("slo_attainment_share", |r| {
        opt(r.run.metrics.slo.as_ref().map(|s| s.attainment))
    }));
    c.push(col("slo_met", |r| {
        r.run.metrics.slo.as_ref().map(|s| s.meets.to_string())
    }));
    c
}

/// Per latency metric of the registry: count, mean with its interval,
/// std, min, max, and each percentile with its interval.
fn latency_columns(percentiles: &[f64]) -> Vec<Column<'static>> {
    let mut c = Vec::new();
    for m in Metric::ALL {
        let key = m.key();
        c.push(col(&format!("{key}_count"), move |r| {
            r.run.metrics.get(m).map(|d| d.count.to_string())
        }));
        c.extend(estimate_cols(&format!("mean_{key}"), "ms", move |r| {
            r.metrics.get(m).map(|d| d.mean)
        }));
        c.push(col(&format!("std_{key}_ms"), move |r| {
            opt(r.run.metrics.get(m).map(|d| d.std))
        }));
        c.push(col(&format!("min_{key}_ms"), move |r| {
            opt(r.run.metrics.get(m).map(|d| d.min))
        }));
        c.push(col(&format!("max_{key}_ms"), move |r| {
            opt(r.run.metrics.get(m).map(|d| d.max))
        }));
        for &p in percentiles {
            let pct = move |r: &RunResult| {
                r.metrics
                    .get(m)
                    .and_then(|d| d.percentiles.iter().find(|(q, _)| *q == p).map(|(_, e)| *e))
            };
            c.extend(estimate_cols(
                &format!("p{}_{key}", pct_label(p)),
                "ms",
                pct,
            ));
        }
    }
    c
}

/// Cost figures (`--cost-per-hour`, `--power-watts`, `--energy-price`).
fn cost_columns() -> Vec<Column<'static>> {
    let mut c = Vec::new();
    let cost = |f: fn(&crate::measure::cost::Cost) -> Option<f64>| {
        move |r: &Row| opt(r.run.cost.as_ref().and_then(f))
    };
    c.push(col("cost_per_request_usd", cost(|c| c.per_request)));
    c.push(col(
        "cost_per_million_output_tokens_usd",
        cost(|c| c.per_million_output_tokens),
    ));
    c.push(col(
        "cost_per_million_good_output_tokens_usd",
        cost(|c| c.per_million_good_output_tokens),
    ));
    c.push(col("cost_per_session_usd", cost(|c| c.per_session)));
    c.push(col(
        "output_tokens_per_joule",
        cost(|c| c.output_tokens_per_joule),
    ));
    c.push(col(
        "energy_cost_per_million_output_tokens_usd",
        cost(|c| c.energy_cost_per_million_output_tokens),
    ));
    c.push(col(
        "output_throughput_per_gpu_tok_per_s",
        cost(|c| Some(c.output_throughput_per_gpu)),
    ));
    c
}

/// What was sent: mean lengths and prefix-cache shares.
fn workload_columns() -> Vec<Column<'static>> {
    let mut c = Vec::new();
    let mix = |r: &Row| r.run.metrics.workload.clone();
    c.push(col("mean_input_tokens", move |r| {
        opt(mix(r).input_tokens.map(|m| m.mean))
    }));
    c.push(col("mean_output_tokens", move |r| {
        opt(mix(r).output_tokens.map(|m| m.mean))
    }));
    c.push(col("cacheable_prompt_share", move |r| {
        opt(mix(r).cacheable_share)
    }));
    c.push(col("server_cached_prompt_share", move |r| {
        opt(mix(r).cached_share)
    }));
    c
}

/// Quality against the dataset's references.
fn quality_columns() -> Vec<Column<'static>> {
    let mut c = Vec::new();
    let quality = |f: fn(&crate::measure::quality::Quality) -> f64| {
        move |r: &Row| opt(r.run.metrics.quality.as_ref().map(f))
    };
    c.push(col("quality_scored", |r| {
        r.run.metrics.quality.as_ref().map(|q| q.scored.to_string())
    }));
    c.push(col(
        "quality_exact_match_share",
        quality(|q| q.exact_match_share),
    ));
    c.push(col("quality_rouge_l_f1", quality(|q| q.rouge_l_f1)));
    c.push(col("quality_bleu", quality(|q| q.bleu)));
    c
}

/// Tool calls and schema checks (`--tools`, `--response-format`).
fn structured_columns() -> Vec<Column<'static>> {
    let count = |f: fn(&crate::measure::metrics::StructuredOutput) -> u64| {
        move |r: &Row| {
            r.run
                .metrics
                .structured_output
                .as_ref()
                .map(|s| f(s).to_string())
        }
    };
    vec![
        col("schema_checked", count(|s| s.checked)),
        col("schema_invalid", count(|s| s.invalid)),
        col("schema_invalid_share", |r| {
            opt(r
                .run
                .metrics
                .structured_output
                .as_ref()
                .and_then(|s| s.invalid_share))
        }),
        col("tool_calls", count(|s| s.tool_calls)),
    ]
}

/// What the server's own metrics said (`--server-metrics`).
fn server_columns() -> Vec<Column<'static>> {
    let mut c = Vec::new();
    let server = |f: fn(&crate::measure::server_metrics::ServerSummary) -> Option<f64>| {
        move |r: &Row| {
            opt(r
                .run
                .server_metrics
                .as_ref()
                .and_then(|m| m.summary.as_ref())
                .and_then(f))
        }
    };
    c.push(col(
        "server_mean_ttft_ms",
        server(|s| s.ttft_ms.as_ref()?.mean),
    ));
    c.push(col("server_ttft_gap_ms", server(|s| s.ttft_gap_ms)));
    c.push(col("server_peak_kv_usage", server(|s| s.peak_kv_usage)));
    c.push(col("server_preemptions", server(|s| s.preemptions)));
    c.push(col(
        "server_prefix_cache_hit_share",
        server(|s| s.prefix_cache_hit_share),
    ));
    c
}

/// Inputs of pooling requests and images of chat requests (empty when
/// the run had none).
fn inputs_columns() -> Vec<Column<'static>> {
    let inputs = |f: fn(&crate::measure::metrics::InputsSummary) -> f64| {
        move |r: &Row| opt(r.run.metrics.inputs.as_ref().map(f))
    };
    let images = |f: fn(&crate::measure::metrics::ImagesSummary) -> Option<f64>| {
        move |r: &Row| opt(r.run.metrics.images.as_ref().and_then(f))
    };
    vec![
        col("inputs_total", inputs(|i| i.inputs_total as f64)),
        col("inputs_throughput", inputs(|i| i.inputs_throughput)),
        col("images_total", images(|i| Some(i.images_total as f64))),
        col(
            "image_bytes_total",
            images(|i| Some(i.image_bytes_total as f64)),
        ),
        col(
            "image_extra_prompt_tokens_mean",
            images(|i| i.image_extra_prompt_tokens_mean),
        ),
    ]
}

/// The CSV text: a header line, then one line per run or sweep point.
pub fn render(items: &[(String, Saved)]) -> String {
    let rows = rows(items);
    let mut percentiles: Vec<f64> = Vec::new();
    for r in &rows {
        for &p in &r.run.config.percentiles {
            if !percentiles.contains(&p) {
                percentiles.push(p);
            }
        }
    }
    percentiles.sort_by(f64::total_cmp);
    let mut cols = columns(&percentiles);
    cols.extend(group_columns(&rows));
    if rows.iter().any(|r| r.run.metrics.tasks.is_some()) {
        cols.extend(task_columns(&percentiles));
    }
    if rows.iter().any(|r| r.frontier.is_some()) {
        cols.extend(frontier_columns());
    }
    if rows.iter().any(|r| r.run.gpu_metrics.is_some()) {
        cols.extend(gpu_columns());
    }
    let spec = |r: &Row| {
        let s = r.run.server_metrics.as_ref()?.summary.as_ref()?;
        s.spec_decode.clone()
    };
    if rows.iter().any(|r| spec(r).is_some()) {
        cols.push(col("server_spec_acceptance_rate", move |r: &Row| {
            opt(spec(r).and_then(|s| s.acceptance_rate))
        }));
        cols.push(col("server_spec_mean_acceptance_length", move |r: &Row| {
            opt(spec(r).and_then(|s| s.mean_acceptance_length))
        }));
    }
    let mut w = csv::WriterBuilder::new().from_writer(Vec::new());
    let _ = w.write_record(cols.iter().map(|c| c.header.as_str()));
    for r in &rows {
        let cells: Vec<String> = cols
            .iter()
            .map(|c| (c.value)(r).unwrap_or_default())
            .collect();
        let _ = w.write_record(&cells);
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}

/// The per-group columns of a run that mixes models or classes, for the
/// union of the rows' groups: `by_class.NAME.p99_ttft_ms` and its kin
/// (docs/metrics.md, "Per-group figures"); a row without the group leaves
/// them empty.
fn group_columns(rows: &[Row<'_>]) -> Vec<Column<'static>> {
    use crate::measure::metrics::{GroupFigures, Metric};
    let mut names: Vec<(&'static str, String)> = Vec::new();
    for r in rows {
        let Some(g) = &r.run.metrics.groups else {
            continue;
        };
        for (grouping, map) in g.groupings() {
            for name in map.keys() {
                if !names.iter().any(|(k, n)| *k == grouping && n == name) {
                    names.push((grouping, name.clone()));
                }
            }
        }
    }
    type Get = fn(&GroupFigures) -> Cell;
    let figures: [(&str, Get); 8] = [
        ("share", |g| num(g.share)),
        ("completed", |g| Some(g.completed.to_string())),
        ("failed", |g| Some(g.failed.to_string())),
        ("request_throughput_req_per_s", |g| {
            num(g.request_throughput.value)
        }),
        ("p50_ttft_ms", |g| opt(g.percentile(Metric::Ttft, 50.0))),
        ("p99_ttft_ms", |g| opt(g.percentile(Metric::Ttft, 99.0))),
        ("p99_tpot_ms", |g| opt(g.percentile(Metric::Tpot, 99.0))),
        ("slo_met", |g| g.slo.as_ref().map(|s| s.meets.to_string())),
    ];
    let mut cols = Vec::new();
    for (grouping, name) in names {
        for (figure, get) in figures {
            let name = name.clone();
            cols.push(col(&format!("{grouping}.{name}.{figure}"), move |r| {
                let g = r.run.metrics.groups.as_ref()?;
                let map = if grouping == "by_model" {
                    &g.by_model
                } else {
                    &g.by_class
                };
                get(map.get(&name)?)
            }));
        }
    }
    cols
}

/// The GPUs' measured energy and power (docs/metrics.md, "Energy from the
/// GPUs"); only in a file with a row that scraped them.
fn gpu_columns() -> Vec<Column<'static>> {
    use crate::measure::gpu::GpuSummary;
    type Get = fn(&GpuSummary) -> Option<f64>;
    let figures: [(&str, Get); 8] = [
        ("gpu_energy_j", |s| s.energy_j),
        ("gpu_mean_power_w", |s| s.mean_power_w),
        ("gpu_peak_power_w", |s| s.peak_power_w),
        ("gpu_output_tokens_per_joule", |s| s.output_tokens_per_joule),
        ("gpu_joules_per_request", |s| s.joules_per_request),
        ("gpu_joules_per_output_token", |s| s.joules_per_output_token),
        ("gpu_mean_util_pct", |s| s.mean_util_pct),
        ("gpu_peak_fb_used_mib", |s| s.peak_fb_used_mib),
    ];
    figures
        .into_iter()
        .map(|(name, f)| {
            col(name, move |r: &Row| {
                opt((r.run.gpu_metrics.as_ref()).and_then(|g| g.summary.as_ref().and_then(f)))
            })
        })
        .collect()
}

/// An agent workload's task columns (docs/metrics.md, "Tasks"): counts,
/// tasks/s, the duration in seconds with its intervals, what a task holds
/// and the prefix-cache shares; only in a file with such a row.
fn task_columns(percentiles: &[f64]) -> Vec<Column<'static>> {
    use crate::measure::metrics::TaskSummary;
    type Get = fn(&TaskSummary) -> Cell;
    let figures: [(&str, Get); 11] = [
        ("tasks", |t| Some(t.tasks.to_string())),
        ("tasks_completed", |t| Some(t.completed.to_string())),
        ("tasks_failed", |t| Some(t.failed.to_string())),
        ("tasks_cut", |t| Some(t.cut.to_string())),
        ("task_throughput_tasks_per_s", |t| num(t.throughput)),
        ("task_calls_mean", |t| num(t.calls_mean)),
        ("task_subagents_mean", |t| num(t.subagents_mean)),
        ("task_input_tokens_mean", |t| num(t.input_tokens_mean)),
        ("task_output_tokens_mean", |t| num(t.output_tokens_mean)),
        ("task_cacheable_share", |t| opt(t.cacheable_share)),
        ("task_cached_share", |t| opt(t.cached_share)),
    ];
    let mut cols: Vec<Column<'static>> = figures
        .into_iter()
        .map(|(h, get)| col(h, move |r| get(r.run.metrics.tasks.as_ref()?)))
        .collect();
    let seconds = |e: Estimate| Estimate {
        value: e.value / 1e3,
        lo: e.lo.map(|x| x / 1e3),
        hi: e.hi.map(|x| x / 1e3),
    };
    cols.extend(estimate_cols("task_duration_mean", "s", move |r| {
        Some(seconds(r.metrics.tasks.as_ref()?.duration.as_ref()?.mean))
    }));
    for &p in percentiles {
        cols.extend(estimate_cols(
            &format!("task_duration_p{}", pct_label(p)),
            "s",
            move |r| {
                let d = r.metrics.tasks.as_ref()?.duration.as_ref()?;
                Some(seconds(d.percentiles.iter().find(|x| x.0 == p)?.1))
            },
        ));
    }
    cols
}

/// One side of a frontier point's per-user interval.
fn frontier_interval(p: &crate::plan::sweep::FrontierPoint, hi: bool) -> Cell {
    let (lo, up) = p.tps_per_user_interval?;
    opt(if hi { up } else { lo })
}

/// A frontier sweep's per-point figures (docs/metrics.md, "The
/// frontier"); only in a file with such a row.
fn frontier_columns() -> Vec<Column<'static>> {
    use crate::plan::sweep::FrontierPoint;
    type Get = fn(&FrontierPoint) -> Cell;
    let figures: [(&str, Get); 10] = [
        ("frontier_region", |p| {
            serde_json::to_value(p.region?)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
        }),
        ("frontier_system_tps_tok_per_s", |p| num(p.system_tps)),
        ("frontier_system_tps_per_gpu_tok_per_s", |p| {
            num(p.system_tps_per_gpu)
        }),
        ("frontier_tps_per_user_tok_per_s", |p| opt(p.tps_per_user)),
        ("frontier_tps_per_user_ci_lo_tok_per_s", |p| {
            frontier_interval(p, false)
        }),
        ("frontier_tps_per_user_ci_hi_tok_per_s", |p| {
            frontier_interval(p, true)
        }),
        ("frontier_tps_per_user_p50_tok_per_s", |p| {
            opt(p.tps_per_user_p50)
        }),
        ("frontier_tps_per_user_by_concurrency_tok_per_s", |p| {
            opt(p.tps_per_user_by_concurrency)
        }),
        ("frontier_ttft_p90_ms", |p| opt(p.ttft_p90_ms)),
        ("frontier_on_frontier", |p| Some(p.on_frontier.to_string())),
    ];
    figures
        .into_iter()
        .map(|(h, get)| col(h, move |r| get(r.frontier?)))
        .collect()
}

/// The header line alone (for the snapshot test).
#[cfg(test)]
fn header(percentiles: &[f64]) -> String {
    columns(percentiles)
        .iter()
        .map(|c| c.header.as_str())
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_row_per_run_and_per_sweep_point_with_units_in_the_header() {
        let r = crate::output::report::console::tests::sample_result();
        let sweep = crate::plan::sweep::SweepResult {
            points: vec![
                crate::plan::sweep::SweepPoint {
                    role: crate::plan::sweep::PointRole::Floor,
                    meets: Some(true),
                    wall_s: 1.0,
                    result: r.clone(),
                    start: None,
                },
                crate::plan::sweep::SweepPoint {
                    role: crate::plan::sweep::PointRole::Grid,
                    meets: Some(false),
                    wall_s: 1.0,
                    result: r.clone(),
                    start: None,
                },
            ],
            ..Default::default()
        };
        let text = render(&[
            ("a.json".into(), Saved::Run(Box::new(r.clone()))),
            ("s.json".into(), Saved::Sweep(Box::new(sweep))),
        ]);
        let mut rd = csv::Reader::from_reader(text.as_bytes());
        let headers = rd.headers().unwrap().clone();
        let lines: Vec<csv::StringRecord> = rd.records().map(Result::unwrap).collect();
        assert_eq!(lines.len(), 3);
        let at = |name: &str| headers.iter().position(|h| h == name).unwrap();
        assert_eq!(&lines[0][at("source")], "a.json");
        assert_eq!(&lines[2][at("role")], "grid");
        assert_eq!(&lines[2][at("point")], "1");
        let p99: f64 = lines[0][at("p99_ttft_ms")].parse().unwrap();
        assert_eq!(
            p99,
            r.metrics
                .get(Metric::Ttft)
                .unwrap()
                .percentiles
                .iter()
                .find(|p| p.0 == 99.0)
                .unwrap()
                .1
                .value
        );
        for h in headers.iter() {
            assert!(!h.contains(' '), "{h}");
        }
    }

    #[test]
    fn csv_header_snapshot() {
        insta::assert_snapshot!(header(&[50.0, 90.0, 99.0]).replace(',', "\n"));
    }
}
