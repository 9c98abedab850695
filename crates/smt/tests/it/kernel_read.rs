//! `bpf_probe_read_kernel(_str)` in the engine: a read of the stack (memory the engine holds)
//! copies it and succeeds; a read of kernel memory no machine holds leaves the bytes and how the
//! read ends open (a failure zeroes the destination); a NULL address is always refused. A
//! string read of kernel memory returns at most its size and never 0.

use linerate_bpf::facts::helper::{PROBE_READ_KERNEL, PROBE_READ_KERNEL_STR};
use linerate_bpf::insn::build::{add64, call_helper, exit, jmp, ld64, ldx, mov64, mov64_reg, st};
use linerate_bpf::insn::{Cond, Instruction, Size};
use linerate_bpf::Object;
use linerate_smt::{Options, PathChecker, Verdict};

use crate::common::branches as path;

/// The word on the stack the stack source holds.
const VALUE: i32 = 0x1122_3344;
/// An address in the kernel half (the direct map's start with 4-level page tables).
const KERNEL: u64 = 0xffff_8880_0000_0000;

/// Slots 4-5: `r3 = r10 - 8`, or `r3 = address` (one instruction of two slots).
fn source(address: Option<u64>) -> Vec<Instruction> {
    match address {
        None => vec![mov64_reg(3, 10), add64(3, -8)],
        Some(a) => vec![ld64(3, a)],
    }
}

/// `*(r10-8) = VALUE; ret = probe_read_kernel(r10-16, 4, source); r6 = *(r10-16); if ret != 0
/// goto failed; if r6 != VALUE ..; exit; failed: if r6 != 0 ..; exit`.
fn plain(address: Option<u64>) -> Object {
    let mut insns = vec![
        st(Size::W, 10, -8, VALUE), // 0
        mov64_reg(1, 10),           // 1
        add64(1, -16),              // 2
        mov64(2, 4),                // 3
    ];
    insns.extend(source(address)); // 4-5
    insns.extend([
        call_helper(PROBE_READ_KERNEL), // 6
        ldx(Size::W, 6, 10, -16),       // 7: r6 = dst
        jmp(Cond::Ne, 0, 0, 3),         // 8: if ret != 0 goto 12
        jmp(Cond::Ne, 6, VALUE, 1),     // 9: if dst != VALUE goto 11
        exit(),                         // 10
        exit(),                         // 11
        jmp(Cond::Ne, 6, 0, 1),         // 12: if dst != 0 goto 14
        exit(),                         // 13
        exit(),                         // 14
    ]);
    Object::single("kernel_read", &insns, Vec::new())
}

/// `ret = probe_read_kernel_str(r10-16, 4, address); if ret s> 4 ..; if ret == 0 ..; exit`.
fn string(address: u64) -> Object {
    let mut insns = vec![
        st(Size::W, 10, -8, VALUE),
        mov64_reg(1, 10),
        add64(1, -16),
        mov64(2, 4),
    ];
    insns.extend(source(Some(address)));
    insns.extend([
        call_helper(PROBE_READ_KERNEL_STR), // 6
        jmp(Cond::Sgt, 0, 4, 2),            // 7: if ret s> 4 goto 10
        jmp(Cond::Eq, 0, 0, 1),             // 8: if ret == 0 goto 10
        exit(),                             // 9
        exit(),                             // 10
    ]);
    Object::single("kernel_read_str", &insns, Vec::new())
}

/// Checks each `(decisions, possible)` of `object` in a fresh checker.
fn check(object: &Object, cases: &[(&[(usize, bool)], bool)], what: &str) {
    for &(decisions, possible) in cases {
        let mut checker = PathChecker::new(object, 0, Options::default()).unwrap();
        let verdict = checker.check(&path(decisions)).unwrap();
        assert_eq!(
            matches!(verdict, Verdict::Sat(_)),
            possible,
            "{what}: {decisions:?} is {verdict:?}"
        );
    }
}

#[test]
fn a_read_of_the_stack_copies_it() {
    let cases: [(&[(usize, bool)], bool); 4] = [
        (&[(8, false), (9, false)], true),
        (&[(8, false), (9, true)], false),
        (&[(8, true), (12, false)], false),
        (&[(8, true), (12, true)], false),
    ];
    check(&plain(None), &cases, "stack");
}

#[test]
fn a_read_of_kernel_memory_is_open_and_a_fault_zeroes_the_destination() {
    let cases: [(&[(usize, bool)], bool); 4] = [
        (&[(8, false), (9, false)], true),
        (&[(8, false), (9, true)], true),
        (&[(8, true), (12, false)], true),
        (&[(8, true), (12, true)], false),
    ];
    check(&plain(Some(KERNEL)), &cases, "kernel memory");
}

#[test]
fn a_null_address_is_refused() {
    let cases: [(&[(usize, bool)], bool); 4] = [
        (&[(8, false), (9, false)], false),
        (&[(8, false), (9, true)], false),
        (&[(8, true), (12, false)], true),
        (&[(8, true), (12, true)], false),
    ];
    check(&plain(Some(0)), &cases, "NULL");
}

#[test]
fn a_string_read_returns_at_most_its_size_and_never_zero() {
    let cases: [(&[(usize, bool)], bool); 3] = [
        (&[(7, true)], false),
        (&[(7, false), (8, true)], false),
        (&[(7, false), (8, false)], true),
    ];
    check(&string(KERNEL), &cases, "string");
}
