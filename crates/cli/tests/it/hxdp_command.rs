//! `linerate hxdp`, `hxdp check` and `hxdp study` as a user runs them: the JSON contract of the
//! issue, a ROM written and checked back, a tampered ROM caught, and bad input refused in one line
//! with nothing left behind.

use crate::common;

use common::*;

#[test]
fn the_json_contract_and_a_rom_that_checks() {
    let dir = TempDir::new("hxdp-rom");
    let rom = dir.path().join("reflector.rom");
    let out = run([
        "hxdp".as_ref(),
        example("xdp_reflector.o").as_os_str(),
        "-o".as_ref(),
        rom.as_os_str(),
        "--json".as_ref(),
    ]);
    let j = out.json();
    for key in [
        "ebpf_insns",
        "removed",
        "vliw_rows",
        "static_ipc",
        "lanes",
        "rows",
        "worst_case",
    ] {
        assert!(!j[key].is_null(), "`{key}` missing in {j}");
    }
    let rows = j["vliw_rows"].as_u64().unwrap();
    assert!(rows < j["ebpf_insns"].as_u64().unwrap());
    assert_eq!(j["rows"].as_array().unwrap().len() as u64, rows);
    let slot = &j["rows"][0][0];
    assert!(slot["lane"].is_u64() && slot["text"].is_string() && slot["from"].is_array());
    assert!(
        j["removed"]["six_byte"].as_u64().unwrap() > 0,
        "{}",
        j["removed"]
    );
    let worst = &j["worst_case"];
    assert!(worst["cycles"].as_f64().unwrap() > 0.0);
    assert!(worst["pps"].as_f64().unwrap() > 1e6);

    // The ROM: 256 lines of 64 hex digits.
    let text = std::fs::read_to_string(&rom).unwrap();
    assert_eq!(text.lines().count(), 256);
    assert!(text.lines().all(|l| l.len() == 64));

    let check = run([
        "hxdp".as_ref(),
        "check".as_ref(),
        rom.as_os_str(),
        "--source".as_ref(),
        example("xdp_reflector.o").as_os_str(),
        "--json".as_ref(),
    ])
    .json();
    assert_eq!(check["rows"].as_u64(), Some(rows));
    assert_eq!(check["violations"].as_array().unwrap().len(), 0);
    assert!(check["packets_checked"].as_u64().unwrap() >= 200);
    assert_eq!(check["mismatches"].as_array().unwrap().len(), 0);
}

#[test]
fn a_tampered_rom_is_caught() {
    let dir = TempDir::new("hxdp-tamper");
    let rom = dir.path().join("filter.rom");
    run([
        "hxdp".as_ref(),
        example("xdp_filter.o").as_os_str(),
        "-o".as_ref(),
        rom.as_os_str(),
        "--no-worst-case".as_ref(),
    ])
    .ok();
    // Turn the parametrized exit with XDP_DROP into one with XDP_PASS.
    let text = std::fs::read_to_string(&rom).unwrap();
    let tampered = text.replacen("0000000100000096", "0000000200000096", 1);
    assert_ne!(tampered, text, "no `exit XDP_DROP` in the ROM");
    dir.write("bad.rom", tampered);
    let out = run_in(
        Some(dir.path()),
        [
            "hxdp",
            "check",
            "bad.rom",
            "--source",
            example("xdp_filter.o").to_str().unwrap(),
        ],
    );
    assert_eq!(out.code, Some(1), "{out:#?}");
    assert!(out.stderr.starts_with("error: bad.rom:"), "{out:#?}");
}

#[test]
fn the_study_tables() {
    let out = run([
        "hxdp".as_ref(),
        "study".as_ref(),
        example("xdp_router.o").as_os_str(),
        "--max-lanes".as_ref(),
        "4".as_ref(),
        "--json".as_ref(),
    ])
    .json();
    let lanes = out[0]["lanes"].as_array().unwrap();
    assert_eq!(lanes.len(), 4);
    let rows: Vec<u64> = lanes.iter().map(|p| p["rows"].as_u64().unwrap()).collect();
    assert!(rows.windows(2).all(|w| w[1] <= w[0]), "{rows:?}");
    let ablation = out[0]["ablation"].as_array().unwrap();
    let config = |name: &str| {
        ablation
            .iter()
            .find(|a| a["config"] == name)
            .unwrap_or_else(|| panic!("no `{name}`"))["rows"]
            .as_u64()
            .unwrap()
    };
    assert!(config("all") < config("none"));
}

#[test]
fn bad_input() {
    let dir = TempDir::new("hxdp-bad");
    let firewall = example("xdp_firewall.o");
    let explosion = example("xdp_path_explosion.o");
    let reflector = example("xdp_reflector.o");
    let (firewall, explosion, reflector) = (
        firewall.to_str().unwrap(),
        explosion.to_str().unwrap(),
        reflector.to_str().unwrap(),
    );
    expect_error_in(&dir, &["hxdp", "nosuch.o"], &["nosuch.o"]);
    expect_error_in(
        &dir,
        &["hxdp", firewall, "-o", "out.rom"],
        &["insn 119", "BPF-to-BPF call"],
    );
    expect_error_in(
        &dir,
        &["hxdp", explosion, "-o", "out.rom"],
        &["VLIW rows", "256"],
    );
    expect_error_in(
        &dir,
        &[
            "hxdp",
            reflector,
            "-o",
            "missing/dir/out.rom",
            "--no-worst-case",
        ],
        &["missing/dir/out.rom"],
    );
    expect_error_in(&dir, &["hxdp", reflector, "--lanes", "0"], &["--lanes 0"]);
    dir.write("bad_hex.rom", format!("{}\n", "z".repeat(64)));
    expect_error_in(
        &dir,
        &["hxdp", "check", "bad_hex.rom", "--source", reflector],
        &["bad_hex.rom", "line 1"],
    );
    dir.write("short.rom", "0000\n");
    expect_error_in(
        &dir,
        &["hxdp", "check", "short.rom", "--source", reflector],
        &["short.rom", "line 1"],
    );
    dir.write(
        "opcode.rom",
        format!("{}{}\n", "0".repeat(48), "00000000000000ee"),
    );
    expect_error_in(
        &dir,
        &["hxdp", "check", "opcode.rom", "--source", reflector],
        &["opcode.rom", "line 1", "lane 0"],
    );
    expect_error_in(
        &dir,
        &["hxdp", "check", "nosuch.rom", "--source", reflector],
        &["nosuch.rom"],
    );
}

#[test]
fn bound_on_hxdp_and_simulation_from_a_pcap() {
    // `bound --target hxdp` prices with the schedule, as `hxdp`'s worst case does, and its
    // witness runs through the cycle model in no more cycles than that worst case.
    let reflector = example("xdp_reflector.o");
    let hxdp = run(["hxdp".as_ref(), reflector.as_os_str(), "--json".as_ref()]).json();
    let bound = run([
        "bound".as_ref(),
        reflector.as_os_str(),
        "--target".as_ref(),
        "hxdp".as_ref(),
        "--json".as_ref(),
    ])
    .json();
    let worst_pps = hxdp["worst_case"]["pps"].as_f64().unwrap();
    let ssp_pps = bound["ssp"]["pps"].as_f64().unwrap();
    assert!(
        (worst_pps - ssp_pps).abs() < 1.0,
        "{worst_pps} vs {ssp_pps}"
    );
    let witness = bound["ssp"]["witness"]["packet"].as_str().unwrap();
    let packet = (0..witness.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&witness[i..i + 2], 16).unwrap())
        .collect::<Vec<u8>>();
    let dir = TempDir::new("hxdp-pcap");
    let pcap = dir.write("witness.pcap", linerate_io::pcap::encode_pcap(&[packet]));
    let sim = run([
        "hxdp".as_ref(),
        reflector.as_os_str(),
        "--no-worst-case".as_ref(),
        "--simulate".as_ref(),
        pcap.as_os_str(),
        "--json".as_ref(),
    ])
    .json();
    let run_pps = sim["simulation"]["packets"][0]["pps"].as_f64().unwrap();
    assert!(
        run_pps >= worst_pps - 1.0,
        "{run_pps} below the bound {worst_pps}"
    );
    assert_eq!(sim["simulation"]["mismatches"].as_array().unwrap().len(), 0);
}
