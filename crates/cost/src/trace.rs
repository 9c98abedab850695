//! Executed paths: the instruction trace and block sequence of one run of the interpreter, so
//! that a concrete execution can be priced with [`crate::ProgramCost::path_cost`].

use linerate_bpf::insn::{CallTarget, Instruction};
use linerate_cfg::{BlockId, Cfg};

/// One executed instruction: its slot and, for a conditional jump, whether it was taken.
pub type Step = (usize, Option<bool>);

/// Rebuilds the instruction trace of program `program` (its decoded `insns`, as
/// [`linerate_bpf::insn::decode_all`] gives them) from the interpreter's record of control
/// transfers (`RunOutcome::path` with `VmOptions::record_path`); `None` if execution left the
/// program (a tail call) or the record does not fit the program.
pub fn executed_steps(
    insns: &[(usize, Instruction)],
    path: &[(usize, usize)],
    program: usize,
) -> Option<Vec<Step>> {
    let at = |slot: usize| insns.iter().find(|(s, _)| *s == slot).map(|(_, i)| *i);
    let mut out = Vec::new();
    let mut pc = 0usize;
    let mut next = 1usize;
    loop {
        let insn = at(pc)?;
        let transfer = |next: &mut usize| -> Option<usize> {
            let (p, slot) = *path.get(*next)?;
            *next += 1;
            (p == program).then_some(slot)
        };
        match insn {
            Instruction::Jump { off, .. } | Instruction::MayGoto { off } => {
                let target = (pc as i64 + 1 + off as i64) as usize;
                let to = transfer(&mut next)?;
                out.push((pc, Some(to == target && target != pc + 1)));
                pc = to;
            }
            Instruction::Ja { .. } | Instruction::Call(CallTarget::Local(_)) => {
                out.push((pc, None));
                pc = transfer(&mut next)?;
            }
            Instruction::Exit => {
                out.push((pc, None));
                if next == path.len() {
                    return Some(out);
                }
                pc = transfer(&mut next)?;
            }
            Instruction::Call(CallTarget::Helper(12)) => {
                out.push((pc, None));
                if path.get(next).is_some_and(|(p, _)| *p != program) {
                    return None;
                }
                pc += 1;
            }
            Instruction::LoadImm64 { .. } => {
                out.push((pc, None));
                pc += 2;
            }
            _ => {
                out.push((pc, None));
                pc += 1;
            }
        }
    }
}

/// The blocks of the entry function entered by `steps`, in order: the sequence
/// [`crate::ProgramCost::path_cost`] prices (calls stay inside their block).
pub fn entry_blocks(cfg: &Cfg, steps: &[Step]) -> Vec<BlockId> {
    let entry = &cfg.functions()[0];
    steps
        .iter()
        .filter_map(|&(slot, _)| {
            let b = cfg.block_of(slot)?;
            (entry.contains(b) && cfg.blocks()[b].first == slot).then_some(b)
        })
        .collect()
}
