//! BPF instructions: the raw 8-byte encoding and its decoded form.
//!
//! [`RawInsn`] is one 8-byte slot exactly as the kernel reads it; a 64-bit immediate load takes two
//! slots. [`Instruction`] is the decoded meaning-bearing form every other part of linerate works
//! on (semantics, disassembler, assembler, CFG). Decoding rejects every encoding the kernel's
//! verifier would reject as an unknown opcode, so that nothing downstream sees one; encoding is the
//! exact inverse (`decode(encode(i)) == i`, pinned by tests).

use std::fmt;

pub mod build;
pub mod regs;

/// Instruction classes (`code & 0x07`).
pub mod class {
    pub const LD: u8 = 0x00;
    pub const LDX: u8 = 0x01;
    pub const ST: u8 = 0x02;
    pub const STX: u8 = 0x03;
    pub const ALU: u8 = 0x04;
    pub const JMP: u8 = 0x05;
    pub const JMP32: u8 = 0x06;
    pub const ALU64: u8 = 0x07;
}

/// Source operand flag of ALU and JMP instructions (`code & 0x08`).
pub const SRC_REG: u8 = 0x08;

/// Memory modes of load/store classes (`code & 0xe0`).
pub mod mode {
    pub const IMM: u8 = 0x00;
    pub const ABS: u8 = 0x20;
    pub const IND: u8 = 0x40;
    pub const MEM: u8 = 0x60;
    pub const MEMSX: u8 = 0x80;
    pub const ATOMIC: u8 = 0xc0;
}

/// `src_reg` values of a 64-bit immediate load that give the immediate a special meaning.
pub mod pseudo {
    pub const MAP_FD: u8 = 1;
    pub const MAP_VALUE: u8 = 2;
    pub const BTF_ID: u8 = 3;
    pub const FUNC: u8 = 4;
    pub const MAP_IDX: u8 = 5;
    pub const MAP_IDX_VALUE: u8 = 6;
    /// `src_reg` of a call instruction that calls a BPF function (bpf-to-bpf call).
    pub const CALL: u8 = 1;
    /// `src_reg` of a call instruction that calls a kernel function.
    pub const KFUNC_CALL: u8 = 2;
}

/// One 8-byte instruction slot as stored in an object file and passed to the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct RawInsn {
    pub code: u8,
    pub dst: u8,
    pub src: u8,
    pub off: i16,
    pub imm: i32,
}

impl RawInsn {
    /// Size of one slot in bytes.
    pub const SIZE: usize = 8;

    /// Reads one little-endian slot.
    pub fn from_bytes(b: [u8; 8]) -> RawInsn {
        RawInsn {
            code: b[0],
            dst: b[1] & 0x0f,
            src: b[1] >> 4,
            off: i16::from_le_bytes([b[2], b[3]]),
            imm: i32::from_le_bytes([b[4], b[5], b[6], b[7]]),
        }
    }

    /// The little-endian encoding of this slot.
    pub fn to_bytes(self) -> [u8; 8] {
        let off = self.off.to_le_bytes();
        let imm = self.imm.to_le_bytes();
        [
            self.code,
            (self.dst & 0x0f) | (self.src << 4),
            off[0],
            off[1],
            imm[0],
            imm[1],
            imm[2],
            imm[3],
        ]
    }

    /// Splits a byte slice into slots; `None` if its length is not a multiple of 8.
    pub fn parse_all(bytes: &[u8]) -> Option<Vec<RawInsn>> {
        if !bytes.len().is_multiple_of(Self::SIZE) {
            return None;
        }
        Some(
            bytes
                .chunks_exact(Self::SIZE)
                .map(|c| RawInsn::from_bytes(c.try_into().expect("chunk of 8")))
                .collect(),
        )
    }

    /// Whether this slot starts a two-slot 64-bit immediate load.
    pub fn is_wide(self) -> bool {
        self.code == class::LD | mode::IMM | Size::Dw.code_bits()
    }
}

/// A register number 0..=10 (r10 is the read-only frame pointer).
pub type Reg = u8;

/// The frame pointer register.
pub const FRAME_POINTER: Reg = 10;

/// Number of registers.
pub const NUM_REGS: usize = 11;

/// Width of a memory access.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Size {
    B,
    H,
    W,
    Dw,
}

impl Size {
    /// Number of bytes accessed.
    pub fn bytes(self) -> u32 {
        match self {
            Size::B => 1,
            Size::H => 2,
            Size::W => 4,
            Size::Dw => 8,
        }
    }

    /// Number of bits accessed.
    pub fn bits(self) -> u32 {
        self.bytes() * 8
    }

    fn code_bits(self) -> u8 {
        match self {
            Size::W => 0x00,
            Size::H => 0x08,
            Size::B => 0x10,
            Size::Dw => 0x18,
        }
    }

    fn from_code(code: u8) -> Size {
        match code & 0x18 {
            0x00 => Size::W,
            0x08 => Size::H,
            0x10 => Size::B,
            _ => Size::Dw,
        }
    }

    /// The size with the given byte count.
    pub fn from_bytes(n: u32) -> Option<Size> {
        Some(match n {
            1 => Size::B,
            2 => Size::H,
            4 => Size::W,
            8 => Size::Dw,
            _ => return None,
        })
    }
}

/// Second operand of ALU and conditional jump instructions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operand {
    Reg(Reg),
    Imm(i32),
}

/// ALU operations. Signed variants and sign-extending moves are the `-mcpu=v4` forms encoded
/// through the `off` field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AluOp {
    Add,
    Sub,
    Mul,
    Div,
    SDiv,
    Or,
    And,
    Lsh,
    Rsh,
    Neg,
    Mod,
    SMod,
    Xor,
    Mov,
    /// Move with sign extension from the low 8, 16 or 32 bits of the source register.
    MovSx(u8),
    Arsh,
}

impl AluOp {
    /// All operations, for exhaustive tests and generators.
    pub const ALL: [AluOp; 18] = [
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
        AluOp::MovSx(8),
        AluOp::MovSx(16),
        AluOp::MovSx(32),
        AluOp::Arsh,
    ];

    fn code_and_off(self) -> (u8, i16) {
        match self {
            AluOp::Add => (0x00, 0),
            AluOp::Sub => (0x10, 0),
            AluOp::Mul => (0x20, 0),
            AluOp::Div => (0x30, 0),
            AluOp::SDiv => (0x30, 1),
            AluOp::Or => (0x40, 0),
            AluOp::And => (0x50, 0),
            AluOp::Lsh => (0x60, 0),
            AluOp::Rsh => (0x70, 0),
            AluOp::Neg => (0x80, 0),
            AluOp::Mod => (0x90, 0),
            AluOp::SMod => (0x90, 1),
            AluOp::Xor => (0xa0, 0),
            AluOp::Mov => (0xb0, 0),
            AluOp::MovSx(bits) => (0xb0, bits as i16),
            AluOp::Arsh => (0xc0, 0),
        }
    }
}

/// Byte-order operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Endian {
    /// Convert to little endian (a truncation to the width on a little-endian host).
    ToLe,
    /// Convert to big endian (a byte swap on a little-endian host).
    ToBe,
    /// Unconditional byte swap (`-mcpu=v4`).
    Swap,
}

/// Conditions of conditional jumps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Cond {
    Eq,
    Gt,
    Ge,
    Set,
    Ne,
    Sgt,
    Sge,
    Lt,
    Le,
    Slt,
    Sle,
}

impl Cond {
    /// All conditions, for exhaustive tests and generators.
    pub const ALL: [Cond; 11] = [
        Cond::Eq,
        Cond::Gt,
        Cond::Ge,
        Cond::Set,
        Cond::Ne,
        Cond::Sgt,
        Cond::Sge,
        Cond::Lt,
        Cond::Le,
        Cond::Slt,
        Cond::Sle,
    ];

    fn code(self) -> u8 {
        match self {
            Cond::Eq => 0x10,
            Cond::Gt => 0x20,
            Cond::Ge => 0x30,
            Cond::Set => 0x40,
            Cond::Ne => 0x50,
            Cond::Sgt => 0x60,
            Cond::Sge => 0x70,
            Cond::Lt => 0xa0,
            Cond::Le => 0xb0,
            Cond::Slt => 0xc0,
            Cond::Sle => 0xd0,
        }
    }

    fn from_code(op: u8) -> Option<Cond> {
        Cond::ALL.into_iter().find(|c| c.code() == op)
    }
}

/// Read-modify-write operations of atomic instructions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AtomicOp {
    Add,
    Or,
    And,
    Xor,
    /// Exchange; always fetches.
    Xchg,
    /// Compare with r0 and exchange; always fetches into r0.
    CmpXchg,
}

impl AtomicOp {
    /// All operations, for exhaustive tests and generators.
    pub const ALL: [AtomicOp; 6] = [
        AtomicOp::Add,
        AtomicOp::Or,
        AtomicOp::And,
        AtomicOp::Xor,
        AtomicOp::Xchg,
        AtomicOp::CmpXchg,
    ];
}

const ATOMIC_FETCH: i32 = 0x01;

/// What a 64-bit immediate load loads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Imm64 {
    /// A plain constant.
    Const(u64),
    /// A map handle; the index is into the object's maps (`BPF_PSEUDO_MAP_IDX`).
    Map(u32),
    /// Address of `offset` bytes into the single value of a map (global data) (`BPF_PSEUDO_MAP_IDX_VALUE`).
    MapValue { map: u32, offset: u32 },
    /// Any other pseudo source (`src_reg`, first imm, second imm) kept verbatim: kernel map fds,
    /// BTF ids, function addresses.
    Pseudo { src: u8, imm: i32, next_imm: i32 },
}

/// What a call instruction calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CallTarget {
    /// A kernel helper by number.
    Helper(u32),
    /// A BPF function, relative to the next instruction.
    Local(i32),
    /// A kernel function by BTF id.
    Kfunc(i32),
}

/// A decoded instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Instruction {
    /// `dst = dst op src` on 64 bits (`wide`) or the low 32 bits, zero-extending the result.
    Alu {
        wide: bool,
        op: AluOp,
        dst: Reg,
        src: Operand,
    },
    /// Byte order conversion of the low `bits` bits of `dst`.
    Endian { kind: Endian, bits: u8, dst: Reg },
    /// Two-slot 64-bit immediate load.
    LoadImm64 { dst: Reg, imm: Imm64 },
    /// `dst = *(size *)(src + off)`, sign-extended when `signed`.
    Load {
        size: Size,
        signed: bool,
        dst: Reg,
        src: Reg,
        off: i16,
    },
    /// `*(size *)(dst + off) = src`.
    Store {
        size: Size,
        dst: Reg,
        off: i16,
        src: Operand,
    },
    /// Atomic read-modify-write of `*(size *)(dst + off)` with `src`.
    Atomic {
        size: Size,
        op: AtomicOp,
        fetch: bool,
        dst: Reg,
        src: Reg,
        off: i16,
    },
    /// Legacy packet access (`LD_ABS`/`LD_IND`), only valid for socket-buffer programs.
    LegacyPacketLoad {
        size: Size,
        indirect: bool,
        src: Reg,
        imm: i32,
    },
    /// Unconditional jump by `off` instructions relative to the next one (`gotol` for 32-bit offsets).
    Ja { off: i32, long: bool },
    /// `may_goto` (`BPF_JMP | BPF_JCOND`, Linux 6.9+): jumps once the program's loop budget is
    /// exhausted, otherwise falls through and uses up one unit of it. The kernel keeps the budget
    /// in a hidden stack slot set at entry; it lets the verifier accept loops it cannot bound.
    MayGoto { off: i16 },
    /// Conditional jump comparing 64 bits (`wide`) or the low 32 bits.
    Jump {
        wide: bool,
        cond: Cond,
        dst: Reg,
        src: Operand,
        off: i16,
    },
    /// Helper, kfunc or BPF-to-BPF call.
    Call(CallTarget),
    /// Return from the current function.
    Exit,
}

/// A slot sequence that is not a valid instruction.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("unknown opcode 0x{code:02x} at insn {index}")]
    UnknownOpcode { index: usize, code: u8 },
    #[error("invalid {what} in opcode 0x{code:02x} at insn {index}")]
    InvalidField {
        index: usize,
        code: u8,
        what: &'static str,
    },
    #[error("64-bit immediate load at insn {index} is missing its second slot")]
    TruncatedImm64 { index: usize },
}

fn reg(index: usize, code: u8, r: u8, what: &'static str) -> Result<Reg, DecodeError> {
    if (r as usize) < NUM_REGS {
        Ok(r)
    } else {
        Err(DecodeError::InvalidField { index, code, what })
    }
}

impl Instruction {
    /// Number of 8-byte slots this instruction occupies.
    pub fn slots(&self) -> usize {
        match self {
            Instruction::LoadImm64 { .. } => 2,
            _ => 1,
        }
    }

    /// Decodes the instruction starting at `slots[index]`. Fields an instruction does not use
    /// must be zero, as the kernel's verifier demands, so every accepted encoding is canonical.
    pub fn decode(slots: &[RawInsn], index: usize) -> Result<Instruction, DecodeError> {
        let insn = Self::decode_fields(slots, index)?;
        if insn.encode()[..] != slots[index..index + insn.slots()] {
            return Err(DecodeError::InvalidField {
                index,
                code: slots[index].code,
                what: "reserved field (must be zero)",
            });
        }
        Ok(insn)
    }

    fn decode_fields(slots: &[RawInsn], index: usize) -> Result<Instruction, DecodeError> {
        let raw = slots[index];
        let code = raw.code;
        let unknown = || DecodeError::UnknownOpcode { index, code };
        let invalid = |what| DecodeError::InvalidField { index, code, what };
        let dst = || reg(index, code, raw.dst, "destination register");
        let src = || reg(index, code, raw.src, "source register");
        let alu_operand = || -> Result<Operand, DecodeError> {
            if code & SRC_REG != 0 {
                Ok(Operand::Reg(src()?))
            } else {
                Ok(Operand::Imm(raw.imm))
            }
        };
        match code & 0x07 {
            class::ALU | class::ALU64 => {
                let wide = code & 0x07 == class::ALU64;
                let op = match (code & 0xf0, raw.off) {
                    (0x00, 0) => AluOp::Add,
                    (0x10, 0) => AluOp::Sub,
                    (0x20, 0) => AluOp::Mul,
                    (0x30, 0) => AluOp::Div,
                    (0x30, 1) => AluOp::SDiv,
                    (0x40, 0) => AluOp::Or,
                    (0x50, 0) => AluOp::And,
                    (0x60, 0) => AluOp::Lsh,
                    (0x70, 0) => AluOp::Rsh,
                    (0x80, 0) => AluOp::Neg,
                    (0x90, 0) => AluOp::Mod,
                    (0x90, 1) => AluOp::SMod,
                    (0xa0, 0) => AluOp::Xor,
                    (0xb0, 0) => AluOp::Mov,
                    (0xb0, 8) | (0xb0, 16) => AluOp::MovSx(raw.off as u8),
                    (0xb0, 32) if wide => AluOp::MovSx(32),
                    (0xc0, 0) => AluOp::Arsh,
                    (0xd0, 0) => {
                        let kind = match (wide, code & SRC_REG != 0) {
                            (false, false) => Endian::ToLe,
                            (false, true) => Endian::ToBe,
                            (true, false) => Endian::Swap,
                            (true, true) => return Err(unknown()),
                        };
                        if !matches!(raw.imm, 16 | 32 | 64) {
                            return Err(invalid("byte swap width"));
                        }
                        return Ok(Instruction::Endian {
                            kind,
                            bits: raw.imm as u8,
                            dst: dst()?,
                        });
                    }
                    (0x00..=0xd0, _) => return Err(invalid("offset")),
                    _ => return Err(unknown()),
                };
                if op == AluOp::Neg && code & SRC_REG != 0 {
                    return Err(unknown());
                }
                if op == AluOp::Neg && raw.imm != 0 {
                    return Err(invalid("immediate of neg (must be zero)"));
                }
                if matches!(op, AluOp::MovSx(_)) && code & SRC_REG == 0 {
                    return Err(unknown());
                }
                Ok(Instruction::Alu {
                    wide,
                    op,
                    dst: dst()?,
                    src: alu_operand()?,
                })
            }
            class::JMP | class::JMP32 => {
                let wide = code & 0x07 == class::JMP;
                match code & 0xf0 {
                    0x00 => {
                        if code & SRC_REG != 0 {
                            return Err(unknown());
                        }
                        if wide {
                            Ok(Instruction::Ja {
                                off: raw.off as i32,
                                long: false,
                            })
                        } else {
                            Ok(Instruction::Ja {
                                off: raw.imm,
                                long: true,
                            })
                        }
                    }
                    0x80 if wide && code & SRC_REG == 0 => Ok(Instruction::Call(match raw.src {
                        0 => CallTarget::Helper(raw.imm as u32),
                        pseudo::CALL => CallTarget::Local(raw.imm),
                        pseudo::KFUNC_CALL => CallTarget::Kfunc(raw.imm),
                        _ => return Err(invalid("call kind")),
                    })),
                    0x90 if wide && code & SRC_REG == 0 => Ok(Instruction::Exit),
                    0xe0 if wide && code & SRC_REG == 0 => {
                        if raw.src != 0 {
                            return Err(invalid("kind of conditional pseudo-jump"));
                        }
                        if raw.dst != 0 || raw.imm != 0 {
                            return Err(invalid(
                                "register or immediate of may_goto (must be zero)",
                            ));
                        }
                        Ok(Instruction::MayGoto { off: raw.off })
                    }
                    op => {
                        let cond = Cond::from_code(op).ok_or_else(unknown)?;
                        Ok(Instruction::Jump {
                            wide,
                            cond,
                            dst: dst()?,
                            src: alu_operand()?,
                            off: raw.off,
                        })
                    }
                }
            }
            class::LD => match code & 0xe0 {
                mode::IMM if Size::from_code(code) == Size::Dw => {
                    let next = *slots
                        .get(index + 1)
                        .ok_or(DecodeError::TruncatedImm64 { index })?;
                    if next.code != 0 || next.dst != 0 || next.src != 0 || next.off != 0 {
                        return Err(invalid("second slot of 64-bit immediate"));
                    }
                    let imm = match raw.src {
                        0 => {
                            Imm64::Const((raw.imm as u32 as u64) | ((next.imm as u32 as u64) << 32))
                        }
                        pseudo::MAP_IDX if next.imm == 0 => Imm64::Map(raw.imm as u32),
                        pseudo::MAP_IDX_VALUE => Imm64::MapValue {
                            map: raw.imm as u32,
                            offset: next.imm as u32,
                        },
                        pseudo::MAP_FD | pseudo::MAP_VALUE | pseudo::BTF_ID | pseudo::FUNC => {
                            Imm64::Pseudo {
                                src: raw.src,
                                imm: raw.imm,
                                next_imm: next.imm,
                            }
                        }
                        _ => return Err(invalid("immediate kind")),
                    };
                    Ok(Instruction::LoadImm64 { dst: dst()?, imm })
                }
                mode::ABS if raw.src != 0 => Err(invalid("source register of LD_ABS (must be r0)")),
                mode::ABS | mode::IND => Ok(Instruction::LegacyPacketLoad {
                    size: Size::from_code(code),
                    indirect: code & 0xe0 == mode::IND,
                    src: src()?,
                    imm: raw.imm,
                }),
                _ => Err(unknown()),
            },
            class::LDX => {
                let signed = match code & 0xe0 {
                    mode::MEM => false,
                    mode::MEMSX if Size::from_code(code) != Size::Dw => true,
                    _ => return Err(unknown()),
                };
                Ok(Instruction::Load {
                    size: Size::from_code(code),
                    signed,
                    dst: dst()?,
                    src: src()?,
                    off: raw.off,
                })
            }
            class::ST => {
                if code & 0xe0 != mode::MEM {
                    return Err(unknown());
                }
                Ok(Instruction::Store {
                    size: Size::from_code(code),
                    dst: dst()?,
                    off: raw.off,
                    src: Operand::Imm(raw.imm),
                })
            }
            _ => {
                let size = Size::from_code(code);
                match code & 0xe0 {
                    mode::MEM => Ok(Instruction::Store {
                        size,
                        dst: dst()?,
                        off: raw.off,
                        src: Operand::Reg(src()?),
                    }),
                    mode::ATOMIC if matches!(size, Size::W | Size::Dw) => {
                        let (op, fetch) = match raw.imm {
                            0x00 => (AtomicOp::Add, false),
                            0x40 => (AtomicOp::Or, false),
                            0x50 => (AtomicOp::And, false),
                            0xa0 => (AtomicOp::Xor, false),
                            0x01 => (AtomicOp::Add, true),
                            0x41 => (AtomicOp::Or, true),
                            0x51 => (AtomicOp::And, true),
                            0xa1 => (AtomicOp::Xor, true),
                            0xe1 => (AtomicOp::Xchg, true),
                            0xf1 => (AtomicOp::CmpXchg, true),
                            _ => return Err(invalid("atomic operation")),
                        };
                        Ok(Instruction::Atomic {
                            size,
                            op,
                            fetch,
                            dst: dst()?,
                            src: src()?,
                            off: raw.off,
                        })
                    }
                    _ => Err(unknown()),
                }
            }
        }
    }

    /// Encodes this instruction into one or two slots.
    pub fn encode(&self) -> Vec<RawInsn> {
        let one = |code: u8, dst: u8, src: u8, off: i16, imm: i32| {
            vec![RawInsn {
                code,
                dst,
                src,
                off,
                imm,
            }]
        };
        let operand = |src: Operand| match src {
            Operand::Reg(r) => (SRC_REG, r, 0),
            Operand::Imm(i) => (0, 0, i),
        };
        match *self {
            Instruction::Alu { wide, op, dst, src } => {
                let (op_code, off) = op.code_and_off();
                let (flag, src_reg, imm) = operand(src);
                let cls = if wide { class::ALU64 } else { class::ALU };
                one(cls | op_code | flag, dst, src_reg, off, imm)
            }
            Instruction::Endian { kind, bits, dst } => {
                let code = match kind {
                    Endian::ToLe => class::ALU | 0xd0,
                    Endian::ToBe => class::ALU | 0xd0 | SRC_REG,
                    Endian::Swap => class::ALU64 | 0xd0,
                };
                one(code, dst, 0, 0, bits as i32)
            }
            Instruction::LoadImm64 { dst, imm } => {
                let (src, lo, hi) = match imm {
                    Imm64::Const(v) => (0, v as u32 as i32, (v >> 32) as u32 as i32),
                    Imm64::Map(m) => (pseudo::MAP_IDX, m as i32, 0),
                    Imm64::MapValue { map, offset } => {
                        (pseudo::MAP_IDX_VALUE, map as i32, offset as i32)
                    }
                    Imm64::Pseudo { src, imm, next_imm } => (src, imm, next_imm),
                };
                vec![
                    RawInsn {
                        code: class::LD | mode::IMM | Size::Dw.code_bits(),
                        dst,
                        src,
                        off: 0,
                        imm: lo,
                    },
                    RawInsn {
                        imm: hi,
                        ..RawInsn::default()
                    },
                ]
            }
            Instruction::Load {
                size,
                signed,
                dst,
                src,
                off,
            } => {
                let m = if signed { mode::MEMSX } else { mode::MEM };
                one(class::LDX | m | size.code_bits(), dst, src, off, 0)
            }
            Instruction::Store {
                size,
                dst,
                off,
                src,
            } => match src {
                Operand::Reg(r) => one(class::STX | mode::MEM | size.code_bits(), dst, r, off, 0),
                Operand::Imm(i) => one(class::ST | mode::MEM | size.code_bits(), dst, 0, off, i),
            },
            Instruction::Atomic {
                size,
                op,
                fetch,
                dst,
                src,
                off,
            } => {
                let imm = match op {
                    AtomicOp::Add => 0x00,
                    AtomicOp::Or => 0x40,
                    AtomicOp::And => 0x50,
                    AtomicOp::Xor => 0xa0,
                    AtomicOp::Xchg => 0xe0,
                    AtomicOp::CmpXchg => 0xf0,
                } | if fetch { ATOMIC_FETCH } else { 0 };
                one(
                    class::STX | mode::ATOMIC | size.code_bits(),
                    dst,
                    src,
                    off,
                    imm,
                )
            }
            Instruction::LegacyPacketLoad {
                size,
                indirect,
                src,
                imm,
            } => {
                let m = if indirect { mode::IND } else { mode::ABS };
                one(class::LD | m | size.code_bits(), 0, src, 0, imm)
            }
            Instruction::Ja { off, long } => {
                if long {
                    one(class::JMP32, 0, 0, 0, off)
                } else {
                    one(class::JMP, 0, 0, off as i16, 0)
                }
            }
            Instruction::Jump {
                wide,
                cond,
                dst,
                src,
                off,
            } => {
                let (flag, src_reg, imm) = operand(src);
                let cls = if wide { class::JMP } else { class::JMP32 };
                one(cls | cond.code() | flag, dst, src_reg, off, imm)
            }
            Instruction::Call(target) => {
                let (src, imm) = match target {
                    CallTarget::Helper(id) => (0, id as i32),
                    CallTarget::Local(rel) => (pseudo::CALL, rel),
                    CallTarget::Kfunc(id) => (pseudo::KFUNC_CALL, id),
                };
                one(class::JMP | 0x80, 0, src, 0, imm)
            }
            Instruction::Exit => one(class::JMP | 0x90, 0, 0, 0, 0),
            Instruction::MayGoto { off } => one(class::JMP | 0xe0, 0, 0, off, 0),
        }
    }

    /// Relative jump offset for jumps (`None` for everything else). The target is
    /// `index + 1 + offset`.
    pub fn jump_offset(&self) -> Option<i64> {
        match *self {
            Instruction::Ja { off, .. } => Some(off as i64),
            Instruction::Jump { off, .. } => Some(off as i64),
            Instruction::MayGoto { off } => Some(off as i64),
            _ => None,
        }
    }

    /// The slot this jump, `may_goto` or BPF-to-BPF call at `slot` transfers control to (see
    /// [`relative_target`]); `None` for other instructions.
    pub fn jump_target(&self, slot: usize) -> Option<i64> {
        match *self {
            Instruction::Call(CallTarget::Local(off)) => Some(relative_target(slot, off as i64)),
            _ => self.jump_offset().map(|off| relative_target(slot, off)),
        }
    }
}

/// The slot that a relative offset `off` in the instruction at `slot` names: `slot + 1 + off`, the
/// rule of jumps, `may_goto`, BPF-to-BPF calls and function addresses. Signed and wrapping, so
/// that a bad offset yields an out-of-range slot the caller rejects rather than an overflow.
#[inline(always)]
pub fn relative_target(slot: usize, off: i64) -> i64 {
    (slot as i64).wrapping_add(1).wrapping_add(off)
}

/// Decodes every instruction of a slot sequence, yielding `(slot index, instruction)`.
pub fn decode_all(slots: &[RawInsn]) -> Result<Vec<(usize, Instruction)>, DecodeError> {
    let mut out = Vec::with_capacity(slots.len());
    let mut i = 0;
    while i < slots.len() {
        let insn = Instruction::decode(slots, i)?;
        out.push((i, insn));
        i += insn.slots();
    }
    Ok(out)
}

/// Encodes a sequence of instructions into slots.
pub fn encode_all(insns: &[Instruction]) -> Vec<RawInsn> {
    insns.iter().flat_map(|i| i.encode()).collect()
}

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Size::B => "u8",
            Size::H => "u16",
            Size::W => "u32",
            Size::Dw => "u64",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every instruction form the decoder knows, with registers and immediates varied.
    pub(crate) fn all_forms() -> Vec<Instruction> {
        let mut all = vec![Instruction::Exit];
        let operands = [Operand::Reg(4), Operand::Imm(-7), Operand::Imm(0)];
        for wide in [false, true] {
            for op in AluOp::ALL {
                for src in operands {
                    let neg_with_reg = op == AluOp::Neg && src != Operand::Imm(0);
                    let movsx_with_imm =
                        matches!(op, AluOp::MovSx(_)) && matches!(src, Operand::Imm(_));
                    let movsx32_narrow = op == AluOp::MovSx(32) && !wide;
                    if !(neg_with_reg || movsx_with_imm || movsx32_narrow) {
                        all.push(Instruction::Alu {
                            wide,
                            op,
                            dst: 1,
                            src,
                        });
                    }
                }
            }
            for cond in Cond::ALL {
                for src in operands {
                    all.push(Instruction::Jump {
                        wide,
                        cond,
                        dst: 2,
                        src,
                        off: -3,
                    });
                }
            }
        }
        for kind in [Endian::ToLe, Endian::ToBe, Endian::Swap] {
            for bits in [16, 32, 64] {
                all.push(Instruction::Endian { kind, bits, dst: 5 });
            }
        }
        for size in [Size::B, Size::H, Size::W, Size::Dw] {
            for signed in [false, true] {
                if !(signed && size == Size::Dw) {
                    all.push(Instruction::Load {
                        size,
                        signed,
                        dst: 0,
                        src: 10,
                        off: -8,
                    });
                }
            }
            for src in operands {
                all.push(Instruction::Store {
                    size,
                    dst: 10,
                    off: -16,
                    src,
                });
            }
        }
        for size in [Size::W, Size::Dw] {
            for op in AtomicOp::ALL {
                for fetch in [false, true] {
                    if fetch || !matches!(op, AtomicOp::Xchg | AtomicOp::CmpXchg) {
                        all.push(Instruction::Atomic {
                            size,
                            op,
                            fetch,
                            dst: 1,
                            src: 2,
                            off: 4,
                        });
                    }
                }
            }
        }
        for imm in [
            Imm64::Const(0xdead_beef_0123_4567),
            Imm64::Map(3),
            Imm64::MapValue { map: 1, offset: 12 },
        ] {
            all.push(Instruction::LoadImm64 { dst: 1, imm });
        }
        all.push(Instruction::Ja {
            off: -5,
            long: false,
        });
        all.push(Instruction::Ja {
            off: 70_000,
            long: true,
        });
        all.push(Instruction::Call(CallTarget::Helper(44)));
        all.push(Instruction::Call(CallTarget::Local(-9)));
        all.push(Instruction::MayGoto { off: -7 });
        all
    }

    #[test]
    fn every_form_round_trips_through_its_encoding() {
        let forms = all_forms();
        let slots = encode_all(&forms);
        let decoded: Vec<Instruction> = decode_all(&slots)
            .unwrap()
            .into_iter()
            .map(|(_, i)| i)
            .collect();
        assert_eq!(decoded, forms);
    }

    /// Every one-slot encoding either fails to decode or re-encodes to itself.
    #[test]
    fn accepted_encodings_are_canonical() {
        for code in 0..=255u8 {
            for (dst, src, off, imm) in [
                (0u8, 0u8, 0i16, 0i32),
                (3, 1, 0, 1),
                (2, 0, 1, 0xe1),
                (0, 3, 8, 32),
                (1, 0, 0, 64),
            ] {
                let slots = [
                    RawInsn {
                        code,
                        dst,
                        src,
                        off,
                        imm,
                    },
                    RawInsn::default(),
                ];
                if let Ok(insn) = Instruction::decode(&slots, 0) {
                    assert_eq!(insn.encode(), slots[..insn.slots()].to_vec(), "{insn:?}");
                }
            }
        }
    }

    #[test]
    fn rejects_unknown_opcode_with_its_index() {
        let slots = [
            RawInsn::default(),
            RawInsn {
                code: 0xff,
                ..RawInsn::default()
            },
        ];
        let err = decode_all(&slots[1..]).unwrap_err();
        assert_eq!(
            err,
            DecodeError::UnknownOpcode {
                index: 0,
                code: 0xff
            }
        );
    }

    #[test]
    fn rejects_truncated_wide_load() {
        let slots = [RawInsn {
            code: 0x18,
            ..RawInsn::default()
        }];
        assert_eq!(
            decode_all(&slots).unwrap_err(),
            DecodeError::TruncatedImm64 { index: 0 }
        );
    }

    #[test]
    fn raw_bytes_round_trip() {
        let raw = RawInsn {
            code: 0x61,
            dst: 2,
            src: 1,
            off: -4,
            imm: -77,
        };
        assert_eq!(RawInsn::from_bytes(raw.to_bytes()), raw);
    }
}
