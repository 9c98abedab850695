//! `may_goto` (Linux 6.9+): a loop the verifier accepts only because `may_goto` bounds it runs the
//! same in the interpreter and in the kernel, and the clang-19 object using it reads.

use linerate_bpf::asm::assemble_program;
use linerate_bpf::insn::{decode_all, Instruction};
use linerate_bpf::program::{Function, Object};
use linerate_kernel::{load_entry, usable_or_skip, TestRunInput};
use linerate_vm::{Vm, VmOptions};

/// Loops `n` times, `n` the little-endian u32 at packet offset 14 (unknown to the verifier, so
/// `may_goto` is the loop's only bound), summing `i * i`; returns `XDP_PASS` (2) or `XDP_DROP`
/// (1) by the sum's parity.
const COUNTED_LOOP: &str = "
0000000000000000 <counted_loop>:
	r2 = *(u32 *)(r1 + 0x0)
	r3 = *(u32 *)(r1 + 0x4)
	r4 = r2
	r4 += 0x12
	r0 = 0x1
	if r4 > r3 goto done
	r7 = *(u32 *)(r2 + 0xe)
	r6 = 0x0
	r8 = 0x0
top:
	if r6 >= r7 goto out
	may_goto out
	r9 = r6
	r9 *= r6
	r8 += r9
	r6 += 0x1
	goto top
out:
	r8 &= 0x1
	r0 = 0x2
	r0 -= r8
done:
	exit
";

fn object() -> Object {
    let mut program = assemble_program(COUNTED_LOOP, &linerate_bpf::disasm::NoNames).unwrap();
    program.section = "xdp".into();
    let len = program.insns.len();
    program.functions = vec![Function {
        name: "counted_loop".into(),
        start: 0,
        len,
    }];
    Object::with_programs("counted_loop", vec![program], Vec::new())
}

#[test]
fn may_goto_loop_agrees_with_kernel() {
    let object = object();
    let insns = decode_all(&object.programs[0].insns).unwrap();
    assert!(insns
        .iter()
        .any(|(_, i)| matches!(i, Instruction::MayGoto { .. })));
    let counts: Vec<u32> = (0..40).map(|k| k * k * 7 + k).collect();
    let packets: Vec<Vec<u8>> = counts
        .iter()
        .map(|n| {
            let mut p = vec![0u8; 14];
            p.extend(n.to_le_bytes());
            p
        })
        .collect();
    let mut vm = Vm::new(&object, VmOptions::default()).unwrap();
    let expected: Vec<u64> = counts
        .iter()
        .map(|&n| {
            let sum = (0..n as u64).fold(0u64, |s, i| s.wrapping_add(i * i));
            2 - (sum & 1)
        })
        .collect();
    for (p, want) in packets.iter().zip(&expected) {
        assert_eq!(vm.run(0, p, &[]).unwrap().return_value, *want);
    }
    if !usable_or_skip("may_goto kernel half") {
        return;
    }
    let loaded = load_entry(&object, 0).unwrap_or_else(|e| {
        panic!("{e}\n{}", e.verifier_log().unwrap_or_default());
    });
    for (p, want) in packets.iter().zip(&expected) {
        let out = loaded.test_run(0, &TestRunInput::new(p.clone())).unwrap();
        assert_eq!(out.retval as u64, *want, "packet of {} bytes", p.len());
    }
}

/// A clang-19 object whose loop is bounded with `may_goto` (inline asm, as libbpf's `can_loop`)
/// reads, and the interpreter runs it to the kernel's answer.
#[test]
fn clang_may_goto_object_reads_and_runs() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/may_goto.o");
    let object = linerate_bpf::object::read_object_file(&path).unwrap();
    let mut vm = Vm::new(&object, VmOptions::default()).unwrap();
    let packet = vec![0u8; 64];
    let vm_out = vm.run(0, &packet, &[]).unwrap();
    if !usable_or_skip("may_goto kernel half") {
        return;
    }
    let loaded = load_entry(&object, 0).unwrap();
    let out = loaded.test_run(0, &TestRunInput::new(packet)).unwrap();
    assert_eq!(vm_out.return_value, out.retval as u64);
}
