//! The console's layout: a 50-column rule with a centred title, a label
//! padded to 40 columns before its value, and numbers and estimates as
//! every section prints them.

use std::fmt::Write;

use crate::stats::Estimate;

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
