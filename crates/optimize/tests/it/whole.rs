//! Whole-program search: a cross-block redundancy the windows cannot remove is removed, the
//! result is proven, loads in the kernel and agrees with the original on packets; a program the
//! equivalence check does not decide is not searched, and says why.

use std::path::Path;
use std::time::Duration;

use linerate_bpf::contents::MapSeed;
use linerate_bpf::insn::build::{add64, exit, ja, jmp, jmp_reg, ldx, mov64, mov64_reg, st};
use linerate_bpf::insn::{Cond, Size};
use linerate_bpf::Object;
use linerate_optimize::goal::Size as SizeGoal;
use linerate_optimize::verify::{in_kernel, in_vm};
use linerate_optimize::whole::{eligibility, search_whole, WholeOptions};
use linerate_optimize::{apply, packets, Executions};
use linerate_smt::{check_equivalence, Equivalence, EquivalenceOptions};

/// Both sides of a branch write the same byte and set the same action before they join: a
/// duplicated tail, which no window (each inside one block) can remove.
fn duplicated_tail() -> Object {
    let insns = [
        ldx(Size::W, 2, 1, 0),
        ldx(Size::W, 3, 1, 4),
        mov64(0, 1),
        mov64_reg(4, 2),
        add64(4, 14),
        jmp_reg(Cond::Gt, 4, 3, 7),
        ldx(Size::B, 5, 2, 12),
        jmp(Cond::Eq, 5, 8, 3),
        st(Size::B, 2, 0, 7),
        mov64(0, 2),
        ja(2),
        st(Size::B, 2, 0, 7),
        mov64(0, 2),
        exit(),
    ];
    Object::single("dup", &insns, Vec::new())
}

/// Two bounds checks, each failing into its own copy of `r0 = XDP_DROP; exit`: one check can
/// go to the other's copy, which no window (jumps are not in windows) can do.
fn two_drop_blocks() -> Object {
    let insns = [
        ldx(Size::W, 2, 1, 0),
        ldx(Size::W, 3, 1, 4),
        mov64_reg(4, 2),
        add64(4, 14),
        jmp_reg(Cond::Gt, 4, 3, 11),
        ldx(Size::B, 5, 2, 12),
        jmp(Cond::Ne, 5, 8, 5),
        mov64_reg(4, 2),
        add64(4, 34),
        jmp_reg(Cond::Gt, 4, 3, 4),
        mov64(0, 3),
        exit(),
        mov64(0, 2),
        exit(),
        mov64(0, 1),
        exit(),
        mov64(0, 1),
        exit(),
    ];
    Object::single("drops", &insns, Vec::new())
}

/// Searches `object` whole for a few seconds and checks the result: at most `most` slots,
/// proven, accepted by the kernel's checker, the same as the original on packets in the
/// interpreter and the kernel.
fn search_and_check(object: &Object, most: usize) {
    assert_eq!(eligibility(object, object, 0), Ok(()));
    let packets = packets::generate(2_000, 7);
    let seed = MapSeed::new();
    let executions = Executions {
        seed: &seed,
        packets: &packets,
        witnesses: &[],
    };
    let options = WholeOptions {
        budget: Duration::from_secs(5),
        seed: 3,
        pinned: Vec::new(),
        max_rounds: None,
    };
    let (report, stage) = search_whole(object, object, 0, &options, &SizeGoal, Some(&executions));
    assert!(report.eligible);
    assert_eq!(report.slots_before, object.programs[0].insns.len());
    assert!(
        report.slots_after <= most,
        "whole-program search left {} slots: {report:?}",
        report.slots_after
    );
    assert!(report.proven >= 1 && report.kernel_loads >= 1, "{report:?}");
    let stage = stage.expect("an improvement");
    let (optimized, _) = apply(&stage.input, 0, &stage.rewrites).expect("assembles");
    assert_eq!(optimized.programs[0].insns.len(), report.slots_after);
    linerate_kernel::load_entry(&optimized, 0).expect("the kernel's checker accepts it");
    in_vm(object, &optimized, 0, &seed, &packets).expect("same outcomes in the interpreter");
    in_kernel(object, &optimized, 0, &seed, &packets).expect("same outcomes in the kernel");
    assert!(matches!(
        check_equivalence(object, &optimized, 0, &EquivalenceOptions::default()),
        Ok(Equivalence::Equivalent { .. })
    ));
}

#[test]
fn whole_program_search_removes_a_duplicated_tail() {
    if !linerate_kernel::usable_or_skip("whole-program search loads candidates in the kernel") {
        return;
    }
    // The branch, the jump over the second side and the second side itself go.
    search_and_check(&duplicated_tail(), 10);
}

#[test]
fn whole_program_search_merges_two_drop_blocks() {
    if !linerate_kernel::usable_or_skip("whole-program search loads candidates in the kernel") {
        return;
    }
    search_and_check(&two_drop_blocks(), 16);
}

#[test]
fn a_program_with_a_tail_call_is_not_searched_whole() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/xdp_tailcall.o");
    let object = linerate_bpf::object::read_object_file(&path).expect("reads the example");
    let program = object
        .programs
        .iter()
        .position(|p| p.name == "xdp_tailcall_entry")
        .expect("the entry program");
    let why = eligibility(&object, &object, program).expect_err("not eligible");
    assert!(why.contains("tail call"), "{why}");
}
