//! `p4 fit --html`: a fitted target model against the measurements it was fitted to, the way
//! paper 001 validates its model: each measured pipeline beside the model's estimate of it
//! (Fig. 5's cases, Table III's error), and the extra latency of added tables beside the fitted
//! curve f(γ) = q·γ² + l·γ (Fig. 6 and Eq. 1).
//!
//! The page reads two documents: the model exactly as `p4 fit --json` prints it, and the
//! measurements the command read, each with the fitted model's estimate of it (the `p4 latency
//! --json` estimate object), so no part of the model is evaluated here.

use std::collections::BTreeMap;

use serde_json::Value;

use super::ns;
use crate::chart::{BarChart, Bars, Line, LineChart, Series};
use crate::html::{esc, figure, missing, need_f64, number, str_at, table, Page};
use crate::Error;

const MODEL: &str = "p4 fit --json";
const MEASURED: &str = "p4 fit measurements";

/// One measurement with the model's estimate of it.
struct Point<'a> {
    case: &'a str,
    /// `α, β, actions`: the pipeline, which names the model's cell.
    pipeline: String,
    gamma: f64,
    measured: f64,
    /// The model's cell for the pipeline (Table II's part).
    cell: f64,
    /// The model's f(γ) (Eq. 1's part).
    tables: f64,
    estimate: f64,
}

fn points(measurements: &Value) -> Result<Vec<Point<'_>>, Error> {
    let list = measurements.as_array().ok_or_else(|| Error::Input {
        document: MEASURED.into(),
        what: "not an array of measurements".into(),
    })?;
    list.iter()
        .map(|m| {
            let estimate = m.get("estimate").ok_or_else(|| Error::Input {
                document: MEASURED.into(),
                what: format!("measurement {} has no estimate", m["case"]),
            })?;
            let breakdown = &estimate["breakdown"];
            Ok(Point {
                case: str_at(m, "case").unwrap_or("?"),
                pipeline: format!(
                    "α = {}, β = {}, {}",
                    m["alpha"],
                    m["beta"],
                    str_at(m, "actions").unwrap_or("?")
                ),
                gamma: need_f64(MEASURED, m, "gamma")?,
                measured: need_f64(MEASURED, m, "latency_ns")?,
                cell: need_f64(MEASURED, breakdown, "parse_and_modify_ns")?,
                tables: need_f64(MEASURED, breakdown, "tables_ns")?,
                estimate: need_f64(MEASURED, estimate, "latency_ns")?,
            })
        })
        .collect()
}

/// The fit's error figures over all measurements (estimate − measured).
struct Errors {
    mean_absolute: f64,
    root_mean_square: f64,
    worst: f64,
    worst_case: String,
    mean_absolute_percent: f64,
}

fn errors(points: &[Point]) -> Errors {
    let n = points.len().max(1) as f64;
    let error = |p: &Point| p.estimate - p.measured;
    let worst = points
        .iter()
        .max_by(|a, b| error(a).abs().total_cmp(&error(b).abs()));
    Errors {
        mean_absolute: points.iter().map(|p| error(p).abs()).sum::<f64>() / n,
        root_mean_square: (points.iter().map(|p| error(p).powi(2)).sum::<f64>() / n).sqrt(),
        worst: worst.map_or(0.0, error),
        worst_case: worst.map_or(String::new(), |p| p.case.to_string()),
        mean_absolute_percent: 100.0
            * points
                .iter()
                .filter(|p| p.measured > 0.0)
                .map(|p| (error(p) / p.measured).abs())
                .sum::<f64>()
            / n,
    }
}

/// The page of a `p4 fit` run: `model` as `--json` prints it, `measurements` as described in
/// the module comment.
pub fn fit_page(model: &Value, measurements: &Value) -> Result<String, Error> {
    let name = str_at(model, "name").unwrap_or("?");
    let source = str_at(model, "source").unwrap_or("");
    let curve = model.get("tables").ok_or_else(|| Error::Input {
        document: MODEL.into(),
        what: "no `tables` curve".into(),
    })?;
    let quadratic = need_f64(MODEL, curve, "quadratic")?;
    let linear = need_f64(MODEL, curve, "linear")?;
    let max_gamma = need_f64(MODEL, curve, "max_gamma")?;
    let points = points(measurements)?;
    if points.is_empty() {
        return Err(Error::Input {
            document: MEASURED.into(),
            what: "no measurement".into(),
        });
    }
    let e = errors(&points);

    let mut page = Page::new(
        &format!("P4 latency model `{name}`"),
        &format!("{source} (paper 001's method: Table II's cells and Eq. 1's curve)"),
    );
    page.section(
        "fit",
        "The fit",
        format!(
            "<p>{} measurements; tables: f(γ) = {}·γ² + {}·γ ns for γ ≤ {}. The estimate misses \
             a measurement by {} on average (root mean square {}, {} of the measured latency); \
             the worst is {} by {}.</p>",
            points.len(),
            number("/tables/quadratic", quadratic, &format!("{quadratic:.3}")),
            number("/tables/linear", linear, &format!("{linear:.3}")),
            number("/tables/max_gamma", max_gamma, &max_gamma.to_string()),
            number(
                "mean_absolute_error_ns",
                e.mean_absolute,
                &ns(e.mean_absolute)
            ),
            number("rms_error_ns", e.root_mean_square, &ns(e.root_mean_square)),
            number(
                "mean_absolute_percent_error",
                e.mean_absolute_percent,
                &format!("{:.2}%", e.mean_absolute_percent)
            ),
            esc(&e.worst_case),
            number("worst_error_ns", e.worst, &format!("{:+.2} ns", e.worst)),
        ) + &cells_table(model)?,
    );
    page.section("measured", "Measured against the model", measured(&points)?);
    page.section("tables", "Added tables (Eq. 1)", table_curve(&points)?);
    page.footer(format!(
        "Rendered from <code>linerate p4 fit --json</code> (model {}) and the measurements it \
         read, each with the fitted model's estimate.",
        esc(name)
    ));
    Ok(page.finish())
}

/// The model's cells (Table II's shape).
fn cells_table(model: &Value) -> Result<String, Error> {
    let cells = model["base"].as_array().ok_or_else(|| Error::Input {
        document: MODEL.into(),
        what: "no `base` cells".into(),
    })?;
    let rows = cells
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let latency = need_f64(MODEL, c, "ns")?;
            Ok(vec![
                c["alpha"].to_string(),
                c["beta"].to_string(),
                esc(str_at(c, "actions").unwrap_or("?")),
                number(&format!("/base/{i}/ns"), latency, &ns(latency)),
            ])
        })
        .collect::<Result<Vec<_>, Error>>()?;
    Ok(format!(
        "<h3>Cells: parsing and modification without added tables</h3>{}",
        table("cells", &["α", "β", "actions", "latency"], &rows)
    ))
}

/// Every measurement beside its estimate (Fig. 5's cases, Table III's error).
fn measured(points: &[Point]) -> Result<String, Error> {
    let chart = BarChart {
        title: "Measured and estimated latency per measurement".into(),
        y_label: "ns".into(),
        categories: points.iter().map(|p| p.case.to_string()).collect(),
        groups: vec![
            Bars {
                name: "measured".into(),
                values: points.iter().map(|p| Some(p.measured)).collect(),
                color: 1,
            },
            Bars {
                name: "fitted model".into(),
                values: points.iter().map(|p| Some(p.estimate)).collect(),
                color: 0,
            },
        ],
        // Wide enough that each case keeps its two bars apart.
        size: ((24 * points.len() as u32).clamp(640, 1240), 380),
    }
    .svg()?;
    let rows: Vec<Vec<String>> = points
        .iter()
        .map(|p| {
            let error = p.estimate - p.measured;
            vec![
                esc(p.case),
                esc(&p.pipeline),
                p.gamma.to_string(),
                esc(&ns(p.measured)),
                esc(&ns(p.cell)),
                esc(&ns(p.tables)),
                esc(&ns(p.estimate)),
                format!("{error:+.2} ns"),
                if p.measured > 0.0 {
                    format!("{:+.2}%", 100.0 * error / p.measured)
                } else {
                    "-".into()
                },
            ]
        })
        .collect();
    Ok(figure(
        "measured",
        &chart,
        "Each measurement (paper 001 Fig. 5 shows the Agilio CX's) and what the fitted model \
         estimates for it: its cell plus f(γ).",
    ) + "<div class=\"scroll\">"
        + &table(
            "measurements",
            &[
                "case", "pipeline", "γ", "measured", "cell", "f(γ)", "estimate", "error", "error %",
            ],
            &rows,
        )
        + "</div>")
}

/// The latency measured beyond each pipeline's cell against the fitted f(γ) (Fig. 6, Eq. 1).
fn table_curve(points: &[Point]) -> Result<String, Error> {
    // One series per pipeline that was measured with added tables, in γ order.
    let mut by_pipeline: BTreeMap<&str, Vec<(f64, f64)>> = BTreeMap::new();
    for p in points {
        by_pipeline
            .entry(&p.pipeline)
            .or_default()
            .push((p.gamma, p.measured - p.cell));
    }
    by_pipeline.retain(|_, pts| pts.iter().any(|&(gamma, _)| gamma > 0.0));
    if by_pipeline.is_empty() {
        return Ok(missing(
            "No measurement has added tables (γ > 0): the fitted curve is f(γ) = 0.",
        ));
    }
    let mut curve: Vec<(f64, f64)> = points.iter().map(|p| (p.gamma, p.tables)).collect();
    curve.sort_by(|a, b| a.0.total_cmp(&b.0));
    curve.dedup_by(|a, b| a.0 == b.0);
    let mut series = Vec::new();
    for (i, (pipeline, pts)) in by_pipeline.iter_mut().enumerate() {
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        series.push(Series {
            name: format!("measured, {pipeline}"),
            points: pts.clone(),
            // Palette entry 0 is the fit's; the measured pipelines take the others in turn.
            color: 1 + i % 5,
            line: Line::Points,
        });
    }
    // The fit last, so that it is drawn over the measurements it runs through.
    series.push(Series {
        name: "fitted f(γ)".into(),
        points: curve.clone(),
        color: 0,
        line: Line::Points,
    });
    let chart = LineChart {
        title: "Extra latency of added tables".into(),
        x_label: "added tables γ".into(),
        y_label: "ns beyond the cell".into(),
        series,
        y_from_zero: true,
        size: (640, 360),
    }
    .svg()?;
    let rows: Vec<Vec<String>> = curve
        .iter()
        .map(|&(gamma, f)| vec![gamma.to_string(), esc(&ns(f))])
        .collect();
    Ok(figure(
        "tables",
        &chart,
        "Each measurement's latency beyond its pipeline's cell (the table above lists it as \
         measured − cell) and the least-squares curve through the origin; paper 001 Fig. 6 and \
         Eq. 1 are the Agilio CX's.",
    ) + &table("curve", &["γ", "fitted f(γ)"], &rows))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn measurement(case: &str, gamma: u32, measured: f64, cell: f64, tables: f64) -> Value {
        json!({
            "case": case, "alpha": 2, "beta": 1, "gamma": gamma, "actions": "implicit",
            "latency_ns": measured,
            "estimate": {"latency_ns": cell + tables,
                         "breakdown": {"parse_and_modify_ns": cell, "tables_ns": tables}}
        })
    }

    #[test]
    fn the_page_draws_measured_against_fitted_and_gives_the_error() {
        let model = json!({
            "name": "host", "source": "fitted to m.csv",
            "base": [{"alpha": 2, "beta": 1, "actions": "implicit", "ns": 100.0}],
            "tables": {"quadratic": 1.0, "linear": 10.0, "max_gamma": 2}
        });
        let measured = json!([
            measurement("g0", 0, 100.0, 100.0, 0.0),
            measurement("g1", 1, 112.0, 100.0, 11.0),
            measurement("g2", 2, 123.0, 100.0, 24.0),
        ]);
        let html = fit_page(&model, &measured).unwrap();
        assert_eq!(html.matches("<svg").count(), 2, "bars and the table curve");
        assert!(html.contains(r#"data-key="/tables/linear" data-value="10""#));
        assert!(html.contains(r#"data-key="/base/0/ns" data-value="100""#));
        // Errors −1 and +1 ns on g1 and g2: mean absolute 2/3 ns.
        assert!(html.contains(&format!(
            r#"data-key="mean_absolute_error_ns" data-value="{}""#,
            2.0 / 3.0
        )));
        assert!(
            html.contains("<td>112 ns</td>"),
            "a measured bar's value is tabulated"
        );
        assert!(html.contains("<td>-1.00 ns</td>"));
    }

    #[test]
    fn measurements_without_estimates_are_refused() {
        let model = json!({"name": "m", "tables": {"quadratic": 0, "linear": 0, "max_gamma": 0}});
        let e = fit_page(&model, &json!([{"case": "x"}]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("has no estimate"), "{e}");
    }
}
