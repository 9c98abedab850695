//! `--target x86` is this host (issue 30 item 1): with an empty cache the first command
//! calibrates and caches this host's model, later ones reuse it without timing anything, and
//! concurrent first commands calibrate once. Figures priced with an x86 model of another machine
//! say so: in the text (a heading `warning:` line), in `--json` (`model_host`) and on report
//! pages, naming what differs; without BPF the shipped model is used with that warning and the
//! reason. Device models (NFP) are not checked.

use std::path::Path;
use std::process::Command;

use crate::common::{
    bin, cannot_drop_privileges, example, kernel_available, output, run, unprivileged_with, Out,
    TempDir,
};

/// The shipped x86 model file, as a user passes it with `--model`.
fn shipped_model() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../cost/models/x86.json")
        .display()
        .to_string()
}

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

fn bound_args(model: &[&str], json: bool) -> Vec<String> {
    let mut args = vec![
        "bound".to_string(),
        example("xdp_filter.o").display().to_string(),
    ];
    args.extend(model.iter().map(|a| a.to_string()));
    if json {
        args.push("--json".into());
    }
    args
}

fn bound(model: &[&str], json: bool) -> Out {
    run(bound_args(model, json))
}

/// `bound` with `cache` as its `XDG_CACHE_HOME`.
fn bound_with_cache(cache: &Path, json: bool) -> Command {
    let mut cmd = Command::new(bin());
    cmd.args(bound_args(&[], json))
        .env(linerate_calibrate::cache::XDG_CACHE_HOME, cache);
    cmd
}

#[test]
fn first_use_calibrates_once_and_later_commands_reuse_the_cache() {
    if let Err(why) = kernel_available() {
        linerate_kernel::skip_or_fail(&format!("first use calibrates: {why}"));
        return;
    }
    let cache = TempDir::new("model-host-first-use");
    // Two commands start with the cache empty: one calibrates, the other waits and reuses.
    let firsts: Vec<serde_json::Value> = std::thread::scope(|scope| {
        let runs: Vec<_> = (0..2)
            .map(|_| scope.spawn(|| output(bound_with_cache(cache.path(), true)).json()))
            .collect();
        runs.into_iter().map(|r| r.join().unwrap()).collect()
    });
    let mut origins: Vec<&str> = firsts
        .iter()
        .map(|j| j["model_host"]["origin"].as_str().unwrap_or_default())
        .collect();
    origins.sort();
    assert_eq!(origins, ["cache", "calibrated"], "{firsts:#?}");
    let here = linerate_calibrate::fingerprint::current();
    for json in &firsts {
        let host = &json["model_host"];
        assert_eq!(host["this_host"], true, "{json}");
        assert_eq!(host["model_fingerprint"], here.key().as_str());
        assert!(host["warning"].is_null());
    }
    let calibrated = firsts
        .iter()
        .find(|j| j["model_host"]["origin"] == "calibrated")
        .unwrap();
    let seconds = calibrated["model_host"]["calibration_seconds"]
        .as_f64()
        .unwrap();
    assert!(seconds > 1.0, "a calibration takes time: {seconds} s");
    let file = linerate_calibrate::cache::path_in(&cache.path().join("linerate"), &here);
    assert_eq!(
        calibrated["model_host"]["model_file"],
        file.display().to_string().as_str()
    );
    let written = std::fs::metadata(&file).unwrap().modified().unwrap();
    // Both priced with the cached model, and so agree.
    assert_eq!(firsts[0]["bound"], firsts[1]["bound"]);

    // A later command reads the cache: nothing timed, the file untouched, no warning.
    let later = output(bound_with_cache(cache.path(), false));
    assert!(!later.ok().contains("warning"), "{}", later.ok());
    let json = output(bound_with_cache(cache.path(), true)).json();
    assert_eq!(json["model_host"]["origin"], "cache", "{json}");
    assert!(json["model_host"]["calibration_seconds"].is_null());
    assert_eq!(
        std::fs::metadata(&file).unwrap().modified().unwrap(),
        written
    );
}

/// A cache that cannot be written (here under /proc) is one error line naming it, not a
/// calibration whose result is lost.
#[test]
fn an_unwritable_cache_is_one_error_line() {
    if let Err(why) = kernel_available() {
        linerate_kernel::skip_or_fail(&format!("unwritable cache: {why}"));
        return;
    }
    let out = output(bound_with_cache(Path::new("/proc/linerate-cache"), false));
    crate::common::expect_error(
        &out,
        &["cannot use the x86 model cache /proc/linerate-cache"],
    );
}

#[test]
fn without_bpf_the_shipped_model_is_used_and_said_to_be_another_machines() {
    if let Some(why) = cannot_drop_privileges() {
        linerate_kernel::skip_or_fail(&format!("without BPF: {why}"));
        return;
    }
    // A cache `nobody` may write, empty: nothing to reuse, and no BPF to calibrate with.
    let cache = TempDir::new("model-host-unprivileged");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(cache.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let filter = example("xdp_filter.o").display().to_string();
    let with_cache = |cmd: &mut Command| {
        cmd.env(linerate_calibrate::cache::XDG_CACHE_HOME, cache.path());
    };
    let text = unprivileged_with(cache.path(), &["bound", &filter], with_cache);
    let first = text.ok().lines().next().unwrap_or_default().to_string();
    assert!(
        first.starts_with("warning: the x86 figures are for another machine")
            && first.contains("cannot be calibrated without BPF"),
        "{first}"
    );
    let json = unprivileged_with(cache.path(), &["bound", &filter, "--json"], with_cache).json();
    assert_eq!(json["model_host"]["origin"], "shipped", "{json}");
    assert_eq!(json["model_host"]["this_host"], false);
    // The report's page repeats it.
    let page = cache.path().join("filter.html").display().to_string();
    let args = [
        "report",
        &filter,
        "-o",
        &page,
        "--quick",
        "--no-measure",
        "--no-optimize",
        "--no-hxdp",
    ];
    unprivileged_with(cache.path(), &args, with_cache).ok();
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains(
            "data-key=\"model-host-x86\">Warning: the x86 figures are for another machine"
        ),
        "no warning on the page"
    );
    assert!(!html.contains("data-key=\"model-host-nfp\""));
    assert!(
        html.contains("The x86 model is another machine&#39;s"),
        "the page names the model"
    );
    assert!(html.contains("shipped with linerate"));
}

#[test]
fn the_shipped_model_by_file_is_another_machines() {
    let model = shipped_model();
    let text = bound(&["--model", &model], false);
    let first = text.ok().lines().next().unwrap_or_default().to_string();
    assert!(
        first.starts_with("warning: the x86 figures are for another machine")
            && first.contains("records no host fingerprint"),
        "{first}"
    );
    let json = bound(&["--model", &model], true).json();
    assert_eq!(json["model_host"]["this_host"], false, "{json}");
    assert_eq!(json["model_host"]["origin"], "file");
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
    assert_eq!(cost["model_host"]["origin"], "cache", "{cost}");
}
