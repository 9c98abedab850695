//! `linerate colocate` end to end: profile on the simulated SmartNIC, train, predict (the JSON
//! contract, the bottleneck, every baseline) and place (the JSON contract, waste against the
//! optimum); imported CSV profiles; profiling on this host's kernel; and refusals, each one line
//! naming its cause with no file left behind.

use crate::common;

use common::*;
use serde_json::Value;

/// Profiles `nfs` on the simulated device with `quota` and trains them into `models.json`.
fn sim_models(dir: &TempDir, nfs: &[&str], quota: &str) -> std::path::PathBuf {
    let mut profiles = Vec::new();
    for nf in nfs {
        let path = dir.path().join(format!("{nf}.profile.json"));
        let j = run([
            "colocate",
            "profile",
            nf,
            "--backend",
            "sim",
            "--quota",
            quota,
            "--random",
            "-o",
            path.to_str().unwrap(),
            "--json",
        ])
        .json();
        assert_eq!(j["nf"], *nf);
        assert_eq!(j["backend"], "sim");
        assert!(j["measurements"].as_u64().unwrap() > 100, "{j}");
        profiles.push(path);
    }
    let models = dir.path().join("models.json");
    let mut args = vec!["colocate".to_string(), "train".into()];
    args.extend(profiles.iter().map(|p| p.display().to_string()));
    args.extend(["-o".into(), models.display().to_string(), "--json".into()]);
    let trained = run(&args).json();
    assert_eq!(trained.as_array().unwrap().len(), nfs.len(), "{trained}");
    models
}

fn predict(models: &std::path::Path, extra: &[&str]) -> Value {
    let mut args = vec!["colocate", "predict", models.to_str().unwrap(), "--json"];
    args.extend_from_slice(extra);
    run(&args).json()
}

/// The NIDS-like NF next to a regex-heavy competitor at a small flow count: the JSON contract,
/// the regex accelerator named the bottleneck, Tomur's drop at least the memory-only
/// SLOMO-style one, and the solo rate predicting no drop at all.
#[test]
fn sim_profile_train_predict_keeps_the_contract() {
    let dir = TempDir::new("colocate-sim");
    let models = sim_models(&dir, &["nids", "flowmonitor", "flowstats"], "300");
    let j = predict(
        &models,
        &[
            "--target",
            "nids",
            "--competitor",
            "flowmonitor@1000,1500,1200",
            "--flows",
            "1000",
            "--mtbr",
            "1200",
        ],
    );
    for key in [
        "target",
        "competitors",
        "traffic",
        "solo_pps",
        "predicted_pps",
        "drop",
        "bottleneck",
        "per_resource",
    ] {
        assert!(j.get(key).is_some(), "{key} missing: {j}");
    }
    assert_eq!(j["target"], "nids");
    assert_eq!(j["competitors"], serde_json::json!(["flowmonitor"]));
    assert_eq!(j["traffic"]["flows"], 1000.0);
    let drop = j["drop"].as_f64().unwrap();
    assert!(drop > 0.05 && drop < 0.9, "{j}");
    assert_eq!(j["bottleneck"], "regex", "{j}");
    assert!(
        j["per_resource"]["regex"].as_f64().unwrap()
            > j["per_resource"]["memory"].as_f64().unwrap()
    );
    assert_eq!(j["baselines"]["solo-rate"]["drop"], 0.0);
    assert!(
        j["baselines"]["slomo"]["drop"].as_f64().unwrap() < drop,
        "{j}"
    );

    // Memory-bound: two big flow tables.
    let j = predict(
        &models,
        &[
            "--target",
            "flowstats",
            "--competitor",
            "flowstats",
            "--flows",
            "300000",
        ],
    );
    assert_eq!(j["bottleneck"], "memory", "{j}");

    // A memory benchmark the profile measured stands in as a competitor.
    let j = predict(
        &models,
        &[
            "--target",
            "flowstats",
            "--membench",
            "64,3e8",
            "--flows",
            "64000",
        ],
    );
    assert!(
        j["competitors"][0]
            .as_str()
            .unwrap()
            .starts_with("mem-bench"),
        "{j}"
    );
    assert!(j["drop"].as_f64().unwrap() > 0.0, "{j}");

    // The text form names the bottleneck too.
    let text = run([
        "colocate",
        "predict",
        models.to_str().unwrap(),
        "--target",
        "flowstats",
        "--competitor",
        "flowstats",
        "--flows",
        "300000",
    ]);
    assert!(text.ok().contains("bottleneck  memory"), "{}", text.stdout);
}

/// Placement of short random sequences of the whole catalogue: the JSON contract, waste against
/// the proven optimum (monopolization uses one NIC per arrival), and no strategy beating the
/// optimum without violating SLAs.
#[test]
fn place_keeps_the_contract_and_measures_waste_against_the_optimum() {
    let dir = TempDir::new("colocate-place");
    let models = sim_models(
        &dir,
        &["flowstats", "nat", "flowmonitor", "nids", "ipcomp"],
        "200",
    );
    let j = run([
        "colocate",
        "place",
        models.to_str().unwrap(),
        "--random",
        "2",
        "--length",
        "16",
        "--json",
    ])
    .json();
    assert_eq!(j["reference"], "optimum");
    assert_eq!(j["reference_unproven"], 0);
    assert_eq!(j["arrivals"], 32);
    let optimum = j["reference_nics"].as_u64().unwrap();
    let strategies = j["strategies"].as_array().unwrap();
    let names: Vec<&str> = strategies
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["monopolization", "greedy", "slomo-aware", "tomur-aware"]
    );
    for s in strategies {
        for key in ["name", "nics", "waste", "sla_violations"] {
            assert!(s.get(key).is_some(), "{key} missing: {s}");
        }
        let nics = s["nics"].as_u64().unwrap();
        assert!(
            nics >= optimum || s["sla_violations"].as_u64().unwrap() > 0,
            "{s}"
        );
    }
    assert_eq!(strategies[0]["nics"], 32);
    assert_eq!(strategies[0]["sla_violations"], 0);
    let waste = strategies[0]["waste"].as_f64().unwrap();
    assert!((waste - (32.0 / optimum as f64 - 1.0)).abs() < 1e-9);

    // A given sequence, by name.
    let arrivals = dir.write(
        "arrivals.json",
        r#"[{"nf": "nat", "flows": 64000, "packet_size": 512, "mtbr": 0, "sla": 0.1},
            {"nf": "nids", "flows": 1000, "packet_size": 1500, "mtbr": 600, "sla": 0.15}]"#,
    );
    let j = run([
        "colocate",
        "place",
        models.to_str().unwrap(),
        "--arrivals",
        arrivals.to_str().unwrap(),
        "--json",
    ])
    .json();
    assert_eq!(j["arrivals"], 2);
}

/// The shipped sample CSV profiles without a plan; its two NFs train and predict each other.
#[test]
fn imported_csv_profiles_train_and_predict() {
    let dir = TempDir::new("colocate-import");
    let csv = examples().join("colocate/sim-flowstats.csv");
    let mut profiles = Vec::new();
    for nf in ["flowstats", "nat"] {
        let path = dir.path().join(format!("{nf}.json"));
        run([
            "colocate".as_ref(),
            "profile".as_ref(),
            nf.as_ref(),
            "--backend".as_ref(),
            "import".as_ref(),
            "--csv".as_ref(),
            csv.as_os_str(),
            "-o".as_ref(),
            path.as_os_str(),
        ])
        .ok();
        profiles.push(path);
    }
    let models = dir.path().join("models.json");
    run([
        "colocate".as_ref(),
        "train".as_ref(),
        profiles[0].as_os_str(),
        profiles[1].as_os_str(),
        "-o".as_ref(),
        models.as_os_str(),
    ])
    .ok();
    let j = predict(
        &models,
        &[
            "--target",
            "nat",
            "--competitor",
            "flowstats",
            "--flows",
            "256000",
            "--packet-size",
            "64",
        ],
    );
    assert_eq!(j["bottleneck"], "memory", "{j}");
}

/// Profiling an XDP flow table on this host's kernel with README.md's command (a small quota: the
/// solo grid, a few contended points, the competitors alone), then training and predicting it
/// next to a memory benchmark it was profiled against; as a competitor it is refused (no counters
/// here).
#[test]
fn host_profile_train_predict() {
    if let Err(reason) = kernel_available() {
        linerate_kernel::skip_or_fail(&format!("host_profile_train_predict: {reason}"));
        return;
    }
    // The README's own command (`-o flow.json`), run once in the suite here.
    let dir = crate::readme_commands::run_readme_command(crate::readme_commands::HOST_PROFILE);
    let profile = dir.path().join("flow.json");
    let j: Value =
        serde_json::from_slice(&std::fs::read(&profile).expect("the profile is written"))
            .expect("the profile is JSON");
    assert_eq!(j["backend"], "host");
    assert_eq!(j["nf"], "xdp_flow_huge");
    assert!(
        !j["measurements"].as_array().unwrap().is_empty(),
        "no measurements"
    );
    let models = dir.path().join("models.json");
    let trained = run([
        "colocate".as_ref(),
        "train".as_ref(),
        profile.as_os_str(),
        "-o".as_ref(),
        models.as_os_str(),
        "--json".as_ref(),
    ])
    .json();
    assert_eq!(trained[0]["counters"], false, "{trained}");
    // A million flows cost the flow table throughput against a thousand, alone.
    let at = |flows: &str| {
        predict(
            &models,
            &[
                "--target",
                "xdp_flow_huge",
                "--membench",
                "64,1e8",
                "--flows",
                flows,
            ],
        )
    };
    let (small, big) = (at("1000"), at("1000000"));
    assert!(
        small["solo_pps"].as_f64().unwrap() > 1.5 * big["solo_pps"].as_f64().unwrap(),
        "{small} {big}"
    );
    let out = run([
        "colocate",
        "predict",
        models.to_str().unwrap(),
        "--target",
        "xdp_flow_huge",
        "--competitor",
        "xdp_flow_huge",
    ]);
    expect_error(&out, &["no memory counters", "host backend"]);
}

#[test]
fn refusals_get_one_line_and_leave_no_file() {
    let dir = TempDir::new("colocate-refusals");
    dir.write("garbage.json", "{not json");
    dir.write(
        "future.json",
        r#"{"version": 9, "backend": "sim", "nf": "x", "plan": null, "measurements": []}"#,
    );
    dir.write("bad.csv", "nf,flows\n");
    let cases: &[(&[&str], &[&str])] = &[
        (
            &[
                "colocate",
                "profile",
                "nope",
                "--backend",
                "sim",
                "-o",
                "p.json",
            ],
            &["no simulated NF `nope`", "flowstats"],
        ),
        (
            &[
                "colocate",
                "profile",
                "missing.o",
                "--backend",
                "host",
                "-o",
                "p.json",
            ],
            &["missing.o"],
        ),
        (
            &[
                "colocate",
                "profile",
                "nat",
                "--backend",
                "import",
                "--csv",
                "bad.csv",
                "-o",
                "p.json",
            ],
            &["bad.csv:1", "header"],
        ),
        (
            &[
                "colocate",
                "profile",
                "nat",
                "--backend",
                "sim",
                "--quota",
                "0",
                "-o",
                "p.json",
            ],
            &["--quota"],
        ),
        (
            &["colocate", "train", "garbage.json", "-o", "m.json"],
            &["garbage.json", "profile file"],
        ),
        (
            &["colocate", "train", "future.json", "-o", "m.json"],
            &["future.json", "version 9"],
        ),
        (
            &["colocate", "train", "absent.json", "-o", "m.json"],
            &["cannot read profile file absent.json"],
        ),
        (
            &["colocate", "predict", "absent.json", "--target", "nat"],
            &["cannot read model file absent.json"],
        ),
        (
            &["colocate", "place", "garbage.json", "--random", "1"],
            &["garbage.json", "model file"],
        ),
    ];
    for (args, parts) in cases {
        expect_error_in(&dir, args, parts);
    }
    // A model file with a model, then questions it cannot answer.
    let models = sim_models(&dir, &["nat"], "100");
    let m = models.to_str().unwrap();
    let cases: &[(&[&str], &[&str])] = &[
        (
            &["colocate", "predict", m, "--target", "nids"],
            &["no model of `nids`", "nat"],
        ),
        (
            &[
                "colocate",
                "predict",
                m,
                "--target",
                "nat",
                "--competitor",
                "nat@x",
            ],
            &["nat@x", "flow count `x`"],
        ),
        (
            &[
                "colocate",
                "predict",
                m,
                "--target",
                "nat",
                "--membench",
                "64",
            ],
            &["--membench `64`"],
        ),
        (
            &["colocate", "predict", m, "--target", "nat", "--flows=-3"],
            &["flow count"],
        ),
    ];
    for (args, parts) in cases {
        expect_error_in(&dir, args, parts);
    }
}
