//! The disassembler prints what llvm-objdump-19 prints, and the assembler reads real
//! llvm-objdump-14 and -19 listings back into the bytes of the object they were made from.
//!
//! Fixtures are in `tests/fixtures/asm/` (rebuilt by its Makefile): `forms.c` compiled by
//! clang-19 (`-mcpu=v4`) and clang-14 (`-mcpu=v3`), `allforms.o` holding one raw instance of every
//! instruction form (from `gen_allforms.py`), and their `llvm-objdump -dr` listings.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use linerate_bpf::asm::{assemble, assemble_program};
use linerate_bpf::disasm::{disassemble, format_instruction, NoNames};
use linerate_bpf::insn::{
    decode_all, encode_all, AtomicOp, CallTarget, Imm64, Instruction, RawInsn, Size,
};
use linerate_bpf::objdump::read_objdump_text;
use linerate_bpf::program::{Function, MapOrigin, Object, Program};
use object::{Object as _, ObjectSection as _};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/asm")
        .join(name)
}

fn read(name: &str) -> String {
    std::fs::read_to_string(fixture(name)).unwrap()
}

/// The bytes of the code sections of an object, in the order llvm-objdump lists them.
fn code_sections(object: &str) -> Vec<(String, Vec<u8>)> {
    let data = std::fs::read(fixture(object)).unwrap();
    let file = object::File::parse(&*data).unwrap();
    file.sections()
        .filter(|s| s.kind() == object::SectionKind::Text && s.size() > 0)
        .map(|s| (s.name().unwrap().to_string(), s.data().unwrap().to_vec()))
        .collect()
}

fn slots(bytes: &[u8]) -> Vec<RawInsn> {
    RawInsn::parse_all(bytes).unwrap()
}

/// Listing lines with raw bytes: (text after the bytes, decoded instruction of the bytes).
fn listing_insns(listing: &str) -> Vec<(String, Instruction)> {
    let mut out = Vec::new();
    for line in listing.lines() {
        let mut parts = line.splitn(3, '\t');
        let (Some(addr), Some(bytes), Some(text)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        if !addr.trim_end().ends_with(':') || addr.trim().is_empty() {
            continue;
        }
        let bytes: Vec<u8> = bytes
            .split(' ')
            .map(|b| u8::from_str_radix(b, 16).unwrap())
            .collect();
        let insn = decode_all(&slots(&bytes)).unwrap()[0].1;
        out.push((text.to_string(), insn));
    }
    out
}

/// Removes llvm's `<symbol+0x20>` annotation.
fn without_annotation(text: &str) -> &str {
    match text.rfind(" <") {
        Some(i) if text.ends_with('>') => &text[..i],
        _ => text,
    }
}

/// Whether our text deliberately differs from llvm-19's default text for this instruction (see
/// `disasm`'s module documentation), and which listing to compare with instead.
enum Expect {
    Default,
    Alu32,
    Skip,
}

fn expectation(insn: &Instruction) -> Expect {
    match insn {
        Instruction::Call(CallTarget::Local(_) | CallTarget::Kfunc(_)) => Expect::Skip,
        Instruction::LoadImm64 {
            imm: Imm64::Map(_) | Imm64::MapValue { .. },
            ..
        } => Expect::Skip,
        // llvm drops the second immediate of `ld_pseudo`; we print it when it is not zero.
        Instruction::LoadImm64 {
            imm: Imm64::Pseudo { next_imm, .. },
            ..
        } if *next_imm != 0 => Expect::Skip,
        Instruction::Atomic {
            size: Size::W,
            op,
            fetch,
            ..
        } if *fetch || *op != AtomicOp::Add => Expect::Alu32,
        _ => Expect::Default,
    }
}

fn check_text_equals_llvm19(stem: &str) -> usize {
    let default = listing_insns(&read(&format!("{stem}.19.txt")));
    let alu32 = listing_insns(&read(&format!("{stem}.19.alu32.txt")));
    assert_eq!(default.len(), alu32.len());
    let mut compared = 0;
    for ((text, insn), (text32, insn32)) in default.iter().zip(&alu32) {
        assert_eq!(insn, insn32);
        let ours = format_instruction(insn, &NoNames);
        let theirs = match expectation(insn) {
            Expect::Default => text,
            Expect::Alu32 => text32,
            Expect::Skip => continue,
        };
        assert_eq!(ours, without_annotation(theirs), "{insn:?}");
        compared += 1;
    }
    compared
}

#[test]
fn format_instruction_prints_what_llvm_objdump_19_prints() {
    assert!(check_text_equals_llvm19("forms") > 150);
    assert!(check_text_equals_llvm19("forms_clang14") > 150);
    assert!(check_text_equals_llvm19("allforms") > 200);
}

/// For a program of one function, our whole listing equals llvm's, jump annotations included.
#[test]
fn disassemble_annotates_jumps_like_llvm_objdump_19() {
    let (section, bytes) = code_sections("allforms.o").remove(0);
    let insns = slots(&bytes);
    let program = Program {
        name: "allforms".into(),
        section: section.clone(),
        functions: vec![Function {
            name: "allforms".into(),
            start: 0,
            len: insns.len(),
        }],
        insns,
        func_info: Vec::new(),
        line_info: Vec::new(),
    };
    let ours = disassemble(&program, &[]);
    let llvm = read("allforms.19.txt");
    let llvm32 = read("allforms.19.alu32.txt");
    let mut ours_lines = ours.lines().filter(|l| l.contains(":\t"));
    let llvm_lines = llvm
        .lines()
        .filter(|l| l.contains(":\t") && !l.contains("file format"));
    let llvm32_lines = llvm32
        .lines()
        .filter(|l| l.contains(":\t") && !l.contains("file format"));
    let mut n = 0;
    for (theirs, theirs32) in llvm_lines.zip(llvm32_lines) {
        let line = ours_lines.next().unwrap();
        let bytes = theirs.split('\t').nth(1).unwrap();
        let raw: Vec<u8> = bytes
            .split(' ')
            .map(|b| u8::from_str_radix(b, 16).unwrap())
            .collect();
        let insn = decode_all(&slots(&raw)).unwrap()[0].1;
        match expectation(&insn) {
            Expect::Default => assert_eq!(line, theirs),
            Expect::Alu32 => assert_eq!(line, theirs32),
            Expect::Skip => {}
        }
        n += 1;
    }
    assert!(ours_lines.next().is_none());
    assert!(n > 200);
    assert!(ours.starts_with("Disassembly of section xdp:\n\n0000000000000000 <allforms>:\n"));
}

/// Removes relocation lines, so that loads keep llvm's constant like the object's bytes do.
fn without_relocations(listing: &str) -> String {
    listing
        .lines()
        .filter(|l| !l.contains("R_BPF_"))
        .map(|l| format!("{l}\n"))
        .collect()
}

#[test]
fn real_listings_assemble_to_the_object_bytes() {
    for (object, listings) in [
        (
            "forms.o",
            &[
                "forms.19.txt",
                "forms.19.alu32.txt",
                "forms.14.txt",
                "forms.19.S.txt",
            ][..],
        ),
        (
            "forms_clang14.o",
            &["forms_clang14.19.txt", "forms_clang14.14.txt"][..],
        ),
        (
            "allforms.o",
            &[
                "allforms.19.txt",
                "allforms.19.alu32.txt",
                "allforms.14.txt",
            ][..],
        ),
    ] {
        let expected: Vec<RawInsn> = code_sections(object)
            .iter()
            .flat_map(|(_, b)| slots(b))
            .collect();
        for listing in listings {
            let text = without_relocations(&read(listing));
            let insns = assemble(&text, &NoNames).unwrap_or_else(|e| panic!("{listing}: {e}"));
            assert_eq!(encode_all(&insns), expected, "{listing}");
        }
    }
}

/// Without raw bytes, an `--mattr=+alu32` listing of LLVM 19 gives back every instruction but
/// BPF-to-BPF calls, which llvm prints like helper calls.
#[test]
fn alu32_listing_without_bytes_assembles() {
    let expected: Vec<RawInsn> = code_sections("forms.o")
        .iter()
        .flat_map(|(_, b)| slots(b))
        .collect();
    let expected: Vec<Instruction> = decode_all(&expected)
        .unwrap()
        .into_iter()
        .map(|x| x.1)
        .collect();
    let bare: String = without_relocations(&read("forms.19.alu32.txt"))
        .lines()
        .map(|l| match l.splitn(3, '\t').collect::<Vec<_>>().as_slice() {
            [addr, _, text] if addr.ends_with(':') => format!("{addr}\t{text}\n"),
            _ => format!("{l}\n"),
        })
        .collect();
    let insns = assemble(&bare, &NoNames).unwrap();
    assert_eq!(insns.len(), expected.len());
    let mut calls = 0;
    for (ours, theirs) in insns.iter().zip(&expected) {
        match (ours, theirs) {
            (Instruction::Call(CallTarget::Helper(a)), Instruction::Call(CallTarget::Local(b)))
                if *a as i32 == *b =>
            {
                calls += 1
            }
            _ => assert_eq!(ours, theirs),
        }
    }
    assert_eq!(calls, 2);
}

#[test]
fn relocation_lines_resolve_map_names() {
    let names: &[&str] = &["counters", "gv", "ro"];
    let insns = assemble(&read("forms.19.txt"), names).unwrap();
    let maps: Vec<Imm64> = insns
        .iter()
        .filter_map(|i| match i {
            Instruction::LoadImm64 { imm, .. } => Some(*imm),
            _ => None,
        })
        .collect();
    assert_eq!(
        maps,
        [
            Imm64::Map(0),
            Imm64::Const(0x1234_5678_9abc_def0),
            Imm64::Map(1),
            Imm64::Map(2),
            Imm64::Map(1)
        ]
    );
    let err = assemble(&read("forms.19.txt"), &NoNames).unwrap_err();
    assert_eq!(err.to_string(), "line 49: unknown map `counters`");
}

/// Map references by name, compared across objects whose map order may differ.
fn named(object: &Object, program: &Program) -> Vec<String> {
    program
        .decode()
        .unwrap()
        .into_iter()
        .map(|(_, i)| format_instruction(&i, &object.maps))
        .collect()
}

#[test]
fn objdump_listing_links_like_the_object_reader() {
    let object = linerate_bpf::read_object_file(&fixture("forms.o")).unwrap();
    let from_text = read_objdump_text(&read("forms.19.drt.txt"), "forms").unwrap();
    assert_eq!(object.programs.len(), from_text.programs.len());
    for (a, b) in object.programs.iter().zip(&from_text.programs) {
        assert_eq!(a.name, b.name);
        assert_eq!(a.section, b.section);
        assert_eq!(a.functions, b.functions);
        assert_eq!(named(&object, a), named(&from_text, b));
    }
    let map_names: HashMap<_, _> = from_text
        .maps
        .iter()
        .map(|m| (m.name.as_str(), m.origin.clone()))
        .collect();
    assert_eq!(map_names.len(), 3, "{map_names:?}");

    // Without the symbol table, variables are maps of their own; without `-r`, loads stay 0.
    let dr = read_objdump_text(&read("forms.19.txt"), "forms").unwrap();
    let names: Vec<&str> = dr.maps.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["counters", "gv", "ro"]);
    assert_eq!(dr.programs[0].functions, object.programs[0].functions);
    // Without `-r` a call to a global function cannot be followed.
    let err = read_objdump_text(&read("forms.19.S.txt"), "forms").unwrap_err();
    assert!(err.to_string().contains("llvm-objdump -dr"), "{err}");
    let llvm14 = read_objdump_text(&read("forms.14.txt"), "forms").unwrap();
    assert_eq!(llvm14.programs, dr.programs);
}

#[test]
fn our_listing_of_a_linked_program_reassembles() {
    let object = linerate_bpf::read_object_file(&fixture("forms.o")).unwrap();
    for p in &object.programs {
        let text = disassemble(p, &object.maps);
        assert_eq!(
            assemble_program(&text, &object.maps).unwrap(),
            without_btf(p)
        );
    }
}

/// The program as a listing carries it: without the BTF records of its object.
fn without_btf(p: &Program) -> Program {
    Program {
        func_info: Vec::new(),
        line_info: Vec::new(),
        ..p.clone()
    }
}

/// Every example object: disassemble, assemble, get the identical linked slots back.
#[test]
fn every_example_round_trips() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut entries: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    entries.retain(|p| p.extension().is_some_and(|e| e == "o"));
    entries.sort();
    let mut programs = 0;
    for path in &entries {
        let object = linerate_bpf::read_object_file(path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for p in &object.programs {
            let text = disassemble(p, &object.maps);
            let back = assemble_program(&text, &object.maps)
                .unwrap_or_else(|e| panic!("{} {}: {e}", path.display(), p.name));
            assert_eq!(back.insns, p.insns, "{} {}", path.display(), p.name);
            assert_eq!(back, without_btf(p));
            programs += 1;
        }
    }
    eprintln!("{} example objects, {programs} programs", entries.len());
    assert!(entries.is_empty() || programs > 0);
}

/// Every example object: the program read from its `llvm-objdump-19 -drt` listing is the one the
/// ELF reader links (same functions, same instructions with maps compared by name); the same for
/// `llvm-objdump-14 -drt`. Needs the tools; says so and skips without them.
#[test]
fn every_example_listing_links_like_the_object_reader() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut entries: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    entries.retain(|p| p.extension().is_some_and(|e| e == "o"));
    entries.sort();
    let mut checked = 0;
    for (tool, path) in ["llvm-objdump-19", "llvm-objdump-14"]
        .iter()
        .flat_map(|t| entries.iter().map(move |p| (t, p)))
    {
        let output = match std::process::Command::new(tool)
            .arg("-drt")
            .arg(path)
            .output()
        {
            Ok(o) if o.status.success() => o,
            _ => {
                eprintln!("SKIPPED: {tool} is not available");
                continue;
            }
        };
        let text = String::from_utf8(output.stdout).unwrap();
        let stem = path.file_stem().unwrap().to_str().unwrap();
        let object = linerate_bpf::read_object_file(path).unwrap();
        // Listings carry no BTF, which kfunc and kconfig externs need: the text reader does not
        // take them (the ELF reader does).
        let kconfig = object.maps.iter().any(
            |m| matches!(&m.origin, MapOrigin::GlobalData { section, .. } if section == ".kconfig"),
        );
        if !object.kfuncs.is_empty() || kconfig {
            eprintln!("SKIPPED: {stem} uses externs, which listings cannot describe");
            continue;
        }
        // The listing shows the compiler's CO-RE values, the reader the running kernel's: such
        // objects are compared instruction by instruction away from the relocated ones (of the
        // program's own section, whose first function it is in every example).
        let relocated: Vec<(String, usize)> = object
            .btf
            .iter()
            .flat_map(|b| b.ext.core_relos.iter().map(|r| (r.section.clone(), r.insn)))
            .collect();
        let from_text =
            read_objdump_text(&text, stem).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(object.programs.len(), from_text.programs.len(), "{stem}");
        for (a, b) in object.programs.iter().zip(&from_text.programs) {
            assert_eq!(a.name, b.name, "{stem}");
            assert_eq!(a.functions, b.functions, "{stem} {}", a.name);
            let (ours, theirs) = (named(&object, a), named(&from_text, b));
            assert_eq!(ours.len(), theirs.len(), "{stem} {}", a.name);
            let slots = a.decode().unwrap();
            for (i, (x, y)) in ours.iter().zip(&theirs).enumerate() {
                if !relocated.contains(&(a.section.clone(), slots[i].0)) {
                    assert_eq!(x, y, "{stem} {} insn {i}", a.name);
                }
            }
            checked += 1;
        }
    }
    eprintln!(
        "{} example objects, {checked} programs checked",
        entries.len()
    );
}
