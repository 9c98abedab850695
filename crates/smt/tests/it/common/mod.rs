//! What the tests share: the decisions an interpreter run took, and the blocks it entered.

use linerate_bpf::Object;
use linerate_cfg::{Cfg, Decision};
use linerate_smt::BlockRef;
use linerate_vm::trace::{DecisionReader, Step};

/// The decisions of an interpreter run recorded with `record_steps`, as a path of the engine
/// lists them ([`linerate_vm::trace::DecisionReader`]).
pub fn decisions(object: &Object, steps: &[Step]) -> Vec<Decision> {
    DecisionReader::new(object).decisions(steps)
}

/// A path of branch decisions, each `(slot, taken)`.
#[allow(dead_code)]
pub fn branches(decisions: &[(usize, bool)]) -> Vec<Decision> {
    decisions
        .iter()
        .map(|&(pc, taken)| Decision::Branch { pc, taken })
        .collect()
}

/// Whether an interpreter run called a helper that calls a callback.
#[allow(dead_code)]
pub fn calls_back(object: &Object, steps: &[Step]) -> bool {
    DecisionReader::new(object).calls_back(steps)
}

/// The blocks an interpreter run entered, in order.
pub fn blocks(object: &Object, steps: &[Step]) -> Vec<BlockRef> {
    let cfgs: Vec<Option<Cfg>> = object.programs.iter().map(|p| Cfg::build(p).ok()).collect();
    linerate_cfg::block_starts(&cfgs, steps.iter().map(|s| (s.program, s.slot)))
        .into_iter()
        .map(|(program, slot)| BlockRef { program, slot })
        .collect()
}
