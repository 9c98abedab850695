//! `.BTF.ext` read from real clang objects: `func_info` and `line_info` remapped to the linked
//! slots of each program agree with the C source the object was built from.

use std::path::{Path, PathBuf};

use linerate_bpf::btf::Kind;
use linerate_bpf::insn::CallTarget;
use linerate_bpf::read_object_file;
use linerate_bpf::Instruction;

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
}

/// The 1-based line number of the first source line outside comments containing `needle`.
fn line_of(source: &str, needle: &str) -> u32 {
    let index = source
        .lines()
        .position(|l| l.contains(needle) && !l.starts_with(" *") && !l.starts_with("/*"))
        .unwrap_or_else(|| panic!("`{needle}` is not in the source"));
    index as u32 + 1
}

#[test]
fn global_functions_carry_func_info_and_source_lines() {
    let object = read_object_file(&example("xdp_global_funcs.o")).unwrap();
    let source = std::fs::read_to_string(example("xdp_global_funcs.c")).unwrap();
    let lines: Vec<&str> = source.lines().collect();
    let btf = object.btf.as_ref().expect("the object has BTF");
    assert_eq!(btf.ext_error, None);
    let program = object.program("xdp_global_funcs").unwrap();
    let names: Vec<&str> = program.functions.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        ["xdp_global_funcs", "parse_l3", "count", "classify"],
        "linking appends callees in call order"
    );

    // One func_info per function, at its linked start, naming the function's own FUNC type.
    assert_eq!(program.func_info.len(), program.functions.len());
    for (info, f) in program.func_info.iter().zip(&program.functions) {
        assert_eq!(info.slot, f.start);
        let ty = btf.btf.ty(info.type_id).unwrap();
        assert!(matches!(ty.kind, Kind::Func { .. }), "{}", ty.kind_name());
        assert_eq!(btf.btf.name(ty).unwrap(), f.name);
    }

    // Every line record's text is the source line it names, and every slot has a line.
    assert!(!program.line_info.is_empty());
    for l in &program.line_info {
        assert!(
            l.source.file.ends_with("xdp_global_funcs.c"),
            "{}",
            l.source.file
        );
        let at = lines[l.source.line as usize - 1];
        assert_eq!(at.trim(), l.source.text.trim(), "slot {}", l.slot);
        assert!(l.source.column as usize <= at.len() + 1, "slot {}", l.slot);
    }
    assert!(program.line_info.windows(2).all(|w| w[0].slot < w[1].slot));

    // Each function's first slot is on its signature.
    for f in &program.functions {
        let line = program.line_at(f.start).unwrap();
        let signature = format!(" {}(", f.name);
        assert_eq!(line.line, line_of(&source, &signature), "{}", f.name);
        assert!(line.text.contains(&signature), "{}", line.text);
    }
    // The calls sit on the source lines that make them, wherever linking put the callee.
    let decoded = program.decode().unwrap();
    for (callee, needle) in [
        ("parse_l3", "int proto = parse_l3(ctx);"),
        ("classify", "class = classify(proto, len);"),
    ] {
        let start = program
            .functions
            .iter()
            .find(|f| f.name == callee)
            .unwrap()
            .start;
        let call = decoded
            .iter()
            .find(|(slot, insn)| {
                program.function_at(*slot).unwrap().name == "xdp_global_funcs"
                    && matches!(insn, Instruction::Call(CallTarget::Local(_)))
                    && insn.jump_target(*slot) == Some(start as i64)
            })
            .unwrap_or_else(|| panic!("no call of {callee}"))
            .0;
        assert_eq!(
            program.line_at(call).unwrap().line,
            line_of(&source, needle)
        );
    }
}

#[test]
fn a_broken_btf_ext_leaves_the_object_readable_without_records() {
    let mut bytes = std::fs::read(example("xdp_global_funcs.o")).unwrap();
    // .BTF's header is 24 bytes long, .BTF.ext's (with CO-RE relocations) 32.
    let magic = [0x9f, 0xeb, 0x01, 0x00, 0x20, 0x00, 0x00, 0x00];
    let at = find(&bytes, &magic).expect("a .BTF.ext header with a 32-byte header length");
    bytes[at] = 0;
    let object = linerate_bpf::read_object(&bytes, "broken").unwrap();
    let btf = object.btf.unwrap();
    assert!(btf.ext_error.unwrap().contains("magic"));
    assert!(object
        .programs
        .iter()
        .all(|p| p.func_info.is_empty() && p.line_info.is_empty()));
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The `.BTF` section of an example object, as the ELF holds it.
fn btf_section(name: &str) -> Vec<u8> {
    use object::{Object as _, ObjectSection as _};
    let bytes = std::fs::read(example(name)).unwrap();
    let file = object::File::parse(&*bytes).unwrap();
    let section = file.section_by_name(".BTF").unwrap();
    section.data().unwrap().to_vec()
}

#[test]
fn every_example_btf_encodes_back_to_its_bytes() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut checked = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "o") {
            continue;
        }
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        let object = read_object_file(&path).unwrap();
        let Some(btf) = object.btf else {
            continue;
        };
        assert_eq!(btf.btf.to_bytes(), btf_section(&name), "{name}");
        checked += 1;
    }
    assert!(checked > 10);
}

#[test]
fn fixed_btf_sizes_data_sections_and_places_variables() {
    use linerate_bpf::btf::{Btf, Kind};
    let object = read_object_file(&example("xdp_rodata_config.o")).unwrap();
    let btf = object.btf.unwrap();
    let fixed = Btf::parse(btf.kernel_bytes.as_ref().unwrap()).unwrap();
    let mut datasecs = 0;
    for (id, ty) in fixed.types() {
        let Kind::Datasec { size, vars } = &ty.kind else {
            continue;
        };
        datasecs += 1;
        let name = fixed.name(ty).unwrap();
        assert_ne!(*size, 0, "{name}");
        // Sorted, inside the section, not overlapping.
        let mut end = 0;
        for v in vars {
            assert!(v.offset >= end && v.offset + v.size <= *size, "{name}");
            end = v.offset + v.size;
        }
        // The type ids did not move.
        assert_eq!(btf.btf.ty(id).unwrap().name_off, ty.name_off);
    }
    assert!(datasecs >= 2, "{datasecs}");
    let from_maps = object
        .maps
        .iter()
        .find(|m| {
            matches!(
                m.origin,
                linerate_bpf::program::MapOrigin::GlobalData { .. }
            )
        })
        .unwrap();
    let (key, value) = btf.map_type_ids(from_maps).unwrap();
    assert_eq!(key, 0);
    assert!(matches!(
        fixed.ty(value).unwrap().kind,
        Kind::Datasec { .. }
    ));
}
