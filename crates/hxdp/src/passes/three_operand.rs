//! Three-operand ALU operations (§3.2, Fig. 4): `rD = rS` followed in the same block by
//! `rD op= imm` becomes `rD = rS op imm` where the extended ISA has that operation, provided
//! nothing in between reads or writes `rD` or writes `rS` (so the fused instruction, put where the
//! move was, computes the same value and nobody sees `rD` meanwhile).
//!
//! The move may be 32-bit where the operation is too: a 32-bit operation reads only the low half
//! its move kept. A 32-bit AND, which has no three-operand encoding, becomes the 64-bit one where
//! its mask is not negative: both clear the upper half and agree on the lower.

use linerate_bpf::insn::{AluOp, Instruction, Operand};

use crate::isa::{alu3_opcode, HxInsn};
use crate::program::Lowered;

use super::SourceFacts;

/// The width and operation of the three-operand instruction that does what a move of width
/// `mov_wide` followed by `op` of width `wide` with immediate `imm` does, if the ISA has one.
fn fused(mov_wide: bool, wide: bool, op: AluOp, imm: i32) -> Option<(bool, AluOp)> {
    if wide && !mov_wide {
        // The 64-bit operation would see the upper half the 32-bit move cleared.
        return None;
    }
    if alu3_opcode(wide, op).is_some() {
        return Some((wide, op));
    }
    (!wide && op == AluOp::And && imm >= 0).then_some((true, AluOp::And))
}

pub(super) fn run(lowered: &mut Lowered, _facts: &SourceFacts) -> usize {
    let n = lowered.len();
    let blocks = lowered.block_ids();
    let mut remove = vec![false; n];
    for i in 0..n {
        let HxInsn::Ebpf(Instruction::Alu {
            wide: mov_wide,
            op: AluOp::Mov,
            dst,
            src: Operand::Reg(src),
        }) = lowered.insns[i].insn
        else {
            continue;
        };
        if dst == src || remove[i] {
            continue;
        }
        let (d, s) = (1u16 << dst, 1u16 << src);
        for j in i + 1..n {
            if blocks[j] != blocks[i] || remove[j] {
                break;
            }
            let insn = lowered.insns[j].insn;
            if let HxInsn::Ebpf(Instruction::Alu {
                wide,
                op,
                dst: alu_dst,
                src: Operand::Imm(imm),
            }) = insn
            {
                let form = fused(mov_wide, wide, op, imm).filter(|_| alu_dst == dst);
                if let Some((wide, op)) = form {
                    let mut from = lowered.insns[i].from.clone();
                    from.extend(lowered.insns[j].from.iter().copied());
                    lowered.insns[i].insn = HxInsn::Alu3 {
                        wide,
                        op,
                        dst,
                        src,
                        imm,
                    };
                    lowered.insns[i].from = from;
                    remove[j] = true;
                    break;
                }
            }
            if (insn.reads() | insn.writes()) & d != 0 || insn.writes() & s != 0 {
                break;
            }
        }
    }
    lowered.remove(&remove);
    remove.iter().filter(|&&r| r).count()
}
