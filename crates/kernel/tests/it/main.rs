//! The integration tests of `kernel`, one module per concern, linked into one test binary
//! (one link against the workspace and Z3 instead of one per file).

mod common;

mod btf_load;
mod emit_kernel;
mod load_and_run;
mod readback;
mod rewritten_objects;
mod seed_and_drive;
mod xdp_facts;
