//! Reloads (a linerate addition): a load of a stack slot that the same path stored a register or
//! an immediate to, with nothing in between that may write the slot or the register, becomes a
//! register operation on what was stored. The load then waits for the stored register only (the
//! next row, in its lane), not for the store to commit (two rows), and where it only copies a
//! register into itself it goes. Compilers spill and reload this way around branches.
//!
//! What the load would read is exactly what the store wrote, zero-extended: the low `size` bytes
//! of the stored value. So a reload of 8 bytes is `rX = rY`, of 4 bytes `wX = wY` (a 32-bit move
//! zero-extends), of 2 or 1 bytes `rX = rY & 0xffff` or `& 0xff`. Where the analysis knows the
//! stored register's value fits the slot, it is `rX = rY`, nothing at all when `X` is `Y`. An
//! immediate stored is reloaded as the constant the slot holds.
//!
//! "The same path": walking back from the load, an instruction is crossed into only where control
//! can come from nothing else (the instruction after it is no jump target and it falls through).
//! Calls stop the walk (a helper may write the stack through a pointer argument), as does any
//! store that may overlap the slot.

use linerate_analysis::{Region, Shape};
use linerate_bpf::insn::regs::RegSet;
use linerate_bpf::insn::{AluOp, Instruction, Operand, Reg, Size};

use crate::deps::{may_overlap, Place};
use crate::isa::HxInsn;
use crate::program::{LInsn, Lowered};

use super::SourceFacts;

/// What a store put in a slot.
#[derive(Clone, Copy)]
enum Stored {
    Register(Reg),
    Immediate(i32),
}

/// The stack slot an access touches, if the analysis knows it exactly.
fn exact_stack_slot(place: Place, len: i128) -> Option<Place> {
    match (place.region, place.bytes) {
        (Some(Region::Stack { depth: Some(_) }), Some((lo, hi))) if hi - lo == len => Some(place),
        _ => None,
    }
}

/// The store that put the value a load of `slot` at `load` reads, walking back along the one
/// path into it: its index and what it stored.
fn feeding_store(
    lowered: &Lowered,
    facts: &SourceFacts,
    targeted: &[bool],
    load: usize,
    slot: Place,
    size: Size,
) -> Option<(usize, Stored)> {
    let mut written: RegSet = 0;
    let mut at = load;
    while at > 0 && !targeted[at] && lowered.falls_through(at - 1) {
        at -= 1;
        let l = &lowered.insns[at];
        if l.insn.is_call() {
            return None;
        }
        if let HxInsn::Ebpf(Instruction::Store {
            size: store_size,
            src,
            ..
        }) = l.insn
        {
            let place = facts.place(&l.insn, &l.from);
            if exact_stack_slot(place, size.bytes() as i128) == Some(slot) && store_size == size {
                let stored = match src {
                    Operand::Reg(r) if written & (1 << r) == 0 => Stored::Register(r),
                    Operand::Reg(_) => return None,
                    Operand::Imm(k) => Stored::Immediate(k),
                };
                return Some((at, stored));
            }
        }
        if let Some(access) = l.insn.memory() {
            if access.writes && may_overlap(&facts.place(&l.insn, &l.from), &slot) {
                return None;
            }
        }
        written |= l.insn.writes();
    }
    None
}

/// Whether the analysis knows register `r`'s value in front of `store` fits in `size` bytes.
fn fits(facts: &SourceFacts, store: &LInsn, r: Reg, size: Size) -> bool {
    let Some(state) = facts.before(store) else {
        return false;
    };
    match state.regs.get(r as usize).map(|v| v.shape) {
        Some(Shape::Scalar(iv)) => iv.lo >= 0 && iv.hi < 1i128 << (8 * size.bytes()),
        _ => false,
    }
}

/// What replaces a load of `size` bytes into `dst` of what a store put there; `None` where the
/// load can simply go.
fn replacement(dst: Reg, stored: Stored, size: Size, value_fits: bool) -> Option<HxInsn> {
    let mov = |wide: bool, src: Operand| Instruction::Alu {
        wide,
        op: AluOp::Mov,
        dst,
        src,
    };
    let mask = match size {
        Size::B => 0xff,
        Size::H => 0xffff,
        Size::W | Size::Dw => 0,
    };
    Some(match stored {
        Stored::Immediate(k) => HxInsn::Ebpf(match size {
            // An 8-byte store sign-extends the immediate, as a 64-bit move does.
            Size::Dw => mov(true, Operand::Imm(k)),
            Size::W => mov(false, Operand::Imm(k)),
            Size::H | Size::B => mov(true, Operand::Imm(k & mask)),
        }),
        Stored::Register(src) if value_fits || size == Size::Dw => {
            if src == dst {
                return None;
            }
            HxInsn::Ebpf(mov(true, Operand::Reg(src)))
        }
        Stored::Register(src) if size == Size::W => HxInsn::Ebpf(mov(false, Operand::Reg(src))),
        Stored::Register(src) if src == dst => HxInsn::Ebpf(Instruction::Alu {
            wide: true,
            op: AluOp::And,
            dst,
            src: Operand::Imm(mask),
        }),
        Stored::Register(src) => HxInsn::Alu3 {
            wide: true,
            op: AluOp::And,
            dst,
            src,
            imm: mask,
        },
    })
}

pub(super) fn run(lowered: &mut Lowered, facts: &SourceFacts) -> usize {
    let n = lowered.len();
    let mut targeted = vec![false; n];
    for l in &lowered.insns {
        if let Some(t) = l.target {
            targeted[t] = true;
        }
    }
    let mut gone = Vec::new();
    for i in 0..n {
        let HxInsn::Ebpf(Instruction::Load {
            size,
            signed: false,
            dst,
            ..
        }) = lowered.insns[i].insn
        else {
            continue;
        };
        let place = facts.place(&lowered.insns[i].insn, &lowered.insns[i].from);
        let Some(slot) = exact_stack_slot(place, size.bytes() as i128) else {
            continue;
        };
        let Some((store, stored)) = feeding_store(lowered, facts, &targeted, i, slot, size) else {
            continue;
        };
        let value_fits = match stored {
            Stored::Register(r) => fits(facts, &lowered.insns[store], r, size),
            Stored::Immediate(_) => false,
        };
        match replacement(dst, stored, size, value_fits) {
            Some(insn) => lowered.insns[i].insn = insn,
            None => gone.push(i),
        }
    }
    let mut remove = vec![false; n];
    for &i in &gone {
        remove[i] = true;
    }
    lowered.remove(&remove);
    gone.len()
}
