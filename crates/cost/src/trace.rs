//! Executed paths as the cost model prices them: the block sequence of one interpreter run (see
//! [`linerate_vm::trace`]), for [`crate::ProgramCost::path_cost`].

use linerate_cfg::{BlockId, Cfg};
use linerate_vm::trace::Step;

/// The blocks of the entry function of `cfg` that `steps` entered, in order (calls stay inside
/// their block); `None` if the run left the program through a tail call.
pub fn entry_blocks(cfg: &Cfg, steps: &[Step]) -> Option<Vec<BlockId>> {
    let program = steps.first()?.program;
    let entry = &cfg.functions()[0];
    let mut blocks = Vec::new();
    for step in steps {
        if step.program != program {
            return None;
        }
        if let Some(b) = cfg.block_of(step.slot) {
            if entry.contains(b) && cfg.blocks()[b].first == step.slot {
                blocks.push(b);
            }
        }
    }
    Some(blocks)
}
