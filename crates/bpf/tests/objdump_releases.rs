//! `read_objdump_text` reads the listings of every LLVM release people still have (8 through 19).
//!
//! LLVM 13: real listings in `tests/fixtures/objdump/llvm13/` (rebuilt by its Makefile with
//! clang-13 and llvm-objdump-13), each compared with the object clang-13 built: reading the text
//! must give the programs reading the ELF object gives. LLVM 8–12: hand-written listings in
//! `tests/fixtures/objdump/llvm<N>/`, each imitating that release's printed format (see each
//! file's header), read to the instructions of the same program built here.

use std::path::{Path, PathBuf};

use linerate_bpf::insn::{Imm64, Instruction};
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
