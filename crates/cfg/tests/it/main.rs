//! The integration tests of `cfg`, one module per concern, linked into one test binary
//! (one link against the workspace and Z3 instead of one per file).

mod common;

mod errors;
mod examples;
mod robustness;
mod shapes;
