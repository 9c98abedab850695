//! The integration tests of `optimize`, one module per concern, linked into one test binary
//! (one link against the workspace and Z3 instead of one per file).

mod assemble;
mod pipeline;
mod search;
mod whole;
mod windows;
