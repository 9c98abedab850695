//! Pricing a map operation by its outcome. A hash-table lookup that finds nothing, or an update or
//! delete the map refuses, stops after hashing the key and walking one bucket; a success also
//! compares the key, copies or links the value. Models may price the failures apart
//! ([`Item::MapFailed`]). Where a block calls a map helper and ends by comparing the call's result
//! with 0 (the usual `if (!value)` or `if (ret)` right after the call), each edge out of the block
//! knows the outcome: the call is charged its failing price and the edge taken on success the
//! rest. An execution crossing the failure edge made a failing call, one crossing the success
//! edge pays the full price, so every path's charge still bounds its executions. A call whose
//! result the block does not test this way keeps the success price, the larger one.

use linerate_bpf::insn::{AtomicOp, CallTarget, Instruction, Operand, Reg};
use linerate_cfg::{BlockId, Cfg, EdgeKind};

use crate::item::{Item, MapOp};

/// A block's test of its last helper call's result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OutcomeTest {
    /// Slot of the call.
    pub call: usize,
    /// The edge out of the block taken when the operation succeeded.
    pub success: EdgeKind,
}

/// The outcome test of block `block` for a map operation `op`: its last instruction compares
/// the result of its last helper call (or a copy of it) with 0, and nothing in between changed
/// it. A lookup's pointer must be compared on 64 bits; an update's or delete's result (0 or a
/// negative errno of at most 4095) is 0 exactly when its low 32 bits are, so a 32-bit
/// comparison of an `int` result counts too.
pub(crate) fn outcome_test(cfg: &Cfg, block: BlockId, op: MapOp) -> Option<OutcomeTest> {
    let insns = cfg.block_instructions(block);
    let (last, rest) = insns.split_last()?;
    let Instruction::Jump {
        wide,
        cond,
        dst,
        src: Operand::Imm(0),
        ..
    } = last.1
    else {
        return None;
    };
    if !wide && !op.succeeds_when_zero() {
        return None;
    }
    let call = rest
        .iter()
        .rposition(|(_, insn)| matches!(insn, Instruction::Call(_)))?;
    if !matches!(rest[call].1, Instruction::Call(CallTarget::Helper(_))) {
        return None;
    }
    // Registers holding the call's result.
    let mut holders: u16 = 1;
    for (_, insn) in &rest[call + 1..] {
        let copied = match insn {
            Instruction::Alu {
                wide: true,
                op: linerate_bpf::insn::AluOp::Mov,
                src: Operand::Reg(src),
                ..
            } => holders & bit(*src) != 0,
            _ => false,
        };
        if let Some(dst) = written(insn) {
            holders &= !bit(dst);
            if copied {
                holders |= bit(dst);
            }
        }
    }
    if holders & bit(dst) == 0 {
        return None;
    }
    let is_zero_taken = match cond {
        linerate_bpf::insn::Cond::Eq => true,
        linerate_bpf::insn::Cond::Ne => false,
        _ => return None,
    };
    let success_taken = is_zero_taken == op.succeeds_when_zero();
    Some(OutcomeTest {
        call: rest[call].0,
        success: if success_taken {
            EdgeKind::Taken
        } else {
            EdgeKind::NotTaken
        },
    })
}

fn bit(reg: Reg) -> u16 {
    1u16.checked_shl(u32::from(reg)).unwrap_or(0)
}

/// The register an instruction other than a call writes (the scan starts after the block's last
/// call).
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

/// The failing counterparts of a call's items, if every one is a map operation `op` of a type
/// priced apart when failing.
pub(crate) fn failed_items(items: &[Item]) -> Option<(MapOp, Vec<Item>)> {
    let mut op = None;
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let Item::Map {
            op: o,
            map_type,
            key_size,
        } = *item
        else {
            return None;
        };
        if *op.get_or_insert(o) != o
            || !crate::item::FAILURE_PRICED_MAP_TYPES.contains(&crate::item::priced_as(map_type))
        {
            return None;
        }
        out.push(Item::MapFailed {
            op: o,
            map_type,
            key_size,
        });
    }
    Some((op?, out))
}
