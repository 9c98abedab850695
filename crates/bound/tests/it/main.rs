//! The integration tests of `bound`, one module per concern, linked into one test binary
//! (one link against the workspace and Z3 instead of one per file).

mod common;
mod support;

mod cores;
mod dfs;
mod enumerate;
mod enumerate_examples;
mod learn;
mod prepare_examples;
mod prepare_programs;
mod refutation_attack;
mod ssp;
mod summarised_witnesses;
mod windows;
