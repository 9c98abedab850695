//! Putting rewritten windows back into a program: removed slots dropped, every jump, call and
//! function reference re-aimed through the slot map, functions, func_info and line_info moved.

use linerate_bpf::insn::{decode_all, encode_all, CallTarget, Imm64, Instruction};
use linerate_bpf::program::Program;

/// One window's rewrite: the slots it replaces and what they become (`None`: removed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rewrite {
    pub start: usize,
    pub original: Vec<Instruction>,
    pub replacement: Vec<Option<Instruction>>,
}

/// A program with its entry function rewritten, and where each old slot went.
#[derive(Clone, Debug)]
pub struct Assembled {
    pub program: Program,
    /// For each old slot of the entry function, its new slot (`None`: removed).
    pub slot_map: Vec<Option<usize>>,
    /// The entry function's new slots.
    pub entry_insns: Vec<linerate_bpf::insn::RawInsn>,
}

/// Why a rewrite cannot be assembled.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AssembleError {
    #[error("program {0} does not decode: {1}")]
    Decode(String, String),
    #[error("rewrite at slot {0} does not match the program's instructions there")]
    Mismatch(usize),
    #[error("jump at slot {0} leaves the program after rewriting")]
    Target(usize),
}

/// Applies `rewrites` (disjoint runs of instructions in the entry function; a 64-bit immediate
/// load in one is replaced by itself or removed) to `program`.
pub fn assemble(program: &Program, rewrites: &[Rewrite]) -> Result<Assembled, AssembleError> {
    let decoded = decode_all(&program.insns)
        .map_err(|e| AssembleError::Decode(program.name.clone(), e.to_string()))?;
    let total = program.insns.len();
    // What stands in each old slot: the instruction (or its replacement), or nothing.
    let mut at: Vec<Option<Option<Instruction>>> = vec![None; total];
    for (slot, insn) in &decoded {
        at[*slot] = Some(Some(*insn));
    }
    for r in rewrites {
        // A 64-bit immediate load in `original` (kept as it is: whole-program rewrites span
        // them) takes two slots.
        let mut slot = r.start;
        for (old, new) in r.original.iter().zip(&r.replacement) {
            if at.get(slot).copied().flatten() != Some(Some(*old)) {
                return Err(AssembleError::Mismatch(slot));
            }
            at[slot] = Some(*new);
            slot += old.slots();
        }
    }
    // New slot of each old slot: where the first kept instruction at or after it lands.
    let mut new_of = vec![0usize; total + 1];
    let mut kept = vec![false; total];
    let mut next = 0usize;
    for slot in 0..total {
        new_of[slot] = next;
        match at[slot] {
            Some(Some(insn)) => {
                kept[slot] = true;
                next += insn.slots();
            }
            Some(None) => {}
            // The second slot of a 64-bit immediate load: kept with the first, one after it, or
            // removed with it.
            None => {
                kept[slot] = slot > 0 && kept[slot - 1];
                if kept[slot] {
                    new_of[slot] = next.saturating_sub(1);
                }
            }
        }
    }
    new_of[total] = next;
    let mut out = Vec::with_capacity(next);
    for slot in 0..total {
        let Some(Some(insn)) = at[slot] else { continue };
        let retarget = |off: i64| -> Result<i64, AssembleError> {
            let target = slot as i64 + 1 + off;
            if target < 0 || target as usize > total {
                return Err(AssembleError::Target(slot));
            }
            Ok(new_of[target as usize] as i64 - (new_of[slot] as i64 + 1))
        };
        let fixed = match insn {
            Instruction::Ja { off, .. } => {
                with_off(insn, retarget(off as i64)?).ok_or(AssembleError::Target(slot))?
            }
            Instruction::Jump { off, .. } => {
                with_off(insn, retarget(i64::from(off))?).ok_or(AssembleError::Target(slot))?
            }
            Instruction::MayGoto { off } => Instruction::MayGoto {
                off: i16::try_from(retarget(off as i64)?)
                    .map_err(|_| AssembleError::Target(slot))?,
            },
            Instruction::Call(CallTarget::Local(off)) => {
                Instruction::Call(CallTarget::Local(retarget(off as i64)? as i32))
            }
            Instruction::LoadImm64 {
                dst,
                imm: Imm64::Pseudo { src, imm, next_imm },
            } if src == linerate_bpf::insn::pseudo::FUNC => Instruction::LoadImm64 {
                dst,
                imm: Imm64::Pseudo {
                    src,
                    imm: retarget(imm as i64)? as i32,
                    next_imm,
                },
            },
            other => other,
        };
        out.push(fixed);
    }
    let insns = encode_all(&out);
    let entry_len = program.functions.first().map_or(total, |f| f.len);
    let slot_map: Vec<Option<usize>> = (0..entry_len)
        .map(|s| kept[s].then_some(new_of[s]))
        .collect();
    let mut new = program.clone();
    let entry_new_len = new_of[entry_len];
    new.insns = insns;
    for f in &mut new.functions {
        let end = f.start + f.len;
        f.start = new_of[f.start];
        f.len = new_of[end.min(total)] - f.start;
    }
    for fi in &mut new.func_info {
        fi.slot = new_of[fi.slot.min(total)];
    }
    // A removed slot's line record moves to the next kept slot unless that has its own (the
    // object writer's rule): of the records landing on one slot, the last one stays.
    for l in &mut new.line_info {
        l.slot = new_of[l.slot.min(total)];
    }
    new.line_info.reverse();
    new.line_info.dedup_by_key(|l| l.slot);
    new.line_info.reverse();
    Ok(Assembled {
        entry_insns: new.insns[..entry_new_len].to_vec(),
        program: new,
        slot_map,
    })
}

/// The jump `insn` with offset `off` (`None` when it does not fit the encoding); any other
/// instruction as it is.
pub(crate) fn with_off(insn: Instruction, off: i64) -> Option<Instruction> {
    match insn {
        Instruction::Ja { long, .. } => Some(Instruction::Ja {
            off: i32::try_from(off).ok()?,
            long,
        }),
        Instruction::Jump {
            wide,
            cond,
            dst,
            src,
            ..
        } => Some(Instruction::Jump {
            wide,
            cond,
            dst,
            src,
            off: i16::try_from(off).ok()?,
        }),
        other => Some(other),
    }
}
