//! Executed paths: the instructions one run executed, as the interpreter records them with
//! [`crate::VmOptions::record_steps`] ([`crate::RunOutcome::steps`]).

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
