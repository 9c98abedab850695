//! `inspect`, `run` and `cost` accept the llvm-objdump listings of every LLVM release from 8 on
//! (the fixtures of `crates/bpf/tests/fixtures/objdump/`: real LLVM 13 listings, hand-written
//! LLVM 8–12 and bcc ones; see their headers), and bad old-style text is a one-line error.

use crate::common;

use std::path::{Path, PathBuf};

use common::*;
use serde_json::Value;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../bpf/tests/fixtures/objdump")
        .join(name)
}

fn inspect(path: &Path) -> Value {
    run(["inspect".as_ref(), path.as_os_str(), "--json".as_ref()]).json()
}

/// Each program's name, instruction count and disassembly without the raw bytes (which hold
/// map indices, and a listing numbers its maps in order of first use).
fn programs(j: &Value) -> Vec<(String, u64, Vec<String>)> {
    j["programs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap().to_string(),
                p["insns"].as_u64().unwrap(),
                p["disassembly"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|l| {
                        let l = l.as_str().unwrap();
                        l.rsplit('\t').next().unwrap_or(l).to_string()
                    })
                    .collect(),
            )
        })
        .collect()
}

/// Every older-release listing with `-r` inspects to the programs of the object clang-13 built
/// from the same source, disassembly included (map names come from the relocations).
#[test]
fn inspect_reads_every_release() {
    let cases = [
        ("llvm8/xdp_legacy_maps.dr.txt", "llvm13/xdp_legacy_maps.o"),
        ("llvm10/xdp_tailcall.dr.txt", "llvm13/xdp_tailcall.o"),
        ("llvm10/xdp_tailcall.noraw.txt", "llvm13/xdp_tailcall.o"),
        ("llvm11/xdp_filter.v3.dr.txt", "llvm13/xdp_filter.v3.o"),
        ("llvm12/xdp_legacy_text.drl.txt", "llvm13/xdp_legacy_text.o"),
        ("llvm13/xdp_filter.dr.txt", "llvm13/xdp_filter.o"),
        (
            "llvm13/xdp_rodata_config.drt.txt",
            "llvm13/xdp_rodata_config.o",
        ),
    ];
    for (listing, elf) in cases {
        let from_text = programs(&inspect(&fixture(listing)));
        let from_elf = programs(&inspect(&fixture(elf)));
        assert!(!from_elf.is_empty(), "{elf}");
        assert_eq!(from_text, from_elf, "{listing}");
    }
    // Without `-r` (LLVM 9 `-S`) and from bcc the listings cannot name the maps the object
    // names: the same programs and sizes.
    for (listing, elf) in [
        ("llvm9/xdp_filter.S.txt", "llvm13/xdp_filter.o"),
        ("bcc/xdp_legacy_maps.txt", "llvm13/xdp_legacy_maps.o"),
    ] {
        let sizes = |p: Vec<(String, u64, Vec<String>)>| {
            p.into_iter().map(|(n, i, _)| (n, i)).collect::<Vec<_>>()
        };
        assert_eq!(
            sizes(programs(&inspect(&fixture(listing)))),
            sizes(programs(&inspect(&fixture(elf)))),
            "{listing}"
        );
    }
}

/// A map-free program read from its LLVM 12 listing runs and costs exactly as its object does.
#[test]
fn run_and_cost_an_old_listing() {
    let listing = fixture("llvm12/xdp_legacy_text.drl.txt");
    let elf = fixture("llvm13/xdp_legacy_text.o");
    let packets = example("xdp_legacy_text.packets");
    let runs: Vec<Value> = [&listing, &elf]
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
    assert!(runs[0].as_array().is_some_and(|r| r.len() > 1));
    assert_eq!(runs[0], runs[1]);
    let costs: Vec<Value> = [&listing, &elf]
        .iter()
        .map(|o| run(["cost".as_ref(), o.as_os_str(), "--json".as_ref()]).json())
        .collect();
    assert_eq!(costs[0]["programs"], costs[1]["programs"]);
}

/// Old-style text with a fault is one error line naming the file, the line and the cause.
#[test]
fn bad_old_listing_is_one_error_line() {
    let dir = TempDir::new("old-listing");
    dir.write(
        "old.txt",
        "old.o:\tfile format ELF64-BPF\n\nDisassembly of section xdp:\nxdp_prog:\n       0:\t18 01 00 00 02 00 00 00 \tr1 = 4294967298 ll\n       1:\t00 00 00 00 07 00 00 00 \t\n       2:\tff 00 00 00 00 00 00 00 \texit\n",
    );
    for command in ["inspect", "cost"] {
        expect_error_in(
            &dir,
            &[command, "old.txt"],
            &["old.txt", "line 7", "raw bytes do not decode"],
        );
    }
}
