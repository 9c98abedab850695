//! The integration tests of `smt`, one module per concern, linked into one test binary
//! (one link against the workspace and Z3 instead of one per file).

mod common;

mod agreement;
mod equivalence;
mod examples_witness;
mod helper_choices;
mod input_conflicts;
mod kernel_read;
mod map_aliasing;
mod prefix;
mod session_reuse;
mod unsat_core;
mod window;
mod witness_kernel;
