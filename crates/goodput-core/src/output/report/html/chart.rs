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
//! Axes are [`Scale`]s: ticks at 1–2–5 steps, as many as
//! fit without their labels touching, on a log scale where the data spans
//! more than `scale::LOG_RATIO` (a latency axis from 10 ms to 5 s), else linear.
//! All text plotters draws is ours (tick labels, axis titles); the SVG
//! backend escapes it. Names from results files (labels, series names) go
//! only into the HTML legend, through [`super::format::escape`].

use plotters::prelude::*;

use super::format::{escape, PALETTE};
use super::scale::{wants_log, AxisKind, Scale, CHAR_PX, LABEL_PX};

/// The SVG's own size (its viewBox); CSS scales it to the page width.
const WIDTH: u32 = 640;
const HEIGHT: u32 = 380;
/// Axis title size (plotters writes `font-size` as this over 1.24: 17 is
/// a 13.7 px font at the viewBox scale); tick labels are `LABEL_PX`.
const DESC_PX: u32 = 17;
/// Marker radius (px); a series with more than `DENSE` points (a CDF's
/// 101 quantiles) gets small dots that read as the line itself.
const DOT_R: u32 = 3;
const DENSE_DOT_R: u32 = 1;
const DENSE: usize = 40;

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
    /// A staircase through the points, in their order: across to the next
    /// point's x, then up or down to its y (a frontier's step function).
    Step,
    /// Points only, not joined (a search's short exploring points).
    None,
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

    /// Joined as a staircase: see [`Line::Step`].
    pub fn step(mut self) -> Series {
        self.line = Line::Step;
        self
    }

    /// Hollow points, not joined: see [`Line::None`].
    pub fn unjoined(mut self) -> Series {
        self.line = Line::None;
        self.hollow = true;
        self
    }
}

/// The staircase through `points` (by x rising): from each point straight
/// up or down to the next one's level, then across to it, so that the
/// level between two points is the right-hand one's (a Pareto frontier:
/// the most throughput a point at least this interactive gave).
fn staircase(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut path = Vec::with_capacity(points.len() * 2);
    for (i, &p) in points.iter().enumerate() {
        if i > 0 {
            path.push((points[i - 1].0, p.1));
        }
        path.push(p);
    }
    path
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

    /// The SVG: axes and grid, then the guides, the series and the marks,
    /// each drawn over the one before.
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
            let bounds = ((x_lo, x_hi), (y_lo, y_hi));
            self.draw_guides(&mut chart, bounds)?;
            draw_series(&mut chart, series)?;
            self.draw_marks(&mut chart)?;
            root.present().map_err(|e| e.to_string())?;
        }
        // The viewBox stays; CSS sets the displayed size.
        let labelled = format!("<svg role=\"img\" aria-label=\"{}\" ", escape(&self.title));
        Ok(buf.replacen("<svg ", &labelled, 1))
    }

    /// The guides under the data: SLO thresholds as dashed lines across
    /// the plot, the steady-state span shaded, the diagonal y = x.
    fn draw_guides(
        &self,
        chart: &mut Plot,
        bounds: ((f64, f64), (f64, f64)),
    ) -> Result<(), String> {
        let ((x_lo, x_hi), (y_lo, y_hi)) = bounds;
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
                            .draw_series(DashedLineSeries::new(vec![(a, a), (b, b)], 6, 5, style))
                            .map_err(|e| e.to_string())?;
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// The knee and goodput marks, on top of the series.
    fn draw_marks(&self, chart: &mut Plot) -> Result<(), String> {
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
        Ok(())
    }

    fn legend(&self, series: &[Series]) -> String {
        let mut items = Vec::new();
        if series.len() > 1 || !series.first().is_some_and(|s| s.name.is_empty()) {
            for s in series {
                let c = hex(PALETTE[s.colour % PALETTE.len()]);
                let line = match s.line {
                    Line::Solid | Line::Step => "<i class=\"ln\"></i>",
                    Line::Dashed => "<i class=\"ln dash\"></i>",
                    Line::None => "",
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

/// The plot area plotters draws into, on the report's own axes.
type Plot<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<Scale, Scale>>;

/// Each series as its line (solid or dashed) and one circle per point:
/// filled, or hollow for a series' second statistic; small where dense.
fn draw_series(chart: &mut Plot, series: &[Series]) -> Result<(), String> {
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
            Line::Step if s.points.len() > 1 => {
                chart
                    .draw_series(LineSeries::new(staircase(&s.points), stroke))
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
    Ok(())
}

fn series_values(series: &[Series], x: bool) -> Vec<f64> {
    series
        .iter()
        .flat_map(|s| s.points.iter().map(move |p| if x { p.0 } else { p.1 }))
        .collect()
}
