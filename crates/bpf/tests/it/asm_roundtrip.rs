//! The assembler reads back exactly what the disassembler prints, for every instruction form, and
//! never panics on arbitrary text.

use linerate_bpf::asm::{assemble, assemble_program, parse_instruction, AsmError};
use linerate_bpf::disasm::{disassemble, format_instruction, MapNames, NoNames};
use linerate_bpf::insn::{
    decode_all, encode_all, AluOp, AtomicOp, CallTarget, Cond, Endian, Imm64, Instruction, Operand,
    RawInsn, Size,
};
use linerate_bpf::program::{Function, MapDef, MapOrigin, MapType, Program};
use linerate_testkit::XorShift;

const SIZES: [Size; 4] = [Size::B, Size::H, Size::W, Size::Dw];

/// Every instruction form, with registers, immediates and offsets varied over their extremes.
fn every_form() -> Vec<Instruction> {
    let mut all = vec![Instruction::Exit];
    let imms = [0, 1, -1, -7, 0x7fff_ffff, i32::MIN];
    let offs = [0i16, 1, -1, 0x7fff, i16::MIN];
    for wide in [false, true] {
        for op in AluOp::ALL {
            let mut srcs: Vec<Operand> = (0..=10).map(Operand::Reg).collect();
            srcs.extend(imms.map(Operand::Imm));
            for src in srcs {
                let valid = match op {
                    AluOp::Neg => src == Operand::Imm(0),
                    AluOp::MovSx(bits) => matches!(src, Operand::Reg(_)) && (wide || bits != 32),
                    _ => true,
                };
                if valid {
                    all.push(Instruction::Alu {
                        wide,
                        op,
                        dst: 10 - (all.len() % 11) as u8,
                        src,
                    });
                }
            }
        }
        for cond in Cond::ALL {
            for (i, src) in [Operand::Reg(0), Operand::Reg(10), Operand::Imm(-5)]
                .into_iter()
                .chain(imms.map(Operand::Imm))
                .enumerate()
            {
                all.push(Instruction::Jump {
                    wide,
                    cond,
                    dst: (i % 11) as u8,
                    src,
                    off: offs[i % offs.len()],
                });
            }
        }
    }
    for kind in [Endian::ToLe, Endian::ToBe, Endian::Swap] {
        for bits in [16, 32, 64] {
            all.push(Instruction::Endian { kind, bits, dst: 7 });
        }
    }
    for (i, size) in SIZES.into_iter().enumerate() {
        for off in offs {
            for signed in [false, true] {
                if !(signed && size == Size::Dw) {
                    all.push(Instruction::Load {
                        size,
                        signed,
                        dst: i as u8,
                        src: 10,
                        off,
                    });
                }
            }
            for src in [Operand::Reg(3), Operand::Imm(-1), Operand::Imm(0x1234)] {
                all.push(Instruction::Store {
                    size,
                    dst: 10,
                    off,
                    src,
                });
            }
        }
        for indirect in [false, true] {
            for imm in [0, 0x17, -4] {
                all.push(Instruction::LegacyPacketLoad {
                    size,
                    indirect,
                    src: if indirect { 6 } else { 0 },
                    imm,
                });
            }
        }
    }
    for size in [Size::W, Size::Dw] {
        for op in AtomicOp::ALL {
            for fetch in [false, true] {
                if fetch || !matches!(op, AtomicOp::Xchg | AtomicOp::CmpXchg) {
                    for off in [0, -8, 0x7fff] {
                        all.push(Instruction::Atomic {
                            size,
                            op,
                            fetch,
                            dst: 1,
                            src: 9,
                            off,
                        });
                    }
                }
            }
        }
    }
    for imm in [
        Imm64::Const(0),
        Imm64::Const(u64::MAX),
        Imm64::Const(0x8000_0000_0000_0000),
        Imm64::Const(0x1234_5678_9abc_def0),
        Imm64::Map(0),
        Imm64::Map(1),
        Imm64::Map(7),
        Imm64::MapValue { map: 1, offset: 0 },
        Imm64::MapValue {
            map: 2,
            offset: 0x10,
        },
        Imm64::MapValue {
            map: 9,
            offset: u32::MAX,
        },
        Imm64::Pseudo {
            src: 1,
            imm: 5,
            next_imm: 0,
        },
        Imm64::Pseudo {
            src: 2,
            imm: -5,
            next_imm: 8,
        },
        Imm64::Pseudo {
            src: 3,
            imm: 77,
            next_imm: 0,
        },
        Imm64::Pseudo {
            src: 4,
            imm: 3,
            next_imm: -1,
        },
    ] {
        all.push(Instruction::LoadImm64 { dst: 4, imm });
    }
    for off in [0, 1, -1, i16::MAX as i32, i16::MIN as i32] {
        all.push(Instruction::Ja { off, long: false });
    }
    for off in [0, 70_000, -3, i32::MAX, i32::MIN] {
        all.push(Instruction::Ja { off, long: true });
    }
    for t in [
        CallTarget::Helper(1),
        CallTarget::Helper(212),
        CallTarget::Helper(u32::MAX),
        CallTarget::Local(0),
        CallTarget::Local(4),
        CallTarget::Local(-2),
        CallTarget::Local(i32::MIN),
        CallTarget::Kfunc(1234),
        CallTarget::Kfunc(-1),
    ] {
        all.push(Instruction::Call(t));
    }
    all
}

fn map(name: &str) -> MapDef {
    MapDef {
        origin: MapOrigin::Legacy,
        ..MapDef::new(name, MapType::ARRAY, 4, 8, 1)
    }
}

fn maps() -> Vec<MapDef> {
    vec![
        map("counters"),
        map(".rodata"),
        map(".data.cfg"),
        map("m_3"),
    ]
}

#[test]
fn the_generator_covers_only_decodable_forms() {
    let forms = every_form();
    let slots = encode_all(&forms);
    let decoded: Vec<Instruction> = decode_all(&slots)
        .unwrap()
        .into_iter()
        .map(|x| x.1)
        .collect();
    assert_eq!(decoded, forms);
}

#[test]
fn every_form_round_trips_through_its_text() {
    let maps = maps();
    for insn in every_form() {
        let text = format_instruction(&insn, &maps);
        let back = parse_instruction(&text, &maps).unwrap_or_else(|e| panic!("`{text}`: {e}"));
        assert_eq!(back, insn, "`{text}`");
        let text = format_instruction(&insn, &NoNames);
        let back = parse_instruction(&text, &NoNames).unwrap_or_else(|e| panic!("`{text}`: {e}"));
        assert_eq!(back, insn, "`{text}`");
    }
}

fn program(insns: &[Instruction], functions: Vec<Function>) -> Program {
    Program {
        name: functions[0].name.clone(),
        section: "xdp".to_string(),
        insns: encode_all(insns),
        functions,
        func_info: Vec::new(),
        line_info: Vec::new(),
    }
}

#[test]
fn a_whole_program_round_trips_through_its_listing() {
    let forms = every_form();
    let slots: usize = forms.iter().map(|i| i.slots()).sum();
    let mid = encode_all(&forms[..forms.len() / 2]).len();
    let p = program(
        &forms,
        vec![
            Function {
                name: "xdp_prog".into(),
                start: 0,
                len: mid,
            },
            Function {
                name: "helper_fn".into(),
                start: mid,
                len: slots - mid,
            },
        ],
    );
    let maps = maps();
    let text = disassemble(&p, &maps);
    let back = assemble_program(&text, &maps).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(back, p);
    // The same listing without the raw bytes and addresses.
    let stripped: String = text
        .lines()
        .map(|l| match l.split_once(":\t") {
            Some((_, rest)) if !l.ends_with(':') => rest.split_once('\t').map_or(rest, |x| x.1),
            _ => l,
        })
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(assemble_program(&stripped, &maps).unwrap(), p);
}

#[test]
fn listing_lines_look_like_llvm_objdump() {
    let insns = [
        Instruction::Alu {
            wide: false,
            op: AluOp::Mov,
            dst: 0,
            src: Operand::Imm(1),
        },
        Instruction::Jump {
            wide: false,
            cond: Cond::Eq,
            dst: 1,
            src: Operand::Imm(0),
            off: 1,
        },
        Instruction::Call(CallTarget::Local(1)),
        Instruction::Exit,
        Instruction::LoadImm64 {
            dst: 1,
            imm: Imm64::Map(0),
        },
        Instruction::Exit,
    ];
    let p = program(
        &insns,
        vec![
            Function {
                name: "f".into(),
                start: 0,
                len: 4,
            },
            Function {
                name: "g".into(),
                start: 4,
                len: 3,
            },
        ],
    );
    let text = disassemble(&p, &maps());
    let expected = "Disassembly of section xdp:\n\
        \n\
        0000000000000000 <f>:\n\
        \x20      0:\tb4 00 00 00 01 00 00 00\tw0 = 0x1\n\
        \x20      1:\t16 01 01 00 00 00 00 00\tif w1 == 0x0 goto +0x1 <f+0x18>\n\
        \x20      2:\t85 10 00 00 01 00 00 00\tcall pc+0x1 <g>\n\
        \x20      3:\t95 00 00 00 00 00 00 00\texit\n\
        \n\
        0000000000000020 <g>:\n\
        \x20      4:\t18 51 00 00 00 00 00 00 00 00 00 00 00 00 00 00\tr1 = counters ll\n\
        \x20      6:\t95 00 00 00 00 00 00 00\texit\n";
    assert_eq!(text, expected);
}

#[test]
fn bare_text_with_labels_comments_and_helper_names() {
    let text = "
        ; a hand-written program
        r2 = r10            // frame pointer
        r2 += -4
        r1 = counters ll    # the map
        call bpf_map_lookup_elem
        if r0 == 0 goto out
        w1 = 1
        lock *(u32 *)(r0 + 0) += r1
        call sub
    out:
        r0 = 2
        exit
    <sub>:
        gotol +0
        exit
    ";
    let names: &[&str] = &["counters"];
    let p = assemble_program(text, names).unwrap();
    let insns: Vec<Instruction> = p.decode().unwrap().into_iter().map(|x| x.1).collect();
    assert_eq!(insns[3], Instruction::Call(CallTarget::Helper(1)));
    assert!(matches!(
        insns[4],
        Instruction::Jump {
            off: 3,
            cond: Cond::Eq,
            ..
        }
    ));
    assert_eq!(insns[7], Instruction::Call(CallTarget::Local(2)));
    assert_eq!(p.functions.len(), 2);
    assert_eq!(p.functions[1].name, "sub");
    assert_eq!(p.functions[1].start, 11);
    assert_eq!(p.name, "prog");
}

fn err(text: &str) -> AsmError {
    assemble(text, &NoNames).unwrap_err()
}

#[test]
fn errors_name_the_line_and_the_problem() {
    assert_eq!(
        err("exit\n\nr1 = rx").to_string(),
        "line 3: expected register, found `rx`"
    );
    assert_eq!(
        err("r1 += w2").to_string(),
        "line 1: expected a 64-bit register, found `w2`"
    );
    assert_eq!(
        err("goto nowhere").to_string(),
        "line 1: unknown label `nowhere`"
    );
    assert_eq!(err("r1 = foo ll").to_string(), "line 1: unknown map `foo`");
    assert_eq!(
        err("w1 = 0x100000000").to_string(),
        "line 1: immediate 4294967296 out of range"
    );
    assert_eq!(
        err("r1 = *(u64 *)(r2 + 0x8000)").to_string(),
        "line 1: offset 32768 out of range"
    );
    assert_eq!(
        err("   0:\tb7 01 00 00 02 00 00 00\tr1 = 0x3").to_string(),
        "line 1: text does not match the raw bytes, which are `r1 = 0x2`"
    );
    assert_eq!(
        err("   1:\t95 00 00 00 00 00 00 00\texit").to_string(),
        "line 1: instruction index 1 does not follow the previous instruction (expected 0)"
    );
    assert!(err("exit extra")
        .to_string()
        .starts_with("line 1: unexpected `extra`"));
    assert!(err("\t<unknown>").to_string().contains("without raw bytes"));
    assert!(err("ff 00 00 00 00 00 00 00\t<unknown>")
        .to_string()
        .contains("do not decode"));
}

#[test]
fn map_names_resolve_both_ways() {
    let names: &[&str] = &["a", "b"];
    assert_eq!(names.map_index("b"), Some(1));
    let insn = parse_instruction("r3 = b + 0x8 ll", names).unwrap();
    assert_eq!(
        insn,
        Instruction::LoadImm64 {
            dst: 3,
            imm: Imm64::MapValue { map: 1, offset: 8 }
        }
    );
    assert_eq!(format_instruction(&insn, names), "r3 = b + 0x8 ll");
    assert_eq!(format_instruction(&insn, &NoNames), "r3 = map[1] + 0x8 ll");
}

#[test]
fn random_slots_that_decode_round_trip() {
    let mut rng = XorShift::new(0x9e37_79b9_7f4a_7c15);
    let codes: Vec<u8> = every_form().iter().map(|i| i.encode()[0].code).collect();
    let mut checked = 0;
    for _ in 0..200_000 {
        let r = rng.next_u64();
        let raw = RawInsn {
            code: codes[(r % codes.len() as u64) as usize],
            dst: (r >> 8) as u8 % 12,
            src: if r & (1 << 59) != 0 {
                0
            } else {
                (r >> 16) as u8 % 12
            },
            off: match r >> 60 {
                0..=7 => 0,
                8..=11 => (r >> 24) as i16,
                _ => (r >> 24) as i16 % 40,
            },
            imm: match (r >> 56) & 3 {
                0 => 0,
                1 => (r >> 32) as i32,
                _ => (r >> 32) as i32 % 300,
            },
        };
        let slots = [
            raw,
            RawInsn {
                imm: rng.next_u64() as i32,
                ..RawInsn::default()
            },
        ];
        let Ok(insn) = Instruction::decode(&slots, 0) else {
            continue;
        };
        let text = format_instruction(&insn, &NoNames);
        assert_eq!(parse_instruction(&text, &NoNames), Ok(insn), "`{text}`");
        checked += 1;
    }
    assert!(checked > 10_000, "only {checked} decodable");
}

#[test]
fn arbitrary_text_never_panics() {
    let mut rng = XorShift::new(42);
    let pieces = [
        "r1",
        "w2",
        "r10",
        "r11",
        "=",
        "+=",
        "s>>=",
        "*",
        "(",
        ")",
        "u32",
        "s8",
        "0x",
        "0x7fffffff",
        "-",
        "+",
        "ll",
        "goto",
        "gotol",
        "if",
        "<",
        "<=",
        "s<",
        "call",
        "pc",
        "kfunc",
        "lock",
        "atomic_fetch_add",
        "xchg_64",
        "cmpxchg32_32",
        "skb",
        "[",
        "]",
        ",",
        "ld_pseudo",
        ".raw",
        "ff",
        "18",
        "00",
        "exit",
        ":",
        "<f>:",
        "0000 <g>:",
        "label",
        "R_BPF_64_64",
        "\t",
        " ",
        "\n",
        ";",
        "99999999999999999999999",
        "map",
        "be16",
        "bswap64",
        "é",
        "SYMBOL TABLE:",
        "Disassembly of section x:",
        "   3:",
        "<unknown>",
        "0000000000000008:",
    ];
    for _ in 0..20_000 {
        let n = rng.below(12);
        let mut s = String::new();
        for _ in 0..n {
            s.push_str(pieces[rng.below(pieces.len())]);
            if rng.next_u64() & 3 == 0 {
                s.push(' ');
            }
        }
        let _ = assemble(&s, &NoNames);
        let _ = assemble_program(&s, &NoNames);
        let _ = linerate_bpf::objdump::read_objdump_text(&s, "fuzz");
    }
    // Random bytes, including invalid UTF-8 replaced lossily.
    for _ in 0..5_000 {
        let bytes: Vec<u8> = (0..(rng.next_u64() % 64))
            .map(|_| rng.next_u64() as u8)
            .collect();
        let s = String::from_utf8_lossy(&bytes);
        let _ = assemble(&s, &NoNames);
        let _ = linerate_bpf::objdump::read_objdump_text(&s, "fuzz");
    }
}
