//! The meaning of every kernel function (kfunc) linerate models, written once.
//!
//! A kfunc call names its callee (see `linerate_bpf::program`); [`call`] dispatches on that name
//! and gives the function's effect generic over a [`HelperMachine`], like [`crate::helpers::call`]
//! for helpers: arguments in r1–r5, result in r0, memory through the machine. Only functions whose
//! effect is deterministic and independent of kernel state are modelled ([`MODELLED`]); any other
//! is refused at run time with [`SemError::UnmodelledKfunc`], naming the function and the
//! instruction, so reading, inspecting and pricing such a program still work.
//!
//! Modelled:
//! * the number iterator `bpf_iter_num_new` / `_next` / `_destroy` (kernel/bpf/bpf_iter.c), whose
//!   8-byte state on the program's stack is the kernel's `struct bpf_iter_num_kern { int cur;
//!   int end; }`: `new` fails with -EINVAL for `start > end` and -E2BIG for more than
//!   `BPF_MAX_LOOPS` numbers (zeroing the state), else sets `cur = start - 1`; `next` returns a
//!   pointer to `cur` after incrementing it, or NULL (zeroing the state) once `cur + 1 >= end`;
//!   `destroy` zeroes the state. The kernel computes in 32-bit `int`s that wrap
//!   (`-fno-strict-overflow`), as here; `new`'s `int` result arrives zero-extended in r0, as
//!   the kernel's x86-64 code leaves it (checked against the kernel in
//!   `crates/conformance/tests/it/kfuncs_vs_kernel.rs`).

use linerate_bpf::facts::errno::{E2BIG, EINVAL};
use linerate_bpf::facts::kfunc::{ITER_NUM_DESTROY, ITER_NUM_NEW, ITER_NUM_NEXT, ITER_NUM_SIZE};
use linerate_bpf::facts::limits::MAX_LOOPS;

use crate::domain::{BinOp, CmpOp, Domain};
use crate::exec::{Ops, SemError, Val};
use crate::helpers::{from_bytes, push_bytes_of, HelperMachine};

/// Kernel functions [`call`] gives a meaning to, by name.
pub const MODELLED: &[&str] = &[ITER_NUM_NEW, ITER_NUM_NEXT, ITER_NUM_DESTROY];

/// Calls kernel function `name` for the instruction at `pc`: arguments in r1–r5, result in r0.
pub fn call<M: HelperMachine>(m: &mut M, pc: usize, name: &str) -> Result<(), M::Fault> {
    let [_, r1, r2, r3, ..] = std::array::from_fn::<_, 6, _>(|i| m.regs()[i].clone());
    let ret = match name {
        ITER_NUM_NEW => iter_num_new(m, pc, &r1, &r2, &r3)?,
        ITER_NUM_NEXT => iter_num_next(m, pc, &r1)?,
        ITER_NUM_DESTROY => {
            let zero = m.c(0);
            write_iter(m, pc, &r1, &zero, &zero)?;
            // `void`: the verifier lets no one read r0 afterwards.
            zero
        }
        _ => {
            return Err(SemError::UnmodelledKfunc {
                pc,
                name: name.to_string(),
            }
            .into())
        }
    };
    m.regs()[0] = ret;
    Ok(())
}

/// Stores the iterator state `{ cur, end }` (two 32-bit values) at `it`.
fn write_iter<M: HelperMachine>(
    m: &mut M,
    pc: usize,
    it: &Val<M>,
    cur: &Val<M>,
    end: &Val<M>,
) -> Result<(), M::Fault> {
    let mut bytes = Vec::with_capacity(ITER_NUM_SIZE as usize);
    push_bytes_of(m, cur, 4, &mut bytes);
    push_bytes_of(m, end, 4, &mut bytes);
    m.write_bytes(pc, it, &bytes)
}

fn iter_num_new<M: HelperMachine>(
    m: &mut M,
    pc: usize,
    it: &Val<M>,
    start: &Val<M>,
    end: &Val<M>,
) -> Result<Val<M>, M::Fault> {
    let start = m.sext(start, 32);
    let end = m.sext(end, 32);
    let reversed = m.cmp(CmpOp::Slt, &end, &start);
    // Both are sign-extended 32-bit values: their 64-bit difference cannot overflow.
    let span = m.bin(BinOp::Sub, &end, &start);
    let limit = m.c(MAX_LOOPS);
    let too_many = m.cmp(CmpOp::Slt, &limit, &span);
    let d = m.domain();
    let fails = d.or(&reversed, &too_many);
    let zero = m.c(0);
    let before_start = m.bin_c(BinOp::Sub, &start, 1);
    let cur = m.ite(&fails, &zero, &before_start);
    let end = m.ite(&fails, &zero, &end);
    write_iter(m, pc, it, &cur, &end)?;
    let einval = m.c(EINVAL.wrapping_neg() as u64);
    let e2big = m.c(E2BIG.wrapping_neg() as u64);
    let big_or_ok = m.ite(&too_many, &e2big, &zero);
    let ret = m.ite(&reversed, &einval, &big_or_ok);
    // An `int` result: the kernel's x86-64 code sets only eax, which zeroes the upper half (the
    // verifier lets programs rely on the low 32 bits only).
    Ok(m.zext(&ret, 32))
}

fn iter_num_next<M: HelperMachine>(m: &mut M, pc: usize, it: &Val<M>) -> Result<Val<M>, M::Fault> {
    let state = m.read_bytes(pc, it, ITER_NUM_SIZE)?;
    let cur = from_bytes(m, &state[..4]);
    let end = from_bytes(m, &state[4..]);
    let next = m.bin_c(BinOp::Add, &cur, 1);
    let next = m.sext(&next, 32);
    let end = m.sext(&end, 32);
    let running = m.cmp(CmpOp::Slt, &next, &end);
    let zero = m.c(0);
    let cur = m.ite(&running, &next, &zero);
    let end = m.ite(&running, &end, &zero);
    write_iter(m, pc, it, &cur, &end)?;
    // `&s->cur`, the state's first member.
    Ok(m.ite(&running, it, &zero))
}
