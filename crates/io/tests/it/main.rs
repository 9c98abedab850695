//! The integration tests of `io`, one module per concern, linked into one test binary
//! (one link against the workspace and Z3 instead of one per file).

mod maps_of_maps;
mod read_inputs;
