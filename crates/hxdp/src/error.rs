//! What can go wrong compiling for, or running on, the hXDP core.

/// An error of this crate: each names the program and the place.
#[derive(Debug, thiserror::Error)]
pub enum HxdpError {
    #[error("the object has no program {0}")]
    NoSuchProgram(usize),
    #[error("program {program}: {reason}")]
    Decode { program: String, reason: String },
    #[error("program {program}, insn {slot}: the hXDP core cannot run {what}")]
    Unsupported {
        program: String,
        slot: usize,
        what: String,
    },
    #[error(
        "program {program} needs {rows} VLIW rows, but the instruction memory holds {capacity}"
    )]
    TooLong {
        program: String,
        rows: usize,
        capacity: usize,
    },
}
