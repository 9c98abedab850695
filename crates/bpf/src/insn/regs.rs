//! Which registers an instruction reads and writes: the operand structure a liveness analysis or
//! a register allocator needs, not what the instruction computes (that is `linerate-sem`).
//!
//! Sets are bit masks, bit `i` for register `ri`. A call reads its argument registers r1–r5 (all
//! five: how many a helper takes is not the encoding's business) and writes r0–r5, r1–r5 left
//! unreadable as the calling convention says (`Documentation/bpf/standard/abi.rst`).

use super::{Instruction, Operand, Reg};

/// A set of registers as a bit mask.
pub type RegSet = u16;

/// r1–r5, the argument registers a call reads and clobbers.
pub const ARGUMENT_REGS: RegSet = 0b11_1110;
/// r0, the return value register.
pub const RETURN_REG: RegSet = 0b1;

fn bit(r: Reg) -> RegSet {
    1 << r
}

/// The registers in `set`, lowest first, as indices into a register file.
pub fn members(set: RegSet) -> impl Iterator<Item = usize> {
    (0..super::NUM_REGS).filter(move |&r| set & (1 << r) != 0)
}

fn operand(src: Operand) -> RegSet {
    match src {
        Operand::Reg(r) => bit(r),
        Operand::Imm(_) => 0,
    }
}

impl Instruction {
    /// Registers whose value the instruction reads.
    pub fn reads(&self) -> RegSet {
        use super::AluOp;
        match *self {
            Instruction::Alu {
                op: AluOp::Mov | AluOp::MovSx(_),
                src,
                ..
            } => operand(src),
            Instruction::Alu {
                op: AluOp::Neg,
                dst,
                ..
            } => bit(dst),
            Instruction::Alu { dst, src, .. } => bit(dst) | operand(src),
            Instruction::Endian { dst, .. } => bit(dst),
            Instruction::LoadImm64 { .. }
            | Instruction::Ja { .. }
            | Instruction::MayGoto { .. } => 0,
            Instruction::Load { src, .. } => bit(src),
            Instruction::Store { dst, src, .. } => bit(dst) | operand(src),
            // A compare-and-exchange compares with r0.
            Instruction::Atomic {
                op: super::AtomicOp::CmpXchg,
                dst,
                src,
                ..
            } => bit(dst) | bit(src) | RETURN_REG,
            Instruction::Atomic { dst, src, .. } => bit(dst) | bit(src),
            // LD_ABS/LD_IND read the context from r6 and, indirect, an offset register.
            Instruction::LegacyPacketLoad { indirect, src, .. } => {
                bit(6) | if indirect { bit(src) } else { 0 }
            }
            Instruction::Jump { dst, src, .. } => bit(dst) | operand(src),
            Instruction::Call(_) => ARGUMENT_REGS,
            Instruction::Exit => RETURN_REG,
        }
    }

    /// Registers the instruction writes (or leaves unreadable: a call's r1–r5).
    pub fn writes(&self) -> RegSet {
        use super::AtomicOp;
        match *self {
            Instruction::Alu { dst, .. }
            | Instruction::Endian { dst, .. }
            | Instruction::LoadImm64 { dst, .. }
            | Instruction::Load { dst, .. } => bit(dst),
            Instruction::Atomic {
                op: AtomicOp::CmpXchg,
                ..
            } => RETURN_REG,
            Instruction::Atomic { fetch, src, .. } => {
                if fetch {
                    bit(src)
                } else {
                    0
                }
            }
            // LD_ABS/LD_IND set r0 and clobber r1–r5 like a call.
            Instruction::LegacyPacketLoad { .. } | Instruction::Call(_) => {
                RETURN_REG | ARGUMENT_REGS
            }
            Instruction::Store { .. }
            | Instruction::Ja { .. }
            | Instruction::MayGoto { .. }
            | Instruction::Jump { .. }
            | Instruction::Exit => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::insn::build::{add64_reg, call_helper, exit, ldx, mov64, stx};
    use crate::insn::Size;

    #[test]
    fn operands_are_read_and_destinations_written() {
        assert_eq!(add64_reg(1, 2).reads(), 0b110);
        assert_eq!(add64_reg(1, 2).writes(), 0b10);
        assert_eq!(mov64(3, 7).reads(), 0);
        assert_eq!(ldx(Size::W, 4, 1, 0).reads(), 0b10);
        assert_eq!(ldx(Size::W, 4, 1, 0).writes(), 0b1_0000);
        assert_eq!(stx(Size::W, 10, -4, 2).reads(), 0b100_0000_0100);
        assert_eq!(call_helper(1).writes(), 0b11_1111);
        assert_eq!(exit().reads(), 1);
    }
}
