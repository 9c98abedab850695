//! One-line constructors of [`Instruction`]s for programs written by hand: tests, the calibrator's
//! micro-benchmarks, random program generators.
//!
//! The names follow the kernel's own instruction macros (`include/linux/filter.h`): `mov64` is
//! `BPF_MOV64_IMM`, `mov64_reg` is `BPF_MOV64_REG`, `jmp` is `BPF_JMP_IMM`, and so on; a name
//! without `_reg` takes an immediate. Offsets of loads and stores are bytes from the base
//! register; offsets of jumps and local calls count slots from the next instruction (see
//! [`relative_target`](super::relative_target)).
//!
//! ```
//! use linerate_bpf::insn::build::{exit, mov64};
//! use linerate_bpf::Program;
//!
//! // `r0 = XDP_PASS; exit`
//! let pass = Program::from_instructions("pass", "xdp", &[mov64(0, 2), exit()]);
//! assert_eq!(pass.insns.len(), 2);
//! ```

use super::{AluOp, AtomicOp, CallTarget, Cond, Endian, Imm64, Instruction, Operand, Reg, Size};

/// `dst op= src` on 64 bits (`wide`) or the low 32 bits.
pub fn alu(wide: bool, op: AluOp, dst: Reg, src: Operand) -> Instruction {
    Instruction::Alu { wide, op, dst, src }
}

/// `dst op= imm` on 64 bits, the immediate sign-extended.
pub fn alu64(op: AluOp, dst: Reg, imm: i32) -> Instruction {
    alu(true, op, dst, Operand::Imm(imm))
}

/// `dst op= src` on 64 bits.
pub fn alu64_reg(op: AluOp, dst: Reg, src: Reg) -> Instruction {
    alu(true, op, dst, Operand::Reg(src))
}

/// `dst = imm` on 64 bits, the immediate sign-extended.
pub fn mov64(dst: Reg, imm: i32) -> Instruction {
    alu64(AluOp::Mov, dst, imm)
}

/// `dst = src` on 64 bits.
pub fn mov64_reg(dst: Reg, src: Reg) -> Instruction {
    alu64_reg(AluOp::Mov, dst, src)
}

/// `w_dst = imm`: the low 32 bits, the upper half cleared.
pub fn mov32(dst: Reg, imm: i32) -> Instruction {
    alu(false, AluOp::Mov, dst, Operand::Imm(imm))
}

/// `w_dst = w_src`: the low 32 bits, the upper half cleared.
pub fn mov32_reg(dst: Reg, src: Reg) -> Instruction {
    alu(false, AluOp::Mov, dst, Operand::Reg(src))
}

/// `dst += imm` on 64 bits (pointer arithmetic: `r2 = r10; r2 += -4`).
pub fn add64(dst: Reg, imm: i32) -> Instruction {
    alu64(AluOp::Add, dst, imm)
}

/// `dst += src` on 64 bits.
pub fn add64_reg(dst: Reg, src: Reg) -> Instruction {
    alu64_reg(AluOp::Add, dst, src)
}

/// `dst = htobe{bits}(dst)` (`BPF_ENDIAN(BPF_TO_BE, dst, bits)`): the low `bits` (16, 32 or 64)
/// bits byte-swapped on this little-endian target, the bits above them cleared.
pub fn be(dst: Reg, bits: u8) -> Instruction {
    Instruction::Endian {
        kind: Endian::ToBe,
        bits,
        dst,
    }
}

/// `dst = *(size *)(src + off)`, zero-extended.
pub fn ldx(size: Size, dst: Reg, src: Reg, off: i16) -> Instruction {
    Instruction::Load {
        size,
        signed: false,
        dst,
        src,
        off,
    }
}

/// `*(size *)(dst + off) = src`.
pub fn stx(size: Size, dst: Reg, off: i16, src: Reg) -> Instruction {
    store(size, dst, off, Operand::Reg(src))
}

/// `*(size *)(dst + off) = imm`.
pub fn st(size: Size, dst: Reg, off: i16, imm: i32) -> Instruction {
    store(size, dst, off, Operand::Imm(imm))
}

fn store(size: Size, dst: Reg, off: i16, src: Operand) -> Instruction {
    Instruction::Store {
        size,
        dst,
        off,
        src,
    }
}

/// An atomic read-modify-write of `*(size *)(dst + off)` with `src`; `fetch` returns the old
/// value in `src` (in `r0` for [`AtomicOp::CmpXchg`]).
pub fn atomic(size: Size, op: AtomicOp, fetch: bool, dst: Reg, off: i16, src: Reg) -> Instruction {
    Instruction::Atomic {
        size,
        op,
        fetch,
        dst,
        src,
        off,
    }
}

/// `dst = imm ll`, any two-slot immediate.
pub fn ld_imm64(dst: Reg, imm: Imm64) -> Instruction {
    Instruction::LoadImm64 { dst, imm }
}

/// `dst = value ll`, a 64-bit constant.
pub fn ld64(dst: Reg, value: u64) -> Instruction {
    ld_imm64(dst, Imm64::Const(value))
}

/// `dst = &maps[map]`, the handle of the object's map `map` (`BPF_LD_MAP_FD`).
pub fn ld_map(dst: Reg, map: u32) -> Instruction {
    ld_imm64(dst, Imm64::Map(map))
}

/// `dst = maps[map].value + offset`, an address inside a global-data map's single value.
pub fn ld_map_value(dst: Reg, map: u32, offset: u32) -> Instruction {
    ld_imm64(dst, Imm64::MapValue { map, offset })
}

/// `dst = &function`, the address of the function that starts `off + 1` slots after this one
/// (`BPF_PSEUDO_FUNC`: a callback passed to `bpf_loop` or `bpf_for_each_map_elem`).
pub fn ld_func(dst: Reg, off: i32) -> Instruction {
    ld_imm64(
        dst,
        Imm64::Pseudo {
            src: super::pseudo::FUNC,
            imm: off,
            next_imm: 0,
        },
    )
}

/// `if dst <cond> src goto +off`, comparing 64 bits (`wide`) or the low 32 bits.
pub fn jump(wide: bool, cond: Cond, dst: Reg, src: Operand, off: i16) -> Instruction {
    Instruction::Jump {
        wide,
        cond,
        dst,
        src,
        off,
    }
}

/// `if dst <cond> imm goto +off` on 64 bits.
pub fn jmp(cond: Cond, dst: Reg, imm: i32, off: i16) -> Instruction {
    jump(true, cond, dst, Operand::Imm(imm), off)
}

/// `if dst <cond> src goto +off` on 64 bits.
pub fn jmp_reg(cond: Cond, dst: Reg, src: Reg, off: i16) -> Instruction {
    jump(true, cond, dst, Operand::Reg(src), off)
}

/// `goto +off`.
pub fn ja(off: i16) -> Instruction {
    Instruction::Ja {
        off: off.into(),
        long: false,
    }
}

/// A call of kernel helper `id` (a number of [`facts::helper`](crate::facts::helper)).
pub fn call_helper(id: u32) -> Instruction {
    Instruction::Call(CallTarget::Helper(id))
}

/// A BPF-to-BPF call of the function that starts `off + 1` slots after this one.
pub fn call_local(off: i32) -> Instruction {
    Instruction::Call(CallTarget::Local(off))
}

/// `exit`: return `r0` from the current function.
pub fn exit() -> Instruction {
    Instruction::Exit
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::insn::{decode_all, encode_all};

    /// Each constructor builds the instruction its name says, and the kernel encoding of it.
    #[test]
    fn constructors_build_what_they_name() {
        let cases = [
            (mov64(1, -1), [0xb7, 0x01, 0, 0, 0xff, 0xff, 0xff, 0xff]),
            (mov64_reg(2, 10), [0xbf, 0xa2, 0, 0, 0, 0, 0, 0]),
            (mov32(3, 7), [0xb4, 0x03, 0, 0, 7, 0, 0, 0]),
            (mov32_reg(3, 4), [0xbc, 0x43, 0, 0, 0, 0, 0, 0]),
            (add64(2, -4), [0x07, 0x02, 0, 0, 0xfc, 0xff, 0xff, 0xff]),
            (add64_reg(2, 3), [0x0f, 0x32, 0, 0, 0, 0, 0, 0]),
            (alu64(AluOp::Xor, 1, 5), [0xa7, 0x01, 0, 0, 5, 0, 0, 0]),
            (alu64_reg(AluOp::Sub, 3, 2), [0x1f, 0x23, 0, 0, 0, 0, 0, 0]),
            (ldx(Size::W, 2, 1, 4), [0x61, 0x12, 4, 0, 0, 0, 0, 0]),
            (
                stx(Size::Dw, 10, -8, 1),
                [0x7b, 0x1a, 0xf8, 0xff, 0, 0, 0, 0],
            ),
            (st(Size::B, 10, -1, 9), [0x72, 0x0a, 0xff, 0xff, 9, 0, 0, 0]),
            (
                atomic(Size::Dw, AtomicOp::Add, true, 1, 8, 2),
                [0xdb, 0x21, 8, 0, 0x01, 0, 0, 0],
            ),
            (jmp(Cond::Eq, 0, 0, 2), [0x15, 0x00, 2, 0, 0, 0, 0, 0]),
            (
                jmp_reg(Cond::Gt, 2, 3, -1),
                [0x2d, 0x32, 0xff, 0xff, 0, 0, 0, 0],
            ),
            (ja(3), [0x05, 0, 3, 0, 0, 0, 0, 0]),
            (call_helper(1), [0x85, 0, 0, 0, 1, 0, 0, 0]),
            (call_local(4), [0x85, 0x10, 0, 0, 4, 0, 0, 0]),
            (exit(), [0x95, 0, 0, 0, 0, 0, 0, 0]),
        ];
        for (insn, bytes) in cases {
            let raw = insn.encode();
            assert_eq!(raw.len(), 1, "{insn:?}");
            assert_eq!(raw[0].to_bytes(), bytes, "{insn:?}");
        }
    }

    #[test]
    fn wide_loads_take_two_slots_and_round_trip() {
        let insns = [
            ld64(1, 0x1122_3344_5566_7788),
            ld_map(1, 3),
            ld_map_value(2, 1, 12),
            ld_imm64(3, Imm64::Const(1)),
        ];
        let slots = encode_all(&insns);
        assert_eq!(slots.len(), 8);
        let decoded: Vec<Instruction> = decode_all(&slots)
            .expect("decodes")
            .into_iter()
            .map(|(_, i)| i)
            .collect();
        assert_eq!(decoded, insns);
    }
}
