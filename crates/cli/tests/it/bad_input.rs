//! Bad input to `linerate inspect` / `linerate run`: every failure is exit status 1, nothing on
//! stdout, one line `error: ...` on stderr naming the cause and the place, no panic, and no file
//! left behind.

use crate::common;

use common::*;

const PACKET: &str = "02000000000202000000000108004500001c000040004011b6cdc0000201c0000202";

fn copy_example(dir: &TempDir, name: &str) -> Vec<u8> {
    let bytes = std::fs::read(example(name)).unwrap();
    dir.write(name, &bytes);
    bytes
}

#[test]
fn missing_file() {
    let dir = TempDir::new("missing");
    for cmd in [
        vec!["inspect", "nosuch.o"],
        vec!["run", "nosuch.o", "--packet", PACKET],
    ] {
        expect_error_in(
            &dir,
            &cmd,
            &["cannot read nosuch.o", "No such file or directory"],
        );
    }
}

#[test]
fn empty_file() {
    let dir = TempDir::new("empty");
    dir.write("empty.o", b"");
    dir.write("blank.txt", b"\n  \n");
    for name in ["empty.o", "blank.txt"] {
        expect_error_in(&dir, &["inspect", name], &[name, "empty file"]);
        expect_error_in(
            &dir,
            &["run", name, "--packet", PACKET],
            &[name, "empty file"],
        );
    }
}

#[test]
fn truncated_elf() {
    let dir = TempDir::new("truncated");
    for name in ["xdp_router.o", "xdp_reflector.o", "xdp_legacy_maps.o"] {
        let bytes = std::fs::read(example(name)).unwrap();
        let n = bytes.len();
        let xdp = sections(&bytes)
            .into_iter()
            .find(|s| s.size > 0 && s.name.starts_with("xdp"))
            .unwrap();
        for cut in [
            4,
            16,
            63,
            64,
            xdp.offset + 8,
            xdp.offset + xdp.size / 2,
            n / 2,
            n - 64,
            n - 1,
        ] {
            dir.write("cut.o", &bytes[..cut]);
            let line = expect_error_in(&dir, &["inspect", "cut.o"], &["cut.o: truncated ELF"]);
            assert!(
                line.contains(&format!("(size {cut})")),
                "cut at {cut}: the message should give the file size: {line}"
            );
            expect_error_in(
                &dir,
                &["run", "cut.o", "--packet", PACKET],
                &["cut.o: truncated ELF"],
            );
        }
    }
}

#[test]
fn corrupted_section_headers() {
    let dir = TempDir::new("corrupt");
    let bytes = std::fs::read(example("xdp_router.o")).unwrap();
    let xdp = section(&bytes, "xdp");
    let maps = section(&bytes, ".maps");
    let shoff = u64::from_le_bytes(bytes[0x28..0x30].try_into().unwrap()) as usize;
    let shnum = u16::from_le_bytes([bytes[0x3c], bytes[0x3d]]) as usize;
    let patch = |at: usize, value: &[u8]| {
        let mut b = bytes.clone();
        b[at..at + value.len()].copy_from_slice(value);
        b
    };
    let cases: Vec<(&str, Vec<u8>, Vec<String>)> = vec![
        (
            "program section offset past the end",
            patch(xdp.header_offset + 0x18, &0xffff_fff0u64.to_le_bytes()),
            vec![
                "truncated ELF".into(),
                "section xdp".into(),
                "offset 0xfffffff0".into(),
            ],
        ),
        (
            "maps section size past the end",
            patch(maps.header_offset + 0x20, &0xff_ffff_ffffu64.to_le_bytes()),
            vec!["truncated ELF".into(), "section .maps".into()],
        ),
        (
            "section name out of the string table",
            patch(xdp.header_offset, &0x00ff_ffffu32.to_le_bytes()),
            vec![
                "malformed ELF".into(),
                format!("name of section {}", xdp.index),
            ],
        ),
        (
            "whole section header table overwritten with 0xff",
            patch(shoff, &vec![0xff; shnum * 64]),
            vec!["malformed ELF".into()],
        ),
        (
            "section headers after the first zeroed",
            patch(shoff + 64, &vec![0; (shnum - 1) * 64]),
            vec!["malformed ELF".into()],
        ),
        (
            "e_shstrndx out of range",
            patch(0x3e, &200u16.to_le_bytes()),
            vec!["malformed ELF".into(), "e_shstrndx".into()],
        ),
        (
            "e_shoff past the end",
            patch(0x28, &0xffff_ffffu64.to_le_bytes()),
            vec![
                "truncated ELF".into(),
                "section header table at offset 0xffffffff".into(),
            ],
        ),
    ];
    for (what, data, parts) in cases {
        dir.write("bad.o", &data);
        let mut parts: Vec<&str> = parts.iter().map(String::as_str).collect();
        parts.push("bad.o: ");
        let before = dir.listing();
        let out = run_in(Some(dir.path()), ["inspect", "bad.o"]);
        assert!(out.code != Some(0), "{what}: accepted: {out:#?}");
        expect_error(&out, &parts);
        assert_eq!(dir.listing(), before);
    }
}

/// Many deterministic random corruptions of the section header table and of the whole file:
/// whatever the object turns into, the binary never panics and either succeeds or fails with the
/// one-line error.
#[test]
fn random_corruptions_never_panic() {
    let dir = TempDir::new("random");
    let bytes = std::fs::read(example("xdp_firewall.o")).unwrap();
    let shoff = u64::from_le_bytes(bytes[0x28..0x30].try_into().unwrap()) as usize;
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut failures = 0;
    for round in 0..120 {
        let mut data = bytes.clone();
        let (from, to) = if round % 2 == 0 {
            (shoff, data.len())
        } else {
            (0, data.len())
        };
        for _ in 0..6 {
            let at = from + (next() as usize) % (to - from);
            data[at] = next() as u8;
        }
        dir.write("r.o", &data);
        let out = run_in(Some(dir.path()), ["inspect", "r.o", "--no-disasm"]);
        if out.code == Some(0) {
            assert!(out.stderr.is_empty(), "round {round}: {out:#?}");
        } else {
            failures += 1;
            expect_error(&out, &["r.o"]);
        }
    }
    assert!(
        failures > 0,
        "no corruption was noticed at all — suspicious"
    );
}

#[test]
fn non_bpf_elf() {
    let dir = TempDir::new("x86");
    let fixture =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../bpf/tests/fixtures/x86_64.o");
    dir.write("x86_64.o", std::fs::read(fixture).unwrap());

    // A hand-made ELF header: 64-bit little-endian relocatable, with the given machine.
    let header = |class: u8, data: u8, e_type: u16, machine: u16| {
        let mut h = vec![0x7f, b'E', b'L', b'F', class, data, 1, 0];
        h.extend_from_slice(&[0; 8]);
        let push16 = |h: &mut Vec<u8>, v: u16| {
            if data == 2 {
                h.extend_from_slice(&v.to_be_bytes())
            } else {
                h.extend_from_slice(&v.to_le_bytes())
            }
        };
        push16(&mut h, e_type);
        push16(&mut h, machine);
        h.extend_from_slice(&[1, 0, 0, 0]); // e_version (little-endian is fine for the check)
        h.resize(64, 0);
        h
    };
    dir.write("crafted_x86.o", header(2, 1, 1, 62));
    dir.write("crafted_arm.o", header(2, 1, 1, 183));
    dir.write("crafted_32.o", header(1, 1, 1, 3));
    dir.write("crafted_be.o", header(2, 2, 1, 247));
    dir.write("crafted_exec.o", header(2, 1, 2, 247));

    for (name, parts) in [
        ("x86_64.o", vec!["x86_64.o: not a BPF object", "x86_64"]),
        (
            "crafted_x86.o",
            vec!["crafted_x86.o: not a BPF object", "x86_64"],
        ),
        ("crafted_arm.o", vec!["crafted_arm.o: not a BPF object"]),
        (
            "crafted_32.o",
            vec!["crafted_32.o: not a BPF object", "32-bit"],
        ),
        (
            "crafted_be.o",
            vec!["crafted_be.o: not a BPF object", "big-endian"],
        ),
        (
            "crafted_exec.o",
            vec!["crafted_exec.o: not a BPF object", "ET_EXEC"],
        ),
    ] {
        expect_error_in(&dir, &["inspect", name], &parts);
        expect_error_in(&dir, &["run", name, "--packet", PACKET], &parts);
    }
}

#[test]
fn not_an_object_at_all() {
    let dir = TempDir::new("junk");
    dir.write("binary.o", [0x00, 0xff, 0xfe, 0x80, 0x81, 0x00, 0x01]);
    expect_error_in(
        &dir,
        &["inspect", "binary.o"],
        &["binary.o: not a BPF object"],
    );
    dir.write("words.txt", "hello world\n");
    expect_error_in(&dir, &["inspect", "words.txt"], &["words.txt: line 1"]);
    dir.write("header_only.txt", "\nx.o:\tfile format elf64-bpf\n\n");
    expect_error_in(
        &dir,
        &["inspect", "header_only.txt"],
        &["header_only.txt: no programs"],
    );
}

/// Finds the index of an instruction in `code` that is neither half of a 64-bit immediate load,
/// at or after `from`.
fn plain_insn(code: &[u8], from: usize) -> usize {
    let mut i = 0;
    while i * 8 < code.len() {
        if code[i * 8] == 0x18 {
            i += 2;
            continue;
        }
        if i >= from {
            return i;
        }
        i += 1;
    }
    panic!("no plain instruction at or after {from}");
}

#[test]
fn unknown_opcode_names_instruction_and_section() {
    let dir = TempDir::new("opcode");
    for (name, sec, from) in [
        ("xdp_reflector.o", "xdp", 7),
        ("xdp_router.o", "xdp", 40),
        ("xdp_firewall.o", ".text", 3),
        ("xdp_legacy_maps.o", "xdp_prog", 5),
    ] {
        let mut bytes = copy_example(&dir, name);
        let s = section(&bytes, sec);
        let insn = plain_insn(&bytes[s.offset..s.offset + s.size], from);
        bytes[s.offset + insn * 8] = 0xff;
        dir.write("patched.o", &bytes);
        let place = format!("unknown opcode 0xff at insn {insn} of section {sec}");
        expect_error_in(&dir, &["inspect", "patched.o"], &["patched.o: ", &place]);
        expect_error_in(
            &dir,
            &["run", "patched.o", "--packet", PACKET],
            &["patched.o: ", &place],
        );
    }
}

#[test]
fn unparsable_packet() {
    let dir = TempDir::new("packet");
    copy_example(&dir, "xdp_filter.o");
    for (packet, parts) in [
        ("zz", vec!["--packet", "`zz` at character 0 is not hex"]),
        (
            "0200000000020200000000010800zz",
            vec!["--packet", "`zz` at character 28 is not hex"],
        ),
        ("abc", vec!["--packet", "odd number of hex digits (3)"]),
        (
            "02000000000202000000000108004",
            vec!["--packet", "odd number of hex digits (29)"],
        ),
        ("0000", vec!["packet 0", "2 bytes", "Ethernet header"]),
        ("", vec!["packet 0", "0 bytes", "Ethernet header"]),
    ] {
        expect_error_in(&dir, &["run", "xdp_filter.o", "--packet", packet], &parts);
    }
    expect_error_in(
        &dir,
        &["run", "xdp_filter.o", "--packet", PACKET, "--meta", "0"],
        &["--meta", "odd number of hex digits (1)"],
    );
}

#[test]
fn packets_file_with_a_bad_line() {
    let dir = TempDir::new("packets");
    copy_example(&dir, "xdp_filter.o");
    dir.write(
        "bad.packets",
        format!(
            "# comment\n{PACKET}\n\n   \n{PACKET}\n{}zz\n{PACKET}\n",
            &PACKET[..20]
        ),
    );
    expect_error_in(
        &dir,
        &["run", "xdp_filter.o", "--packets", "bad.packets"],
        &[
            "packets file bad.packets line 6",
            "`zz` at character 20 is not hex",
        ],
    );
    dir.write("odd.packets", format!("{PACKET}\n{PACKET}0\n"));
    expect_error_in(
        &dir,
        &["run", "xdp_filter.o", "--packets", "odd.packets"],
        &[
            "packets file odd.packets line 2",
            "odd number of hex digits",
        ],
    );
    dir.write("none.packets", "# nothing here\n\n");
    expect_error_in(
        &dir,
        &["run", "xdp_filter.o", "--packets", "none.packets"],
        &["packets file none.packets", "no packets"],
    );
    dir.write("short.packets", format!("{PACKET}\n0200000000\n"));
    expect_error_in(
        &dir,
        &["run", "xdp_filter.o", "--packets", "short.packets"],
        &["packet 1", "5 bytes", "shorter than an Ethernet header"],
    );
    // A failure on a later packet prints nothing for the earlier ones. (Packets up to 73,152
    // bytes run, as multi-buffer packets past 3,520.)
    dir.write(
        "huge.packets",
        format!("{PACKET}\n{PACKET}{}\n", "00".repeat(80_000)),
    );
    expect_error_in(
        &dir,
        &["run", "xdp_filter.o", "--packets", "huge.packets", "--json"],
        &["packet 1", "larger than"],
    );
    expect_error_in(
        &dir,
        &["run", "xdp_filter.o", "--packets", "missing.packets"],
        &["cannot read packets file missing.packets", "No such file"],
    );
}

#[test]
fn unparsable_maps_file() {
    let dir = TempDir::new("maps");
    copy_example(&dir, "xdp_router.o");
    let run_with = |name: &str, body: &str, parts: &[&str]| {
        dir.write(name, body);
        let mut parts = parts.to_vec();
        let prefix = format!("maps file {name}: ");
        parts.push(&prefix);
        expect_error_in(
            &dir,
            &["run", "xdp_router.o", "--packet", PACKET, "--maps", name],
            &parts,
        )
    };
    let line = run_with(
        "syntax.json",
        "{\"routes\": [\n  {\"key\": \"100000000a010000\", \"value\": }\n]}\n",
        &["invalid JSON at line 2 column", "expected value"],
    );
    assert_eq!(
        line.matches("line 2").count(),
        1,
        "the place is given once: {line}"
    );
    run_with(
        "eof.json",
        "{\"routes\": [",
        &["invalid JSON at line 1 column 12", "EOF"],
    );
    run_with(
        "shape.json",
        "[\"routes\"]",
        &["invalid JSON at line 1", "expected a map"],
    );
    run_with(
        "field.json",
        "{\"routes\": [{\"key\": \"100000000a010000\"}]}",
        // "value" is optional in the JSON shape (maps of maps give "inner" instead), so its
        // absence is reported for the map and entry that need it.
        &["map `routes` entry 0", "needs a hex \"value\""],
    );
    run_with(
        "unknown.json",
        "{\"nosuch\": []}",
        &[
            "no map named `nosuch` in xdp_router",
            "router_stats",
            "routes",
        ],
    );
    run_with(
        "keysize.json",
        "{\"routes\": [{\"key\": \"0a01\", \"value\": \"0a000000000a0a0000000001\"}]}",
        &["map `routes` entry 0: key has 2 bytes, the map's keys have 8"],
    );
    run_with(
        "valuesize.json",
        "{\"routes\": [{\"key\": \"100000000a010000\", \"value\": \"0a000000000a0a0000000001\"},\n\
         {\"key\": \"100000000a020000\", \"value\": \"0a00\"}]}",
        &["map `routes` entry 1: value has 2 bytes, the map's values have 12"],
    );
    run_with(
        "keyhex.json",
        "{\"routes\": [{\"key\": \"100000000a01zz00\", \"value\": \"0a000000000a0a0000000001\"}]}",
        &["map `routes` entry 0: key: `zz` at character 12 is not hex"],
    );
    run_with(
        "valuehex.json",
        "{\"router_stats\": [{\"key\": \"00000000\", \"value\": \"0a0000000000000\"}]}",
        &["map `router_stats` entry 0: value: odd number of hex digits (15)"],
    );
    expect_error_in(
        &dir,
        &[
            "run",
            "xdp_router.o",
            "--packet",
            PACKET,
            "--maps",
            "missing.json",
        ],
        &["cannot read maps file missing.json", "No such file"],
    );
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
        out.extend_from_slice(&(i as u32).to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&(p.len() as u32).to_le_bytes());
        out.extend_from_slice(&(p.len() as u32).to_le_bytes());
        out.extend_from_slice(p);
    }
    out
}

#[test]
fn truncated_pcap_and_pcapng() {
    let dir = TempDir::new("pcap");
    copy_example(&dir, "xdp_filter.o");
    let p = example_packets("xdp_filter");
    let (a, b) = (&p.packets[0].1, &p.packets[1].1);
    let full = pcap(&[a, b]);
    let second = 24 + 16 + a.len();
    for (cut, parts) in [
        (
            0,
            vec!["truncated: 0 bytes, a pcap header has 24".to_string()],
        ),
        (10, vec!["truncated: 10 bytes, a pcap header has 24".into()]),
        (30, vec!["packet 0 header truncated at offset 24".into()]),
        (
            24 + 16 + 5,
            vec![format!(
                "packet 0 at offset 24 claims {} bytes but the file ends at 45",
                a.len()
            )],
        ),
        (
            second + 3,
            vec![format!("packet 1 header truncated at offset {second}")],
        ),
        (
            full.len() - 1,
            vec![format!(
                "packet 1 at offset {second} claims {} bytes but the file ends at {}",
                b.len(),
                full.len() - 1
            )],
        ),
    ] {
        dir.write("cut.pcap", &full[..cut]);
        let mut parts: Vec<&str> = parts.iter().map(String::as_str).collect();
        parts.push("pcap file cut.pcap: ");
        expect_error_in(&dir, &["run", "xdp_filter.o", "--pcap", "cut.pcap"], &parts);
    }

    // A minimal pcapng section header block.
    let mut ng = Vec::new();
    ng.extend_from_slice(&0x0a0d_0d0au32.to_le_bytes());
    ng.extend_from_slice(&28u32.to_le_bytes());
    ng.extend_from_slice(&0x1a2b_3c4du32.to_le_bytes());
    ng.extend_from_slice(&1u16.to_le_bytes());
    ng.extend_from_slice(&0u16.to_le_bytes());
    ng.extend_from_slice(&(-1i64).to_le_bytes());
    ng.extend_from_slice(&28u32.to_le_bytes());
    dir.write("capture.pcapng", &ng);
    expect_error_in(
        &dir,
        &["run", "xdp_filter.o", "--pcap", "capture.pcapng"],
        &[
            "pcap file capture.pcapng: pcapng is not supported",
            "editcap",
        ],
    );

    let mut raw = full.clone();
    raw[20..24].copy_from_slice(&101u32.to_le_bytes());
    dir.write("raw.pcap", &raw);
    expect_error_in(
        &dir,
        &["run", "xdp_filter.o", "--pcap", "raw.pcap"],
        &["pcap file raw.pcap: link type 101 at offset 20 is not Ethernet (1)"],
    );

    dir.write("empty.pcap", &full[..24]);
    expect_error_in(
        &dir,
        &["run", "xdp_filter.o", "--pcap", "empty.pcap"],
        &["pcap file empty.pcap: holds no packets"],
    );

    dir.write("text.pcap", "not a capture at all, just text\n");
    expect_error_in(
        &dir,
        &["run", "xdp_filter.o", "--pcap", "text.pcap"],
        &["pcap file text.pcap: not a pcap file (magic"],
    );
    expect_error_in(
        &dir,
        &["run", "xdp_filter.o", "--pcap", "missing.pcap"],
        &["cannot read pcap file missing.pcap", "No such file"],
    );
}

#[test]
fn unknown_program_name() {
    let dir = TempDir::new("prog");
    copy_example(&dir, "xdp_tailcall.o");
    let parts = [
        "no program `nope` in xdp_tailcall",
        "xdp_tailcall_entry",
        "xdp_tailcall_ipv4",
    ];
    expect_error_in(
        &dir,
        &["inspect", "xdp_tailcall.o", "--prog", "nope"],
        &parts,
    );
    expect_error_in(
        &dir,
        &[
            "run",
            "xdp_tailcall.o",
            "--prog",
            "nope",
            "--packet",
            PACKET,
        ],
        &parts,
    );
}

/// Drops root to `nobody` with no capabilities and checks `run --kernel` refuses with one line.
#[test]
fn kernel_without_privileges() {
    if let Some(why) = cannot_drop_privileges() {
        linerate_kernel::skip_or_fail(&format!("kernel_without_privileges: {why}"));
        return;
    }
    // Inputs in a world-readable scratch directory so that `nobody` can read them.
    let dir = TempDir::new("unpriv");
    copy_example(&dir, "xdp_router.o");
    std::fs::copy(
        example("xdp_router.packets"),
        dir.path().join("xdp_router.packets"),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    for f in ["xdp_router.o", "xdp_router.packets"] {
        std::fs::set_permissions(dir.path().join(f), std::fs::Permissions::from_mode(0o644))
            .unwrap();
    }
    let before = dir.listing();
    for args in [
        vec![
            "run",
            "xdp_router.o",
            "--kernel",
            "--packets",
            "xdp_router.packets",
        ],
        vec![
            "run",
            "xdp_router.o",
            "--kernel",
            "--repeat",
            "10",
            "--json",
            "--packet",
            PACKET,
        ],
    ] {
        let out = unprivileged(dir.path(), &args);
        let line = expect_error(&out, &["BPF not available"]);
        assert!(
            line.contains("root") || line.contains("CAP_BPF"),
            "the message should say what is needed: {line}"
        );
    }
    assert_eq!(dir.listing(), before);
    // The interpreter needs no privileges.
    let out = unprivileged(
        dir.path(),
        &["run", "xdp_router.o", "--packets", "xdp_router.packets"],
    );
    out.ok();
}

/// A program the kernel's verifier rejects (insn 52 of `xdp_reflector` patched to read the
/// never-written r9): one `error:` line naming the program, then the verifier log.
#[test]
fn verifier_rejection_prints_the_log_after_one_line() {
    if let Err(reason) = kernel_available() {
        linerate_kernel::skip_or_fail(&format!(
            "verifier_rejection_prints_the_log_after_one_line: {reason}"
        ));
        return;
    }
    let dir = TempDir::new("verifier");
    let mut bytes = copy_example(&dir, "xdp_reflector.o");
    let xdp = section(&bytes, "xdp");
    let at = xdp.offset + 52 * 8;
    assert_eq!(bytes[at], 0xb4, "insn 52 of xdp_reflector is `w0 = 0x3`");
    bytes[at..at + 8].copy_from_slice(&[0xbc, 0x90, 0, 0, 0, 0, 0, 0]); // w0 = w9
    dir.write("uninit.o", &bytes);
    let before = dir.listing();
    let out = run_in(
        Some(dir.path()),
        ["run", "uninit.o", "--kernel", "--packet", PACKET],
    );
    assert_eq!(dir.listing(), before);
    assert_eq!(out.code, Some(1), "{out:#?}");
    assert!(out.stdout.is_empty(), "{out:#?}");
    assert!(!out.stderr.contains("panicked"), "{out:#?}");
    let mut lines = out.stderr.lines();
    let first = lines.next().unwrap_or_default();
    assert!(
        first.starts_with("error: ") && first.contains("verifier rejected program `xdp_reflector`"),
        "{first}"
    );
    let log: Vec<&str> = lines.collect();
    assert!(log.first() == Some(&"verifier log:"), "{}", out.stderr);
    assert!(
        log.iter().any(|l| l.contains("R9 !read_ok")),
        "{}",
        out.stderr
    );
}
