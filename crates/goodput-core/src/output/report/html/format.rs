//! The page's shared pieces, used by every part of the report: the
//! colour of each file, HTML escaping, numbers and latencies as the page
//! writes them, badges, table rows and the folded configuration. A leaf:
//! it imports nothing else of the report.

use crate::measure::stats::Estimate;

/// Series colours: the Okabe–Ito palette, distinguishable with the common
/// colour-vision deficiencies, darkened a touch for contrast on white.
pub(super) const PALETTE: [(u8, u8, u8); 8] = [
    (0, 114, 178),
    (213, 94, 0),
    (0, 158, 115),
    (204, 121, 167),
    (86, 180, 233),
    (230, 159, 0),
    (90, 90, 90),
    (170, 150, 0),
];

/// One file's place in the page: its label and its colour.
#[derive(Debug, Clone, Copy)]
pub(super) struct Source<'a> {
    pub label: &'a str,
    /// Index into the chart palette, by position in the input.
    pub colour: usize,
}

/// A file's colour key, as in the chart legends.
pub(super) fn swatch(colour: usize) -> String {
    let (r, g, b) = PALETTE[colour % PALETTE.len()];
    format!("<span class=\"key\" style=\"--c:#{r:02x}{g:02x}{b:02x}\"><i class=\"ln\"></i><i class=\"dot\"></i></span>")
}

/// Text made safe for HTML, in element content and in quoted attributes.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `12.500` → `12.5`, `3.000` → `3`.
pub(super) fn trim(s: String) -> String {
    if !s.contains('.') {
        return s;
    }
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A figure to about three significant digits, thousands grouped:
/// `1,465`, `20.7`, `8.07`, `0.00587`.
pub(super) fn num(x: f64) -> String {
    if !x.is_finite() {
        return "–".into();
    }
    let a = x.abs();
    if a >= 100.0 {
        let s = format!("{:.0}", a);
        let mut grouped = String::new();
        for (i, c) in s.chars().enumerate() {
            if i > 0 && (s.len() - i) % 3 == 0 {
                grouped.push(',');
            }
            grouped.push(c);
        }
        return if x < 0.0 {
            format!("-{grouped}")
        } else {
            grouped
        };
    }
    if a == 0.0 {
        return "0".into();
    }
    let decimals = (2.0 - a.log10().floor()).max(1.0) as usize;
    format!("{x:.decimals$}")
}

/// A set value (a rate asked for, a factor) without trailing zeros:
/// `2`, `12.5`, `0.2`.
pub(super) fn short(x: f64) -> String {
    trim(num(x))
}

/// A latency: `35.7 ms`, `3.76 s`.
pub(super) fn ms(x: f64) -> String {
    if x.is_finite() && x.abs() >= 1000.0 {
        format!("{} s", num(x / 1000.0))
    } else {
        format!("{} ms", num(x))
    }
}

/// A set latency (an SLO threshold): `200 ms`, `1.5 s`.
pub(super) fn ms_short(x: f64) -> String {
    if x.abs() >= 1000.0 {
        format!("{} s", short(x / 1000.0))
    } else {
        format!("{} ms", short(x))
    }
}

/// A share as a percentage: `12.3 %`.
pub(super) fn share(x: f64) -> String {
    format!("{} %", num(x * 100.0))
}

/// An estimate with its 95 % interval: value, then `[lo, hi]` smaller.
pub(super) fn estimate(e: &Estimate, fmt: fn(f64) -> String) -> String {
    if e.lo.is_none() && e.hi.is_none() {
        return format!("{} <span class=\"ci\">[open]</span>", escape(&fmt(e.value)));
    }
    let bound = |b: Option<f64>| b.map(fmt).unwrap_or_else(|| "–".into());
    format!(
        "{} <span class=\"ci\">[{}, {}]</span>",
        escape(&fmt(e.value)),
        escape(&bound(e.lo)),
        escape(&bound(e.hi))
    )
}

/// A pass / fail / inconclusive badge.
pub(super) fn badge(class: &str, text: &str) -> String {
    format!(
        "<span class=\"badge {}\">{}</span>",
        escape(class),
        escape(text)
    )
}

/// `<tr><th>name</th><td>…</td>…</tr>`, cells already HTML.
pub(super) fn row(name: &str, cells: &[String]) -> String {
    let mut out = format!("<tr><th scope=\"row\">{}</th>", escape(name));
    for c in cells {
        out.push_str("<td>");
        out.push_str(c);
        out.push_str("</td>");
    }
    out.push_str("</tr>\n");
    out
}

/// A table with one column per source, headed by its swatch and label.
pub(super) fn table_by_source(first: &str, sources: &[Source], rows: &[String]) -> String {
    let mut out =
        String::from("<div class=\"table-wrap\"><table class=\"by-source\">\n<thead><tr>");
    out.push_str(&format!("<th>{}</th>", escape(first)));
    for s in sources {
        out.push_str(&format!("<th>{}{}</th>", swatch(s.colour), escape(s.label)));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for r in rows {
        out.push_str(r);
    }
    out.push_str("</tbody></table></div>\n");
    out
}

/// A run's configuration as saved, pretty-printed and escaped, folded away.
pub(super) fn config_block(title: &str, config: &crate::output::config::RunConfig) -> String {
    let text = serde_json::to_string_pretty(&config.to_value()).unwrap_or_default();
    format!(
        "<details data-section=\"config\"><summary>{}</summary>\n<pre>{}</pre>\n</details>\n",
        escape(title),
        escape(&text)
    )
}
