//! Builders for hand-written test programs.

#![allow(dead_code)]

use linerate_bpf::insn::{encode_all, AluOp, CallTarget, Cond, Imm64, Instruction, Operand};
use linerate_bpf::program::Function;
use linerate_bpf::Program;

/// `dst = imm`.
pub fn mov(dst: u8, imm: i32) -> Instruction {
    Instruction::Alu {
        wide: true,
        op: AluOp::Mov,
        dst,
        src: Operand::Imm(imm),
    }
}

/// `dst += imm`.
pub fn add(dst: u8, imm: i32) -> Instruction {
    Instruction::Alu {
        wide: true,
        op: AluOp::Add,
        dst,
        src: Operand::Imm(imm),
    }
}

/// `if dst <cond> imm goto +off`.
pub fn jmp(cond: Cond, dst: u8, imm: i32, off: i16) -> Instruction {
    Instruction::Jump {
        wide: true,
        cond,
        dst,
        src: Operand::Imm(imm),
        off,
    }
}

/// `goto +off`.
pub fn ja(off: i32) -> Instruction {
    Instruction::Ja { off, long: false }
}

/// `dst = imm ll` (two slots).
pub fn ld64(dst: u8, value: u64) -> Instruction {
    Instruction::LoadImm64 {
        dst,
        imm: Imm64::Const(value),
    }
}

/// `dst = &function` with the function `off + 1` slots after this one.
pub fn ld_func(dst: u8, off: i32) -> Instruction {
    Instruction::LoadImm64 {
        dst,
        imm: Imm64::Pseudo {
            src: linerate_bpf::insn::pseudo::FUNC,
            imm: off,
            next_imm: 0,
        },
    }
}

/// BPF-to-BPF call of the function `off + 1` slots after this one.
pub fn call_local(off: i32) -> Instruction {
    Instruction::Call(CallTarget::Local(off))
}

/// Helper call.
pub fn call_helper(id: u32) -> Instruction {
    Instruction::Call(CallTarget::Helper(id))
}

/// `exit`.
pub fn exit() -> Instruction {
    Instruction::Exit
}

/// A linked program of the given functions, laid out one after the other.
pub fn program(functions: &[(&str, Vec<Instruction>)]) -> Program {
    let mut insns = Vec::new();
    let mut table = Vec::new();
    for (name, body) in functions {
        let slots = encode_all(body);
        table.push(Function {
            name: name.to_string(),
            start: insns.len(),
            len: slots.len(),
        });
        insns.extend(slots);
    }
    Program {
        name: functions.first().map_or("empty", |f| f.0).to_string(),
        section: "xdp".into(),
        insns,
        functions: table,
    }
}

/// A program of one function.
pub fn single(body: Vec<Instruction>) -> Program {
    program(&[("main", body)])
}
