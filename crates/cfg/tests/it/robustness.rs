//! Arbitrary control flow never panics the builder, and big programs do not exhaust the stack.

use crate::common;

use common::*;
use linerate_bpf::insn::{Cond, Instruction};
use linerate_bpf::program::Function;
use linerate_cfg::Cfg;
use proptest::prelude::*;

fn instruction() -> impl Strategy<Value = Instruction> {
    prop_oneof![
        (0u8..10, -3i32..3).prop_map(|(r, v)| mov64(r, v)),
        (-12i16..12).prop_map(ja),
        (0u8..10, -12i16..12).prop_map(|(r, off)| jmp(Cond::Ne, r, 0, off)),
        (-12i32..12).prop_map(call_local),
        (-12i32..12).prop_map(|off| ld_func(1, off)),
        any::<u64>().prop_map(|v| ld64(2, v)),
        Just(exit()),
        Just(exit()),
    ]
}

proptest! {
    #[test]
    fn build_never_panics(
        insns in prop::collection::vec(instruction(), 1..40),
        cuts in prop::collection::vec(0usize..80, 0..3),
    ) {
        let mut p = single(insns);
        let slots = p.insns.len();
        let mut starts: Vec<usize> = cuts.into_iter().map(|c| c % slots).chain([0]).collect();
        starts.sort_unstable();
        starts.dedup();
        p.functions = starts
            .iter()
            .enumerate()
            .map(|(i, &start)| Function {
                name: format!("f{i}"),
                start,
                len: starts.get(i + 1).copied().unwrap_or(slots) - start,
            })
            .collect();
        if let Ok(cfg) = Cfg::build(&p) {
            for s in 0..slots {
                prop_assert!(cfg.block_of(s).is_some());
            }
            let _ = cfg.summary();
            let _ = cfg.to_dot();
            for f in 0..cfg.functions().len() {
                let _ = cfg.longest_path_with_calls(f);
            }
        }
    }
}

#[test]
fn long_chain_of_branches() {
    const N: usize = 50_000;
    let mut insns = vec![jmp(Cond::Eq, 1, 0, 0); N];
    insns.push(exit());
    let cfg = Cfg::build(&single(insns)).unwrap();
    assert_eq!((cfg.blocks().len(), cfg.edges().len()), (N + 1, 2 * N));
    assert_eq!(cfg.idom(N), Some(N - 1));
    assert_eq!(cfg.longest_path(0).map(|p| p.insns), Some(N as u64 + 1));
}

#[test]
fn long_loop_nest() {
    // N nested self-contained loops: each header jumps back from the end of its body.
    const N: usize = 500;
    let mut insns = Vec::new();
    for _ in 0..N {
        insns.push(add64(1, 1));
    }
    for i in 0..N {
        // Back to the start of loop N-1-i: slot N-1-i, from slot N+i.
        let off = (N - 1 - i) as i64 - (N + i) as i64 - 1;
        insns.push(jmp(Cond::Ne, 1, 0, off as i16));
    }
    insns.push(exit());
    let cfg = Cfg::build(&single(insns)).unwrap();
    assert_eq!(cfg.max_loop_depth(), N);
    assert_eq!(cfg.functions()[0].loops().len(), N);
}
