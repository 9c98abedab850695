//! Behaviours of the interpreter pinned by tiny hand-written programs.

use crate::common;

use linerate_bpf::insn::build::*;
use linerate_bpf::insn::{Cond, Instruction, Size};
use linerate_bpf::program::{Function, MapOrigin};
use linerate_bpf::{MapDef, MapType, Object, Program};
use linerate_vm::{Vm, VmError, VmOptions};

use Instruction::*;

const PACKET: [u8; 20] = [
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20,
];

/// r2 = data, r3 = data_end, bounds-check `len` bytes, else jump to the tail returning `ret`.
fn load_packet_pointers() -> Vec<Instruction> {
    vec![ldx(Size::W, 2, 1, 0), ldx(Size::W, 3, 1, 4)]
}

#[test]
fn swaps_bytes_in_the_packet_and_returns_tx() {
    let mut insns = load_packet_pointers();
    insns.extend([
        mov64_reg(4, 2),
        add64(4, 2),
        jmp_reg(Cond::Gt, 4, 3, 5),
        ldx(Size::B, 5, 2, 0),
        ldx(Size::B, 6, 2, 1),
        stx(Size::B, 2, 0, 6),
        stx(Size::B, 2, 1, 5),
        mov64(0, 3),
        Exit,
    ]);
    let mut vm = Vm::new(
        &Object::single("swap", &insns, vec![]),
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
    insns.extend([ldx(Size::W, 0, 2, 18), Exit]);
    let mut vm = Vm::new(&Object::single("oob", &insns, vec![]), VmOptions::default()).unwrap();
    let err = vm.run(0, &PACKET, &[]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "memory fault at insn 2 of `oob`: 4-byte load at packet offset 18 outside the packet (data_meta..data_end = 0..20)"
    );
}

#[test]
fn a_jump_into_a_64_bit_immediate_load_is_refused() {
    // Slot 0 jumps to slot 2, the second half of the load in slots 1-2.
    let insns = [ja(1), ld64(0, 0x1_0000_0002), Exit];
    let mut vm = Vm::new(&Object::single("mid", &insns, vec![]), VmOptions::default()).unwrap();
    let err = vm.run(0, &PACKET, &[]).unwrap_err();
    assert_eq!(
        err,
        VmError::BadJump {
            program: "mid".into(),
            pc: 2
        }
    );
    assert_eq!(
        err.to_string(),
        "jump to slot 2 of `mid`, which is not the start of an instruction"
    );
    // Without the jump, the load runs and the program returns its low half.
    let insns = [ja(0), ld64(0, 0x1_0000_0002), Exit];
    let mut vm = Vm::new(
        &Object::single("whole", &insns, vec![]),
        VmOptions::default(),
    )
    .unwrap();
    assert_eq!(vm.run(0, &PACKET, &[]).unwrap().return_value, 2);
}

#[test]
fn counts_packets_in_an_array_map_across_runs() {
    let obj = Object::single(
        "count",
        &common::counter_program(),
        vec![MapDef::new("counts", MapType::ARRAY, 4, 8, 4)],
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
        mov64_reg(6, 1),
        ld_map(2, 0),
        mov64(3, 0),
        call_helper(12),
        mov64(0, 2),
        Exit,
    ];
    let target = [mov64(0, 1), Exit];
    let mut slots = MapDef::new("jmp", MapType::PROG_ARRAY, 4, 4, 2);
    slots.initial_programs = vec![(0, 1)];
    let programs = vec![
        Program::from_instructions("entry", "xdp", &entry),
        Program::from_instructions("target", "xdp", &target),
    ];
    let obj = Object::with_programs("t", programs, vec![slots]);
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
        mov64_reg(6, 1),
        mov64(2, -4),
        call_helper(44),
        mov64_reg(1, 6),
    ];
    insns.extend(load_packet_pointers());
    insns.extend([
        mov64_reg(4, 2),
        add64(4, 1),
        jmp_reg(Cond::Gt, 4, 3, 1),
        st(Size::B, 2, 0, 0xee),
        mov64(0, 2),
        Exit,
    ]);
    let mut vm = Vm::new(
        &Object::single("grow", &insns, vec![]),
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
        mov64(6, 40),
        mov64(1, 2),
        call_local(2),
        add64_reg(0, 6),
        Exit,
        // callee: r0 = r1 * 1; clobbers r6 (restored on return)
        mov64(6, 0),
        mov64_reg(0, 1),
        Exit,
    ];
    let mut p = Program::from_instructions("caller", "xdp", &insns);
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
    let mut vm = Vm::new(
        &Object::with_programs("t", vec![p], vec![]),
        VmOptions::default(),
    )
    .unwrap();
    assert_eq!(vm.run(0, &PACKET, &[]).unwrap().return_value, 42);
}

#[test]
fn unsupported_helper_names_helper_and_instruction() {
    let insns = [mov64(0, 0), call_helper(26), Exit];
    let mut vm = Vm::new(&Object::single("h", &insns, vec![]), VmOptions::default()).unwrap();
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
    let mut vm = Vm::new(&Object::single("spin", &insns, vec![]), options).unwrap();
    assert_eq!(
        vm.run(0, &PACKET, &[]).unwrap_err(),
        VmError::InstructionLimit { limit: 1000 }
    );
}

#[test]
fn writing_read_only_global_data_faults() {
    let insns = [
        ld_map_value(1, 0, 4),
        ldx(Size::W, 0, 1, 0),
        st(Size::W, 1, 0, 1),
        Exit,
    ];
    let mut rodata = MapDef::new("t.rodata", MapType::ARRAY, 4, 8, 1);
    rodata.origin = MapOrigin::GlobalData {
        section: ".rodata".into(),
        read_only: true,
    };
    rodata.initial_value = Some(vec![0, 0, 0, 0, 9, 0, 0, 0]);
    let mut vm = Vm::new(
        &Object::single("ro", &insns, vec![rodata]),
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
