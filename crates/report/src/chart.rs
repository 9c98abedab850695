//! SVG plots drawn with `plotters`: lines over a numeric axis (the anytime bound, the lanes
//! sweep, fits) and grouped bars over categories (estimate against measurement, ablations,
//! placement outcomes). Axes and text are drawn in `currentColor`, so a plot follows the page's
//! light or dark colours; series keep their own colours, chosen to read on both.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::Error;

/// Series colours (readable on white and on near-black).
pub const PALETTE: [RGBColor; 6] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x8c, 0x8c),
];

/// The CSS colour of palette entry `i`, for legends written in HTML.
pub fn css_color(i: usize) -> String {
    let RGBColor(r, g, b) = PALETTE[i % PALETTE.len()];
    format!("#{r:02x}{g:02x}{b:02x}")
}

/// How a line series is drawn.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Line {
    /// Straight segments between points, points marked.
    Points,
    /// A step function: each value holds until the next point (the anytime bound).
    Steps,
    /// A horizontal reference at the first point's y, across the whole plot, dashed.
    Reference,
}

/// A named series of points, its palette colour index and how it is drawn.
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    pub color: usize,
    pub line: Line,
}

/// A plot of series over a numeric x axis.
pub struct LineChart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<Series>,
    /// Start the y axis at zero (else at the data's minimum less a margin).
    pub y_from_zero: bool,
    pub size: (u32, u32),
}

/// One group of bars: a name (legend) and a value per category (`None`: no bar).
pub struct Bars {
    pub name: String,
    pub values: Vec<Option<f64>>,
    pub color: usize,
}

/// Grouped bars over named categories.
pub struct BarChart {
    pub title: String,
    pub y_label: String,
    pub categories: Vec<String>,
    pub groups: Vec<Bars>,
    pub size: (u32, u32),
}

fn plot_error(title: &str) -> impl Fn(String) -> Error + '_ {
    move |cause| Error::Plot {
        title: title.to_string(),
        cause,
    }
}

/// Axis range with a margin, never empty.
fn padded(lo: f64, hi: f64, from_zero: bool) -> (f64, f64) {
    let lo = if from_zero { lo.min(0.0) } else { lo };
    let span = (hi - lo).abs();
    let pad = if span > 0.0 {
        span * 0.08
    } else {
        hi.abs().max(1.0) * 0.1
    };
    let lo = if from_zero && lo >= 0.0 {
        0.0
    } else {
        lo - pad
    };
    (lo, hi + pad)
}

/// Tick label: short, with an SI prefix for large values.
fn tick(v: f64) -> String {
    let a = v.abs();
    if a >= 1e9 {
        format!("{:.3}G", v / 1e9)
    } else if a >= 1e6 {
        format!("{:.3}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.1}k", v / 1e3)
    } else if a >= 10.0 || v == v.trunc() {
        format!("{v:.0}")
    } else {
        format!("{v:.3}")
    }
}

/// Draws with `draw` on an SVG canvas of `size` and returns the SVG, black turned into the
/// page's text colour.
fn render(
    title: &str,
    size: (u32, u32),
    draw: impl FnOnce(&DrawingArea<SVGBackend, Shift>) -> Result<(), String>,
) -> Result<String, Error> {
    let err = plot_error(title);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        draw(&root).map_err(&err)?;
        root.present().map_err(|e| err(e.to_string()))?;
    }
    Ok(svg.replace("\"#000000\"", "\"currentColor\""))
}

impl LineChart {
    /// The plot as an SVG element.
    pub fn svg(&self) -> Result<String, Error> {
        let err = plot_error(&self.title);
        let finite = |p: &&(f64, f64)| p.0.is_finite() && p.1.is_finite();
        let points: Vec<(f64, f64)> = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().filter(finite).copied())
            .collect();
        if points.is_empty() {
            return Err(err("no finite points".into()));
        }
        let fold = |f: fn(f64, f64) -> f64, init: f64, pick: fn(&(f64, f64)) -> f64| {
            points.iter().map(pick).fold(init, f)
        };
        let (x_lo, x_hi) = padded(
            fold(f64::min, f64::INFINITY, |p| p.0),
            fold(f64::max, f64::NEG_INFINITY, |p| p.0),
            true,
        );
        let (y_lo, y_hi) = padded(
            fold(f64::min, f64::INFINITY, |p| p.1),
            fold(f64::max, f64::NEG_INFINITY, |p| p.1),
            self.y_from_zero,
        );
        render(&self.title, self.size, |root| {
            self.draw(root, (x_lo, x_hi), (y_lo, y_hi))
                .map_err(|e| e.to_string())
        })
    }

    fn draw(
        &self,
        root: &DrawingArea<SVGBackend, Shift>,
        (x_lo, x_hi): (f64, f64),
        (y_lo, y_hi): (f64, f64),
    ) -> Result<(), Box<dyn std::error::Error + '_>> {
        let mut chart = ChartBuilder::on(root)
            .caption(&self.title, ("sans-serif", 15))
            .margin(8)
            .x_label_area_size(36)
            .y_label_area_size(64)
            .build_cartesian_2d(x_lo..x_hi, y_lo..y_hi)?;
        chart
            .configure_mesh()
            .x_desc(self.x_label.as_str())
            .y_desc(self.y_label.as_str())
            .x_label_formatter(&|v| tick(*v))
            .y_label_formatter(&|v| tick(*v))
            .light_line_style(BLACK.mix(0.05))
            .draw()?;
        for s in &self.series {
            let color = PALETTE[s.color % PALETTE.len()];
            let pts: Vec<(f64, f64)> = s
                .points
                .iter()
                .filter(|p| p.0.is_finite() && p.1.is_finite())
                .copied()
                .collect();
            let drawn = match s.line {
                Line::Points => {
                    chart.draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))?;
                    chart.draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))?
                }
                Line::Steps => {
                    let mut stepped = Vec::with_capacity(pts.len() * 2);
                    for (i, &(x, y)) in pts.iter().enumerate() {
                        if i > 0 {
                            stepped.push((x, pts[i - 1].1));
                        }
                        stepped.push((x, y));
                    }
                    chart.draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
                    chart.draw_series(LineSeries::new(stepped, color.stroke_width(2)))?
                }
                Line::Reference => {
                    let Some(&(_, y)) = pts.first() else { continue };
                    chart.draw_series(DashedLineSeries::new(
                        vec![(x_lo, y), (x_hi, y)],
                        6,
                        4,
                        color.stroke_width(2),
                    ))?
                }
            };
            drawn.label(s.name.as_str()).legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2))
            });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.0))
            .border_style(BLACK.mix(0.3))
            .draw()?;
        Ok(())
    }
}

impl BarChart {
    /// The plot as an SVG element.
    pub fn svg(&self) -> Result<String, Error> {
        let err = plot_error(&self.title);
        let top = self
            .groups
            .iter()
            .flat_map(|g| g.values.iter().flatten())
            .filter(|v| v.is_finite())
            .fold(0.0f64, |a, &b| a.max(b));
        if self.categories.is_empty() || top <= 0.0 {
            return Err(err("no bars to draw".into()));
        }
        render(&self.title, self.size, |root| {
            self.draw(root, top * 1.35).map_err(|e| e.to_string())
        })
    }

    fn draw(
        &self,
        root: &DrawingArea<SVGBackend, Shift>,
        top: f64,
    ) -> Result<(), Box<dyn std::error::Error + '_>> {
        let n = self.categories.len();
        // Rotated names need room for the longest (about 7 px a character at 12 px).
        let longest = self
            .categories
            .iter()
            .map(|c| c.chars().count())
            .max()
            .unwrap_or(0);
        let label_rows = if n > 8 {
            (longest as u32 * 7 + 12).clamp(40, 200)
        } else {
            40
        };
        let mut chart = ChartBuilder::on(root)
            .caption(&self.title, ("sans-serif", 15))
            .margin(8)
            .x_label_area_size(label_rows)
            .y_label_area_size(64)
            .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), 0.0f64..top)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_desc(self.y_label.as_str())
            .y_label_formatter(&|v| tick(*v))
            .light_line_style(BLACK.mix(0.05))
            .draw()?;
        let groups = self.groups.len().max(1) as f64;
        let width = 0.8 / groups;
        for (g, bars) in self.groups.iter().enumerate() {
            let color = PALETTE[bars.color % PALETTE.len()];
            let left = -0.4 + g as f64 * width;
            let rects: Vec<Rectangle<(f64, f64)>> = bars
                .values
                .iter()
                .enumerate()
                .filter_map(|(i, v)| {
                    let v = (*v)?;
                    v.is_finite().then(|| {
                        let x = i as f64 + left;
                        Rectangle::new([(x, 0.0), (x + width * 0.92, v)], color.filled())
                    })
                })
                .collect();
            chart
                .draw_series(rects)?
                .label(bars.name.as_str())
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled())
                });
        }
        // Category names under the axis (the top third stays free for the legend), rotated when there are many.
        let style = ("sans-serif", 12).into_font().color(&BLACK);
        for (i, name) in self.categories.iter().enumerate() {
            let (x, y) = chart.backend_coord(&(i as f64, 0.0));
            let text = if n > 8 {
                Text::new(
                    name.clone(),
                    (x - 4, y + 6),
                    style.clone().transform(FontTransform::Rotate90),
                )
            } else {
                Text::new(
                    name.clone(),
                    (x, y + 8),
                    style.clone().pos(Pos::new(HPos::Center, VPos::Top)),
                )
            };
            root.draw(&text)?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.0))
            .border_style(BLACK.mix(0.3))
            .draw()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_chart_draws_its_series_and_legend() {
        let chart = LineChart {
            title: "bound over time".into(),
            x_label: "s".into(),
            y_label: "pps".into(),
            series: vec![
                Series {
                    name: "bound".into(),
                    points: vec![(0.0, 1e6), (0.5, 2e6), (1.0, 3e6)],
                    color: 0,
                    line: Line::Steps,
                },
                Series {
                    name: "naive".into(),
                    points: vec![(0.0, 1e6)],
                    color: 5,
                    line: Line::Reference,
                },
            ],
            y_from_zero: true,
            size: (500, 300),
        };
        let svg = chart.svg().unwrap();
        assert!(svg.starts_with("<svg"));
        assert!(svg.contains("bound over time"));
        assert!(svg.contains(">\nnaive\n<") || svg.contains(">naive<"));
        assert!(svg.contains("<polyline"), "the series is drawn");
        assert!(!svg.contains("#000000"), "axes follow the page colour");
    }

    #[test]
    fn a_bar_chart_draws_a_bar_per_value_and_names_categories() {
        let chart = BarChart {
            title: "t".into(),
            y_label: "pps".into(),
            categories: vec!["path 0".into(), "path 1".into()],
            groups: vec![
                Bars {
                    name: "estimate".into(),
                    values: vec![Some(2.0), Some(3.0)],
                    color: 0,
                },
                Bars {
                    name: "measured".into(),
                    values: vec![Some(2.5), None],
                    color: 1,
                },
            ],
            size: (500, 300),
        };
        let svg = chart.svg().unwrap();
        let fill = css_color(1).to_uppercase();
        let bars = svg
            .to_uppercase()
            .matches(&format!("FILL=\"{fill}\""))
            .count();
        assert!(bars >= 2, "one measured bar and its legend swatch: {bars}");
        assert!(svg.contains("path 1"));
    }

    #[test]
    fn nothing_to_draw_is_an_error() {
        let chart = BarChart {
            title: "empty".into(),
            y_label: String::new(),
            categories: vec![],
            groups: vec![],
            size: (100, 100),
        };
        assert!(chart.svg().is_err());
    }
}
