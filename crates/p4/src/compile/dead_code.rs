//! Removal of instructions whose only effect is a register nothing reads afterwards (an action
//! id loaded for a table whose actions all do nothing, a value computed for a store that went),
//! and jumps to the next instruction, on the finished program: a backward register liveness over its control flow, then the jumps'
//! offsets recomputed around what went.

use linerate_bpf::insn::regs::RegSet;
use linerate_bpf::insn::Instruction;

/// `insns` without the instructions that write only registers no path reads before writing them
/// again; jumps still land on the same instructions (or, for a removed target, on the next one
/// kept). `None` when a jump leaves the program or no longer fits its offset.
pub(crate) fn remove_dead_code(mut insns: Vec<Instruction>) -> Option<Vec<Instruction>> {
    loop {
        let flow = Flow::of(&insns)?;
        let live_out = live_registers(&insns, &flow);
        let keep: Vec<bool> = insns
            .iter()
            .zip(&live_out)
            .map(|(insn, live)| {
                let pure = matches!(
                    insn,
                    Instruction::Alu { .. }
                        | Instruction::Endian { .. }
                        | Instruction::LoadImm64 { .. }
                        | Instruction::Load { .. }
                );
                // A jump to the next instruction does nothing either.
                let to_next = matches!(
                    insn,
                    Instruction::Ja { off: 0, .. } | Instruction::Jump { off: 0, .. }
                );
                !to_next && (!pure || insn.writes() & live != 0 || insn.writes() == 0)
            })
            .collect();
        if keep.iter().all(|k| *k) {
            return Some(insns);
        }
        insns = without(&insns, &flow, &keep)?;
    }
}

/// The control flow of a finished program.
struct Flow {
    /// Successors of each instruction, by index.
    successors: Vec<Vec<usize>>,
    /// Jump target of each instruction, by index.
    target: Vec<Option<usize>>,
}

impl Flow {
    fn of(insns: &[Instruction]) -> Option<Flow> {
        let mut index_of_slot = Vec::new();
        let mut slot_of = Vec::new();
        for (i, insn) in insns.iter().enumerate() {
            slot_of.push(index_of_slot.len());
            for _ in 0..insn.slots() {
                index_of_slot.push(i);
            }
        }
        let mut successors = Vec::with_capacity(insns.len());
        let mut targets = Vec::with_capacity(insns.len());
        for (i, insn) in insns.iter().enumerate() {
            let target = match insn.jump_target(slot_of[i]) {
                Some(t) => Some(*index_of_slot.get(usize::try_from(t).ok()?)?),
                None => None,
            };
            let next = (i + 1 < insns.len()).then_some(i + 1);
            successors.push(match insn {
                Instruction::Exit => vec![],
                Instruction::Ja { .. } => target.into_iter().collect(),
                _ => next.into_iter().chain(target).collect(),
            });
            targets.push(target);
        }
        Some(Flow {
            successors,
            target: targets,
        })
    }
}

/// The registers live after each instruction.
fn live_registers(insns: &[Instruction], flow: &Flow) -> Vec<RegSet> {
    let mut live_in: Vec<RegSet> = vec![0; insns.len()];
    let mut live_out: Vec<RegSet> = vec![0; insns.len()];
    let mut changed = true;
    while changed {
        changed = false;
        for i in (0..insns.len()).rev() {
            let out = flow.successors[i]
                .iter()
                .fold(0, |set, s| set | live_in[*s]);
            let into = insns[i].reads() | (out & !insns[i].writes());
            if out != live_out[i] || into != live_in[i] {
                live_out[i] = out;
                live_in[i] = into;
                changed = true;
            }
        }
    }
    live_out
}

/// `insns` with only those `keep` marks, every jump's offset recomputed.
fn without(insns: &[Instruction], flow: &Flow, keep: &[bool]) -> Option<Vec<Instruction>> {
    // New slot of each old instruction: its own, or the next kept one's for a removed one.
    let mut new_slot = vec![0usize; insns.len() + 1];
    let mut slot = 0usize;
    for (i, insn) in insns.iter().enumerate() {
        new_slot[i] = slot;
        if keep[i] {
            slot += insn.slots();
        }
    }
    new_slot[insns.len()] = slot;
    let mut out = Vec::with_capacity(insns.len());
    for (i, insn) in insns.iter().enumerate() {
        if !keep[i] {
            continue;
        }
        let mut insn = *insn;
        if let Some(target) = flow.target[i] {
            let off = i64::try_from(new_slot[target]).ok()? - i64::try_from(new_slot[i]).ok()? - 1;
            match &mut insn {
                Instruction::Ja { off: o, .. } => *o = i32::try_from(off).ok()?,
                Instruction::Jump { off: o, .. } => *o = i16::try_from(off).ok()?,
                _ => return None,
            }
        }
        out.push(insn);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_bpf::insn::build::{exit, jmp, ldx, mov64};
    use linerate_bpf::insn::{Cond, Size};

    #[test]
    fn a_register_nothing_reads_is_not_computed_and_jumps_follow() {
        let insns = vec![
            mov64(0, 2),
            jmp(Cond::Eq, 1, 0, 3),
            ldx(Size::W, 3, 1, 0),
            mov64(4, 1),
            mov64(0, 1),
            exit(),
        ];
        assert_eq!(
            remove_dead_code(insns),
            Some(vec![
                mov64(0, 2),
                jmp(Cond::Eq, 1, 0, 1),
                mov64(0, 1),
                exit()
            ])
        );
        // Once the load goes, the jump over it goes too.
        let insns = vec![jmp(Cond::Eq, 1, 0, 1), ldx(Size::W, 3, 1, 0), exit()];
        assert_eq!(remove_dead_code(insns), Some(vec![exit()]));
        assert_eq!(
            remove_dead_code(vec![jmp(Cond::Eq, 1, 0, 0), exit()]),
            Some(vec![exit()])
        );
    }
}
