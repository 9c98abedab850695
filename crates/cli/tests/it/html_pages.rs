//! `--html` on `p4 latency`, `p4 fit`, `colocate predict` and `colocate place`, run as a user
//! runs them on the bundled examples (colocate on the simulated SmartNIC with a small quota):
//! each page opens in headless Chromium with every plot drawn, the numbers it shows for machines
//! (`data-key` JSON pointers, `data-value`) equal the command's `--json` output, and a page that
//! cannot be written is one `error:` line with no file left behind.

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use common::*;
use serde_json::Value;

/// One browser at a time: concurrent headless instances compete for the two cores and a profile.
static BROWSER: Mutex<()> = Mutex::new(());

/// Every `data-key="K" data-value="V"` pair on a page.
fn page_numbers(html: &str) -> Vec<(String, f64)> {
    html.split("data-key=\"")
        .skip(1)
        .filter_map(|rest| {
            let (key, rest) = rest.split_once('"')?;
            let value = rest.strip_prefix(" data-value=\"")?.split('"').next()?;
            Some((key.to_string(), value.parse().ok()?))
        })
        .collect()
}

/// Renders `page` in Chromium and checks it: self-contained, `svgs` plots each drawn with a
/// size and content, and every number keyed by a JSON pointer equal to `json` there. Returns the
/// page's numbers.
fn check_page(page: &Path, scratch: &TempDir, json: &Value, svgs: usize) -> Vec<(String, f64)> {
    let html = std::fs::read_to_string(page).expect("the page was written");
    assert!(html.starts_with("<!DOCTYPE html>"), "{}", page.display());
    for outside in ["<script", "src=\"http", "href=\"http", "<link"] {
        assert!(
            !html.contains(outside),
            "{} holds `{outside}`",
            page.display()
        );
    }
    let dom = {
        let _one = BROWSER.lock().unwrap_or_else(|e| e.into_inner());
        browser::rendered_dom(page, scratch.path())
    };
    let drawn = browser::drawn_svgs(&dom);
    assert_eq!(drawn.len(), svgs, "{}: {drawn:?}", page.display());
    for (width, height, elements) in drawn {
        assert!(
            width > 0.0 && height > 0.0 && elements > 10,
            "{width} {height} {elements}"
        );
    }
    let numbers = page_numbers(&html);
    let mut compared = 0;
    for (key, shown) in &numbers {
        if !key.starts_with('/') {
            continue;
        }
        let said = json
            .pointer(key)
            .and_then(Value::as_f64)
            .unwrap_or_else(|| panic!("the page shows {key}, the JSON has no number there"));
        assert_eq!(*shown, said, "{key}");
        compared += 1;
    }
    assert!(
        compared >= 3,
        "only {compared} numbers compared on {}",
        page.display()
    );
    numbers
}

fn number(numbers: &[(String, f64)], key: &str) -> f64 {
    numbers
        .iter()
        .find(|(k, _)| k == key)
        .unwrap_or_else(|| panic!("no {key} on the page"))
        .1
}

fn p4_example(name: &str) -> PathBuf {
    examples().join("p4").join(name)
}

#[test]
fn p4_latency_page_draws_the_breakdown_the_json_gives() {
    let dir = TempDir::new("html-p4-latency");
    let page = dir.path().join("latency.html");
    let program = p4_example("l3_fwd_firewall.p4");
    let j = run([
        "p4".as_ref(),
        "latency".as_ref(),
        program.as_os_str(),
        "--json".as_ref(),
        "--html".as_ref(),
        page.as_os_str(),
    ])
    .json();
    let numbers = check_page(&page, &dir, &j, 1);
    for key in [
        "/latency_ns",
        "/breakdown/parse_and_modify_ns",
        "/breakdown/tables_ns",
    ] {
        assert!(
            numbers.iter().any(|(k, _)| k == key),
            "{key} not on the page"
        );
    }

    // Without --json the text still prints, and the page is the same.
    let again = dir.path().join("again.html");
    let text = run([
        "p4".as_ref(),
        "latency".as_ref(),
        program.as_os_str(),
        "--html".as_ref(),
        again.as_os_str(),
    ]);
    assert!(text.ok().contains("latency: 8934 ns"), "{}", text.stdout);
    assert_eq!(
        std::fs::read(&page).unwrap(),
        std::fs::read(&again).unwrap()
    );
}

#[test]
fn p4_fit_page_draws_the_fit_against_the_measurements() {
    let dir = TempDir::new("html-p4-fit");
    // Cells of 5000 ns plus 100 per parsed header, tables 50·γ² + 200·γ, and ±7 ns of
    // alternating noise so that the fit has an error to show.
    let mut csv = String::from("case,alpha,beta,gamma,actions,latency_ns\n");
    let mut rows = Vec::new();
    for alpha in 1..=2u32 {
        for gamma in 0..=3u32 {
            for (trial, noise) in [-7.0, 7.0].into_iter().enumerate() {
                let ns = f64::from(5000 + 100 * alpha + 50 * gamma * gamma + 200 * gamma) + noise;
                csv += &format!("p{alpha}g{gamma}t{trial},{alpha},1,{gamma},implicit,{ns}\n");
                rows.push((alpha, gamma, ns));
            }
        }
    }
    dir.write("m.csv", csv);
    let out = run_in(
        Some(dir.path()),
        [
            "p4",
            "fit",
            "m.csv",
            "-o",
            "host.json",
            "--json",
            "--html",
            "fit.html",
        ],
    );
    let model = out.json();
    assert_eq!(
        serde_json::from_str::<Value>(
            &std::fs::read_to_string(dir.path().join("host.json")).unwrap()
        )
        .unwrap(),
        model,
        "--json prints the model written"
    );
    let numbers = check_page(&dir.path().join("fit.html"), &dir, &model, 2);
    // The page's mean absolute error is the model's (from --json) against the CSV.
    let (q, l) = (
        model["tables"]["quadratic"].as_f64().unwrap(),
        model["tables"]["linear"].as_f64().unwrap(),
    );
    let cell = |alpha: u32| {
        model["base"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["alpha"] == alpha)
            .unwrap()["ns"]
            .as_f64()
            .unwrap()
    };
    let mean_absolute = rows
        .iter()
        .map(|&(alpha, gamma, ns)| {
            let g = f64::from(gamma);
            (cell(alpha) + q * g * g + l * g - ns).abs()
        })
        .sum::<f64>()
        / rows.len() as f64;
    let shown = number(&numbers, "mean_absolute_error_ns");
    assert!(
        (shown - mean_absolute).abs() < 1e-9,
        "{shown} against {mean_absolute}"
    );
    assert!(shown > 0.0, "the noise leaves an error");
}

/// Profiles `nfs` on the simulated device with a small quota and trains them.
fn sim_models(dir: &TempDir, nfs: &[&str]) -> PathBuf {
    let mut args = vec!["colocate".to_string(), "train".into()];
    for nf in nfs {
        let path = dir.path().join(format!("{nf}.profile.json"));
        let path = path.to_str().unwrap();
        run([
            "colocate",
            "profile",
            nf,
            "--backend",
            "sim",
            "--quota",
            "40",
            "--random",
            "-o",
            path,
        ])
        .ok();
        args.push(path.into());
    }
    let models = dir.path().join("models.json");
    args.extend(["-o".into(), models.display().to_string()]);
    run(&args).ok();
    models
}

#[test]
fn colocate_predict_page_draws_predictors_against_the_device() {
    let dir = TempDir::new("html-predict");
    let models = sim_models(&dir, &["nids", "flowmonitor"]);
    let page = dir.path().join("predict.html");
    let j = run([
        "colocate",
        "predict",
        models.to_str().unwrap(),
        "--target",
        "nids",
        "--competitor",
        "flowmonitor@1000,1500,1200",
        "--flows",
        "1000",
        "--mtbr",
        "1200",
        "--json",
        "--html",
        page.to_str().unwrap(),
    ])
    .json();
    let measured = j["measured"]["pps"]
        .as_f64()
        .expect("sim models are measured");
    assert!(
        measured > 0.0 && measured < j["measured"]["solo_pps"].as_f64().unwrap(),
        "{j}"
    );
    let numbers = check_page(&page, &dir, &j, 2);
    for key in [
        "/predicted_pps",
        "/solo_pps",
        "/measured/pps",
        "/per_resource/regex",
    ] {
        assert!(
            numbers.iter().any(|(k, _)| k == key),
            "{key} not on the page"
        );
    }
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("<strong>regex</strong> (bottleneck)"),
        "the bottleneck is named"
    );
}

#[test]
fn colocate_place_page_draws_each_strategy() {
    let dir = TempDir::new("html-place");
    let models = sim_models(&dir, &["flowstats", "nat", "flowmonitor", "nids", "ipcomp"]);
    let page = dir.path().join("place.html");
    let j = run([
        "colocate",
        "place",
        models.to_str().unwrap(),
        "--random",
        "2",
        "--length",
        "10",
        "--json",
        "--html",
        page.to_str().unwrap(),
    ])
    .json();
    let strategies = j["strategies"].as_array().unwrap();
    // With no violation at all there is no violations chart, only its note.
    let violated = strategies
        .iter()
        .any(|s| s["sla_violations"].as_u64() > Some(0));
    let numbers = check_page(&page, &dir, &j, 1 + usize::from(violated));
    for i in 0..strategies.len() {
        for field in ["nics", "waste", "sla_violations"] {
            let key = format!("/strategies/{i}/{field}");
            assert!(
                numbers.iter().any(|(k, _)| *k == key),
                "{key} not on the page"
            );
        }
    }
}

#[test]
fn a_page_that_cannot_be_written_is_one_line_and_no_file() {
    let dir = TempDir::new("html-bad");
    let program = p4_example("l3_fwd.p4");
    expect_error_in(
        &dir,
        &[
            "p4",
            "latency",
            program.to_str().unwrap(),
            "--html",
            "nosuch/page.html",
        ],
        &["nosuch/page.html"],
    );
    dir.write(
        "m.csv",
        "case,alpha,beta,gamma,actions,latency_ns\nA,1,1,0,implicit,100\nB,1,1,1,implicit,150\n",
    );
    // The page comes first: no model is left without the page asked for.
    expect_error_in(
        &dir,
        &[
            "p4",
            "fit",
            "m.csv",
            "-o",
            "model.json",
            "--html",
            "nosuch/fit.html",
        ],
        &["nosuch/fit.html"],
    );
}
