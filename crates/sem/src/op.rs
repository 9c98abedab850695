//! Instructions decoded once for fast execution: [`Op`] and [`step_op`].
//!
//! An interpreter executes the same instruction many times, and [`step`] on an [`Instruction`]
//! dispatches on its kind, then on its operation, operand kind and width: several indirect jumps
//! per instruction. [`Op`] names each common combination (`Add64Imm`, `Jeq32Reg`, `LdxW`, ...) as
//! one variant, found once per program by [`Op::new`], so that [`step_op`] dispatches once.
//!
//! [`Op`] carries no meaning of its own: each variant is listed once below with the instruction it
//! stands for, and that one line both decodes it ([`Op::new`] matches the instruction as a
//! pattern) and executes it ([`step_op`] rebuilds the instruction with constant kind, operation,
//! operand kind and width and hands it to [`step`], inlined, where the compiler folds the nested
//! dispatch away). Every instruction's effect is therefore still [`step`]'s; an instruction
//! without a variant here is kept as [`Op::Other`] and executed by [`step`] directly. Registers
//! are kept as [`R`], whose range spares the register file's bounds checks.

use linerate_bpf::insn::{
    AluOp, AtomicOp, CallTarget, Cond, Endian, Imm64, Instruction, Operand, Reg, Size, NUM_REGS,
};

use crate::exec::{step, Bool, Flow, Machine, SemError};

/// Declares [`Op`] with one variant per `Name { fields } = [instruction]` line, [`Op::new`] and
/// [`step_op`]. The instruction is written as tokens that are both a pattern (binding the
/// variant's fields) and an expression (rebuilding the instruction from them).
macro_rules! specialised {
    ($( $name:ident { $($field:ident : $ty:ty),* } = [ $($insn:tt)* ], )*) => {
        /// A decoded instruction, specialised by kind, operation, operand kind and width where the
        /// instruction is common (see the module documentation).
        ///
        /// `repr(u8)` puts the variant in a byte of its own at the start: without it, the variants
        /// share [`Instruction`]'s tag (a niche of [`Op::Other`]) and the interpreter's dispatch
        /// first translated that tag into the variant's number on every instruction.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr(u8)]
        pub enum Op {
            $(
                #[allow(missing_docs)]
                $name { $($field: $ty),* },
            )*
            /// Any other instruction.
            Other(Instruction),
            /// No instruction: the second slot of a 64-bit immediate load. A machine that keeps
            /// one [`Op`] per slot puts this there; executing it is
            /// [`SemError::NotAnInstruction`], found by the one dispatch every slot goes through.
            Inside,
        }

        impl Op {
            /// The specialised form of `insn`.
            pub fn new(insn: &Instruction) -> Op {
                Self::specialise(insn).unwrap_or(Op::Other(*insn))
            }

            /// The variant of `insn`, if it has one and its fields fit it.
            fn specialise(insn: &Instruction) -> Option<Op> {
                Some(match *insn {
                    $( $($insn)* => Op::$name {
                        $($field: <$ty as Field<_>>::pack($field)?),*
                    }, )*
                    _ => return None,
                })
            }

            /// The instruction this stands for; `None` for [`Op::Inside`].
            pub fn instruction(&self) -> Option<Instruction> {
                Some(match *self {
                    $( Op::$name { $($field),* } => {
                        $( let $field = Field::unpack($field); )*
                        $($insn)*
                    } )*
                    Op::Other(insn) => insn,
                    Op::Inside => return None,
                })
            }
        }

        /// Executes `op` at slot `pc`: [`step`] on [`Op::instruction`], with one dispatch. Always
        /// inlined, for the reason [`step`] is.
        #[inline(always)]
        pub fn step_op<M: Machine>(
            m: &mut M,
            pc: usize,
            op: &Op,
        ) -> Result<Flow<Bool<M>>, M::Fault> {
            match *op {
                $( Op::$name { $($field),* } => {
                    $( let $field = Field::unpack($field); )*
                    step(m, pc, &$($insn)*)
                } )*
                Op::Other(ref insn) => step_other(m, pc, insn),
                Op::Inside => Err(inside(pc)),
            }
        }
    };
}

/// A register number below [`NUM_REGS`]: in an [`Op`], registers have this type so that the
/// compiler knows every register index is in bounds and checks none (an instruction naming a
/// register beyond r10 stays [`Op::Other`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
#[allow(missing_docs)]
pub enum R {
    R0,
    R1,
    R2,
    R3,
    R4,
    R5,
    R6,
    R7,
    R8,
    R9,
    R10,
}

const REGISTERS: [R; NUM_REGS] = [
    R::R0,
    R::R1,
    R::R2,
    R::R3,
    R::R4,
    R::R5,
    R::R6,
    R::R7,
    R::R8,
    R::R9,
    R::R10,
];

/// How an instruction's field is kept in an [`Op`]: `pack` converts it (or refuses), `unpack`
/// gives it back.
trait Field<T>: Sized {
    fn pack(value: T) -> Option<Self>;
    fn unpack(self) -> T;
}

impl<T> Field<T> for T {
    #[inline(always)]
    fn pack(value: T) -> Option<T> {
        Some(value)
    }
    #[inline(always)]
    fn unpack(self) -> T {
        self
    }
}

impl Field<Reg> for R {
    #[inline(always)]
    fn pack(value: Reg) -> Option<R> {
        REGISTERS.get(value as usize).copied()
    }
    #[inline(always)]
    fn unpack(self) -> Reg {
        self as Reg
    }
}

/// The fault of executing [`Op::Inside`] at `pc`, out of the instruction loop.
#[cold]
#[inline(never)]
fn inside<F: From<SemError>>(pc: usize) -> F {
    SemError::NotAnInstruction { pc }.into()
}

/// [`step`] for the instructions without a variant of their own: rare in the hot loop (calls,
/// map references, atomics), so kept out of it.
#[inline(never)]
fn step_other<M: Machine>(
    m: &mut M,
    pc: usize,
    insn: &Instruction,
) -> Result<Flow<Bool<M>>, M::Fault> {
    step(m, pc, insn)
}

specialised! {
    Add64Imm { dst: R, imm: i32 } = [Instruction::Alu { wide: true, op: AluOp::Add, dst, src: Operand::Imm(imm) }],
    Add64Reg { dst: R, src: R } = [Instruction::Alu { wide: true, op: AluOp::Add, dst, src: Operand::Reg(src) }],
    Add32Imm { dst: R, imm: i32 } = [Instruction::Alu { wide: false, op: AluOp::Add, dst, src: Operand::Imm(imm) }],
    Add32Reg { dst: R, src: R } = [Instruction::Alu { wide: false, op: AluOp::Add, dst, src: Operand::Reg(src) }],
    Sub64Imm { dst: R, imm: i32 } = [Instruction::Alu { wide: true, op: AluOp::Sub, dst, src: Operand::Imm(imm) }],
    Sub64Reg { dst: R, src: R } = [Instruction::Alu { wide: true, op: AluOp::Sub, dst, src: Operand::Reg(src) }],
    Sub32Imm { dst: R, imm: i32 } = [Instruction::Alu { wide: false, op: AluOp::Sub, dst, src: Operand::Imm(imm) }],
    Sub32Reg { dst: R, src: R } = [Instruction::Alu { wide: false, op: AluOp::Sub, dst, src: Operand::Reg(src) }],
    Mul64Imm { dst: R, imm: i32 } = [Instruction::Alu { wide: true, op: AluOp::Mul, dst, src: Operand::Imm(imm) }],
    Mul64Reg { dst: R, src: R } = [Instruction::Alu { wide: true, op: AluOp::Mul, dst, src: Operand::Reg(src) }],
    Mul32Imm { dst: R, imm: i32 } = [Instruction::Alu { wide: false, op: AluOp::Mul, dst, src: Operand::Imm(imm) }],
    Mul32Reg { dst: R, src: R } = [Instruction::Alu { wide: false, op: AluOp::Mul, dst, src: Operand::Reg(src) }],
    Div64Imm { dst: R, imm: i32 } = [Instruction::Alu { wide: true, op: AluOp::Div, dst, src: Operand::Imm(imm) }],
    Div64Reg { dst: R, src: R } = [Instruction::Alu { wide: true, op: AluOp::Div, dst, src: Operand::Reg(src) }],
    Div32Imm { dst: R, imm: i32 } = [Instruction::Alu { wide: false, op: AluOp::Div, dst, src: Operand::Imm(imm) }],
    Div32Reg { dst: R, src: R } = [Instruction::Alu { wide: false, op: AluOp::Div, dst, src: Operand::Reg(src) }],
    SDiv64Imm { dst: R, imm: i32 } = [Instruction::Alu { wide: true, op: AluOp::SDiv, dst, src: Operand::Imm(imm) }],
    SDiv64Reg { dst: R, src: R } = [Instruction::Alu { wide: true, op: AluOp::SDiv, dst, src: Operand::Reg(src) }],
    SDiv32Imm { dst: R, imm: i32 } = [Instruction::Alu { wide: false, op: AluOp::SDiv, dst, src: Operand::Imm(imm) }],
    SDiv32Reg { dst: R, src: R } = [Instruction::Alu { wide: false, op: AluOp::SDiv, dst, src: Operand::Reg(src) }],
    Or64Imm { dst: R, imm: i32 } = [Instruction::Alu { wide: true, op: AluOp::Or, dst, src: Operand::Imm(imm) }],
    Or64Reg { dst: R, src: R } = [Instruction::Alu { wide: true, op: AluOp::Or, dst, src: Operand::Reg(src) }],
    Or32Imm { dst: R, imm: i32 } = [Instruction::Alu { wide: false, op: AluOp::Or, dst, src: Operand::Imm(imm) }],
    Or32Reg { dst: R, src: R } = [Instruction::Alu { wide: false, op: AluOp::Or, dst, src: Operand::Reg(src) }],
    And64Imm { dst: R, imm: i32 } = [Instruction::Alu { wide: true, op: AluOp::And, dst, src: Operand::Imm(imm) }],
    And64Reg { dst: R, src: R } = [Instruction::Alu { wide: true, op: AluOp::And, dst, src: Operand::Reg(src) }],
    And32Imm { dst: R, imm: i32 } = [Instruction::Alu { wide: false, op: AluOp::And, dst, src: Operand::Imm(imm) }],
    And32Reg { dst: R, src: R } = [Instruction::Alu { wide: false, op: AluOp::And, dst, src: Operand::Reg(src) }],
    Lsh64Imm { dst: R, imm: i32 } = [Instruction::Alu { wide: true, op: AluOp::Lsh, dst, src: Operand::Imm(imm) }],
    Lsh64Reg { dst: R, src: R } = [Instruction::Alu { wide: true, op: AluOp::Lsh, dst, src: Operand::Reg(src) }],
    Lsh32Imm { dst: R, imm: i32 } = [Instruction::Alu { wide: false, op: AluOp::Lsh, dst, src: Operand::Imm(imm) }],
    Lsh32Reg { dst: R, src: R } = [Instruction::Alu { wide: false, op: AluOp::Lsh, dst, src: Operand::Reg(src) }],
    Rsh64Imm { dst: R, imm: i32 } = [Instruction::Alu { wide: true, op: AluOp::Rsh, dst, src: Operand::Imm(imm) }],
    Rsh64Reg { dst: R, src: R } = [Instruction::Alu { wide: true, op: AluOp::Rsh, dst, src: Operand::Reg(src) }],
    Rsh32Imm { dst: R, imm: i32 } = [Instruction::Alu { wide: false, op: AluOp::Rsh, dst, src: Operand::Imm(imm) }],
    Rsh32Reg { dst: R, src: R } = [Instruction::Alu { wide: false, op: AluOp::Rsh, dst, src: Operand::Reg(src) }],
    Arsh64Imm { dst: R, imm: i32 } = [Instruction::Alu { wide: true, op: AluOp::Arsh, dst, src: Operand::Imm(imm) }],
    Arsh64Reg { dst: R, src: R } = [Instruction::Alu { wide: true, op: AluOp::Arsh, dst, src: Operand::Reg(src) }],
    Arsh32Imm { dst: R, imm: i32 } = [Instruction::Alu { wide: false, op: AluOp::Arsh, dst, src: Operand::Imm(imm) }],
    Arsh32Reg { dst: R, src: R } = [Instruction::Alu { wide: false, op: AluOp::Arsh, dst, src: Operand::Reg(src) }],
    Mod64Imm { dst: R, imm: i32 } = [Instruction::Alu { wide: true, op: AluOp::Mod, dst, src: Operand::Imm(imm) }],
    Mod64Reg { dst: R, src: R } = [Instruction::Alu { wide: true, op: AluOp::Mod, dst, src: Operand::Reg(src) }],
    Mod32Imm { dst: R, imm: i32 } = [Instruction::Alu { wide: false, op: AluOp::Mod, dst, src: Operand::Imm(imm) }],
    Mod32Reg { dst: R, src: R } = [Instruction::Alu { wide: false, op: AluOp::Mod, dst, src: Operand::Reg(src) }],
    SMod64Imm { dst: R, imm: i32 } = [Instruction::Alu { wide: true, op: AluOp::SMod, dst, src: Operand::Imm(imm) }],
    SMod64Reg { dst: R, src: R } = [Instruction::Alu { wide: true, op: AluOp::SMod, dst, src: Operand::Reg(src) }],
    SMod32Imm { dst: R, imm: i32 } = [Instruction::Alu { wide: false, op: AluOp::SMod, dst, src: Operand::Imm(imm) }],
    SMod32Reg { dst: R, src: R } = [Instruction::Alu { wide: false, op: AluOp::SMod, dst, src: Operand::Reg(src) }],
    Xor64Imm { dst: R, imm: i32 } = [Instruction::Alu { wide: true, op: AluOp::Xor, dst, src: Operand::Imm(imm) }],
    Xor64Reg { dst: R, src: R } = [Instruction::Alu { wide: true, op: AluOp::Xor, dst, src: Operand::Reg(src) }],
    Xor32Imm { dst: R, imm: i32 } = [Instruction::Alu { wide: false, op: AluOp::Xor, dst, src: Operand::Imm(imm) }],
    Xor32Reg { dst: R, src: R } = [Instruction::Alu { wide: false, op: AluOp::Xor, dst, src: Operand::Reg(src) }],
    Mov64Imm { dst: R, imm: i32 } = [Instruction::Alu { wide: true, op: AluOp::Mov, dst, src: Operand::Imm(imm) }],
    Mov64Reg { dst: R, src: R } = [Instruction::Alu { wide: true, op: AluOp::Mov, dst, src: Operand::Reg(src) }],
    Mov32Imm { dst: R, imm: i32 } = [Instruction::Alu { wide: false, op: AluOp::Mov, dst, src: Operand::Imm(imm) }],
    Mov32Reg { dst: R, src: R } = [Instruction::Alu { wide: false, op: AluOp::Mov, dst, src: Operand::Reg(src) }],
    Jeq64Imm { dst: R, imm: i32, off: i16 } = [Instruction::Jump { wide: true, cond: Cond::Eq, dst, src: Operand::Imm(imm), off }],
    Jeq64Reg { dst: R, src: R, off: i16 } = [Instruction::Jump { wide: true, cond: Cond::Eq, dst, src: Operand::Reg(src), off }],
    Jeq32Imm { dst: R, imm: i32, off: i16 } = [Instruction::Jump { wide: false, cond: Cond::Eq, dst, src: Operand::Imm(imm), off }],
    Jeq32Reg { dst: R, src: R, off: i16 } = [Instruction::Jump { wide: false, cond: Cond::Eq, dst, src: Operand::Reg(src), off }],
    Jne64Imm { dst: R, imm: i32, off: i16 } = [Instruction::Jump { wide: true, cond: Cond::Ne, dst, src: Operand::Imm(imm), off }],
    Jne64Reg { dst: R, src: R, off: i16 } = [Instruction::Jump { wide: true, cond: Cond::Ne, dst, src: Operand::Reg(src), off }],
    Jne32Imm { dst: R, imm: i32, off: i16 } = [Instruction::Jump { wide: false, cond: Cond::Ne, dst, src: Operand::Imm(imm), off }],
    Jne32Reg { dst: R, src: R, off: i16 } = [Instruction::Jump { wide: false, cond: Cond::Ne, dst, src: Operand::Reg(src), off }],
    Jgt64Imm { dst: R, imm: i32, off: i16 } = [Instruction::Jump { wide: true, cond: Cond::Gt, dst, src: Operand::Imm(imm), off }],
    Jgt64Reg { dst: R, src: R, off: i16 } = [Instruction::Jump { wide: true, cond: Cond::Gt, dst, src: Operand::Reg(src), off }],
    Jgt32Imm { dst: R, imm: i32, off: i16 } = [Instruction::Jump { wide: false, cond: Cond::Gt, dst, src: Operand::Imm(imm), off }],
    Jgt32Reg { dst: R, src: R, off: i16 } = [Instruction::Jump { wide: false, cond: Cond::Gt, dst, src: Operand::Reg(src), off }],
    Jge64Imm { dst: R, imm: i32, off: i16 } = [Instruction::Jump { wide: true, cond: Cond::Ge, dst, src: Operand::Imm(imm), off }],
    Jge64Reg { dst: R, src: R, off: i16 } = [Instruction::Jump { wide: true, cond: Cond::Ge, dst, src: Operand::Reg(src), off }],
    Jge32Imm { dst: R, imm: i32, off: i16 } = [Instruction::Jump { wide: false, cond: Cond::Ge, dst, src: Operand::Imm(imm), off }],
    Jge32Reg { dst: R, src: R, off: i16 } = [Instruction::Jump { wide: false, cond: Cond::Ge, dst, src: Operand::Reg(src), off }],
    Jlt64Imm { dst: R, imm: i32, off: i16 } = [Instruction::Jump { wide: true, cond: Cond::Lt, dst, src: Operand::Imm(imm), off }],
    Jlt64Reg { dst: R, src: R, off: i16 } = [Instruction::Jump { wide: true, cond: Cond::Lt, dst, src: Operand::Reg(src), off }],
    Jlt32Imm { dst: R, imm: i32, off: i16 } = [Instruction::Jump { wide: false, cond: Cond::Lt, dst, src: Operand::Imm(imm), off }],
    Jlt32Reg { dst: R, src: R, off: i16 } = [Instruction::Jump { wide: false, cond: Cond::Lt, dst, src: Operand::Reg(src), off }],
    Jle64Imm { dst: R, imm: i32, off: i16 } = [Instruction::Jump { wide: true, cond: Cond::Le, dst, src: Operand::Imm(imm), off }],
    Jle64Reg { dst: R, src: R, off: i16 } = [Instruction::Jump { wide: true, cond: Cond::Le, dst, src: Operand::Reg(src), off }],
    Jle32Imm { dst: R, imm: i32, off: i16 } = [Instruction::Jump { wide: false, cond: Cond::Le, dst, src: Operand::Imm(imm), off }],
    Jle32Reg { dst: R, src: R, off: i16 } = [Instruction::Jump { wide: false, cond: Cond::Le, dst, src: Operand::Reg(src), off }],
    Jsgt64Imm { dst: R, imm: i32, off: i16 } = [Instruction::Jump { wide: true, cond: Cond::Sgt, dst, src: Operand::Imm(imm), off }],
    Jsgt64Reg { dst: R, src: R, off: i16 } = [Instruction::Jump { wide: true, cond: Cond::Sgt, dst, src: Operand::Reg(src), off }],
    Jsgt32Imm { dst: R, imm: i32, off: i16 } = [Instruction::Jump { wide: false, cond: Cond::Sgt, dst, src: Operand::Imm(imm), off }],
    Jsgt32Reg { dst: R, src: R, off: i16 } = [Instruction::Jump { wide: false, cond: Cond::Sgt, dst, src: Operand::Reg(src), off }],
    Jsge64Imm { dst: R, imm: i32, off: i16 } = [Instruction::Jump { wide: true, cond: Cond::Sge, dst, src: Operand::Imm(imm), off }],
    Jsge64Reg { dst: R, src: R, off: i16 } = [Instruction::Jump { wide: true, cond: Cond::Sge, dst, src: Operand::Reg(src), off }],
    Jsge32Imm { dst: R, imm: i32, off: i16 } = [Instruction::Jump { wide: false, cond: Cond::Sge, dst, src: Operand::Imm(imm), off }],
    Jsge32Reg { dst: R, src: R, off: i16 } = [Instruction::Jump { wide: false, cond: Cond::Sge, dst, src: Operand::Reg(src), off }],
    Jslt64Imm { dst: R, imm: i32, off: i16 } = [Instruction::Jump { wide: true, cond: Cond::Slt, dst, src: Operand::Imm(imm), off }],
    Jslt64Reg { dst: R, src: R, off: i16 } = [Instruction::Jump { wide: true, cond: Cond::Slt, dst, src: Operand::Reg(src), off }],
    Jslt32Imm { dst: R, imm: i32, off: i16 } = [Instruction::Jump { wide: false, cond: Cond::Slt, dst, src: Operand::Imm(imm), off }],
    Jslt32Reg { dst: R, src: R, off: i16 } = [Instruction::Jump { wide: false, cond: Cond::Slt, dst, src: Operand::Reg(src), off }],
    Jsle64Imm { dst: R, imm: i32, off: i16 } = [Instruction::Jump { wide: true, cond: Cond::Sle, dst, src: Operand::Imm(imm), off }],
    Jsle64Reg { dst: R, src: R, off: i16 } = [Instruction::Jump { wide: true, cond: Cond::Sle, dst, src: Operand::Reg(src), off }],
    Jsle32Imm { dst: R, imm: i32, off: i16 } = [Instruction::Jump { wide: false, cond: Cond::Sle, dst, src: Operand::Imm(imm), off }],
    Jsle32Reg { dst: R, src: R, off: i16 } = [Instruction::Jump { wide: false, cond: Cond::Sle, dst, src: Operand::Reg(src), off }],
    Jset64Imm { dst: R, imm: i32, off: i16 } = [Instruction::Jump { wide: true, cond: Cond::Set, dst, src: Operand::Imm(imm), off }],
    Jset64Reg { dst: R, src: R, off: i16 } = [Instruction::Jump { wide: true, cond: Cond::Set, dst, src: Operand::Reg(src), off }],
    Jset32Imm { dst: R, imm: i32, off: i16 } = [Instruction::Jump { wide: false, cond: Cond::Set, dst, src: Operand::Imm(imm), off }],
    Jset32Reg { dst: R, src: R, off: i16 } = [Instruction::Jump { wide: false, cond: Cond::Set, dst, src: Operand::Reg(src), off }],
    LdxB { dst: R, src: R, off: i16 } = [Instruction::Load { size: Size::B, signed: false, dst, src, off }],
    LdxH { dst: R, src: R, off: i16 } = [Instruction::Load { size: Size::H, signed: false, dst, src, off }],
    LdxW { dst: R, src: R, off: i16 } = [Instruction::Load { size: Size::W, signed: false, dst, src, off }],
    LdxDw { dst: R, src: R, off: i16 } = [Instruction::Load { size: Size::Dw, signed: false, dst, src, off }],
    StxB { dst: R, off: i16, src: R } = [Instruction::Store { size: Size::B, dst, off, src: Operand::Reg(src) }],
    StB { dst: R, off: i16, imm: i32 } = [Instruction::Store { size: Size::B, dst, off, src: Operand::Imm(imm) }],
    StxH { dst: R, off: i16, src: R } = [Instruction::Store { size: Size::H, dst, off, src: Operand::Reg(src) }],
    StH { dst: R, off: i16, imm: i32 } = [Instruction::Store { size: Size::H, dst, off, src: Operand::Imm(imm) }],
    StxW { dst: R, off: i16, src: R } = [Instruction::Store { size: Size::W, dst, off, src: Operand::Reg(src) }],
    StW { dst: R, off: i16, imm: i32 } = [Instruction::Store { size: Size::W, dst, off, src: Operand::Imm(imm) }],
    StxDw { dst: R, off: i16, src: R } = [Instruction::Store { size: Size::Dw, dst, off, src: Operand::Reg(src) }],
    StDw { dst: R, off: i16, imm: i32 } = [Instruction::Store { size: Size::Dw, dst, off, src: Operand::Imm(imm) }],
    AtomicAddW { dst: R, src: R, off: i16 } = [Instruction::Atomic { size: Size::W, op: AtomicOp::Add, fetch: false, dst, src, off }],
    AtomicAddDw { dst: R, src: R, off: i16 } = [Instruction::Atomic { size: Size::Dw, op: AtomicOp::Add, fetch: false, dst, src, off }],
    AtomicFetchAddW { dst: R, src: R, off: i16 } = [Instruction::Atomic { size: Size::W, op: AtomicOp::Add, fetch: true, dst, src, off }],
    AtomicFetchAddDw { dst: R, src: R, off: i16 } = [Instruction::Atomic { size: Size::Dw, op: AtomicOp::Add, fetch: true, dst, src, off }],
    ToBe16 { dst: R } = [Instruction::Endian { kind: Endian::ToBe, bits: 16, dst }],
    ToBe32 { dst: R } = [Instruction::Endian { kind: Endian::ToBe, bits: 32, dst }],
    ToBe64 { dst: R } = [Instruction::Endian { kind: Endian::ToBe, bits: 64, dst }],
    ToLe16 { dst: R } = [Instruction::Endian { kind: Endian::ToLe, bits: 16, dst }],
    ToLe32 { dst: R } = [Instruction::Endian { kind: Endian::ToLe, bits: 32, dst }],
    ToLe64 { dst: R } = [Instruction::Endian { kind: Endian::ToLe, bits: 64, dst }],
    Swap16 { dst: R } = [Instruction::Endian { kind: Endian::Swap, bits: 16, dst }],
    Swap32 { dst: R } = [Instruction::Endian { kind: Endian::Swap, bits: 32, dst }],
    Swap64 { dst: R } = [Instruction::Endian { kind: Endian::Swap, bits: 64, dst }],
    Ja { off: i32, long: bool } = [Instruction::Ja { off, long }],
    LoadConst { dst: R, value: u64 } = [Instruction::LoadImm64 { dst, imm: Imm64::Const(value) }],
    CallHelper { id: u32 } = [Instruction::Call(CallTarget::Helper(id))],
    Exit {} = [Instruction::Exit],
}

#[cfg(test)]
mod tests {
    use linerate_bpf::insn::Imm64;

    use super::*;

    /// Instructions of every kind, operation, operand kind and width.
    fn instructions() -> Vec<Instruction> {
        let mut out = Vec::new();
        let operands = [Operand::Reg(3), Operand::Imm(-7)];
        let alu = [
            AluOp::Add,
            AluOp::Sub,
            AluOp::Mul,
            AluOp::Div,
            AluOp::SDiv,
            AluOp::Or,
            AluOp::And,
            AluOp::Lsh,
            AluOp::Rsh,
            AluOp::Neg,
            AluOp::Mod,
            AluOp::SMod,
            AluOp::Xor,
            AluOp::Mov,
            AluOp::MovSx(16),
            AluOp::Arsh,
        ];
        for wide in [true, false] {
            for src in operands {
                out.extend(alu.map(|op| Instruction::Alu {
                    wide,
                    op,
                    dst: 2,
                    src,
                }));
                out.extend(Cond::ALL.map(|cond| Instruction::Jump {
                    wide,
                    cond,
                    dst: 1,
                    src,
                    off: -3,
                }));
            }
        }
        for size in [Size::B, Size::H, Size::W, Size::Dw] {
            for signed in [true, false] {
                out.push(Instruction::Load {
                    size,
                    signed,
                    dst: 4,
                    src: 10,
                    off: -8,
                });
            }
            for src in operands {
                out.push(Instruction::Store {
                    size,
                    dst: 10,
                    off: -16,
                    src,
                });
            }
        }
        for kind in [Endian::ToBe, Endian::ToLe, Endian::Swap] {
            for bits in [16, 32, 64] {
                out.push(Instruction::Endian { kind, bits, dst: 5 });
            }
        }
        out.extend([
            Instruction::Ja {
                off: 9,
                long: false,
            },
            Instruction::MayGoto { off: 2 },
            Instruction::LoadImm64 {
                dst: 1,
                imm: Imm64::Const(0x1234_5678_9abc),
            },
            Instruction::LoadImm64 {
                dst: 1,
                imm: Imm64::Map(0),
            },
            Instruction::Atomic {
                size: Size::Dw,
                op: AtomicOp::Add,
                fetch: true,
                dst: 1,
                src: 2,
                off: 0,
            },
            Instruction::Atomic {
                size: Size::W,
                op: AtomicOp::Add,
                fetch: false,
                dst: 1,
                src: 2,
                off: 4,
            },
            Instruction::Atomic {
                size: Size::Dw,
                op: AtomicOp::Add,
                fetch: false,
                dst: 1,
                src: 2,
                off: 8,
            },
            Instruction::Call(CallTarget::Helper(1)),
            Instruction::Call(CallTarget::Local(4)),
            Instruction::Exit,
        ]);
        out
    }

    #[test]
    fn every_instruction_round_trips() {
        for insn in instructions() {
            assert_eq!(Op::new(&insn).instruction(), Some(insn), "{insn:?}");
        }
    }

    #[test]
    fn a_register_beyond_r10_stays_general() {
        let insn = Instruction::Alu {
            wide: true,
            op: AluOp::Add,
            dst: 11,
            src: Operand::Imm(1),
        };
        assert_eq!(Op::new(&insn), Op::Other(insn));
        let fine = Instruction::Alu {
            wide: true,
            op: AluOp::Add,
            dst: 10,
            src: Operand::Imm(1),
        };
        assert!(matches!(
            Op::new(&fine),
            Op::Add64Imm {
                dst: R::R10,
                imm: 1
            }
        ));
    }

    #[test]
    fn common_instructions_have_their_own_variant() {
        let specialised = instructions()
            .iter()
            .filter(|insn| !matches!(Op::new(insn), Op::Other(_)))
            .count();
        let other: Vec<_> = instructions()
            .into_iter()
            .filter(|insn| matches!(Op::new(insn), Op::Other(_)))
            .collect();
        // Neg and MovSx (2 widths x 2 operands each), signed loads, may_goto, map references
        // and local calls stay general; atomic adds (with and without fetch) have their own.
        assert_eq!(other.len(), 8 + 4 + 3, "{other:?}");
        assert_eq!(specialised, 56 + 44 + 4 + 8 + 9 + 4 + 3);
    }
}
