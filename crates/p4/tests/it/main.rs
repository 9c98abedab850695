//! The integration tests of `p4`, one module per concern, linked into one test binary
//! (one link against the workspace and Z3 instead of one per file).

mod common;

mod compile;
mod compile_kernel;
mod compile_layout;
mod compile_limits;
mod errors;
mod fuzz;
mod grid;
mod interp;
mod params;
mod programs;
mod syntax;
