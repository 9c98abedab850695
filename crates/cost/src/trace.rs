//! Executed paths as the cost model prices them: the block sequence of one run, for
//! [`crate::ProgramCost::path_cost`]. A run is given as the `(program, slot)` pairs it executed, in
//! order (the interpreter's `linerate_vm::trace::executed_steps` gives them), so pricing a path
//! does not depend on who executed it.

use linerate_cfg::{BlockId, Cfg};

/// The blocks of the entry function of `cfg` that the run `executed` entered, in order (calls
/// stay inside their block); `executed` yields the `(program, slot)` of every instruction the run
/// executed. `None` if the run left its first program through a tail call.
pub fn entry_blocks(
    cfg: &Cfg,
    executed: impl IntoIterator<Item = (usize, usize)>,
) -> Option<Vec<BlockId>> {
    let mut executed = executed.into_iter().peekable();
    let program = executed.peek()?.0;
    let entry = &cfg.functions()[0];
    let mut blocks = Vec::new();
    for (p, slot) in executed {
        if p != program {
            return None;
        }
        if let Some(b) = cfg.block_of(slot) {
            if entry.contains(b) && cfg.blocks()[b].first == slot {
                blocks.push(b);
            }
        }
    }
    Some(blocks)
}
