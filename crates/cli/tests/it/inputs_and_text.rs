//! Other input forms (`llvm-objdump -d` text, pcap captures) and the human-readable output.

use crate::common;

use std::path::PathBuf;

use common::*;
use serde_json::Value;

fn fixture(name: &str) -> PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn inspect_json(path: &std::path::Path) -> Value {
    run(["inspect".as_ref(), path.as_os_str(), "--json".as_ref()]).json()
}

fn programs(j: &Value) -> Vec<(String, String, u64)> {
    j["programs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap().to_string(),
                p["section"].as_str().unwrap().to_string(),
                p["insns"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// `tests/fixtures/xdp_reflector.objdump.txt` is `llvm-objdump-19 -d examples/xdp_reflector.o`:
/// it describes the same program as the object, down to the disassembly, and runs the same.
#[test]
fn objdump_text_matches_object() {
    let text = fixture("xdp_reflector.objdump.txt");
    let elf = example("xdp_reflector.o");
    let from_text = inspect_json(&text);
    let from_elf = inspect_json(&elf);
    assert_eq!(programs(&from_text), programs(&from_elf));
    assert_eq!(programs(&from_elf)[0].0, "xdp_reflector");
    assert_eq!(
        from_text["programs"][0]["disassembly"],
        from_elf["programs"][0]["disassembly"]
    );
    let packets = example("xdp_reflector.packets");
    let runs: Vec<Value> = [&text, &elf]
        .iter()
        .map(|o| {
            run([
                "run".as_ref(),
                o.as_os_str(),
                "--packets".as_ref(),
                packets.as_os_str(),
                "--json".as_ref(),
            ])
            .json()
        })
        .collect();
    assert_eq!(runs[0], runs[1]);
}

/// Listings made now, when llvm-objdump-19 is installed, of objects with maps and two programs.
#[test]
fn objdump_text_generated_now() {
    let tool = "llvm-objdump-19";
    if std::process::Command::new(tool)
        .arg("--version")
        .output()
        .map(|o| !o.status.success())
        .unwrap_or(true)
    {
        println!("SKIPPED: {tool} is not installed");
        return;
    }
    let dir = TempDir::new("objdump");
    for stem in ["xdp_router", "xdp_tailcall", "xdp_legacy_maps", "xdp_dns"] {
        let o = example(&format!("{stem}.o"));
        let listing = std::process::Command::new(tool)
            .arg("-d")
            .arg(&o)
            .output()
            .unwrap();
        assert!(listing.status.success());
        let path = dir.write(&format!("{stem}.txt"), &listing.stdout);
        let mut from_text = programs(&inspect_json(&path));
        let mut from_elf = programs(&inspect_json(&o));
        from_text.sort();
        from_elf.sort();
        assert_eq!(from_text, from_elf, "{stem}");
    }
}

/// Classic little-endian pcap bytes (link type 1) holding `packets`.
fn pcap(packets: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&4u16.to_le_bytes());
    out.extend_from_slice(&[0; 8]);
    out.extend_from_slice(&65535u32.to_le_bytes());
    out.extend_from_slice(&1u32.to_le_bytes());
    for (i, p) in packets.iter().enumerate() {
        out.extend_from_slice(&(1_700_000_000 + i as u32).to_le_bytes());
        out.extend_from_slice(&(i as u32 * 1000).to_le_bytes());
        out.extend_from_slice(&(p.len() as u32).to_le_bytes());
        out.extend_from_slice(&(p.len() as u32).to_le_bytes());
        out.extend_from_slice(p);
    }
    out
}

/// Three packets of `xdp_filter.packets` with different outcomes (pass, drop, tagged pass with
/// metadata) in a pcap: three results in order, the same as running them with `--packet`.
#[test]
fn run_pcap_three_packets_in_order() {
    let dir = TempDir::new("pcap");
    let all = example_packets("xdp_filter").packets;
    let pick = |want: &str, skip: usize| {
        all.iter()
            .filter(|(a, _)| a == want)
            .nth(skip)
            .unwrap_or_else(|| panic!("no {want} packet"))
            .clone()
    };
    let chosen = [
        pick("XDP_DROP", 0),
        pick("XDP_PASS", 0),
        all.iter()
            .find(|(a, p)| a == "XDP_PASS" && p[12..14] == [0x81, 0x00])
            .expect("an 802.1Q packet")
            .clone(),
    ];
    let path = dir.write(
        "three.pcap",
        pcap(&chosen.iter().map(|(_, p)| p.as_slice()).collect::<Vec<_>>()),
    );
    let runs = run([
        "run".as_ref(),
        example("xdp_filter.o").as_os_str(),
        "--pcap".as_ref(),
        path.as_os_str(),
        "--json".as_ref(),
    ])
    .json();
    let runs = runs.as_array().expect("three results make an array");
    assert_eq!(runs.len(), 3);
    for (i, (r, (action, packet))) in runs.iter().zip(&chosen).enumerate() {
        assert_eq!(r["action"], action.as_str(), "pcap packet {i}");
        let single = run([
            "run".as_ref(),
            example("xdp_filter.o").as_os_str(),
            "--packet".as_ref(),
            hex(packet).as_ref(),
            "--json".as_ref(),
        ])
        .json();
        for field in ["action", "return_value", "packet", "meta"] {
            assert_eq!(r[field], single[field], "pcap packet {i}: `{field}`");
        }
    }
    // The tagged frame carries XDP metadata, the others do not: the order is kept.
    assert_eq!(runs[0]["meta"], "");
    assert_eq!(runs[1]["meta"], "");
    assert_ne!(runs[2]["meta"], "");
    // Maps persist across the capture: the per-CPU counters count all three packets.
    let total: u64 = runs[2]["maps"]["filter_stats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let v = e["value"].as_str().unwrap();
            u64::from_str_radix(&v[..2], 16).unwrap()
        })
        .sum();
    assert_eq!(total, 3, "{}", runs[2]["maps"]);
}

#[test]
fn inspect_human_output() {
    let out = run(["inspect".as_ref(), example("xdp_router.o").as_os_str()]);
    let text = out.ok();
    assert!(out.stderr.is_empty(), "{out:#?}");
    for needle in [
        "object xdp_router (license GPL)",
        "programs\n",
        "name",
        "section",
        "insns",
        "xdp_router",
        "maps\n",
        "routes",
        "lpm_trie",
        "router_stats",
        "cfg of xdp_router:",
        "disassembly of xdp_router (section xdp):",
        "exit",
    ] {
        assert!(text.contains(needle), "`{needle}` missing from:\n{text}");
    }
    // The tables: a header row followed by aligned rows.
    let header = text
        .lines()
        .find(|l| l.trim_start().starts_with("name") && l.contains("insns"))
        .expect("programs table header");
    let row = text
        .lines()
        .find(|l| l.trim_start().starts_with("xdp_router "))
        .expect("programs table row");
    assert_eq!(
        header.find("insns").unwrap(),
        row.find(char::is_numeric).unwrap(),
        "columns aligned:\n{header}\n{row}"
    );
    let insns = section(&std::fs::read(example("xdp_router.o")).unwrap(), "xdp").size / 8;
    let disasm_lines = text
        .lines()
        .filter(|l| {
            l.trim_start()
                .split_once(':')
                .is_some_and(|(n, _)| n.parse::<usize>().is_ok())
        })
        .count();
    // One line per instruction slot, the second slot of 64-bit immediates folded into the first.
    assert!(
        disasm_lines > insns / 2 && disasm_lines <= insns,
        "{disasm_lines} disassembly lines for {insns} instructions"
    );

    let short = run([
        "inspect".as_ref(),
        example("xdp_router.o").as_os_str(),
        "--no-disasm".as_ref(),
    ]);
    let short = short.ok();
    assert!(short.contains("programs") && short.contains("routes"));
    assert!(!short.contains("disassembly of"), "{short}");

    let none = run(["inspect".as_ref(), example("xdp_reflector.o").as_os_str()]);
    assert!(none.ok().contains("maps\n  (none)"), "{}", none.stdout);

    let dot = run([
        "inspect".as_ref(),
        example("xdp_tailcall.o").as_os_str(),
        "--dot".as_ref(),
    ]);
    let dot = dot.ok();
    assert_eq!(dot.matches("digraph").count(), 2, "{dot}");
}

#[test]
fn run_human_output() {
    let p = example_packets("xdp_router").packets;
    let tx = p
        .iter()
        .find(|(a, _)| a == "XDP_TX")
        .expect("a routed packet");
    let out = run([
        "run".as_ref(),
        example("xdp_router.o").as_os_str(),
        "--packet".as_ref(),
        hex(&tx.1).as_ref(),
        "--maps".as_ref(),
        example("xdp_router.maps.json").as_os_str(),
    ]);
    let text = out.ok();
    assert!(out.stderr.is_empty(), "{out:#?}");
    for needle in [
        "program xdp_router (section xdp) in the linerate interpreter",
        "action   XDP_TX (3)",
        "executed ",
        "changed at bytes 0, 5-6, 22, 24:",
        "map changes",
        "  router_stats (1 entries now)",
        "unchanged: routes",
    ] {
        assert!(text.contains(needle), "`{needle}` missing from:\n{text}");
    }

    let out = run([
        "run".as_ref(),
        example("xdp_filter.o").as_os_str(),
        "--packets".as_ref(),
        example("xdp_filter.packets").as_os_str(),
    ]);
    let text = out.ok();
    let expected = example_packets("xdp_filter").packets;
    let actions: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("action   "))
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    let want: Vec<&str> = expected.iter().map(|(a, _)| a.as_str()).collect();
    assert_eq!(actions, want);
    assert!(text.contains("packet 0\n") && text.contains(&format!("packet {}\n", want.len() - 1)));
}

#[test]
fn run_human_output_kernel() {
    if let Err(reason) = kernel_available() {
        linerate_kernel::skip_or_fail(&format!("run_human_output_kernel: {reason}"));
        return;
    }
    let out = run([
        "run".as_ref(),
        example("xdp_reflector.o").as_os_str(),
        "--packets".as_ref(),
        example("xdp_reflector.packets").as_os_str(),
        "--kernel".as_ref(),
        "--repeat".as_ref(),
        "3".as_ref(),
    ]);
    let text = out.ok();
    assert!(text.contains("in the kernel (BPF_PROG_TEST_RUN)"), "{text}");
    assert!(text.contains("action   XDP_"), "{text}");
    assert!(text.contains("ns per run (3 runs)"), "{text}");
}

/// Usage errors come from the argument parser: non-zero, `error:` first, nothing on stdout.
#[test]
fn usage_errors() {
    for args in [
        vec!["run", "x.o"],
        vec!["run", "x.o", "--packet", "00", "--repeat", "3"],
        vec!["inspect"],
        vec!["frobnicate"],
    ] {
        let out = run(&args);
        assert_eq!(out.code, Some(2), "{args:?}: {out:#?}");
        assert!(out.stdout.is_empty());
        assert!(out.stderr.starts_with("error: "), "{out:#?}");
        assert!(!out.stderr.contains("panicked"));
    }
}

/// A reader that stops early (`linerate inspect x.o | head`) ends the output quietly: exit 0,
/// no panic. The output (> 128 KiB) is larger than a pipe's buffer, so the write does fail.
#[test]
fn closed_stdout_is_not_a_panic() {
    use std::io::Read;
    use std::process::{Command, Stdio};
    for json in [false, true] {
        let mut cmd = Command::new(bin());
        cmd.arg("inspect").arg(example("xdp_path_explosion.o"));
        if json {
            cmd.arg("--json");
        }
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let mut first = [0u8; 16];
        stdout.read_exact(&mut first).unwrap();
        drop(stdout);
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert_eq!(out.status.code(), Some(0), "{stderr}");
    }
}

/// Any other failure to write the output is the one-line error.
#[test]
fn full_disk_on_stdout_is_an_error() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        println!("SKIPPED: full_disk_on_stdout_is_an_error: no /dev/full");
        return;
    };
    let mut cmd = std::process::Command::new(bin());
    cmd.arg("inspect")
        .arg(example("xdp_router.o"))
        .stdout(full)
        .stderr(std::process::Stdio::piped());
    let out = cmd.output().unwrap();
    let out = Out {
        code: out.status.code(),
        stdout: String::new(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    expect_error(&out, &["cannot write to standard output", "No space left"]);
}
