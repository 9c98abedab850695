//! `colocate predict --html`: one NF's throughput next to its competitors (paper 004 §4): the
//! solo rate, the chosen predictor's rate and drop, every other predictor's answer beside it,
//! each resource's drop and the bottleneck named (Table 7's diagnosis). Where the command
//! measured the co-location (models of the simulated SmartNIC, whose device is the ground
//! truth), every predictor is drawn against the measured rate, as Tomur's Figures 2 and 7 judge
//! predictors by their error against measurement.

use serde_json::Value;

use super::percent;
use crate::chart::{BarChart, Bars};
use crate::html::{esc, figure, missing, need_f64, number, rate, str_at, table, Page};
use crate::Error;

const DOCUMENT: &str = "colocate predict --json";

/// One predictor's answer.
struct Answer {
    predictor: String,
    key: String,
    pps: f64,
    drop: f64,
}

/// The chosen predictor's answer first, then the baselines in the document's order.
fn answers(prediction: &Value) -> Result<Vec<Answer>, Error> {
    let mut out = vec![Answer {
        predictor: str_at(prediction, "predictor")
            .unwrap_or("chosen")
            .to_string(),
        key: String::new(),
        pps: need_f64(DOCUMENT, prediction, "predicted_pps")?,
        drop: need_f64(DOCUMENT, prediction, "drop")?,
    }];
    if let Some(baselines) = prediction["baselines"].as_object() {
        for (name, b) in baselines {
            out.push(Answer {
                predictor: name.clone(),
                key: format!("/baselines/{name}"),
                pps: need_f64(DOCUMENT, b, "predicted_pps")?,
                drop: need_f64(DOCUMENT, b, "drop")?,
            });
        }
    }
    Ok(out)
}

/// The page of a `colocate predict --json` document.
pub fn predict_page(prediction: &Value) -> Result<String, Error> {
    let target = str_at(prediction, "target").unwrap_or("?");
    let competitors: Vec<&str> = prediction["competitors"]
        .as_array()
        .map(|c| c.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let next_to = if competitors.is_empty() {
        "alone".to_string()
    } else {
        format!("next to {}", competitors.join(", "))
    };
    let traffic = &prediction["traffic"];
    let solo = need_f64(DOCUMENT, prediction, "solo_pps")?;
    let answers = answers(prediction)?;
    let chosen = &answers[0];
    let bottleneck = str_at(prediction, "bottleneck");
    let measured = prediction.get("measured").filter(|m| m.is_object());

    let mut page = Page::new(
        &format!("{target} {next_to}"),
        &format!(
            "predicted by {} at {} flows, {} B packets, {} matches/MB (paper 004, Tomur)",
            chosen.predictor,
            plain(&traffic["flows"]),
            plain(&traffic["packet_size"]),
            plain(&traffic["mtbr"])
        ),
    );
    let mut summary = format!(
        "<p>Solo {}; predicted {} next to its competitors, a drop of {}. Bottleneck: \
         <strong>{}</strong>.</p>",
        number("/solo_pps", solo, &rate(solo, "pps")),
        number("/predicted_pps", chosen.pps, &rate(chosen.pps, "pps")),
        number("/drop", chosen.drop, &percent(chosen.drop)),
        esc(bottleneck.unwrap_or("none (no resource costs 1% of the solo rate)")),
    );
    if let Some(m) = measured {
        let pps = need_f64(DOCUMENT, m, "pps")?;
        let measured_solo = need_f64(DOCUMENT, m, "solo_pps")?;
        let drop = need_f64(DOCUMENT, m, "drop")?;
        summary += &format!(
            "<p>Measured on {}: solo {}, together {}, a drop of {}.</p>",
            esc(str_at(m, "on").unwrap_or("the device")),
            number(
                "/measured/solo_pps",
                measured_solo,
                &rate(measured_solo, "pps")
            ),
            number("/measured/pps", pps, &rate(pps, "pps")),
            number("/measured/drop", drop, &percent(drop)),
        );
    }
    page.section("prediction", "Prediction", summary);
    page.section(
        "predictors",
        "Every predictor",
        predictors(&answers, measured)?,
    );
    page.section(
        "resources",
        "Drop by resource",
        resources(prediction, chosen, bottleneck)?,
    );
    page.footer(format!(
        "Rendered from <code>linerate colocate predict --json</code> ({} {}).",
        esc(target),
        esc(&next_to)
    ));
    Ok(page.finish())
}

/// A traffic attribute as people write it: `1000`, not the JSON's `1000.0`.
fn plain(value: &Value) -> String {
    value.as_f64().map_or_else(|| "?".into(), |v| v.to_string())
}

/// Each predictor's rate, against the measured one where there is one.
fn predictors(answers: &[Answer], measured: Option<&Value>) -> Result<String, Error> {
    let measured_pps = measured.map(|m| need_f64(DOCUMENT, m, "pps")).transpose()?;
    let mut groups = vec![Bars {
        name: "predicted".into(),
        values: answers.iter().map(|a| Some(a.pps)).collect(),
        color: 0,
    }];
    if let Some(pps) = measured_pps {
        groups.push(Bars {
            name: "measured".into(),
            values: vec![Some(pps); answers.len()],
            color: 1,
        });
    }
    let chart = BarChart {
        title: "Throughput next to the competitors, by predictor".into(),
        y_label: "packets/s".into(),
        categories: answers.iter().map(|a| a.predictor.clone()).collect(),
        groups,
        size: (640, 340),
    }
    .svg()?;
    let caption = if measured_pps.is_some() {
        "Each predictor's rate beside the measured one (the same measurement repeated per \
         predictor); the solo-rate predictor is the solo rate."
    } else {
        "Each predictor's rate; the solo-rate predictor is the solo rate. The command measured \
         nothing to compare with: only models of the simulated SmartNIC have a ground truth."
    };
    let rows: Vec<Vec<String>> = answers
        .iter()
        .map(|a| {
            let mut row = vec![
                esc(&a.predictor),
                if a.key.is_empty() {
                    esc(&rate(a.pps, "pps"))
                } else {
                    number(
                        &format!("{}/predicted_pps", a.key),
                        a.pps,
                        &rate(a.pps, "pps"),
                    )
                },
                esc(&percent(a.drop)),
            ];
            if let Some(m) = measured_pps {
                row.push(esc(&rate(m, "pps")));
                row.push(if m > 0.0 {
                    format!("{:+.1}%", 100.0 * (a.pps - m) / m)
                } else {
                    "-".into()
                });
            }
            row
        })
        .collect();
    let header: &[&str] = if measured_pps.is_some() {
        &["predictor", "predicted", "drop", "measured", "error"]
    } else {
        &["predictor", "predicted", "drop"]
    };
    Ok(figure("predictors", &chart, caption) + &table("predictors", header, &rows))
}

/// The chosen predictor's drop per resource and composed, the bottleneck marked.
fn resources(
    prediction: &Value,
    chosen: &Answer,
    bottleneck: Option<&str>,
) -> Result<String, Error> {
    let per_resource: Vec<(&String, f64)> = prediction["per_resource"]
        .as_object()
        .map(|o| {
            o.iter()
                .filter_map(|(r, d)| Some((r, d.as_f64()?)))
                .collect()
        })
        .unwrap_or_default();
    if per_resource.is_empty() {
        return Ok(missing(&format!(
            "The {} predictor models no resource.",
            chosen.predictor
        )));
    }
    let mut rows: Vec<Vec<String>> = per_resource
        .iter()
        .map(|(resource, drop)| {
            let named = bottleneck == Some(resource.as_str());
            vec![
                if named {
                    format!("<strong>{}</strong> (bottleneck)", esc(resource))
                } else {
                    esc(resource)
                },
                number(&format!("/per_resource/{resource}"), *drop, &percent(*drop)),
            ]
        })
        .collect();
    rows.push(vec![
        "composed (the prediction)".into(),
        esc(&percent(chosen.drop)),
    ]);
    let mut categories: Vec<String> = per_resource.iter().map(|(r, _)| r.to_string()).collect();
    categories.push("composed".into());
    let mut values: Vec<Option<f64>> = per_resource.iter().map(|(_, d)| Some(100.0 * d)).collect();
    values.push(Some(100.0 * chosen.drop));
    let drawn = BarChart {
        title: "Drop against the solo rate".into(),
        y_label: "% of the solo rate".into(),
        categories,
        groups: vec![Bars {
            name: chosen.predictor.clone(),
            values,
            color: 0,
        }],
        size: (560, 320),
    }
    .svg();
    // Nothing costs anything: the table says so, there is no bar to draw.
    let chart = match drawn {
        Ok(svg) => figure(
            "resources",
            &svg,
            "Each resource's drop alone and the drop the execution pattern composes them to \
             (§4.2); the bottleneck is the resource with the largest drop, if it costs 1%.",
        ),
        Err(_) => missing("No resource costs anything: there is no drop to draw."),
    };
    Ok(chart + &table("resources", &["resource", "drop"], &rows))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn nids() -> Value {
        json!({
            "baselines": {
                "min": {"drop": 0.4, "predicted_pps": 442569.0},
                "slomo": {"drop": 0.0, "predicted_pps": 736914.0},
                "solo-rate": {"drop": 0.0, "predicted_pps": 736914.0},
                "sum": {"drop": 0.4, "predicted_pps": 442569.0}
            },
            "bottleneck": "regex", "competitors": ["flowmonitor"],
            "drop": 0.4, "per_resource": {"memory": 0.0, "regex": 0.4},
            "predicted_pps": 442569.0, "predictor": "tomur", "solo_pps": 736914.0,
            "target": "nids", "traffic": {"flows": 1000.0, "mtbr": 1200.0, "packet_size": 1500.0}
        })
    }

    #[test]
    fn the_page_draws_every_predictor_and_names_the_bottleneck() {
        let html = predict_page(&nids()).unwrap();
        assert_eq!(html.matches("<svg").count(), 2);
        assert!(html.contains(r#"data-key="/predicted_pps" data-value="442569""#));
        assert!(html.contains(r#"data-key="/baselines/slomo/predicted_pps""#));
        assert!(html.contains("<strong>regex</strong> (bottleneck)"));
        assert!(html.contains("measured nothing to compare with"));
        assert!(!html.contains("<th>error</th>"));
    }

    #[test]
    fn a_measurement_is_drawn_and_each_predictor_gets_its_error() {
        let mut doc = nids();
        doc["measured"] = json!({"on": "the simulated SmartNIC", "solo_pps": 740000.0,
                                 "pps": 450000.0, "drop": 0.39});
        let html = predict_page(&doc).unwrap();
        assert!(html.contains(r#"data-key="/measured/pps" data-value="450000""#));
        assert!(html.contains("<th>error</th>"));
        // tomur: 442569 against 450000.
        assert!(html.contains("<td>-1.7%</td>"), "{html}");
    }
}
