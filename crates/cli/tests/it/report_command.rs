//! `linerate report`: pages rendered in a real browser (headless Chromium) with every plot drawn,
//! and the numbers they show equal to what `linerate bound --json` says of the same program;
//! folders of pages with their index; the one-line errors.

use crate::common;

use std::path::Path;

use common::browser::{drawn_svgs, rendered_dom, screenshot};
use common::{example, expect_error, run, TempDir};
use serde_json::Value;

/// The `data-value` of the element whose `data-key` is `key`.
fn value_on_page(html: &str, key: &str) -> Option<String> {
    let marker = format!("data-key=\"{key}\" data-value=\"");
    let start = html.find(&marker)? + marker.len();
    Some(html[start..].split('"').next()?.to_string())
}

/// Every SVG of the rendered page was drawn with a size and content.
fn assert_drawn(dom: &str, at_least: usize, page: &Path) {
    let svgs = drawn_svgs(dom);
    assert!(
        svgs.len() >= at_least,
        "{}: {} SVGs drawn, expected at least {at_least}",
        page.display(),
        svgs.len()
    );
    for (i, (w, h, n)) in svgs.iter().enumerate() {
        assert!(
            *w > 50.0 && *h > 50.0 && *n > 5,
            "{}: SVG {i} drawn {w}x{h} with {n} elements",
            page.display()
        );
    }
}

/// The page's guarantee, naive bound and completeness per target equal `bound --json`'s; where
/// `bound` refuses the program on a target, the page has no guarantee for it and says why.
fn assert_matches_bound(html: &str, object: &Path, targets: &[&str], timeout: &str) {
    for target in targets {
        let out = run([
            "bound",
            object.to_str().unwrap(),
            "--target",
            target,
            "--json",
            "--timeout",
            timeout,
        ]);
        if out.code != Some(0) {
            assert!(value_on_page(html, &format!("ssp-pps-{target}")).is_none());
            let reason = out.stderr.trim_start_matches("error: ");
            let cause = reason.rsplit(": ").next().unwrap();
            assert!(
                html.contains(&cause[..cause.len().min(40)]),
                "{target}: the page does not say why bound failed: {reason}"
            );
            continue;
        }
        let bound = out.json();
        assert_eq!(bound["complete"], Value::Bool(true), "{target}: {bound}");
        for (key, field) in [("ssp-pps", "ssp"), ("naive-pps", "naive")] {
            let shown: f64 = value_on_page(html, &format!("{key}-{target}"))
                .unwrap_or_else(|| panic!("no {key}-{target} on the page"))
                .parse()
                .unwrap();
            let said = bound[field]["pps"].as_f64().unwrap();
            assert_eq!(
                shown, said,
                "{target} {field}: page {shown}, bound --json {said}"
            );
        }
        assert_eq!(
            value_on_page(html, &format!("complete-{target}")).as_deref(),
            Some("true"),
            "{target}"
        );
    }
}

#[test]
fn pages_render_in_a_browser_and_show_what_bound_says() {
    if let Err(why) = common::kernel_available() {
        // The page's measurement part needs the kernel; the rest is checked in any case.
        println!("SKIPPED measurement part: {why}");
    }
    let dir = TempDir::new("report-pages");
    // A simple program and the path explosion, whose naive bound is impossible and whose bound
    // rises over time.
    for (name, optimize) in [("xdp_filter", true), ("xdp_path_explosion", false)] {
        let object = example(&format!("{name}.o"));
        let page = dir.path().join(format!("{name}.html"));
        let mut args = vec![
            "report".to_string(),
            object.display().to_string(),
            "-o".into(),
            page.display().to_string(),
            "--bound-timeout".into(),
            "120".into(),
            "--measure-paths".into(),
            "3".into(),
        ];
        if optimize {
            args.extend([
                "--optimize-budget".into(),
                "1s".into(),
                "--optimize-no-measure".into(),
            ]);
        } else {
            args.push("--no-optimize".into());
        }
        let out = run(&args);
        assert!(out.ok().contains("wrote"), "{out:?}");
        let html = std::fs::read_to_string(&page).unwrap();
        for id in [
            "summary", "cfg", "anytime", "measured", "listing", "optimize", "hxdp",
        ] {
            assert!(
                html.contains(&format!("<section id=\"{id}\">")),
                "{name}: no {id}"
            );
        }
        assert!(
            html.contains("class=\"on-path\""),
            "{name}: the SSP is marked in the listing"
        );
        assert!(
            html.contains("class=\"src\""),
            "{name}: source lines are shown"
        );
        assert!(
            !html.contains("<script"),
            "{name}: the page needs no script"
        );
        assert!(
            !html.contains("http://") || !html.contains("src=\"http"),
            "{name}: no remote asset"
        );
        if optimize {
            assert!(
                html.contains("class=\"rewritten\""),
                "{name}: rewrites are marked"
            );
        }
        assert_matches_bound(&html, &object, &["x86", "nfp"], "120");
        // CFG and bound over time per target the program runs on, estimate against
        // measurement; every SVG on the page drawn.
        let dom = rendered_dom(&page, dir.path());
        let targets = ["x86", "nfp"]
            .iter()
            .filter(|t| value_on_page(&html, &format!("ssp-pps-{t}")).is_some())
            .count();
        assert!(targets >= 1, "{name}: no guarantee on the page");
        let expected = 2 * targets + usize::from(common::kernel_available().is_ok());
        let on_page = html.matches("<svg").count();
        assert!(
            on_page >= expected,
            "{name}: {on_page} SVGs, expected {expected}"
        );
        assert_drawn(&dom, on_page, &page);
        // A screenshot of the page's top (kept where LINERATE_SCREENSHOTS names a folder).
        let shots = std::env::var_os("LINERATE_SCREENSHOTS")
            .map_or_else(|| dir.path().to_path_buf(), std::path::PathBuf::from);
        let png = shots.join(format!("{name}.png"));
        screenshot(&page, &png, 1280, 6000);
        let bytes = std::fs::read(&png).unwrap();
        assert!(
            bytes.starts_with(b"\x89PNG") && bytes.len() > 50_000,
            "{name}: {} bytes",
            bytes.len()
        );
    }
    // The path explosion's naive bound is an impossible path: it is drawn, dashed.
    let html = std::fs::read_to_string(dir.path().join("xdp_path_explosion.html")).unwrap();
    assert!(
        html.contains("class=\"node block naive\""),
        "the naive path's blocks are drawn"
    );
}

#[test]
fn several_objects_make_a_folder_with_an_index() {
    let dir = TempDir::new("report-folder");
    let folder = dir.path().join("pages");
    let out = run([
        "report",
        example("xdp_filter.o").to_str().unwrap(),
        example("xdp_reflector.o").to_str().unwrap(),
        "-o",
        folder.to_str().unwrap(),
        "--quick",
        "--target",
        "x86",
    ]);
    assert!(out.ok().contains("wrote 2 pages"), "{out:?}");
    let index = folder.join("index.html");
    let html = std::fs::read_to_string(&index).unwrap();
    for name in ["xdp_filter", "xdp_reflector"] {
        assert!(
            html.contains(&format!("href=\"{name}.html\"")),
            "{name} linked"
        );
        assert!(folder.join(format!("{name}.html")).is_file());
    }
    assert_drawn(&rendered_dom(&index, dir.path()), 1, &index);
    // --quick still runs every step: the optimizer's rules and the hXDP schedule are there.
    let page = std::fs::read_to_string(folder.join("xdp_filter.html")).unwrap();
    assert!(page.contains("Optimizer (size goal)"), "the optimizer ran");
    assert!(page.contains("data-key=\"hxdp-rows\""), "hxdp ran");
}

#[test]
fn a_missing_dot_is_named_in_one_line_and_nothing_is_written() {
    let dir = TempDir::new("report-no-dot");
    let page = dir.path().join("p.html");
    let out = common::output({
        let mut cmd = std::process::Command::new(common::bin());
        cmd.args(["report", example("xdp_filter.o").to_str().unwrap(), "-o"])
            .arg(&page)
            .env("PATH", dir.path());
        cmd
    });
    expect_error(&out, &["Graphviz", "dot"]);
    assert!(!page.exists());
}

#[test]
fn bad_inputs_are_named_in_one_line() {
    let dir = TempDir::new("report-bad");
    let page = dir.path().join("p.html");
    let missing = dir.path().join("absent.o");
    let out = run([
        "report",
        missing.to_str().unwrap(),
        "-o",
        page.to_str().unwrap(),
    ]);
    expect_error(&out, &["absent.o"]);
    assert!(!page.exists());
    let out = run([
        "report",
        example("xdp_filter.o").to_str().unwrap(),
        example("xdp_reflector.o").to_str().unwrap(),
    ]);
    expect_error(&out, &["-o FOLDER"]);
    let garbage = dir.write("garbage.o", b"\x7fELF not really");
    let out = run([
        "report",
        garbage.to_str().unwrap(),
        "-o",
        page.to_str().unwrap(),
    ]);
    expect_error(&out, &["garbage.o"]);
    assert!(!page.exists());
}
