//! Which header fields the generated program needs, and which stack slots must start at zero.
//!
//! The compiler generates the program twice. The first pass extracts every field and writes
//! every field back; its code says which field slots the program reads (a load from the slot
//! before the deparser: expressions, keys, checksums, `select`, a slice assignment's old value, a
//! header copy) and which it changes (a store to the slot before the deparser, other than the
//! parser's extracts: assignments, checksum outputs, register reads, action parameters bound
//! into fields, header copies). That is a [`FieldPlan`]: the second pass writes back only the
//! changed fields (in the windows [`super::wide::store_windows`] chooses) and extracts only the
//! fields read or written back. A program that resizes the packet writes every emitted header
//! anew, so every field stays live there.
//!
//! [`must_zero`] then runs over the second pass's instructions: a stack slot loaded on some path
//! before an 8-byte store defines it must start at zero (the interpreter's initial state: a
//! header not extracted reads as zero, metadata starts zeroed); only those slots are zeroed by
//! the prologue.

use super::asm::Assembly;
use super::storage::Frame;
use super::wide::{overlapping, store_windows};
use linerate_bpf::insn::{Instruction, Size};
use std::collections::{HashMap, HashSet};
use std::ops::Range;

/// The fields the second pass extracts (`live`) and writes back (`changed`), by slot offset.
#[derive(Debug, Clone, Default)]
pub(crate) struct FieldPlan {
    pub live: HashSet<i16>,
    pub changed: HashSet<i16>,
    /// Validity slots something other than an extract may set (`setValid`, a header copy):
    /// such a header can be valid without having been extracted.
    pub validated: HashSet<i16>,
}

fn bytes(size: Size) -> i16 {
    match size {
        Size::B => 1,
        Size::H => 2,
        Size::W => 4,
        Size::Dw => 8,
    }
}

/// The plan from the first pass's code: `before_deparser` is its items up to the deparser,
/// `extracts` the items that store extracted fields.
pub(crate) fn plan(
    frame: &Frame,
    code: &Assembly,
    before_deparser: usize,
    extracts: &[Range<usize>],
    resizing: bool,
) -> FieldPlan {
    let fields: Vec<i16> = frame
        .headers
        .iter()
        .flat_map(|h| h.fields.iter().map(|(_, s)| s.off))
        .collect();
    let valid_slots: HashSet<i16> = frame.headers.iter().map(|h| h.valid).collect();
    let mut validated = HashSet::new();
    for (index, insn) in code.insns() {
        if extracts.iter().any(|r| r.contains(&index)) {
            continue;
        }
        match *insn {
            // Clearing a flag (`setInvalid`) makes nothing valid.
            Instruction::Store {
                dst: 10,
                src: linerate_bpf::insn::Operand::Imm(0),
                ..
            } => {}
            Instruction::Store { dst: 10, off, .. } | Instruction::Atomic { dst: 10, off, .. }
                if valid_slots.contains(&off) =>
            {
                validated.insert(off);
            }
            _ => {}
        }
    }
    if resizing {
        let all: HashSet<i16> = fields.iter().copied().collect();
        return FieldPlan {
            live: all.clone(),
            changed: all,
            validated,
        };
    }
    let touched = |off: i16, size: Size| {
        fields
            .iter()
            .copied()
            .filter(move |f| off < f + 8 && *f < off + bytes(size))
    };
    let (mut read, mut changed) = (HashSet::new(), HashSet::new());
    for (index, insn) in code.insns().take_while(|(i, _)| *i < before_deparser) {
        match *insn {
            Instruction::Load {
                src: 10, off, size, ..
            } => read.extend(touched(off, size)),
            Instruction::Store {
                dst: 10, off, size, ..
            } if !extracts.iter().any(|r| r.contains(&index)) => changed.extend(touched(off, size)),
            Instruction::Atomic {
                dst: 10, off, size, ..
            } => {
                read.extend(touched(off, size));
                changed.extend(touched(off, size));
            }
            _ => {}
        }
    }
    let mut live = read;
    for header in &frame.headers {
        let windows = store_windows(header, Some(&changed));
        live.extend(overlapping(header, &windows));
    }
    FieldPlan {
        live,
        changed,
        validated,
    }
}

/// The 8-byte slots (by offset from `r10`) that some instruction of `code` loads from.
pub(crate) fn loaded_slots(code: &Assembly) -> HashSet<i16> {
    let mut out = HashSet::new();
    for (_, insn) in code.insns() {
        if let Instruction::Load {
            src: 10, off, size, ..
        }
        | Instruction::Atomic {
            dst: 10, off, size, ..
        } = *insn
        {
            let first = off.div_euclid(8) * 8;
            let last = (off + bytes(size) - 1).div_euclid(8) * 8;
            out.insert(first);
            out.insert(last);
        }
    }
    out
}

/// Whether `insn` stores into an 8-byte stack slot that nothing `loaded` and no helper reads
/// (outside the `pointed` stretches, `(offset, bytes)`).
pub(crate) fn dead_store(
    insn: &Instruction,
    pointed: &[(i16, u32)],
    loaded: &HashSet<i16>,
) -> bool {
    match *insn {
        Instruction::Store {
            dst: 10,
            off,
            size: Size::Dw,
            ..
        } => {
            let helper_reads = pointed.iter().any(|(at, bytes)| {
                i64::from(off) >= i64::from(*at)
                    && i64::from(off) < i64::from(*at) + i64::from(*bytes)
            });
            off % 8 == 0 && !helper_reads && !loaded.contains(&off)
        }
        _ => false,
    }
}

/// The 8-byte stack slot (index below `r10`) of byte offset `off`.
fn slot_index(off: i64) -> Option<u32> {
    u32::try_from((-off - 1).div_euclid(8))
        .ok()
        .filter(|i| *i < 64)
}

/// Offsets of the 8-byte stack slots that `insns` (a whole program, straight-line code first)
/// may load before storing all 8 bytes of them: what must start at zero.
///
/// `implied` maps a header's validity slot to the slots its extract stores: where a test of
/// the freshly loaded flag finds it set, those are stored (for a header that only an extract
/// makes valid: no `setValid` nor header copy sets its flag). That spares zeroing the fields a
/// control reads under `isValid()`, and those the deparser writes back.
pub(crate) fn must_zero(insns: &[Instruction], implied: &HashMap<i16, Vec<i16>>) -> Vec<i16> {
    // Instruction index of each slot (a 64-bit immediate takes two).
    let mut index_of_slot = Vec::new();
    for (i, insn) in insns.iter().enumerate() {
        for _ in 0..insn.slots() {
            index_of_slot.push(i);
        }
    }
    let implied: HashMap<i16, u64> = implied
        .iter()
        .map(|(valid, slots)| {
            let mask = slots
                .iter()
                .filter_map(|s| slot_index(i64::from(*s)))
                .fold(0u64, |m, s| m | 1 << s);
            (*valid, mask)
        })
        .collect();
    let mut slot = 0usize;
    // Each successor with the slots that taking that edge stores.
    let mut successors: Vec<Vec<(usize, u64)>> = Vec::with_capacity(insns.len());
    let mut targets = HashSet::new();
    for insn in insns {
        let target = insn
            .jump_target(slot)
            .and_then(|t| usize::try_from(t).ok())
            .and_then(|t| index_of_slot.get(t).copied());
        targets.extend(target);
        let next = index_of_slot.get(slot + insn.slots()).copied();
        successors.push(match insn {
            Instruction::Exit => vec![],
            Instruction::Ja { .. } => target.into_iter().map(|t| (t, 0)).collect(),
            _ => next.into_iter().chain(target).map(|t| (t, 0)).collect(),
        });
        slot += insn.slots();
    }
    // `rX = valid; if rX != 0 goto` (or `== 0`), the test reached only from the load.
    for i in 1..insns.len() {
        let (
            Instruction::Load {
                src: 10,
                off,
                size: Size::Dw,
                dst,
                ..
            },
            Instruction::Jump {
                cond,
                dst: tested,
                src: linerate_bpf::insn::Operand::Imm(0),
                ..
            },
        ) = (insns[i - 1], insns[i])
        else {
            continue;
        };
        let Some(&mask) = implied.get(&off) else {
            continue;
        };
        if dst != tested || targets.contains(&i) {
            continue;
        }
        let set_edge = match cond {
            linerate_bpf::insn::Cond::Ne => 1,
            linerate_bpf::insn::Cond::Eq => 0,
            _ => continue,
        };
        if let Some(edge) = successors[i].get_mut(set_edge) {
            edge.1 |= mask;
        }
    }
    // Forward must-analysis: bit i set = stack slot i holds a stored value on every path.
    let mut defined: Vec<Option<u64>> = vec![None; insns.len()];
    let mut zero = 0u64;
    if insns.is_empty() {
        return Vec::new();
    }
    defined[0] = Some(0);
    let mut work = vec![0usize];
    while let Some(i) = work.pop() {
        let Some(mut state) = defined[i] else {
            continue;
        };
        let mask_of = |off: i16, size: Size| {
            let (lo, hi) = (i64::from(off), i64::from(off) + i64::from(bytes(size)) - 1);
            [lo, hi]
                .into_iter()
                .filter_map(slot_index)
                .fold(0u64, |m, s| m | 1 << s)
        };
        match insns[i] {
            Instruction::Load {
                src: 10, off, size, ..
            }
            | Instruction::Atomic {
                dst: 10, off, size, ..
            } => zero |= mask_of(off, size) & !state,
            Instruction::Store {
                dst: 10,
                off,
                size: Size::Dw,
                ..
            } if off % 8 == 0 => state |= mask_of(off, Size::Dw),
            _ => {}
        }
        for &(next, stored) in &successors[i] {
            let state = state | stored;
            let merged = defined[next].map_or(state, |d| d & state);
            if defined[next] != Some(merged) {
                defined[next] = Some(merged);
                work.push(next);
            }
        }
    }
    (0..64)
        .filter(|s| zero & (1 << s) != 0)
        .map(|s| -8 * (s + 1) as i16)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_bpf::insn::build::{exit, jmp, ldx, mov64, st, stx};

    #[test]
    fn a_slot_read_before_every_path_stores_it_is_zeroed() {
        let insns = [
            st(Size::Dw, 10, -8, 1),
            jmp(linerate_bpf::insn::Cond::Eq, 1, 0, 1),
            stx(Size::Dw, 10, -16, 1),
            ldx(Size::Dw, 2, 10, -8),
            ldx(Size::Dw, 2, 10, -16),
            ldx(Size::W, 2, 10, -20),
            mov64(0, 0),
            exit(),
        ];
        // -8 is stored first; -16 only on one path; -24 never.
        assert_eq!(must_zero(&insns, &HashMap::new()), [-16, -24]);
    }

    #[test]
    fn a_narrow_store_does_not_define_the_slot() {
        let insns = [st(Size::W, 10, -8, 1), ldx(Size::W, 2, 10, -8), exit()];
        assert_eq!(must_zero(&insns, &HashMap::new()), [-8]);
    }
}
