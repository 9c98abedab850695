//! `read_objdump_text` on hand-written listings: linking without `-r`, `.text`-only objects,
//! function-address loads, and errors.

use linerate_bpf::insn::{CallTarget, Imm64, Instruction};
use linerate_bpf::objdump::read_objdump_text;
use linerate_bpf::program::{MapOrigin, Object};

fn insns(object: &Object, program: usize) -> Vec<Instruction> {
    object.programs[program]
        .decode()
        .unwrap()
        .into_iter()
        .map(|x| x.1)
        .collect()
}

/// Without `-r`, a call from a program section is relative to the start of `.text`.
#[test]
fn static_calls_link_without_relocations() {
    let text = "
prog.o:\tfile format elf64-bpf

Disassembly of section .text:

0000000000000000 <add>:
       0:\tbf 10 00 00 00 00 00 00\tr0 = r1
       1:\t95 00 00 00 00 00 00 00\texit

0000000000000010 <twice>:
       2:\t85 10 00 00 fd ff ff ff\tcall -0x3
       3:\t85 10 00 00 fc ff ff ff\tcall -0x4
       4:\t95 00 00 00 00 00 00 00\texit

Disassembly of section xdp:

0000000000000000 <xdp_prog>:
       0:\t85 10 00 00 01 00 00 00\tcall 0x1
       1:\t95 00 00 00 00 00 00 00\texit
";
    let object = read_objdump_text(text, "prog").unwrap();
    assert_eq!(object.programs.len(), 1);
    let p = &object.programs[0];
    let names: Vec<&str> = p.functions.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["xdp_prog", "twice", "add"]);
    let i = insns(&object, 0);
    assert_eq!(i[0], Instruction::Call(CallTarget::Local(1)));
    // `twice` at 2 calls `add` at 5 twice.
    assert_eq!(i[2], Instruction::Call(CallTarget::Local(2)));
    assert_eq!(i[3], Instruction::Call(CallTarget::Local(1)));
    assert!(object.maps.is_empty());
    assert_eq!(object.name, "prog");
}

#[test]
fn text_only_objects_have_their_uncalled_functions_as_programs() {
    let text = "
Disassembly of section .text:

0000000000000000 <helper>:
       0:\tb7 00 00 00 02 00 00 00\tr0 = 0x2
       1:\t95 00 00 00 00 00 00 00\texit

0000000000000010 <entry>:
       2:\t85 10 00 00 fd ff ff ff\tcall -0x3
       3:\t18 01 00 00 08 00 00 00 00 00 00 00 00 00 00 00\tr1 = 0x8 ll
\t\t0000000000000018:  R_BPF_64_64\t.rodata
       5:\t95 00 00 00 00 00 00 00\texit
";
    let object = read_objdump_text(text, "t").unwrap();
    assert_eq!(object.programs.len(), 1);
    assert_eq!(object.programs[0].name, "entry");
    assert_eq!(object.programs[0].section, ".text");
    let i = insns(&object, 0);
    assert_eq!(i[0], Instruction::Call(CallTarget::Local(3)));
    assert_eq!(
        i[1],
        Instruction::LoadImm64 {
            dst: 1,
            imm: Imm64::MapValue { map: 0, offset: 8 }
        }
    );
    assert_eq!(object.maps[0].name, "t.rodata");
    assert_eq!(
        object.maps[0].origin,
        MapOrigin::GlobalData {
            section: ".rodata".into(),
            read_only: true
        }
    );
}

#[test]
fn function_address_loads_link_their_callback() {
    let text = "
Disassembly of section .text:

0000000000000000 <cb>:
       0:\tb7 00 00 00 00 00 00 00\tr0 = 0x0
       1:\t95 00 00 00 00 00 00 00\texit

Disassembly of section xdp:

0000000000000000 <xdp_prog>:
       0:\t18 02 00 00 00 00 00 00 00 00 00 00 00 00 00 00\tr2 = 0x0 ll
\t\t0000000000000000:  R_BPF_64_64\tcb
       2:\t18 01 00 00 00 00 00 00 00 00 00 00 00 00 00 00\tr1 = 0x0 ll
\t\t0000000000000010:  R_BPF_64_64\tcounters
       4:\t85 00 00 00 b5 00 00 00\tcall 0xb5
       5:\t95 00 00 00 00 00 00 00\texit
";
    let object = read_objdump_text(text, "f").unwrap();
    let i = insns(&object, 0);
    assert_eq!(
        i[0],
        Instruction::LoadImm64 {
            dst: 2,
            imm: Imm64::Pseudo {
                src: 4,
                imm: 5,
                next_imm: 0
            }
        }
    );
    assert_eq!(
        i[1],
        Instruction::LoadImm64 {
            dst: 1,
            imm: Imm64::Map(0)
        }
    );
    assert_eq!(object.maps[0].name, "counters");
    assert_eq!(object.maps[0].origin, MapOrigin::Legacy);
    assert_eq!(object.programs[0].functions[1].name, "cb");
    assert_eq!(object.programs[0].functions[1].start, 6);
}

#[test]
fn bad_listings_are_errors_naming_the_line() {
    let not_a_function = "
Disassembly of section .text:

0000000000000000 <f>:
       0:\tb7 00 00 00 00 00 00 00\tr0 = 0x0
       1:\t95 00 00 00 00 00 00 00\texit

Disassembly of section xdp:

0000000000000000 <xdp_prog>:
       0:\t85 10 00 00 00 00 00 00\tcall 0x0
       1:\t95 00 00 00 00 00 00 00\texit
";
    let err = read_objdump_text(not_a_function, "x").unwrap_err();
    assert_eq!(
        err.to_string(),
        "line 11: call target is not the start of a function"
    );
    let bad_reloc = "Disassembly of section xdp:\n\n<p>:\n   0:\t95 00 00 00 00 00 00 00\texit\n\t\t0000000000000008:  R_BPF_64_64\tm\n";
    let err = read_objdump_text(bad_reloc, "x").unwrap_err();
    assert_eq!(
        err.to_string(),
        "line 5: relocation does not point at an instruction"
    );
}
