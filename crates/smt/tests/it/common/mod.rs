//! What the tests share: the decisions an interpreter run took, and the blocks it entered.

use linerate_bpf::facts::helper;
use linerate_bpf::insn::{CallTarget, Instruction};
use linerate_bpf::Object;
use linerate_cfg::{Cfg, Decision};
use linerate_smt::BlockRef;
use linerate_vm::trace::Step;

/// The instruction at `slot` of program `program`.
fn instruction(object: &Object, program: usize, slot: usize) -> Option<Instruction> {
    object.programs[program]
        .decode()
        .ok()?
        .into_iter()
        .find(|(s, _)| *s == slot)
        .map(|(_, i)| i)
}

/// The decisions of an interpreter run recorded with `record_steps`, as a path of the engine
/// lists them: branches inside the callbacks of `bpf_loop` and `bpf_for_each_map_elem` are left
/// out (the engine chooses those itself), from the helper call until the run is back after it.
pub fn decisions(object: &Object, steps: &[Step]) -> Vec<Decision> {
    let mut out = Vec::new();
    let mut resume_at: Option<(usize, usize)> = None;
    for (i, step) in steps.iter().enumerate() {
        if let Some(at) = resume_at {
            if (step.program, step.slot) != at {
                continue;
            }
            resume_at = None;
        }
        let insn = instruction(object, step.program, step.slot);
        if matches!(
            insn,
            Some(Instruction::Call(CallTarget::Helper(
                helper::LOOP | helper::FOR_EACH_MAP_ELEM
            )))
        ) {
            resume_at = Some((step.program, step.slot + 1));
        }
        if let Some(taken) = step.taken {
            out.push(Decision::Branch {
                pc: step.slot,
                taken,
            });
        } else if insn == Some(Instruction::Call(CallTarget::Helper(helper::TAIL_CALL))) {
            let next = steps[i + 1];
            let fell_through = next.program == step.program && next.slot == step.slot + 1;
            out.push(Decision::TailCall {
                pc: step.slot,
                program: (!fell_through).then_some(next.program),
            });
        }
    }
    out
}

/// Whether an interpreter run called a helper that calls a callback.
#[allow(dead_code)]
pub fn calls_back(object: &Object, steps: &[Step]) -> bool {
    steps.iter().any(|s| {
        matches!(
            instruction(object, s.program, s.slot),
            Some(Instruction::Call(CallTarget::Helper(
                helper::LOOP | helper::FOR_EACH_MAP_ELEM
            )))
        )
    })
}

/// The blocks an interpreter run entered, in order.
pub fn blocks(object: &Object, steps: &[Step]) -> Vec<BlockRef> {
    let cfgs: Vec<Option<Cfg>> = object.programs.iter().map(|p| Cfg::build(p).ok()).collect();
    linerate_cfg::block_starts(&cfgs, steps.iter().map(|s| (s.program, s.slot)))
        .into_iter()
        .map(|(program, slot)| BlockRef { program, slot })
        .collect()
}
