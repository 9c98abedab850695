//! Why a program has no control-flow graph: the structural errors [`crate::Cfg::build`] reports.
//!
//! Every message is one line and names the offending instruction by its slot index (the index
//! `llvm-objdump -d` and the kernel verifier print), so a user can find it in a disassembly.

use linerate_bpf::insn::DecodeError;

/// A program whose control flow is malformed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CfgError {
    /// A slot sequence that does not decode.
    #[error("cannot decode program: {0}")]
    Decode(#[from] DecodeError),
    /// A program without any instruction.
    #[error("program has no instructions")]
    Empty,
    /// The function table of the program does not partition its slots.
    #[error("function {function}: {reason}")]
    InvalidFunction {
        /// Name of the function.
        function: String,
        /// What is wrong with its extent.
        reason: String,
    },
    /// A jump whose target lies outside the function containing it.
    #[error(
        "jump at insn {slot} ({insn}) targets insn {target}, outside function {function} \
         (insns {start}..{end})"
    )]
    JumpOutOfFunction {
        /// Slot of the jump.
        slot: usize,
        /// The jump, disassembled.
        insn: String,
        /// Target slot (may be negative or past the program).
        target: i64,
        /// Name of the function containing the jump.
        function: String,
        /// First slot of the function.
        start: usize,
        /// One past the last slot of the function.
        end: usize,
    },
    /// A jump into the second slot of a 64-bit immediate load.
    #[error(
        "jump at insn {slot} ({insn}) targets insn {target}, the second half of a 64-bit \
         immediate load"
    )]
    JumpIntoImm64 {
        /// Slot of the jump.
        slot: usize,
        /// The jump, disassembled.
        insn: String,
        /// Target slot.
        target: usize,
    },
    /// The last instruction of a function can continue to the next slot.
    #[error("insn {slot} ({insn}) falls off the end of function {function} without an exit")]
    FallsOffEnd {
        /// Slot of the last instruction of the function.
        slot: usize,
        /// That instruction, disassembled.
        insn: String,
        /// Name of the function.
        function: String,
    },
    /// A BPF-to-BPF call or function address load whose target does not start a function.
    #[error("{what} at insn {slot} targets insn {target}, which does not start a function")]
    CallToNonFunction {
        /// `call` or `function address load`.
        what: &'static str,
        /// Slot of the call.
        slot: usize,
        /// Target slot (may be negative or past the program).
        target: i64,
    },
}
