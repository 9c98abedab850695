//! The integration tests of `cost`, one module per concern, linked into one test binary
//! (one link against the workspace and Z3 instead of one per file).

mod arbitrary_programs;
mod callbacks;
mod fuzz_regressions;
mod hand_priced;
mod model_rules;
mod nfp_model;
mod path_soundness;
mod random_programs;
