//! The integration tests of `contend`, one module per concern, linked into one test binary
//! (one link against the workspace and Z3 instead of one per file).

mod driver_kernel;
mod host_backend;
mod membench;
mod restoring_driver;

use std::sync::{Mutex, MutexGuard};

static TIMING: Mutex<()> = Mutex::new(());

/// Held by every test that times something (a competitor's rate, an NF's ns): the harness runs
/// tests in parallel on this machine's two cores, and a test's busy thread on the core a
/// competitor is pinned to (CPU 1) cut its achieved rate by a quarter.
pub(crate) fn timing_alone() -> MutexGuard<'static, ()> {
    TIMING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
