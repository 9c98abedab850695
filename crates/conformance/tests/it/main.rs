//! The integration tests of `conformance`, one module per concern, linked into one test binary
//! (one link against the workspace and Z3 instead of one per file).

mod corpus_vs_kernel;
mod examples_expected;
mod examples_vs_kernel;
mod expr_agreement;
mod frags_vs_kernel;
mod huge_maps;
mod in_place;
mod kernel_read_vs_kernel;
mod kfuncs_vs_kernel;
mod map_in_map;
mod may_goto_vs_kernel;
mod os_baselines_vs_kernel;
mod random_paths_vs_kernel;
mod random_vs_kernel;
mod records;
mod repeat_vs_kernel;
mod support_doc;
mod syncookies_vs_kernel;
