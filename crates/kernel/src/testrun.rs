//! Running a loaded XDP program once (or `repeat` times) on a packet with `BPF_PROG_TEST_RUN`.
//!
//! See the crate documentation for exactly how the kernel lays out the packet buffer; this module
//! always passes an `xdp_md` context in and out, so that metadata in and out can be told apart
//! from packet bytes, and always runs on CPU 0.

use std::os::fd::AsRawFd;

use crate::error::KernelError;
use crate::object::LoadedObject;
use crate::sys::{self, Cmd, Errno};
use linerate_bpf::facts::test_run_buffer::{FRAG_SIZE, MAX_DATA, MAX_FRAGS, MAX_PACKET};

/// Extra room in the output buffer beyond the input size: a program grows the packet by at most
/// the buffer's headroom plus either the frame's tailroom or the last fragment's room in its
/// page, together less than two pages.
const OUTPUT_SLACK: usize = 2 * FRAG_SIZE as usize;

/// What to run a program on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TestRunInput {
    /// Packet bytes. At least 14 bytes (`ETH_HLEN`), else the kernel answers `EINVAL`. The first
    /// 3520 are the linear part (`data .. data_end`); the kernel puts the rest in page fragments,
    /// at most 17 of them (`ENOMEM` beyond), whether or not the program is frags-aware.
    pub packet: Vec<u8>,
    /// XDP metadata placed right before the packet (`data_meta .. data`): a multiple of 4 bytes, at
    /// most 32, else the kernel answers `EINVAL`.
    pub meta: Vec<u8>,
    /// `xdp_md.ingress_ifindex`: 0 means the loopback device of the current network namespace
    /// (which the program then also sees as its ingress device); otherwise a real device.
    pub ingress_ifindex: u32,
    /// `xdp_md.rx_queue_index`: must be 0 when `ingress_ifindex` is 0, otherwise below the device's
    /// number of real receive queues.
    pub rx_queue_index: u32,
    /// Number of runs (0 counts as 1). The runs share one buffer: a program that moves packet
    /// bounds moves them again on the next run.
    pub repeat: u32,
    /// Drop what the run sends to ring buffers and perf event arrays, and the note of a perf
    /// ring that overflowed, as repeated runs always do: for runs timed or checked for their
    /// action only, after repeated runs may have overflowed a ring.
    pub discard_records: bool,
}

impl TestRunInput {
    /// One run on `packet`, with no metadata, on the loopback device's queue 0.
    pub fn new(packet: impl Into<Vec<u8>>) -> TestRunInput {
        TestRunInput {
            packet: packet.into(),
            ..Default::default()
        }
    }
}

/// What a test run produced.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TestRunOutput {
    /// The program's return value (XDP action) of the last run.
    pub retval: u32,
    /// Packet bytes after the last run: the linear part (`data .. data_end`) followed by the
    /// fragments.
    pub packet: Vec<u8>,
    /// Metadata after the last run (`data_meta .. data`).
    pub meta: Vec<u8>,
    /// Average duration of one run in nanoseconds, as the kernel measures it (the total time of
    /// all runs divided by `repeat`, rounded down, saturating at `u32::MAX`).
    pub duration_ns: u32,
    /// The output size the kernel reported (`data_end - data_meta` plus the fragments, metadata
    /// included).
    pub data_size_out: u32,
    /// Records the run sent to ring buffers and perf event arrays, read after the call; empty
    /// with `repeat > 1` (the repeated runs' records are drained and dropped: they would
    /// overflow the rings, and a repeated run reports only timing faithfully).
    pub records: linerate_bpf::records::Records,
}

impl LoadedObject {
    /// Runs program `program_index` with `BPF_PROG_TEST_RUN` on CPU 0 (the calling thread is pinned
    /// to CPU 0 for the call and its previous affinity restored afterwards).
    pub fn test_run(
        &self,
        program_index: usize,
        input: &TestRunInput,
    ) -> Result<TestRunOutput, KernelError> {
        let (name, fd) = self.program(program_index)?;
        let too_large = if input.packet.len() as u64 > MAX_PACKET {
            format!(
                ": more than the {MAX_PACKET} bytes the kernel takes, {MAX_DATA} in the buffer \
                 and {MAX_FRAGS} fragments of {FRAG_SIZE}"
            )
        } else {
            String::new()
        };
        let describe = || {
            format!(
                "{} of program `{name}` (packet {} bytes{too_large}, meta {}, ifindex {}, \
                 rx queue {})",
                Cmd::ProgTestRun,
                input.packet.len(),
                input.meta.len(),
                input.ingress_ifindex,
                input.rx_queue_index
            )
        };

        let mut data_in = Vec::with_capacity(input.meta.len() + input.packet.len());
        data_in.extend_from_slice(&input.meta);
        data_in.extend_from_slice(&input.packet);
        let size_in = u32::try_from(data_in.len()).map_err(|_| {
            KernelError::InvalidArgument(format!("{}: input too large", describe()))
        })?;
        let meta_len = input.meta.len() as u32;
        let mut data_out = vec![0u8; data_in.len() + OUTPUT_SLACK];
        let ctx_in = sys::XdpMd {
            data: meta_len,
            data_end: size_in,
            data_meta: 0,
            ingress_ifindex: input.ingress_ifindex,
            rx_queue_index: input.rx_queue_index,
            egress_ifindex: 0,
        };
        let mut ctx_out = sys::XdpMd::default();
        let ctx_size = std::mem::size_of::<sys::XdpMd>() as u32;
        let mut attr = sys::TestRunAttr {
            prog_fd: fd.as_raw_fd() as u32,
            data_size_in: size_in,
            data_size_out: data_out.len() as u32,
            data_in: sys::ptr_u64(data_in.as_ptr()),
            data_out: sys::ptr_u64(data_out.as_mut_ptr()),
            repeat: input.repeat,
            ctx_size_in: ctx_size,
            ctx_size_out: ctx_size,
            ctx_in: sys::ptr_u64(&ctx_in as *const sys::XdpMd),
            ctx_out: sys::ptr_u64(&mut ctx_out as *mut sys::XdpMd),
            ..Default::default()
        };

        let pin = CpuPin::cpu0().map_err(|errno| {
            KernelError::syscall("sched_setaffinity(CPU 0) for BPF_PROG_TEST_RUN", errno)
        })?;
        // SAFETY: `data_in` is readable for `data_size_in` bytes, `data_out` writable for
        // `data_size_out` bytes, `ctx_in`/`ctx_out` are `ctx_size` bytes; all outlive the call.
        let res = unsafe { sys::sys_bpf(Cmd::ProgTestRun, &mut attr) };
        drop(pin);
        res.map_err(|errno| KernelError::syscall(describe(), errno))?;
        let records = self.take_records(input.repeat <= 1 && !input.discard_records)?;

        let total = (attr.data_size_out as usize).min(data_out.len());
        let meta_out = (ctx_out.data as usize).min(total);
        data_out.truncate(total);
        let packet = data_out.split_off(meta_out);
        Ok(TestRunOutput {
            retval: attr.retval,
            packet,
            meta: data_out,
            duration_ns: attr.duration,
            data_size_out: attr.data_size_out,
            records,
        })
    }
}

/// Pins the calling thread to CPU 0 while alive; restores the previous affinity mask on drop.
struct CpuPin {
    old: libc::cpu_set_t,
}

impl CpuPin {
    fn cpu0() -> Result<CpuPin, Errno> {
        let size = std::mem::size_of::<libc::cpu_set_t>();
        // SAFETY: `cpu_set_t` is a plain bit array for which all-zero is a valid (empty) value.
        let mut old: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: `old` is a writable `cpu_set_t` of `size` bytes; pid 0 is the calling thread.
        if unsafe { libc::sched_getaffinity(0, size, &mut old) } != 0 {
            return Err(Errno::last());
        }
        // SAFETY: as above, all-zero is the empty set.
        let mut only0: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: CPU 0 is within the set's capacity.
        unsafe { libc::CPU_SET(0, &mut only0) };
        // SAFETY: `only0` is a valid `cpu_set_t` of `size` bytes; pid 0 is the calling thread.
        if unsafe { libc::sched_setaffinity(0, size, &only0) } != 0 {
            return Err(Errno::last());
        }
        Ok(CpuPin { old })
    }
}

impl Drop for CpuPin {
    fn drop(&mut self) {
        // SAFETY: `old` is the valid mask read in `cpu0`; pid 0 is the calling thread. Failure
        // leaves the thread pinned to CPU 0, which is harmless.
        unsafe {
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &self.old);
        }
    }
}
