//! A [`Comparison`] as plain text (the terminal), Markdown (a pull-request
//! comment: a PASS/FAIL header naming the failed gates, then the table) or
//! JSON. Pure: a comparison in, text out.

use std::fmt::Write;

use serde_json::{json, Value};

use super::figure::{format_relative, format_signed, format_value, Figure};
use super::significance::{Method, ALPHA};
use super::Comparison;

const HEADERS: [&str; 7] = [
    "figure",
    "unit",
    "base",
    "new",
    "change",
    "relative",
    "significant",
];

/// The cells of one figure's row, in [`HEADERS`] order.
fn cells(f: &Figure) -> [String; 7] {
    let value = |x: Option<f64>| x.map_or("-".into(), |x| format_value(x, f.unit));
    [
        f.name.clone(),
        f.unit.as_str().into(),
        value(f.base),
        value(f.new),
        f.change.map_or("-".into(), |c| format_signed(c, f.unit)),
        f.relative_change.map_or("-".into(), format_relative),
        f.significance.describe(),
    ]
}

const RIGHT: [bool; 7] = [false, false, true, true, true, true, false];

/// A table before it is laid out: its headers, which columns hold numbers
/// (right-aligned), and its rows of cells. Built once, rendered as text
/// or as Markdown.
struct Table {
    headers: Vec<&'static str>,
    right: Vec<bool>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// One row per figure; `cells` gives a figure's cells in [`HEADERS`] order.
    fn figures<'a>(
        figures: impl IntoIterator<Item = &'a Figure>,
        cells: impl Fn(&Figure) -> Vec<String>,
    ) -> Table {
        Table {
            headers: HEADERS.to_vec(),
            right: RIGHT.to_vec(),
            rows: figures.into_iter().map(cells).collect(),
        }
    }

    /// The curve of two sweeps: a row per figure of each matched load,
    /// the load first.
    fn curve(s: &super::SweepComparison, cells: impl Fn(&Figure) -> Vec<String>) -> Table {
        let mut headers = vec!["load"];
        headers.extend(HEADERS);
        let mut right = vec![true];
        right.extend(RIGHT);
        let rows = s
            .points
            .iter()
            .flat_map(|p| {
                p.figures.iter().map(|f| {
                    let mut r = vec![format!("{}", p.offered)];
                    r.extend(cells(f));
                    r
                })
            })
            .collect();
        Table {
            headers,
            right,
            rows,
        }
    }

    fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Columns padded to their widest cell; numbers right-aligned.
    fn text(&self) -> String {
        let (headers, rows, right) = (&self.headers, &self.rows, &self.right);
        let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
        for r in rows {
            for (w, c) in widths.iter_mut().zip(r) {
                *w = (*w).max(c.chars().count());
            }
        }
        let mut out = String::new();
        let head: Vec<String> = headers.iter().map(|h| h.to_string()).collect();
        for r in std::iter::once(&head).chain(rows) {
            let mut line = String::new();
            for (i, c) in r.iter().enumerate() {
                let w = widths[i];
                let pad = w.saturating_sub(c.chars().count());
                if i > 0 {
                    line.push_str("  ");
                }
                if right.get(i).copied().unwrap_or(false) {
                    line.push_str(&" ".repeat(pad));
                    line.push_str(c);
                } else {
                    line.push_str(c);
                    if i + 1 < r.len() {
                        line.push_str(&" ".repeat(pad));
                    }
                }
            }
            let _ = writeln!(out, "{}", line.trim_end());
        }
        out
    }

    /// A Markdown table; numbers right-aligned.
    fn markdown(&self) -> String {
        let (headers, rows, right) = (&self.headers, &self.rows, &self.right);
        let mut out = String::new();
        let _ = writeln!(out, "| {} |", headers.join(" | "));
        let align: Vec<&str> = (0..headers.len())
            .map(|i| {
                if right.get(i).copied().unwrap_or(false) {
                    "---:"
                } else {
                    "---"
                }
            })
            .collect();
        let _ = writeln!(out, "|{}|", align.join("|"));
        for r in rows {
            let _ = writeln!(out, "| {} |", r.join(" | "));
        }
        out
    }
}

/// Every figure the comparison holds: the headline ones and each curve point's.
fn all_figures(c: &Comparison) -> impl Iterator<Item = &Figure> {
    c.figures.iter().chain(
        c.sweep
            .iter()
            .flat_map(|s| s.points.iter().flat_map(|p| p.figures.iter())),
    )
}

/// What each significance word means, for the methods used.
fn legend(c: &Comparison) -> String {
    let used = |m: Method| all_figures(c).any(|f| f.significance.method == m);
    let mut parts = Vec::new();
    if used(Method::Intervals) {
        parts.push("intervals: z-test on the difference, each side's error from its saved 95 % interval (batch means: a run's requests are not independent; an open side facing the other value never separates)");
    }
    if used(Method::BatchMeans) {
        parts.push("batch means: z-test on the means, each error from batch means over the records' requests in the order they finished");
    }
    if used(Method::Repeats) {
        parts.push("repeats: Welch's t-test on the repeats' values, each side's spread read from its own repeats");
    }
    if used(Method::TwoProportions) {
        parts.push("proportions: two-proportion z-test of failed / finished requests");
    }
    if used(Method::None) {
        parts.push("n/a: no interval and no per-request values");
    }
    format!(
        "Significance, two-sided at α = {ALPHA} for the whole comparison (Holm's correction over every figure with a p-value): {}",
        parts.join("; ")
    )
}

fn side_line(s: &super::Side) -> String {
    format!("{} ({})", s.label, side_details(s))
}

/// `run 1a2b…, started …, 20 req/s (poisson), with records`.
fn side_details(s: &super::Side) -> String {
    let mut parts = Vec::new();
    if let Some(id) = &s.run_id {
        parts.push(format!("run {id}"));
    }
    match (s.kind, s.points) {
        ("repeat", Some(n)) => parts.push(format!("{n} repeats")),
        (_, Some(n)) => parts.push(format!("sweep of {n} points")),
        _ => {}
    }
    if let Some(t) = &s.started_at {
        parts.push(format!("started {t}"));
    }
    if let Some(l) = &s.load {
        parts.push(l.clone());
    }
    if s.records {
        parts.push("with records".into());
    }
    parts.join(", ")
}

fn gate_line(g: &super::GateOutcome) -> String {
    let sig = match g.significance.significant {
        Some(true) => format!("significant: {}", g.significance.reason()),
        Some(false) => format!("not significant: {}", g.significance.reason()),
        None => "significance n/a".into(),
    };
    format!("{} ({sig})", g.message)
}

fn verdict(c: &Comparison) -> String {
    let failed = c.gates.iter().filter(|g| g.failed).count();
    match (c.gates.len(), failed) {
        (0, _) => "PASS (no --fail-on gates)".into(),
        (n, 0) => format!("PASS ({n} of {n} gates passed)"),
        (n, f) => format!("FAIL ({f} of {n} gates failed)"),
    }
}

fn goodput_brackets(s: &super::SweepComparison) -> Option<String> {
    let b = |g: &Option<crate::plan::sweep::Goodput>| {
        g.as_ref().map_or("none".into(), |g| {
            let hi = g.bracket.1.map_or("untested".into(), |h| format!("{h:.2}"));
            format!("{:.2}–{hi}", g.bracket.0)
        })
    };
    (s.base_goodput.is_some() || s.new_goodput.is_some()).then(|| {
        format!(
            "goodput brackets (search brackets, not confidence intervals): BASE {}, NEW {}",
            b(&s.base_goodput),
            b(&s.new_goodput)
        )
    })
}

/// The terminal table.
pub fn text(c: &Comparison) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "BASE  {}", side_line(&c.base));
    let _ = writeln!(out, "NEW   {}", side_line(&c.new));
    for w in &c.warnings {
        let _ = writeln!(out, "warning: {}", w.message);
    }
    for n in &c.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out.push('\n');
    let figures = Table::figures(&c.figures, |f| cells(f).to_vec());
    if !figures.is_empty() {
        out.push_str(&figures.text());
    }
    if let Some(s) = &c.sweep {
        if let Some(b) = goodput_brackets(s) {
            let _ = writeln!(out, "{b}");
        }
        if !s.points.is_empty() {
            let _ = writeln!(
                out,
                "\ncurve, matched by offered load ({}):",
                s.offered_unit
            );
            out.push_str(&Table::curve(s, |f| cells(f).to_vec()).text());
        }
        if let Some(e) = &s.explanation {
            let _ = writeln!(out, "note: {e}");
        }
    }
    let _ = writeln!(out, "\n{}", legend(c));
    if !c.gates.is_empty() {
        let _ = writeln!(out, "gates:");
        for g in &c.gates {
            let _ = writeln!(
                out,
                "  {:<4}  {}: {}",
                if g.failed { "FAIL" } else { "pass" },
                g.expression,
                gate_line(g)
            );
        }
    }
    let _ = writeln!(out, "result: {}", verdict(c));
    out
}

/// `a|b` → `a\|b`, and no backticks, inside Markdown.
fn md(s: &str) -> String {
    s.replace('|', "\\|").replace('`', "'")
}

/// A figure's Markdown row; bold when a gate on it failed.
fn md_cells(c: &Comparison, f: &Figure) -> Vec<String> {
    let failed = c.gates.iter().any(|g| g.failed && g.figure == f.name);
    let mut r = cells(f).to_vec();
    r[0] = format!("`{}`", r[0]);
    if failed {
        for x in r.iter_mut() {
            *x = format!("**{x}**");
        }
    }
    r
}

/// A pull-request comment: the verdict and the failed gates in the header
/// line, then warnings, gates, and the table.
pub fn markdown(c: &Comparison) -> String {
    let mut out = String::new();
    let failed: Vec<String> = c
        .gates
        .iter()
        .filter(|g| g.failed)
        .map(|g| format!("`{}` ({})", md(&g.expression), md(&g.message)))
        .collect();
    let header = if failed.is_empty() {
        format!("goodput compare: {}", verdict(c))
    } else {
        format!("goodput compare: FAIL — {}", failed.join(", "))
    };
    let _ = writeln!(out, "### {header}\n");
    for w in &c.warnings {
        let _ = writeln!(out, "> **Warning:** {}  ", md(&w.message));
    }
    for n in &c.notes {
        let _ = writeln!(out, "> Note: {}  ", md(n));
    }
    if !c.warnings.is_empty() || !c.notes.is_empty() {
        out.push('\n');
    }
    for g in &c.gates {
        let _ = writeln!(
            out,
            "- {} `{}`: {}",
            if g.failed { "**FAIL**" } else { "pass" },
            md(&g.expression),
            md(&gate_line(g))
        );
    }
    if !c.gates.is_empty() {
        out.push('\n');
    }
    let figures = Table::figures(&c.figures, |f| md_cells(c, f));
    if !figures.is_empty() {
        out.push_str(&figures.markdown());
        out.push('\n');
    }
    if let Some(s) = &c.sweep {
        if let Some(b) = goodput_brackets(s) {
            let _ = writeln!(out, "{}\n", md(&b));
        }
        if !s.points.is_empty() {
            let _ = writeln!(
                out,
                "Curve, matched by offered load ({}):\n",
                s.offered_unit
            );
            out.push_str(&Table::curve(s, |f| md_cells(c, f)).markdown());
            out.push('\n');
        }
        if let Some(e) = &s.explanation {
            let _ = writeln!(out, "Note: {}\n", md(e));
        }
    }
    let _ = writeln!(
        out,
        "<sub>BASE: `{}` ({}); NEW: `{}` ({}). {}.</sub>",
        md(&c.base.label),
        md(&side_details(&c.base)),
        md(&c.new.label),
        md(&side_details(&c.new)),
        md(&legend(c))
    );
    out
}

/// The comparison as a JSON document: `verdict` (`pass`/`fail`), `figures`,
/// `gates`, `warnings`, `notes`, `base`/`new`, and `sweep` for two sweeps.
pub fn json(c: &Comparison) -> Value {
    let mut v = serde_json::to_value(c).unwrap_or_default();
    v["kind"] = json!("compare");
    v["verdict"] = json!(if c.failed() { "fail" } else { "pass" });
    v["alpha"] = json!(ALPHA);
    v["tool"] = json!({"name": "goodput", "version": env!("CARGO_PKG_VERSION")});
    v
}
