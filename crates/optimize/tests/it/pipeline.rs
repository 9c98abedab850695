//! The final checks' whole-program proof: a rewrite the differential packets miss is caught by
//! the equivalence check, its counterexample replays in the interpreter, and the culprit is
//! dropped while the equivalent rewrite beside it is kept and proven.

use linerate_bpf::contents::MapSeed;
use linerate_bpf::insn::build::{add64, add64_reg, alu64, exit, jmp_reg, ldx, mov64, mov64_reg};
use linerate_bpf::insn::{AluOp, Cond, Size};
use linerate_bpf::Object;
use linerate_optimize::pipeline::{checked, Proof, TestInputs};
use linerate_optimize::{Rewrite, Stage};
use linerate_smt::EquivalenceOptions;

/// XDP_PASS plus the low bit of packet byte 13 (XDP_TX when it is set); XDP_DROP on a packet
/// shorter than 14 bytes.
fn program() -> Vec<linerate_bpf::insn::Instruction> {
    vec![
        ldx(Size::W, 2, 1, 0),
        ldx(Size::W, 3, 1, 4),
        mov64_reg(4, 2),
        add64(4, 14),
        mov64(0, 1),
        jmp_reg(Cond::Gt, 4, 3, 5),
        ldx(Size::B, 5, 2, 13),
        alu64(AluOp::And, 5, 1),
        mov64(6, 7),
        mov64(0, 2),
        add64_reg(0, 5),
        exit(),
    ]
}

#[test]
fn a_rewrite_the_packets_miss_is_proven_wrong_and_dropped() {
    if !linerate_kernel::usable_or_skip("final checks load programs in the kernel") {
        return;
    }
    let insns = program();
    let object = Object::single("t", &insns, Vec::new());
    // Removing the dead `r6 = 7` is equivalent; `r5 = 0` for `r5 &= 1` is wrong only on
    // packets whose byte 13 is odd, which the differential packets below never are.
    let dead = Rewrite {
        start: 8,
        original: vec![insns[8]],
        replacement: vec![None],
    };
    let wrong = Rewrite {
        start: 7,
        original: vec![insns[7]],
        replacement: vec![Some(mov64(5, 0))],
    };
    let packets: Vec<Vec<u8>> = (0..40u8)
        .map(|i| {
            let mut p = vec![i; 14 + usize::from(i)];
            p[13] = i.wrapping_mul(2);
            p
        })
        .collect();
    let inputs = TestInputs {
        packets,
        witnesses: Vec::new(),
    };
    let stages = vec![Stage {
        input: object.clone(),
        rewrites: vec![wrong.clone(), dead.clone()],
    }];
    let mut discarded = Vec::new();
    let passed = checked(
        &object,
        0,
        stages.clone(),
        &MapSeed::new(),
        &inputs,
        Some(&EquivalenceOptions::default()),
        &mut discarded,
    )
    .expect("the final checks run");
    assert!(
        matches!(passed.proof, Proof::Equivalent { .. }),
        "{:?}",
        passed.proof
    );
    assert_eq!(passed.rewrites, vec![vec![dead]]);
    assert_eq!(passed.object.programs[0].insns.len(), insns.len() - 1);
    assert_eq!(discarded.len(), 1);
    assert!(
        discarded[0].reason.contains("equivalence check"),
        "{}",
        discarded[0].reason
    );
    assert_eq!(discarded[0].dropped.as_ref(), Some(&wrong));

    // Without the proof, the packets alone let the wrong rewrite through.
    let mut unproven = Vec::new();
    let passed = checked(
        &object,
        0,
        stages,
        &MapSeed::new(),
        &inputs,
        None,
        &mut unproven,
    )
    .expect("the final checks run");
    assert_eq!(passed.proof, Proof::Skipped);
    assert_eq!(passed.rewrites[0].len(), 2);
    assert!(unproven.is_empty());
}
