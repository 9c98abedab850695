//! The hXDP part of a program's page: the VLIW schedule as rows and lanes, the lanes sweep and
//! the pass ablation (paper 003).

use serde_json::Value;

use super::{Part, ProgramRun};
use crate::chart::{css_color, BarChart, Bars, Line, LineChart, Series};
use crate::html::{esc, f64_at, figure, missing, number, rate, str_at};

pub(super) fn hxdp_section(run: &ProgramRun) -> String {
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
