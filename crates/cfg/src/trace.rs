//! Executed paths as block sequences: which blocks a run entered, given the `(program, slot)`
//! of every instruction it executed (the interpreter records them), across tail calls.

use crate::Cfg;

/// The `(program, slot)` of every block a run entered, in order: the executed instructions at
/// the first slot of a block of their program's CFG (`cfgs[program]`; programs without one are
/// left out).
pub fn block_starts(
    cfgs: &[Option<Cfg>],
    executed: impl IntoIterator<Item = (usize, usize)>,
) -> Vec<(usize, usize)> {
    executed
        .into_iter()
        .filter(|&(program, slot)| {
            cfgs.get(program)
                .and_then(Option::as_ref)
                .is_some_and(|cfg| {
                    cfg.block_of(slot)
                        .and_then(|b| cfg.block(b))
                        .is_some_and(|b| b.slots().start == slot)
                })
        })
        .collect()
}
