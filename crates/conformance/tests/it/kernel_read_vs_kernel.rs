//! `bpf_probe_read_kernel` and `bpf_probe_read_kernel_str` against the kernel: reads of the stack
//! and the packet (memory the interpreter holds: copied, strings up to their NUL or the size,
//! the rest of the destination untouched), of addresses the kernel refuses (NULL and a
//! non-canonical one: `-ERANGE`) and of an unmapped kernel address (the top page: `-EFAULT`,
//! which the interpreter answers for any kernel memory it does not hold), the destination
//! zeroed on failure, and size 0 (the plain read still refuses an address, the string read
//! returns 0 first). Each program writes the helper's result and the destination's 32 bytes
//! over the packet's start, so one output packet shows both.

use linerate_bpf::facts::helper::{PROBE_READ_KERNEL, PROBE_READ_KERNEL_STR};
use linerate_bpf::facts::xdp::XDP_TX;
use linerate_bpf::facts::xdp_md;
use linerate_bpf::insn::build::*;
use linerate_bpf::insn::{Cond, Instruction, Size};
use linerate_bpf::Object;
use linerate_kernel::{load_entry, usable_or_skip, TestRunInput};
use linerate_vm::{Vm, VmOptions};

/// Stack offsets of the source bytes (16: `SOURCE`) and of the destination (32 bytes, `0xaa`).
const SRC: i16 = -32;
const DST: i16 = -64;
const DST_BYTES: usize = 32;
const SOURCE: &[u8; 16] = b"abcdefghij\0KLMNO";
const PACKET_HEAD: &[u8; 16] = b"pkt-bytes\0PQRSTU";
/// The last page of the address space, which the kernel never maps.
const UNMAPPED: u64 = 0xffff_ffff_ffff_f000;
/// Not canonical with 4-level or 5-level page tables.
const NON_CANONICAL: u64 = 0x8000_0000_0000_0000;

/// Where the helper reads from.
#[derive(Clone, Copy, Debug)]
enum From {
    Stack(i16),
    Packet(i32),
    Number(u64),
}

/// A program calling `helper(dst, size, from)`, then writing r0 and the destination over the
/// packet's first 40 bytes.
fn program(helper: u32, size: i32, from: From) -> Object {
    let mut insns: Vec<Instruction> = vec![mov64_reg(6, 1)];
    for (i, word) in SOURCE.chunks(4).enumerate() {
        let word = i32::from_le_bytes(word.try_into().unwrap());
        insns.push(st(Size::W, 10, SRC + 4 * i as i16, word));
    }
    for i in 0..(DST_BYTES / 4) as i16 {
        insns.push(st(Size::W, 10, DST + 4 * i, 0xaaaa_aaaau32 as i32));
    }
    insns.extend([mov64_reg(1, 10), add64(1, i32::from(DST)), mov64(2, size)]);
    insns.extend(match from {
        From::Stack(offset) => vec![mov64_reg(3, 10), add64(3, i32::from(offset))],
        From::Packet(offset) => vec![ldx(Size::W, 3, 6, xdp_md::DATA as i16), add64(3, offset)],
        From::Number(address) => vec![ld64(3, address)],
    });
    insns.extend([
        call_helper(helper),
        mov64_reg(7, 0),
        ldx(Size::W, 2, 6, xdp_md::DATA as i16),
        ldx(Size::W, 3, 6, xdp_md::DATA_END as i16),
        mov64_reg(4, 2),
        add64(4, 8 + DST_BYTES as i32),
        jmp_reg(Cond::Gt, 4, 3, 1 + 2 * (DST_BYTES / 8) as i16),
        stx(Size::Dw, 2, 0, 7),
    ]);
    for i in 0..(DST_BYTES / 8) as i16 {
        insns.extend([
            ldx(Size::Dw, 5, 10, DST + 8 * i),
            stx(Size::Dw, 2, 8 + 8 * i, 5),
        ]);
    }
    insns.extend([mov64(0, XDP_TX as i32), exit()]);
    Object::single("kernel_read", &insns, Vec::new())
}

/// The packet the programs run on: `PACKET_HEAD`, then filler.
fn packet() -> Vec<u8> {
    let mut p = PACKET_HEAD.to_vec();
    p.extend((0..48u8).map(|i| i | 0x40));
    p
}

/// The output packet of a run whose helper returned `ret` and left the destination `dst`.
fn expected(ret: i64, dst: &[u8]) -> Vec<u8> {
    let mut out = packet();
    out[..8].copy_from_slice(&ret.to_le_bytes());
    out[8..8 + DST_BYTES].copy_from_slice(dst);
    out
}

/// The destination with `head` written over its first bytes.
fn dst(head: &[u8]) -> Vec<u8> {
    let mut d = vec![0xaa; DST_BYTES];
    d[..head.len()].copy_from_slice(head);
    d
}

#[test]
fn probe_read_kernel_helpers_agree_with_the_kernel() {
    let (erange, efault) = (-34, -14);
    let cases: Vec<(u32, i32, From, i64, Vec<u8>)> = vec![
        (PROBE_READ_KERNEL, 8, From::Stack(SRC), 0, dst(b"abcdefgh")),
        (PROBE_READ_KERNEL, 16, From::Stack(SRC), 0, dst(SOURCE)),
        (PROBE_READ_KERNEL, 8, From::Packet(0), 0, dst(b"pkt-byte")),
        (PROBE_READ_KERNEL, 8, From::Number(0), erange, dst(&[0; 8])),
        (
            PROBE_READ_KERNEL,
            8,
            From::Number(NON_CANONICAL),
            erange,
            dst(&[0; 8]),
        ),
        (
            PROBE_READ_KERNEL,
            8,
            From::Number(UNMAPPED),
            efault,
            dst(&[0; 8]),
        ),
        (PROBE_READ_KERNEL, 0, From::Number(0), erange, dst(&[])),
        (PROBE_READ_KERNEL, 0, From::Number(UNMAPPED), 0, dst(&[])),
        (
            PROBE_READ_KERNEL_STR,
            16,
            From::Stack(SRC),
            11,
            dst(b"abcdefghij\0"),
        ),
        (PROBE_READ_KERNEL_STR, 4, From::Stack(SRC), 4, dst(b"abc\0")),
        (
            PROBE_READ_KERNEL_STR,
            16,
            From::Packet(0),
            10,
            dst(b"pkt-bytes\0"),
        ),
        (
            PROBE_READ_KERNEL_STR,
            8,
            From::Number(0),
            erange,
            dst(&[0; 8]),
        ),
        (
            PROBE_READ_KERNEL_STR,
            8,
            From::Number(UNMAPPED),
            efault,
            dst(&[0; 8]),
        ),
        (PROBE_READ_KERNEL_STR, 0, From::Number(0), 0, dst(&[])),
    ];
    let kernel = usable_or_skip("bpf_probe_read_kernel(_str) in the kernel");
    let input = packet();
    for (helper, size, from, ret, dst) in cases {
        let want = expected(ret, &dst);
        let what = format!("helper {helper}, size {size}, from {from:?}");
        let object = program(helper, size, from);
        let mut vm = Vm::new(&object, VmOptions::default()).unwrap();
        let out = vm.run(0, &input, &[]).unwrap();
        assert_eq!(out.return_value, XDP_TX, "interpreter, {what}");
        assert_eq!(out.packet, want, "interpreter, {what}");
        if kernel {
            let loaded = load_entry(&object, 0).unwrap_or_else(|e| {
                panic!("{what}: {e}\n{}", e.verifier_log().unwrap_or_default())
            });
            let out = loaded
                .test_run(0, &TestRunInput::new(input.clone()))
                .unwrap();
            assert_eq!(u64::from(out.retval), XDP_TX, "kernel, {what}");
            assert_eq!(out.packet, want, "kernel, {what}");
        }
    }
}
