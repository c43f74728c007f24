//! The workload section of a run or a sweep: as asked (`config.workload`)
//! and as sent (the measured mix).

use serde_json::Value;

use super::format::{escape, num, row, share};
use crate::output::result::RunResult;

/// A JSON value in a table cell: strings as they are, others as JSON.
fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "–".into(),
        other => other.to_string(),
    }
}

/// The workload as asked (`config.workload`) and as sent (the measured mix).
pub(super) fn workload(r: &RunResult) -> String {
    let w = r.config.workload.as_ref();
    let mut out = String::from("<div data-section=\"workload\">\n<h4>Workload</h4>\n");
    if let Some(w) = w {
        out.push_str(&format!("<p>{}</p>\n", escape(&w.summary)));
    }
    let mut rows = String::new();
    let tokenizer = w.map_or(&r.config.tokenizer, |w| &w.tokenizer.spec);
    rows.push_str(&row("tokenizer", &[escape(tokenizer)]));
    // Every other saved key of the description, as saved (sorted by key).
    if let Some(Value::Object(o)) = w.map(|w| serde_json::json!(w)) {
        for (k, v) in &o {
            if matches!(k.as_str(), "summary" | "tokenizer") {
                continue;
            }
            rows.push_str(&row(k, &[escape(&plain(v))]));
        }
    }
    out.push_str(&format!(
        "<div class=\"table-wrap\"><table>\n<tbody>\n{rows}</tbody></table></div>\n"
    ));
    let mix = &r.metrics.workload;
    if mix.input_tokens.is_some() || mix.output_tokens.is_some() {
        out.push_str("<div class=\"table-wrap\"><table>\n<thead><tr><th>Length as sent (tokens)</th><th>Requests</th><th>Mean</th><th>p50</th><th>p90</th><th>Max</th></tr></thead>\n<tbody>\n");
        for (name, l) in [("input", &mix.input_tokens), ("output", &mix.output_tokens)] {
            if let Some(l) = l {
                out.push_str(&format!(
                    "<tr><th scope=\"row\">{name}</th><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>\n",
                    l.count,
                    num(l.mean),
                    l.p50,
                    l.p90,
                    l.max
                ));
            }
        }
        out.push_str("</tbody></table></div>\n");
    }
    let shares: Vec<String> = [
        ("cacheable by prefix (client count)", mix.cacheable_share),
        ("served from cache (server count)", mix.cached_share),
    ]
    .iter()
    .filter_map(|(name, v)| v.map(|v| format!("{name}: {}", share(v))))
    .collect();
    if !shares.is_empty() {
        out.push_str(&format!(
            "<p>Prompt tokens {}.</p>\n",
            escape(&shares.join("; "))
        ));
    }
    out.push_str("</div>\n");
    out
}
