//! The integration tests of `analysis`, one module per concern, linked into one test binary
//! (one link against the workspace and Z3 instead of one per file).

mod callbacks;
mod facts;
mod fuzz_regressions;
mod soundness;
