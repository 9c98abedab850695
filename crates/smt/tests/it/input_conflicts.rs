//! Conflicts over the inputs alone (`PathChecker::input_conflicts`) on a path whose execution
//! stopped before its end: a path the solver refutes may fail further on (a fault that only an
//! impossible path reaches), and the conditions of the decisions before the failure still
//! conflict on their own. (They were once asked for only where the execution held a condition
//! for every decision of the path, which Katran's refuted paths never did: nothing was learned.)

use linerate_bpf::insn::build::{add64, exit, jmp, jmp_reg, ldx, mov64, mov64_reg};
use linerate_bpf::insn::{Cond, Size};
use linerate_bpf::Object;
use linerate_smt::{Options, PathChecker, Verdict};

use crate::common::branches as path;

/// `if (packet[0] != 1) PASS; if (packet[0] != 2) PASS;` then a load through a number, which
/// only the impossible path through both reaches, and a test of what it read.
fn program() -> Object {
    let insns = [
        ldx(Size::W, 2, 1, 0),      // 0
        ldx(Size::W, 3, 1, 4),      // 1
        mov64_reg(4, 2),            // 2
        add64(4, 14),               // 3
        mov64(0, 2),                // 4: XDP_PASS
        jmp_reg(Cond::Gt, 4, 3, 7), // 5: -> 13
        ldx(Size::B, 5, 2, 0),      // 6
        jmp(Cond::Ne, 5, 1, 5),     // 7: -> 13
        jmp(Cond::Ne, 5, 2, 4),     // 8: -> 13
        mov64(6, 0x1000),           // 9
        ldx(Size::B, 6, 6, 0),      // 10: through a number
        jmp(Cond::Eq, 6, 0, 1),     // 11: -> 13
        mov64(0, 1),                // 12
        exit(),                     // 13
    ];
    Object::single("conflicts", &insns, Vec::new())
}

#[test]
fn decisions_before_a_failure_conflict_on_their_own() {
    let object = program();
    let decisions = path(&[(5, false), (7, false), (8, false), (11, true)]);
    let mut checker = PathChecker::new(&object, 0, Options::default()).unwrap();
    let core = match checker.check(&decisions).unwrap() {
        Verdict::Unsat { core } => core,
        other => panic!("the path through both packet tests is {other:?}"),
    };
    assert!(core.contains(&1) && core.contains(&2), "core {core:?}");
    let learned = checker.input_conflicts(&decisions, &[0, 1, 2, 3], &core);
    assert_eq!(learned.first(), Some(&vec![1, 2]), "learned {learned:?}");
    // The decision after the failure has no condition to conflict with.
    assert!(learned.iter().all(|set| !set.contains(&3)));
}

/// `if (w & 1) ...; if (w & 2) ...; if (w & 4) ...; if (w == 0) ...` over the packet's first
/// byte `w`: the path taking every bit and then the zero test holds one conflict per bit, each
/// sharing the zero test (the CoNEXT'21 artifact's path explosion, over 64 bits).
fn bits_then_zero() -> Object {
    let insns = [
        ldx(Size::W, 2, 1, 0),      // 0
        ldx(Size::W, 3, 1, 4),      // 1
        mov64_reg(4, 2),            // 2
        add64(4, 1),                // 3
        mov64(0, 2),                // 4: XDP_PASS
        jmp_reg(Cond::Gt, 4, 3, 9), // 5: -> 15
        ldx(Size::B, 5, 2, 0),      // 6
        jmp(Cond::Set, 5, 1, 1),    // 7: -> 9
        mov64(7, 0),                // 8
        jmp(Cond::Set, 5, 2, 1),    // 9: -> 11
        mov64(7, 0),                // 10
        jmp(Cond::Set, 5, 4, 1),    // 11: -> 13
        mov64(7, 0),                // 12
        jmp(Cond::Ne, 5, 0, 1),     // 13: -> 15
        mov64(0, 1),                // 14
        exit(),                     // 15
    ];
    Object::single("bits_then_zero", &insns, Vec::new())
}

#[test]
fn conflicts_sharing_their_last_decision_are_each_found() {
    let object = bits_then_zero();
    let decisions = path(&[(5, false), (7, true), (9, true), (11, true), (13, false)]);
    let mut checker = PathChecker::new(&object, 0, Options::default()).unwrap();
    let core = match checker.check(&decisions).unwrap() {
        Verdict::Unsat { core } => core,
        other => panic!("a set bit and a zero byte: {other:?}"),
    };
    let mut learned = checker.input_conflicts(&decisions, &[0, 1, 2, 3, 4], &core);
    learned.sort();
    assert_eq!(
        learned,
        vec![vec![1, 4], vec![2, 4], vec![3, 4]],
        "core {core:?}"
    );
}
