//! Zeroing removal (§3.1): the core zeroes registers and the stack at program start, so
//! initialising them to zero is redundant.
//!
//! - A store of zero (an immediate 0, or a register the analysis knows is 0) to stack bytes that
//!   no path from the entry may have written before is removed. "May have written" is a forward
//!   analysis over the bytes of the 512-byte frame; a store through a stack pointer of unknown
//!   offset, or a helper call that may receive a stack pointer, counts as writing the whole frame.
//! - Then `rX = 0` is removed where `rX` is dead after it, or where no path may have written `rX`
//!   before (`r1` and `r10` are set at entry; a call writes `r0`–`r5`).

use linerate_analysis::Region;
use linerate_bpf::facts::limits::STACK_FRAME_SIZE;
use linerate_bpf::insn::regs::RegSet;
use linerate_bpf::insn::{AluOp, Instruction, Operand, FRAME_POINTER};

use crate::isa::HxInsn;
use crate::program::{LInsn, Lowered};

use super::{live_out, SourceFacts};

const FRAME: usize = STACK_FRAME_SIZE as usize;
const WORDS: usize = FRAME / 64;

/// A set of frame bytes, byte `i` standing for offset `i - 512` from the frame pointer.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Bytes([u64; WORDS]);

impl Bytes {
    const NONE: Bytes = Bytes([0; WORDS]);
    const ALL: Bytes = Bytes([u64::MAX; WORDS]);

    fn union(self, other: Bytes) -> Bytes {
        Bytes(std::array::from_fn(|w| self.0[w] | other.0[w]))
    }

    /// The bytes `[start, start + len)` as frame-pointer offsets; `None` if any lies outside the
    /// frame.
    fn range(start: i128, len: u32) -> Option<Bytes> {
        let first = start.checked_add(FRAME as i128)?;
        let end = first.checked_add(len as i128)?;
        if first < 0 || end > FRAME as i128 {
            return None;
        }
        let mut out = Bytes::NONE;
        for b in first as usize..end as usize {
            out.0[b / 64] |= 1 << (b % 64);
        }
        Some(out)
    }

    fn meets(self, other: Bytes) -> bool {
        self.0.iter().zip(other.0).any(|(a, b)| a & b != 0)
    }
}

/// The frame bytes a store of `len` bytes at `base + off` writes, if the analysis places them
/// exactly; `Ok(None)` if it surely writes outside the stack, `Err(())` if it may write anywhere
/// in the frame.
fn stack_bytes(
    insn: &LInsn,
    facts: &SourceFacts,
    base: u8,
    off: i16,
    len: u32,
) -> Result<Option<Bytes>, ()> {
    match facts.pointer(insn, base) {
        Some((Region::Stack { .. }, offset)) => {
            let start = offset
                .constant()
                .ok_or(())?
                .checked_add(off as i128)
                .ok_or(())?;
            Bytes::range(start, len).map(Some).ok_or(())
        }
        Some(_) => Ok(None),
        None => Err(()),
    }
}

/// The frame bytes instruction `insn` may write.
fn writes_bytes(insn: &LInsn, facts: &SourceFacts) -> Bytes {
    let stored = match insn.insn {
        HxInsn::Ebpf(Instruction::Call(_)) => {
            let may_pass_stack = (1..=5u8).any(|r| facts.may_point_to_stack(insn, r));
            return if may_pass_stack {
                Bytes::ALL
            } else {
                Bytes::NONE
            };
        }
        _ => match insn.insn.memory() {
            Some(access) if access.writes => {
                stack_bytes(insn, facts, access.base, access.off as i16, access.len)
            }
            _ => return Bytes::NONE,
        },
    };
    match stored {
        Ok(Some(bytes)) => bytes,
        Ok(None) => Bytes::NONE,
        Err(()) => Bytes::ALL,
    }
}

/// For each instruction, the frame bytes some path from the entry may have written before it.
fn may_written_before(lowered: &Lowered, facts: &SourceFacts) -> Vec<Bytes> {
    let n = lowered.len();
    let writes: Vec<Bytes> = lowered
        .insns
        .iter()
        .map(|l| writes_bytes(l, facts))
        .collect();
    let mut before = vec![Bytes::NONE; n];
    let mut reached = vec![false; n];
    if n > 0 {
        reached[0] = true;
    }
    let mut changed = true;
    while changed {
        changed = false;
        for i in 0..n {
            if !reached[i] {
                continue;
            }
            let after = before[i].union(writes[i]);
            for s in lowered.successors(i) {
                let joined = before[s].union(after);
                if !reached[s] || joined != before[s] {
                    reached[s] = true;
                    before[s] = joined;
                    changed = true;
                }
            }
        }
    }
    before
}

/// The bytes a store of zero writes, if `insn` is one into the stack at an exact place.
fn zero_store(insn: &LInsn, facts: &SourceFacts) -> Option<Bytes> {
    let HxInsn::Ebpf(Instruction::Store {
        size,
        dst,
        off,
        src,
    }) = insn.insn
    else {
        return None;
    };
    let zero = match src {
        Operand::Imm(v) => v == 0,
        Operand::Reg(r) => facts.constant(insn, r) == Some(0),
    };
    if !zero {
        return None;
    }
    stack_bytes(insn, facts, dst, off, size.bytes())
        .ok()
        .flatten()
}

/// The register `insn` sets to zero, if it is `rX = 0` (either width: a 32-bit move clears the
/// upper half).
fn zero_move(insn: &HxInsn) -> Option<u8> {
    match *insn {
        HxInsn::Ebpf(Instruction::Alu {
            op: AluOp::Mov,
            dst,
            src: Operand::Imm(0),
            ..
        }) => Some(dst),
        _ => None,
    }
}

/// For each instruction, the registers some path from the entry may have written before it.
fn registers_written_before(lowered: &Lowered) -> Vec<RegSet> {
    let n = lowered.len();
    let entry: RegSet = (1 << 1) | (1 << FRAME_POINTER);
    let mut before: Vec<Option<RegSet>> = vec![None; n];
    if n > 0 {
        before[0] = Some(entry);
    }
    let mut changed = true;
    while changed {
        changed = false;
        for i in 0..n {
            let Some(b) = before[i] else { continue };
            let after = b | lowered.insns[i].insn.writes();
            for s in lowered.successors(i) {
                let joined = before[s].unwrap_or(0) | after;
                if before[s] != Some(joined) {
                    before[s] = Some(joined);
                    changed = true;
                }
            }
        }
    }
    before.into_iter().map(|b| b.unwrap_or(0)).collect()
}

pub(super) fn run(lowered: &mut Lowered, facts: &SourceFacts) -> usize {
    let written = may_written_before(lowered, facts);
    let stores: Vec<bool> = lowered
        .insns
        .iter()
        .zip(&written)
        .map(|(l, w)| zero_store(l, facts).is_some_and(|bytes| !bytes.meets(*w)))
        .collect();
    let mut removed = stores.iter().filter(|&&r| r).count();
    lowered.remove(&stores);

    let live = live_out(lowered, &[]);
    let set_before = registers_written_before(lowered);
    let moves: Vec<bool> = lowered
        .insns
        .iter()
        .enumerate()
        .map(|(i, l)| {
            zero_move(&l.insn).is_some_and(|r| {
                let bit: RegSet = 1 << r;
                live[i] & bit == 0 || set_before[i] & bit == 0
            })
        })
        .collect();
    removed += moves.iter().filter(|&&r| r).count();
    lowered.remove(&moves);
    removed
}
