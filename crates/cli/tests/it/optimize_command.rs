//! `linerate optimize`: the JSON contract, an output that is smaller, proven equivalent, loads in
//! the kernel and by bpftool, behaves as the input on the example's packets in the kernel, an
//! input left as it was, and one-line errors for what it refuses.

use crate::common;

use common::{example, expect_error_in, kernel_available, run, TempDir};
use serde_json::Value;

fn optimize_json(input: &std::path::Path, output: &std::path::Path, extra: &[&str]) -> Value {
    let mut args = vec![
        "optimize".to_string(),
        input.display().to_string(),
        "-o".into(),
        output.display().to_string(),
        "--json".into(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    run(args).json()
}

/// The kernel's results (action and output packet per packet) of `object` on `packets`.
fn kernel_results(object: &std::path::Path, packets: &std::path::Path) -> Value {
    let out = run([
        "run",
        object.to_str().unwrap(),
        "--packets",
        packets.to_str().unwrap(),
        "--kernel",
        "--json",
    ])
    .json();
    let runs: Vec<Value> = out
        .as_array()
        .unwrap_or_else(|| panic!("run --json is a list of runs: {out}"))
        .iter()
        .map(|r| serde_json::json!({"action": r["action"], "packet": r["packet"]}))
        .collect();
    Value::Array(runs)
}

#[test]
fn reflector_gets_smaller_and_stays_the_same_program() {
    if let Err(why) = kernel_available() {
        linerate_kernel::skip_or_fail(&why);
        return;
    }
    let dir = TempDir::new("optimize-reflector");
    let input = example("xdp_reflector.o");
    let before = std::fs::read(&input).unwrap();
    let output = dir.path().join("out.o");
    let j = optimize_json(
        &input,
        &output,
        &[
            "--budget",
            "8",
            "--seed",
            "3",
            "--differential-packets",
            "2000",
            "--trials",
            "3",
        ],
    );
    for key in [
        "insns_before",
        "insns_after",
        "est_ns_before",
        "est_ns_after",
        "measured_ns_before",
        "measured_ns_after",
        "worst_case_pps_before",
        "worst_case_pps_after",
        "verifier",
        "differential_packets",
        "rules_applied",
        "rewrites",
    ] {
        assert!(j.get(key).is_some(), "optimize --json lacks {key}: {j}");
    }
    assert_eq!(j["verifier"], "accepted");
    let (b, a) = (
        j["insns_before"].as_u64().unwrap(),
        j["insns_after"].as_u64().unwrap(),
    );
    assert!(a < b, "the reflector's byte-wise copies merge: {b} -> {a}");
    assert!(j["differential_packets"].as_u64().unwrap() >= 2000);
    assert!(!j["rewrites"].as_array().unwrap().is_empty());
    // The reflector has no loops or unmodelled helpers: the result is proven on every input.
    assert_eq!(j["equivalence"]["verdict"], "equivalent", "{j}");
    assert!(j["equivalence"]["path_pairs"].as_u64().unwrap() > 0);
    assert_eq!(
        std::fs::read(&input).unwrap(),
        before,
        "the input is never modified"
    );
    // The output is the program that was checked: fewer instructions when read back, and the
    // same results as the input in the kernel on the example's crafted packets.
    let inspected = run(["inspect", output.to_str().unwrap(), "--json"]).json();
    assert_eq!(inspected["programs"][0]["insns"].as_u64(), Some(a));
    let packets = example("xdp_reflector.packets");
    assert_eq!(
        kernel_results(&output, &packets),
        kernel_results(&input, &packets)
    );
    // libbpf loads it as it loads the input.
    let pin = format!("/sys/fs/bpf/linerate-optimize-test-{}", std::process::id());
    let loaded = std::process::Command::new("bpftool")
        .args(["prog", "loadall", output.to_str().unwrap(), &pin])
        .output();
    let _ = std::fs::remove_dir_all(&pin);
    if let Ok(out) = loaded {
        assert!(
            out.status.success(),
            "bpftool refuses the output: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn rules_only_is_quick_and_deterministic() {
    if let Err(why) = kernel_available() {
        linerate_kernel::skip_or_fail(&why);
        return;
    }
    let dir = TempDir::new("optimize-rules-only");
    let input = example("xdp_router.o");
    let a = dir.path().join("a.o");
    let b = dir.path().join("b.o");
    let extra = [
        "--rules-only",
        "--no-measure",
        "--differential-packets",
        "500",
    ];
    let ja = optimize_json(&input, &a, &extra);
    let jb = optimize_json(&input, &b, &extra);
    assert_eq!(ja["insns_after"], jb["insns_after"]);
    assert_eq!(
        std::fs::read(&a).unwrap(),
        std::fs::read(&b).unwrap(),
        "same input, same output"
    );
    assert!(
        ja["search"]["candidates"].as_u64() == Some(0),
        "no search ran: {ja}"
    );
}

#[test]
fn a_fixed_number_of_rounds_gives_the_same_output() {
    if let Err(why) = kernel_available() {
        linerate_kernel::skip_or_fail(&why);
        return;
    }
    let dir = TempDir::new("optimize-rounds");
    let input = example("xdp_filter.o");
    let a = dir.path().join("a.o");
    let b = dir.path().join("b.o");
    let extra = [
        "--rounds",
        "1",
        "--budget",
        "600",
        "--seed",
        "5",
        "--no-measure",
        "--witnesses",
        "0",
        "--differential-packets",
        "500",
    ];
    let ja = optimize_json(&input, &a, &extra);
    let jb = optimize_json(&input, &b, &extra);
    assert!(
        ja["insns_after"].as_u64() < ja["insns_before"].as_u64(),
        "{ja}"
    );
    assert_eq!(ja["rewrites"], jb["rewrites"]);
    assert_eq!(
        std::fs::read(&a).unwrap(),
        std::fs::read(&b).unwrap(),
        "same seed and rounds, same output"
    );
}

#[test]
fn refusals_are_one_line_errors_and_leave_nothing_behind() {
    let dir = TempDir::new("optimize-errors");
    let reflector = dir.write("r.o", std::fs::read(example("xdp_reflector.o")).unwrap());
    dir.write("text.txt", "xdp_reflector.o:\tfile format elf64-bpf\n");
    dir.write("bad.o", b"\x7fELF\x02\x01\x01garbage");
    let r = reflector.file_name().unwrap().to_str().unwrap();
    expect_error_in(
        &dir,
        &["optimize", "missing.o", "-o", "out.o"],
        &["missing.o"],
    );
    expect_error_in(&dir, &["optimize", "text.txt", "-o", "out.o"], &["ELF"]);
    expect_error_in(&dir, &["optimize", "bad.o", "-o", "out.o"], &["bad.o"]);
    expect_error_in(&dir, &["optimize", r, "-o", r], &["must not be the input"]);
    expect_error_in(
        &dir,
        &["optimize", r, "-o", "out.o", "--budget", "soon"],
        &["--budget"],
    );
    expect_error_in(
        &dir,
        &["optimize", r, "-o", "out.o", "--prog", "nope"],
        &["nope"],
    );
    dir.write("rules.json", "{\"format\": \"something else\"}");
    expect_error_in(
        &dir,
        &["optimize", r, "-o", "out.o", "--rules", "rules.json"],
        &["rules.json"],
    );
}
