//! The error type of the kernel loader. Every variant displays as one line naming the operation
//! and its cause; the verifier log of a rejected program is a field, not part of the message.

use crate::sys::Errno;

/// An operation on the kernel's BPF subsystem failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KernelError {
    /// This process cannot use BPF at all (not root, no `CAP_BPF`/`CAP_NET_ADMIN`, no `bpf(2)`).
    #[error("BPF not available: {reason}")]
    Unavailable {
        /// Why, as a phrase (`operation not permitted (run as root or ...)`).
        reason: String,
        /// The errno of the probe, when it got that far.
        errno: Option<Errno>,
    },

    /// `BPF_MAP_CREATE` failed for one of the object's maps.
    #[error(
        "BPF_MAP_CREATE for map `{map}` ({map_type}, key {key_size}, value {value_size}, \
         {max_entries} entries) failed: {errno}"
    )]
    MapCreate {
        map: String,
        /// The map type's kernel name (`hash`, `lpm_trie`, ...).
        map_type: String,
        key_size: u32,
        value_size: u32,
        max_entries: u32,
        errno: Errno,
    },

    /// `BPF_PROG_LOAD` failed: the verifier (or the loader checks before it) refused the program.
    #[error("kernel verifier rejected program `{program}`: {errno} (see log)")]
    Rejected {
        program: String,
        errno: Errno,
        /// The full verifier log (log level 1); may be empty when the kernel wrote none.
        log: String,
    },

    /// Any other system call failed; `op` names the call and its object
    /// (`BPF_MAP_UPDATE_ELEM on map `flows``, `BPF_PROG_TEST_RUN of program `xdp_main` (...)`).
    #[error("{op} failed: {errno}")]
    Syscall { op: String, errno: Errno },

    /// The caller passed something the operation cannot accept (wrong key size, unknown index);
    /// the message says what.
    #[error("{0}")]
    InvalidArgument(String),

    /// The program asked for is not an XDP program.
    #[error(transparent)]
    NotXdp(linerate_bpf::NotXdp),

    /// Reading system information (possible CPUs) failed.
    #[error("{0}")]
    System(String),

    /// A program calls a kernel function the running kernel does not have.
    #[error(
        "program `{program}` calls kfunc `{kfunc}`, which the running kernel lacks (not in \
         /sys/kernel/btf/vmlinux{})",
        searched_modules(modules)
    )]
    MissingKfunc {
        program: String,
        kfunc: String,
        /// The kernel modules whose BTF was searched too (empty: no module has BTF).
        modules: Vec<String>,
    },
}

/// The end of [`KernelError::MissingKfunc`]'s message: which module BTF was searched.
fn searched_modules(modules: &[String]) -> String {
    match modules {
        [] => ", and no kernel module has BTF".to_string(),
        [one] => format!(" nor in the BTF of module {one}"),
        more => format!(
            " nor in the BTF of the {} modules {}",
            more.len(),
            more.join(", ")
        ),
    }
}

impl KernelError {
    /// The errno behind this error, if it came from a system call.
    pub fn errno(&self) -> Option<Errno> {
        match self {
            KernelError::Unavailable { errno, .. } => *errno,
            KernelError::MapCreate { errno, .. }
            | KernelError::Rejected { errno, .. }
            | KernelError::Syscall { errno, .. } => Some(*errno),
            KernelError::InvalidArgument(_)
            | KernelError::NotXdp(_)
            | KernelError::System(_)
            | KernelError::MissingKfunc { .. } => None,
        }
    }

    /// The verifier log, if this is a rejection.
    pub fn verifier_log(&self) -> Option<&str> {
        match self {
            KernelError::Rejected { log, .. } => Some(log),
            _ => None,
        }
    }

    pub(crate) fn syscall(op: impl Into<String>, errno: Errno) -> KernelError {
        KernelError::Syscall {
            op: op.into(),
            errno,
        }
    }
}
