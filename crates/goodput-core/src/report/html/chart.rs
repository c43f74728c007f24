//! One chart of the HTML report: series of points drawn as inline SVG by
//! plotters' SVG backend, inside a `<figure class="chart" data-chart="ID"
//! data-points="N">` with its title and an HTML legend.
//!
//! Guarantees the module doc of `report::html` promises: every data point
//! of every series is exactly one `<circle>` (nothing else in the SVG is a
//! circle: guides are lines, knee and goodput marks are polygons), and `N`
//! counts them. Points that cannot be placed (not finite, or not positive
//! on a log axis) are left out of both the drawing and the count.
//!
//! Axes are this module's own [`Scale`]: ticks at 1–2–5 steps, as many as
//! fit without their labels touching, on a log scale where the data spans
//! more than [`LOG_RATIO`] (a latency axis from 10 ms to 5 s), else linear.
//! All text plotters draws is ours (tick labels, axis titles); the SVG
//! backend escapes it. Names from results files (labels, series names) go
//! only into the HTML legend, through [`super::escape`].

use std::ops::Range;

use plotters::coord::ranged1d::{KeyPointHint, NoDefaultFormatting, Ranged, ValueFormatter};
use plotters::prelude::*;

use super::escape;

/// Above this max/min ratio an automatic axis is logarithmic.
pub(super) const LOG_RATIO: f64 = 50.0;

/// The SVG's own size (its viewBox); CSS scales it to the page width.
const WIDTH: u32 = 640;
const HEIGHT: u32 = 380;
/// Tick label and axis title sizes (plotters writes `font-size` as this
/// over 1.24: 17 is a 13.7 px font at the viewBox scale).
const LABEL_PX: u32 = 17;
const DESC_PX: u32 = 17;
/// A crude width of one label character at `LABEL_PX`, for spacing ticks.
const CHAR_PX: f64 = 8.5;
/// Marker radius (px); a series with more than `DENSE` points (a CDF's
/// 101 quantiles) gets small dots that read as the line itself.
const DOT_R: u32 = 3;
const DENSE_DOT_R: u32 = 1;
const DENSE: usize = 40;

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

/// The SLO threshold colour (not in the palette).
const GUIDE: (u8, u8, u8) = (200, 30, 30);
const INK: (u8, u8, u8) = (34, 34, 34);

fn rgb(c: (u8, u8, u8)) -> RGBColor {
    RGBColor(c.0, c.1, c.2)
}

fn hex(c: (u8, u8, u8)) -> String {
    format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2)
}

/// How a series joins its points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Line {
    Solid,
    Dashed,
}

/// One series: a name for the legend, a palette index and its points.
#[derive(Debug, Clone)]
pub(super) struct Series {
    pub name: String,
    pub colour: usize,
    pub line: Line,
    /// Hollow markers (a second statistic of the same file, e.g. p99 beside p50).
    pub hollow: bool,
    pub points: Vec<(f64, f64)>,
}

impl Series {
    pub fn new(name: impl Into<String>, colour: usize, points: Vec<(f64, f64)>) -> Series {
        Series {
            name: name.into(),
            colour,
            line: Line::Solid,
            hollow: false,
            points,
        }
    }

    pub fn dashed(mut self) -> Series {
        self.line = Line::Dashed;
        self.hollow = true;
        self
    }
}

/// A reference drawn across the chart, named in the legend.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Guide {
    /// A horizontal threshold (an SLO's latency limit on a latency axis).
    Horizontal { y: f64, name: String },
    /// A vertical threshold (an SLO's limit on a CDF's latency axis).
    Vertical { x: f64, name: String },
    /// A shaded span of x (the steady-state window).
    Span { x0: f64, x1: f64, name: String },
    /// The line y = x (achieved = offered).
    Diagonal { name: String },
}

/// The shape of an annotation mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Shape {
    /// The goodput point.
    Star,
    /// The throughput knee.
    Triangle,
    /// The latency-degradation knee.
    Diamond,
}

impl Shape {
    fn glyph(self) -> &'static str {
        match self {
            Shape::Star => "★",
            Shape::Triangle => "▲",
            Shape::Diamond => "◆",
        }
    }

    /// Outline in pixels around the mark's centre.
    fn outline(self) -> Vec<(i32, i32)> {
        match self {
            Shape::Triangle => vec![(0, -10), (9, 6), (-9, 6)],
            Shape::Diamond => vec![(0, -9), (8, 0), (0, 9), (-8, 0)],
            Shape::Star => (0..10)
                .map(|i| {
                    let r = if i % 2 == 0 { 11.0 } else { 4.5 };
                    let a = std::f64::consts::PI * (i as f64 / 5.0 - 0.5);
                    ((r * a.cos()).round() as i32, (r * a.sin()).round() as i32)
                })
                .collect(),
        }
    }
}

/// A point singled out (a knee, the goodput point): drawn as a polygon on
/// top of the series, in the series' colour, named in the legend by shape.
#[derive(Debug, Clone)]
pub(super) struct Mark {
    pub x: f64,
    pub y: f64,
    pub shape: Shape,
    pub colour: usize,
    /// Legend text for the shape (one entry per shape).
    pub name: String,
}

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

#[derive(Debug, Clone)]
pub(super) struct Axis {
    /// The title, with its unit: `TTFT (ms)`.
    pub title: String,
    pub kind: AxisKind,
}

impl Axis {
    pub fn new(title: impl Into<String>, kind: AxisKind) -> Axis {
        Axis {
            title: title.into(),
            kind,
        }
    }
}

/// A chart, ready to render.
#[derive(Debug, Clone)]
pub(super) struct Chart {
    /// `data-chart`: stable, for tests and links.
    pub id: String,
    pub title: String,
    /// A sentence under the chart: what is plotted, and how to read it.
    pub note: String,
    pub x: Axis,
    pub y: Axis,
    pub series: Vec<Series>,
    pub guides: Vec<Guide>,
    pub marks: Vec<Mark>,
}

/// Where the values lie: keeps the finite ones (positive ones on a log axis).
fn placeable(v: f64, log: bool) -> bool {
    v.is_finite() && (!log || v > 0.0)
}

impl Chart {
    pub fn new(id: &str, title: &str, x: Axis, y: Axis) -> Chart {
        Chart {
            id: id.into(),
            title: title.into(),
            note: String::new(),
            x,
            y,
            series: Vec::new(),
            guides: Vec::new(),
            marks: Vec::new(),
        }
    }

    pub fn note(mut self, note: impl Into<String>) -> Chart {
        self.note = note.into();
        self
    }

    /// Points that will be drawn, across all series.
    pub fn has_points(&self) -> bool {
        self.series.iter().any(|s| !s.points.is_empty())
    }

    /// The figure: title, SVG, legend, note.
    pub fn render(&self) -> String {
        let xs: Vec<f64> = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0))
            .collect();
        let ys: Vec<f64> = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .collect();
        // Thresholds are part of the range: where the data sits against the
        // SLO is the point of drawing it.
        let mut x_extra = Vec::new();
        let mut y_extra = Vec::new();
        for g in &self.guides {
            match g {
                Guide::Horizontal { y, .. } => y_extra.push(*y),
                Guide::Vertical { x, .. } => x_extra.push(*x),
                Guide::Span { x0, x1, .. } => x_extra.extend([*x0, *x1]),
                Guide::Diagonal { .. } => {}
            }
        }
        let x_log = wants_log(self.x.kind, &xs, &x_extra);
        let y_log = wants_log(self.y.kind, &ys, &y_extra);
        let keep = |p: &(f64, f64)| placeable(p.0, x_log) && placeable(p.1, y_log);
        let series: Vec<Series> = self
            .series
            .iter()
            .map(|s| Series {
                points: s.points.iter().copied().filter(keep).collect(),
                ..s.clone()
            })
            .collect();
        let count: usize = series.iter().map(|s| s.points.len()).sum();
        let pick = |v: &[f64], extra: &[f64], log: bool| -> Vec<f64> {
            v.iter()
                .chain(extra)
                .copied()
                .filter(|&x| placeable(x, log))
                .collect()
        };
        let xv = pick(&series_values(&series, true), &x_extra, x_log);
        let yv = pick(&series_values(&series, false), &y_extra, y_log);
        let y_scale = Scale::new(&yv, self.y.kind, y_log, f64::from(HEIGHT) - 90.0, false);
        let y_label_px = y_scale
            .major
            .iter()
            .map(|v| y_scale.label(*v).chars().count())
            .max()
            .unwrap_or(1) as f64
            * CHAR_PX;
        let y_area = (y_label_px + 36.0).round() as u32;
        let x_scale = Scale::new(
            &xv,
            self.x.kind,
            x_log,
            f64::from(WIDTH - y_area) - 30.0,
            true,
        );
        let svg = match self.draw(&series, x_scale, y_scale, y_area) {
            Ok(svg) => svg,
            Err(e) => format!(
                "<p class=\"warn\">This chart could not be drawn: {}</p>",
                escape(&e)
            ),
        };
        let mut out = String::new();
        out.push_str(&format!(
            "<figure class=\"chart\" data-chart=\"{}\" data-points=\"{count}\">\n<figcaption>{}</figcaption>\n",
            escape(&self.id),
            escape(&self.title)
        ));
        out.push_str(&svg);
        out.push_str(&self.legend(&series));
        if !self.note.is_empty() {
            out.push_str(&format!("<p class=\"note\">{}</p>\n", escape(&self.note)));
        }
        out.push_str("</figure>\n");
        out
    }

    fn draw(&self, series: &[Series], x: Scale, y: Scale, y_area: u32) -> Result<String, String> {
        let (x_lo, x_hi, y_lo, y_hi) = (x.lo, x.hi, y.lo, y.hi);
        let mut buf = String::new();
        {
            let root = SVGBackend::with_string(&mut buf, (WIDTH, HEIGHT)).into_drawing_area();
            root.fill(&WHITE).map_err(|e| e.to_string())?;
            let mut chart = ChartBuilder::on(&root)
                .margin_top(14)
                .margin_right(24)
                .margin_left(8)
                .margin_bottom(8)
                .x_label_area_size(52)
                .y_label_area_size(y_area)
                .build_cartesian_2d(x, y)
                .map_err(|e| e.to_string())?;
            let label = ("sans-serif", LABEL_PX).into_font().color(&rgb(INK));
            let desc = ("sans-serif", DESC_PX).into_font().color(&rgb(INK));
            chart
                .configure_mesh()
                .x_desc(self.x.title.as_str())
                .y_desc(self.y.title.as_str())
                .label_style(label)
                .axis_desc_style(desc)
                .bold_line_style(RGBColor(0, 0, 0).mix(0.12))
                .light_line_style(RGBColor(0, 0, 0).mix(0.04))
                .axis_style(RGBColor(90, 90, 90))
                .draw()
                .map_err(|e| e.to_string())?;
            let guide = ShapeStyle::from(&rgb(GUIDE)).stroke_width(2);
            for g in &self.guides {
                match g {
                    Guide::Horizontal { y, .. } if placeable(*y, false) => {
                        let pts = vec![(x_lo, *y), (x_hi, *y)];
                        chart
                            .draw_series(DashedLineSeries::new(pts, 8, 5, guide))
                            .map_err(|e| e.to_string())?;
                    }
                    Guide::Vertical { x, .. } if placeable(*x, false) => {
                        let pts = vec![(*x, y_lo), (*x, y_hi)];
                        chart
                            .draw_series(DashedLineSeries::new(pts, 8, 5, guide))
                            .map_err(|e| e.to_string())?;
                    }
                    Guide::Span { x0, x1, .. } => {
                        let fill = RGBColor(0, 114, 178).mix(0.07).filled();
                        chart
                            .draw_series(std::iter::once(Rectangle::new(
                                [(x0.max(x_lo), y_lo), (x1.min(x_hi), y_hi)],
                                fill,
                            )))
                            .map_err(|e| e.to_string())?;
                    }
                    Guide::Diagonal { .. } => {
                        let (a, b) = (x_lo.max(y_lo), x_hi.min(y_hi));
                        if a < b {
                            let style = ShapeStyle::from(&RGBColor(120, 120, 120)).stroke_width(1);
                            chart
                                .draw_series(DashedLineSeries::new(
                                    vec![(a, a), (b, b)],
                                    6,
                                    5,
                                    style,
                                ))
                                .map_err(|e| e.to_string())?;
                        }
                    }
                    _ => {}
                }
            }
            for s in series {
                let colour = rgb(PALETTE[s.colour % PALETTE.len()]);
                let stroke = ShapeStyle::from(&colour).stroke_width(2);
                match s.line {
                    Line::Solid if s.points.len() > 1 => {
                        chart
                            .draw_series(LineSeries::new(s.points.clone(), stroke))
                            .map_err(|e| e.to_string())?;
                    }
                    Line::Dashed if s.points.len() > 1 => {
                        chart
                            .draw_series(DashedLineSeries::new(s.points.clone(), 7, 4, stroke))
                            .map_err(|e| e.to_string())?;
                    }
                    _ => {}
                }
                let dot = if s.hollow {
                    ShapeStyle::from(&colour).stroke_width(2)
                } else {
                    colour.filled()
                };
                let r = if s.points.len() > DENSE {
                    DENSE_DOT_R
                } else {
                    DOT_R
                };
                chart
                    .draw_series(s.points.iter().map(|&p| Circle::new(p, r, dot)))
                    .map_err(|e| e.to_string())?;
            }
            for m in &self.marks {
                if !(placeable(m.x, false) && placeable(m.y, false)) {
                    continue;
                }
                let colour = rgb(PALETTE[m.colour % PALETTE.len()]);
                let outline = m.shape.outline();
                let mut closed = outline.clone();
                closed.push(outline[0]);
                chart
                    .draw_series(std::iter::once(
                        EmptyElement::at((m.x, m.y))
                            + Polygon::new(outline, colour.filled())
                            + PathElement::new(closed, ShapeStyle::from(&rgb(INK)).stroke_width(1)),
                    ))
                    .map_err(|e| e.to_string())?;
            }
            root.present().map_err(|e| e.to_string())?;
        }
        // The viewBox stays; CSS sets the displayed size.
        let labelled = format!("<svg role=\"img\" aria-label=\"{}\" ", escape(&self.title));
        Ok(buf.replacen("<svg ", &labelled, 1))
    }

    fn legend(&self, series: &[Series]) -> String {
        let mut items = Vec::new();
        if series.len() > 1 || !series.first().is_some_and(|s| s.name.is_empty()) {
            for s in series {
                let c = hex(PALETTE[s.colour % PALETTE.len()]);
                let line = match s.line {
                    Line::Solid => "<i class=\"ln\"></i>",
                    Line::Dashed => "<i class=\"ln dash\"></i>",
                };
                let dot = if s.hollow { "dot hollow" } else { "dot" };
                items.push(format!(
                    "<li style=\"--c:{c}\"><span class=\"key\">{line}<i class=\"{dot}\"></i></span>{}</li>",
                    escape(&s.name)
                ));
            }
        }
        let mut seen: Vec<&str> = Vec::new();
        for g in &self.guides {
            let (name, key) = match g {
                Guide::Horizontal { name, .. } | Guide::Vertical { name, .. } => (
                    name,
                    format!("<i class=\"ln dash\" style=\"--c:{}\"></i>", hex(GUIDE)),
                ),
                Guide::Span { name, .. } => (name, "<i class=\"span\"></i>".to_string()),
                Guide::Diagonal { name } => (name, "<i class=\"ln dash grey\"></i>".to_string()),
            };
            if name.is_empty() || seen.contains(&name.as_str()) {
                continue;
            }
            seen.push(name);
            items.push(format!(
                "<li><span class=\"key\">{key}</span>{}</li>",
                escape(name)
            ));
        }
        let mut shapes: Vec<Shape> = Vec::new();
        for m in &self.marks {
            if shapes.contains(&m.shape) {
                continue;
            }
            shapes.push(m.shape);
            items.push(format!(
                "<li><span class=\"glyph\">{}</span>{}</li>",
                m.shape.glyph(),
                escape(&m.name)
            ));
        }
        if items.is_empty() {
            return String::new();
        }
        format!("<ul class=\"legend\">{}</ul>\n", items.join(""))
    }
}

fn series_values(series: &[Series], x: bool) -> Vec<f64> {
    series
        .iter()
        .flat_map(|s| s.points.iter().map(move |p| if x { p.0 } else { p.1 }))
        .collect()
}

fn wants_log(kind: AxisKind, values: &[f64], extra: &[f64]) -> bool {
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
    lo: f64,
    hi: f64,
    log: bool,
    major: Vec<f64>,
    minor: Vec<f64>,
    /// Decimals of linear tick labels.
    decimals: usize,
}

impl Scale {
    /// `pixels`: the axis length; `horizontal`: labels side by side (their
    /// width limits the tick count), else stacked (their height does).
    fn new(values: &[f64], kind: AxisKind, log: bool, pixels: f64, horizontal: bool) -> Scale {
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

    fn label(&self, v: f64) -> String {
        if self.log {
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

/// A linear tick: fixed decimals, thousands as `k` from 10,000.
fn linear_label(v: f64, decimals: usize) -> String {
    let v = if v.abs() < 1e-12 { 0.0 } else { v };
    if v.abs() >= 10_000.0 {
        return format!("{}k", super::trim(format!("{:.3}", v / 1000.0)));
    }
    format!("{v:.decimals$}")
}

/// A log tick (1, 2, 5 × a power of ten): as short as it can be.
fn log_label(v: f64) -> String {
    if v >= 1e6 {
        format!("{}M", super::trim(format!("{:.1}", v / 1e6)))
    } else if v >= 10_000.0 {
        format!("{}k", super::trim(format!("{:.1}", v / 1e3)))
    } else if v >= 1.0 {
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
        assert_eq!(log_label(20_000.0), "20k");
        assert_eq!(log_label(0.5), "0.5");
    }

    #[test]
    fn automatic_axes_go_log_past_the_ratio() {
        assert!(wants_log(AxisKind::Auto, &[10.0, 5000.0], &[]));
        assert!(!wants_log(AxisKind::Auto, &[10.0, 400.0], &[]));
        assert!(!wants_log(AxisKind::Auto, &[0.0, 5000.0], &[]));
        assert!(!wants_log(AxisKind::FromZero, &[10.0, 5000.0], &[]));
    }
}
