//! `read_objdump_text` reads the listings of every LLVM release people still have (8 through 19).
//!
//! LLVM 13: real listings in `tests/fixtures/objdump/llvm13/` (rebuilt by its Makefile with
//! clang-13 and llvm-objdump-13), each compared with the object clang-13 built: reading the text
//! must give the programs reading the ELF object gives. LLVM 8–12: hand-written listings in
//! `tests/fixtures/objdump/llvm<N>/`, each imitating that release's printed format (see each
//! file's header), read to the instructions of the same program built here.

use std::path::{Path, PathBuf};

use linerate_bpf::insn::{CallTarget, Imm64, Instruction};
use linerate_bpf::objdump::read_objdump_text;
use linerate_bpf::object::read_object;
use linerate_bpf::program::Object;

fn fixture(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/objdump")
        .join(path)
}

fn read_text(path: &str) -> Object {
    let text = std::fs::read_to_string(fixture(path)).unwrap();
    read_objdump_text(&text, "fixture").unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn read_elf(path: &str) -> Object {
    let bytes = std::fs::read(fixture(path)).unwrap();
    read_object(&bytes, "fixture").unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// An instruction with its map reference written by name, so that objects that number their
/// maps differently compare equal.
#[derive(Debug, PartialEq)]
enum Named {
    Insn(Instruction),
    Map {
        dst: u8,
        map: String,
        offset: u32,
    },
    /// A 64-bit load into `dst` where the object loads a map: what a listing without `-r` shows
    /// (it cannot say which map a load loads), or one whose maps are compared separately.
    MapLoad {
        dst: u8,
    },
}

/// How map references are compared.
#[derive(Clone, Copy, PartialEq)]
enum Maps {
    /// By map name and offset.
    ByName,
    /// Only as 64-bit loads into the same register.
    AsLoads,
}

fn named(object: &Object, program: usize, maps: Maps) -> Vec<Named> {
    let name = |m: u32| object.maps[m as usize].name.clone();
    object.programs[program]
        .decode()
        .unwrap()
        .into_iter()
        .map(|(_, insn)| match insn {
            Instruction::LoadImm64 { dst, imm } => match (imm, maps) {
                (Imm64::Map(_) | Imm64::MapValue { .. }, Maps::AsLoads) => Named::MapLoad { dst },
                (Imm64::Map(m), Maps::ByName) => Named::Map {
                    dst,
                    map: name(m),
                    offset: 0,
                },
                (Imm64::MapValue { map, offset }, Maps::ByName) => Named::Map {
                    dst,
                    map: name(map),
                    offset,
                },
                _ => Named::Insn(insn),
            },
            _ => Named::Insn(insn),
        })
        .collect()
}

/// Reading `listing` gives the programs of the object `elf`: same names, sections, functions and
/// instructions, map references compared as `maps` says. Where the object loads a map and the
/// listing has no `-r`, the listing must have a constant 64-bit load into the same register.
fn same_programs(listing: &str, elf: &str, maps: Maps) -> Result<(), String> {
    let text = read_text(listing);
    let object = read_elf(elf);
    let names = |o: &Object| {
        o.programs
            .iter()
            .map(|p| (p.name.clone(), p.section.clone(), p.functions.clone()))
            .collect::<Vec<_>>()
    };
    if names(&text) != names(&object) {
        return Err(format!(
            "{listing}: programs {:?}, the object has {:?}",
            names(&text),
            names(&object)
        ));
    }
    if object.programs.is_empty() {
        return Err(format!("{elf}: no programs"));
    }
    for (i, program) in object.programs.iter().enumerate() {
        let expected = named(&object, i, maps);
        let mut got = named(&text, i, maps);
        for (g, e) in got.iter_mut().zip(&expected) {
            if let (
                Named::Insn(Instruction::LoadImm64 {
                    dst,
                    imm: Imm64::Const(_),
                }),
                Named::MapLoad { .. } | Named::Map { .. },
            ) = (&*g, e)
            {
                if maps == Maps::AsLoads {
                    *g = Named::MapLoad { dst: *dst };
                }
            }
        }
        if got != expected {
            let at = got.iter().zip(&expected).position(|(a, b)| a != b);
            return Err(format!(
                "{listing}: program {}: {} vs {} instructions, first difference at {at:?}: {:?} vs {:?}",
                program.name,
                got.len(),
                expected.len(),
                at.and_then(|a| got.get(a)),
                at.and_then(|a| expected.get(a)),
            ));
        }
    }
    Ok(())
}

/// Map references by name where the listing has relocations, as loads otherwise.
fn maps_of(listing: &str) -> Maps {
    let text = std::fs::read_to_string(fixture(listing)).unwrap();
    if text.contains("R_BPF_64_64") {
        Maps::ByName
    } else {
        Maps::AsLoads
    }
}

const LLVM13: &[&str] = &[
    "xdp_filter",
    "xdp_legacy_maps",
    "xdp_rodata_config",
    "xdp_tailcall",
    "xdp_legacy_text",
];

#[test]
fn llvm13_listings_read_to_the_object_clang13_built() {
    let mut failures = Vec::new();
    let mut check = |listing: String, elf: &str, maps: Maps| {
        failures.extend(same_programs(&listing, elf, maps).err());
    };
    for name in LLVM13 {
        let elf = format!("llvm13/{name}.o");
        for form in ["d", "dr", "noraw", "S", "drl", "drt"] {
            let listing = format!("llvm13/{name}.{form}.txt");
            // LLVM 13 relocates a global variable's load against the variable's own symbol;
            // without `-t` a listing does not say the symbol is a variable (see below).
            let maps = if *name == "xdp_rodata_config" && form != "drt" {
                Maps::AsLoads
            } else {
                maps_of(&listing)
            };
            check(listing, &elf, maps);
        }
    }
    check(
        "llvm13/xdp_filter.v3.dr.txt".into(),
        "llvm13/xdp_filter.v3.o",
        Maps::ByName,
    );
    // BPF-to-BPF calls to a global function need `-r` to be followed (see
    // `calls_to_global_functions_need_relocations`).
    for form in ["dr", "drt"] {
        check(
            format!("llvm13/subprogs.{form}.txt"),
            "llvm13/subprogs.o",
            Maps::ByName,
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// LLVM 13 relocates loads of global variables against the variables' symbols: `-drt` says
/// which section each lives in (the maps are the object's), `-dr` alone does not (each variable
/// is then a map of its own, named after it, as the module documentation says).
#[test]
fn llvm13_global_variables_need_the_symbol_table() {
    let map_names = |o: &Object| {
        let mut names: Vec<String> = o.maps.iter().map(|m| m.name.clone()).collect();
        names.sort();
        names
    };
    let object = read_elf("llvm13/xdp_rodata_config.o");
    let with_symbols = read_text("llvm13/xdp_rodata_config.drt.txt");
    assert_eq!(map_names(&with_symbols), map_names(&object));
    let without = read_text("llvm13/xdp_rodata_config.dr.txt");
    let names = map_names(&without);
    assert!(
        names.iter().all(|n| !n.starts_with("fixture.")),
        "{names:?}"
    );
    assert!(names.contains(&"max_frame_len".to_string()), "{names:?}");
}

/// The hand-written listings of LLVM 8–12 (see each file's header for the release's layout it
/// imitates) read to the programs of the object clang-13 built from the same source.
#[test]
fn older_release_listings_read_to_the_same_programs() {
    let cases = [
        ("llvm8/xdp_legacy_maps.dr.txt", "llvm13/xdp_legacy_maps.o"),
        ("llvm9/xdp_filter.S.txt", "llvm13/xdp_filter.o"),
        ("llvm10/xdp_tailcall.dr.txt", "llvm13/xdp_tailcall.o"),
        ("llvm10/xdp_tailcall.noraw.txt", "llvm13/xdp_tailcall.o"),
        ("llvm11/xdp_filter.v3.dr.txt", "llvm13/xdp_filter.v3.o"),
        ("llvm12/xdp_legacy_text.drl.txt", "llvm13/xdp_legacy_text.o"),
        ("llvm10/subprogs.dr.txt", "llvm13/subprogs.o"),
        ("llvm9/subprogs.dr.txt", "llvm13/subprogs.o"),
    ];
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|(listing, elf)| same_programs(listing, elf, maps_of(listing)).err())
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A bcc-generated dump: map-fd pseudo loads become one map per descriptor, loaded where the
/// object loads its maps, and every other instruction is the object's.
#[test]
fn bcc_map_fd_loads_become_maps() {
    let text = read_text("bcc/xdp_legacy_maps.txt");
    let object = read_elf("llvm13/xdp_legacy_maps.o");
    assert_eq!(text.programs.len(), 1);
    assert_eq!(text.programs[0].name, "xdp_legacy_maps");
    assert_eq!(text.programs[0].section, ".bpf.fn.xdp_legacy_maps");
    assert_eq!(
        named(&text, 0, Maps::AsLoads),
        named(&object, 0, Maps::AsLoads)
    );
    // The object's map at each load, and the listing's: legacy_stats is descriptor 4,
    // legacy_blocked descriptor -1.
    let by_name = |o: &Object| -> Vec<String> {
        named(o, 0, Maps::ByName)
            .into_iter()
            .filter_map(|n| match n {
                Named::Map { map, .. } => Some(map),
                _ => None,
            })
            .collect()
    };
    let expected: Vec<String> = by_name(&object)
        .into_iter()
        .map(|m| match m.as_str() {
            "legacy_stats" => "map_fd_4".to_string(),
            "legacy_blocked" => "map_fd_4294967295".to_string(),
            other => panic!("unexpected map {other}"),
        })
        .collect();
    assert_eq!(expected.len(), 5);
    assert_eq!(by_name(&text), expected);
}

fn one_program(text: &str) -> Vec<Instruction> {
    let object = read_objdump_text(text, "t").unwrap_or_else(|e| panic!("{e}"));
    object.programs[0]
        .decode()
        .unwrap()
        .into_iter()
        .map(|x| x.1)
        .collect()
}

/// A 64-bit load whose second slot is not printed takes its upper half from the text; one whose
/// second slot is printed takes it from those bytes; both read like the one-line form.
#[test]
fn split_64_bit_loads_join() {
    let one_line = one_program(
        "Disassembly of section xdp:\n\
         xdp_prog:\n\
         \x20      0:\t18 01 00 00 02 00 00 00 00 00 00 00 01 00 00 00 \tr1 = 4294967298 ll\n\
         \x20      2:\t18 02 00 00 ff ff ff ff 00 00 00 00 ff ff ff ff \tr2 = -1 ll\n\
         \x20      4:\t95 00 00 00 00 00 00 00 \texit\n",
    );
    assert_eq!(
        one_line[0],
        Instruction::LoadImm64 {
            dst: 1,
            imm: Imm64::Const(0x1_0000_0002)
        }
    );
    assert_eq!(
        one_line[1],
        Instruction::LoadImm64 {
            dst: 2,
            imm: Imm64::Const(u64::MAX)
        }
    );
    let not_printed = one_program(
        "Disassembly of section xdp:\n\
         xdp_prog:\n\
         \x20      0:\t18 01 00 00 02 00 00 00 \tr1 = 4294967298 ll\n\
         \x20      2:\t18 02 00 00 ff ff ff ff \tr2 = -1 ll\n\
         \x20      4:\t95 00 00 00 00 00 00 00 \texit\n",
    );
    assert_eq!(not_printed, one_line);
    let printed = one_program(
        "Disassembly of section xdp:\n\
         xdp_prog:\n\
         \x20      0:\t18 01 00 00 02 00 00 00 \tr1 = 4294967298 ll\n\
         \x20      1:\t00 00 00 00 01 00 00 00 \t\n\
         \x20      2:\t18 02 00 00 ff ff ff ff \tr2 = -1 ll\n\
         \x20      3:\t00 00 00 00 ff ff ff ff \t<unknown>\n\
         \x20      4:\t95 00 00 00 00 00 00 00 \texit\n",
    );
    assert_eq!(printed, one_line);
    let no_bytes = one_program(
        "Disassembly of section xdp:\n\
         0000000000000000 xdp_prog:\n\
         \x20      0:\tr1 = 4294967298 ll\n\
         \x20      1:\n\
         \x20      2:\tr2 = -1 ll\n\
         \x20      4:\texit\n",
    );
    assert_eq!(no_bytes, one_line);
}

/// Where a line carries raw bytes they alone give the instruction: a second slot that disagrees
/// with the text's constant, or a mnemonic no release prints, reads as the bytes say.
#[test]
fn the_bytes_rule() {
    let got = one_program(
        "Disassembly of section xdp:\nxdp_prog:\n       0:\t18 01 00 00 02 00 00 00 \tr1 = 4294967298 ll\n       1:\t00 00 00 00 07 00 00 00 \t\n       2:\tb7 00 00 00 02 00 00 00 \tmov r0, 2\n       3:\t95 00 00 00 00 00 00 00 \texit\n",
    );
    assert_eq!(
        got,
        [
            Instruction::LoadImm64 {
                dst: 1,
                imm: Imm64::Const(0x7_0000_0002)
            },
            Instruction::Alu {
                wide: true,
                op: linerate_bpf::insn::AluOp::Mov,
                dst: 0,
                src: linerate_bpf::insn::Operand::Imm(2)
            },
            Instruction::Exit
        ]
    );
}

/// Bad old-style text is a one-line error naming the line and the cause.
#[test]
fn bad_old_listings_are_errors_naming_the_line() {
    let cases = [
        // Bytes that do not decode.
        (
            "Disassembly of section xdp:\nxdp_prog:\n       0:\tff 01 00 00 02 00 00 00 \tr1 = 2\n",
            "line 3: raw bytes do not decode",
        ),
        // Eight bytes that are not a 64-bit load under a 64-bit load's text: the bytes rule, so
        // the next address is one slot early.
        (
            "Disassembly of section xdp:\nxdp_prog:\n       0:\tb7 01 00 00 02 00 00 00 \tr1 = 2 ll\n       2:\t95 00 00 00 00 00 00 00 \texit\n",
            "line 4: instruction index 2 does not follow the previous instruction (expected 1)",
        ),
        // An address-only line that follows no 64-bit load.
        (
            "Disassembly of section xdp:\n0000000000000000 xdp_prog:\n       0:\tr1 = 2\n       1:\n       2:\texit\n",
            "line 4: ",
        ),
        // Without bytes the text is read: an immediate no encoding holds.
        (
            "Disassembly of section xdp:\nxdp_prog:\n       0:\tld_pseudo r1, 1, 99999999999\n",
            "line 3: immediate 99999999999 out of range",
        ),
    ];
    for (text, expected) in cases {
        let err = read_objdump_text(text, "t").unwrap_err().to_string();
        assert!(err.starts_with(expected), "{err:?} for {text:?}");
        assert!(!err.contains('\n'), "{err:?}");
    }
}

/// Without `-r` a call to a global function (`call -1`) cannot be followed: a clear error naming
/// the line, not a wrong program.
#[test]
fn calls_to_global_functions_need_relocations() {
    let text = std::fs::read_to_string(fixture("llvm13/subprogs.dr.txt")).unwrap();
    let without: String = text
        .lines()
        .map(|l| if l.contains("R_BPF_") { "" } else { l })
        .collect::<Vec<_>>()
        .join("\n");
    let err = read_objdump_text(&without, "t").unwrap_err();
    let line = without
        .lines()
        .position(|l| l.ends_with("call -1"))
        .unwrap()
        + 1;
    assert_eq!(
        err.to_string(),
        format!(
            "line {line}: call to a global function; list the object with `llvm-objdump -dr` to follow it"
        )
    );
}

/// Without raw bytes llvm prints BPF-to-BPF calls like helper calls: those with a relocation are
/// linked as the calls they are (a call between static functions of `.text` has none and reads
/// as a helper call, the limit the module documentation states).
#[test]
fn relocated_calls_link_without_raw_bytes() {
    let noraw = read_text("llvm13/subprogs.noraw.txt");
    let object = read_elf("llvm13/subprogs.o");
    for name in ["prog_one", "prog_tc"] {
        let find = |o: &Object| o.programs.iter().position(|p| p.name == name).unwrap();
        let (t, e) = (find(&noraw), find(&object));
        let callees = |o: &Object, p: usize| {
            o.programs[p]
                .functions
                .iter()
                .take(2)
                .map(|f| (f.name.clone(), f.start))
                .collect::<Vec<_>>()
        };
        assert_eq!(callees(&noraw, t), callees(&object, e), "{name}");
        // The entry function's instructions, each call written as the name of the function it
        // calls (where the linker placed a callee depends on what else it linked).
        let entry = |o: &Object, p: usize| {
            let program = &o.programs[p];
            named(o, p, Maps::ByName)
                .into_iter()
                .take(program.functions[0].len)
                .enumerate()
                .map(|(i, n)| match n {
                    Named::Insn(Instruction::Call(CallTarget::Local(off))) => {
                        let at = (i as i64 + off as i64 + 1) as usize;
                        let f = program.functions.iter().find(|f| f.start == at).unwrap();
                        format!("call {}", f.name)
                    }
                    n => format!("{n:?}"),
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(entry(&noraw, t), entry(&object, e), "{name}");
    }
}
