//! `linerate p4 latency` and `p4 fit` as a user runs them: the JSON contract of the issue, the
//! paper's Table III estimates, a model fitted and then used, and bad input refused in one line
//! with nothing left behind.

use crate::common;

use common::*;

fn p4_example(name: &str) -> std::path::PathBuf {
    examples().join("p4").join(name)
}

#[test]
fn latency_gives_the_papers_parameters_and_table_iii() {
    let out = run([
        "p4".as_ref(),
        "latency".as_ref(),
        p4_example("l3_fwd_firewall.p4").as_os_str(),
        "--json".as_ref(),
    ]);
    let j = out.json();
    for key in [
        "alpha",
        "beta",
        "gamma",
        "actions",
        "latency_ns",
        "breakdown",
    ] {
        assert!(!j[key].is_null(), "`{key}` missing in {j}");
    }
    assert_eq!(
        (j["alpha"].as_u64(), j["beta"].as_u64(), j["gamma"].as_u64()),
        (Some(3), Some(2), Some(1))
    );
    assert_eq!(j["actions"], "implicit");
    // Table II's 8600 ns plus Eq. 1's f(1) = 334.04 (the paper prints 8957).
    let latency = j["latency_ns"].as_f64().unwrap();
    assert!((latency - 8934.04).abs() < 1e-6, "{latency}");
    let text = run([
        "p4".as_ref(),
        "latency".as_ref(),
        p4_example("l3_fwd.p4").as_os_str(),
    ]);
    assert!(
        text.ok().contains("latency: 8200 ns"),
        "Table III's L3_fwd estimate: {}",
        text.ok()
    );
}

#[test]
fn a_fitted_model_is_written_and_used() {
    let dir = TempDir::new("p4-fit");
    // A target where every cell costs 5000 ns plus 100 per parsed header, and tables 50·γ² + 200·γ.
    let mut csv = String::from("case,alpha,beta,gamma,actions,latency_ns\n");
    for alpha in 1..=3u32 {
        for beta in 0..=alpha {
            for gamma in 0..=4u32 {
                let ns = 5000 + 100 * alpha + 50 * gamma * gamma + 200 * gamma;
                csv += &format!("g{alpha}{beta}{gamma},{alpha},{beta},{gamma},implicit,{ns}\n");
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
            "--name",
            "test-host",
        ],
    );
    assert!(out.ok().contains("host.json"), "{}", out.ok());
    let model = dir.path().join("host.json");
    let j = run([
        "p4".as_ref(),
        "latency".as_ref(),
        p4_example("l3_fwd_firewall.p4").as_os_str(),
        "--model".as_ref(),
        model.as_os_str(),
        "--json".as_ref(),
    ])
    .json();
    assert_eq!(j["model"], "test-host");
    // α = 3: 5300 ns, γ = 1: 250 ns.
    let latency = j["latency_ns"].as_f64().unwrap();
    assert!((latency - 5550.0).abs() < 1e-6, "{latency}");
}

#[test]
fn bad_input_is_one_line() {
    let dir = TempDir::new("p4-bad");
    dir.write("broken.p4", "header h { bit<8> x; }\nparser P(\n");
    expect_error_in(
        &dir,
        &["p4", "latency", "broken.p4"],
        &["broken.p4:3:1", "expected a type"],
    );
    expect_error_in(&dir, &["p4", "latency", "missing.p4"], &["missing.p4"]);
    let program = p4_example("l3_fwd.p4");
    let program = program.to_str().unwrap();
    expect_error_in(
        &dir,
        &["p4", "latency", program, "--model", "nosuch"],
        &["no model `nosuch`"],
    );
    // The Agilio CX table has no cell for β = 0 (the paper's Table II starts at 1).
    let source = std::fs::read_to_string(program).unwrap();
    // The checksum update writes hdr.ipv4 too: cut the statement from its call to its `;`.
    let checksum = source
        .find("update_checksum(")
        .expect("l3_fwd updates the checksum");
    let end = checksum + source[checksum..].find(';').expect("the call ends") + 1;
    let only_parsing = format!("{}{}", &source[..checksum], &source[end..])
        .replace("hdr.ipv4.ttl = hdr.ipv4.ttl - 1;", "")
        .replace("hdr.ethernet.src_addr = src_mac;", "")
        .replace("hdr.ethernet.dst_addr = dst_mac;", "");
    dir.write("parse_only.p4", only_parsing);
    expect_error_in(
        &dir,
        &["p4", "latency", "parse_only.p4"],
        &["no latency for 2 parsed and 0 modified headers", "covers"],
    );
    dir.write("m.csv", "case,alpha\n");
    expect_error_in(
        &dir,
        &["p4", "fit", "m.csv", "-o", "model.json"],
        &["m.csv:1", "header"],
    );
}
