//! `p4 latency --html`: one program's estimate on a target model, broken into the model's parts
//! (paper 001 §V-E). The estimate is Table II's cell for the program's parsed and modified
//! headers (α, β, explicit or implicit actions) plus Eq. 1's cost of its added tables, f(γ); the
//! operations the program performs are listed at no cost because §V-A/B measured none. Below the
//! breakdown, the parameters as the analysis found them: every parser path (α is the longest),
//! the modified headers (β) and the applied tables (γ).

use serde_json::Value;

use super::ns;
use crate::chart::{BarChart, Bars};
use crate::html::{esc, figure, missing, need_f64, number, str_at, table, Page};
use crate::Error;

const DOCUMENT: &str = "p4 latency --json";

/// The page of a `p4 latency --json` document.
pub fn latency_page(estimate: &Value) -> Result<String, Error> {
    let latency = need_f64(DOCUMENT, estimate, "latency_ns")?;
    let breakdown = estimate.get("breakdown").ok_or_else(|| Error::Input {
        document: DOCUMENT.into(),
        what: "no `breakdown`".into(),
    })?;
    let parse_and_modify = need_f64(DOCUMENT, breakdown, "parse_and_modify_ns")?;
    let tables = need_f64(DOCUMENT, breakdown, "tables_ns")?;
    let count = |key: &str| need_f64(DOCUMENT, estimate, key);
    let (alpha, beta, gamma) = (count("alpha")?, count("beta")?, count("gamma")?);
    let actions = str_at(estimate, "actions").unwrap_or("?");
    let program = str_at(estimate, "program").unwrap_or("the program");
    let model = str_at(estimate, "model").unwrap_or("?");

    let mut page = Page::new(
        &format!("P4 latency: {program}"),
        &format!("on the {model} model (paper 001 §V-E: Table II plus Eq. 1)"),
    );
    let summary = format!(
        "<p>Estimated average latency {} = {} (parsing and modification: Table II's cell for \
         α = {}, β = {}, {} actions) + {} (γ = {} added tables: Eq. 1's f(γ)).</p>",
        number("/latency_ns", latency, &ns(latency)),
        number(
            "/breakdown/parse_and_modify_ns",
            parse_and_modify,
            &ns(parse_and_modify)
        ),
        number("/alpha", alpha, &alpha.to_string()),
        number("/beta", beta, &beta.to_string()),
        esc(actions),
        number("/breakdown/tables_ns", tables, &ns(tables)),
        number("/gamma", gamma, &gamma.to_string()),
    );
    let chart = BarChart {
        title: "The estimate's parts".into(),
        y_label: "ns".into(),
        categories: vec![
            "parsing and modification".into(),
            "added tables".into(),
            "estimate".into(),
        ],
        groups: vec![Bars {
            name: model.to_string(),
            values: vec![Some(parse_and_modify), Some(tables), Some(latency)],
            color: 0,
        }],
        size: (560, 320),
    }
    .svg()?;
    let caption = "Paper 001's model adds the two parts; the operations cost nothing in it.";
    page.section(
        "breakdown",
        "Breakdown",
        summary + &figure("breakdown", &chart, caption) + &breakdown_table(estimate, latency)?,
    );
    page.section("parameters", "Parameters", parameters(estimate, alpha));
    page.footer(format!(
        "Rendered from <code>linerate p4 latency --json</code> of {}.",
        esc(program)
    ));
    Ok(page.finish())
}

/// Each part of the estimate, what the model reads it from, and its share.
fn breakdown_table(estimate: &Value, latency: f64) -> Result<String, Error> {
    let breakdown = &estimate["breakdown"];
    let share = |v: f64| {
        if latency > 0.0 {
            format!("{:.1}%", 100.0 * v / latency)
        } else {
            "-".into()
        }
    };
    let parse = need_f64(DOCUMENT, breakdown, "parse_and_modify_ns")?;
    let tables = need_f64(DOCUMENT, breakdown, "tables_ns")?;
    let applied = names(&estimate["tables"]);
    let mut rows = vec![
        vec![
            "parsing and modification".into(),
            format!(
                "Table II cell α = {}, β = {}, {} actions",
                estimate["alpha"],
                estimate["beta"],
                esc(str_at(estimate, "actions").unwrap_or("?"))
            ),
            esc(&ns(parse)),
            share(parse),
        ],
        vec![
            "added tables".into(),
            format!(
                "Eq. 1 f(γ) for γ = {} (applied: {}; one is the forwarding table)",
                estimate["gamma"],
                esc(&applied)
            ),
            esc(&ns(tables)),
            share(tables),
        ],
    ];
    let operations = &estimate["operations"];
    for kind in ["arithmetic", "binary"] {
        if let Some(n) = operations.get(kind).and_then(Value::as_u64) {
            rows.push(vec![
                format!("{kind} operations"),
                format!("{n}, not in the model (§V-A/B found no effect)"),
                "0 ns".into(),
                share(0.0),
            ]);
        }
    }
    rows.push(vec![
        "<strong>estimate</strong>".into(),
        "the sum".into(),
        format!("<strong>{}</strong>", esc(&ns(latency))),
        share(latency),
    ]);
    Ok(table(
        "breakdown",
        &["part", "from the model", "latency", "share"],
        &rows,
    ))
}

/// The parser paths (the longest gives α), the modified headers (β), the applied tables (γ).
fn parameters(estimate: &Value, alpha: f64) -> String {
    let mut out = String::from("<h3>Parser paths (α: the most headers on one path)</h3>");
    match estimate["paths"].as_array() {
        Some(paths) if !paths.is_empty() => {
            let rows: Vec<Vec<String>> = paths
                .iter()
                .map(|p| {
                    let headers = p["headers"].as_array().map_or(0, Vec::len);
                    let worst = headers as f64 == alpha;
                    vec![
                        esc(&names(&p["states"]).replace(", ", " → ")),
                        esc(str_at(p, "end").unwrap_or("?")),
                        esc(&names(&p["headers"])),
                        if worst {
                            format!("<strong>{headers}</strong> (α)")
                        } else {
                            headers.to_string()
                        },
                    ]
                })
                .collect();
            out += &table("paths", &["states", "ends in", "headers", "count"], &rows);
        }
        _ => out += &missing("The document lists no parser path."),
    }
    out += "<h3>Modified headers (β)</h3>";
    match estimate["modified"].as_array() {
        Some(modified) if !modified.is_empty() => {
            let rows: Vec<Vec<String>> = modified
                .iter()
                .map(|m| {
                    vec![
                        esc(str_at(m, "header").unwrap_or("?")),
                        esc(str_at(m, "actions").unwrap_or("?")),
                    ]
                })
                .collect();
            out += &table("modified", &["header", "actions"], &rows);
        }
        _ => out += &missing("No header is modified."),
    }
    out += &format!(
        "<h3>Applied tables (γ: all but the forwarding table)</h3><p>{}</p>",
        esc(&names(&estimate["tables"]))
    );
    out
}

/// The strings of a JSON array, comma-separated; `none` for an empty or missing one.
fn names(list: &Value) -> String {
    let items: Vec<&str> = list
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if items.is_empty() {
        "none".into()
    } else {
        items.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn firewall() -> Value {
        json!({
            "actions": "implicit", "alpha": 3, "beta": 2, "gamma": 1, "latency_ns": 8934.04,
            "model": "agilio-cx",
            "breakdown": {"parse_and_modify_ns": 8600.0, "tables_ns": 334.04},
            "modified": [{"actions": "implicit", "header": "hdr.ethernet"},
                         {"actions": "implicit", "header": "hdr.ipv4"}],
            "operations": {"arithmetic": 1, "binary": 0},
            "paths": [{"end": "accept", "headers": ["hdr.ethernet", "hdr.ipv4", "hdr.udp"],
                       "states": ["start", "parse_ipv4", "parse_udp"]},
                      {"end": "accept", "headers": ["hdr.ethernet"], "states": ["start"]}],
            "program": "l3_fwd_firewall.p4",
            "tables": ["acl", "ipv4_lpm"]
        })
    }

    #[test]
    fn the_page_draws_the_breakdown_and_tabulates_each_part() {
        let html = latency_page(&firewall()).unwrap();
        assert!(html.contains("<svg"), "the breakdown is drawn");
        assert!(html.contains(r#"data-key="/latency_ns" data-value="8934.04""#));
        assert!(html.contains(r#"data-key="/breakdown/tables_ns" data-value="334.04""#));
        assert!(
            html.contains("<td>8600 ns</td>"),
            "the cell's part is in the table"
        );
        assert!(html.contains("<td>334.04 ns</td>"));
        assert!(html.contains("start → parse_ipv4 → parse_udp"));
        assert!(
            html.contains("<strong>3</strong> (α)"),
            "the longest path is marked"
        );
        assert!(!html.contains("<script"), "no JavaScript");
    }

    #[test]
    fn a_document_without_the_estimate_is_refused() {
        let e = latency_page(&json!({"alpha": 1})).unwrap_err().to_string();
        assert_eq!(e, "p4 latency --json: no number `latency_ns`");
    }
}
