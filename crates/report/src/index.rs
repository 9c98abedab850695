//! The index of a folder of reports: one row per program with its headline figures and a link
//! to its page, and a chart of the guarantees side by side.

use crate::chart::{BarChart, Bars};
use crate::html::{esc, figure, missing, number, rate, table, Page};
use crate::program::{Guarantee, Headline};

/// One report in the folder: its page's file name and headline, or why it has none.
pub struct Entry {
    pub object: String,
    pub page: Option<String>,
    pub headline: Result<Headline, String>,
}

/// The index page over `entries`; `targets` orders the guarantee columns.
pub fn index_page(entries: &[Entry], targets: &[String], generator: &str, seconds: f64) -> String {
    let mut page = Page::new(
        "linerate reports",
        &format!(
            "{} programs; worst-case guarantees, measurement, optimization and hXDP per program",
            entries.len()
        ),
    );
    let mut header: Vec<String> = vec!["object".into(), "program".into(), "insns".into()];
    for t in targets {
        header.push(format!("{t} guarantee"));
    }
    header.extend(
        [
            "measured slowest",
            "optimized insns",
            "hXDP rows",
            "seconds",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut rows = Vec::new();
    for e in entries {
        let link = match &e.page {
            Some(p) => format!("<a href=\"{}\">{}</a>", esc(p), esc(&e.object)),
            None => esc(&e.object),
        };
        let h = match &e.headline {
            Ok(h) => h,
            Err(why) => {
                let mut row = vec![link, missing(why)];
                row.resize(header.len(), String::new());
                rows.push(row);
                continue;
            }
        };
        let mut row = vec![
            link,
            esc(&h.program),
            h.insns.map_or(String::new(), |n| n.to_string()),
        ];
        for t in targets {
            let cell = h
                .guarantees
                .iter()
                .find(|g| &g.target == t)
                .map_or(String::new(), guarantee_cell);
            row.push(cell);
        }
        row.push(
            h.measured_slowest_pps
                .map_or(String::new(), |p| rate(p, "pps")),
        );
        row.push(h.optimized_insns.map_or(String::new(), |n| n.to_string()));
        row.push(h.hxdp_rows.map_or(String::new(), |n| n.to_string()));
        row.push(format!("{:.1}", h.seconds));
        rows.push(row);
    }
    let mut body = table("index", &header_refs, &rows);
    // Named by object: several objects may hold programs of one name.
    let (names, ok): (Vec<String>, Vec<&Headline>) = entries
        .iter()
        .filter_map(|e| Some((object_stem(&e.object), e.headline.as_ref().ok()?)))
        .unzip();
    if !ok.is_empty() {
        let chart = BarChart {
            title: "Worst-case guarantee per program".into(),
            y_label: "Mpps".into(),
            categories: names,
            groups: targets
                .iter()
                .enumerate()
                .map(|(i, t)| Bars {
                    name: t.clone(),
                    values: ok
                        .iter()
                        .map(|h| {
                            h.guarantees
                                .iter()
                                .find(|g| &g.target == t)
                                .and_then(|g| g.ssp_pps)
                                .filter(|p| p.is_finite())
                                .map(|p| p / 1e6)
                        })
                        .collect(),
                    color: i,
                })
                .collect(),
            size: (1100, 420),
        };
        match chart.svg() {
            Ok(svg) => body.push_str(&figure(
                "plot",
                &svg,
                "The slowest satisfiable path's packet rate on each device model.",
            )),
            Err(e) => body.push_str(&missing(&e.to_string())),
        }
    }
    page.section("programs", "Programs", body);
    page.footer(format!("Made by {} in {seconds:.0} s.", esc(generator)));
    page.finish()
}

/// A target's guarantee in the index: the slowest satisfiable path's rate and bottleneck, or the
/// rate an unfinished search had reached, or why there is none (hover).
fn guarantee_cell(g: &Guarantee) -> String {
    let t = &g.target;
    match (g.ssp_pps, g.at_least_pps, &g.missing) {
        (Some(p), _, _) => format!(
            "{} <small>{}{}</small>",
            number(&format!("ssp-pps-{t}"), p, &rate(p, "pps")),
            esc(&g.bottleneck),
            if g.complete == Some(false) {
                ", incomplete"
            } else {
                ""
            }
        ),
        (None, Some(b), _) => format!(
            "≥ {} <small>incomplete</small>",
            number(&format!("at-least-pps-{t}"), b, &rate(b, "pps"))
        ),
        (None, None, Some(why)) => format!("<span title=\"{}\">n/a</span>", esc(why)),
        (None, None, None) => "no packet completes".into(),
    }
}

/// An object's file name without folder and extension.
fn object_stem(object: &str) -> String {
    std::path::Path::new(object)
        .file_stem()
        .map_or_else(|| object.to_string(), |s| s.to_string_lossy().into_owned())
}
