//! A compiled P4 program is an object like any other: `p4 compile` keeps the JSON
//! contract and writes the object and its maps file, and `bound` and `measure` run on the
//! compiled L3_fwd+Firewall (paper 001's second validation function) to a complete search whose
//! slowest path's witness the kernel confirms, and whose paths the kernel times behind the
//! traffic driver; and the hXDP core holds it.

use crate::common;

use common::*;

/// Compiles `examples/p4/<stem>.p4` with its entries into `dir`; the `--json` answer.
fn compile(dir: &TempDir, stem: &str) -> serde_json::Value {
    let p4 = examples().join("p4");
    let object = dir.path().join(format!("{stem}.o"));
    run([
        "p4".as_ref(),
        "compile".as_ref(),
        p4.join(format!("{stem}.p4")).as_os_str(),
        "--entries".as_ref(),
        p4.join(format!("{stem}.entries.json")).as_os_str(),
        "-o".as_ref(),
        object.as_os_str(),
        "--json".as_ref(),
    ])
    .json()
}

#[test]
fn compile_keeps_the_json_contract() {
    let dir = TempDir::new("p4-compiled-json");
    let j = compile(&dir, "l3_fwd_firewall");
    let object = dir.path().join("l3_fwd_firewall.o");
    assert_eq!(j["object"], object.to_str().expect("utf-8 path"));
    assert_eq!(j["programs"], serde_json::json!(["l3_fwd_firewall"]));
    assert!(j["insns"].as_u64().is_some_and(|n| n > 100), "{j}");
    let maps = j["maps"].as_array().expect("maps");
    let acl = maps.iter().find(|m| m["name"] == "acl").expect("acl map");
    // The ACL's two const entries are all it can ever hold: its scan covers exactly them.
    assert_eq!(
        (acl["entries"].as_u64(), acl["max_entries"].as_u64()),
        (Some(2), Some(2))
    );
    let lpm = maps
        .iter()
        .find(|m| m["name"] == "ipv4_lpm")
        .expect("lpm map");
    assert_eq!(
        (lpm["type"].as_str(), lpm["max_entries"].as_u64()),
        (Some("lpm_trie"), Some(1024))
    );
    assert_eq!(
        dir.listing(),
        ["l3_fwd_firewall.maps.json", "l3_fwd_firewall.o"]
            .map(String::from)
            .into()
    );
}

#[test]
fn bound_completes_on_the_compiled_firewall() {
    let dir = TempDir::new("p4-compiled-bound");
    compile(&dir, "l3_fwd_firewall");
    let object = dir.path().join("l3_fwd_firewall.o");
    let j = run([
        "bound".as_ref(),
        object.as_os_str(),
        "--timeout".as_ref(),
        "120".as_ref(),
        "--json".as_ref(),
    ])
    .json();
    assert_eq!(j["complete"], true, "{j:#}");
    let ssp = &j["ssp"];
    let ssp_pps = ssp["pps"].as_f64().expect("ssp rate");
    let naive = j["naive"]["pps"].as_f64().expect("naive rate");
    // The naive bound takes the costliest path whether or not a packet can follow it.
    assert!(
        naive > 0.0 && naive <= ssp_pps,
        "naive {naive}, ssp {ssp_pps}"
    );
    let witness = &ssp["witness"];
    assert!(witness["unconfirmed"].is_null(), "{witness:#}");
    // The slowest path parses Ethernet, IPv4 and UDP, passes the ACL and is forwarded.
    assert_eq!(witness["action"], "XDP_REDIRECT", "{witness:#}");
    assert!(
        ssp["min_packet_size"].as_u64().is_some_and(|n| n >= 42),
        "{ssp:#}"
    );
}

#[test]
fn measure_times_the_compiled_firewall_in_the_kernel() {
    if let Err(reason) = kernel_available() {
        linerate_kernel::skip_or_fail(&format!(
            "measure_times_the_compiled_firewall_in_the_kernel: {reason}"
        ));
        return;
    }
    let dir = TempDir::new("p4-compiled-measure");
    compile(&dir, "l3_fwd_firewall");
    let object = dir.path().join("l3_fwd_firewall.o");
    let j = run([
        "measure".as_ref(),
        object.as_os_str(),
        "--paths".as_ref(),
        "3".as_ref(),
        "--repeat".as_ref(),
        "2000".as_ref(),
        "--trials".as_ref(),
        "3".as_ref(),
        "--single-runs".as_ref(),
        "20".as_ref(),
        "--json".as_ref(),
    ])
    .json();
    let paths = j["paths"].as_array().expect("paths");
    assert_eq!(paths.len(), 3, "{j:#}");
    for p in paths {
        assert_eq!(p["check"], "confirmed", "{p:#}");
        // Forwarding decrements the TTL: repeated runs would see their own output, so the
        // paths are timed behind the traffic driver and count in the summary.
        assert_eq!(p["method"], "driven", "{p:#}");
        assert_eq!(p["counted"], true, "{p:#}");
        assert_eq!(p["kernel_action"], p["action"], "{p:#}");
        assert_eq!(p["vm_action"], p["action"], "{p:#}");
        // The measurement is the path's time in this host's slow moments, its trials' 90th
        // percentile.
        let slow = p["slow_ns"].as_f64().expect("timed");
        let measured = p["measured_pps"].as_f64().expect("measured");
        assert!(slow > 0.0 && (measured - 1e9 / slow).abs() < 1e-6 * measured);
    }
}

#[test]
fn the_compiled_firewall_fits_the_hxdp_core() {
    let dir = TempDir::new("p4-compiled-hxdp");
    compile(&dir, "l3_fwd_firewall");
    let object = dir.path().join("l3_fwd_firewall.o");
    let j = run(["hxdp".as_ref(), object.as_os_str(), "--json".as_ref()]).json();
    // The core's instruction memory holds 256 rows.
    let rows = j["vliw_rows"].as_u64().expect("rows");
    assert!(rows > 0 && rows <= 256, "{rows}");
    assert!(j["ebpf_insns"].as_u64().is_some_and(|n| n > rows), "{j}");
}
