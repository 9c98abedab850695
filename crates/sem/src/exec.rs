//! The meaning of every BPF instruction, written once.
//!
//! [`step`] executes one decoded instruction on a [`Machine`]: a register file and call stack of
//! domain values plus the environment-specific parts — memory, map references, helpers and how a
//! branch condition is decided. The interpreter (`linerate-vm`) instantiates it with machine
//! integers, the symbolic engine with bit-vector formulas, and [`crate::expr`] with expression
//! trees; all of them get the effect of an opcode from here and nowhere else.

use linerate_bpf::insn::{
    AluOp, AtomicOp, CallTarget, Cond, Endian, Imm64, Instruction, Operand, Reg, Size,
    FRAME_POINTER, NUM_REGS,
};

use crate::domain::{BinOp, CmpOp, Domain};
use crate::helpers::Callback;

pub use linerate_bpf::facts::limits::{MAX_CALL_FRAMES, STACK_FRAME_SIZE};

/// An instruction the semantics refuses to execute.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SemError {
    #[error("unsupported instruction at insn {pc}: {what}")]
    Unsupported { pc: usize, what: &'static str },
    /// Control reached slot `pc`, the second slot of a 64-bit immediate load, where no
    /// instruction starts (the verifier refuses a jump there).
    #[error("slot {pc} is the second half of a 64-bit immediate load, not an instruction")]
    NotAnInstruction { pc: usize },
    #[error("call stack deeper than {MAX_CALL_FRAMES} frames at insn {pc}")]
    CallDepth { pc: usize },
    #[error("unsupported helper {id} ({}) at insn {pc}", linerate_bpf::helpers::helper_name(*id))]
    UnsupportedHelper { pc: usize, id: u32 },
    #[error("bad argument to helper {helper} ({}) at insn {pc}: {reason}", linerate_bpf::helpers::helper_name(*helper))]
    BadHelperArgument {
        pc: usize,
        helper: u32,
        reason: &'static str,
    },
    /// A kfunc call to a kernel function [`crate::kfuncs`] gives no meaning to.
    #[error("kfunc {name} is not modelled (insn {pc})")]
    UnmodelledKfunc { pc: usize, name: String },
    /// A kfunc call whose immediate names no kfunc of the object.
    #[error("kfunc call at insn {pc} names kfunc {index}, but the object declares {count}")]
    NoSuchKfunc { pc: usize, index: i32, count: usize },
}

/// What a helper call did to control flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HelperOutcome {
    /// The helper returned; r0 holds its result.
    Return,
    /// A tail call succeeded: the current program ends and the target program starts afresh.
    TailCall,
    /// The helper called a callback (`bpf_loop`, `bpf_for_each_map_elem`): its frame is pushed
    /// and its arguments are in r1–r5; execution continues at this slot, the callback's first.
    /// When the callback exits, the helper resumes ([`Machine::resume_helper`]).
    Callback(usize),
}

/// Where execution goes after an instruction. A conditional jump is reported as data — its
/// condition and both successors — and each machine decides what to do with it: evaluate it (the
/// interpreter), follow one side and assume its condition (path-wise symbolic execution, abstract
/// interpretation), or merge both (a whole-program formula). `B` is the domain's condition type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow<B> {
    /// Continue at this slot.
    Next(usize),
    /// A conditional jump: control goes to `taken` where `cond` holds, else to `fallthrough`.
    Branch {
        cond: B,
        taken: usize,
        fallthrough: usize,
    },
    /// A `may_goto`: control goes to `exhausted` once the program's loop budget is used up,
    /// else to `next`, using up one unit of it. The budget is the machine's: the kernel's is
    /// `BPF_MAX_LOOPS` per program run (`linerate_bpf::facts::limits::MAX_LOOPS`).
    LoopBudget { exhausted: usize, next: usize },
    /// The program returned; r0 holds its return value.
    Exit,
    /// A tail call replaced the program (see [`HelperOutcome::TailCall`]).
    TailCall,
}

/// The caller's state saved by a BPF-to-BPF call.
#[derive(Clone, Debug)]
pub struct Frame<V> {
    /// Slot to continue at on return.
    pub return_pc: usize,
    /// r6–r9 and r10 of the caller.
    pub saved: [V; 5],
    /// For a callback's frame, the helper that called it, resumed on its return.
    pub resume: Option<Callback<V>>,
}

/// An environment the semantics executes in.
pub trait Machine {
    /// The value domain.
    type D: Domain;
    /// The error type; it must be able to carry the semantics' own errors.
    type Fault: From<SemError>;

    /// The value domain.
    fn domain(&mut self) -> &mut Self::D;
    /// Registers r0–r10.
    fn regs(&mut self) -> &mut [Val<Self>; NUM_REGS];
    /// Saved frames of the active BPF-to-BPF calls, innermost last.
    fn frames(&mut self) -> &mut Vec<Frame<Val<Self>>>;
    /// Allocates the stack frame of a newly called function and returns its frame pointer (one
    /// past the end of the frame). `depth` is the new frame's index (the entry function's is 0).
    fn push_stack_frame(&mut self, depth: usize) -> Result<Val<Self>, Self::Fault>;
    /// Releases the innermost stack frame.
    fn pop_stack_frame(&mut self);
    /// Loads `size` bytes at `addr`, zero-extended to 64 bits.
    fn load(&mut self, pc: usize, addr: &Val<Self>, size: Size) -> Result<Val<Self>, Self::Fault>;
    /// Stores the low `size` bytes of `value` at `addr`.
    fn store(
        &mut self,
        pc: usize,
        addr: &Val<Self>,
        size: Size,
        value: &Val<Self>,
    ) -> Result<(), Self::Fault>;
    /// The value of a 64-bit immediate load that refers to a map.
    fn map_reference(&mut self, pc: usize, imm: &Imm64) -> Result<Val<Self>, Self::Fault>;
    /// The value of a 64-bit immediate load of the address of the function starting at slot
    /// `function` (`BPF_PSEUDO_FUNC`: a callback passed to a helper).
    fn function_reference(&mut self, pc: usize, function: usize) -> Result<Val<Self>, Self::Fault>;
    /// Calls helper `id` with arguments in r1–r5, leaving its result in r0.
    fn call_helper(&mut self, pc: usize, id: u32) -> Result<HelperOutcome, Self::Fault>;
    /// Calls the kernel function a kfunc call with immediate `index` names (an index into the
    /// object's kfuncs), arguments in r1–r5, leaving its result in r0; a machine gives it its
    /// meaning through [`crate::kfuncs::call`].
    fn call_kfunc(&mut self, pc: usize, index: i32) -> Result<(), Self::Fault>;
    /// Resumes the helper whose callback just returned (its result in r0, the caller's r6–r10
    /// restored): `linerate_sem::helpers::resume` for machines that run callbacks.
    fn resume_helper(
        &mut self,
        callback: Callback<Val<Self>>,
    ) -> Result<HelperOutcome, Self::Fault>;
}

/// The value type of a machine's domain.
pub type Val<M> = <<M as Machine>::D as Domain>::Value;
/// The condition type of a machine's domain.
pub type Bool<M> = <<M as Machine>::D as Domain>::Bool;

/// Domain operations used by the semantics (instructions and helpers), as methods on the machine
/// for brevity.
pub(crate) trait Ops: Machine {
    #[inline(always)]
    fn c(&mut self, v: u64) -> Val<Self> {
        self.domain().constant(v)
    }
    #[inline(always)]
    fn bin(&mut self, op: BinOp, a: &Val<Self>, b: &Val<Self>) -> Val<Self> {
        self.domain().binary(op, a, b)
    }
    #[inline(always)]
    fn bin_c(&mut self, op: BinOp, a: &Val<Self>, b: u64) -> Val<Self> {
        let b = self.c(b);
        self.bin(op, a, &b)
    }
    #[inline(always)]
    fn cmp(&mut self, op: CmpOp, a: &Val<Self>, b: &Val<Self>) -> Bool<Self> {
        self.domain().compare(op, a, b)
    }
    #[inline(always)]
    fn ite(&mut self, c: &Bool<Self>, a: &Val<Self>, b: &Val<Self>) -> Val<Self> {
        self.domain().ite(c, a, b)
    }
    /// The low `bits` bits of `v`, zero-extended.
    #[inline(always)]
    fn zext(&mut self, v: &Val<Self>, bits: u32) -> Val<Self> {
        if bits >= 64 {
            v.clone()
        } else {
            self.bin_c(BinOp::And, v, (1u64 << bits) - 1)
        }
    }
    /// The low `bits` bits of `v`, sign-extended.
    #[inline(always)]
    fn sext(&mut self, v: &Val<Self>, bits: u32) -> Val<Self> {
        if bits >= 64 {
            v.clone()
        } else {
            let up = self.bin_c(BinOp::Shl, v, 64 - bits as u64);
            self.bin_c(BinOp::AShr, &up, 64 - bits as u64)
        }
    }
    /// Whether `v == 0`.
    #[inline(always)]
    fn is_zero(&mut self, v: &Val<Self>) -> Bool<Self> {
        let zero = self.c(0);
        self.cmp(CmpOp::Eq, v, &zero)
    }
    /// The low `bits` bits of `v` with their bytes reversed, zero-extended.
    fn byte_swap(&mut self, v: &Val<Self>, bits: u32) -> Val<Self> {
        let bytes = bits / 8;
        let mut out = self.c(0);
        for i in 0..bytes {
            let shifted = self.bin_c(BinOp::LShr, v, 8 * i as u64);
            let byte = self.bin_c(BinOp::And, &shifted, 0xff);
            let placed = self.bin_c(BinOp::Shl, &byte, 8 * (bytes - 1 - i) as u64);
            out = self.bin(BinOp::Or, &out, &placed);
        }
        out
    }
    #[inline(always)]
    fn reg(&mut self, r: Reg) -> Val<Self> {
        self.regs()[r as usize].clone()
    }
    #[inline(always)]
    fn set_reg(&mut self, r: Reg, v: Val<Self>) {
        self.regs()[r as usize] = v;
    }
    /// The second operand: a register, or the immediate sign-extended to 64 bits.
    #[inline(always)]
    fn operand(&mut self, src: Operand) -> Val<Self> {
        match src {
            Operand::Reg(r) => self.reg(r),
            Operand::Imm(i) => self.c(i as i64 as u64),
        }
    }
    /// `base + off` for memory addressing.
    #[inline(always)]
    fn address(&mut self, base: Reg, off: i16) -> Val<Self> {
        let base = self.reg(base);
        self.bin_c(BinOp::Add, &base, off as i64 as u64)
    }
}

impl<M: Machine + ?Sized> Ops for M {}

/// 64-bit ALU operation.
#[inline(always)]
fn alu64<M: Machine>(m: &mut M, op: AluOp, a: &Val<M>, b: &Val<M>) -> Val<M> {
    match op {
        AluOp::Add => m.bin(BinOp::Add, a, b),
        AluOp::Sub => m.bin(BinOp::Sub, a, b),
        AluOp::Mul => m.bin(BinOp::Mul, a, b),
        AluOp::Or => m.bin(BinOp::Or, a, b),
        AluOp::And => m.bin(BinOp::And, a, b),
        AluOp::Xor => m.bin(BinOp::Xor, a, b),
        AluOp::Lsh | AluOp::Rsh | AluOp::Arsh => {
            // Shift amounts are taken modulo the width, as the kernel's interpreter and JITs do.
            let amount = m.bin_c(BinOp::And, b, 63);
            let op = match op {
                AluOp::Lsh => BinOp::Shl,
                AluOp::Rsh => BinOp::LShr,
                _ => BinOp::AShr,
            };
            m.bin(op, a, &amount)
        }
        AluOp::Neg => {
            let zero = m.c(0);
            m.bin(BinOp::Sub, &zero, a)
        }
        AluOp::Mov => b.clone(),
        AluOp::MovSx(bits) => m.sext(b, bits as u32),
        AluOp::Div | AluOp::SDiv => division(m, op, a, b),
        AluOp::Mod | AluOp::SMod => remainder(m, op, a, b, a),
    }
}

/// Division with the kernel's rule that dividing by zero yields zero; signed overflow
/// (`MIN / -1`) wraps to `MIN`.
#[inline(always)]
fn division<M: Machine>(m: &mut M, op: AluOp, a: &Val<M>, b: &Val<M>) -> Val<M> {
    let quotient = if op == AluOp::SDiv {
        m.bin(BinOp::SDiv, a, b)
    } else {
        m.bin(BinOp::UDiv, a, b)
    };
    let by_zero = m.is_zero(b);
    let zero = m.c(0);
    m.ite(&by_zero, &zero, &quotient)
}

/// Remainder with the kernel's rule that the remainder by zero leaves the dividend
/// (`on_zero`: the full or zero-extended destination) unchanged; `MIN % -1` is zero.
#[inline(always)]
fn remainder<M: Machine>(m: &mut M, op: AluOp, a: &Val<M>, b: &Val<M>, on_zero: &Val<M>) -> Val<M> {
    let rem = if op == AluOp::SMod {
        m.bin(BinOp::SRem, a, b)
    } else {
        m.bin(BinOp::URem, a, b)
    };
    let by_zero = m.is_zero(b);
    m.ite(&by_zero, on_zero, &rem)
}

/// 32-bit ALU operation on the low halves; the result is zero-extended by the caller.
#[inline(always)]
fn alu32<M: Machine>(m: &mut M, op: AluOp, a: &Val<M>, b: &Val<M>) -> Val<M> {
    match op {
        AluOp::Add | AluOp::Sub | AluOp::Mul | AluOp::Or | AluOp::And | AluOp::Xor | AluOp::Neg => {
            alu64(m, op, a, b)
        }
        AluOp::Mov => b.clone(),
        AluOp::MovSx(bits) => m.sext(b, bits as u32),
        AluOp::Lsh | AluOp::Rsh | AluOp::Arsh => {
            let amount = m.bin_c(BinOp::And, b, 31);
            match op {
                AluOp::Lsh => m.bin(BinOp::Shl, a, &amount),
                AluOp::Rsh => {
                    let a32 = m.zext(a, 32);
                    m.bin(BinOp::LShr, &a32, &amount)
                }
                _ => {
                    let a32 = m.sext(a, 32);
                    m.bin(BinOp::AShr, &a32, &amount)
                }
            }
        }
        AluOp::Div | AluOp::Mod => {
            let a32 = m.zext(a, 32);
            let b32 = m.zext(b, 32);
            if op == AluOp::Div {
                division(m, op, &a32, &b32)
            } else {
                remainder(m, op, &a32, &b32, &a32)
            }
        }
        AluOp::SDiv | AluOp::SMod => {
            let a32 = m.sext(a, 32);
            let b32 = m.sext(b, 32);
            if op == AluOp::SDiv {
                division(m, op, &a32, &b32)
            } else {
                let dividend = m.zext(a, 32);
                remainder(m, op, &a32, &b32, &dividend)
            }
        }
    }
}

/// The branch condition of a conditional jump.
#[inline(always)]
fn condition<M: Machine>(m: &mut M, wide: bool, cond: Cond, a: &Val<M>, b: &Val<M>) -> Bool<M> {
    let signed = matches!(cond, Cond::Sgt | Cond::Sge | Cond::Slt | Cond::Sle);
    let (a, b) = match (wide, signed) {
        (true, _) => (a.clone(), b.clone()),
        (false, false) => (m.zext(a, 32), m.zext(b, 32)),
        (false, true) => (m.sext(a, 32), m.sext(b, 32)),
    };
    match cond {
        Cond::Eq => m.cmp(CmpOp::Eq, &a, &b),
        Cond::Ne => {
            let eq = m.cmp(CmpOp::Eq, &a, &b);
            m.domain().not(&eq)
        }
        Cond::Gt => m.cmp(CmpOp::Ult, &b, &a),
        Cond::Ge => m.cmp(CmpOp::Ule, &b, &a),
        Cond::Lt => m.cmp(CmpOp::Ult, &a, &b),
        Cond::Le => m.cmp(CmpOp::Ule, &a, &b),
        Cond::Sgt => m.cmp(CmpOp::Slt, &b, &a),
        Cond::Sge => m.cmp(CmpOp::Sle, &b, &a),
        Cond::Slt => m.cmp(CmpOp::Slt, &a, &b),
        Cond::Sle => m.cmp(CmpOp::Sle, &a, &b),
        Cond::Set => {
            let both = m.bin(BinOp::And, &a, &b);
            let zero = m.is_zero(&both);
            m.domain().not(&zero)
        }
    }
}

/// Atomic read-modify-write: the fields of an [`Instruction::Atomic`].
#[derive(Clone, Copy)]
struct AtomicInsn {
    size: Size,
    op: AtomicOp,
    fetch: bool,
    dst: Reg,
    src: Reg,
    off: i16,
}

#[inline(always)]
fn atomic<M: Machine>(m: &mut M, pc: usize, insn: AtomicInsn) -> Result<(), M::Fault> {
    let AtomicInsn {
        size,
        op,
        fetch,
        dst,
        src,
        off,
    } = insn;
    let addr = m.address(dst, off);
    let old = m.load(pc, &addr, size)?;
    let operand = m.reg(src);
    let bits = size.bits();
    match op {
        AtomicOp::CmpXchg => {
            let r0 = m.reg(0);
            let expected = m.zext(&r0, bits);
            let matches = m.cmp(CmpOp::Eq, &old, &expected);
            let new = m.ite(&matches, &operand, &old);
            m.store(pc, &addr, size, &new)?;
            m.set_reg(0, old);
        }
        AtomicOp::Xchg => {
            m.store(pc, &addr, size, &operand)?;
            m.set_reg(src, old);
        }
        AtomicOp::Add | AtomicOp::Or | AtomicOp::And | AtomicOp::Xor => {
            let bin = match op {
                AtomicOp::Add => BinOp::Add,
                AtomicOp::Or => BinOp::Or,
                AtomicOp::And => BinOp::And,
                _ => BinOp::Xor,
            };
            let new = m.bin(bin, &old, &operand);
            m.store(pc, &addr, size, &new)?;
            if fetch {
                m.set_reg(src, old);
            }
        }
    }
    Ok(())
}

/// Executes the instruction `insn` at slot `pc`. Always inlined: each machine calls it from its
/// own instruction loop, where it must become that loop's body: called instead, it cost the
/// interpreter a quarter to a third more machine instructions per packet on the examples
/// (counted with callgrind).
#[inline(always)]
pub fn step<M: Machine>(
    m: &mut M,
    pc: usize,
    insn: &Instruction,
) -> Result<Flow<Bool<M>>, M::Fault> {
    match *insn {
        Instruction::Alu { wide, op, dst, src } => {
            let a = m.reg(dst);
            let b = m.operand(src);
            let result = if wide {
                alu64(m, op, &a, &b)
            } else {
                let r = alu32(m, op, &a, &b);
                m.zext(&r, 32)
            };
            m.set_reg(dst, result);
        }
        Instruction::Endian { kind, bits, dst } => {
            let a = m.reg(dst);
            let result = match kind {
                // The host is little endian: conversion to little endian only truncates.
                Endian::ToLe => m.zext(&a, bits as u32),
                Endian::ToBe | Endian::Swap => m.byte_swap(&a, bits as u32),
            };
            m.set_reg(dst, result);
        }
        Instruction::LoadImm64 { dst, imm } => {
            let v = match imm {
                Imm64::Const(v) => m.c(v),
                Imm64::Map(_) | Imm64::MapValue { .. } => m.map_reference(pc, &imm)?,
                Imm64::Pseudo {
                    src: linerate_bpf::insn::pseudo::FUNC,
                    imm,
                    ..
                } => m.function_reference(pc, jump_target(pc, imm as i64))?,
                Imm64::Pseudo { .. } => {
                    return Err(SemError::Unsupported {
                        pc,
                        what: "64-bit immediate with an unresolved kernel fd or BTF id",
                    }
                    .into())
                }
            };
            m.set_reg(dst, v);
        }
        Instruction::Load {
            size,
            signed,
            dst,
            src,
            off,
        } => {
            let addr = m.address(src, off);
            let v = m.load(pc, &addr, size)?;
            let v = if signed { m.sext(&v, size.bits()) } else { v };
            m.set_reg(dst, v);
        }
        Instruction::Store {
            size,
            dst,
            off,
            src,
        } => {
            let addr = m.address(dst, off);
            let v = m.operand(src);
            m.store(pc, &addr, size, &v)?;
        }
        Instruction::Atomic {
            size,
            op,
            fetch,
            dst,
            src,
            off,
        } => atomic(
            m,
            pc,
            AtomicInsn {
                size,
                op,
                fetch,
                dst,
                src,
                off,
            },
        )?,
        Instruction::LegacyPacketLoad { .. } => {
            return Err(SemError::Unsupported {
                pc,
                what: "LD_ABS/LD_IND packet loads exist only for socket-buffer programs",
            }
            .into())
        }
        Instruction::Ja { off, .. } => return Ok(Flow::Next(jump_target(pc, off as i64))),
        Instruction::MayGoto { off } => {
            return Ok(Flow::LoopBudget {
                exhausted: jump_target(pc, off as i64),
                next: pc + 1,
            })
        }
        Instruction::Jump {
            wide,
            cond,
            dst,
            src,
            off,
        } => {
            let a = m.reg(dst);
            let b = m.operand(src);
            return Ok(Flow::Branch {
                cond: condition(m, wide, cond, &a, &b),
                taken: jump_target(pc, off as i64),
                fallthrough: pc + 1,
            });
        }
        Instruction::Call(CallTarget::Helper(id)) => match m.call_helper(pc, id)? {
            HelperOutcome::Return => {}
            HelperOutcome::TailCall => return Ok(Flow::TailCall),
            HelperOutcome::Callback(target) => return Ok(Flow::Next(target)),
        },
        Instruction::Call(CallTarget::Local(rel)) => {
            enter_function(m, pc, None)?;
            return Ok(Flow::Next(jump_target(pc, rel as i64)));
        }
        Instruction::Call(CallTarget::Kfunc(index)) => m.call_kfunc(pc, index)?,
        Instruction::Exit => {
            let Some(frame) = m.frames().pop() else {
                return Ok(Flow::Exit);
            };
            m.pop_stack_frame();
            for (r, v) in [6, 7, 8, 9, FRAME_POINTER].into_iter().zip(frame.saved) {
                m.set_reg(r, v);
            }
            if let Some(callback) = frame.resume {
                match m.resume_helper(callback)? {
                    HelperOutcome::Return => {}
                    HelperOutcome::TailCall => return Ok(Flow::TailCall),
                    HelperOutcome::Callback(target) => return Ok(Flow::Next(target)),
                }
            }
            return Ok(Flow::Next(frame.return_pc));
        }
    }
    Ok(Flow::Next(pc + insn.slots()))
}

/// Enters a function called from `pc` (a BPF-to-BPF call, or a helper's callback where `resume`
/// says which): saves the caller's r6–r10 in a new frame and points r10 at a fresh stack frame.
/// The caller's arguments stay in r1–r5.
pub(crate) fn enter_function<M: Machine>(
    m: &mut M,
    pc: usize,
    resume: Option<Callback<Val<M>>>,
) -> Result<(), M::Fault> {
    let depth = m.frames().len() + 1;
    if depth >= MAX_CALL_FRAMES {
        return Err(SemError::CallDepth { pc }.into());
    }
    let saved = [6, 7, 8, 9, FRAME_POINTER].map(|r| m.reg(r));
    let fp = m.push_stack_frame(depth)?;
    m.frames().push(Frame {
        return_pc: pc + 1,
        saved,
        resume,
    });
    m.set_reg(FRAME_POINTER, fp);
    Ok(())
}

/// The slot a jump at `pc` with relative offset `off` lands on, as a slot index (a bad offset gives
/// an out-of-range slot the caller rejects).
#[inline(always)]
fn jump_target(pc: usize, off: i64) -> usize {
    linerate_bpf::insn::relative_target(pc, off) as usize
}
