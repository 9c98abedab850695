//! Every malformed control flow [`Cfg::build`] rejects, with its one-line message.

use crate::common;

use common::*;
use linerate_bpf::insn::{Cond, RawInsn};
use linerate_bpf::program::Function;
use linerate_cfg::{Cfg, CfgError};

fn error(p: &linerate_bpf::Program) -> CfgError {
    let e = Cfg::build(p).unwrap_err();
    assert!(!e.to_string().contains('\n'), "{e}");
    e
}

#[test]
fn jump_past_the_end() {
    let e = error(&single(vec![ja(5), exit()]));
    assert!(
        matches!(
            e,
            CfgError::JumpOutOfFunction {
                slot: 0,
                target: 6,
                start: 0,
                end: 2,
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "jump at insn 0 (goto +0x5) targets insn 6, outside function main (insns 0..2)"
    );
}

#[test]
fn jump_before_the_start() {
    let e = error(&single(vec![jmp(Cond::Eq, 1, 0, -3), exit()]));
    assert!(
        matches!(
            e,
            CfgError::JumpOutOfFunction {
                slot: 0,
                target: -2,
                ..
            }
        ),
        "{e:?}"
    );
}

#[test]
fn jump_into_another_function() {
    let e = error(&program(&[
        ("main", vec![call_local(1), ja(1), exit()]),
        ("sub", vec![mov64(0, 0), exit()]),
    ]));
    assert!(
        matches!(&e, CfgError::JumpOutOfFunction { slot: 1, target: 3, function, .. } if function == "main"),
        "{e:?}"
    );
}

#[test]
fn jump_into_a_wide_load() {
    let e = error(&single(vec![ja(1), ld64(0, 1), exit()]));
    assert_eq!(
        e,
        CfgError::JumpIntoImm64 {
            slot: 0,
            insn: "goto +0x1".into(),
            target: 2
        }
    );
}

#[test]
fn falling_off_the_end() {
    let e = error(&single(vec![mov64(0, 0)]));
    assert!(matches!(&e, CfgError::FallsOffEnd { slot: 0, function, .. } if function == "main"));
    assert_eq!(
        e.to_string(),
        "insn 0 (r0 = 0x0) falls off the end of function main without an exit"
    );
}

#[test]
fn conditional_jump_at_the_end_falls_off() {
    let e = error(&single(vec![mov64(0, 0), jmp(Cond::Eq, 0, 0, -2)]));
    assert!(matches!(e, CfgError::FallsOffEnd { slot: 1, .. }), "{e:?}");
}

#[test]
fn function_falling_into_the_next() {
    let e = error(&program(&[
        ("main", vec![call_local(0), mov64(0, 0)]),
        ("sub", vec![exit()]),
    ]));
    assert!(matches!(e, CfgError::FallsOffEnd { slot: 1, .. }), "{e:?}");
}

#[test]
fn call_into_the_middle_of_a_function() {
    let e = error(&program(&[
        ("main", vec![call_local(2), exit()]),
        ("sub", vec![mov64(0, 0), exit()]),
    ]));
    assert_eq!(
        e,
        CfgError::CallToNonFunction {
            what: "call",
            slot: 0,
            target: 3
        }
    );
    assert_eq!(
        e.to_string(),
        "call at insn 0 targets insn 3, which does not start a function"
    );
}

#[test]
fn call_outside_the_program() {
    let e = error(&single(vec![call_local(-5), exit()]));
    assert!(
        matches!(e, CfgError::CallToNonFunction { target: -4, .. }),
        "{e:?}"
    );
}

#[test]
fn function_address_of_a_non_function() {
    let e = error(&single(vec![ld_func(1, 0), exit()]));
    assert_eq!(
        e,
        CfgError::CallToNonFunction {
            what: "function address load",
            slot: 0,
            target: 1
        }
    );
}

#[test]
fn undecodable_slot() {
    let mut p = single(vec![mov64(0, 0), exit()]);
    p.insns[0] = RawInsn {
        code: 0xff,
        ..RawInsn::default()
    };
    assert!(matches!(error(&p), CfgError::Decode(_)));
}

#[test]
fn empty_program() {
    assert_eq!(error(&program(&[])), CfgError::Empty);
}

#[test]
fn bad_function_tables() {
    let base = program(&[
        ("main", vec![ld64(0, 1), exit()]),
        ("sub", vec![mov64(0, 0), exit()]),
    ]);
    let with = |functions: Vec<(&str, usize, usize)>| {
        let mut p = base.clone();
        p.functions = functions
            .into_iter()
            .map(|(name, start, len)| Function {
                name: name.into(),
                start,
                len,
            })
            .collect();
        error(&p)
    };
    let reason = |e: CfgError| match e {
        CfgError::InvalidFunction { function, reason } => format!("{function}: {reason}"),
        other => panic!("unexpected {other:?}"),
    };
    assert_eq!(
        reason(with(vec![("main", 0, 3), ("sub", 3, 3)])),
        "sub: extent 3+3 exceeds the program's 5 slots"
    );
    assert_eq!(
        reason(with(vec![("main", 0, 1), ("sub", 1, 4)])),
        "main: ends at insn 1, inside a 64-bit immediate load"
    );
    assert_eq!(
        reason(with(vec![("main", 0, 3), ("sub", 3, 0)])),
        "sub: has no instructions"
    );
    assert_eq!(
        reason(with(vec![("main", 0, 4), ("sub", 3, 2)])),
        "sub: starts at insn 3, inside another function"
    );
    assert_eq!(
        reason(with(vec![("main", 0, 3), ("sub", 4, 1)])),
        "sub: starts at insn 4, leaving insns 3..4 in no function"
    );
    assert_eq!(
        reason(with(vec![("main", 0, 3)])),
        "main: insns 3..5 belong to no function"
    );
}
