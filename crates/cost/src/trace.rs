//! Executed paths as the cost model prices them: the block sequence of one run, for
//! [`crate::ProgramCost::path_cost`], and the cost of a whole run as it executed, sub-programs and
//! callbacks included ([`run_cost`]). A run is given as the `(program, slot)` pairs it executed,
//! in order (the interpreter's `linerate_vm::trace::executed_steps` gives them), so pricing a path
//! does not depend on who executed it.

use linerate_bpf::facts::helper;
use linerate_bpf::insn::{CallTarget, Instruction};
use linerate_cfg::{BlockId, Cfg, FuncId};

use crate::{Callees, Cost, Item, Model, ProgramCost};

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

/// One function's activation in a run: the blocks it entered.
struct Frame {
    function: FuncId,
    blocks: Vec<BlockId>,
    /// It executed its `exit`.
    returned: bool,
    /// The callback-calling helper it is inside (its last executed instruction called it).
    calling_back: Option<u32>,
}

/// The cost of one run as it executed, per-packet work included: every function activation's
/// blocks priced as [`ProgramCost::path_cost`] prices a path, so a sub-program is charged the
/// path it took and a callback as many times as the helper called it (each call also its
/// `callback.<helper>` price), not their worst cases. `cost` must charge calls apart
/// ([`Callees::Apart`]). `None` if the run left its first program through a tail call.
pub fn run_cost(
    cost: &ProgramCost,
    cfg: &Cfg,
    model: &Model,
    executed: impl IntoIterator<Item = (usize, usize)>,
) -> Option<Result<Cost, String>> {
    if cost.callees != Callees::Apart {
        return Some(Err("a run is priced with calls charged apart".into()));
    }
    let mut executed = executed.into_iter().peekable();
    let program = executed.peek()?.0;
    let mut total = model.per_packet().clone();
    let mut frames: Vec<Frame> = Vec::new();
    let close = |frame: Frame, total: &mut Cost| -> Result<(), String> {
        total.add(&cost.blocks_cost(cfg, &frame.blocks)?);
        Ok(())
    };
    for (p, slot) in executed {
        if p != program {
            return None;
        }
        let Some(b) = cfg.block_of(slot) else {
            return Some(Err(format!("slot {slot} is in no block")));
        };
        let block = &cfg.blocks()[b];
        while frames.last().is_some_and(|f| f.returned) {
            let done = frames.pop().expect("a frame");
            if let Err(e) = close(done, &mut total) {
                return Some(Err(e));
            }
        }
        match frames.last_mut() {
            Some(top) if top.function == block.function => {
                if block.first == slot {
                    top.blocks.push(b);
                }
            }
            caller => {
                if block.first != slot {
                    return Some(Err(format!("slot {slot}: a function entered mid-block")));
                }
                if let Some(id) = caller.and_then(|c| c.calling_back) {
                    match model.price(&Item::Callback(id)) {
                        Ok(price) => total.add(&price.cost),
                        Err(e) => return Some(Err(e)),
                    }
                }
                frames.push(Frame {
                    function: block.function,
                    blocks: vec![b],
                    returned: false,
                    calling_back: None,
                });
            }
        }
        let top = frames.last_mut().expect("a frame");
        let insn = cfg
            .block_instructions(b)
            .iter()
            .find(|(s, _)| *s == slot)
            .map(|(_, i)| i);
        top.returned = matches!(insn, Some(Instruction::Exit));
        top.calling_back = match insn {
            Some(Instruction::Call(CallTarget::Helper(
                id @ (helper::LOOP | helper::FOR_EACH_MAP_ELEM),
            ))) => Some(*id),
            _ => None,
        };
    }
    for frame in frames.into_iter().rev() {
        if let Err(e) = close(frame, &mut total) {
            return Some(Err(e));
        }
    }
    Some(Ok(total))
}
