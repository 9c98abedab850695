//! Errors of the interpreter. Every message is one line naming the cause and where it happened.

use linerate_bpf::insn::DecodeError;
use linerate_sem::SemError;

use crate::maps::MapError;
use crate::memory::PacketError;

/// Why a program could not be prepared or run.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum VmError {
    #[error("program `{program}`: {source}")]
    Decode {
        program: String,
        source: DecodeError,
    },
    #[error(transparent)]
    Map(#[from] MapError),
    #[error(transparent)]
    Packet(#[from] PacketError),
    #[error("no program with index {0}")]
    NoSuchProgram(usize),
    #[error(transparent)]
    NotXdp(#[from] linerate_bpf::NotXdp),
    #[error("jump to slot {pc} of `{program}`, which is not the start of an instruction")]
    BadJump { program: String, pc: usize },
    #[error("program `{program}`: {needed} slots from slot {start} do not fit its {len} slots")]
    Replace {
        program: String,
        start: usize,
        needed: usize,
        len: usize,
    },
    #[error("stopped after {limit} instructions (unbounded loop?)")]
    InstructionLimit { limit: u64 },
    #[error("memory fault at insn {pc} of `{program}`: {what}")]
    MemoryFault {
        program: String,
        pc: usize,
        what: String,
    },
    #[error("unsupported helper {id} ({name}) at insn {pc} of `{program}`")]
    UnsupportedHelper {
        program: String,
        pc: usize,
        id: u32,
        name: &'static str,
    },
    #[error("bad argument to helper {helper} ({}) at insn {pc} of `{program}`: {reason}", linerate_bpf::helpers::helper_name(*helper))]
    BadHelperArgument {
        program: String,
        pc: usize,
        helper: u32,
        reason: String,
    },
    /// The semantics refused an instruction (its message is part of this one, not a separate
    /// cause, so that it prints once).
    #[error("program `{program}`: {error}")]
    Semantics { program: String, error: SemError },
}

impl From<SemError> for VmError {
    fn from(source: SemError) -> Self {
        VmError::Semantics {
            program: String::new(),
            error: source,
        }
    }
}

/// The interpreter passes faults boxed so that the result of every instruction stays small.
impl From<SemError> for Box<VmError> {
    fn from(source: SemError) -> Self {
        Box::new(VmError::from(source))
    }
}

impl VmError {
    /// Names the program in errors raised by the semantics, which does not know it.
    pub(crate) fn in_program(self, name: &str) -> VmError {
        match self {
            VmError::Semantics {
                error: SemError::UnsupportedHelper { pc, id },
                ..
            } => VmError::UnsupportedHelper {
                program: name.to_string(),
                pc,
                id,
                name: linerate_bpf::helpers::helper_name(id),
            },
            VmError::Semantics {
                error: SemError::BadHelperArgument { pc, helper, reason },
                ..
            } => VmError::BadHelperArgument {
                program: name.to_string(),
                pc,
                helper,
                reason: reason.to_string(),
            },
            VmError::Semantics {
                error: SemError::NotAnInstruction { pc },
                ..
            } => VmError::BadJump {
                program: name.to_string(),
                pc,
            },
            VmError::Semantics { program, error } if program.is_empty() => VmError::Semantics {
                program: name.to_string(),
                error,
            },
            other => other,
        }
    }
}
