//! The one rule for kernel-backed tests and benchmarks on a machine without BPF: say so visibly
//! (`SKIPPED: <reason>`), or fail when the run must not skip (`LINERATE_REQUIRE_BPF=1`, which
//! `scripts/test.sh` and therefore CI set).

use crate::check_access;

/// The environment variable that turns every skipped kernel-backed test into a failure when set
/// to `1`.
pub const REQUIRE_BPF_VAR: &str = "LINERATE_REQUIRE_BPF";

/// Whether `LINERATE_REQUIRE_BPF=1` is set.
pub fn bpf_required() -> bool {
    std::env::var_os(REQUIRE_BPF_VAR).is_some_and(|v| v == "1")
}

/// For a kernel-backed test or benchmark that cannot run here: prints `SKIPPED: <reason>` to
/// standard error and returns, so that the caller returns too.
///
/// # Panics
///
/// With `LINERATE_REQUIRE_BPF=1`, panics with the reason instead. Only tests and benchmarks call
/// this; no library path does.
pub fn skip_or_fail(reason: &str) {
    if bpf_required() {
        panic!("{REQUIRE_BPF_VAR}=1, but a kernel-backed check cannot run: {reason}");
    }
    eprintln!("SKIPPED: {reason}");
}

/// [`check_access`] for tests and benchmarks: `true` when this process may use BPF; otherwise
/// [`skip_or_fail`] with `what` (the part that needs the kernel) and the reason, and `false`.
///
/// # Panics
///
/// As [`skip_or_fail`].
pub fn usable_or_skip(what: &str) -> bool {
    match check_access() {
        Ok(()) => true,
        Err(e) => {
            skip_or_fail(&format!("{what}: {e}"));
            false
        }
    }
}
