//! Reading real clang objects (fixtures built once with clang 14 and 19, see
//! `tests/fixtures/README.md`) and rejecting malformed ones.

use std::path::{Path, PathBuf};

use linerate_bpf::btf::{Btf, Kind};
use linerate_bpf::insn::{CallTarget, Imm64};
use linerate_bpf::object::ObjectError;
use linerate_bpf::program::MapOrigin;
use linerate_bpf::{read_object, read_object_file, Instruction, MapType, Object, Program};
use linerate_testkit::XorShift;

fn fixture_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn fixture_bytes(name: &str) -> Vec<u8> {
    std::fs::read(fixture_path(name)).unwrap()
}

fn fixture(name: &str) -> Object {
    read_object_file(&fixture_path(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn program<'a>(obj: &'a Object, name: &str) -> &'a Program {
    obj.programs
        .iter()
        .find(|p| p.name == name)
        .unwrap_or_else(|| panic!("no program {name}"))
}

fn names(obj: &Object) -> Vec<&str> {
    obj.programs.iter().map(|p| p.name.as_str()).collect()
}

fn function_names(p: &Program) -> Vec<&str> {
    p.functions.iter().map(|f| f.name.as_str()).collect()
}

/// Every bpf-to-bpf call and function-address load of a program as (caller, callee) function
/// names, asserting that each lands exactly on the start of a function.
fn call_edges(p: &Program) -> Vec<(String, String)> {
    let mut edges = Vec::new();
    for (slot, insn) in p.decode().unwrap() {
        let rel = match insn {
            Instruction::Call(CallTarget::Local(rel)) => rel,
            Instruction::LoadImm64 {
                imm: Imm64::Pseudo { src: 4, imm, .. },
                ..
            } => imm,
            _ => continue,
        };
        let target = (slot as i64 + i64::from(rel) + 1) as usize;
        let callee = p
            .functions
            .iter()
            .find(|f| f.start == target)
            .unwrap_or_else(|| {
                panic!(
                    "{}: slot {slot} targets {target}, no function start",
                    p.name
                )
            });
        let caller = p.function_at(slot).unwrap();
        edges.push((caller.name.clone(), callee.name.clone()));
    }
    edges
}

/// Map references `(slot, map index)` of a program, in slot order.
fn map_refs(p: &Program) -> Vec<(usize, u32)> {
    p.decode()
        .unwrap()
        .into_iter()
        .filter_map(|(slot, insn)| match insn {
            Instruction::LoadImm64 {
                imm: Imm64::Map(m), ..
            } => Some((slot, m)),
            _ => None,
        })
        .collect()
}

/// Global-data references `(map index, offset)` of a program, in slot order.
fn value_refs(p: &Program) -> Vec<(u32, u32)> {
    p.decode()
        .unwrap()
        .into_iter()
        .filter_map(|(_, insn)| match insn {
            Instruction::LoadImm64 {
                imm: Imm64::MapValue { map, offset },
                ..
            } => Some((map, offset)),
            _ => None,
        })
        .collect()
}

#[test]
fn btf_maps_and_prog_array_values() {
    let obj = fixture("btf_maps.o");
    assert_eq!(obj.name, "btf_maps");
    assert_eq!(obj.license.as_deref(), Some("GPL"));
    // Several programs in one section.
    assert_eq!(names(&obj), ["tail_a", "tail_b", "entry"]);
    assert!(obj.programs.iter().all(|p| p.section == "xdp"));

    let summary: Vec<_> = obj
        .maps
        .iter()
        .map(|m| {
            (
                m.name.as_str(),
                m.map_type,
                m.key_size,
                m.value_size,
                m.max_entries,
                m.flags,
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("flows", MapType::LRU_HASH, 16, 16, 4096, 0),
            ("counters", MapType::PERCPU_ARRAY, 4, 24, 16, 0),
            ("jumps", MapType::PROG_ARRAY, 4, 4, 4, 0),
            ("ports", MapType::DEVMAP, 4, 8, 8, 0x80),
        ]
    );
    assert!(obj.maps.iter().all(|m| m.origin == MapOrigin::Btf));
    let jumps = &obj.maps[obj.map_index("jumps").unwrap()];
    let tail_a = obj
        .programs
        .iter()
        .position(|p| p.name == "tail_a")
        .unwrap();
    let tail_b = obj
        .programs
        .iter()
        .position(|p| p.name == "tail_b")
        .unwrap();
    assert_eq!(jumps.initial_programs, [(1, tail_a), (3, tail_b)]);

    let entry = program(&obj, "entry");
    assert_eq!(function_names(entry), ["entry"]);
    let refs: Vec<u32> = map_refs(entry).into_iter().map(|(_, m)| m).collect();
    let idx = |n: &str| obj.map_index(n).unwrap() as u32;
    assert_eq!(
        refs,
        [idx("flows"), idx("counters"), idx("jumps"), idx("ports")]
    );
    // Map references are exactly the kernel's `BPF_PSEUDO_MAP_IDX` form.
    let (slot, _) = map_refs(entry)[0];
    assert_eq!(entry.insns[slot].src, 5);
    assert_eq!(entry.insns[slot + 1].imm, 0);
}

#[test]
fn legacy_maps_in_old_style_sections() {
    let obj = fixture("legacy_maps.o");
    assert_eq!(names(&obj), ["xdp_drop_count"]);
    let p = program(&obj, "xdp_drop_count");
    assert_eq!(p.section, "xdp_prog");
    // Symbol table order: clang 14 lists `blacklist` before `rxcnt`.
    let summary: Vec<_> = obj
        .maps
        .iter()
        .map(|m| {
            (
                m.name.as_str(),
                m.map_type,
                m.key_size,
                m.value_size,
                m.max_entries,
                m.flags,
                m.origin.clone(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("blacklist", MapType::HASH, 4, 4, 1024, 1, MapOrigin::Legacy),
            (
                "rxcnt",
                MapType::PERCPU_ARRAY,
                4,
                8,
                256,
                0,
                MapOrigin::Legacy
            ),
        ]
    );
    // The program looks up `blacklist` first (insn 10), then `rxcnt` (insn 18).
    let blacklist = obj.map_index("blacklist").unwrap() as u32;
    let rxcnt = obj.map_index("rxcnt").unwrap() as u32;
    assert_eq!(map_refs(p), [(10, blacklist), (18, rxcnt)]);
}

#[test]
fn programs_only_in_text() {
    let obj = fixture("text_only.o");
    assert_eq!(names(&obj), ["xdp_first", "xdp_second"]);
    for name in ["xdp_first", "xdp_second"] {
        let p = program(&obj, name);
        assert_eq!(p.section, ".text");
        assert_eq!(function_names(p), [name, "classify"]);
        assert_eq!(call_edges(p), [(name.to_string(), "classify".to_string())]);
        // Functions are laid out back to back.
        assert_eq!(p.functions[1].start, p.functions[0].len);
        assert_eq!(p.insns.len(), p.functions[0].len + p.functions[1].len);
    }
    // `classify` is 5 instructions in both programs.
    assert_eq!(program(&obj, "xdp_second").functions[1].len, 5);
}

fn edges(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

#[test]
fn static_and_global_subprograms_are_linked_depth_first() {
    let obj = fixture("subprogs.o");
    assert_eq!(obj.license.as_deref(), Some("Dual BSD/GPL"));
    // `global_helper` lives in .text and is a sub-program, not a program.
    assert_eq!(names(&obj), ["prog_one", "prog_two", "prog_tc"]);
    assert!(obj.maps.is_empty());

    let one = program(&obj, "prog_one");
    assert_eq!(one.section, "xdp");
    assert_eq!(
        function_names(one),
        ["prog_one", "global_helper", "middle", "leaf"]
    );
    assert_eq!(
        call_edges(one),
        edges(&[
            ("prog_one", "global_helper"),
            ("global_helper", "middle"),
            ("middle", "leaf"),
            ("middle", "leaf"),
        ])
    );

    // The bpf_loop callback is loaded by address (`BPF_PSEUDO_FUNC`) and appended like a callee.
    let two = program(&obj, "prog_two");
    assert_eq!(function_names(two), ["prog_two", "loop_cb", "leaf"]);
    assert_eq!(
        call_edges(two),
        edges(&[("prog_two", "loop_cb"), ("prog_two", "leaf")])
    );

    // A function reached twice (`middle`) is appended once; depth first from the first call.
    let tc = program(&obj, "prog_tc");
    assert_eq!(tc.section, "tc");
    assert_eq!(
        function_names(tc),
        ["prog_tc", "middle", "leaf", "global_helper"]
    );
    assert_eq!(
        call_edges(tc),
        edges(&[
            ("prog_tc", "middle"),
            ("prog_tc", "global_helper"),
            ("middle", "leaf"),
            ("middle", "leaf"),
            ("global_helper", "middle"),
        ])
    );
    for p in &obj.programs {
        let total: usize = p.functions.iter().map(|f| f.len).sum();
        assert_eq!(total, p.insns.len(), "{}", p.name);
    }
}

/// Shared by the clang 14 and clang 19 builds of `global_data.c`.
fn check_global_data(file: &str) {
    let obj = fixture(file);
    let summary: Vec<_> = obj
        .maps
        .iter()
        .map(|m| (m.name.as_str(), m.value_size, m.flags, m.origin.clone()))
        .collect();
    let data = |section: &str, read_only: bool| MapOrigin::GlobalData {
        section: section.into(),
        read_only,
    };
    assert_eq!(
        summary,
        [
            ("global_d.rodata", 28, 0x80, data(".rodata", true)),
            ("global_d.data", 8, 0, data(".data", false)),
            (".data.custom", 4, 0, data(".data.custom", false)),
            ("global_d.bss", 20, 0, data(".bss", false)),
            (".rodata.str1.1", 12, 0x80, data(".rodata.str1.1", true)),
            (".rodata.cst8", 8, 0x80, data(".rodata.cst8", true)),
        ],
        "{file}"
    );
    for m in &obj.maps {
        assert_eq!(
            (m.map_type, m.key_size, m.max_entries),
            (MapType::ARRAY, 4, 1)
        );
        assert_eq!(
            m.initial_value.as_ref().unwrap().len(),
            m.value_size as usize
        );
    }
    let value = |name: &str| {
        obj.maps[obj.map_index(name).unwrap()]
            .initial_value
            .clone()
            .unwrap()
    };
    let rodata = value("global_d.rodata");
    assert_eq!(&rodata[0..4], &80u32.to_le_bytes()); // cfg_port
    assert_eq!(&rodata[8..16], &0xffff_0000u64.to_le_bytes()); // cfg_mask
    assert_eq!(value("global_d.data"), 5u64.to_le_bytes()); // hits
    assert_eq!(value(".data.custom"), 7u32.to_le_bytes()); // custom_var
    assert_eq!(value("global_d.bss"), [0; 20]);
    assert_eq!(value(".rodata.cst8"), [3, 0, 5, 0, 7, 0, 11, 0]); // weights
    assert_eq!(value(".rodata.str1.1"), *b"literal %d\n\0");

    let p = program(&obj, "use_globals");
    let rodata_i = obj.map_index("global_d.rodata").unwrap() as u32;
    let bss_i = obj.map_index("global_d.bss").unwrap() as u32;
    let refs = value_refs(p);
    // cfg_port, hits, fmt "hit %d", cfg_mask, drops, misses, static_counter, custom_var,
    // fmt "miss", weights, string literal.
    let expected = [
        (rodata_i, 0),
        (obj.map_index("global_d.data").unwrap() as u32, 0),
        (rodata_i, 16),
        (rodata_i, 8),
        (bss_i, 0),
        (bss_i, 8),
        (bss_i, 16),
        (obj.map_index(".data.custom").unwrap() as u32, 0),
        (rodata_i, 23),
        (obj.map_index(".rodata.cst8").unwrap() as u32, 0),
        (obj.map_index(".rodata.str1.1").unwrap() as u32, 0),
    ];
    assert_eq!(refs, expected, "{file}");
    // The format strings sit where the references point.
    assert!(rodata[16..].starts_with(b"hit %d\0"));
    assert!(rodata[23..].starts_with(b"miss\0"));
}

#[test]
fn global_data_clang19() {
    check_global_data("global_data.o");
}

#[test]
fn global_data_clang14() {
    check_global_data("global_data_clang14.o");
}

#[test]
fn object_name_prefixes_data_maps_like_libbpf() {
    let bytes = fixture_bytes("global_data.o");
    let obj = read_object(&bytes, "my_object_name.bpf").unwrap();
    assert_eq!(obj.name, "my_object_name.bpf");
    assert_eq!(obj.maps[0].name, "my_objec.rodata");
    assert_eq!(obj.maps[3].name, "my_objec.bss");
}

/// The `.BTF` section of a fixture.
fn btf_of(name: &str) -> Btf {
    use object::{Object as _, ObjectSection as _};
    let bytes = fixture_bytes(name);
    let file = object::File::parse(&*bytes).unwrap();
    let section = file.section_by_name(".BTF").unwrap();
    Btf::parse(section.data().unwrap()).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn btf_type_counts_match_bpftool() {
    // `bpftool btf dump file X | grep -c '^\['`
    for (name, count) in [
        ("btf_maps.o", 66),
        ("btf_kinds.o", 46),
        ("global_data.o", 41),
        ("global_data_clang14.o", 39),
        ("subprogs.o", 40),
        ("text_only.o", 11),
        ("extern_kfunc.o", 10),
    ] {
        assert_eq!(btf_of(name).len(), count, "{name}");
    }
}

#[test]
fn btf_every_kind_parses() {
    let btf = btf_of("btf_kinds.o");
    let mut kinds: Vec<&str> = btf.types().map(|(_, t)| t.kind_name()).collect();
    kinds.sort_unstable();
    kinds.dedup();
    assert_eq!(
        kinds,
        [
            "ARRAY",
            "CONST",
            "DATASEC",
            "DECL_TAG",
            "ENUM",
            "ENUM64",
            "FLOAT",
            "FUNC",
            "FUNC_PROTO",
            "FWD",
            "INT",
            "PTR",
            "RESTRICT",
            "STRUCT",
            "TYPEDEF",
            "TYPE_TAG",
            "UNION",
            "VAR",
            "VOLATILE",
        ]
    );
    let (id, big) = btf
        .types()
        .find(|(_, t)| btf.name(t).unwrap() == "big")
        .unwrap();
    let Kind::Enum64 { size, values, .. } = &big.kind else {
        panic!("{big:?}");
    };
    assert_eq!((*size, values[0].value), (8, 0x12_3456_789a));
    assert_eq!(btf.resolve_size(id).unwrap(), 8);
    let (value_id, _) = btf
        .types()
        .find(|(_, t)| btf.name(t).unwrap() == "value")
        .unwrap();
    assert_eq!(btf.resolve_size(value_id).unwrap(), 72);
    let (_, maps) = btf.find_datasec(".maps").unwrap();
    assert!(matches!(&maps.kind, Kind::Datasec { vars, .. } if vars.len() == 1));

    // The map reads through typedefs, enums and the unused `pinning` member.
    let obj = fixture("btf_kinds.o");
    let m = &obj.maps[0];
    assert_eq!(
        (
            m.name.as_str(),
            m.map_type,
            m.key_size,
            m.value_size,
            m.max_entries
        ),
        ("tagged", MapType::HASH, 8, 72, 32)
    );
    assert_eq!(function_names(program(&obj, "kinds")), ["kinds", "helper"]);
}

#[test]
fn extern_kfunc_calls_stay_symbolic() {
    let obj = fixture("extern_kfunc.o");
    assert_eq!(obj.kfuncs.len(), 1);
    let k = &obj.kfuncs[0];
    assert_eq!((k.name.as_str(), k.weak), ("bpf_missing_kfunc", false));
    let btf = btf_of("extern_kfunc.o");
    let func = btf
        .ty(k.btf_func.expect("the object's BTF declares the kfunc"))
        .unwrap();
    assert_eq!(func.kind_name(), "FUNC");
    assert_eq!(btf.name(func).unwrap(), "bpf_missing_kfunc");
    // The call slot: src_reg BPF_PSEUDO_KFUNC_CALL, the immediate the kfunc's index.
    let call = obj.programs[0].insns[1];
    assert_eq!((call.code, call.src, call.off, call.imm), (0x85, 2, 0, 0));
    let text = linerate_bpf::disasm::disassemble_in(&obj, &obj.programs[0]);
    assert!(
        text.contains("call kfunc 0x0 <bpf_missing_kfunc>"),
        "{text}"
    );
}

#[test]
fn rejects_empty_and_non_elf_input() {
    let err = read_object(&[], "x").unwrap_err();
    assert_eq!(err.to_string(), "not an ELF file: empty file");
    let err = read_object(b"#!/bin/sh\n", "x").unwrap_err();
    assert!(matches!(err, ObjectError::NotElf(_)), "{err}");
}

#[test]
fn rejects_host_objects() {
    let err = read_object_file(&fixture_path("x86_64.o")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "not a BPF object: machine is x86_64 (EM_X86_64), expected EM_BPF (247)"
    );
    let mut bytes = fixture_bytes("legacy_maps.o");
    bytes[4] = 1; // ELFCLASS32
    let err = read_object(&bytes, "x").unwrap_err();
    assert!(matches!(err, ObjectError::NotBpf(_)), "{err}");
    let mut bytes = fixture_bytes("legacy_maps.o");
    bytes[16] = 2; // ET_EXEC
    let err = read_object(&bytes, "x").unwrap_err();
    assert!(err.to_string().contains("ET_EXEC"), "{err}");
}

#[test]
fn every_truncation_is_an_error() {
    for name in ["legacy_maps.o", "text_only.o", "btf_maps.o", "subprogs.o"] {
        let bytes = fixture_bytes(name);
        for len in 0..bytes.len() {
            // All of every small file; a stride through the larger ones.
            if bytes.len() > 2000 && len % 7 != 0 && len < bytes.len() - 200 {
                continue;
            }
            assert!(
                read_object(&bytes[..len], name).is_err(),
                "{name} truncated to {len} bytes read without error"
            );
        }
    }
    let bytes = fixture_bytes("legacy_maps.o");
    let err = read_object(&bytes[..100], "x").unwrap_err();
    assert_eq!(
        err.to_string(),
        "truncated ELF: section header table at offset 0x290 past end of file (size 100)"
    );
    let err = read_object(&bytes[..40], "x").unwrap_err();
    assert_eq!(
        err.to_string(),
        "truncated ELF: file header at offset 0x0 past end of file (size 40)"
    );
}

#[test]
fn unknown_opcode_names_section_and_insn() {
    let mut bytes = fixture_bytes("legacy_maps.o");
    // Section `xdp_prog` starts at file offset 0x40; insn 3 is `r3 = r1` (0xbf).
    let at = 0x40 + 3 * 8;
    assert_eq!(bytes[at], 0xbf);
    bytes[at] = 0xff;
    let err = read_object(&bytes, "legacy_maps").unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown opcode 0xff at insn 3 of section xdp_prog"
    );
}

#[test]
fn misaligned_input_reads_the_same() {
    let bytes = fixture_bytes("subprogs.o");
    let mut shifted = vec![0u8; bytes.len() + 1];
    shifted[1..].copy_from_slice(&bytes);
    let a = read_object(&bytes, "subprogs").unwrap();
    let b = read_object(&shifted[1..], "subprogs").unwrap();
    assert_eq!(a, b);
}

#[test]
fn random_bytes_are_rejected_without_panicking() {
    let mut rng = XorShift::new(0x1234_5678_9abc_def1);
    for len in [1, 7, 64, 100, 1000, 5000] {
        let bytes: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
        assert!(read_object(&bytes, "random").is_err());
        // The same bytes behind a valid BPF ELF identification and header start.
        let mut elf = fixture_bytes("legacy_maps.o")[..24].to_vec();
        elf.extend_from_slice(&bytes);
        let _ = read_object(&elf, "random");
    }
}

#[test]
fn corrupted_objects_never_panic() {
    let mut rng = XorShift::new(0xfeed_beef_cafe_f00d);
    for name in [
        "btf_maps.o",
        "btf_kinds.o",
        "legacy_maps.o",
        "subprogs.o",
        "global_data.o",
        "text_only.o",
    ] {
        let original = fixture_bytes(name);
        for _ in 0..300 {
            let mut bytes = original.clone();
            for _ in 0..=rng.below(4) {
                let at = rng.below(bytes.len());
                bytes[at] = match rng.below(4) {
                    0 => 0,
                    1 => 0xff,
                    2 => bytes[at] ^ (1 << rng.below(8)),
                    _ => rng.next_u64() as u8,
                };
            }
            if let Ok(obj) = read_object(&bytes, name) {
                for p in &obj.programs {
                    p.decode().unwrap();
                }
            }
        }
    }
}

#[test]
fn project_examples_read_and_decode() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return;
    };
    let mut objects: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "o"))
        .collect();
    objects.sort();
    for path in objects {
        let obj = read_object_file(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(!obj.programs.is_empty(), "{}", path.display());
        for p in &obj.programs {
            p.decode()
                .unwrap_or_else(|e| panic!("{} {}: {e}", path.display(), p.name));
            call_edges(p);
            let total: usize = p.functions.iter().map(|f| f.len).sum();
            assert_eq!(total, p.insns.len(), "{} {}", path.display(), p.name);
            for (_, m) in map_refs(p) {
                assert!((m as usize) < obj.maps.len());
            }
        }
    }
}
