//! Figures priced with an x86 model of another machine say so (issue 30 item 1): in the text
//! (a heading `warning:` line) and in `--json` (`model_host`), naming what differs; a model
//! recording this host's fingerprint gets no warning; device models (NFP) are not checked.

use crate::common::{example, run, TempDir};

/// The shipped x86 model with `fingerprint` recorded, written to `dir`.
fn model_with(
    dir: &TempDir,
    name: &str,
    fingerprint: &linerate_cost::fingerprint::Fingerprint,
) -> String {
    let mut file = linerate_cost::Model::builtin_file("x86").unwrap();
    file.device.fingerprint = Some(fingerprint.clone());
    let path = dir.path().join(name);
    std::fs::write(&path, serde_json::to_string_pretty(&file).unwrap()).unwrap();
    path.display().to_string()
}

fn bound(model: &[&str], json: bool) -> crate::common::Out {
    let filter = example("xdp_filter.o").display().to_string();
    let mut args = vec!["bound", filter.as_str()];
    args.extend_from_slice(model);
    if json {
        args.push("--json");
    }
    run(args)
}

#[test]
fn the_shipped_model_is_another_machines() {
    let text = bound(&[], false);
    let first = text.ok().lines().next().unwrap_or_default().to_string();
    assert!(
        first.starts_with("warning: the x86 figures are for another machine")
            && first.contains("records no host fingerprint"),
        "{first}"
    );
    let json = bound(&[], true).json();
    assert_eq!(json["model_host"]["this_host"], false, "{json}");
    assert!(json["model_host"]["model_fingerprint"].is_null());
}

#[test]
fn a_model_of_this_host_gets_no_warning() {
    let dir = TempDir::new("model-host-same");
    let here = linerate_calibrate::fingerprint::current();
    let model = model_with(&dir, "here.json", &here);
    let text = bound(&["--model", &model], false);
    assert!(!text.ok().contains("warning:"), "{}", text.ok());
    let json = bound(&["--model", &model], true).json();
    let host = &json["model_host"];
    assert_eq!(host["this_host"], true, "{json}");
    assert_eq!(host["model_fingerprint"], host["host_fingerprint"]);
    assert_eq!(host["model_fingerprint"], here.key().as_str());
}

#[test]
fn a_model_of_another_host_names_what_differs() {
    let dir = TempDir::new("model-host-other");
    let mut other = linerate_calibrate::fingerprint::current();
    other.microcode = Some("0xdeadbeef".into());
    other
        .mitigations
        .insert("imagined_flaw".into(), "Vulnerable".into());
    let model = model_with(&dir, "other.json", &other);
    let text = bound(&["--model", &model], false);
    let first = text.ok().lines().next().unwrap_or_default().to_string();
    assert!(first.starts_with("warning:"), "{first}");
    assert!(first.contains("microcode 0xdeadbeef -> "), "{first}");
    assert!(
        first.contains("mitigation imagined_flaw Vulnerable -> (none)"),
        "{first}"
    );
    let json = bound(&["--model", &model], true).json();
    assert_eq!(json["model_host"]["this_host"], false, "{json}");
    let warning = json["model_host"]["warning"].as_str().unwrap_or_default();
    assert!(warning.contains("microcode 0xdeadbeef"), "{warning}");
}

#[test]
fn device_models_carry_no_host_check() {
    let reflector = example("xdp_reflector.o").display().to_string();
    let json = run(["bound", reflector.as_str(), "--target", "nfp", "--json"]).json();
    assert!(json.get("model_host").is_none(), "{json}");
    let cost = run(["cost", reflector.as_str(), "--json"]).json();
    assert_eq!(cost["model_host"]["this_host"], false, "{cost}");
}

#[test]
fn the_report_page_says_the_x86_figures_are_another_machines() {
    let dir = TempDir::new("model-host-report");
    let page = dir.path().join("filter.html");
    let filter = example("xdp_filter.o").display().to_string();
    let page_arg = page.display().to_string();
    run([
        "report",
        filter.as_str(),
        "-o",
        page_arg.as_str(),
        "--quick",
        "--no-measure",
        "--no-optimize",
        "--no-hxdp",
    ])
    .ok();
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains(
            "data-key=\"model-host-x86\">Warning: the x86 figures are for another machine"
        ),
        "no warning on the page"
    );
    assert!(!html.contains("data-key=\"model-host-nfp\""));
}
