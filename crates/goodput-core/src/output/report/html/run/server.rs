//! What the server's own metrics said over each run (`--server-metrics`).

use crate::output::report::html::chart::{Axis, Chart, Series};
use crate::output::report::html::format::{escape, num, row, table_by_source, Source};
use crate::output::report::html::scale::AxisKind;
use crate::output::result::RunResult;

/// What the server's own metrics said (`--server-metrics`): its TTFT beside
/// the client's, every other figure its engine exposes, what its scrape
/// needed saying, and KV-cache use, the batch and the queue through the run.
pub(super) fn server_block(runs: &[(Source, &RunResult)]) -> String {
    let with: Vec<ServerRun> = runs
        .iter()
        .filter_map(|(s, r)| r.server_metrics.as_ref().map(|m| (*s, *r, m)))
        .collect();
    if with.is_empty() {
        return String::new();
    }
    let mut out = String::from("<div data-section=\"server\">\n<h3>What the server saw</h3>\n");
    let sources: Vec<Source> = with.iter().map(|(s, _, _)| *s).collect();
    let rows = server_rows(&with);
    out.push_str(&table_by_source("Figure", &sources, &rows));
    out.push_str(&server_notes(&with));
    let time = || {
        Axis::new(
            "time since the measured phase started (s)",
            AxisKind::FromZero,
        )
    };
    let mut kv = Chart::new(
        "server-kv",
        "Server KV-cache usage",
        time(),
        Axis::new("KV-cache usage (%)", AxisKind::FromZero),
    );
    let mut batch = Chart::new(
        "server-batch",
        "Server: running and waiting requests",
        time(),
        Axis::new("requests", AxisKind::FromZero),
    );
    let single = with.len() == 1;
    for (source, _, m) in &with {
        let label = |what: &str| {
            if single {
                what.to_string()
            } else {
                format!("{} · {what}", source.label)
            }
        };
        let points = |f: &dyn Fn(&crate::measure::server_metrics::ServerSample) -> Option<f64>| {
            m.series
                .iter()
                .filter(|p| p.t_s >= 0.0)
                .filter_map(|p| f(p).map(|v| (p.t_s, v)))
                .collect::<Vec<_>>()
        };
        kv.series.push(Series::new(
            label("KV-cache usage"),
            source.colour,
            points(&|p| p.kv_usage.map(|v| v * 100.0)),
        ));
        batch.series.push(Series::new(
            label("running"),
            source.colour,
            points(&|p| p.running),
        ));
        batch
            .series
            .push(Series::new(label("waiting"), source.colour, points(&|p| p.waiting)).dashed());
    }
    let charts: Vec<Chart> = [kv, batch]
        .into_iter()
        .filter(Chart::has_points)
        .map(|c| c.note("Each point is one scrape of the server's /metrics."))
        .collect();
    if !charts.is_empty() {
        out.push_str("<div class=\"charts\">\n");
        for c in &charts {
            out.push_str(&c.render());
        }
        out.push_str("</div>\n");
    }
    out.push_str("</div>\n");
    out
}

type ServerRun<'a> = (
    Source<'a>,
    &'a RunResult,
    &'a crate::measure::server_metrics::ServerMetrics,
);

/// One row of the server table, a cell per run; `None` (no row) where no
/// run's engine filled it, so an engine's table has no row it never fills.
fn server_row(
    name: &str,
    with: &[ServerRun],
    cell: &dyn Fn(&crate::measure::server_metrics::ServerSummary) -> Option<String>,
) -> Option<String> {
    let cells: Vec<Option<String>> = with
        .iter()
        .map(|(_, _, m)| m.summary.as_ref().and_then(cell))
        .collect();
    cells.iter().any(Option::is_some).then(|| {
        let cells: Vec<String> = cells.into_iter().map(|c| c.unwrap_or("–".into())).collect();
        row(name, &cells)
    })
}

/// `a / b` where either is there, a missing side as `–`.
fn server_pair(a: Option<f64>, b: Option<f64>, fmt: fn(f64) -> String) -> Option<String> {
    (a.is_some() || b.is_some()).then(|| {
        let side = |x: Option<f64>| x.map_or("–".into(), fmt);
        format!("{} / {}", side(a), side(b))
    })
}

fn server_pct(v: f64) -> String {
    format!("{:.1} %", v * 100.0)
}

fn server_count(v: f64) -> String {
    format!("{v:.0}")
}

/// A figure of the server table: its name and how a run's summary fills it.
type ServerFigure = (
    &'static str,
    fn(&crate::measure::server_metrics::ServerSummary) -> Option<String>,
);

/// The server's latency figures, beside the client's TTFT.
fn server_latency_figures() -> Vec<ServerFigure> {
    vec![
        ("Server mean TTFT (ms)", |s| {
            s.ttft_ms.as_ref()?.mean.map(num)
        }),
        ("Client mean TTFT (ms)", |s| s.client_mean_ttft_ms.map(num)),
        ("Client minus server TTFT (ms)", |s| {
            s.ttft_gap_ms.map(|v| format!("{v:+.2}"))
        }),
        ("Server P99 TTFT (ms, within buckets)", |s| {
            s.ttft_ms.as_ref()?.p99.map(num)
        }),
        ("Server mean queue time (ms)", |s| {
            s.queue_time_ms.as_ref()?.mean.map(num)
        }),
        ("Server mean TPOT (ms)", |s| {
            s.tpot_ms.as_ref()?.mean.map(num)
        }),
        ("Server mean ITL (ms)", |s| s.itl_ms.as_ref()?.mean.map(num)),
        ("Server mean E2EL (ms)", |s| {
            s.e2e_ms.as_ref()?.mean.map(num)
        }),
    ]
}

/// The server's load, cache, token and (llama.cpp) slot figures.
/// Speculative decoding's acceptance (rows only where a run has it).
fn spec_decode_figures() -> Vec<ServerFigure> {
    vec![
        ("Spec decoding acceptance rate", |s| {
            s.spec_decode.as_ref()?.acceptance_rate.map(server_pct)
        }),
        ("Mean acceptance length (tokens a step)", |s| {
            (s.spec_decode.as_ref()?.mean_acceptance_length).map(|l| format!("{l:.2}"))
        }),
        ("Acceptance by draft position", |s| {
            let by = &s.spec_decode.as_ref()?.acceptance_by_position;
            (!by.is_empty()).then(|| {
                let v: Vec<String> = by.iter().map(|r| format!("{r:.3}")).collect();
                v.join(", ")
            })
        }),
    ]
}

fn server_load_figures() -> Vec<ServerFigure> {
    vec![
        ("Peak KV-cache usage", |s| s.peak_kv_usage.map(server_pct)),
        ("Mean KV-cache usage", |s| s.mean_kv_usage.map(server_pct)),
        ("Peak running / waiting", |s| {
            server_pair(s.peak_running, s.peak_waiting, server_count)
        }),
        ("Mean running / waiting", |s| {
            server_pair(s.mean_running, s.mean_waiting, num)
        }),
        ("Preemptions", |s| s.preemptions.map(server_count)),
        ("Prefix-cache hit share", |s| {
            s.prefix_cache_hit_share.map(server_pct)
        }),
        ("Prompt tokens from the prefix cache", |s| {
            s.prompt_tokens_cached.map(server_count)
        }),
        ("Prompt / generated tokens (server)", |s| {
            server_pair(s.prompt_tokens, s.generation_tokens, server_count)
        }),
        ("Requests finished (server)", |s| {
            s.requests_finished.map(server_count)
        }),
        ("Prompt / generation slot time (s)", |s| {
            server_pair(s.prompt_seconds, s.generation_seconds, num)
        }),
        ("Prefill / decode per slot (tok/s)", |s| {
            server_pair(
                s.prompt_tokens_per_slot_s,
                s.generation_tokens_per_slot_s,
                num,
            )
        }),
        ("Busy slots per decode call", |s| {
            s.busy_slots_per_decode.map(num)
        }),
        ("Decode calls", |s| s.decode_calls.map(server_count)),
    ]
}

/// The server table's rows: the engine, then every figure any run's
/// engine filled.
fn server_rows(with: &[ServerRun]) -> Vec<String> {
    let engine = row(
        "Engine",
        &with
            .iter()
            .map(|(_, _, m)| m.engine.map_or("unknown", |e| e.as_str()).to_string())
            .collect::<Vec<_>>(),
    );
    let figures = server_latency_figures()
        .into_iter()
        .chain(server_load_figures())
        .chain(spec_decode_figures());
    std::iter::once(engine)
        .chain(figures.filter_map(|(name, cell)| server_row(name, with, &cell)))
        .collect()
}

/// The notes each run's scrape left (how it was read, what the window held).
fn server_notes(with: &[ServerRun]) -> String {
    let notes: Vec<String> = with
        .iter()
        .flat_map(|(source, _, m)| {
            m.notes.iter().map(move |n| match with.len() {
                1 => escape(n),
                _ => format!("{}: {}", escape(source.label), escape(n)),
            })
        })
        .collect();
    if notes.is_empty() {
        return String::new();
    }
    let mut out = String::from("<ul class=\"plain\" data-section=\"server-notes\">\n");
    for n in notes {
        out.push_str(&format!("<li>{n}</li>\n"));
    }
    out.push_str("</ul>\n");
    out
}
