//! The integration tests of `calibrate`, one module per concern, linked into one test binary
//! (one link against the workspace and Z3 instead of one per file).

mod calibrate;
