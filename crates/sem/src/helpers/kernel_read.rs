//! The meaning of the helpers that read from any kernel address: `bpf_probe_read_kernel(dst,
//! size, unsafe_ptr)` and `bpf_probe_read_kernel_str(dst, size, unsafe_ptr)`
//! (kernel/trace/bpf_trace.c), which `bpf_base_func_proto` (kernel/bpf/helpers.c) offers XDP
//! programs loaded with CAP_PERFMON.
//!
//! Both read with the kernel's fault-tolerant copies (mm/maccess.c). An address
//! `copy_from_kernel_nofault_allowed` refuses (user space, non-canonical, the vsyscall page: see
//! [`LOWEST_READABLE`]) gives `-ERANGE`, a read that faults (an unmapped address) `-EFAULT`, and
//! either makes the helper zero all `size` bytes of `dst`. Otherwise `bpf_probe_read_kernel`
//! copies `size` bytes (`copy_from_kernel_nofault`) and returns 0, and `bpf_probe_read_kernel_str`
//! copies bytes up to and including the first NUL, at most `size` of them, the last made NUL
//! where none came sooner (`strncpy_from_kernel_nofault`), returns how many it copied and leaves
//! the rest of `dst` as it was. With `size` 0, `bpf_probe_read_kernel` still refuses an address
//! (`-ERANGE`) and otherwise returns 0; `bpf_probe_read_kernel_str` returns 0 before looking at
//! the address.
//!
//! The verifier checks `dst` and `size` (`ARG_PTR_TO_UNINIT_MEM`, `ARG_CONST_SIZE_OR_ZERO`) and
//! nothing of the address (`ARG_ANYTHING`). Where the bytes lie in memory the machine holds
//! ([`Whereabouts`]: what a pointer the machine handed the program reaches), they are read.
//! Kernel memory no machine holds (an object a kfunc returned, a number a program made in the
//! kernel half) is a source: whether the read succeeds, faults or is refused by the running
//! kernel ([`Source::KernelRead`]) and each byte it reads ([`Source::KernelByte`]).

use linerate_bpf::facts::errno::{EFAULT, ERANGE};
use linerate_bpf::facts::helper as id;
use linerate_bpf::facts::kernel_read::LOWEST_READABLE;
use linerate_bpf::facts::test_run_buffer::FRAME_SIZE;

use super::{signed, HelperMachine, Source, Whereabouts};
use crate::domain::{CmpOp, Domain};
use crate::exec::{Bool, Ops, Val};

/// What reading `size` bytes at an address gives, before a helper writes `dst`.
struct Read<M: HelperMachine> {
    /// `size`, a `u32`.
    size: Val<M>,
    /// `size` is 0.
    empty: Bool<M>,
    /// The bytes at the address, where the read succeeds.
    bytes: Vec<Val<M>>,
    /// The kernel refuses the address (`-ERANGE`).
    refused: Bool<M>,
    /// The read of at least one byte faults (`-EFAULT`).
    faulted: Bool<M>,
}

/// Reads `size` bytes at `src` for `helper`.
fn read<M: HelperMachine>(
    m: &mut M,
    pc: usize,
    helper: u32,
    size: &Val<M>,
    src: &Val<M>,
) -> Result<Read<M>, M::Fault> {
    let size = m.zext(size, 32);
    // The verifier bounds `size` by `dst`'s memory; a page covers the stack and every buffer.
    let len = m.byte_count(pc, helper, &size, FRAME_SIZE)?;
    let Whereabouts {
        held,
        number,
        value,
    } = m.locate(pc, src, len)?;
    let lowest = m.c(LOWEST_READABLE);
    let below = m.cmp(CmpOp::Ult, &value, &lowest);
    let d = m.domain();
    let below_kernel = d.and(&number, &below);
    let allowed = d.not(&below_kernel);
    let not_held = d.not(&held);
    let elsewhere = d.and(&not_held, &allowed);
    let zero = m.c(0);
    // Read held memory only where the bytes are there; elsewhere the machine has none to read.
    let held_bytes = if m.decide(pc, &held)? {
        m.read_bytes(pc, src, len)?
    } else {
        vec![zero.clone(); len as usize]
    };
    let (fault, host_refuses, other_bytes) = if m.decide(pc, &elsewhere)? {
        let outcome = m.source(pc, Source::KernelRead)?;
        let (one, two) = (m.c(1), m.c(2));
        let fault = m.cmp(CmpOp::Eq, &outcome, &one);
        let host_refuses = m.cmp(CmpOp::Ule, &two, &outcome);
        let bytes = (0..len)
            .map(|_| m.source(pc, Source::KernelByte))
            .collect::<Result<Vec<_>, _>>()?;
        (fault, host_refuses, bytes)
    } else {
        let never = m.domain().truth(false);
        (never.clone(), never, vec![zero; len as usize])
    };
    let empty = m.is_zero(&size);
    let d = m.domain();
    let some = d.not(&empty);
    let refused_here = d.and(&elsewhere, &host_refuses);
    let refused = d.or(&below_kernel, &refused_here);
    // With nothing to copy, the copy loops never touch memory: nothing faults.
    let faults_elsewhere = d.and(&elsewhere, &fault);
    let faulted = d.and(&faults_elsewhere, &some);
    let bytes = held_bytes
        .iter()
        .zip(&other_bytes)
        .map(|(h, o)| m.ite(&held, h, o))
        .collect();
    Ok(Read {
        size,
        empty,
        bytes,
        refused,
        faulted,
    })
}

/// `success` where the read neither was refused nor faulted, else `-ERANGE` or `-EFAULT`.
fn result<M: HelperMachine>(
    m: &mut M,
    refused: &Bool<M>,
    faulted: &Bool<M>,
    success: &Val<M>,
) -> Val<M> {
    let (erange, efault) = (signed(m, -ERANGE), signed(m, -EFAULT));
    let unrefused = m.ite(faulted, &efault, success);
    m.ite(refused, &erange, &unrefused)
}

/// `bpf_probe_read_kernel(dst, size, src)`: 0 with `size` bytes copied, or `-ERANGE`/`-EFAULT`
/// with `dst` zeroed.
pub(super) fn copy<M: HelperMachine>(
    m: &mut M,
    pc: usize,
    dst: &Val<M>,
    size: &Val<M>,
    src: &Val<M>,
) -> Result<Val<M>, M::Fault> {
    let r = read(m, pc, id::PROBE_READ_KERNEL, size, src)?;
    let fails = m.domain().or(&r.refused, &r.faulted);
    let zero = m.c(0);
    let out: Vec<Val<M>> = r.bytes.iter().map(|b| m.ite(&fails, &zero, b)).collect();
    if !out.is_empty() {
        m.write_bytes(pc, dst, &out)?;
    }
    Ok(result(m, &r.refused, &r.faulted, &zero))
}

/// `bpf_probe_read_kernel_str(dst, size, src)`: the bytes copied (the string with its NUL, or
/// `size` bytes the last of them made NUL), 0 for `size` 0, or `-ERANGE`/`-EFAULT` with `dst`
/// zeroed.
pub(super) fn copy_string<M: HelperMachine>(
    m: &mut M,
    pc: usize,
    dst: &Val<M>,
    size: &Val<M>,
    src: &Val<M>,
) -> Result<Val<M>, M::Fault> {
    let r = read(m, pc, id::PROBE_READ_KERNEL_STR, size, src)?;
    // The copy stops after the first NUL, or after `size` bytes; the earliest NUL wins.
    let mut copied = r.size.clone();
    for (i, byte) in r.bytes.iter().enumerate().rev() {
        let nul = m.is_zero(byte);
        let at = m.c(i as u64);
        let within = m.cmp(CmpOp::Ult, &at, &r.size);
        let ends = m.domain().and(&nul, &within);
        let count = m.c(i as u64 + 1);
        copied = m.ite(&ends, &count, &copied);
    }
    // `size` 0 returns before the address is looked at.
    let some = m.domain().not(&r.empty);
    let refused = m.domain().and(&r.refused, &some);
    let fails = m.domain().or(&refused, &r.faulted);
    if !r.bytes.is_empty() {
        let old = m.read_bytes(pc, dst, r.bytes.len() as u64)?;
        let zero = m.c(0);
        let mut out = Vec::with_capacity(old.len());
        for (i, (byte, old)) in r.bytes.iter().zip(&old).enumerate() {
            let position = m.c(i as u64 + 1);
            let copied_here = m.cmp(CmpOp::Ult, &position, &copied);
            let last = m.cmp(CmpOp::Eq, &position, &copied);
            let kept = m.ite(&last, &zero, old);
            let written = m.ite(&copied_here, byte, &kept);
            out.push(m.ite(&fails, &zero, &written));
        }
        m.write_bytes(pc, dst, &out)?;
    }
    Ok(result(m, &refused, &r.faulted, &copied))
}
