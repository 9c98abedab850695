//! Behaviours of the interpreter pinned by tiny hand-written programs.

use linerate_bpf::insn::{encode_all, AluOp, CallTarget, Cond, Imm64, Instruction, Operand, Size};
use linerate_bpf::program::{Function, MapOrigin};
use linerate_bpf::{MapDef, MapType, Object, Program};
use linerate_vm::{Vm, VmError, VmOptions};

use Instruction::*;

fn mov(dst: u8, imm: i32) -> Instruction {
    Alu {
        wide: true,
        op: AluOp::Mov,
        dst,
        src: Operand::Imm(imm),
    }
}
fn mov_reg(dst: u8, src: u8) -> Instruction {
    Alu {
        wide: true,
        op: AluOp::Mov,
        dst,
        src: Operand::Reg(src),
    }
}
fn add(dst: u8, imm: i32) -> Instruction {
    Alu {
        wide: true,
        op: AluOp::Add,
        dst,
        src: Operand::Imm(imm),
    }
}

fn program(name: &str, insns: &[Instruction]) -> Program {
    let slots = encode_all(insns);
    Program {
        name: name.into(),
        section: "xdp".into(),
        functions: vec![Function {
            name: name.into(),
            start: 0,
            len: slots.len(),
        }],
        insns: slots,
    }
}

fn map(name: &str, map_type: MapType, key_size: u32, value_size: u32, max_entries: u32) -> MapDef {
    MapDef {
        name: name.into(),
        map_type,
        key_size,
        value_size,
        max_entries,
        flags: 0,
        origin: MapOrigin::Btf,
        initial_value: None,
        initial_programs: Vec::new(),
    }
}

fn object(programs: Vec<Program>, maps: Vec<MapDef>) -> Object {
    Object {
        name: "t".into(),
        programs,
        maps,
        license: Some("GPL".into()),
    }
}

const PACKET: [u8; 20] = [
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20,
];

/// r2 = data, r3 = data_end, bounds-check `len` bytes, else jump to the tail returning `ret`.
fn load_packet_pointers() -> Vec<Instruction> {
    vec![
        Load {
            size: Size::W,
            signed: false,
            dst: 2,
            src: 1,
            off: 0,
        },
        Load {
            size: Size::W,
            signed: false,
            dst: 3,
            src: 1,
            off: 4,
        },
    ]
}

#[test]
fn swaps_bytes_in_the_packet_and_returns_tx() {
    let mut insns = load_packet_pointers();
    insns.extend([
        mov_reg(4, 2),
        add(4, 2),
        Jump {
            wide: true,
            cond: Cond::Gt,
            dst: 4,
            src: Operand::Reg(3),
            off: 5,
        },
        Load {
            size: Size::B,
            signed: false,
            dst: 5,
            src: 2,
            off: 0,
        },
        Load {
            size: Size::B,
            signed: false,
            dst: 6,
            src: 2,
            off: 1,
        },
        Store {
            size: Size::B,
            dst: 2,
            off: 0,
            src: Operand::Reg(6),
        },
        Store {
            size: Size::B,
            dst: 2,
            off: 1,
            src: Operand::Reg(5),
        },
        mov(0, 3),
        Exit,
    ]);
    let mut vm = Vm::new(
        &object(vec![program("swap", &insns)], vec![]),
        VmOptions::default(),
    )
    .unwrap();
    let out = vm.run(0, &PACKET, &[]).unwrap();
    assert_eq!(out.return_value, 3);
    assert_eq!(&out.packet[..3], &[2, 1, 3]);
    assert_eq!(out.instructions, 11);
}

#[test]
fn out_of_bounds_packet_read_is_a_fault_naming_the_instruction() {
    let mut insns = load_packet_pointers();
    insns.extend([
        Load {
            size: Size::W,
            signed: false,
            dst: 0,
            src: 2,
            off: 18,
        },
        Exit,
    ]);
    let mut vm = Vm::new(
        &object(vec![program("oob", &insns)], vec![]),
        VmOptions::default(),
    )
    .unwrap();
    let err = vm.run(0, &PACKET, &[]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "memory fault at insn 2 of `oob`: 4-byte load at packet offset 18 outside the packet (data_meta..data_end = 0..20)"
    );
}

#[test]
fn counts_packets_in_an_array_map_across_runs() {
    let insns = [
        Store {
            size: Size::W,
            dst: 10,
            off: -4,
            src: Operand::Imm(1),
        },
        mov_reg(2, 10),
        add(2, -4),
        LoadImm64 {
            dst: 1,
            imm: Imm64::Map(0),
        },
        Call(CallTarget::Helper(1)),
        Jump {
            wide: true,
            cond: Cond::Eq,
            dst: 0,
            src: Operand::Imm(0),
            off: 2,
        },
        mov(1, 1),
        Atomic {
            size: Size::Dw,
            op: linerate_bpf::insn::AtomicOp::Add,
            fetch: false,
            dst: 0,
            src: 1,
            off: 0,
        },
        mov(0, 2),
        Exit,
    ];
    let obj = object(
        vec![program("count", &insns)],
        vec![map("counts", MapType::ARRAY, 4, 8, 4)],
    );
    let mut vm = Vm::new(&obj, VmOptions::default()).unwrap();
    for _ in 0..3 {
        assert_eq!(vm.run(0, &PACKET, &[]).unwrap().return_value, 2);
    }
    assert_eq!(
        vm.maps[0].entries(),
        vec![(1u32.to_le_bytes().to_vec(), 3u64.to_le_bytes().to_vec())]
    );
}

#[test]
fn tail_call_switches_program_and_failed_tail_call_falls_through() {
    let entry = [
        mov_reg(6, 1),
        LoadImm64 {
            dst: 2,
            imm: Imm64::Map(0),
        },
        mov(3, 0),
        Call(CallTarget::Helper(12)),
        mov(0, 2),
        Exit,
    ];
    let target = [mov(0, 1), Exit];
    let mut slots = map("jmp", MapType::PROG_ARRAY, 4, 4, 2);
    slots.initial_programs = vec![(0, 1)];
    let obj = object(
        vec![program("entry", &entry), program("target", &target)],
        vec![slots],
    );
    let mut vm = Vm::new(&obj, VmOptions::default()).unwrap();
    let out = vm.run(0, &PACKET, &[]).unwrap();
    assert_eq!((out.return_value, out.final_program), (1, 1));
    vm.maps[0].delete(&0u32.to_le_bytes());
    let out = vm.run(0, &PACKET, &[]).unwrap();
    assert_eq!((out.return_value, out.final_program), (2, 0));
}

#[test]
fn adjust_head_grows_the_packet_in_front() {
    let mut insns = vec![
        mov_reg(6, 1),
        mov(2, -4),
        Call(CallTarget::Helper(44)),
        mov_reg(1, 6),
    ];
    insns.extend(load_packet_pointers());
    insns.extend([
        mov_reg(4, 2),
        add(4, 1),
        Jump {
            wide: true,
            cond: Cond::Gt,
            dst: 4,
            src: Operand::Reg(3),
            off: 1,
        },
        Store {
            size: Size::B,
            dst: 2,
            off: 0,
            src: Operand::Imm(0xee),
        },
        mov(0, 2),
        Exit,
    ]);
    let mut vm = Vm::new(
        &object(vec![program("grow", &insns)], vec![]),
        VmOptions::default(),
    )
    .unwrap();
    let out = vm.run(0, &PACKET, &[]).unwrap();
    assert_eq!(out.packet.len(), 24);
    assert_eq!(&out.packet[..5], &[0xee, 0, 0, 0, 1]);
}

#[test]
fn bpf_to_bpf_call_preserves_callee_saved_registers() {
    let insns = [
        mov(6, 40),
        mov(1, 2),
        Call(CallTarget::Local(2)),
        Alu {
            wide: true,
            op: AluOp::Add,
            dst: 0,
            src: Operand::Reg(6),
        },
        Exit,
        // callee: r0 = r1 * 1; clobbers r6 (restored on return)
        mov(6, 0),
        mov_reg(0, 1),
        Exit,
    ];
    let mut p = program("caller", &insns);
    p.functions = vec![
        Function {
            name: "caller".into(),
            start: 0,
            len: 5,
        },
        Function {
            name: "callee".into(),
            start: 5,
            len: 3,
        },
    ];
    let mut vm = Vm::new(&object(vec![p], vec![]), VmOptions::default()).unwrap();
    assert_eq!(vm.run(0, &PACKET, &[]).unwrap().return_value, 42);
}

#[test]
fn unsupported_helper_names_helper_and_instruction() {
    let insns = [mov(0, 0), Call(CallTarget::Helper(26)), Exit];
    let mut vm = Vm::new(
        &object(vec![program("h", &insns)], vec![]),
        VmOptions::default(),
    )
    .unwrap();
    let err = vm.run(0, &PACKET, &[]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "unsupported helper 26 (skb_load_bytes) at insn 1 of `h`"
    );
}

#[test]
fn infinite_loop_hits_the_instruction_limit() {
    let insns = [
        Ja {
            off: -1,
            long: false,
        },
        Exit,
    ];
    let options = VmOptions {
        max_instructions: 1000,
        ..VmOptions::default()
    };
    let mut vm = Vm::new(&object(vec![program("spin", &insns)], vec![]), options).unwrap();
    assert_eq!(
        vm.run(0, &PACKET, &[]).unwrap_err(),
        VmError::InstructionLimit { limit: 1000 }
    );
}

#[test]
fn writing_read_only_global_data_faults() {
    let insns = [
        LoadImm64 {
            dst: 1,
            imm: Imm64::MapValue { map: 0, offset: 4 },
        },
        Load {
            size: Size::W,
            signed: false,
            dst: 0,
            src: 1,
            off: 0,
        },
        Store {
            size: Size::W,
            dst: 1,
            off: 0,
            src: Operand::Imm(1),
        },
        Exit,
    ];
    let mut rodata = map("t.rodata", MapType::ARRAY, 4, 8, 1);
    rodata.origin = MapOrigin::GlobalData {
        section: ".rodata".into(),
        read_only: true,
    };
    rodata.initial_value = Some(vec![0, 0, 0, 0, 9, 0, 0, 0]);
    let mut vm = Vm::new(
        &object(vec![program("ro", &insns)], vec![rodata]),
        VmOptions::default(),
    )
    .unwrap();
    let err = vm.run(0, &PACKET, &[]).unwrap_err();
    assert!(
        err.to_string()
            .contains("write to read-only map `t.rodata`"),
        "{err}"
    );
}
