//! The report of one program: what `inspect`, `cost`, `bound`, `measure`, `optimize` and `hxdp`
//! said of it, as one page — a summary, the control-flow graph with the slowest satisfiable path,
//! the bound over time, estimate against measurement per path, the listing with source lines and
//! costs, the optimizer's rewrites, the hXDP schedule and its studies.
//!
//! Each part is the `--json` document of the command that computed it, or why it is missing (a
//! capability that does not apply, a kernel that is not available, a failure), so one failing
//! part leaves the rest of the page intact.

use serde_json::Value;

use crate::cfg_graph::{self, Graph};
use crate::chart::{BarChart, Bars, Line, LineChart, Series};
use crate::html::{esc, f64_at, figure, missing, number, rate, str_at, table, Page};
use crate::Error;

mod hxdp;
mod listing;

use hxdp::hxdp_section;
use listing::{listing_section, optimize_section};

/// What a bound's `model_host` says of its model: whose host, when calibrated and how long ago,
/// its fingerprint and where it came from.
fn model_line(target: &str, host: &Value) -> String {
    let whose = match host.get("this_host").and_then(Value::as_bool) {
        Some(true) => "this host's",
        _ => "another machine's",
    };
    let mut line = format!("The {target} model is {whose}");
    if let Some(of) = str_at(host, "model_host") {
        line.push_str(&format!(" ({of})"));
    }
    match (
        str_at(host, "calibrated"),
        host.get("age_s").and_then(Value::as_u64),
    ) {
        (Some(when), Some(age)) => {
            line.push_str(&format!(", calibrated {when} ({} ago)", age_text(age)))
        }
        (Some(when), None) => line.push_str(&format!(", calibrated {when}")),
        _ => line.push_str(", with no calibration date"),
    }
    if let Some(key) = str_at(host, "model_fingerprint") {
        line.push_str(&format!("; fingerprint {key}"));
    }
    let origin = match str_at(host, "origin") {
        Some("cache") | Some("calibrated") => str_at(host, "model_file")
            .map(|f| format!("; from the cache, {f}"))
            .unwrap_or_default(),
        Some("file") => str_at(host, "model_file")
            .map(|f| format!("; from {f}"))
            .unwrap_or_default(),
        Some("shipped") => "; shipped with linerate".to_string(),
        _ => String::new(),
    };
    line.push_str(&origin);
    line.push('.');
    line
}

/// A duration in seconds as a reader says it: `40 s`, `12 min`, `5 h`, `3 days`.
fn age_text(seconds: u64) -> String {
    match seconds {
        s if s < 120 => format!("{s} s"),
        s if s < 2 * 3600 => format!("{} min", s / 60),
        s if s < 2 * 86_400 => format!("{} h", s / 3600),
        s => format!("{} days", s / 86_400),
    }
}

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
    pub fn why(&self, what: &str) -> String {
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

/// What `bound` guaranteed on one target, for the index.
pub struct Guarantee {
    pub target: String,
    /// The slowest satisfiable path's packet rate.
    pub ssp_pps: Option<f64>,
    /// Without a satisfiable path yet: the rate no satisfiable path falls below.
    pub at_least_pps: Option<f64>,
    pub bottleneck: String,
    pub complete: Option<bool>,
    /// Why there is no guarantee (the step failed or did not run).
    pub missing: Option<String>,
}

/// The figures of a program an index lists.
pub struct Headline {
    pub program: String,
    pub insns: Option<u64>,
    pub guarantees: Vec<Guarantee>,
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
            Guarantee {
                target: t.target.clone(),
                ssp_pps: ssp.and_then(|s| f64_at(s, "pps")),
                at_least_pps: bound.and_then(|b| f64_at(b.get("bound")?, "pps")),
                bottleneck: ssp
                    .and_then(|s| str_at(s, "bottleneck"))
                    .unwrap_or_default()
                    .to_string(),
                complete: bound.and_then(|b| b.get("complete")?.as_bool()),
                missing: bound.is_none().then(|| t.bound.why("bound")),
            }
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
    for t in &run.targets {
        let Some(host) = t.bound.value().and_then(|b| b.get("model_host")) else {
            continue;
        };
        out.push_str(&format!(
            "<p data-key=\"model-of-{}\">{}</p>",
            esc(&t.target),
            esc(&model_line(&t.target, host))
        ));
        if let Some(warning) = str_at(host, "warning") {
            out.push_str(&format!(
                "<p class=\"warn\" data-key=\"model-host-{}\">Warning: {}</p>",
                esc(&t.target),
                esc(warning)
            ));
        }
    }
    let mut facts = Vec::new();
    match run.measure.value().and_then(slowest_measured) {
        Some((rank, pps)) => facts.push(format!(
            "<li>Slowest path measured on this host: path {rank} at {}.</li>",
            number("measured-slowest-pps", pps, &rate(pps, "pps"))
        )),
        None if run.measure.value().is_some() => facts.push(
            "<li>No path measured on this host: the search confirmed no satisfiable path in its \
             time.</li>"
                .into(),
        ),
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
        return missing("measure timed no path: its search confirmed no satisfiable path in time.");
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
                "bars per path rank",
                "the trials' 90th percentile: this host's slow moments, which the estimate holds in"
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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

    #[test]
    fn the_model_line_says_whose_model_when_and_from_where() {
        let host = json!({
            "this_host": true, "model_host": "AMD EPYC, Linux 6.18",
            "calibrated": "2026-12-02 01:14 UTC", "age_s": 7200,
            "model_fingerprint": "f1c98e4a09ab5476", "origin": "cache",
            "model_file": "/root/.cache/linerate/x86-f1c98e4a09ab5476.json"
        });
        assert_eq!(
            model_line("x86", &host),
            "The x86 model is this host's (AMD EPYC, Linux 6.18), calibrated 2026-12-02 01:14 UTC \
             (2 h ago); fingerprint f1c98e4a09ab5476; from the cache, \
             /root/.cache/linerate/x86-f1c98e4a09ab5476.json."
        );
        let shipped = json!({"this_host": false, "origin": "shipped"});
        assert_eq!(
            model_line("x86", &shipped),
            "The x86 model is another machine's, with no calibration date; shipped with linerate."
        );
        assert_eq!(age_text(59), "59 s");
        assert_eq!(age_text(3 * 86_400), "3 days");
    }
}
