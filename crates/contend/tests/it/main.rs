//! The integration tests of `contend`, one module per concern, linked into one test binary
//! (one link against the workspace and Z3 instead of one per file).

mod driver_kernel;
mod host_backend;
mod membench;
mod restoring_driver;
