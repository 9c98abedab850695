//! The report of one program: what `inspect`, `cost`, `bound`, `measure`, `optimize` and `hxdp`
//! said of it, as one page — a summary, the control-flow graph with the slowest satisfiable path,
//! the bound over time, estimate against measurement per path, the listing with source lines and
//! costs, the optimizer's rewrites, the hXDP schedule and its studies.
//!
//! Each part is the `--json` document of the command that computed it, or why it is missing (a
//! capability that does not apply, a kernel that is not available, a failure), so one failing
//! part leaves the rest of the page intact.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::cfg_graph::{self, Graph};
use crate::chart::{css_color, BarChart, Bars, Line, LineChart, Series};
use crate::html::{esc, f64_at, figure, missing, number, rate, str_at, table, Page};
use crate::Error;

/// What one command gave for the page.
pub enum Part {
    /// Its `--json` document.
    Done(Value),
    /// Not run, and why (e.g. `--no-optimize`, no kernel).
    Skipped(String),
    /// Run, and failed with this message.
    Failed(String),
}

impl Part {
    pub fn value(&self) -> Option<&Value> {
        match self {
            Part::Done(v) => Some(v),
            _ => None,
        }
    }

    /// Why there is no document, for the page.
    fn why(&self, what: &str) -> String {
        match self {
            Part::Done(_) => String::new(),
            Part::Skipped(why) => format!("{what}: not run ({why})."),
            Part::Failed(why) => format!("{what}: failed: {why}"),
        }
    }
}

/// The worst case on one device model.
pub struct TargetRun {
    pub target: String,
    /// `cost --json --insns`.
    pub cost: Part,
    /// `bound --json`.
    pub bound: Part,
}

/// Everything the page of one program shows.
pub struct ProgramRun {
    /// The object as the user named it.
    pub object: String,
    pub program: String,
    /// `inspect --json` of the object.
    pub inspect: Value,
    pub targets: Vec<TargetRun>,
    /// `measure --json` (this host's kernel against the x86 model).
    pub measure: Part,
    /// `optimize --json`.
    pub optimize: Part,
    /// `hxdp --json`.
    pub hxdp: Part,
    /// `hxdp study --json` of this object.
    pub hxdp_study: Part,
    /// Seconds each step took, in order.
    pub stages: Vec<(String, f64)>,
    /// What made the page (`linerate 0.1.0`), for the footer.
    pub generator: String,
}

/// The figures of a program an index lists.
pub struct Headline {
    pub program: String,
    pub insns: Option<u64>,
    /// Per target: the guarantee's packet rate, its bottleneck and whether the search completed.
    pub guarantees: Vec<(String, Option<f64>, String, Option<bool>)>,
    pub measured_slowest_pps: Option<f64>,
    pub optimized_insns: Option<u64>,
    pub hxdp_rows: Option<u64>,
    pub seconds: f64,
}

/// The page's program in `inspect --json`.
fn inspected(run: &ProgramRun) -> Option<&Value> {
    run.inspect
        .get("programs")?
        .as_array()?
        .iter()
        .find(|p| str_at(p, "name") == Some(run.program.as_str()))
}

/// The slots of a `bound --json` path's nodes that lie in `program`.
fn path_slots(path: Option<&Value>, program: &str) -> Vec<usize> {
    path.and_then(|p| p.get("blocks"))
        .and_then(Value::as_array)
        .map(|blocks| {
            blocks
                .iter()
                .filter(|b| str_at(b, "program") == Some(program))
                .filter_map(|b| b.get("slot")?.as_u64().map(|s| s as usize))
                .collect()
        })
        .unwrap_or_default()
}

/// The numbers of the page's headline, also used by the index.
pub fn headline(run: &ProgramRun) -> Headline {
    let guarantees = run
        .targets
        .iter()
        .map(|t| {
            let bound = t.bound.value();
            let ssp = bound.and_then(|b| b.get("ssp")).filter(|s| !s.is_null());
            (
                t.target.clone(),
                ssp.and_then(|s| f64_at(s, "pps")),
                ssp.and_then(|s| str_at(s, "bottleneck"))
                    .unwrap_or_default()
                    .to_string(),
                bound.and_then(|b| b.get("complete")?.as_bool()),
            )
        })
        .collect();
    Headline {
        program: run.program.clone(),
        insns: inspected(run).and_then(|p| p.get("insns")?.as_u64()),
        guarantees,
        measured_slowest_pps: run.measure.value().and_then(slowest_measured).map(|p| p.1),
        optimized_insns: run
            .optimize
            .value()
            .and_then(|o| o.get("insns_after")?.as_u64()),
        hxdp_rows: run.hxdp.value().and_then(|h| h.get("vliw_rows")?.as_u64()),
        seconds: run.stages.iter().map(|s| s.1).sum(),
    }
}

/// The rank and rate of the slowest path `measure` timed.
fn slowest_measured(measure: &Value) -> Option<(u64, f64)> {
    measure
        .get("paths")?
        .as_array()?
        .iter()
        .filter_map(|p| Some((p.get("rank")?.as_u64()?, f64_at(p, "measured_pps")?)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
}

/// The whole page.
pub fn program_page(run: &ProgramRun) -> Result<String, Error> {
    let mut page = Page::new(
        &format!("{} — linerate report", run.program),
        &format!("program {} of {}", run.program, run.object),
    );
    page.section("summary", "Summary", summary(run));
    page.section("cfg", "Control-flow graph", cfg_section(run)?);
    page.section("anytime", "Bound over time", anytime_section(run));
    page.section(
        "measured",
        "Estimate against measurement",
        measured_section(run),
    );
    page.section("listing", "Disassembly", listing_section(run));
    page.section("optimize", "Optimizer", optimize_section(run));
    page.section("hxdp", "hXDP", hxdp_section(run));
    let total: f64 = run.stages.iter().map(|s| s.1).sum();
    let stages: Vec<String> = run
        .stages
        .iter()
        .map(|(name, s)| format!("{} {s:.1} s", esc(name)))
        .collect();
    page.footer(format!(
        "Made by {} in {}: {}.",
        esc(&run.generator),
        number("total-seconds", total, &format!("{total:.1} s")),
        stages.join(", ")
    ));
    Ok(page.finish())
}

fn summary(run: &ProgramRun) -> String {
    let mut out = String::new();
    let mut rows = Vec::new();
    for t in &run.targets {
        let target = &t.target;
        let Some(bound) = t.bound.value() else {
            rows.push(vec![
                esc(target),
                missing(&t.bound.why("bound")),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
            ]);
            continue;
        };
        let ssp = bound.get("ssp").filter(|s| !s.is_null());
        let naive = bound.get("naive").filter(|s| !s.is_null());
        let complete = bound.get("complete").and_then(Value::as_bool);
        let guarantee = match ssp {
            Some(s) => format!(
                "{}<br>{}",
                number(
                    &format!("ssp-pps-{target}"),
                    f64_at(s, "pps").unwrap_or(f64::NAN),
                    &rate(f64_at(s, "pps").unwrap_or(f64::NAN), "pps")
                ),
                number(
                    &format!("ssp-bps-{target}"),
                    f64_at(s, "bps").unwrap_or(f64::NAN),
                    &rate(f64_at(s, "bps").unwrap_or(f64::NAN), "bit/s")
                ),
            ),
            None => match bound.get("bound").and_then(|b| f64_at(b, "pps")) {
                Some(b) => format!("at least {} (no path confirmed)", esc(&rate(b, "pps"))),
                None => "no packet completes the program".into(),
            },
        };
        let search = format!(
            "<span data-key=\"complete-{}\" data-value=\"{}\" class=\"{}\">{}</span>, {:.2} s, {} paths checked",
            esc(target),
            complete.map_or("unknown".into(), |c| c.to_string()),
            if complete == Some(true) { "good" } else { "warn" },
            match (complete, str_at(bound, "stop")) {
                (Some(true), _) => "complete".to_string(),
                (_, Some(stop)) => format!("incomplete ({stop})"),
                _ => "incomplete".to_string(),
            },
            f64_at(bound, "elapsed_s").unwrap_or(0.0),
            bound.get("paths_checked").and_then(Value::as_u64).unwrap_or(0),
        );
        let naive_text = naive.map_or(String::new(), |n| {
            number(
                &format!("naive-pps-{target}"),
                f64_at(n, "pps").unwrap_or(f64::NAN),
                &rate(f64_at(n, "pps").unwrap_or(f64::NAN), "pps"),
            )
        });
        let witness = ssp
            .and_then(|s| s.get("witness"))
            .map_or(String::new(), |w| {
                let packet = str_at(w, "packet").unwrap_or_default();
                format!(
                    "{} on a {}-byte packet",
                    esc(str_at(w, "action").unwrap_or("unconfirmed")),
                    packet.len() / 2
                )
            });
        rows.push(vec![
            esc(target),
            guarantee,
            esc(ssp.and_then(|s| str_at(s, "bottleneck")).unwrap_or("")),
            search,
            naive_text,
            witness,
        ]);
    }
    out.push_str("<h3>Worst-case guarantee per device model</h3>");
    out.push_str(&table(
        "summary",
        &[
            "target",
            "slowest satisfiable path",
            "bottleneck",
            "search",
            "naive bound",
            "witness",
        ],
        &rows,
    ));
    let mut facts = Vec::new();
    match run.measure.value().and_then(slowest_measured) {
        Some((rank, pps)) => facts.push(format!(
            "<li>Slowest path measured on this host: path {rank} at {}.</li>",
            number("measured-slowest-pps", pps, &rate(pps, "pps"))
        )),
        None => facts.push(format!("<li>{}</li>", esc(&run.measure.why("measure")))),
    }
    match run.optimize.value() {
        Some(o) => facts.push(format!(
            "<li>Optimizer ({} goal): {} → {} instructions, estimated {:.1} → {:.1} ns per packet.</li>",
            esc(str_at(o, "goal").unwrap_or("size")),
            o.get("insns_before").and_then(Value::as_u64).unwrap_or(0),
            o.get("insns_after").and_then(Value::as_u64).unwrap_or(0),
            f64_at(o, "est_ns_before").unwrap_or(f64::NAN),
            f64_at(o, "est_ns_after").unwrap_or(f64::NAN),
        )),
        None => facts.push(format!("<li>{}</li>", esc(&run.optimize.why("optimize")))),
    }
    match run.hxdp.value() {
        Some(h) => {
            facts.push(format!(
                "<li>hXDP: {} eBPF instructions in {} VLIW rows of {} lanes{}.</li>",
                h.get("ebpf_insns").and_then(Value::as_u64).unwrap_or(0),
                h.get("vliw_rows").and_then(Value::as_u64).unwrap_or(0),
                h.get("lanes").and_then(Value::as_u64).unwrap_or(0),
                h.get("worst_case").and_then(|w| f64_at(w, "pps")).map_or(
                    String::new(),
                    |p| format!(", worst case {}", rate(p, "pps"))
                )
            ))
        }
        None => facts.push(format!("<li>{}</li>", esc(&run.hxdp.why("hxdp")))),
    }
    out.push_str(&format!("<ul>{}</ul>", facts.concat()));
    out
}

fn cfg_section(run: &ProgramRun) -> Result<String, Error> {
    let mut out = String::from(
        "<p class=\"legend\"><span><span class=\"swatch\" style=\"background:#d62728\"></span>slowest satisfiable path</span>\
         <span><span class=\"swatch\" style=\"background:#8c8c8c\"></span>dashed: the naive bound's path where it is impossible</span>\
         <span>dotted: unreachable blocks</span></p>",
    );
    for t in &run.targets {
        out.push_str(&format!("<h3>{}</h3>", esc(&t.target)));
        let Some(cost) = t.cost.value() else {
            out.push_str(&missing(&t.cost.why("cost")));
            continue;
        };
        let graph = Graph::from_cost(cost)?;
        let bound = t.bound.value();
        let ssp = path_slots(bound.and_then(|b| b.get("ssp")), &run.program);
        let naive = path_slots(bound.and_then(|b| b.get("naive")), &run.program);
        let svg = cfg_graph::render(&graph.dot(&ssp, &naive))?;
        out.push_str(&format!(
            "<div class=\"scroll\">{}</div>",
            figure(
                "cfg",
                &svg,
                &format!(
                    "Blocks with their instructions and cost on the {} model.",
                    esc(&t.target)
                )
            )
        ));
    }
    Ok(out)
}

/// The bound's rise over time on one target (paper 000 Fig. 7): it starts at the naive bound
/// (the slowest path, possible or not) and rises as slower paths are refuted; the search ends at
/// the slowest satisfiable path.
fn anytime_chart(target: &str, bound: &Value) -> Result<String, Error> {
    let naive = bound.get("naive").and_then(|n| f64_at(n, "pps"));
    let ssp = bound.get("ssp").and_then(|s| f64_at(s, "pps"));
    let elapsed = f64_at(bound, "elapsed_s").unwrap_or(0.0);
    let mut steps: Vec<(f64, f64)> = naive.map(|n| (0.0, n)).into_iter().collect();
    for i in bound
        .get("improvements")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let (Some(t), Some(r)) = (f64_at(i, "t_s"), f64_at(i, "pps")) {
            steps.push((t, r));
        }
    }
    let last = ssp.or_else(|| bound.get("bound").and_then(|b| f64_at(b, "pps")));
    if let Some(r) = last {
        steps.push((elapsed, r));
    }
    let mut series = vec![Series {
        name: "bound".into(),
        points: steps,
        color: 0,
        line: Line::Steps,
    }];
    if let Some(n) = naive {
        series.push(Series {
            name: "naive bound".into(),
            points: vec![(0.0, n)],
            color: 5,
            line: Line::Reference,
        });
    }
    if let Some(s) = ssp {
        series.push(Series {
            name: "slowest satisfiable path".into(),
            points: vec![(elapsed, s)],
            color: 1,
            line: Line::Reference,
        });
    }
    LineChart {
        title: format!("{target}: bound over time"),
        x_label: "seconds".into(),
        y_label: "packets/s".into(),
        series,
        y_from_zero: false,
        size: (560, 320),
    }
    .svg()
}

fn anytime_section(run: &ProgramRun) -> String {
    let mut figures = String::new();
    for t in &run.targets {
        let Some(bound) = t.bound.value() else {
            figures.push_str(&missing(&t.bound.why(&format!("bound on {}", t.target))));
            continue;
        };
        let rises = bound
            .get("improvements")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        match anytime_chart(&t.target, bound) {
            Ok(svg) => figures.push_str(&figure(
                "plot",
                &svg,
                &format!(
                    "{}: the bound rose {rises} times in {:.2} s, {} paths checked.",
                    esc(&t.target),
                    f64_at(bound, "elapsed_s").unwrap_or(0.0),
                    bound
                        .get("paths_checked")
                        .and_then(Value::as_u64)
                        .unwrap_or(0)
                ),
            )),
            Err(e) => figures.push_str(&missing(&e.to_string())),
        }
    }
    format!(
        "<p>What the search guarantees as it runs (paper 000, Fig. 7): it starts at the naive \
         bound and rises each time the slowest remaining path is proven impossible, until a path \
         is satisfiable.</p><div class=\"figures\">{figures}</div>"
    )
}

fn measured_section(run: &ProgramRun) -> String {
    let Some(measure) = run.measure.value() else {
        return missing(&run.measure.why("measure"));
    };
    let paths: Vec<&Value> = measure
        .get("paths")
        .and_then(Value::as_array)
        .map(|p| p.iter().collect())
        .unwrap_or_default();
    if paths.is_empty() {
        return missing("measure timed no path.");
    }
    let mut categories = Vec::new();
    let (mut estimate, mut above, mut below) = (Vec::new(), Vec::new(), Vec::new());
    let mut rows = Vec::new();
    for p in &paths {
        let rank = p.get("rank").and_then(Value::as_u64).unwrap_or(0);
        let est = f64_at(p, "estimate_pps");
        let meas = f64_at(p, "measured_pps");
        categories.push(format!("path {rank}"));
        estimate.push(est);
        // Measured at or above the estimate: the model was safe (an under-estimate); below it,
        // the model promised more than the host delivers.
        let safe = matches!((est, meas), (Some(e), Some(m)) if m >= e);
        above.push(meas.filter(|_| safe));
        below.push(meas.filter(|_| !safe));
        let verdict = match (est, meas) {
            (Some(e), Some(m)) if m >= e => format!(
                "<span class=\"good\">under-estimate by {:.1}%</span>",
                (m / e - 1.0) * 100.0
            ),
            (Some(e), Some(m)) => format!(
                "<span class=\"bad\">over-estimate by {:.1}%</span>",
                (e / m - 1.0) * 100.0
            ),
            _ => String::new(),
        };
        rows.push(vec![
            rank.to_string(),
            esc(str_at(p, "action").unwrap_or("")),
            est.map_or(String::new(), |e| rate(e, "pps")),
            meas.map_or(String::new(), |m| rate(m, "pps")),
            verdict,
            esc(str_at(p, "check").unwrap_or("")),
        ]);
    }
    let chart = BarChart {
        title: "Estimate and measurement per path".into(),
        y_label: "packets/s".into(),
        categories,
        groups: vec![
            Bars {
                name: "x86 model estimate".into(),
                values: estimate,
                color: 0,
            },
            Bars {
                name: "measured, at or above".into(),
                values: above,
                color: 2,
            },
            Bars {
                name: "measured, below".into(),
                values: below,
                color: 1,
            },
        ],
        size: (760, 340),
    }
    .svg();
    let mut out = String::from(
        "<p>The slowest satisfiable paths on the x86 model, each driven by its witness packet \
         through this host's kernel (<code>BPF_PROG_TEST_RUN</code>), in the style of paper 000, \
         Fig. 8.</p>",
    );
    match chart {
        Ok(svg) => out.push_str(&figure(
            "plot",
            &svg,
            &format!(
                "Green: the host was at least as fast as estimated; red: slower ({}, {}).",
                "bars per path rank", "median of the trials"
            ),
        )),
        Err(e) => out.push_str(&missing(&e.to_string())),
    }
    out.push_str(&table(
        "measured",
        &["rank", "action", "estimate", "measured", "", "check"],
        &rows,
    ));
    out
}

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

fn listing_section(run: &ProgramRun) -> String {
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

fn optimize_section(run: &ProgramRun) -> String {
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

fn hxdp_section(run: &ProgramRun) -> String {
    let Some(h) = run.hxdp.value() else {
        return missing(&run.hxdp.why("hxdp"));
    };
    let lanes = h.get("lanes").and_then(Value::as_u64).unwrap_or(4) as usize;
    let rows: Vec<&Value> = h
        .get("rows")
        .and_then(Value::as_array)
        .map(|r| r.iter().collect())
        .unwrap_or_default();
    let mut out = format!(
        "<p>The program compiled for the hXDP core (paper 003): {} eBPF instructions in {} VLIW \
         rows of {lanes} lanes, static IPC {:.2}{}.</p>",
        h.get("ebpf_insns").and_then(Value::as_u64).unwrap_or(0),
        number(
            "hxdp-rows",
            rows.len() as f64,
            &h.get("vliw_rows")
                .and_then(Value::as_u64)
                .unwrap_or(0)
                .to_string()
        ),
        f64_at(h, "static_ipc").unwrap_or(f64::NAN),
        h.get("worst_case")
            .and_then(|w| f64_at(w, "pps"))
            .map_or(String::new(), |p| format!(
                "; worst case {} at 156.25 MHz",
                rate(p, "pps")
            ))
    );
    let mut grid =
        String::from("<div class=\"scroll\"><table class=\"schedule\"><thead><tr><th>row</th>");
    for l in 0..lanes {
        grid.push_str(&format!("<th>lane {l}</th>"));
    }
    grid.push_str("</tr></thead><tbody>");
    for (i, row) in rows.iter().enumerate() {
        let mut cells = vec![String::from("<td class=\"empty\"></td>"); lanes];
        for slot in row.as_array().into_iter().flatten() {
            let lane = slot.get("lane").and_then(Value::as_u64).unwrap_or(0) as usize;
            let from: Vec<String> = slot
                .get("from")
                .and_then(Value::as_array)
                .map(|f| f.iter().map(|s| s.to_string()).collect())
                .unwrap_or_default();
            if let Some(cell) = cells.get_mut(lane) {
                *cell = format!(
                    "<td title=\"from eBPF slots {}\">{}</td>",
                    esc(&from.join(", ")),
                    esc(str_at(slot, "text").unwrap_or(""))
                );
            }
        }
        grid.push_str(&format!("<tr><td>{i}</td>{}</tr>", cells.concat()));
    }
    grid.push_str("</tbody></table></div>");
    out.push_str("<h3>Schedule</h3>");
    out.push_str(&grid);
    out.push_str(&hxdp_studies(&run.hxdp_study));
    out
}

/// The lanes sweep (paper 003 Fig. 8) and the pass ablation (Figs. 7 and 9) of `hxdp study`.
fn hxdp_studies(study: &Part) -> String {
    let Some(entry) = study
        .value()
        .and_then(Value::as_array)
        .and_then(|a| a.first())
    else {
        return missing(&study.why("hxdp study"));
    };
    if let Some(e) = str_at(entry, "error") {
        return missing(&format!("hxdp study: {e}"));
    }
    let mut figures = String::new();
    let sweep: Vec<(f64, f64)> = entry
        .get("lanes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| Some((f64_at(p, "lanes")?, f64_at(p, "rows")?)))
        .collect();
    match (LineChart {
        title: "VLIW rows by lane count".into(),
        x_label: "lanes".into(),
        y_label: "rows".into(),
        series: vec![Series {
            name: "rows".into(),
            points: sweep,
            color: 0,
            line: Line::Points,
        }],
        y_from_zero: true,
        size: (480, 300),
    })
    .svg()
    {
        Ok(svg) => figures.push_str(&figure("plot", &svg, "Paper 003, Fig. 8.")),
        Err(e) => figures.push_str(&missing(&e.to_string())),
    }
    let ablation: Vec<&Value> = entry
        .get("ablation")
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    let values =
        |key: &str| -> Vec<Option<f64>> { ablation.iter().map(|a| f64_at(a, key)).collect() };
    match (BarChart {
        title: "Each pass or step switched off".into(),
        y_label: "count".into(),
        categories: ablation
            .iter()
            .map(|a| str_at(a, "config").unwrap_or("?").to_string())
            .collect(),
        groups: vec![
            Bars {
                name: "instructions".into(),
                values: values("instructions"),
                color: 0,
            },
            Bars {
                name: "VLIW rows".into(),
                values: values("rows"),
                color: 3,
            },
        ],
        size: (640, 340),
    })
    .svg()
    {
        Ok(svg) => figures.push_str(&figure("plot", &svg, "Paper 003, Figs. 7 and 9.")),
        Err(e) => figures.push_str(&missing(&e.to_string())),
    }
    let legend = format!(
        "<p class=\"legend\"><span><span class=\"swatch\" style=\"background:{}\"></span>instructions</span>\
         <span><span class=\"swatch\" style=\"background:{}\"></span>rows</span></p>",
        css_color(0),
        css_color(3)
    );
    format!("<h3>Studies</h3>{legend}<div class=\"figures\">{figures}</div>")
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

    #[test]
    fn the_slowest_measured_path_is_the_lowest_rate() {
        let m = json!({"paths": [
            {"rank": 0, "measured_pps": 3e6},
            {"rank": 1, "measured_pps": 2e6},
            {"rank": 2}
        ]});
        assert_eq!(slowest_measured(&m), Some((1, 2e6)));
    }

    #[test]
    fn the_anytime_chart_starts_at_the_naive_bound() {
        let bound = json!({
            "naive": {"pps": 1e6}, "ssp": {"pps": 3e6}, "elapsed_s": 2.0,
            "improvements": [{"t_s": 0.5, "pps": 2e6}]
        });
        let svg = anytime_chart("x86", &bound).unwrap();
        assert!(svg.contains("naive bound"));
        assert!(svg.contains("slowest satisfiable path"));
    }
}
