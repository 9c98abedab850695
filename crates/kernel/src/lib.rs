//! The kernel of this machine as ground truth: load linerate's program model into it and run
//! programs with `BPF_PROG_TEST_RUN`.
//!
//! Everything goes through raw `bpf(2)` system calls (the private `sys` module holds the
//! attribute structs); there is no libbpf. [`load_object`] creates every map of an
//! [`linerate_bpf::Object`] and writes and freezes global data; each XDP program is loaded as
//! `BPF_PROG_TYPE_XDP` when first used, with the map file descriptors as `fd_array` (the linked
//! instructions name maps by index), the program arrays' declared slots written with it. Programs
//! of other kinds (TC, tracepoint, fentry, ... beside the XDP programs of one object) are never
//! loaded, and a program the verifier refuses fails only the runs that need it.
//! [`LoadedObject::test_run`] runs a program on a packet on CPU 0. Programs are never attached to a
//! network interface. [`LoadedObject::contents`] reads a map back in bulk (a mapping of arrays,
//! batch lookups of hashes), so maps of millions of elements read in milliseconds to tenths of a
//! second. [`check_access`] tells whether this process may use BPF at all;
//! [`usable_or_skip`] and [`skip_or_fail`] are how kernel-backed tests and benchmarks act on the
//! answer (skip visibly, or fail under `LINERATE_REQUIRE_BPF=1`). [`LoadedObject::seed`] writes a
//! map seed and [`drive`] runs packet after packet with persistent or fresh maps, as `linerate_vm`
//! does in the interpreter.
//!
//! # How XDP `BPF_PROG_TEST_RUN` lays out the packet (Linux 6.18, x86-64, 4 KiB pages)
//!
//! Read from `net/bpf/test_run.c` (`bpf_prog_test_run_xdp`, `xdp_convert_md_to_buff`) and
//! `net/core/filter.c` (`bpf_xdp_adjust_head/_tail/_meta`), and pinned by this crate's tests on
//! this machine. The interpreter must reproduce these facts exactly.
//!
//! * **Buffer.** The kernel allocates one zeroed 4096-byte frame (`frame_sz`). Offsets below are
//!   from its start (`data_hard_start`). The first 40 bytes are reserved for `struct xdp_frame`
//!   and the last 320 for `struct skb_shared_info`.
//! * **Input.** `data_in` is metadata followed by the packet; with an `xdp_md` in `ctx_in`,
//!   `ctx.data` is the metadata length and `ctx.data_end` must equal `data_size_in`
//!   (`ctx.data_meta` must be 0). The packet starts at offset 256 (`XDP_PACKET_HEADROOM`), the
//!   metadata right before it at `256 - meta_len`. The packet must be at least 14 bytes
//!   (`ETH_HLEN`) and the metadata a multiple of 4 bytes of at most 216, else `EINVAL`.
//!   This crate always passes `ctx_in`/`ctx_out`; with `ingress_ifindex == 0` that is exactly the
//!   behaviour without a context.
//! * **Device.** `ingress_ifindex == 0` means the loopback device's queue 0: the program reads
//!   `ctx->ingress_ifindex == 1` (lo) and `rx_queue_index == 0`. A non-zero ifindex must name an
//!   existing device (`ENODEV` otherwise) and `rx_queue_index` must be below its real number of RX
//!   queues (`EINVAL` otherwise; lo has one queue). `rx_queue_index != 0` with ifindex 0 is
//!   `EINVAL`. `egress_ifindex` must be 0.
//! * **Headroom** (`bpf_xdp_adjust_head`, negative offsets grow the packet): `data` may move down
//!   to offset `40 + meta_len`, i.e. the packet can grow at the front by `216 - meta_len` bytes;
//!   the metadata is moved along (`memmove`). Shrinking must leave at least 14 bytes
//!   (`data <= data_end - 14`). Failure returns `-EINVAL` and changes nothing. Bytes exposed at
//!   the front are *not* cleared: they are whatever the frame held (zero initially, but stale
//!   metadata bytes or previously removed packet bytes when those were there).
//! * **Tailroom** (`bpf_xdp_adjust_tail`): `data_end` may grow up to offset `4096 - 320 = 3776`,
//!   i.e. `data_end - (original data) <= 3520`; a 64-byte packet can grow by 3456 bytes at the tail
//!   (plus whatever `adjust_head` added at the front). Grown bytes are zeroed. Shrinking must leave
//!   at least 14 bytes (`data_end >= data + 14`). Failure returns `-EINVAL` and changes nothing.
//! * **Metadata** (`bpf_xdp_adjust_meta`): the new `data_meta` must satisfy
//!   `40 <= data_meta <= data` (else `-EINVAL`) and `data - data_meta` must be a multiple of 4
//!   (else `-EACCES`). There is no 32-byte cap on this kernel: up to 216 bytes of metadata when
//!   `data` is at 256. Newly exposed metadata bytes are not cleared (zero in a fresh frame).
//! * **Output.** `data_out` receives `data_meta .. data_end` — the metadata *followed by* the
//!   packet — and `data_size_out` is that total length; `ctx_out.data` is the metadata length,
//!   which [`TestRunOutput`] uses to split the two.
//! * **Large packets.** A packet longer than 3520 bytes becomes a multi-buffer frame even for a
//!   program loaded without `BPF_F_XDP_HAS_FRAGS` (the flag, which `xdp.frags` sections set,
//!   only matters where a program is attached): the program sees only the first 3520 bytes
//!   (`data_end - data == 3520`), the rest sits in fragments of up to 4096 bytes, all full but
//!   the last, at most 17 (`MAX_SKB_FRAGS`; a longer packet is `ENOMEM`, so 73,152 bytes at
//!   most). `bpf_xdp_get_buff_len` counts the fragments, `bpf_xdp_load/store_bytes` reach into
//!   them (offsets up to 0xffff), `adjust_tail` grows the last fragment within its page or
//!   shrinks from the end, dropping emptied fragments and then taking from the linear part
//!   (`-INT_MIN` shrinks nothing and succeeds), and `data_out` receives the linear part followed
//!   by the fragments. The interpreter reproduces all of it.
//! * **Repeat.** All `repeat` runs share the same frame and context: packet writes and moved
//!   bounds persist from one run to the next (a program doing `adjust_head(-4)` run 3 times
//!   returns a packet 12 bytes longer). `retval` is the last run's. `duration` is the total time
//!   divided by `repeat` (nanoseconds, rounded down). Compare semantics with `repeat == 1`.
//! * **CPU.** The runs execute on the calling thread's CPU with migration disabled; this crate
//!   pins the thread to CPU 0 for the call, so per-CPU map values touched are CPU 0's.

mod btf;
pub mod drive;
mod error;
pub mod kbtf;
mod map_in_map;
pub mod module_btf;
mod object;
mod queue;
mod readback;
mod records;
mod seed;
mod skip;
mod sys;
mod testrun;

pub use btf::ProgramBtfInfo;
pub use error::KernelError;
pub use object::{load_entry, load_object, load_object_sharing, LoadedObject, MapEntries};
pub use skip::{bpf_required, skip_or_fail, usable_or_skip, REQUIRE_BPF_VAR};
pub use sys::{Errno, ENOTSUPP};
pub use testrun::{TestRunInput, TestRunOutput};

use linerate_bpf::insn::build;
use std::os::fd::{FromRawFd, OwnedFd};

/// Checks cheaply that this process may use BPF: creates (and closes) a one-element array map and
/// loads (and closes) the XDP program `r0 = XDP_PASS; exit`.
///
/// The error is [`KernelError::Unavailable`] with a one-line reason, e.g. `BPF not available:
/// operation not permitted (run as root or grant CAP_BPF+CAP_NET_ADMIN)`.
pub fn check_access() -> Result<(), KernelError> {
    let unavailable = |what: &str, errno: sys::Errno| {
        let reason = match errno.0 {
            libc::EPERM | libc::EACCES => {
                "operation not permitted (run as root or grant CAP_BPF+CAP_NET_ADMIN)".to_string()
            }
            libc::ENOSYS => format!("{what}: the kernel does not implement the bpf() system call"),
            _ => format!("{what} failed: {errno}"),
        };
        KernelError::Unavailable {
            reason,
            errno: Some(errno),
        }
    };

    let mut map = sys::MapCreateAttr {
        map_type: linerate_bpf::MapType::ARRAY.0,
        key_size: 4,
        value_size: 4,
        max_entries: 1,
        map_name: sys::obj_name("linerate_probe"),
        ..Default::default()
    };
    // SAFETY: MAP_CREATE reads no pointers from these attributes.
    let fd = unsafe { sys::sys_bpf(sys::Cmd::MapCreate, &mut map) }
        .map_err(|e| unavailable("creating a BPF map", e))?;
    // SAFETY: the kernel just returned this descriptor; we own it and close it on drop.
    drop(unsafe { OwnedFd::from_raw_fd(fd as i32) });

    let program = linerate_bpf::insn::encode_all(&[
        build::mov64(0, linerate_bpf::facts::xdp::XDP_PASS as i32),
        build::exit(),
    ]);
    let insns: Vec<u8> = program.iter().flat_map(|i| i.to_bytes()).collect();
    let license = c"GPL";
    let mut prog = sys::ProgLoadAttr {
        prog_type: sys::PROG_TYPE_XDP,
        insn_cnt: program.len() as u32,
        insns: sys::ptr_u64(insns.as_ptr()),
        license: sys::ptr_u64(license.as_ptr()),
        prog_name: sys::obj_name("linerate_probe"),
        expected_attach_type: sys::ATTACH_XDP,
        ..Default::default()
    };
    // SAFETY: `insns` holds `insn_cnt` instructions and `license` is NUL-terminated; both outlive the call.
    let fd = unsafe { sys::sys_bpf(sys::Cmd::ProgLoad, &mut prog) }
        .map_err(|e| unavailable("loading an XDP program", e))?;
    // SAFETY: as above.
    drop(unsafe { OwnedFd::from_raw_fd(fd as i32) });
    Ok(())
}

/// Number of possible CPUs (`/sys/devices/system/cpu/possible`), which is the number of values the
/// kernel exchanges per key of a per-CPU map.
pub fn possible_cpus() -> Result<usize, KernelError> {
    const PATH: &str = "/sys/devices/system/cpu/possible";
    let text = std::fs::read_to_string(PATH)
        .map_err(|e| KernelError::System(format!("cannot read {PATH}: {e}")))?;
    parse_cpu_list(text.trim())
        .ok_or_else(|| KernelError::System(format!("cannot parse {PATH}: `{}`", text.trim())))
}

/// Counts the CPUs of a kernel CPU list such as `0-3,6,8-9`.
fn parse_cpu_list(list: &str) -> Option<usize> {
    let mut count = 0usize;
    for part in list.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let a: usize = a.trim().parse().ok()?;
                let b: usize = b.trim().parse().ok()?;
                count += b.checked_sub(a)? + 1;
            }
            None => {
                part.trim().parse::<usize>().ok()?;
                count += 1;
            }
        }
    }
    (count > 0).then_some(count)
}

#[cfg(test)]
mod tests {
    use super::parse_cpu_list;

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0"), Some(1));
        assert_eq!(parse_cpu_list("0-1"), Some(2));
        assert_eq!(parse_cpu_list("0-3,6,8-9"), Some(7));
        assert_eq!(parse_cpu_list(""), None);
        assert_eq!(parse_cpu_list("x"), None);
    }
}
