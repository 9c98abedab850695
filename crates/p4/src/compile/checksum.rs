//! `update_checksum` and `verify_checksum` (the architecture's RFC 1071 externs) as straight-line
//! ALU code: each list element is computed once, and the pieces of it that fall in each 16-bit
//! word of the concatenation (offsets known at compile time) are shifted into place and added to
//! an accumulator in `r1`, which is folded to 16 bits and complemented. No helper call
//! (`bpf_csum_diff` would need the data in memory), so `bound` sees every instruction.

use super::asm::Label;
use super::expr::{mask, Place};
use super::{CompileError, Gen};
use crate::ast::{Expr, ExprKind};
use linerate_bpf::insn::build::{alu64, alu64_reg, mov64, mov64_reg, stx};
use linerate_bpf::insn::{AluOp, Cond, Size};

/// 16-bit words a list may span: the 64-bit accumulator then stays below 2^32, so two folds
/// bring it to 16 bits.
const MAX_WORDS: u64 = 0xffff;

impl<'a> Gen<'a> {
    /// `if (condition) checksum = csum16(data)`.
    pub(super) fn update_checksum(
        &mut self,
        condition: &'a Expr,
        data: &'a Expr,
        checksum: &'a Expr,
    ) -> Result<(), CompileError> {
        let Place::Scalar(slot) = self.place(checksum)? else {
            return Err(self.unsupported(checksum.span, "a checksum that is not a field"));
        };
        let skip = self.code.label();
        self.hoist(condition, true)?;
        self.hoist(data, true)?;
        self.branch_if(condition, false, skip, 0)?;
        self.checksum(data)?;
        // The checksum is 16 bits.
        if slot.width < 16 {
            self.mask_reg(1, slot.width, 2);
        }
        self.emit(stx(Size::Dw, 10, slot.off, 1));
        self.code.place(skip);
        Ok(())
    }

    /// `if (condition && checksum != csum16(data))` reject.
    pub(super) fn verify_checksum(
        &mut self,
        condition: &'a Expr,
        data: &'a Expr,
        checksum: &'a Expr,
        reject: Label,
    ) -> Result<(), CompileError> {
        let skip = self.code.label();
        self.hoist(condition, true)?;
        self.hoist(data, true)?;
        self.hoist(checksum, true)?;
        self.branch_if(condition, false, skip, 0)?;
        self.checksum(data)?;
        self.expr(checksum, 1)?;
        self.code.branch_reg(Cond::Ne, 1, 2, reject);
        self.code.place(skip);
        Ok(())
    }

    /// `r1` = the RFC 1071 checksum of a list expression's elements (`r2`, `r3` and deeper
    /// registers clobbered).
    fn checksum(&mut self, data: &'a Expr) -> Result<(), CompileError> {
        let ExprKind::List(elements) = &data.kind else {
            return Err(self.unsupported(data.span, "checksum data that is not a list { ... }"));
        };
        let mut widths = Vec::new();
        for element in elements {
            widths.push(self.width(element)?);
        }
        let bits: u64 = widths.iter().map(|w| u64::from(*w)).sum();
        if bits.div_ceil(16) > MAX_WORDS {
            return Err(self.unsupported(data.span, "checksum data longer than 65535 words"));
        }
        self.emit(mov64(1, 0));
        let mut start = 0u64;
        for (element, width) in elements.iter().zip(widths) {
            self.expr(element, 1)?;
            let end = start + u64::from(width);
            // An element inside one word is shifted where it is; others piece by piece.
            let piece = if start / 16 == (end.max(1) - 1) / 16 {
                2
            } else {
                3
            };
            let mut word = start / 16;
            while word * 16 < end {
                // This word's bits [a, b) of the concatenation come from the element.
                let (a, b) = (start.max(word * 16), end.min(word * 16 + 16));
                let down = end - b;
                let up = word * 16 + 16 - b;
                let whole = down == 0 && a == start && up == 0;
                if whole {
                    self.emit(alu64_reg(AluOp::Add, 1, 2));
                } else {
                    if piece != 2 {
                        self.emit(mov64_reg(piece, 2));
                    }
                    if down > 0 {
                        self.emit(alu64(AluOp::Rsh, piece, down as i32));
                    }
                    if a != start {
                        self.emit(alu64(AluOp::And, piece, mask((b - a) as u32) as i32));
                    }
                    if up > 0 {
                        self.emit(alu64(AluOp::Lsh, piece, up as i32));
                    }
                    self.emit(alu64_reg(AluOp::Add, 1, piece));
                }
                word += 1;
            }
            start = end;
        }
        for _ in 0..2 {
            self.emit(mov64_reg(2, 1));
            self.emit(alu64(AluOp::Rsh, 2, 16));
            self.emit(alu64(AluOp::And, 1, 0xffff));
            self.emit(alu64_reg(AluOp::Add, 1, 2));
        }
        self.emit(alu64(AluOp::Xor, 1, 0xffff));
        Ok(())
    }
}
