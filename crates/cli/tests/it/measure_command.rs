//! `linerate measure`: every reported path's witness follows its block sequence in the
//! interpreter and returns the same action there and in the kernel, and the figures are what
//! they claim (measured = 1e9 / the trials' 90th percentile, ratio = estimate / measured, every
//! path timed in the same rounds beside the empty program); the refusals (a target without
//! hardware here, a missing file) are one-line errors.

use crate::common;

use common::{example, expect_error, run};
use serde_json::Value;

/// Runs `measure --json` on an example with short timings.
fn measure(name: &str, paths: usize) -> Value {
    let object = example(name);
    let paths = paths.to_string();
    run([
        "measure",
        object.to_str().expect("utf-8 path"),
        "--paths",
        &paths,
        "--repeat",
        "2000",
        "--trials",
        "3",
        "--single-runs",
        "20",
        "--json",
    ])
    .json()
}

fn check_paths(name: &str, out: &Value, paths: usize) {
    let reported = out["paths"].as_array().expect("paths");
    assert_eq!(reported.len(), paths, "{name}: {out:#}");
    let numbers = |v: &Value| -> Vec<f64> {
        v.as_array()
            .expect("an array")
            .iter()
            .map(|x| x.as_f64().expect("a number"))
            .collect()
    };
    // Repeated and driven paths are timed in the same rounds, each beside the empty program:
    // every one has the same reference figures, one per trial.
    let reference = numbers(&reported[0]["reference_ns"]);
    assert_eq!(reference.len(), 3, "{name}: {out:#}");
    // The 90th percentile of three figures lies at rank 1.8 (from 0): 0.8 of the way from the
    // middle one to the largest.
    let p90 = |xs: &[f64]| {
        let mut v = xs.to_vec();
        v.sort_by(f64::total_cmp);
        v[1] + 0.8 * (v[2] - v[1])
    };
    let close = |a: f64, b: f64| (a - b).abs() < 1e-9 * b.abs().max(1.0);
    let host = &out["host_now"];
    let reference_slow = host["reference_slow_ns"].as_f64().expect("host_now");
    assert!(close(reference_slow, p90(&reference)), "{out:#}");
    assert!(host["model_per_packet_ns"]
        .as_f64()
        .is_some_and(|ns| ns > 0.0));
    for p in reported {
        let rank = &p["rank"];
        assert_eq!(p["check"], "confirmed", "{name} path {rank}: {p:#}");
        assert_eq!(p["vm_blocks_match"], true, "{name} path {rank}");
        assert!(!p["blocks"].as_array().expect("blocks").is_empty());
        assert!(p["action"].as_str().is_some_and(|a| a.starts_with("XDP_")));
        assert_eq!(p["vm_action"], p["action"], "{name} path {rank}");
        assert_eq!(p["kernel_action"], p["action"], "{name} path {rank}");
        let trials = numbers(&p["trials_ns"]);
        assert_eq!(trials.len(), 3);
        assert_eq!(numbers(&p["reference_ns"]), reference, "{name} path {rank}");
        let slow = p["slow_ns"].as_f64().expect("timed");
        assert!(close(slow, p90(&trials)), "{name} path {rank}: {p:#}");
        if p["method"] == "driven" {
            // A driven trial is the program's side of the alternating driver less the empty
            // side plus the round's empty program: never below that empty program.
            assert_eq!(numbers(&p["driver_ns"]).len(), 3, "{name} path {rank}");
            for (t, r) in trials.iter().zip(&reference) {
                assert!(t > r, "{name} path {rank}: {p:#}");
            }
        }
        let median = p["median_ns"].as_f64().expect("timed");
        let measured = p["measured_pps"].as_f64().expect("measured");
        let estimate = p["estimate_pps"].as_f64().expect("estimate");
        assert!(median > 0.0 && estimate > 0.0);
        assert!((measured - 1e9 / slow).abs() < 1e-6 * measured);
        let ratio = p["ratio"].as_f64().expect("ratio");
        assert!((ratio - estimate / measured).abs() < 1e-9 * ratio);
    }
    let summary = &out["summary"];
    assert_eq!(summary["paths"], paths);
    let counted = summary["counted"].as_u64().expect("counted");
    if counted > 0 {
        let shares =
            summary["under_share"].as_f64().unwrap() + summary["over_share"].as_f64().unwrap();
        assert!(shares <= 1.0 + 1e-9);
    }
}

#[test]
fn measured_paths_are_the_reported_paths_in_the_vm_and_the_kernel() {
    if !linerate_kernel::usable_or_skip("measured_paths_are_the_reported_paths") {
        return;
    }
    // Repeated runs repeat the redirector's paths. The filter's slowest paths prepend 4 bytes of
    // metadata, which repeated runs sharing one buffer cannot do for long (32 bytes at most),
    // and the QUIC load balancer answers with XDP_TX, so its repeated runs see their own
    // rewritten packet: both drift, and are timed behind the restoring driver, and count. The
    // event counter's records overflow their ring in repeated runs whether driven or not: it is
    // timed in single runs and does not count.
    let redirect = measure("xdp_redirect.o", 3);
    check_paths("xdp_redirect", &redirect, 3);
    for p in redirect["paths"].as_array().unwrap() {
        assert_eq!(p["method"], "repeated", "{p:#}");
        assert_eq!(p["counted"], true);
    }
    assert_eq!(redirect["summary"]["counted"], 3);
    assert!(redirect["summary"]["ssp_is_slowest"].is_boolean());
    for (name, paths, drift) in [
        (
            "xdp_filter.o",
            1,
            "moves the packet's head, tail or metadata",
        ),
        ("xdp_quic_lb_v4.o", 2, "takes other blocks"),
    ] {
        let out = measure(name, paths);
        check_paths(name, &out, paths);
        for p in out["paths"].as_array().unwrap() {
            assert_eq!(p["method"], "driven", "{name}: {p:#}");
            assert_eq!(p["counted"], true, "{name}: {p:#}");
            assert!(
                p["drift"].as_str().is_some_and(|d| d.contains(drift)),
                "{name}: {p:#}"
            );
        }
    }
    let events = measure("xdp_events.o", 1);
    let overflowing = &events["paths"][0];
    assert_eq!(overflowing["method"], "fresh", "{overflowing:#}");
    assert_eq!(overflowing["counted"], false, "{overflowing:#}");
    assert!(
        overflowing["drift"]
            .as_str()
            .is_some_and(|d| d.contains("behind the restoring driver a run returns XDP_DROP")),
        "{overflowing:#}"
    );
}

#[test]
fn a_program_pushing_a_header_every_run_is_timed_behind_the_driver() {
    if !linerate_kernel::usable_or_skip("a_program_pushing_a_header_every_run") {
        return;
    }
    // Repeated runs share one buffer: the headroom each run's push uses is gone for the next,
    // and the interpreter, whose runs each get a fresh buffer, cannot replay that. The path
    // drifts and the restoring driver times it (it used to stop measure with the interpreter's
    // error about a packet grown past what a test run takes).
    let text = "
        r6 = r1
        r1 = r6
        r2 = -20
        call bpf_xdp_adjust_head
        if r0 != 0 goto drop
        r0 = 2
        exit
        drop:
        r0 = 1
        exit
    ";
    let no_maps: &[&str] = &[];
    let insns = linerate_bpf::asm::assemble(text, no_maps).expect("assembles");
    let spec = linerate_bpf::emit::ObjectSpec::new(
        vec![linerate_bpf::emit::ProgramSpec::xdp("push", insns)],
        Vec::new(),
    );
    let dir = common::TempDir::new("measure-push");
    let object = dir.write(
        "push.o",
        linerate_bpf::emit::write_object(&spec).expect("writes"),
    );
    let out = run([
        "measure",
        object.to_str().expect("utf-8 path"),
        "--paths",
        "1",
        "--repeat",
        "2000",
        "--trials",
        "3",
        "--json",
    ])
    .json();
    let path = &out["paths"][0];
    assert_eq!(path["method"], "driven", "{out:#}");
    assert_eq!(path["counted"], true, "{out:#}");
    assert!(
        path["drift"]
            .as_str()
            .is_some_and(|d| d.contains("moves the packet's head, tail or metadata")),
        "{out:#}"
    );
}

#[test]
fn measure_refuses_targets_without_hardware_and_missing_files() {
    let firewall = example("xdp_firewall.o");
    let object = firewall.to_str().expect("utf-8 path");
    expect_error(
        &run(["measure", object, "--target", "nfp"]),
        &["target `nfp` has no hardware here"],
    );
    let nfp_model =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../cost/models/nfp.json");
    expect_error(
        &run([
            "measure",
            object,
            "--model",
            nfp_model.to_str().expect("utf-8 path"),
        ]),
        &["`nfp`", "no hardware here"],
    );
    expect_error(&run(["measure", "no/such/file.o"]), &["no/such/file.o"]);
    expect_error(&run(["measure", object, "--trials", "0"]), &["--trials"]);
}
