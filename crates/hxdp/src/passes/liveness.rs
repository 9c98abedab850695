//! Register liveness over a [`Lowered`] program: which registers may still be read after each
//! instruction before being written again.

use linerate_bpf::insn::regs::RegSet;

use crate::program::Lowered;

/// The registers live after each instruction. Instructions `skip` marks are treated as doing
/// nothing (a pass that has decided to remove them asks about the program without them).
pub fn live_out(lowered: &Lowered, skip: &[bool]) -> Vec<RegSet> {
    let n = lowered.len();
    let skipped = |i: usize| skip.get(i).copied().unwrap_or(false);
    let successors: Vec<Vec<usize>> = (0..n)
        .map(|i| {
            if skipped(i) {
                if i + 1 < n {
                    vec![i + 1]
                } else {
                    Vec::new()
                }
            } else {
                lowered.successors(i)
            }
        })
        .collect();
    let mut live_in: Vec<RegSet> = vec![0; n];
    let mut out: Vec<RegSet> = vec![0; n];
    let mut changed = true;
    while changed {
        changed = false;
        for i in (0..n).rev() {
            let after = successors[i]
                .iter()
                .filter_map(|&s| live_in.get(s))
                .fold(0, |acc, &l| acc | l);
            let insn = &lowered.insns[i].insn;
            let before = if skipped(i) {
                after
            } else {
                (after & !insn.writes()) | insn.reads()
            };
            if after != out[i] || before != live_in[i] {
                out[i] = after;
                live_in[i] = before;
                changed = true;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isa::HxInsn;
    use crate::program::LInsn;
    use linerate_bpf::insn::build::{exit, mov64, mov64_reg};

    fn lowered(insns: &[linerate_bpf::insn::Instruction]) -> Lowered {
        Lowered {
            insns: insns
                .iter()
                .enumerate()
                .map(|(i, &insn)| LInsn {
                    insn: HxInsn::Ebpf(insn),
                    from: vec![i],
                    target: None,
                })
                .collect(),
            source_instructions: insns.len(),
        }
    }

    #[test]
    fn exit_keeps_r0_live_and_overwrites_kill() {
        let l = lowered(&[mov64(2, 1), mov64(2, 5), mov64_reg(0, 2), exit()]);
        let live = live_out(&l, &[]);
        assert_eq!(live[0] & (1 << 2), 0, "r2 is overwritten before it is read");
        assert_ne!(live[1] & (1 << 2), 0);
        assert_eq!(live[2], 1, "only r0 is live before exit");
        let skipping = live_out(&l, &[false, true, false, false]);
        assert_ne!(
            skipping[0] & (1 << 2),
            0,
            "without the overwrite r2 stays live"
        );
    }
}
