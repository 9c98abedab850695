//! Register liveness over a [`Lowered`] program: which registers hold a value some path still
//! reads. The scheduler asks it whether an instruction may execute speculatively (its result must
//! be dead where an earlier branch goes) and the register renamer which registers are free.

use linerate_bpf::insn::regs::RegSet;

use crate::program::Lowered;

/// Registers live after each instruction and at its entry.
#[derive(Clone, Debug)]
pub struct Liveness {
    /// Live on entry to instruction `i`.
    pub live_in: Vec<RegSet>,
    /// Live after instruction `i` (on entry to any successor).
    pub live_out: Vec<RegSet>,
}

impl Liveness {
    /// Solves the backward dataflow problem to its fixpoint. An exit reads r0 (the action), and
    /// nothing is live after it.
    pub fn of(program: &Lowered) -> Liveness {
        Liveness::skipping(program, &[])
    }

    /// [`Liveness::of`] with the instructions `skip` marks treated as doing nothing (a pass that
    /// has decided to remove them asks about the program without them).
    pub fn skipping(program: &Lowered, skip: &[bool]) -> Liveness {
        let n = program.len();
        let skipped = |i: usize| skip.get(i).copied().unwrap_or(false);
        let successors: Vec<Vec<usize>> = (0..n)
            .map(|i| {
                if !skipped(i) {
                    program.successors(i)
                } else if i + 1 < n {
                    vec![i + 1]
                } else {
                    Vec::new()
                }
            })
            .collect();
        let mut live_in = vec![0 as RegSet; n];
        let mut live_out = vec![0 as RegSet; n];
        let mut changed = true;
        while changed {
            changed = false;
            for i in (0..n).rev() {
                let out = successors[i]
                    .iter()
                    .fold(0 as RegSet, |acc, &s| acc | live_in[s]);
                let insn = &program.insns[i].insn;
                let inn = if skipped(i) {
                    out
                } else {
                    insn.reads() | (out & !insn.writes())
                };
                if out != live_out[i] || inn != live_in[i] {
                    live_out[i] = out;
                    live_in[i] = inn;
                    changed = true;
                }
            }
        }
        Liveness { live_in, live_out }
    }
}

/// The registers live after each instruction, `skip`ped instructions doing nothing.
pub fn live_out(program: &Lowered, skip: &[bool]) -> Vec<RegSet> {
    Liveness::skipping(program, skip).live_out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isa::HxInsn;
    use crate::program::LInsn;
    use linerate_bpf::insn::{AluOp, Instruction, Operand};

    fn plain(insn: Instruction) -> LInsn {
        LInsn {
            insn: HxInsn::Ebpf(insn),
            from: vec![],
            target: None,
        }
    }

    #[test]
    fn a_value_overwritten_before_use_is_dead() {
        let mov = |dst, imm| Instruction::Alu {
            wide: true,
            op: AluOp::Mov,
            dst,
            src: Operand::Imm(imm),
        };
        let program = Lowered {
            insns: vec![
                plain(mov(2, 1)),
                plain(mov(2, 2)),
                plain(Instruction::Alu {
                    wide: true,
                    op: AluOp::Mov,
                    dst: 0,
                    src: Operand::Reg(2),
                }),
                plain(Instruction::Exit),
            ],
            source_instructions: 4,
        };
        let l = Liveness::of(&program);
        assert_eq!(l.live_out[0] & (1 << 2), 0);
        assert_ne!(l.live_out[1] & (1 << 2), 0);
        assert_eq!(l.live_in[3], 1);
        let skipping = live_out(&program, &[false, true, false, false]);
        assert_ne!(
            skipping[0] & (1 << 2),
            0,
            "without the overwrite r2 stays live"
        );
    }
}
