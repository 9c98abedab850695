//! Pricing a map operation by its outcome. A hash-table lookup that finds nothing, or an update or
//! delete the map refuses, stops after hashing the key and walking one bucket; a success also
//! compares the key, copies or links the value. Models may price the failures apart
//! ([`Item::MapFailed`]). Where the program compares the call's result with 0 (the usual `if
//! (!value)` or `if (ret)`), each edge out of the comparing block knows the outcome: the call is
//! charged its failing price and the edge taken on success the rest. That holds when every
//! execution of the call reaches the comparison exactly once with the result still in the
//! compared register, and nothing else reaches the comparison: the comparing block is the
//! call's block or one the call's block dominates, every path from the call (no back edge, no
//! tail call on the way) reaches it, and every path keeps a copy of the result in the register.
//! Then an execution crossing the failure edge made a failing call and one crossing the success
//! edge pays the full price, so every path's charge still bounds its executions. A call whose
//! result is not compared this way keeps the success price, the larger one.

use std::collections::HashMap;

use linerate_bpf::facts::helper;
use linerate_bpf::insn::{AluOp, AtomicOp, CallTarget, Cond, Instruction, Operand, Reg};
use linerate_cfg::{BlockId, Cfg, EdgeKind};

use crate::item::{Item, MapOp};

/// Where a map operation's result is compared with 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OutcomeTest {
    /// The block ending in the comparison.
    pub block: BlockId,
    /// The edge out of it taken when the operation succeeded.
    pub success: EdgeKind,
}

/// Registers holding the call's result, one bit per register.
type Holders = u16;

/// Blocks a search for the comparison visits at most, so that pricing stays linear in practice.
const MAX_REGION: usize = 64;

/// The comparison of the result of the map operation `op` called at `call` (a slot of `cfg`)
/// with 0, if one is found as the module comment requires. A lookup's pointer must be compared
/// on 64 bits; an update's or delete's result (0 or a negative errno of at most 4095) is 0
/// exactly when its low 32 bits are, so a 32-bit comparison of an `int` result counts too.
pub(crate) fn outcome_test(cfg: &Cfg, call: usize, op: MapOp) -> Option<OutcomeTest> {
    let start = cfg.block_of(call)?;
    let insns = cfg.block_instructions(start);
    let at = insns.iter().position(|(slot, _)| *slot == call)?;
    // Holders at the end of the call's block, or the call's own block's comparison.
    let (exit, test) = scan(&insns[at + 1..], 1, op);
    if let Some(success) = test {
        return Some(OutcomeTest {
            block: start,
            success,
        });
    }
    // Blocks after the call's, in topological order, with the holders every path into them
    // keeps; the first comparison that every path from the call reaches is the one.
    let order = cfg.function_of(start)?.topological_order();
    let mut held: HashMap<BlockId, Holders> = HashMap::new();
    leave(cfg, start, exit, &mut held)?;
    let position = order.iter().position(|&b| b == start)?;
    let mut visited = 0usize;
    for &b in &order[position + 1..] {
        let Some(&h) = held.get(&b) else {
            continue;
        };
        visited += 1;
        if visited > MAX_REGION || !cfg.dominates(start, b) {
            return None;
        }
        let (out, test) = scan(cfg.block_instructions(b), h, op);
        if let Some(success) = test {
            // Every path from the call must end up here: a block still waiting was reached
            // avoiding this one and, coming later in topological order, cannot lead to it.
            return (held.len() == 1).then_some(OutcomeTest { block: b, success });
        }
        held.remove(&b);
        leave(cfg, b, out, &mut held)?;
    }
    None
}

/// Passes `holders` from the end of block `b` on to its successors (each keeps what every path
/// into it holds); `None` where a path may leave without reaching a comparison: an exit, a tail
/// call or a back edge.
fn leave(
    cfg: &Cfg,
    b: BlockId,
    holders: Holders,
    held: &mut HashMap<BlockId, Holders>,
) -> Option<()> {
    let block = &cfg.blocks()[b];
    if block.succs.is_empty() || tail_calls(cfg, b) {
        return None;
    }
    for &e in &block.succs {
        if cfg.is_back_edge(e) {
            return None;
        }
        *held.entry(cfg.edges()[e].to).or_insert(holders) &= holders;
    }
    Some(())
}

/// Runs the holders through `insns`: the holders after them, and the success edge if the last
/// one compares a holder with 0 as `op`'s outcome test.
fn scan(
    insns: &[(usize, Instruction)],
    mut holders: Holders,
    op: MapOp,
) -> (Holders, Option<EdgeKind>) {
    for (i, (_, insn)) in insns.iter().enumerate() {
        if i + 1 == insns.len() {
            if let Some(success) = compares(insn, holders, op) {
                return (holders, Some(success));
            }
        }
        holders = after(insn, holders);
    }
    (holders, None)
}

/// The success edge if `insn` compares a holder with 0 in a way that tells `op`'s outcome.
fn compares(insn: &Instruction, holders: Holders, op: MapOp) -> Option<EdgeKind> {
    let Instruction::Jump {
        wide,
        cond,
        dst,
        src: Operand::Imm(0),
        ..
    } = *insn
    else {
        return None;
    };
    if holders & bit(dst) == 0 || (!wide && !op.succeeds_when_zero()) {
        return None;
    }
    let zero_taken = match cond {
        Cond::Eq => true,
        Cond::Ne => false,
        _ => return None,
    };
    Some(if zero_taken == op.succeeds_when_zero() {
        EdgeKind::Taken
    } else {
        EdgeKind::NotTaken
    })
}

/// The holders after `insn`: a 64-bit register move copies a holder; a write of any other kind
/// replaces its register's value; a call replaces r0–r5.
fn after(insn: &Instruction, holders: Holders) -> Holders {
    match *insn {
        Instruction::Alu {
            wide: true,
            op: AluOp::Mov,
            dst,
            src: Operand::Reg(src),
        } => {
            if holders & bit(src) != 0 {
                holders | bit(dst)
            } else {
                holders & !bit(dst)
            }
        }
        Instruction::Call(_) => holders & !0b11_1111,
        _ => match written(insn) {
            Some(dst) => holders & !bit(dst),
            None => holders,
        },
    }
}

fn bit(reg: Reg) -> Holders {
    1u16.checked_shl(u32::from(reg)).unwrap_or(0)
}

/// The register an instruction other than a call writes.
fn written(insn: &Instruction) -> Option<Reg> {
    match *insn {
        Instruction::Alu { dst, .. }
        | Instruction::Endian { dst, .. }
        | Instruction::LoadImm64 { dst, .. }
        | Instruction::Load { dst, .. } => Some(dst),
        Instruction::Atomic {
            op: AtomicOp::CmpXchg,
            ..
        } => Some(0),
        Instruction::Atomic {
            fetch: true, src, ..
        } => Some(src),
        Instruction::LegacyPacketLoad { .. } => Some(0),
        _ => None,
    }
}

/// Whether block `b` makes a tail call (which leaves the function when it jumps).
fn tail_calls(cfg: &Cfg, b: BlockId) -> bool {
    cfg.block_instructions(b)
        .iter()
        .any(|(_, i)| matches!(i, Instruction::Call(CallTarget::Helper(helper::TAIL_CALL))))
}

/// The failing counterparts of a call's items, if every one is a map operation `op` and at
/// least one is of a type priced apart when failing; the others (an array reached by the same
/// call site, say) fail at their full price.
pub(crate) fn failed_items(items: &[Item]) -> Option<(MapOp, Vec<Item>)> {
    let mut op = None;
    let mut out = Vec::with_capacity(items.len());
    let mut cheaper = false;
    for item in items {
        let Item::Map {
            op: o,
            map_type,
            key_size,
        } = *item
        else {
            return None;
        };
        if *op.get_or_insert(o) != o {
            return None;
        }
        if crate::item::FAILURE_PRICED_MAP_TYPES.contains(&crate::item::priced_as(map_type)) {
            cheaper = true;
            out.push(Item::MapFailed {
                op: o,
                map_type,
                key_size,
            });
        } else {
            out.push(*item);
        }
    }
    cheaper.then_some((op?, out))
}
