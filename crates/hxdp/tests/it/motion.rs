//! Code motion between superblocks ([`linerate_hxdp::motion`]) on small hand-written programs:
//! a join block's independent work moves up into the block that dominates it and saves a row,
//! the compiled program still agrees with the interpreter, and what depends on the region between
//! stays where it is.

use linerate_bpf::contents::MapSeed;
use linerate_bpf::insn::build::{add64, add64_reg, exit, ja, jmp, jmp_reg, ldx, mov64, mov64_reg};
use linerate_bpf::insn::{Cond, Instruction, Size};
use linerate_bpf::Object;
use linerate_hxdp::check::check;
use linerate_hxdp::compile::{compile, CompileOptions};
use linerate_hxdp::deps::Facts;
use linerate_hxdp::motion::hoist;
use linerate_hxdp::program::Lowered;
use linerate_hxdp::source::SourceFacts;
use linerate_vm::VmOptions;

/// A diamond on the packet's first byte, then a join block with a chain of its own (`r6`) that
/// nothing in the diamond touches, and one value (`r4`) each side sets.
fn diamond(join_reads_the_sides: bool) -> Vec<Instruction> {
    let chain_start = if join_reads_the_sides {
        mov64_reg(6, 4)
    } else {
        mov64(6, 1)
    };
    vec![
        ldx(Size::W, 2, 1, 0),
        ldx(Size::W, 3, 1, 4),
        mov64_reg(5, 2),
        add64(5, 1),
        jmp_reg(Cond::Gt, 5, 3, 4),
        ldx(Size::B, 7, 2, 0),
        jmp(Cond::Gt, 7, 100, 2),
        mov64(4, 2),
        ja(1),
        mov64(4, 3),
        // The join block.
        chain_start,
        add64(6, 2),
        add64(6, 3),
        mov64_reg(0, 4),
        add64_reg(0, 6),
        exit(),
    ]
}

fn compiled_rows(object: &Object, code_motion: bool) -> usize {
    let options = CompileOptions {
        code_motion,
        ..CompileOptions::default()
    };
    let compiled = compile(object, 0, &options).expect("compiles");
    let packets: Vec<Vec<u8>> = (0u8..=40).map(|n| vec![n; 14 + n as usize]).collect();
    let report = check(
        &compiled.schedule,
        object,
        0,
        &packets,
        &MapSeed::default(),
        &VmOptions::default(),
    )
    .expect("the model runs");
    assert_eq!(report.violations, vec![], "{}", compiled.schedule);
    assert_eq!(report.mismatches, vec![], "{}", compiled.schedule);
    compiled.schedule.rows.len()
}

#[test]
fn independent_work_of_a_join_block_moves_up_and_saves_rows() {
    let object = Object::single("t", &diamond(false), Vec::new());
    let with = compiled_rows(&object, true);
    let without = compiled_rows(&object, false);
    assert!(
        with < without,
        "code motion: {with} rows, without: {without}"
    );
    println!("diamond: {with} rows with code motion, {without} without");
    let compiled = compile(&object, 0, &CompileOptions::default()).expect("compiles");
    assert!(
        !compiled.hoisted.is_empty(),
        "the join block's chain moved up"
    );
}

/// Runs [`hoist`] on `insns` with a count that rewards moving the instruction of source slot
/// `slot` earlier, whatever that costs: so only the legality rules can keep it in place.
fn hoisted_regardless(insns: &[Instruction], slot: usize) -> Lowered {
    let object = Object::single("t", insns, Vec::new());
    let mut lowered = Lowered::new(&object, 0).expect("lowers");
    let source = SourceFacts::compute(&object, 0).expect("the analysis runs");
    let position = |p: &Lowered, _: &[Facts]| {
        p.insns
            .iter()
            .position(|l| l.from.contains(&slot))
            .unwrap_or(usize::MAX)
    };
    hoist(&mut lowered, &source, position);
    lowered
}

#[test]
fn what_reads_the_region_stays_below_it() {
    // `r6 = r4` reads what each side of the diamond wrote: it cannot move above them.
    let lowered = hoisted_regardless(&diamond(true), 10);
    let at = |slot: usize| {
        lowered
            .insns
            .iter()
            .position(|l| l.from.contains(&slot))
            .expect("still there")
    };
    assert!(at(10) > at(7) && at(10) > at(9), "{lowered:?}");
    // Its independent twin moves above the diamond's first branch.
    let lowered = hoisted_regardless(&diamond(false), 10);
    let moved = lowered
        .insns
        .iter()
        .position(|l| l.from.contains(&10))
        .expect("still there");
    let first_branch = lowered
        .insns
        .iter()
        .position(|l| l.insn.is_control())
        .expect("a branch");
    assert!(moved < first_branch, "{lowered:?}");
}
