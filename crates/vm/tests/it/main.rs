//! The integration tests of `vm`, one module per concern, linked into one test binary
//! (one link against the workspace and Z3 instead of one per file).

mod common;

mod alu_jmp_table;
mod callbacks;
mod helper_results;
mod seed_and_drive;
mod vm_basics;
