//! What the abstract analysis of the original program says in front of each of its
//! instructions, for the passes' proofs.
//!
//! The states are by source slot, and a lowered instruction is asked about through the first
//! slot it came from ([`LInsn::from`]). That is sound for the registers the instruction reads:
//! the passes keep every instruction's meaning, and a fused instruction reads its operands with
//! the values they have at its first source slot (a three-operand ALU reads its source where the
//! `mov` did, a 6-byte load sits where its first piece was, and a 6-byte store's base register is
//! proved unchanged over the pieces it replaces).

use std::collections::HashMap;

use linerate_analysis::{Analysis, Interval, Region, Shape, State};
use linerate_bpf::insn::Reg;
use linerate_bpf::Object;
use linerate_cfg::Cfg;

use crate::program::LInsn;
use crate::HxdpError;

/// The analysis states in front of each reachable instruction of a program.
#[derive(Clone, Debug, Default)]
pub struct Facts {
    before: HashMap<usize, State>,
}

impl Facts {
    /// Analyses program `program` of `object`.
    pub fn compute(object: &Object, program: usize) -> Result<Facts, HxdpError> {
        let def = object
            .programs
            .get(program)
            .ok_or(HxdpError::NoSuchProgram(program))?;
        let cfg = Cfg::build(def).map_err(|e| HxdpError::Decode {
            program: def.name.clone(),
            reason: format!("control-flow graph: {e}"),
        })?;
        let analysis = Analysis::run(object, &cfg);
        let mut before = HashMap::new();
        for block in cfg.blocks() {
            if block.function != 0 {
                continue;
            }
            before.extend(analysis.slot_states(object, &cfg, block.id));
        }
        Ok(Facts { before })
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
