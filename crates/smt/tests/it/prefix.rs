//! Prefix checks (`PathChecker::check_prefix`, what a check-at-every-branch search asks): a
//! prefix holds exactly when some input takes its decisions, whatever comes after; a prefix that
//! ends in a contradiction is unsatisfiable with the contradicting decisions as its core; a whole
//! path checked as a prefix says it exits; an input the solver builds for a prefix takes it. On
//! the examples, every prefix of a path the
//! interpreter took holds, checked in one session in depth-first order.

// The shared helpers include one this test does not use (the blocks of a run).
#[allow(dead_code)]
use crate::common;

use linerate_bpf::insn::build::{add64, exit, jmp, jmp_reg, ldx, mov64, mov64_reg};
use linerate_bpf::insn::{Cond, Size};
use linerate_bpf::Object;
use linerate_smt::{Decision, Options, PathChecker, PrefixVerdict, SmtError, Verdict};
use linerate_vm::{Vm, VmOptions};

/// `if (len < 20) PASS; b = pkt[12]; if (b > 9) { if (b < 5) DROP; TX } PASS`: the inner
/// branch's taken side contradicts the outer one.
fn program() -> Object {
    let insns = [
        ldx(Size::W, 2, 1, 0),      // 0: r2 = data
        ldx(Size::W, 3, 1, 4),      // 1: r3 = data_end
        mov64_reg(4, 2),            // 2
        add64(4, 20),               // 3: r4 = data + 20
        mov64(0, 2),                // 4: r0 = XDP_PASS
        jmp_reg(Cond::Gt, 4, 3, 6), // 5: if r4 > r3 goto 12
        ldx(Size::B, 5, 2, 12),     // 6: r5 = pkt[12]
        jmp(Cond::Le, 5, 9, 4),     // 7: if r5 <= 9 goto 12
        mov64(0, 3),                // 8: r0 = XDP_TX
        jmp(Cond::Ge, 5, 5, 2),     // 9: if r5 >= 5 goto 12
        mov64(0, 1),                // 10: r0 = XDP_DROP
        exit(),                     // 11
        exit(),                     // 12
    ];
    Object::single("prefixes", &insns, Vec::new())
}

fn branch(pc: usize, taken: bool) -> Decision {
    Decision::Branch { pc, taken }
}

#[test]
fn prefixes_hold_until_a_contradiction() {
    let mut checker = PathChecker::new(&program(), 0, Options::default()).unwrap();
    let open = PrefixVerdict::Holds { exited: false };
    assert_eq!(checker.check_prefix(&[]).unwrap(), open);
    assert_eq!(checker.check_prefix(&[branch(5, false)]).unwrap(), open);
    let outer = [branch(5, false), branch(7, false)];
    assert_eq!(checker.check_prefix(&outer).unwrap(), open);
    let contradiction = [branch(5, false), branch(7, false), branch(9, false)];
    assert_eq!(
        checker.check_prefix(&contradiction).unwrap(),
        PrefixVerdict::Unsat { core: vec![1, 2] }
    );
    // The same decisions as a whole path: the same core.
    assert_eq!(
        checker.check(&contradiction).unwrap(),
        Verdict::Unsat { core: vec![1, 2] }
    );
    let whole = [branch(5, false), branch(7, false), branch(9, true)];
    assert_eq!(
        checker.check_prefix(&whole).unwrap(),
        PrefixVerdict::Holds { exited: true }
    );
    assert_eq!(
        checker.check_prefix(&[branch(5, true)]).unwrap(),
        PrefixVerdict::Holds { exited: true }
    );
}

/// An input that reaches a prefix (`PathChecker::reach`) takes its decisions in the
/// interpreter; an impossible prefix has none.
#[test]
fn an_input_reaching_a_prefix_takes_its_decisions() {
    let object = program();
    let mut checker = PathChecker::new(&object, 0, Options::default()).unwrap();
    let outer = [branch(5, false), branch(7, false)];
    let input = checker.reach(&outer).unwrap().expect("the prefix holds");
    let mut vm = Vm::new(
        &object,
        VmOptions {
            record_steps: true,
            ..VmOptions::default()
        },
    )
    .unwrap();
    let run = vm.run(0, &input.packet, &[]).unwrap();
    assert_eq!(common::decisions(&object, &run.steps)[..2], outer);
    let contradiction = [branch(5, false), branch(7, false), branch(9, false)];
    assert_eq!(checker.reach(&contradiction).unwrap(), None);
}

#[test]
fn a_prefix_that_does_not_fit_the_program_is_an_error() {
    let mut checker = PathChecker::new(&program(), 0, Options::default()).unwrap();
    assert!(matches!(
        checker.check_prefix(&[branch(7, false)]),
        Err(SmtError::Mismatch { index: 0, .. })
    ));
    let too_long = [branch(5, true), branch(7, false)];
    assert!(matches!(
        checker.check_prefix(&too_long),
        Err(SmtError::PathTooLong { used: 1, given: 2 })
    ));
}

/// Paths per example whose prefixes are checked (each prefix is one solver check or more).
const PACKETS: usize = 1;

#[test]
fn every_prefix_of_an_interpreter_path_holds() {
    let examples = linerate_conformance::examples::load_all().expect("examples load");
    let mut prefixes = 0;
    for example in &examples {
        let object = &example.object;
        let program = example.entry;
        let Ok(mut checker) = PathChecker::new(object, program, Options::default()) else {
            continue;
        };
        let single_buffer = example
            .packets
            .iter()
            .filter(|p| p.bytes.len() as u64 <= linerate_bpf::facts::test_run_buffer::MAX_DATA);
        'packets: for packet in single_buffer.take(PACKETS) {
            let options = VmOptions {
                record_steps: true,
                ..VmOptions::default()
            };
            let mut vm = Vm::new(object, options).expect("vm");
            vm.seed(&example.seed).expect("seed");
            let run = vm.run(program, &packet.bytes, &[]).expect("vm run");
            let path = common::decisions(object, &run.steps);
            for end in 0..=path.len() {
                let exited = end == path.len();
                match checker.check_prefix(&path[..end]) {
                    Ok(verdict) => assert_eq!(
                        verdict,
                        PrefixVerdict::Holds { exited },
                        "{} line {}: prefix of {end} of {} decisions",
                        example.name(),
                        packet.line,
                        path.len()
                    ),
                    // What the engine does not model ends the example (as in the witness test).
                    Err(SmtError::Unsupported { .. } | SmtError::Sem(_)) => break 'packets,
                    Err(e) => panic!("{} line {}: {e}", example.name(), packet.line),
                }
                prefixes += 1;
            }
        }
    }
    assert!(prefixes > 300, "only {prefixes} prefixes checked");
}
