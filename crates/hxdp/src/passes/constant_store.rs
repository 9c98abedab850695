//! Constant stores: `rX = K` followed in the same block by a store of `rX` becomes a store of
//! the immediate `K` (eBPF's `*(size *)(dst + off) = K`), and the move goes once nothing reads
//! `rX` any more. The store then waits for nothing: the key of a map lookup is stored a row
//! earlier, and its helper call with it.
//!
//! The stored bytes are the same: a store of 1, 2 or 4 bytes takes the low bytes, which a 64-bit
//! and a 32-bit move of `K` agree on; an 8-byte store sign-extends `K`, which a 32-bit move (it
//! zero-extends) matches only for `K >= 0`.

use linerate_bpf::insn::{AluOp, Instruction, Operand, Size};

use crate::isa::HxInsn;
use crate::program::Lowered;

use super::{live_out, SourceFacts};

/// The constant a move of an immediate leaves in its register, as a store of `size` would write
/// it as an immediate, if it can.
fn as_store_immediate(mov: &HxInsn, size: Size) -> Option<i32> {
    let HxInsn::Ebpf(Instruction::Alu {
        wide,
        op: AluOp::Mov,
        src: Operand::Imm(k),
        ..
    }) = *mov
    else {
        return None;
    };
    (size != Size::Dw || wide || k >= 0).then_some(k)
}

pub(super) fn run(lowered: &mut Lowered, _facts: &SourceFacts) -> usize {
    let n = lowered.len();
    let blocks = lowered.block_ids();
    let mut moves = Vec::new();
    for j in 0..n {
        let HxInsn::Ebpf(Instruction::Store {
            size,
            dst,
            off,
            src: Operand::Reg(r),
        }) = lowered.insns[j].insn
        else {
            continue;
        };
        // The last instruction before the store, in its block, that writes the register.
        let writer = (0..j)
            .rev()
            .take_while(|&i| blocks[i] == blocks[j])
            .find(|&i| lowered.insns[i].insn.writes() & (1 << r) != 0);
        let Some(i) = writer else { continue };
        let Some(k) = as_store_immediate(&lowered.insns[i].insn, size) else {
            continue;
        };
        lowered.insns[j].insn = HxInsn::Ebpf(Instruction::Store {
            size,
            dst,
            off,
            src: Operand::Imm(k),
        });
        moves.push(i);
    }
    let live = live_out(lowered, &[]);
    let mut remove = vec![false; n];
    for i in moves {
        remove[i] = lowered.insns[i].insn.writes() & live[i] == 0;
    }
    lowered.remove(&remove);
    remove.iter().filter(|&&r| r).count()
}
