//! What the abstract analysis of the source program says in front of each of its instructions:
//! for the passes' proofs, and to place the memory accesses the scheduler and `check` order.
//!
//! The states are by source slot, and a lowered instruction is asked about through the first
//! slot it came from ([`LInsn::from`]). That is sound for the registers the instruction reads:
//! the passes keep every instruction's meaning, and a fused instruction reads its operands with
//! the values they have at its first source slot (a three-operand ALU reads its source where the
//! `mov` did, a 6-byte load sits where its first piece was, and a 6-byte store's base register is
//! proved unchanged over the pieces it replaces).

use std::collections::HashMap;

use linerate_analysis::{Analysis, Interval, Region, Shape, State};
use linerate_bpf::insn::{Instruction, Reg};
use linerate_bpf::Object;
use linerate_cfg::Cfg;

use crate::deps::Place;
use crate::isa::HxInsn;
use crate::program::LInsn;
use crate::HxdpError;

/// The analysis states in front of each reachable instruction of a program, and its
/// instructions by slot.
#[derive(Clone, Debug, Default)]
pub struct SourceFacts {
    before: HashMap<usize, State>,
    decoded: HashMap<usize, Instruction>,
}

/// The CFG of program `program` of `object`.
pub fn source_cfg(object: &Object, program: usize) -> Result<Cfg, HxdpError> {
    let def = object
        .programs
        .get(program)
        .ok_or(HxdpError::NoSuchProgram(program))?;
    Cfg::build(def).map_err(|e| HxdpError::Decode {
        program: def.name.clone(),
        reason: format!("control-flow graph: {e}"),
    })
}

impl SourceFacts {
    /// Analyses program `program` of `object`.
    pub fn compute(object: &Object, program: usize) -> Result<SourceFacts, HxdpError> {
        let cfg = source_cfg(object, program)?;
        let analysis = Analysis::run(object, &cfg);
        let mut before = HashMap::new();
        for block in cfg.blocks() {
            if block.function != 0 {
                continue;
            }
            before.extend(analysis.slot_states(object, &cfg, block.id));
        }
        let decoded = cfg.instructions().iter().copied().collect();
        Ok(SourceFacts { before, decoded })
    }

    /// The state in front of source slot `slot`; `None` where no path reaches it.
    pub fn before_slot(&self, slot: usize) -> Option<&State> {
        self.before.get(&slot)
    }

    /// The state in front of a lowered instruction (see the module documentation).
    pub fn before(&self, insn: &LInsn) -> Option<&State> {
        insn.from.first().and_then(|&s| self.before_slot(s))
    }

    /// Where register `r` points in front of `insn`: its region and offsets, if it surely is a
    /// non-null pointer.
    pub fn pointer(&self, insn: &LInsn, r: Reg) -> Option<(Region, Interval)> {
        let state = self.before(insn)?;
        match state.regs.get(r as usize)?.shape {
            Shape::Pointer {
                region,
                offset,
                maybe_null: false,
            } => Some((region, offset)),
            _ => None,
        }
    }

    /// The constant register `r` holds in front of `insn`, if the analysis knows one.
    pub fn constant(&self, insn: &LInsn, r: Reg) -> Option<u64> {
        self.before(insn)?.regs.get(r as usize)?.constant()
    }

    /// Packet bytes every run reaching the first of source slots `from` has (0 where unknown).
    pub fn packet_floor(&self, from: &[usize]) -> i128 {
        from.first()
            .and_then(|&s| self.before_slot(s))
            .map_or(0, |state| state.packet_len.lo.max(0))
    }

    /// Where `insn`, made from source slots `from`, accesses memory: from the state at a source
    /// slot that accesses memory the same way (a load for a load), whose base register holds the
    /// pointer `insn` uses (a fused instruction keeps its parts' base, which nothing redefines
    /// in between; renaming may have changed the register's name, not its value).
    pub fn place(&self, insn: &HxInsn, from: &[usize]) -> Place {
        let unknown = Place {
            region: None,
            bytes: None,
        };
        let Some(access) = insn.memory() else {
            return unknown;
        };
        let located = from.iter().find_map(|slot| {
            let m = HxInsn::Ebpf(*self.decoded.get(slot)?).memory()?;
            if m.writes != access.writes {
                return None;
            }
            Some(self.before_slot(*slot)?.regs[m.base as usize].shape)
        });
        match located {
            Some(Shape::Pointer { region, offset, .. }) => Place {
                region: Some(region),
                bytes: Some((
                    offset.lo + access.off as i128,
                    offset.hi + access.off as i128 + access.len as i128,
                )),
            },
            _ => unknown,
        }
    }

    /// Whether register `r` may hold a stack address in front of `insn` (unknown values may).
    pub fn may_point_to_stack(&self, insn: &LInsn, r: Reg) -> bool {
        let Some(state) = self.before(insn) else {
            return true;
        };
        match state.regs.get(r as usize).map(|v| v.shape) {
            Some(Shape::Scalar(_)) => false,
            Some(Shape::Pointer { region, .. }) => matches!(region, Region::Stack { .. }),
            _ => true,
        }
    }
}
