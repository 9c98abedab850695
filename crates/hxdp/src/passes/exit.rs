//! The parametrized exit (§3.2): `r0 = K` followed by `exit`, directly or through a `ja`,
//! becomes one `exit K`. The `exit` (or `ja`) it replaces is removed once nothing reaches it any
//! more; one that other code still jumps to stays.

use linerate_bpf::insn::{AluOp, Instruction, Operand};

use crate::isa::HxInsn;
use crate::program::Lowered;

use super::SourceFacts;

/// The action `insn` sets `r0` to, if it is `r0 = K` with the same meaning as `exit K` (whose
/// `r0` is the sign-extended immediate: a 32-bit move of a negative immediate differs).
fn sets_r0(insn: &HxInsn) -> Option<i32> {
    match *insn {
        HxInsn::Ebpf(Instruction::Alu {
            wide,
            op: AluOp::Mov,
            dst: 0,
            src: Operand::Imm(k),
        }) if wide || k >= 0 => Some(k),
        _ => None,
    }
}

fn is_plain_exit(insn: &HxInsn) -> bool {
    matches!(insn, HxInsn::Ebpf(Instruction::Exit))
}

pub(super) fn run(lowered: &mut Lowered, _facts: &SourceFacts) -> usize {
    let n = lowered.len();
    // Instructions a fused exit bypasses: removable once unreachable.
    let mut bypassed = vec![false; n];
    for i in 0..n.saturating_sub(1) {
        let Some(action) = sets_r0(&lowered.insns[i].insn) else {
            continue;
        };
        let next = i + 1;
        let exit_at = match lowered.insns[next].insn {
            HxInsn::Ebpf(Instruction::Exit) => next,
            HxInsn::Ebpf(Instruction::Ja { .. }) => match lowered.insns[next].target {
                Some(t) if t < n && is_plain_exit(&lowered.insns[t].insn) => t,
                _ => continue,
            },
            _ => continue,
        };
        bypassed[next] = true;
        bypassed[exit_at] = true;
        let mut from = lowered.insns[i].from.clone();
        from.extend(lowered.insns[exit_at].from.iter().copied());
        let fused = &mut lowered.insns[i];
        fused.insn = HxInsn::ExitWith(action);
        fused.from = from;
        fused.target = None;
    }
    let reachable = reachable(lowered);
    let remove: Vec<bool> = (0..n).map(|i| bypassed[i] && !reachable[i]).collect();
    lowered.remove(&remove);
    remove.iter().filter(|&&r| r).count()
}

/// Which instructions some path from the entry reaches.
fn reachable(lowered: &Lowered) -> Vec<bool> {
    let mut seen = vec![false; lowered.len()];
    let mut stack = vec![0usize];
    while let Some(i) = stack.pop() {
        if i >= seen.len() || seen[i] {
            continue;
        }
        seen[i] = true;
        stack.extend(lowered.successors(i));
    }
    seen
}
