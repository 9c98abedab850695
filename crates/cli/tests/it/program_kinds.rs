//! Objects holding programs of several kinds (`examples/xdp_mixed.o`: XDP programs beside TC,
//! tracepoint and fentry programs, and an XDP program the verifier refuses): `inspect` lists
//! every program with its kind, `run` and `cost` refuse a non-XDP program by name, and the
//! kernel runner runs the XDP programs although the object holds others.

use crate::common;

use common::*;

const MIXED: &str = "xdp_mixed.o";

#[test]
fn inspect_lists_every_program_with_its_kind() {
    let path = example(MIXED);
    let json = run(["inspect".as_ref(), path.as_os_str(), "--json".as_ref()]).json();
    let kinds: Vec<(&str, &str, &str)> = json["programs"]
        .as_array()
        .expect("programs")
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap_or(""),
                p["section"].as_str().unwrap_or(""),
                p["type"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("mixed_ipv4", "xdp", "xdp"),
            ("mixed_entry", "xdp", "xdp"),
            ("mixed_unchecked", "xdp", "xdp"),
            ("mixed_tc_mark", "tc", "tc"),
            (
                "mixed_on_write",
                "tp/syscalls/sys_enter_write",
                "tracepoint"
            ),
            (
                "mixed_on_test_run",
                "fentry/bpf_prog_test_run_xdp",
                "fentry"
            ),
        ]
    );
    let text = run(["inspect".as_ref(), path.as_os_str(), "--no-disasm".as_ref()]);
    let row = text
        .ok()
        .lines()
        .find(|l| l.contains("mixed_on_write"))
        .expect("a row for the tracepoint program");
    assert!(row.contains("tracepoint"), "{row}");
}

#[test]
fn run_refuses_a_non_xdp_program_by_name_in_both_engines() {
    let path = example(MIXED);
    let packet = "00".repeat(60);
    for engine in [&[][..], &["--kernel"][..]] {
        let mut args = vec![
            "run",
            path.to_str().expect("utf-8 path"),
            "--prog",
            "mixed_on_write",
            "--packet",
            &packet,
        ];
        args.extend(engine);
        expect_error(
            &run(&args),
            &[
                "`mixed_on_write` is a tracepoint program (section tp/syscalls/sys_enter_write): \
               run executes XDP programs",
            ],
        );
    }
}

#[test]
fn cost_prices_the_xdp_programs_and_refuses_others_by_name() {
    let path = example(MIXED);
    let path = path.to_str().expect("utf-8 path");
    let json = run(["cost", path, "--json"]).json();
    let names: Vec<&str> = json["programs"]
        .as_array()
        .expect("programs")
        .iter()
        .map(|p| p["program"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(names, ["mixed_ipv4", "mixed_entry", "mixed_unchecked"]);
    expect_error(
        &run(["cost", path, "--prog", "mixed_tc_mark"]),
        &["`mixed_tc_mark` is a tc program (section tc): cost prices XDP programs"],
    );
}

#[test]
fn the_kernel_runs_the_xdp_entry_beside_programs_it_never_loads() {
    if let Err(reason) = kernel_available() {
        linerate_kernel::skip_or_fail(&format!("program_kinds kernel run: {reason}"));
        return;
    }
    let path = example(MIXED);
    let path = path.to_str().expect("utf-8 path");
    let (expected, ttl_one) = example_packets("xdp_mixed").packets[1].clone();
    assert_eq!(expected, "XDP_DROP");
    let json = run([
        "run",
        path,
        "--kernel",
        "--json",
        "--packet",
        &hex(&ttl_one),
    ])
    .json();
    assert_eq!(json["action"], "XDP_DROP", "{json}");
    // The tail call went through the declared slot into mixed_ipv4, which counted at index 1.
    assert_eq!(json["maps"]["mixed_counts"][0]["key"], "01000000", "{json}");
    // The refused program fails alone, with the verifier's reason.
    let out = run([
        "run",
        path,
        "--kernel",
        "--prog",
        "mixed_unchecked",
        "--packet",
        &hex(&ttl_one),
    ]);
    assert_eq!(out.code, Some(1), "{out:#?}");
    assert!(
        out.stderr
            .contains("verifier rejected program `mixed_unchecked`"),
        "{out:#?}"
    );
}
