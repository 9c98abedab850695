//! Outcomes chosen inside helpers and the cores built after them: a helper's chosen outcome is
//! baked into the machine state (`bpf_xdp_load_bytes` fills its buffer only when it succeeds),
//! so a later decision's condition can be a constant of that choice, and a core naming only that
//! decision says nothing about the other outcome. A path that the other outcome takes must not
//! be refuted, and no core may claim a prefix that some input takes.

use linerate_bpf::facts::helper;
use linerate_bpf::insn::build::{
    add64, call_helper, exit, jmp, jmp_reg, ldx, mov64, mov64_reg, st,
};
use linerate_bpf::insn::{Cond, Size};
use linerate_bpf::Object;
use linerate_smt::{Options, PathChecker, PrefixVerdict, Verdict};

/// `buf = 0; ret = bpf_xdp_load_bytes(ctx, 20, &buf, 4); if (buf == 0x01020304) {..};
/// if (ret != 0) DROP; PASS`: the load fails exactly on packets shorter than 24 bytes.
fn program() -> Object {
    let insns = [
        st(Size::W, 10, -4, 0),              // 0: buf = 0
        mov64_reg(2, 10),                    // 1
        add64(2, -4),                        // 2: r2 = &buf ... as the third argument below
        mov64_reg(3, 2),                     // 3: r3 = &buf
        mov64(2, 20),                        // 4: r2 = offset 20
        mov64(4, 4),                         // 5: r4 = 4 bytes
        call_helper(helper::XDP_LOAD_BYTES), // 6: r0 = load_bytes(ctx, 20, &buf, 4)
        ldx(Size::W, 6, 10, -4),             // 7: r6 = buf
        jmp(Cond::Ne, 6, 0x0102_0304, 1),    // 8: if buf != 0x01020304 goto 10
        mov64(7, 1),                         // 9
        mov64(1, 2),                         // 10: r1 = XDP_PASS
        jmp(Cond::Eq, 0, 0, 2),              // 11: if ret == 0 goto 14
        mov64(0, 1),                         // 12: r0 = XDP_DROP
        exit(),                              // 13
        mov64_reg(0, 1),                     // 14: r0 = XDP_PASS
        exit(),                              // 15
    ];
    Object::single("choices", &insns, Vec::new())
}

use crate::common::branches as path;

/// Every path of the program: each is possible (the load succeeds or fails on packets of the
/// right length, and the buffer holds the value or not) except a failed load's buffer holding
/// it. Each verdict is the one a fresh checker gives, and a core's prefix is impossible in a
/// fresh checker too.
#[test]
fn a_decision_on_a_helper_outcome_is_not_refuted_for_the_other_outcome() {
    let object = program();
    let cases = [
        // (buf != value, ret == 0): possible?
        ((8, true), (11, true), true),    // loaded other bytes
        ((8, true), (11, false), true),   // failed: buf stays 0
        ((8, false), (11, true), true),   // loaded the value
        ((8, false), (11, false), false), // failed, yet buf holds the value
    ];
    let mut reused = PathChecker::new(&object, 0, Options::default()).unwrap();
    for (first, second, possible) in cases {
        let p = path(&[first, second]);
        let mut fresh = PathChecker::new(&object, 0, Options::default()).unwrap();
        for (which, checker) in [("fresh", &mut fresh), ("reused", &mut reused)] {
            let verdict = checker.check(&p).unwrap();
            match (&verdict, possible) {
                (Verdict::Sat(_), true) => {}
                (Verdict::Unsat { core }, false) => {
                    let last = core.iter().max().copied().unwrap_or(p.len() - 1);
                    let mut judge = PathChecker::new(&object, 0, Options::default()).unwrap();
                    assert!(
                        matches!(
                            judge.check_prefix(&p[..=last]).unwrap(),
                            PrefixVerdict::Unsat { .. }
                        ),
                        "{which} checker: the core {core:?} of {p:?} claims a possible prefix"
                    );
                }
                _ => panic!("{which} checker: {p:?} is {verdict:?}, possible: {possible}"),
            }
        }
    }
}

/// `buf = 0; bpf_xdp_load_bytes(ctx, 20, &buf, 4)` before the bounds check, then
/// `if (data + 24 > data_end) PASS; if (packet[20..24] != 7) PASS; if (buf == 0x01020304) r0 =
/// DROP; if (packet[0] == 9) r0 = 3`: the buffer test contradicts the packet test where the
/// load succeeded, and is a constant where it failed.
fn load_then_test() -> Object {
    let insns = [
        mov64_reg(6, 1),                     // 0
        st(Size::W, 10, -4, 0),              // 1: buf = 0
        mov64_reg(1, 6),                     // 2
        mov64(2, 20),                        // 3
        mov64_reg(3, 10),                    // 4
        add64(3, -4),                        // 5
        mov64(4, 4),                         // 6
        call_helper(helper::XDP_LOAD_BYTES), // 7
        ldx(Size::W, 2, 6, 0),               // 8: data
        ldx(Size::W, 3, 6, 4),               // 9: data_end
        mov64_reg(4, 2),                     // 10
        add64(4, 24),                        // 11
        mov64(0, 2),                         // 12: XDP_PASS
        jmp_reg(Cond::Gt, 4, 3, 8),          // 13: -> 22
        ldx(Size::W, 5, 2, 20),              // 14
        jmp(Cond::Ne, 5, 7, 6),              // 15: -> 22
        ldx(Size::W, 7, 10, -4),             // 16: buf
        jmp(Cond::Ne, 7, 0x0102_0304, 1),    // 17: -> 19
        mov64(0, 1),                         // 18
        ldx(Size::B, 5, 2, 0),               // 19
        jmp(Cond::Ne, 5, 9, 1),              // 20: -> 22
        mov64(0, 3),                         // 21
        exit(),                              // 22
    ];
    Object::single("load_then_test", &insns, Vec::new())
}

/// A path refuted under both outcomes of the load is impossible through the buffer test, the
/// furthest decision either refutation needs: every path that takes the decisions up to there
/// (whatever it does after) is, and the claim is no wider. (It was once the whole path, which
/// pruned only that path: Katran's paths refuted after their helper calls.)
#[test]
fn a_path_refuted_under_every_outcome_is_impossible_through_the_furthest_core() {
    let object = load_then_test();
    let p = path(&[(13, false), (15, false), (17, false), (20, true)]);
    let mut checker = PathChecker::new(&object, 0, Options::default()).unwrap();
    let core = match checker.check(&p).unwrap() {
        Verdict::Unsat { core } => core,
        other => panic!("the path is {other:?}"),
    };
    assert_eq!(core.iter().max(), Some(&2), "core {core:?}");
    let mut judge = PathChecker::new(&object, 0, Options::default()).unwrap();
    assert!(matches!(
        judge.check_prefix(&p[..=2]).unwrap(),
        PrefixVerdict::Unsat { .. }
    ));
    // Each outcome alone is possible with another buffer test.
    let other = path(&[(13, false), (15, false), (17, true), (20, true)]);
    assert!(matches!(checker.check(&other).unwrap(), Verdict::Sat(_)));
}
