//! The integration tests of `colocate`, one module per concern, linked into one test binary
//! (one link against the workspace and Z3 instead of one per file).

mod common;

mod accelerator;
mod composition;
mod device;
mod import;
mod memory;
mod place;
mod predict;
mod profiling;
