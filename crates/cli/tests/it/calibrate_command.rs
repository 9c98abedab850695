//! `linerate calibrate --check` (issue 30 item 1): a sample of items re-timed against a model.
//! A model whose sampled prices are far from this host's is reported as no longer fitting (exit
//! status 2, the moved items named on one line, the table on stdout); a missing cache is one
//! error line.

use crate::common::{expect_error, kernel_available, output, run, TempDir};

/// The shipped x86 model with the prices of `scaled` multiplied by `factor`, written to `dir`.
fn doctored_model(dir: &TempDir, scaled: &[&str], factor: f64) -> String {
    let mut file = linerate_cost::Model::builtin_file("x86").unwrap();
    for key in scaled {
        let price = file.items.get_mut(*key).unwrap();
        for cycles in price.cost.as_mut().unwrap().values_mut() {
            *cycles *= factor;
        }
    }
    let path = dir.path().join("doctored.json");
    std::fs::write(&path, serde_json::to_string_pretty(&file).unwrap()).unwrap();
    path.display().to_string()
}

#[test]
fn a_model_far_from_this_host_no_longer_fits() {
    if let Err(why) = kernel_available() {
        linerate_kernel::skip_or_fail(&format!("calibrate --check: {why}"));
        return;
    }
    let dir = TempDir::new("calibrate-check");
    let model = doctored_model(&dir, &["alu64.div.reg", "map.lookup.hash.k8"], 10.0);
    let out = run(["calibrate", "--check", "--model", model.as_str()]);
    assert_eq!(out.code, Some(2), "{out:#?}");
    let error: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.starts_with("error: "))
        .collect();
    assert_eq!(error.len(), 1, "{}", out.stderr);
    for part in ["no longer fits", "alu64.div.reg -", "map.lookup.hash.k8 -"] {
        assert!(error[0].contains(part), "`{part}` in {}", error[0]);
    }
    let moved: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| l.ends_with("moved"))
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert!(
        moved.contains(&"alu64.div.reg") && moved.contains(&"map.lookup.hash.k8"),
        "{}",
        out.stdout
    );

    let json = run(["calibrate", "--check", "--model", model.as_str(), "--json"]);
    assert_eq!(json.code, Some(2));
    let document: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(document["fits"], false);
    let items = document["items"].as_array().unwrap();
    assert_eq!(items[0]["item"], "per_packet");
    let div = items.iter().find(|i| i["item"] == "alu64.div.reg").unwrap();
    assert_eq!(div["moved"], true);
    assert!(div["change"].as_f64().unwrap() < -0.8, "{div}");
}

#[test]
fn checking_without_a_cached_model_is_one_error_line() {
    let cache = TempDir::new("calibrate-check-empty");
    let mut cmd = std::process::Command::new(crate::common::bin());
    cmd.args(["calibrate", "--check"])
        .env(linerate_calibrate::cache::XDG_CACHE_HOME, cache.path());
    let out = output(cmd);
    expect_error(&out, &["no cached model of this host", "does not exist"]);
}
