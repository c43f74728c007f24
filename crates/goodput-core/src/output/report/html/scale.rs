//! An axis of the report's charts: its range, linear or logarithmic, and
//! its ticks, as a plotters coordinate (`Ranged`) so that plotters draws the
//! grid and the labels this module chose.
//!
//! Ticks step 1–2–5 and are as many as fit without their labels touching
//! (label widths are estimated from their length). An automatic axis is
//! logarithmic where its values span more than [`LOG_RATIO`] and are all
//! positive; a log axis labels 1, 2 and 5 of each decade, or fewer where
//! they would crowd, with the other integers as a lighter grid.

use std::ops::Range;

use plotters::coord::ranged1d::{KeyPointHint, NoDefaultFormatting, Ranged, ValueFormatter};

/// How an axis maps values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum AxisKind {
    /// Log where the values span more than [`LOG_RATIO`], else linear.
    Auto,
    /// Linear from zero (throughputs, counts).
    FromZero,
    /// Linear over a fixed range (a CDF's 0–100 %).
    Fixed(f64, f64),
}

/// Above this max/min ratio an automatic axis is logarithmic.
pub(super) const LOG_RATIO: f64 = 50.0;

/// A crude width of one tick label character, for spacing ticks.
pub(super) const CHAR_PX: f64 = 8.5;
/// The tick label font size (as given to plotters).
pub(super) const LABEL_PX: u32 = 17;

pub(super) fn wants_log(kind: AxisKind, values: &[f64], extra: &[f64]) -> bool {
    if kind != AxisKind::Auto {
        return false;
    }
    let finite: Vec<f64> = values
        .iter()
        .chain(extra)
        .copied()
        .filter(|v| v.is_finite())
        .collect();
    if finite.is_empty() || finite.iter().any(|&v| v <= 0.0) {
        return false;
    }
    let (lo, hi) = min_max(&finite);
    hi / lo > LOG_RATIO
}

fn min_max(v: &[f64]) -> (f64, f64) {
    v.iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
            (lo.min(x), hi.max(x))
        })
}

/// An axis: its range, whether it is logarithmic, and its ticks (major
/// ones labelled; minor ones a lighter grid).
#[derive(Debug, Clone)]
pub(super) struct Scale {
    pub lo: f64,
    pub hi: f64,
    log: bool,
    pub major: Vec<f64>,
    minor: Vec<f64>,
    /// Decimals of linear tick labels.
    decimals: usize,
}

impl Scale {
    /// `pixels`: the axis length; `horizontal`: labels side by side (their
    /// width limits the tick count), else stacked (their height does).
    pub fn new(values: &[f64], kind: AxisKind, log: bool, pixels: f64, horizontal: bool) -> Scale {
        let (mut lo, mut hi) = match kind {
            AxisKind::Fixed(a, b) => (a, b),
            _ if values.is_empty() => (0.0, 1.0),
            _ => min_max(values),
        };
        if kind == AxisKind::FromZero {
            lo = lo.min(0.0);
        }
        if log {
            return Scale::log(lo, hi, pixels, horizontal);
        }
        if hi - lo <= f64::EPSILON * hi.abs().max(1.0) {
            let pad = if hi == 0.0 { 1.0 } else { hi.abs() * 0.1 };
            (lo, hi) = (lo - pad, hi + pad);
            if kind == AxisKind::FromZero {
                lo = lo.max(0.0);
            }
        }
        let fits = |n: usize, step: f64| -> bool {
            let decimals = decimals_for(step);
            let widest = (0..=n)
                .map(|i| linear_label(lo + i as f64 * step, decimals).chars().count())
                .max()
                .unwrap_or(1) as f64;
            let room = if horizontal {
                widest * CHAR_PX + 18.0
            } else {
                f64::from(LABEL_PX) * 2.2
            };
            (n as f64) * room <= pixels
        };
        // The smallest 1–2–5 step whose labels fit.
        let span = hi - lo;
        let mut step = 10f64.powf((span / 12.0).log10().floor());
        let mut k = 0;
        loop {
            let s = step * [1.0, 2.0, 5.0][k % 3] * 10f64.powi((k / 3) as i32);
            let n = ((hi / s).ceil() - (lo / s).floor()) as usize;
            if n <= 10 && fits(n.max(1), s) || k > 30 {
                step = s;
                break;
            }
            k += 1;
        }
        let decimals = decimals_for(step);
        let (first, last) = ((lo / step).floor(), (hi / step).ceil());
        let (nlo, nhi) = match kind {
            AxisKind::Fixed(a, b) => (a, b),
            _ => (first * step, last * step),
        };
        let major: Vec<f64> = (0..=((last - first) as usize))
            .map(|i| (first + i as f64) * step)
            .filter(|v| *v >= nlo - step * 1e-9 && *v <= nhi + step * 1e-9)
            .collect();
        let minor: Vec<f64> = major
            .iter()
            .map(|v| v + step / 2.0)
            .filter(|v| *v < nhi)
            .collect();
        // A little room beyond the last ticks so marks on the edge show whole.
        let pad = (nhi - nlo) * 0.02;
        let lo_pad =
            if kind == AxisKind::FromZero && nlo >= 0.0 || matches!(kind, AxisKind::Fixed(..)) {
                nlo
            } else {
                nlo - pad
            };
        Scale {
            lo: lo_pad,
            hi: nhi + pad,
            log: false,
            major,
            minor,
            decimals,
        }
    }

    fn log(lo: f64, hi: f64, pixels: f64, horizontal: bool) -> Scale {
        let (lo, hi) = (lo / 1.25, hi * 1.25);
        let (d0, d1) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
        let ticks = |mults: &[f64], every: i32| -> Vec<f64> {
            (d0..=d1)
                .filter(|d| (d - d0) % every == 0)
                .flat_map(|d| mults.iter().map(move |m| m * 10f64.powi(d)))
                .filter(|v| *v >= lo && *v <= hi)
                .collect()
        };
        let fits = |t: &[f64]| -> bool {
            if horizontal {
                // Log ticks crowd at the top of each decade: check neighbours.
                let px = |v: f64| (v.ln() - lo.ln()) / (hi.ln() - lo.ln()) * pixels;
                t.windows(2).all(|w| {
                    let need = (log_label(w[0]).chars().count() + log_label(w[1]).chars().count())
                        as f64
                        * CHAR_PX
                        / 2.0
                        + 12.0;
                    px(w[1]) - px(w[0]) >= need
                })
            } else {
                t.len() as f64 * f64::from(LABEL_PX) * 2.0 <= pixels
            }
        };
        let mut major = ticks(&[1.0, 2.0, 5.0], 1);
        if !fits(&major) {
            major = ticks(&[1.0, 3.0], 1);
        }
        if !fits(&major) {
            major = ticks(&[1.0], 1);
        }
        let mut every = 2;
        while !fits(&major) && every < 10 {
            major = ticks(&[1.0], every);
            every += 1;
        }
        let minor: Vec<f64> = ticks(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0], 1)
            .into_iter()
            .filter(|v| !major.contains(v))
            .collect();
        Scale {
            lo,
            hi,
            log: true,
            major,
            minor,
            decimals: 0,
        }
    }

    fn fraction(&self, v: f64) -> f64 {
        if self.log {
            (v.ln() - self.lo.ln()) / (self.hi.ln() - self.lo.ln())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        }
    }

    /// A tick's label. From a thousand up it is written in thousands
    /// (`12.5k`) when the axis reaches 10,000, and in millions from a
    /// million when it reaches 10,000,000, so one axis never shows both
    /// `8000` and `10k`.
    pub fn label(&self, v: f64) -> String {
        let top = self.major.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        let scaled = |div: f64, unit: &str| {
            format!("{}{unit}", super::format::trim(format!("{:.3}", v / div)))
        };
        if top >= 1e7 && v.abs() >= 1e6 {
            scaled(1e6, "M")
        } else if top >= 1e4 && v.abs() >= 1e3 {
            scaled(1e3, "k")
        } else if self.log {
            log_label(v)
        } else {
            linear_label(v, self.decimals)
        }
    }
}

impl Ranged for Scale {
    type FormatOption = NoDefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let t = self.fraction(*value);
        let px = f64::from(limit.0) + t * f64::from(limit.1 - limit.0);
        px.round().clamp(-1e6, 1e6) as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            self.minor.clone()
        } else {
            self.major.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.lo..self.hi
    }
}

impl ValueFormatter<f64> for Scale {
    fn format_ext(&self, value: &f64) -> String {
        self.label(*value)
    }
}

fn decimals_for(step: f64) -> usize {
    (-step.log10().floor()).max(0.0) as usize
}

/// A linear tick: the step's decimals.
fn linear_label(v: f64, decimals: usize) -> String {
    let v = if v.abs() < 1e-12 { 0.0 } else { v };
    format!("{v:.decimals$}")
}

/// A log tick (1, 2, 5 × a power of ten): as short as it can be.
fn log_label(v: f64) -> String {
    if v >= 1.0 {
        format!("{v:.0}")
    } else {
        let d = (-v.log10().floor()) as usize;
        format!("{v:.d$}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_ticks_are_round_and_cover_the_data() {
        let s = Scale::new(&[3.0, 97.0], AxisKind::FromZero, false, 500.0, true);
        assert_eq!(s.major.first(), Some(&0.0));
        assert!(s.major.last().unwrap() >= &97.0);
        assert!(s.major.len() >= 3 && s.major.len() <= 11, "{:?}", s.major);
        assert!(s.lo <= 3.0 && s.hi >= 97.0);
    }

    #[test]
    fn log_ticks_step_one_two_five() {
        let s = Scale::log(10.0, 5000.0, 500.0, false);
        for v in [10.0, 20.0, 50.0, 100.0, 1000.0] {
            assert!(s.major.contains(&v), "{:?}", s.major);
        }
        assert_eq!(log_label(0.5), "0.5");
        assert_eq!(s.label(2000.0), "2000");
    }

    #[test]
    fn an_axis_past_ten_thousand_writes_thousands_throughout() {
        let s = Scale::new(&[4000.0, 13_000.0], AxisKind::Auto, false, 500.0, true);
        let labels: Vec<String> = s.major.iter().map(|v| s.label(*v)).collect();
        assert!(labels.contains(&"10k".to_string()), "{labels:?}");
        assert!(labels.iter().all(|l| l.ends_with('k')), "{labels:?}");
        let s = Scale::log(10.0, 50_000.0, 500.0, false);
        assert_eq!(
            (s.label(20.0), s.label(2000.0), s.label(20_000.0)),
            ("20".into(), "2k".into(), "20k".into())
        );
    }

    #[test]
    fn automatic_axes_go_log_past_the_ratio() {
        assert!(wants_log(AxisKind::Auto, &[10.0, 5000.0], &[]));
        assert!(!wants_log(AxisKind::Auto, &[10.0, 400.0], &[]));
        assert!(!wants_log(AxisKind::Auto, &[0.0, 5000.0], &[]));
        assert!(!wants_log(AxisKind::FromZero, &[10.0, 5000.0], &[]));
    }
}
