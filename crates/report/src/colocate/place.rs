//! `colocate place --html`: the placement strategies over the same arrival sequences (paper 004
//! §7.5.1, Table 6): NICs each used, its waste against the reference placement (the exact
//! optimum of short sequences, else first fit on the ground truth) and the SLAs it broke on the
//! simulated SmartNIC. A negative waste is a strategy packing tighter than the reference by
//! breaking SLAs (Table 6's SLOMO row shows the same).

use serde_json::Value;

use super::percent;
use crate::chart::{BarChart, Bars};
use crate::html::{esc, figure, missing, need_f64, number, str_at, table, Page};
use crate::Error;

const DOCUMENT: &str = "colocate place --json";

/// One strategy's totals over the sequences.
struct Outcome {
    name: String,
    nics: f64,
    /// `None` when the reference used no NIC (no arrival).
    waste: Option<f64>,
    violations: f64,
}

fn outcomes(placement: &Value) -> Result<Vec<Outcome>, Error> {
    let strategies = placement["strategies"]
        .as_array()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| Error::Input {
            document: DOCUMENT.into(),
            what: "no `strategies`".into(),
        })?;
    strategies
        .iter()
        .map(|s| {
            Ok(Outcome {
                name: str_at(s, "name").unwrap_or("?").to_string(),
                nics: need_f64(DOCUMENT, s, "nics")?,
                waste: s["waste"].as_f64(),
                violations: need_f64(DOCUMENT, s, "sla_violations")?,
            })
        })
        .collect()
}

/// The page of a `colocate place --json` document.
pub fn place_page(placement: &Value) -> Result<String, Error> {
    let outcomes = outcomes(placement)?;
    let sequences = need_f64(DOCUMENT, placement, "sequences")?;
    let arrivals = need_f64(DOCUMENT, placement, "arrivals")?;
    let reference = str_at(placement, "reference").unwrap_or("the reference");
    let reference_nics = need_f64(DOCUMENT, placement, "reference_nics")?;
    let unproven = placement["reference_unproven"].as_u64().unwrap_or(0);

    let mut page = Page::new(
        "Placement of co-located NFs",
        &format!(
            "{sequences} sequence(s), {arrivals} arrivals, on the simulated SmartNIC (paper 004 \
             §7.5.1, Table 6)"
        ),
    );
    let mut summary = format!(
        "<p>{} sequence(s) of {} arrivals in all. Reference: {}, {} NICs{}.</p>",
        number("/sequences", sequences, &sequences.to_string()),
        number("/arrivals", arrivals, &arrivals.to_string()),
        esc(reference),
        number(
            "/reference_nics",
            reference_nics,
            &reference_nics.to_string()
        ),
        if unproven > 0 {
            format!(" ({unproven} sequence(s) not proven optimal within the search budget)")
        } else {
            String::new()
        },
    );
    summary += &outcome_table(&outcomes, arrivals);
    page.section("outcomes", "Outcomes per strategy", summary);
    page.section(
        "nics",
        "NICs used",
        nics_chart(&outcomes, reference, reference_nics)?,
    );
    page.section("violations", "SLA violations", violations_chart(&outcomes)?);
    page.footer(
        "Rendered from <code>linerate colocate place --json</code>: totals over the sequences; \
         SLAs judged on the simulated device's ground truth."
            .into(),
    );
    Ok(page.finish())
}

fn outcome_table(outcomes: &[Outcome], arrivals: f64) -> String {
    let rows: Vec<Vec<String>> = outcomes
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let share = if arrivals > 0.0 {
                format!(" ({})", percent(o.violations / arrivals))
            } else {
                String::new()
            };
            vec![
                esc(&o.name),
                number(
                    &format!("/strategies/{i}/nics"),
                    o.nics,
                    &o.nics.to_string(),
                ),
                o.waste.map_or("-".into(), |w| {
                    number(
                        &format!("/strategies/{i}/waste"),
                        w,
                        &format!("{:+.1}%", 100.0 * w),
                    )
                }),
                number(
                    &format!("/strategies/{i}/sla_violations"),
                    o.violations,
                    &o.violations.to_string(),
                ) + &share,
            ]
        })
        .collect();
    table(
        "outcomes",
        &["strategy", "NICs", "waste", "SLA violations"],
        &rows,
    )
}

/// NICs per strategy beside the reference's: a strategy's waste is its bar over the
/// reference's, less one.
fn nics_chart(outcomes: &[Outcome], reference: &str, reference_nics: f64) -> Result<String, Error> {
    let mut categories: Vec<String> = outcomes.iter().map(|o| o.name.clone()).collect();
    categories.push(format!("reference ({reference})"));
    let mut values: Vec<Option<f64>> = outcomes.iter().map(|o| Some(o.nics)).collect();
    values.push(Some(reference_nics));
    let chart = BarChart {
        title: "NICs used".into(),
        y_label: "NICs".into(),
        categories,
        groups: vec![Bars {
            name: "NICs".into(),
            values,
            color: 0,
        }],
        size: (640, 340),
    }
    .svg()?;
    Ok(figure(
        "nics",
        &chart,
        "NICs each strategy used over all sequences, and the reference placement's; the waste in \
         the table above is a strategy's NICs over the reference's, less one.",
    ))
}

fn violations_chart(outcomes: &[Outcome]) -> Result<String, Error> {
    if outcomes.iter().all(|o| o.violations == 0.0) {
        return Ok(missing(
            "No strategy broke an SLA: there is no bar to draw.",
        ));
    }
    let chart = BarChart {
        title: "SLA violations".into(),
        y_label: "NFs below their SLA".into(),
        categories: outcomes.iter().map(|o| o.name.clone()).collect(),
        groups: vec![Bars {
            name: "violations".into(),
            values: outcomes.iter().map(|o| Some(o.violations)).collect(),
            color: 1,
        }],
        size: (640, 340),
    }
    .svg()?;
    Ok(figure(
        "violations",
        &chart,
        "NFs whose throughput on the ground truth fell below their SLA, per strategy (the table \
         above gives them as a share of the arrivals too).",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn placement() -> Value {
        json!({
            "arrivals": 20, "reference": "optimum", "reference_nics": 9,
            "reference_unproven": 0, "sequences": 2,
            "strategies": [
                {"name": "monopolization", "nics": 20, "sla_violations": 0, "waste": 1.2222222222222223},
                {"name": "greedy", "nics": 5, "sla_violations": 10, "waste": -0.4444444444444444},
                {"name": "slomo-aware", "nics": 13, "sla_violations": 4, "waste": 0.4444444444444444},
                {"name": "tomur-aware", "nics": 6, "sla_violations": 9, "waste": -0.33333333333333337}
            ]
        })
    }

    #[test]
    fn the_page_draws_nics_and_violations_per_strategy() {
        let html = place_page(&placement()).unwrap();
        assert_eq!(html.matches("<svg").count(), 2);
        assert!(
            html.contains("reference (optimum)"),
            "the reference is a bar"
        );
        assert!(html.contains(r#"data-key="/strategies/1/waste" data-value="-0.4444444444444444""#));
        assert!(html.contains(">-44.4%<"));
        assert!(
            html.contains(">10</span> (50.0%)"),
            "violations as a share of arrivals"
        );
    }

    #[test]
    fn no_violation_leaves_a_note_instead_of_an_empty_chart() {
        let mut doc = placement();
        for s in doc["strategies"].as_array_mut().unwrap() {
            s["sla_violations"] = json!(0);
        }
        let html = place_page(&doc).unwrap();
        assert_eq!(html.matches("<svg").count(), 1);
        assert!(html.contains("No strategy broke an SLA"));
    }
}
