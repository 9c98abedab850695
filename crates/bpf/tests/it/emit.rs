//! Objects written from scratch by `linerate_bpf::emit` read back through linerate's own reader
//! as the spec said: the same instructions (map references linked to the same maps), maps,
//! license, `func_info` and `line_info`; bad specs are refused by name, and no spec panics.

use std::path::Path;

use linerate_bpf::btf::Kind;
use linerate_bpf::emit::{write_object, EmitError, LineSpec, MapSpec, ObjectSpec, ProgramSpec};
use linerate_bpf::insn::build::{call_helper, exit, jmp, ld64, ld_map, mov64, mov64_reg};
use linerate_bpf::insn::{encode_all, Cond, Imm64, Instruction, RawInsn};
use linerate_bpf::program::MapOrigin;
use linerate_bpf::{read_object, MapType, Object};
use linerate_testkit::XorShift;

/// `BPF_F_NO_PREALLOC`, which LPM tries demand.
const NO_PREALLOC: u32 = 1;

/// A lookup in map `map` of a zero key on the stack; returns `pass` when found, `drop` otherwise.
fn lookup_program(map: u32) -> Vec<Instruction> {
    vec![
        mov64(1, 0),
        linerate_bpf::insn::build::stx(linerate_bpf::insn::Size::Dw, 10, -8, 1),
        ld_map(1, map),
        mov64_reg(2, 10),
        linerate_bpf::insn::build::add64(2, -8),
        call_helper(1),
        mov64(1, 1),
        jmp(Cond::Eq, 0, 0, 1),
        mov64(1, 2),
        mov64_reg(0, 1),
        exit(),
    ]
}

fn maps() -> Vec<MapSpec> {
    vec![
        MapSpec::new("hosts", MapType::HASH, 4, 8, 1024),
        MapSpec::new("counters", MapType::ARRAY, 4, 8, 4),
        MapSpec {
            flags: NO_PREALLOC,
            ..MapSpec::new("routes", MapType::LPM_TRIE, 8, 4, 256)
        },
        MapSpec::new("flows", MapType::PERCPU_HASH, 13, 16, 64),
        MapSpec::new("jumps", MapType::PROG_ARRAY, 4, 4, 8),
        MapSpec::new("events", MapType::RINGBUF, 0, 0, 4096),
        MapSpec {
            spin_lock: Some(8),
            ..MapSpec::new("locked", MapType::HASH, 4, 16, 8)
        },
    ]
}

fn spec() -> ObjectSpec {
    let mut second = ProgramSpec::xdp("second", lookup_program(2));
    second.insns.insert(0, ld64(3, 0x1122_3344_5566_7788));
    second.lines = vec![
        LineSpec {
            insn: 0,
            file: "prog.p4".into(),
            line: 10,
            column: 3,
            text: "apply {".into(),
        },
        LineSpec {
            insn: 3,
            file: "prog.p4".into(),
            line: 12,
            column: 5,
            text: "routes.apply();".into(),
        },
    ];
    let mut third = ProgramSpec::xdp("third", lookup_program(3));
    third.section = "xdp.frags".into();
    ObjectSpec::new(
        vec![ProgramSpec::xdp("first", lookup_program(0)), second, third],
        maps(),
    )
}

fn read_back(spec: &ObjectSpec) -> Object {
    let bytes = write_object(spec).unwrap();
    read_object(&bytes, "emitted").unwrap()
}

#[test]
fn programs_read_back_with_their_instructions_and_sections() {
    let spec = spec();
    let object = read_back(&spec);
    assert_eq!(object.programs.len(), 3);
    for (written, read) in spec.programs.iter().zip(&object.programs) {
        assert_eq!(read.name, written.name);
        assert_eq!(read.section, written.section);
        assert_eq!(read.insns, encode_all(&written.insns), "{}", written.name);
        assert_eq!(read.functions.len(), 1);
    }
    // `first` and `second` share section `xdp`, `second` after `first`.
    let decoded = object.programs[1].decode().unwrap();
    assert_eq!(
        decoded[0].1,
        Instruction::LoadImm64 {
            dst: 3,
            imm: Imm64::Const(0x1122_3344_5566_7788)
        }
    );
    assert_eq!(
        decoded[3].1,
        Instruction::LoadImm64 {
            dst: 1,
            imm: Imm64::Map(2)
        }
    );
    assert_eq!(object.license.as_deref(), Some("GPL"));
}

#[test]
fn maps_read_back_with_type_sizes_entries_and_flags() {
    let object = read_back(&spec());
    let read: Vec<_> = object
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
                m.spin_lock,
            )
        })
        .collect();
    let specs = maps();
    let written: Vec<_> = specs
        .iter()
        .map(|m| {
            (
                m.name.as_str(),
                m.map_type,
                m.key_size,
                m.value_size,
                m.max_entries,
                m.flags,
                MapOrigin::Btf,
                m.spin_lock,
            )
        })
        .collect();
    assert_eq!(read, written);
}

#[test]
fn btf_types_keys_and_values_and_gives_each_program_a_func() {
    let object = read_back(&spec());
    let info = object.btf.as_ref().expect("the object has BTF");
    assert_eq!(info.ext_error, None);
    assert!(info.kernel_bytes.is_ok(), "{:?}", info.kernel_bytes);
    let btf = &info.btf;
    for map in &object.maps {
        match info.map_type_ids(map) {
            Some((key, value)) => {
                assert_eq!(btf.resolve_size(key).unwrap(), u64::from(map.key_size));
                assert_eq!(btf.resolve_size(value).unwrap(), u64::from(map.value_size));
            }
            // Program arrays and ring buffers get no BTF key and value.
            None => assert!(
                matches!(map.map_type, MapType::PROG_ARRAY | MapType::RINGBUF),
                "{}",
                map.name
            ),
        }
    }
    let routes = &object.maps[2];
    let (key, _) = info.map_type_ids(routes).unwrap();
    assert!(matches!(btf.ty(key).unwrap().kind, Kind::Struct { .. }));
    for program in &object.programs {
        assert_eq!(program.func_info.len(), 1, "{}", program.name);
        assert_eq!(program.func_info[0].slot, 0);
        let func = btf.ty(program.func_info[0].type_id).unwrap();
        assert!(matches!(func.kind, Kind::Func { linkage: 1, .. }));
        assert_eq!(btf.name(func).unwrap(), program.name);
    }
}

#[test]
fn source_lines_read_back_on_their_slots() {
    let object = read_back(&spec());
    let second = &object.programs[1];
    let lines: Vec<_> = second
        .line_info
        .iter()
        .map(|l| {
            (
                l.slot,
                l.source.file.as_str(),
                l.source.line,
                l.source.column,
                l.source.text.as_str(),
            )
        })
        .collect();
    // Instruction 3 is at slot 4: instruction 0 is a two-slot ld_imm64.
    assert_eq!(
        lines,
        [
            (0, "prog.p4", 10, 3, "apply {"),
            (4, "prog.p4", 12, 5, "routes.apply();")
        ]
    );
    assert!(object.programs[0].line_info.is_empty());
}

#[test]
fn map_references_are_relocations_with_zero_immediates() {
    let bytes = write_object(&spec()).unwrap();
    let file = linerate_bpf::elf_file::ElfFile::parse(&bytes).unwrap();
    let xdp = file.section_index("xdp").unwrap();
    let code = RawInsn::parse_all(&file.sections[xdp].data).unwrap();
    let rel = file.rel_section_of(xdp).unwrap();
    assert_eq!(file.sections[rel].name, ".relxdp");
    let symbols = file.symbols();
    let rels = file.rels(rel);
    let targets: Vec<_> = rels
        .iter()
        .map(|r| {
            let slot = (r.offset / 8) as usize;
            let symbol = &symbols[r.symbol as usize];
            (slot, r.kind, file.symbol_name(symbol).unwrap())
        })
        .collect();
    // `first` (11 instructions, 12 slots) then `second` (its map load at its slot 4).
    assert_eq!(targets, [(2, 1, "hosts"), (16, 1, "routes")]);
    for (slot, _, _) in targets {
        assert_eq!(
            (code[slot].src, code[slot].imm, code[slot + 1].imm),
            (0, 0, 0)
        );
    }
}

#[test]
fn an_object_without_maps_or_lines_reads_back() {
    let spec = ObjectSpec {
        license: "Dual BSD/GPL".into(),
        ..ObjectSpec::new(
            vec![ProgramSpec::xdp("pass", vec![mov64(0, 2), exit()])],
            Vec::new(),
        )
    };
    let object = read_back(&spec);
    assert!(object.maps.is_empty());
    assert_eq!(object.license.as_deref(), Some("Dual BSD/GPL"));
    assert_eq!(object.programs[0].insns, encode_all(&[mov64(0, 2), exit()]));
}

fn error_of(spec: &ObjectSpec) -> String {
    match write_object(spec) {
        Ok(_) => panic!("written: {spec:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn bad_specs_are_refused_naming_the_program_or_map() {
    let with_program = |p: ProgramSpec| ObjectSpec::new(vec![p], maps());
    let pass = || vec![mov64(0, 2), exit()];
    let cases: Vec<(ObjectSpec, &str)> = vec![
        (
            with_program(ProgramSpec::xdp("p", lookup_program(9))),
            "program `p`: instruction 2: refers to map 9, but the object has 7 maps",
        ),
        (
            with_program(ProgramSpec::xdp("p", Vec::new())),
            "program `p`: has no instructions",
        ),
        (
            with_program(ProgramSpec::xdp("p", vec![jmp(Cond::Eq, 0, 0, 5), exit()])),
            "program `p`: instruction 0 jumps to slot 6",
        ),
        (
            with_program(ProgramSpec::xdp(
                "p",
                vec![jmp(Cond::Eq, 0, 0, 1), ld64(1, 7), exit()],
            )),
            "program `p`: instruction 0 jumps to slot 2",
        ),
        (
            with_program(ProgramSpec::xdp(
                "p",
                vec![linerate_bpf::insn::build::call_local(1), exit(), exit()],
            )),
            "program `p`: instruction 0: bpf-to-bpf calls cannot be written",
        ),
        (
            with_program(ProgramSpec::xdp(
                "p",
                vec![
                    Instruction::LoadImm64 {
                        dst: 1,
                        imm: Imm64::MapValue { map: 0, offset: 0 },
                    },
                    exit(),
                ],
            )),
            "program `p`: instruction 0: global data",
        ),
        (
            with_program(ProgramSpec::xdp("p", vec![mov64(12, 0), exit()])),
            "program `p`: instruction 0: ",
        ),
        (
            with_program(ProgramSpec::xdp("bad-name", pass())),
            "program `bad-name`: the name is not a C identifier",
        ),
        (
            with_program(ProgramSpec::xdp("hosts", pass())),
            "map `hosts`: the name is used twice",
        ),
        (
            with_program(ProgramSpec {
                section: "tc".into(),
                ..ProgramSpec::xdp("p", pass())
            }),
            "program `p`: section `tc` does not start with `xdp`",
        ),
        (
            with_program(ProgramSpec {
                lines: vec![LineSpec {
                    insn: 1,
                    file: "f".into(),
                    line: 1,
                    column: 0,
                    text: String::new(),
                }],
                ..ProgramSpec::xdp("p", pass())
            }),
            "program `p`: line record at instruction 1: the first line record must be at \
             instruction 0",
        ),
        (
            with_program(ProgramSpec {
                lines: vec![LineSpec {
                    insn: 0,
                    file: "f".into(),
                    line: 1 << 22,
                    column: 0,
                    text: String::new(),
                }],
                ..ProgramSpec::xdp("p", pass())
            }),
            "program `p`: line record at instruction 0: line 4194304 is beyond 4194303",
        ),
        (
            with_program(ProgramSpec {
                lines: vec![LineSpec {
                    insn: 0,
                    file: "f\0".into(),
                    line: 1,
                    column: 0,
                    text: String::new(),
                }],
                ..ProgramSpec::xdp("p", pass())
            }),
            "program `p`: line record at instruction 0: the file name or source text holds a NUL",
        ),
        (
            ObjectSpec::new(
                vec![ProgramSpec::xdp("p", pass())],
                vec![MapSpec::new("lpm", MapType::LPM_TRIE, 4, 4, 1)],
            ),
            "map `lpm`: an LPM trie key is a 4-byte prefix length and at least one data byte",
        ),
        (
            ObjectSpec::new(
                vec![ProgramSpec::xdp("p", pass())],
                vec![MapSpec {
                    spin_lock: Some(6),
                    ..MapSpec::new("locked", MapType::HASH, 4, 16, 1)
                }],
            ),
            "map `locked`: a spin lock at byte 6 is not 4-byte aligned inside the 16-byte value",
        ),
        (
            ObjectSpec::new(
                vec![ProgramSpec::xdp("p", pass())],
                vec![MapSpec {
                    spin_lock: Some(0),
                    ..MapSpec::new("cpus", MapType::CPUMAP, 4, 4, 1)
                }],
            ),
            "map `cpus`: a cpumap map has no typed value to hold a spin lock",
        ),
        (
            ObjectSpec::new(
                vec![ProgramSpec::xdp("p", pass())],
                vec![MapSpec::new("", MapType::HASH, 4, 4, 1)],
            ),
            "map ``: the name is not a C identifier",
        ),
        (
            ObjectSpec {
                license: "G\0PL".into(),
                ..ObjectSpec::new(vec![ProgramSpec::xdp("p", pass())], Vec::new())
            },
            "the license holds a NUL byte",
        ),
    ];
    for (spec, expected) in cases {
        let message = error_of(&spec);
        assert!(message.starts_with(expected), "{message} <> {expected}");
    }
    let refused = write_object(&with_program(ProgramSpec::xdp("p", lookup_program(9))));
    assert!(matches!(refused, Err(EmitError::Program { .. })));
}

/// A random instruction: a random slot pair decoded, or a map load of a random index.
fn random_instruction(rng: &mut XorShift) -> Instruction {
    if rng.below(4) == 0 {
        return ld_map(rng.below(4) as u8, rng.below(8) as u32);
    }
    let mut bytes = [0u8; 16];
    for b in &mut bytes {
        *b = rng.next_u64() as u8;
    }
    let slots = RawInsn::parse_all(&bytes).unwrap_or_default();
    Instruction::decode(&slots, 0).unwrap_or(Instruction::Exit)
}

#[test]
fn random_specs_are_written_or_refused_never_panicking() {
    let mut rng = XorShift::new(0xe1f);
    let (mut written, mut refused) = (0, 0);
    for round in 0..600 {
        let maps: Vec<MapSpec> = (0..rng.below(4))
            .map(|i| MapSpec {
                flags: rng.below(3) as u32,
                spin_lock: (rng.below(4) == 0).then(|| rng.below(24) as u32),
                ..MapSpec::new(
                    &format!("m{i}"),
                    MapType(rng.below(34) as u32),
                    rng.below(70) as u32,
                    rng.below(70) as u32,
                    rng.next_u64() as u32,
                )
            })
            .collect();
        let programs = (0..1 + rng.below(3))
            .map(|i| {
                let insns = (0..rng.below(12))
                    .map(|_| random_instruction(&mut rng))
                    .collect();
                ProgramSpec {
                    section: ["xdp", "xdp.frags", "xdp/x"][rng.below(3)].into(),
                    ..ProgramSpec::xdp(&format!("p{round}_{i}"), insns)
                }
            })
            .collect();
        let spec = ObjectSpec::new(programs, maps);
        match write_object(&spec) {
            Ok(bytes) => {
                written += 1;
                let object =
                    read_object(&bytes, "random").unwrap_or_else(|e| panic!("{e}: {spec:?}"));
                assert_eq!(object.programs.len(), spec.programs.len());
                for p in &spec.programs {
                    let read = object.program(&p.name).unwrap();
                    assert_eq!(
                        (&read.section, &read.insns),
                        (&p.section, &encode_all(&p.insns))
                    );
                }
                assert_eq!(object.maps.len(), spec.maps.len());
            }
            Err(_) => refused += 1,
        }
    }
    assert!(
        written > 50 && refused > 50,
        "{written} written, {refused} refused"
    );
}

#[test]
fn example_objects_written_anew_read_back_alike() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut rewritten = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "o"))
        .collect();
    entries.sort();
    for path in entries {
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        let Ok(original) = linerate_bpf::read_object_file(&path) else {
            continue;
        };
        let Ok(spec) = ObjectSpec::from_object(&original) else {
            continue;
        };
        if spec.programs.iter().any(|p| !p.section.starts_with("xdp")) {
            continue;
        }
        let again = read_back(&spec);
        assert_eq!(again.maps.len(), original.maps.len(), "{name}");
        for (a, b) in again.maps.iter().zip(&original.maps) {
            assert_eq!(
                (a.map_type, a.key_size, a.value_size, a.max_entries, a.flags),
                (b.map_type, b.key_size, b.value_size, b.max_entries, b.flags),
                "{name}: map {}",
                b.name
            );
        }
        for (a, b) in again.programs.iter().zip(&original.programs) {
            assert_eq!(a.insns, b.insns, "{name}: {}", b.name);
            let lines = |p: &linerate_bpf::Program| {
                p.line_info
                    .iter()
                    .map(|l| (l.slot, l.source.line, l.source.text.clone()))
                    .collect::<Vec<_>>()
            };
            assert_eq!(lines(a), lines(b), "{name}: {}", b.name);
        }
        rewritten.push(name);
    }
    eprintln!("written anew: {}", rewritten.join(" "));
    assert!(rewritten.len() >= 5, "{rewritten:?}");
}

#[test]
fn objects_the_writer_cannot_express_are_refused_by_name() {
    let mut data = linerate_bpf::MapDef::new("config", MapType::ARRAY, 4, 16, 1);
    data.origin = MapOrigin::GlobalData {
        section: ".rodata".into(),
        read_only: true,
    };
    let object = Object::single("p", &[mov64(0, 2), exit()], vec![data]);
    assert_eq!(
        ObjectSpec::from_object(&object).unwrap_err().to_string(),
        "map `config`: global data cannot be written"
    );
    let mut two_functions = Object::single("p", &[mov64(0, 2), exit()], Vec::new());
    let mut sub = two_functions.programs[0].functions[0].clone();
    sub.name = "sub".into();
    two_functions.programs[0].functions.push(sub);
    assert_eq!(
        ObjectSpec::from_object(&two_functions)
            .unwrap_err()
            .to_string(),
        "program `p`: has sub-programs, which the writer does not lay out"
    );
    let fine = Object::single("p", &[mov64(0, 2), exit()], Vec::new());
    let spec = ObjectSpec::from_object(&fine).unwrap();
    assert_eq!(spec.programs[0].insns, [mov64(0, 2), exit()]);
}
