//! Helper results pinned by small programs: where `bpf_xdp_adjust_head/meta/tail` succeed and
//! fail in the test_run buffer (each call's return value is checked in the program, the resulting
//! packet and metadata by the test), and how `bpf_csum_diff` folds its carries.

use linerate_bpf::facts::helper::{CSUM_DIFF, XDP_ADJUST_HEAD, XDP_ADJUST_META, XDP_ADJUST_TAIL};
use linerate_bpf::facts::test_run_buffer::{HEADROOM, MAX_DATA, XDP_FRAME};
use linerate_bpf::insn::build::*;
use linerate_bpf::insn::{Cond, Instruction, Size};
use linerate_bpf::{Object, Program};
use linerate_vm::{RunOutcome, Vm, VmOptions};

/// Runs `calls` — `(helper, delta, expected return value)` — one after another on `packet` with
/// metadata `meta`. The program returns `XDP_PASS` (2) if every call returned what was expected,
/// else 100 + the index of the first call that did not.
fn run_calls(packet: &[u8], meta: &[u8], calls: &[(u32, i64, i64)]) -> RunOutcome {
    let mut vm = Vm::new(&calls_object(calls), VmOptions::default()).expect("decodes");
    vm.run(0, packet, meta).expect("runs")
}

/// An object whose program 0 makes `calls` (see [`run_calls`]) and whose program 1 passes
/// every packet unchanged.
fn calls_object(calls: &[(u32, i64, i64)]) -> Object {
    use Instruction::*;
    let mut insns = vec![mov64_reg(6, 1)];
    for (i, &(helper, delta, expected)) in calls.iter().enumerate() {
        insns.extend([
            mov64_reg(1, 6),
            mov64(2, delta as i32),
            call_helper(helper),
            ld64(3, expected as u64),
            jmp_reg(Cond::Eq, 0, 3, 2),
            mov64(0, 100 + i as i32),
            Exit,
        ]);
    }
    insns.extend([mov64(0, 2), Exit]);
    let programs = vec![
        Program::from_instructions("adjust", "xdp", &insns),
        Program::from_instructions("pass", "xdp", &[mov64(0, 2), Exit]),
    ];
    Object::with_programs("adjust", programs, Vec::new())
}

const EINVAL: i64 = -22;
const EACCES: i64 = -13;

#[test]
fn refilling_clears_what_the_last_packet_left() {
    let object = calls_object(&[(XDP_ADJUST_HEAD, -20, 0), (XDP_ADJUST_TAIL, 40, 0)]);
    let mut vm = Vm::new(&object, VmOptions::default()).expect("decodes");
    let grown = vm.run(0, &[7; 60], &[1, 2, 3, 4]).expect("runs");
    assert_eq!(grown.return_value, 2);
    assert_eq!(grown.packet.len(), 120);
    // The same interpreter's next packet sees none of it.
    let after = vm.run(1, &[9; 14], &[]).expect("runs");
    assert_eq!((after.packet, after.meta), (vec![9; 14], vec![]));
}

#[test]
fn head_can_grow_to_the_frame_header_and_shrink_to_an_ethernet_header() {
    let max_grow = (HEADROOM - XDP_FRAME) as i64;
    let out = run_calls(
        &[7; 60],
        &[],
        &[
            (XDP_ADJUST_HEAD, -max_grow - 1, EINVAL),
            (XDP_ADJUST_HEAD, -max_grow, 0),
        ],
    );
    assert_eq!(out.return_value, 2);
    assert_eq!(out.packet.len(), 60 + max_grow as usize);
    let out = run_calls(
        &[7; 60],
        &[],
        &[
            (XDP_ADJUST_HEAD, -max_grow, 0),
            (XDP_ADJUST_HEAD, max_grow + 60 - 14 + 1, EINVAL),
            (XDP_ADJUST_HEAD, max_grow + 60 - 14, 0),
        ],
    );
    assert_eq!(out.return_value, 2);
    assert_eq!(out.packet, vec![7; 14]);
}

#[test]
fn head_moves_the_metadata_with_it() {
    let out = run_calls(&[7; 60], &[1, 2, 3, 4], &[(XDP_ADJUST_HEAD, -8, 0)]);
    assert_eq!(out.return_value, 2);
    assert_eq!(out.meta, vec![1, 2, 3, 4]);
    assert_eq!(out.packet.len(), 68);
}

#[test]
fn meta_is_bounded_and_word_sized() {
    let out = run_calls(
        &[0; 60],
        &[],
        &[
            (XDP_ADJUST_META, -6, EACCES),
            (XDP_ADJUST_META, -220, EINVAL),
            (XDP_ADJUST_META, -216, 0),
            (XDP_ADJUST_META, 208, 0),
        ],
    );
    assert_eq!(out.return_value, 2);
    assert_eq!(out.meta, vec![0; 8]);
}

#[test]
fn meta_fits_the_u8_meta_len_once_the_head_moved() {
    // With `data` 40 bytes further in, the frame leaves room for 256 bytes of metadata, but
    // `skb_shared_info.meta_len` holds at most 255: the kernel refuses 256 with -EACCES.
    let out = run_calls(
        &[0; 60],
        &[],
        &[
            (XDP_ADJUST_HEAD, 40, 0),
            (XDP_ADJUST_META, -256, EACCES),
            (XDP_ADJUST_META, -252, 0),
        ],
    );
    assert_eq!(out.return_value, 2);
    assert_eq!(out.meta.len(), 252);
}

#[test]
fn tail_grows_with_zeros_up_to_the_shared_info() {
    let out = run_calls(
        &[1; 60],
        &[],
        &[(XDP_ADJUST_TAIL, -47, EINVAL), (XDP_ADJUST_TAIL, 4, 0)],
    );
    assert_eq!(out.return_value, 2);
    assert_eq!(&out.packet[58..], &[1, 1, 0, 0, 0, 0]);
    let room = (MAX_DATA - 64) as i64;
    let out = run_calls(
        &[1; 60],
        &[],
        &[
            (XDP_ADJUST_TAIL, 4, 0),
            (XDP_ADJUST_TAIL, room + 1, EINVAL),
            (XDP_ADJUST_TAIL, room, 0),
        ],
    );
    assert_eq!(out.return_value, 2);
    assert_eq!(out.packet.len() as u64, MAX_DATA);
}

/// `bpf_csum_diff(NULL, 0, words, 8, 0)` on the stack words `a, b`: the returned 32-bit sum.
fn csum_of_two_words(a: u32, b: u32) -> u64 {
    use Instruction::*;
    let insns = [
        st(Size::W, 10, -8, a as i32),
        st(Size::W, 10, -4, b as i32),
        mov64(1, 0),
        mov64(2, 0),
        mov64_reg(3, 10),
        add64(3, -8),
        mov64(4, 8),
        mov64(5, 0),
        call_helper(CSUM_DIFF),
        Exit,
    ];
    let mut object = calls_object(&[]);
    object.programs[0] = Program::from_instructions("adjust", "xdp", &insns);
    let mut vm = Vm::new(&object, VmOptions::default()).expect("decodes");
    // The VM reports the low 32 bits of r0, the whole checksum.
    vm.run(0, &[0; 14], &[]).expect("runs").return_value
}

#[test]
fn csum_fold_carries_around() {
    // 0xffffffff + 2 = 0x1_0000_0001, folded: 1 + 1.
    assert_eq!(csum_of_two_words(0xffff_ffff, 2), 2);
    // 0xffffffff + 1 = 0x1_0000_0000, folded: 0 + 1.
    assert_eq!(csum_of_two_words(0xffff_ffff, 1), 1);
}
