//! The console's layout: a 50-column rule with a centred title, a label
//! padded to 40 columns before its value, and numbers and estimates as
//! every section prints them.

use std::fmt::Write;

use crate::measure::stats::Estimate;

pub(super) const WIDTH: usize = 50;

pub(super) fn rule(out: &mut String, title: &str, fill: char) {
    let pad = WIDTH.saturating_sub(title.len());
    let left = pad / 2;
    let _ = writeln!(
        out,
        "{}{}{}",
        fill.to_string().repeat(left),
        title,
        fill.to_string().repeat(pad - left)
    );
}

pub(super) fn line(out: &mut String, label: &str, value: impl std::fmt::Display) {
    let _ = writeln!(out, "{label:<40} {value}");
}

pub(super) fn num(x: f64) -> String {
    if x.abs() >= 1000.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

/// `182.40 [176.00, 190.20]`, an open side shown as `-`.
pub fn estimate(e: &Estimate) -> String {
    let side = |x: Option<f64>| x.map(num).unwrap_or_else(|| "-".into());
    if e.lo.is_none() && e.hi.is_none() {
        return format!("{} [open]", num(e.value));
    }
    format!("{} [{}, {}]", num(e.value), side(e.lo), side(e.hi))
}

/// The summary with each figure alone on its line, as vLLM prints it, and
/// the intervals in a block of their own after it (`--intervals-apart`): a
/// script that reads vLLM's summary with `grep 'P99 E2EL (ms):' | awk
/// '{print $NF}'` or `sed 's/[^0-9.]//g'` (vLLM's own auto-tune script)
/// reads goodput's. The block names each figure by its label in lower case
/// without the unit (`p99_e2el`), so no vLLM label matches it.
pub fn intervals_apart(text: &str) -> String {
    let mut body = String::with_capacity(text.len());
    let mut block = String::new();
    // A figure whose label repeats under another section (the TTFT from
    // the scheduled arrival beside the TTFT) is named with its section.
    let (mut section, mut keys) = (String::new(), Vec::new());
    for line in text.lines() {
        let title = line.trim_matches(|c| c == '-' || c == '=');
        if title.len() < line.len() && !title.trim().is_empty() {
            section = title.trim().to_lowercase();
        }
        match split_interval(line) {
            Some((figure, interval, mut key)) => {
                body.push_str(&figure);
                body.push('\n');
                if keys.contains(&key) {
                    key = format!("{key} ({section})");
                }
                keys.push(key.clone());
                let _ = writeln!(block, "{key:<40} {interval}");
            }
            None => {
                body.push_str(line);
                body.push('\n');
            }
        }
    }
    if !block.is_empty() {
        rule(&mut body, " 95% intervals (goodput) ", '-');
        body.push_str(&block);
        rule(&mut body, "", '=');
    }
    body
}

/// `Label (unit):   value [lo, hi] rest` as (`Label (unit):   value rest`,
/// `[lo, hi]`, `label`); `None` for a line without an interval.
fn split_interval(line: &str) -> Option<(String, String, String)> {
    let colon = line.find(':')?;
    let (label, after) = line.split_at(colon + 1);
    let open = after.find(" [")?;
    let close = open + after[open..].find(']')?;
    let value = after[..open].trim();
    if value.is_empty() || value.parse::<f64>().is_err() {
        return None;
    }
    let interval = &after[open + 1..=close];
    let figure = format!("{label}{}{}", &after[..open], &after[close + 1..]);
    let name = label.trim_end_matches(':');
    let name = name.split(" (").next().unwrap_or(name);
    let key = name.trim().to_lowercase().replace([' ', '-'], "_");
    Some((figure, interval.to_string(), key))
}
