//! Helpers shared by the kernel tests: instruction builders, object construction and the
//! "skip visibly when BPF is unavailable" gate.

#![allow(dead_code)]

use linerate_bpf::insn::{AluOp, CallTarget, Cond, Imm64, Operand, Reg, Size};
use linerate_bpf::program::{Function, MapOrigin};
use linerate_bpf::{Instruction, MapDef, MapType, Object, Program};

/// XDP actions.
pub const XDP_ABORTED: u32 = 0;
pub const XDP_DROP: u32 = 1;
pub const XDP_PASS: u32 = 2;
pub const XDP_TX: u32 = 3;

/// Helper numbers.
pub const MAP_LOOKUP_ELEM: u32 = 1;
pub const MAP_UPDATE_ELEM: u32 = 2;
pub const TAIL_CALL: u32 = 12;
pub const XDP_ADJUST_HEAD: u32 = 44;
pub const XDP_ADJUST_META: u32 = 54;
pub const XDP_ADJUST_TAIL: u32 = 65;

/// `xdp_md` field offsets.
pub const MD_DATA: i16 = 0;
pub const MD_DATA_END: i16 = 4;
pub const MD_DATA_META: i16 = 8;
pub const MD_INGRESS_IFINDEX: i16 = 12;
pub const MD_RX_QUEUE_INDEX: i16 = 16;

/// Returns `true` when BPF is usable; otherwise prints `SKIPPED: <test>: <reason>` and returns
/// `false`, or fails the test under `LINERATE_REQUIRE_BPF=1` ([`linerate_kernel::usable_or_skip`]).
pub fn bpf_available() -> bool {
    linerate_kernel::usable_or_skip(std::thread::current().name().unwrap_or("kernel test"))
}

pub fn mov(dst: Reg, imm: i32) -> Instruction {
    Instruction::Alu {
        wide: true,
        op: AluOp::Mov,
        dst,
        src: Operand::Imm(imm),
    }
}

pub fn mov_reg(dst: Reg, src: Reg) -> Instruction {
    Instruction::Alu {
        wide: true,
        op: AluOp::Mov,
        dst,
        src: Operand::Reg(src),
    }
}

pub fn add(dst: Reg, imm: i32) -> Instruction {
    Instruction::Alu {
        wide: true,
        op: AluOp::Add,
        dst,
        src: Operand::Imm(imm),
    }
}

pub fn add_reg(dst: Reg, src: Reg) -> Instruction {
    Instruction::Alu {
        wide: true,
        op: AluOp::Add,
        dst,
        src: Operand::Reg(src),
    }
}

pub fn sub_reg(dst: Reg, src: Reg) -> Instruction {
    Instruction::Alu {
        wide: true,
        op: AluOp::Sub,
        dst,
        src: Operand::Reg(src),
    }
}

pub fn exit() -> Instruction {
    Instruction::Exit
}

pub fn call(helper: u32) -> Instruction {
    Instruction::Call(CallTarget::Helper(helper))
}

pub fn ldx(size: Size, dst: Reg, src: Reg, off: i16) -> Instruction {
    Instruction::Load {
        size,
        signed: false,
        dst,
        src,
        off,
    }
}

pub fn stx(size: Size, dst: Reg, off: i16, src: Reg) -> Instruction {
    Instruction::Store {
        size,
        dst,
        off,
        src: Operand::Reg(src),
    }
}

pub fn st(size: Size, dst: Reg, off: i16, imm: i32) -> Instruction {
    Instruction::Store {
        size,
        dst,
        off,
        src: Operand::Imm(imm),
    }
}

pub fn jmp_reg(cond: Cond, dst: Reg, src: Reg, off: i16) -> Instruction {
    Instruction::Jump {
        wide: true,
        cond,
        dst,
        src: Operand::Reg(src),
        off,
    }
}

pub fn jmp_imm(cond: Cond, dst: Reg, imm: i32, off: i16) -> Instruction {
    Instruction::Jump {
        wide: true,
        cond,
        dst,
        src: Operand::Imm(imm),
        off,
    }
}

pub fn ld_map(dst: Reg, map: u32) -> Instruction {
    Instruction::LoadImm64 {
        dst,
        imm: Imm64::Map(map),
    }
}

pub fn ld_map_value(dst: Reg, map: u32, offset: u32) -> Instruction {
    Instruction::LoadImm64 {
        dst,
        imm: Imm64::MapValue { map, offset },
    }
}

/// A linked XDP program (no sub-programs) from instructions.
pub fn program(name: &str, insns: &[Instruction]) -> Program {
    let raw = linerate_bpf::insn::encode_all(insns);
    let len = raw.len();
    Program {
        name: name.to_string(),
        section: "xdp".to_string(),
        insns: raw,
        functions: vec![Function {
            name: name.to_string(),
            start: 0,
            len,
        }],
    }
}

/// An object holding `programs` and `maps`.
pub fn object(programs: Vec<Program>, maps: Vec<MapDef>) -> Object {
    Object {
        name: "test".to_string(),
        programs,
        maps,
        license: Some("GPL".to_string()),
    }
}

/// A one-program object.
pub fn single(insns: &[Instruction], maps: Vec<MapDef>) -> Object {
    object(vec![program("xdp_test", insns)], maps)
}

/// A BTF-style map definition.
pub fn map(name: &str, map_type: MapType, key_size: u32, value_size: u32, max: u32) -> MapDef {
    MapDef {
        name: name.to_string(),
        map_type,
        key_size,
        value_size,
        max_entries: max,
        flags: 0,
        origin: MapOrigin::Btf,
        initial_value: None,
        initial_programs: Vec::new(),
    }
}

/// A packet of `len` bytes `0, 1, 2, ...`.
pub fn packet(len: usize) -> Vec<u8> {
    (0..len).map(|i| i as u8).collect()
}

/// `r2 = data; r3 = data_end` from the context in r1 (clobbers nothing else).
pub fn load_bounds() -> Vec<Instruction> {
    vec![ldx(Size::W, 2, 1, MD_DATA), ldx(Size::W, 3, 1, MD_DATA_END)]
}
