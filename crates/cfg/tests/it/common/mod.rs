//! Builders for hand-written test programs: `linerate_bpf::insn::build`'s instructions, function
//! addresses, and programs of one or several functions.

#![allow(dead_code)]

pub use linerate_bpf::insn::build::*;
use linerate_bpf::insn::{encode_all, Imm64, Instruction};
use linerate_bpf::program::Function;
use linerate_bpf::Program;

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
        func_info: Vec::new(),
        line_info: Vec::new(),
    }
}

/// A program of one function, `main`.
pub fn single(body: Vec<Instruction>) -> Program {
    Program::from_instructions("main", "xdp", &body)
}
