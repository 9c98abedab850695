//! The integration tests of `hxdp`, one module per concern, linked into one test binary
//! (one link against the workspace and Z3 instead of one per file).

mod support;

mod compile;
mod motion;
mod passes;
mod perf;
mod rom;
mod sephirot;
