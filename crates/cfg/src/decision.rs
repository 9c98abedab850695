//! The choices an execution makes that the instructions alone do not fix: which way each
//! conditional jump goes and where each tail call leads. A sequence of them, in execution order,
//! names one path through a program and its tail-called programs; the path graph of `bound`
//! produces such sequences and the symbolic engine follows them.

use serde::{Deserialize, Serialize};

/// One choice along a path, at the instruction in slot `pc` of the program executing then.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Decision {
    /// A conditional jump: whether its condition holds.
    Branch { pc: usize, taken: bool },
    /// A tail call (`bpf_tail_call`): into program `program` of the object, or (`None`) failing
    /// and falling through to the next instruction.
    TailCall { pc: usize, program: Option<usize> },
}

impl Decision {
    /// Slot of the instruction the decision is made at.
    pub fn pc(&self) -> usize {
        match *self {
            Decision::Branch { pc, .. } | Decision::TailCall { pc, .. } => pc,
        }
    }
}
