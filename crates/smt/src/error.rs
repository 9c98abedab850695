//! Errors of the symbolic engine: each names the program, the slot and what could not be done.

use linerate_cfg::Decision;
use linerate_sem::SemError;

#[derive(Clone, Debug, thiserror::Error)]
pub enum SmtError {
    #[error(transparent)]
    Sem(#[from] SemError),
    #[error("the object has no program {0}")]
    NoSuchProgram(usize),
    #[error("program `{program}` cannot be decoded: {reason}")]
    Decode { program: String, reason: String },
    #[error("control-flow graph: {0}")]
    Cfg(String),
    /// The path is not one of the program's: its decision `index` does not fit what the
    /// execution reached.
    #[error(
        "decision {index} ({decision:?}) does not match the path: program `{program}` reached \
         {reached} at insn {pc}"
    )]
    Mismatch {
        index: usize,
        decision: Option<Decision>,
        program: String,
        pc: usize,
        reached: &'static str,
    },
    #[error(
        "the path's {given} decisions end before the program does: program `{program}` needs a \
         decision at insn {pc}"
    )]
    PathEnds {
        program: String,
        pc: usize,
        given: usize,
    },
    #[error("the program exits after {used} of the path's {given} decisions")]
    PathTooLong { used: usize, given: usize },
    #[error("the path runs longer than {steps} instructions")]
    TooLong { steps: u64 },
    #[error("program `{program}` insn {pc}: {what} is not modelled by the symbolic engine")]
    Unsupported {
        program: String,
        pc: usize,
        what: String,
    },
    #[error("program `{program}` insn {pc}: {what}")]
    Memory {
        program: String,
        pc: usize,
        what: String,
    },
    /// The path's outcomes chosen inside helpers and callbacks (how often a callback is called,
    /// say) needed more tries than a check makes before every combination was refuted: no
    /// verdict.
    #[error(
        "no verdict after trying {tries} combinations of the outcomes chosen inside helpers and \
         callbacks (how often a callback is called, say)"
    )]
    OutcomesUntried { tries: usize },
}
