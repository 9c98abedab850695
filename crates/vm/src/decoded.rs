//! Programs decoded once for execution, and changed in place by slot.
//!
//! [`Decoded`] holds one [`Op`] per instruction start (the specialised form `linerate_sem`
//! executes with one dispatch). What the semantics leaves to the machine and the interpreter can
//! answer from the object alone is answered here, once: a 64-bit immediate naming a map or a map
//! value becomes the constant [`map_reference`] gives it, so that the instruction loop runs it as
//! a plain constant load instead of asking the machine on every execution.
//!
//! [`Decoded::replace`] puts other instructions into some slots without decoding the rest again:
//! the optimizer evaluates thousands of candidates that differ from the program in a few slots.

use std::rc::Rc;

use linerate_bpf::insn::{Imm64, Instruction};
use linerate_bpf::{Program, ProgramKind};
use linerate_sem::Op;

use crate::error::VmError;
use crate::memory::{pointer, MAP_HANDLE_REGION, MAP_VALUE_REGION};

/// A program decoded for execution: `slots[i]` is the instruction starting at slot `i`,
/// [`Op::Inside`] for the second slot of a 64-bit immediate load.
#[derive(Clone, Debug)]
pub(crate) struct Decoded {
    /// Shared with the running loop, which holds it across tail calls; a replacement while no
    /// run holds it changes it in place.
    pub(crate) slots: Rc<[Op]>,
    /// Whether the program is an XDP program (the section's kind, found once, not per run).
    pub(crate) xdp: bool,
}

/// The value of a 64-bit immediate referring to a map, in an object with `maps` maps: the map's
/// handle, or a pointer into its value; `None` for any other immediate or a map beyond `maps`.
pub(crate) fn map_reference(imm: &Imm64, maps: usize) -> Option<u64> {
    match *imm {
        Imm64::Map(map) if (map as usize) < maps => {
            Some(pointer(MAP_HANDLE_REGION + u64::from(map), 0))
        }
        Imm64::MapValue { map, offset } if (map as usize) < maps => Some(pointer(
            MAP_VALUE_REGION + u64::from(map),
            u64::from(offset),
        )),
        _ => None,
    }
}

/// `insn` decoded, with a map reference replaced by the constant it loads (see the module
/// documentation); a reference to a missing map is left for the machine to refuse when run.
fn decode(insn: &Instruction, maps: usize) -> Op {
    match insn {
        Instruction::LoadImm64 { dst, imm } => match map_reference(imm, maps) {
            Some(value) => Op::new(&Instruction::LoadImm64 {
                dst: *dst,
                imm: Imm64::Const(value),
            }),
            None => Op::new(insn),
        },
        _ => Op::new(insn),
    }
}

impl Decoded {
    /// Decodes `program` for an object with `maps` maps.
    pub(crate) fn new(program: &Program, maps: usize) -> Result<Decoded, VmError> {
        let mut slots = vec![Op::Inside; program.insns.len()];
        for (i, insn) in program.decode().map_err(|source| VmError::Decode {
            program: program.name.clone(),
            source,
        })? {
            slots[i] = decode(&insn, maps);
        }
        Ok(Decoded {
            slots: slots.into(),
            xdp: program.kind() == ProgramKind::Xdp,
        })
    }

    /// Puts `insns` into consecutive slots from `start` (a 64-bit immediate load takes two, the
    /// second of which starts no instruction). Slots after the last are left as they are.
    pub(crate) fn replace(
        &mut self,
        program: &str,
        start: usize,
        insns: &[Instruction],
        maps: usize,
    ) -> Result<(), VmError> {
        let len = self.slots.len();
        let needed: usize = insns.iter().map(Instruction::slots).sum();
        if start.checked_add(needed).is_none_or(|end| end > len) {
            return Err(VmError::Replace {
                program: program.to_string(),
                start,
                needed,
                len,
            });
        }
        let slots = Rc::make_mut(&mut self.slots);
        let mut at = start;
        for insn in insns {
            slots[at] = decode(insn, maps);
            if insn.slots() == 2 {
                slots[at + 1] = Op::Inside;
            }
            at += insn.slots();
        }
        Ok(())
    }
}
