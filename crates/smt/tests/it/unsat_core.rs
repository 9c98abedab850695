//! An impossible path: two branches on the same packet byte that contradict each other, with
//! an unrelated branch between them. The verdict is Unsat and the core names exactly the two
//! contradicting decisions; the paths around it are satisfiable, and checking them through one
//! session (reusing the shared prefix) gives what fresh sessions give.

use linerate_bpf::insn::build::{add64, exit, jmp, jmp_reg, ldx, mov64, mov64_reg};
use linerate_bpf::insn::{Cond, Size};
use linerate_bpf::Object;
use linerate_smt::{check, Decision, Options, PathChecker, Verdict};

/// `if (len < 14) PASS; b = pkt[12]; if (b == 8) {..}; if (pkt[13] == 1) {..}; if (b != 8)
/// DROP; PASS`.
fn program() -> Object {
    let insns = [
        ldx(Size::W, 2, 1, 0),       // 0: r2 = data
        ldx(Size::W, 3, 1, 4),       // 1: r3 = data_end
        mov64_reg(4, 2),             // 2
        add64(4, 14),                // 3: r4 = data + 14
        mov64(0, 2),                 // 4: r0 = XDP_PASS
        jmp_reg(Cond::Gt, 4, 3, 10), // 5: if r4 > r3 goto 16
        ldx(Size::B, 5, 2, 12),      // 6: r5 = pkt[12]
        ldx(Size::B, 6, 2, 13),      // 7: r6 = pkt[13]
        jmp(Cond::Eq, 5, 8, 1),      // 8: if r5 == 8 goto 10
        mov64(7, 1),                 // 9
        jmp(Cond::Eq, 6, 1, 1),      // 10: if r6 == 1 goto 12
        mov64(7, 2),                 // 11
        jmp(Cond::Ne, 5, 8, 1),      // 12: if r5 != 8 goto 14
        exit(),                      // 13: PASS
        mov64(0, 1),                 // 14: r0 = XDP_DROP
        exit(),                      // 15
        exit(),                      // 16
    ];
    Object::single("contradiction", &insns, Vec::new())
}

fn path(first: bool, middle: bool, last: bool) -> Vec<Decision> {
    vec![
        Decision::Branch {
            pc: 5,
            taken: false,
        },
        Decision::Branch {
            pc: 8,
            taken: first,
        },
        Decision::Branch {
            pc: 10,
            taken: middle,
        },
        Decision::Branch {
            pc: 12,
            taken: last,
        },
    ]
}

#[test]
fn contradicting_branches_give_a_core_of_those_two() {
    let verdict = check(&program(), 0, &path(true, true, true), &Options::default()).unwrap();
    assert_eq!(verdict, Verdict::Unsat { core: vec![1, 3] });
    let verdict = check(
        &program(),
        0,
        &path(false, false, false),
        &Options::default(),
    )
    .unwrap();
    assert_eq!(verdict, Verdict::Unsat { core: vec![1, 3] });
}

#[test]
fn consistent_paths_are_satisfiable_with_their_action() {
    let Verdict::Sat(w) = check(
        &program(),
        0,
        &path(true, false, false),
        &Options::default(),
    )
    .unwrap() else {
        panic!("feasible");
    };
    assert_eq!(
        (w.packet[12], w.action, w.packet.len()),
        (8, "XDP_PASS", 14)
    );
    assert_ne!(w.packet[13], 1);
    let Verdict::Sat(w) =
        check(&program(), 0, &path(false, true, true), &Options::default()).unwrap()
    else {
        panic!("feasible");
    };
    assert_eq!((w.packet[13], w.action), (1, "XDP_DROP"));
    assert_ne!(w.packet[12], 8);
}

#[test]
fn one_session_answers_as_fresh_ones_in_any_order() {
    let object = program();
    let mut all: Vec<Vec<Decision>> = Vec::new();
    for bits in 0..8u8 {
        all.push(path(bits & 4 != 0, bits & 2 != 0, bits & 1 != 0));
    }
    // Also the short path (too short a packet), and back again.
    all.push(vec![Decision::Branch { pc: 5, taken: true }]);
    all.extend(all.clone().into_iter().rev());
    // Models are not unique: compare what the verdict says about the path.
    let summary = |v: Verdict| match v {
        Verdict::Sat(w) => format!("sat {} {} {:?}", w.action, w.packet.len(), w.blocks),
        other => format!("{other:?}"),
    };
    let mut session = PathChecker::new(&object, 0, Options::default()).unwrap();
    for p in &all {
        let fresh = check(&object, 0, p, &Options::default()).unwrap();
        assert_eq!(summary(session.check(p).unwrap()), summary(fresh), "{p:?}");
    }
}

#[test]
fn a_path_that_is_not_the_programs_is_an_error() {
    let object = program();
    let wrong_slot = vec![Decision::Branch { pc: 6, taken: true }];
    let e = check(&object, 0, &wrong_slot, &Options::default()).unwrap_err();
    assert!(e.to_string().contains("decision 0"), "{e}");
    let short = vec![Decision::Branch {
        pc: 5,
        taken: false,
    }];
    let e = check(&object, 0, &short, &Options::default()).unwrap_err();
    assert!(e.to_string().contains("end before"), "{e}");
    let mut long = path(true, true, false);
    long.push(Decision::Branch {
        pc: 11,
        taken: true,
    });
    let e = check(&object, 0, &long, &Options::default()).unwrap_err();
    assert!(e.to_string().contains("exits after 4"), "{e}");
}

#[test]
fn a_shared_prefix_is_not_executed_again() {
    let object = program();
    let mut session = PathChecker::new(&object, 0, Options::default()).unwrap();
    session.check(&path(true, true, false)).unwrap();
    let whole = session.instructions_executed();
    // Differs only in the last decision: execution resumes after the third.
    session.check(&path(true, true, true)).unwrap();
    let resumed = session.instructions_executed() - whole;
    // Slots 0-8, 10, 12, 13.
    assert_eq!(whole, 12, "the first path runs from the entry");
    // Slots 12, 14, 15: from the last decision on, not from the entry.
    assert_eq!(
        resumed, 3,
        "the second path resumes after the shared prefix"
    );
    // A fresh session runs the second path whole.
    let mut fresh = PathChecker::new(&object, 0, Options::default()).unwrap();
    fresh.check(&path(true, true, true)).unwrap();
    assert_eq!(fresh.instructions_executed(), 13);
}
