//! Executed paths: the instructions one run executed, as the interpreter records them with
//! [`crate::VmOptions::record_steps`] ([`crate::RunOutcome::steps`]), and the machine state before
//! each of them with [`crate::VmOptions::record_states`] ([`crate::RunOutcome::states`]), against
//! which the static analyses are checked.

/// One executed instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    /// Index of the program in the object.
    pub program: usize,
    /// Slot of the instruction.
    pub slot: usize,
    /// For a conditional jump or `may_goto`, whether it jumped (a jump to the next slot counts as
    /// not taken).
    pub taken: Option<bool>,
}

impl Step {
    pub(crate) fn new(program: usize, slot: usize, taken: Option<bool>) -> Step {
        Step {
            program,
            slot,
            taken,
        }
    }
}

/// The machine state before one executed instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StepState {
    /// Registers r0–r10 (pointers as [`crate::memory::pointer`] builds them).
    pub regs: [u64; linerate_bpf::insn::NUM_REGS],
    /// Offsets of `data_meta`, `data` and `data_end` in the packet buffer.
    pub data_meta: u64,
    pub data: u64,
    pub data_end: u64,
    /// Call depth: 0 in the entry function.
    pub depth: usize,
}
