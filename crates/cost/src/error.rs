//! Errors of model reading and program costing, each one line naming the cause and the place.

/// A model that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("unknown target `{target}` (known: {known})")]
    UnknownTarget { target: String, known: String },
    #[error("cannot read model {path}: {message}")]
    Io { path: String, message: String },
    #[error("invalid model {origin}: {message}")]
    Invalid { origin: String, message: String },
}

/// A program that cannot be costed on a target.
#[derive(Debug, thiserror::Error)]
pub enum CostError {
    #[error("insn {slot} of `{function}` ({item}) cannot run on target {target}: {reason}")]
    Unsupported {
        target: String,
        function: String,
        slot: usize,
        item: String,
        reason: String,
    },
    #[error("insn {slot} of `{function}`: {message}")]
    Program {
        function: String,
        slot: usize,
        message: String,
    },
    #[error(transparent)]
    Cfg(#[from] linerate_cfg::CfgError),
}
