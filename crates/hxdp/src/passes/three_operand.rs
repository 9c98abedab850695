//! Three-operand ALU operations (§3.2, Fig. 4): `rD = rS` (a 64-bit move) followed in the same
//! block by `rD op= imm` becomes `rD = rS op imm` where the extended ISA has that operation,
//! provided nothing in between reads or writes `rD` or writes `rS` (so the fused instruction,
//! put where the move was, computes the same value and nobody sees `rD` meanwhile).

use linerate_bpf::insn::{AluOp, Instruction, Operand};

use crate::isa::{alu3_opcode, HxInsn};
use crate::program::Lowered;

use super::SourceFacts;

pub(super) fn run(lowered: &mut Lowered, _facts: &SourceFacts) -> usize {
    let n = lowered.len();
    let blocks = lowered.block_ids();
    let mut remove = vec![false; n];
    for i in 0..n {
        let HxInsn::Ebpf(Instruction::Alu {
            wide: true,
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
                if alu_dst == dst && alu3_opcode(wide, op).is_some() {
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
