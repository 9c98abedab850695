//! The listing of a program's page: instructions with their source lines and costs, the slowest
//! satisfiable path's marked; and the optimizer's part, before and after with rewrites marked.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::{inspected, path_slots, ProgramRun};
use crate::cfg_graph::Graph;
use crate::html::{esc, f64_at, missing, rate, str_at, table};

/// Per-instruction pricing of every target: slot → (target, cost text, items).
fn pricing(run: &ProgramRun) -> BTreeMap<usize, Vec<String>> {
    let mut out: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for t in &run.targets {
        let Some(insns) = t
            .cost
            .value()
            .and_then(|c| c.get("insns"))
            .and_then(Value::as_array)
        else {
            continue;
        };
        for i in insns {
            let Some(slot) = i.get("slot").and_then(Value::as_u64) else {
                continue;
            };
            let cost = match i.get("cost") {
                Some(Value::Object(parts)) => parts
                    .iter()
                    .filter_map(|(k, v)| Some(format!("{} {k}", v.as_f64()?)))
                    .collect::<Vec<_>>()
                    .join(", "),
                _ => "no cost of its own".into(),
            };
            let items: Vec<&str> = i
                .get("items")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            out.entry(slot as usize).or_default().push(format!(
                "{}: {cost}{}",
                t.target,
                if items.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", items.join(", "))
                }
            ));
        }
    }
    out
}

/// The listing of the first target's `cost --insns`: `(slot, text, first component's cost)`.
fn listing(run: &ProgramRun) -> Vec<(usize, String, Option<f64>)> {
    run.targets
        .iter()
        .find_map(|t| t.cost.value()?.get("insns")?.as_array())
        .map(|insns| {
            insns
                .iter()
                .filter_map(|i| {
                    let cost = match i.get("cost") {
                        Some(Value::Object(parts)) => parts.values().next().and_then(Value::as_f64),
                        _ => None,
                    };
                    Some((
                        i.get("slot")?.as_u64()? as usize,
                        str_at(i, "text")?.to_string(),
                        cost,
                    ))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Slots on the first target's slowest satisfiable path.
fn ssp_slots(run: &ProgramRun) -> BTreeSet<usize> {
    let Some(t) = run.targets.first() else {
        return BTreeSet::new();
    };
    let (Some(cost), Some(bound)) = (t.cost.value(), t.bound.value()) else {
        return BTreeSet::new();
    };
    let Ok(graph) = Graph::from_cost(cost) else {
        return BTreeSet::new();
    };
    let (blocks, _) = graph.path(&path_slots(bound.get("ssp"), &run.program));
    blocks.into_iter().flat_map(|b| graph.slots_of(b)).collect()
}

pub(super) fn listing_section(run: &ProgramRun) -> String {
    let lines = listing(run);
    if lines.is_empty() {
        return missing("No listing: the cost model priced no instruction.");
    }
    let source: BTreeMap<usize, String> = inspected(run)
        .and_then(|p| p.get("source_lines"))
        .and_then(Value::as_array)
        .map(|ls| {
            ls.iter()
                .filter_map(|l| {
                    Some((
                        l.get("slot")?.as_u64()? as usize,
                        format!(
                            "{}:{}  {}",
                            str_at(l, "file")?,
                            l.get("line")?.as_u64()?,
                            str_at(l, "text").unwrap_or("").trim()
                        ),
                    ))
                })
                .collect()
        })
        .unwrap_or_default();
    let pricing = pricing(run);
    let on_path = ssp_slots(run);
    let unit = run
        .targets
        .first()
        .and_then(|t| t.cost.value()?.get("components")?.get(0)?.get("unit"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let mut out = format!(
        "<p>Instructions with the source lines they came from (BTF line info); marked: on the \
         slowest satisfiable path of the {} model. Hover an instruction for its cost on each \
         model and what it was priced as; the right column is its cost in {}.</p>\
         <div class=\"scroll\"><table class=\"listing\"><tbody>",
        esc(run.targets.first().map_or("", |t| t.target.as_str())),
        esc(unit)
    );
    let mut last_source = "";
    for (slot, text, cost) in &lines {
        if let Some(src) = source.get(slot) {
            if src != last_source {
                out.push_str(&format!(
                    "<tr class=\"src\"><td></td><td colspan=\"3\">{}</td></tr>",
                    esc(src)
                ));
                last_source = src;
            }
        }
        let hover = pricing.get(slot).map(|p| p.join("\n")).unwrap_or_default();
        out.push_str(&format!(
            "<tr{} title=\"{}\"><td class=\"mark\"></td><td>{slot}</td><td>{}</td><td class=\"cost\">{}</td></tr>",
            if on_path.contains(slot) {
                " class=\"on-path\""
            } else {
                ""
            },
            esc(&hover),
            esc(text),
            cost.map_or(String::new(), |c| format!("{c:.2}"))
        ));
    }
    out.push_str("</tbody></table></div>");
    out
}

/// The optimizer's listing after its rewrites, each rewritten line marked.
fn rewritten(
    before: &[(usize, String, Option<f64>)],
    rewrites: &[Value],
) -> (Vec<(String, bool)>, BTreeSet<usize>) {
    let mut by_slot: BTreeMap<usize, (usize, Vec<String>)> = BTreeMap::new();
    for r in rewrites {
        let (Some(slot), Some(old), Some(new)) = (
            r.get("slot").and_then(Value::as_u64),
            r.get("before").and_then(Value::as_array),
            r.get("after").and_then(Value::as_array),
        ) else {
            continue;
        };
        by_slot.insert(
            slot as usize,
            (
                old.len(),
                new.iter()
                    .filter_map(|t| t.as_str().map(str::to_string))
                    .collect(),
            ),
        );
    }
    let mut marked = BTreeSet::new();
    let mut after = Vec::new();
    let mut skip_until = 0;
    for (slot, text, _) in before {
        if *slot < skip_until {
            marked.insert(*slot);
            continue;
        }
        match by_slot.get(slot) {
            Some((len, new)) => {
                marked.insert(*slot);
                skip_until = slot + len;
                after.extend(new.iter().map(|t| (t.clone(), true)));
            }
            None => after.push((text.clone(), false)),
        }
    }
    (after, marked)
}

pub(super) fn optimize_section(run: &ProgramRun) -> String {
    let Some(o) = run.optimize.value() else {
        return missing(&run.optimize.why("optimize"));
    };
    let num = |k: &str| f64_at(o, k);
    let pair = |a: Option<f64>, b: Option<f64>, fmt: &dyn Fn(f64) -> String| match (a, b) {
        (Some(a), Some(b)) => format!("{} → {} ({:+.1}%)", fmt(a), fmt(b), (b / a - 1.0) * 100.0),
        (Some(a), None) => fmt(a),
        _ => "—".into(),
    };
    let ns = |v: f64| format!("{v:.1} ns");
    let pps = |v: f64| rate(v, "pps");
    let count = |v: f64| format!("{v:.0}");
    let equivalence = o.get("equivalence");
    let rows = vec![
        vec![
            "instructions".into(),
            pair(num("insns_before"), num("insns_after"), &count),
        ],
        vec![
            "estimated latency (x86 model)".into(),
            pair(num("est_ns_before"), num("est_ns_after"), &ns),
        ],
        vec![
            "measured latency (this host's kernel)".into(),
            pair(num("measured_ns_before"), num("measured_ns_after"), &ns),
        ],
        vec![
            "worst-case packet rate".into(),
            pair(
                num("worst_case_pps_before"),
                num("worst_case_pps_after"),
                &pps,
            ),
        ],
        vec![
            "equivalence".into(),
            esc(&format!(
                "{} ({} path pairs)",
                equivalence
                    .and_then(|e| str_at(e, "verdict"))
                    .unwrap_or("unchecked"),
                equivalence
                    .and_then(|e| e.get("path_pairs"))
                    .and_then(Value::as_u64)
                    .unwrap_or(0)
            )),
        ],
        vec![
            "differential test".into(),
            format!(
                "{} packets, same in the kernel",
                o.get("differential_packets")
                    .and_then(Value::as_u64)
                    .unwrap_or(0)
            ),
        ],
    ];
    let mut out = format!(
        "<p>Goal: {}. The search's rewrites, each proven equivalent and tested in the kernel \
         (K2, paper 002).</p>{}",
        esc(str_at(o, "goal").unwrap_or("size")),
        table("optimize", &["", "before → after"], &rows)
    );
    let before = listing(run);
    let rewrites: Vec<Value> = o
        .get("rewrites")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if rewrites.is_empty() {
        out.push_str("<p>No rewrite: the program is kept as it is.</p>");
        return out;
    }
    let (after, marked) = rewritten(&before, &rewrites);
    let before_rows: String = before
        .iter()
        .map(|(slot, text, _)| {
            format!(
                "<tr{}><td>{slot}</td><td>{}</td></tr>",
                if marked.contains(slot) {
                    " class=\"rewritten\""
                } else {
                    ""
                },
                esc(text)
            )
        })
        .collect();
    let after_rows: String = after
        .iter()
        .enumerate()
        .map(|(i, (text, changed))| {
            format!(
                "<tr{}><td>{i}</td><td>{}</td></tr>",
                if *changed { " class=\"rewritten\"" } else { "" },
                esc(text)
            )
        })
        .collect();
    out.push_str(&format!(
        "<p>{} rewrites, marked.</p><div class=\"side-by-side\"><div><h3>before</h3><div class=\"scroll\">\
         <table class=\"listing\"><tbody>{before_rows}</tbody></table></div></div><div><h3>after</h3>\
         <div class=\"scroll\"><table class=\"listing\"><tbody>{after_rows}</tbody></table></div></div></div>",
        rewrites.len()
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rewrites_replace_their_slots_in_the_after_listing() {
        let before: Vec<(usize, String, Option<f64>)> = ["a", "b", "c", "d"]
            .iter()
            .enumerate()
            .map(|(i, t)| (i, t.to_string(), None))
            .collect();
        let rewrites = vec![json!({"slot": 1, "before": ["b", "c"], "after": ["bc"]})];
        let (after, marked) = rewritten(&before, &rewrites);
        assert_eq!(
            after,
            vec![
                ("a".to_string(), false),
                ("bc".to_string(), true),
                ("d".to_string(), false)
            ]
        );
        assert_eq!(marked, BTreeSet::from([1, 2]));
    }
}
