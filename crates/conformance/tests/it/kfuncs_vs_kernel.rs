//! The number iterator kfuncs (`bpf_iter_num_new` / `_next` / `_destroy`) at the edges of their
//! ranges — reversed, empty, more than `BPF_MAX_LOOPS` numbers, `INT_MIN` and `INT_MAX` — give
//! the interpreter the kernel's results: return codes, the numbers `next` yields, and NULL.

use linerate_bpf::asm::assemble_program;
use linerate_bpf::facts::kfunc::{ITER_NUM_DESTROY, ITER_NUM_NEW, ITER_NUM_NEXT};
use linerate_bpf::program::{Function, Kfunc, Object};
use linerate_kernel::{load_object, usable_or_skip, TestRunInput};
use linerate_vm::{Vm, VmOptions};

/// Opens the iterator over `start..end` (the little-endian i32s at packet offsets 14 and 18),
/// stores `new`'s result (8 bytes at 22) and what two `next` calls yield (at 30 and 34; 0xffff for
/// NULL), and closes it.
const ITERATE: &str = "
0000000000000000 <iterate>:
	r6 = *(u32 *)(r1 + 0x0)
	r2 = *(u32 *)(r1 + 0x4)
	r3 = r6
	r3 += 0x2a
	r0 = 0x1
	if r3 > r2 goto done
	r1 = r10
	r1 += -0x8
	r2 = *(u32 *)(r6 + 0xe)
	r3 = *(u32 *)(r6 + 0x12)
	call kfunc 0x0
	*(u64 *)(r6 + 0x16) = r0
	r1 = r10
	r1 += -0x8
	call kfunc 0x1
	r7 = 0xffff
	if r0 == 0x0 goto second
	r7 = *(u32 *)(r0 + 0x0)
second:
	*(u32 *)(r6 + 0x1e) = r7
	r1 = r10
	r1 += -0x8
	call kfunc 0x1
	r7 = 0xffff
	if r0 == 0x0 goto close
	r7 = *(u32 *)(r0 + 0x0)
close:
	*(u32 *)(r6 + 0x22) = r7
	r1 = r10
	r1 += -0x8
	call kfunc 0x2
	r0 = 0x2
done:
	exit
";

fn object() -> Object {
    let mut program = assemble_program(ITERATE, &linerate_bpf::disasm::NoNames).unwrap();
    program.section = "xdp".into();
    let len = program.insns.len();
    program.functions = vec![Function {
        name: "iterate".into(),
        start: 0,
        len,
    }];
    let mut object = Object::with_programs("iterate", vec![program], Vec::new());
    object.kfuncs = [ITER_NUM_NEW, ITER_NUM_NEXT, ITER_NUM_DESTROY]
        .map(Kfunc::new)
        .to_vec();
    object
}

#[test]
fn number_iterator_edges_agree_with_kernel() {
    const MAX_LOOPS: i32 = 8 * 1024 * 1024;
    let ranges = [
        (0, 3),
        (5, 2),
        (7, 7),
        (-5, -3),
        (0, MAX_LOOPS),
        (0, MAX_LOOPS + 1),
        (-1, MAX_LOOPS),
        (i32::MIN, i32::MAX),
        (i32::MAX, i32::MAX),
        (i32::MAX - 1, i32::MAX),
        (i32::MIN, i32::MIN + 1),
    ];
    let packets: Vec<Vec<u8>> = ranges
        .iter()
        .map(|(start, end)| {
            let mut p = vec![0u8; 14];
            p.extend(start.to_le_bytes());
            p.extend(end.to_le_bytes());
            p.resize(64, 0);
            p
        })
        .collect();
    let object = object();
    let mut vm = Vm::new(&object, VmOptions::default()).unwrap();
    let ours: Vec<(u64, Vec<u8>)> = packets
        .iter()
        .map(|p| {
            let out = vm.run(0, p, &[]).unwrap();
            (out.return_value, out.packet)
        })
        .collect();
    // What the kernel source says (kernel/bpf/bpf_iter.c), for the first ranges.
    let field = |p: &[u8], at: usize| i32::from_le_bytes(p[at..at + 4].try_into().unwrap());
    assert_eq!(
        (
            field(&ours[0].1, 22),
            field(&ours[0].1, 30),
            field(&ours[0].1, 34)
        ),
        (0, 0, 1)
    );
    assert_eq!(
        (field(&ours[1].1, 22), field(&ours[1].1, 30)),
        (-22, 0xffff)
    );
    assert_eq!((field(&ours[5].1, 22), field(&ours[5].1, 30)), (-7, 0xffff));
    if !usable_or_skip("number iterator kernel half") {
        return;
    }
    let loaded = load_object(&object).unwrap_or_else(|e| {
        panic!("{e}\n{}", e.verifier_log().unwrap_or_default());
    });
    for ((p, (ret, packet)), range) in packets.iter().zip(&ours).zip(&ranges) {
        let out = loaded.test_run(0, &TestRunInput::new(p.clone())).unwrap();
        assert_eq!(out.retval as u64, *ret, "{range:?}");
        assert_eq!(&out.packet, packet, "{range:?}");
    }
}
