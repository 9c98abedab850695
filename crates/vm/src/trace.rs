//! Executed paths: the instruction trace of one run, rebuilt from the interpreter's record of
//! control transfers ([`crate::RunOutcome::path`], with [`crate::VmOptions::record_path`]).
//!
//! The record holds every place a jump, branch, call or return went and every program a tail
//! call entered; between two records execution runs straight through, so the trace follows from
//! the instructions.

use linerate_bpf::insn::{decode_all, CallTarget, DecodeError, Instruction};
use linerate_bpf::Object;

/// One executed instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    /// Index of the program in the object.
    pub program: usize,
    /// Slot of the instruction.
    pub slot: usize,
    /// For a conditional jump, whether it was taken.
    pub taken: Option<bool>,
}

/// Every program of `object` decoded, as [`executed_steps`] takes them.
pub fn decoded_programs(object: &Object) -> Result<Vec<Vec<(usize, Instruction)>>, DecodeError> {
    object
        .programs
        .iter()
        .map(|p| decode_all(&p.insns))
        .collect()
}

/// Rebuilds the instruction trace of a run that started in program `entry`; `programs[p]` are
/// program `p`'s decoded instructions, as [`linerate_bpf::insn::decode_all`] gives them. `None` if
/// the record does not fit the programs.
///
/// A tail call records the entered program at slot 0; a failed one records nothing. A record at
/// slot 0 right after a tail call is taken to be the call's (a failed tail call followed, without
/// any other transfer, by a jump back to slot 0 would be read as a tail call of the program
/// itself).
pub fn executed_steps(
    programs: &[Vec<(usize, Instruction)>],
    entry: usize,
    path: &[(usize, usize)],
) -> Option<Vec<Step>> {
    let at = |program: usize, slot: usize| {
        let insns = programs.get(program)?;
        let i = insns.binary_search_by_key(&slot, |(s, _)| *s).ok()?;
        Some(insns[i].1)
    };
    let mut out = Vec::new();
    let (mut program, mut pc) = (entry, 0usize);
    let mut next = 1usize;
    loop {
        let insn = at(program, pc)?;
        let mut step = Step {
            program,
            slot: pc,
            taken: None,
        };
        // Where the next record says control went, within the current program.
        let transfer = |next: &mut usize| -> Option<usize> {
            let (p, slot) = *path.get(*next)?;
            *next += 1;
            (p == program).then_some(slot)
        };
        match insn {
            Instruction::Jump { off, .. } | Instruction::MayGoto { off } => {
                let target = (pc as i64 + 1 + off as i64) as usize;
                let to = transfer(&mut next)?;
                step.taken = Some(to == target && target != pc + 1);
                pc = to;
            }
            Instruction::Ja { .. } | Instruction::Call(CallTarget::Local(_)) => {
                pc = transfer(&mut next)?
            }
            Instruction::Exit => {
                out.push(step);
                if next == path.len() {
                    return Some(out);
                }
                pc = transfer(&mut next)?;
                continue;
            }
            Instruction::Call(CallTarget::Helper(12)) => match path.get(next) {
                Some(&(p, 0)) => {
                    next += 1;
                    (program, pc) = (p, 0);
                }
                _ => pc += 1,
            },
            other => pc += other.slots(),
        }
        out.push(step);
    }
}
