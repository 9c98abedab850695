//! The hXDP extended instruction set (paper 003 §3.2): eBPF plus three-operand ALU operations,
//! 6-byte loads and stores, and a parametrized exit; each instruction's operands, its 64-bit
//! encoding in a Sephirot lane, its text, and its meaning.
//!
//! **Meaning.** An extended instruction means what a short eBPF sequence means
//! ([`HxInsn::as_ebpf`]), run on a private copy of the registers of which only the instruction's
//! outputs ([`HxInsn::writes`]) are kept: `linerate-sem` stays the one definition of every
//! operation, and this module only says how the extensions compose it.
//!
//! **Encoding.** A lane holds one 64-bit word, the eBPF slot read as a little-endian integer: the
//! opcode in bits 0–7, dst in 8–11, src in 12–15, the offset in 16–31, the immediate in 32–63
//! (so `r0 = 1` is `0x00000001000000b7`). The extension opcodes are those of the public hXDP
//! artifacts (axbryd/hXDP-Artifacts, `parallelizer/ebpf_parser.py`, read as facts): `0x59` for
//! `dst = *(u48 *)(src + off)`, `0x5a` for `*(u48 *)(dst + off) = src`, `0x96` for an exit with
//! the action in the immediate, and the table in [`ALU3_OPCODES`] for `dst = src op imm`. The
//! artifacts list the 64-bit AND's source opcode twice (`0x57 → 0xe7` and `0x57 → 0xff`); by the
//! pattern of the 32-bit forms (`xor32 0xa4 → 0xfc`), `0xe7` is read as AND and `0xff` as XOR.
//!
//! Three choices are linerate's, as the paper and the artifacts leave them open:
//! - A jump's offset counts rows, relative to the row after the jump's row (the artifacts' ROMs
//!   keep the eBPF offsets of the source program, which do not address rows once instructions
//!   are packed).
//! - A 64-bit immediate load takes one lane when its second eBPF slot would be all zero except
//!   for a map value's offset, which then goes in the offset field; otherwise it takes two
//!   adjacent lanes, the second holding the second eBPF slot ([`HxInsn::ImmHigh`]); the first then
//!   has offset `-1` as a marker. Maps are named by their index in the object (`src` 5, eBPF's
//!   `BPF_PSEUDO_MAP_IDX`; 6 for a map value).
//! - An all-zero word is an empty slot (eBPF opcode 0 is no instruction).

use std::fmt;

use linerate_bpf::insn::regs::RegSet;
use linerate_bpf::insn::{
    pseudo, AluOp, CallTarget, Imm64, Instruction, Operand, RawInsn, Reg, Size,
};
use linerate_bpf::insn::{FRAME_POINTER, NUM_REGS};

/// The offset that marks the first word of a 64-bit immediate load taking two lanes.
const WIDE_MARKER: i16 = -1;

/// Opcode of a 6-byte load, `dst = *(u48 *)(src + off)`.
pub const LOAD48: u8 = 0x59;
/// Opcode of a 6-byte store, `*(u48 *)(dst + off) = src`.
pub const STORE48: u8 = 0x5a;
/// Opcode of the parametrized exit: the action is the immediate.
pub const EXIT_WITH: u8 = 0x96;

/// The three-operand ALU forms `dst = src op imm`: (64-bit, operation, opcode). Only these
/// operations have an encoding in the hXDP artifacts.
pub const ALU3_OPCODES: [(bool, AluOp, u8); 12] = [
    (true, AluOp::Add, 0x8f),
    (true, AluOp::Sub, 0xd7),
    (true, AluOp::Or, 0xdf),
    (true, AluOp::And, 0xe7),
    (true, AluOp::Lsh, 0xef),
    (true, AluOp::Rsh, 0xf7),
    (true, AluOp::Xor, 0xff),
    (false, AluOp::Add, 0x8c),
    (false, AluOp::Sub, 0xe4),
    (false, AluOp::Lsh, 0xec),
    (false, AluOp::Rsh, 0xf4),
    (false, AluOp::Xor, 0xfc),
];

/// The opcode of `dst = src op imm` of this width, if the extended ISA has one.
pub fn alu3_opcode(wide: bool, op: AluOp) -> Option<u8> {
    ALU3_OPCODES
        .iter()
        .find(|&&(w, o, _)| w == wide && o == op)
        .map(|&(_, _, code)| code)
}

/// One instruction of the extended ISA, as it sits in a lane.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HxInsn {
    /// An eBPF instruction, unchanged. A jump's offset is the compiler's business: in a schedule
    /// it counts rows (see the module documentation).
    Ebpf(Instruction),
    /// `dst = src op imm` (§3.2, "operands number").
    Alu3 {
        wide: bool,
        op: AluOp,
        dst: Reg,
        src: Reg,
        imm: i32,
    },
    /// `dst = *(u48 *)(src + off)`, zero-extended (§3.2, "load/store size").
    Load48 { dst: Reg, src: Reg, off: i16 },
    /// `*(u48 *)(dst + off) = src`, the low six bytes of `src`.
    Store48 { dst: Reg, off: i16, src: Reg },
    /// `r0 = action; exit` in one instruction (§3.2, "parametrized exit").
    ExitWith(i32),
    /// The second word of a 64-bit immediate load that does not fit one lane: the high 32 bits.
    /// It occupies the lane after the load's and does nothing by itself.
    ImmHigh(i32),
}

/// How an instruction touches memory, for dependence analysis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemAccess {
    /// The register holding the base address.
    pub base: Reg,
    /// Offset from the base.
    pub off: i64,
    /// Bytes touched.
    pub len: u32,
    /// Whether it writes (a store or an atomic) rather than only reads.
    pub writes: bool,
}

/// A word that is not an instruction of the extended ISA.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("word {word:016x}: {reason}")]
pub struct DecodeError {
    pub word: u64,
    pub reason: String,
}

fn bit(r: Reg) -> RegSet {
    1 << r
}

impl HxInsn {
    /// Registers the instruction reads: a helper call only its arguments (the helper module
    /// takes no others, §4.1.4).
    pub fn reads(&self) -> RegSet {
        match *self {
            HxInsn::Ebpf(Instruction::Call(CallTarget::Helper(id))) => {
                match linerate_bpf::helpers::argument_count(id) {
                    Some(n) => (1..=n).fold(0, |acc, r| acc | bit(r as Reg)),
                    None => Instruction::Call(CallTarget::Helper(id)).reads(),
                }
            }
            HxInsn::Ebpf(insn) => insn.reads(),
            HxInsn::Alu3 { src, .. } | HxInsn::Load48 { src, .. } => bit(src),
            HxInsn::Store48 { dst, src, .. } => bit(dst) | bit(src),
            HxInsn::ExitWith(_) | HxInsn::ImmHigh(_) => 0,
        }
    }

    /// Registers the instruction writes (a call's clobbered r1–r5 included).
    pub fn writes(&self) -> RegSet {
        match *self {
            HxInsn::Ebpf(insn) => insn.writes(),
            HxInsn::Alu3 { dst, .. } | HxInsn::Load48 { dst, .. } => bit(dst),
            HxInsn::Store48 { .. } | HxInsn::ExitWith(_) | HxInsn::ImmHigh(_) => 0,
        }
    }

    /// The memory the instruction reads or writes through a register, if any (helper calls
    /// touch memory through their arguments and are not described here).
    pub fn memory(&self) -> Option<MemAccess> {
        let access = |base: Reg, off: i16, len: u32, writes: bool| MemAccess {
            base,
            off: off as i64,
            len,
            writes,
        };
        match *self {
            HxInsn::Ebpf(Instruction::Load { size, src, off, .. }) => {
                Some(access(src, off, size.bytes(), false))
            }
            HxInsn::Ebpf(Instruction::Store { size, dst, off, .. })
            | HxInsn::Ebpf(Instruction::Atomic { size, dst, off, .. }) => {
                Some(access(dst, off, size.bytes(), true))
            }
            HxInsn::Load48 { src, off, .. } => Some(access(src, off, 6, false)),
            HxInsn::Store48 { dst, off, .. } => Some(access(dst, off, 6, true)),
            _ => None,
        }
    }

    /// Whether the instruction is a helper or kernel function call (the core has one helper
    /// module: at most one per row).
    pub fn is_call(&self) -> bool {
        matches!(self, HxInsn::Ebpf(Instruction::Call(_)))
    }

    /// Whether the instruction may change the program counter: a jump or an exit.
    pub fn is_control(&self) -> bool {
        matches!(
            self,
            HxInsn::ExitWith(_)
                | HxInsn::Ebpf(
                    Instruction::Jump { .. } | Instruction::Ja { .. } | Instruction::Exit
                )
        )
    }

    /// Whether the instruction ends the program.
    pub fn is_exit(&self) -> bool {
        matches!(self, HxInsn::ExitWith(_) | HxInsn::Ebpf(Instruction::Exit))
    }

    /// Lanes the instruction takes (a 64-bit immediate load whose value does not fit one word
    /// takes two).
    pub fn lanes(&self) -> usize {
        match self {
            HxInsn::Ebpf(Instruction::LoadImm64 { imm, .. }) => {
                if one_word_imm64(imm).is_some() {
                    1
                } else {
                    2
                }
            }
            _ => 1,
        }
    }

    /// The second word of an instruction taking two lanes, as the instruction the lane after
    /// its own holds: [`HxInsn::ImmHigh`] of a wide 64-bit immediate load.
    pub fn second_word(&self) -> Option<HxInsn> {
        if self.lanes() != 2 {
            return None;
        }
        let words = self.encode();
        words.get(1).map(|&w| HxInsn::ImmHigh(raw_of(w).imm))
    }

    /// The eBPF instructions whose effect this instruction has, run on a private copy of the
    /// registers of which only [`HxInsn::writes`] are kept. `scratch` is a register the sequence
    /// may use as a temporary (see [`HxInsn::scratch`]). A jump comes back unchanged: where it
    /// goes is the caller's business.
    pub fn as_ebpf(&self, scratch: Reg) -> Vec<Instruction> {
        match *self {
            HxInsn::Ebpf(insn) => vec![insn],
            HxInsn::Alu3 {
                wide,
                op,
                dst,
                src,
                imm,
            } => vec![
                Instruction::Alu {
                    wide: true,
                    op: AluOp::Mov,
                    dst,
                    src: Operand::Reg(src),
                },
                Instruction::Alu {
                    wide,
                    op,
                    dst,
                    src: Operand::Imm(imm),
                },
            ],
            // The high half first: `dst` may be `src`.
            HxInsn::Load48 { dst, src, off } => vec![
                Instruction::Load {
                    size: Size::H,
                    signed: false,
                    dst: scratch,
                    src,
                    off: off.wrapping_add(4),
                },
                Instruction::Alu {
                    wide: true,
                    op: AluOp::Lsh,
                    dst: scratch,
                    src: Operand::Imm(32),
                },
                Instruction::Load {
                    size: Size::W,
                    signed: false,
                    dst,
                    src,
                    off,
                },
                Instruction::Alu {
                    wide: true,
                    op: AluOp::Or,
                    dst,
                    src: Operand::Reg(scratch),
                },
            ],
            HxInsn::Store48 { dst, off, src } => vec![
                Instruction::Store {
                    size: Size::W,
                    dst,
                    off,
                    src: Operand::Reg(src),
                },
                Instruction::Alu {
                    wide: true,
                    op: AluOp::Mov,
                    dst: scratch,
                    src: Operand::Reg(src),
                },
                Instruction::Alu {
                    wide: true,
                    op: AluOp::Rsh,
                    dst: scratch,
                    src: Operand::Imm(32),
                },
                Instruction::Store {
                    size: Size::H,
                    dst,
                    off: off.wrapping_add(4),
                    src: Operand::Reg(scratch),
                },
            ],
            HxInsn::ExitWith(action) => vec![
                Instruction::Alu {
                    wide: true,
                    op: AluOp::Mov,
                    dst: 0,
                    src: Operand::Imm(action),
                },
                Instruction::Exit,
            ],
            HxInsn::ImmHigh(_) => Vec::new(),
        }
    }

    /// A register [`HxInsn::as_ebpf`] may use as its temporary: the lowest of r0–r9 the
    /// instruction neither reads nor writes.
    pub fn scratch(&self) -> Reg {
        let used = self.reads() | self.writes();
        (0..FRAME_POINTER)
            .find(|&r| used & bit(r) == 0)
            .unwrap_or(0)
    }

    /// The lane words of this instruction: one, or two for a wide 64-bit immediate load. A jump
    /// is encoded with the offset it carries.
    pub fn encode(&self) -> Vec<u64> {
        let raw = |code: u8, dst: Reg, src: Reg, off: i16, imm: i32| RawInsn {
            code,
            dst,
            src,
            off,
            imm,
        };
        let words: Vec<RawInsn> = match *self {
            HxInsn::Ebpf(Instruction::LoadImm64 { dst, imm }) => {
                let code = Instruction::LoadImm64 { dst, imm }.encode()[0].code;
                match one_word_imm64(&imm) {
                    Some((src, off, low)) => vec![raw(code, dst, src, off, low)],
                    None => {
                        let slots = Instruction::LoadImm64 { dst, imm }.encode();
                        vec![
                            raw(code, dst, slots[0].src, WIDE_MARKER, slots[0].imm),
                            slots[1],
                        ]
                    }
                }
            }
            HxInsn::Ebpf(insn) => insn.encode(),
            HxInsn::Alu3 {
                wide,
                op,
                dst,
                src,
                imm,
            } => vec![raw(alu3_opcode(wide, op).unwrap_or(0), dst, src, 0, imm)],
            HxInsn::Load48 { dst, src, off } => vec![raw(LOAD48, dst, src, off, 0)],
            HxInsn::Store48 { dst, off, src } => vec![raw(STORE48, dst, src, off, 0)],
            HxInsn::ExitWith(action) => vec![raw(EXIT_WITH, 0, 0, 0, action)],
            HxInsn::ImmHigh(high) => vec![raw(0, 0, 0, 0, high)],
        };
        words.into_iter().map(word_of).collect()
    }

    /// Decodes the instruction in `word`; `next` is the word of the following lane, which a wide
    /// 64-bit immediate load takes as its second half. Returns the instruction and the lanes it
    /// takes.
    pub fn decode(word: u64, next: Option<u64>) -> Result<(HxInsn, usize), DecodeError> {
        let raw = raw_of(word);
        let err = |reason: String| DecodeError { word, reason };
        let reg = |r: u8, what: &str| {
            if (r as usize) < NUM_REGS {
                Ok(r)
            } else {
                Err(err(format!("{what} register r{r} does not exist")))
            }
        };
        if let Some(&(wide, op, _)) = ALU3_OPCODES.iter().find(|e| e.2 == raw.code) {
            let dst = reg(raw.dst, "destination")?;
            if dst == FRAME_POINTER {
                return Err(err("writes the frame pointer r10".into()));
            }
            let src = reg(raw.src, "source")?;
            return Ok((
                HxInsn::Alu3 {
                    wide,
                    op,
                    dst,
                    src,
                    imm: raw.imm,
                },
                1,
            ));
        }
        let insn = match raw.code {
            LOAD48 => HxInsn::Load48 {
                dst: reg(raw.dst, "destination")?,
                src: reg(raw.src, "source")?,
                off: raw.off,
            },
            STORE48 => HxInsn::Store48 {
                dst: reg(raw.dst, "base")?,
                off: raw.off,
                src: reg(raw.src, "source")?,
            },
            EXIT_WITH => HxInsn::ExitWith(raw.imm),
            0x18 => return decode_imm64(word, raw, next),
            0 => return Err(err("opcode 0 is no instruction".into())),
            _ => {
                let insn = Instruction::decode(&[raw], 0).map_err(|e| err(e.to_string()))?;
                HxInsn::Ebpf(insn)
            }
        };
        Ok((insn, 1))
    }
}

/// A 64-bit immediate load's one-word form `(src, off, imm)`, if it has one.
fn one_word_imm64(imm: &Imm64) -> Option<(u8, i16, i32)> {
    match *imm {
        Imm64::Const(v) if v <= u32::MAX as u64 => Some((0, 0, v as u32 as i32)),
        Imm64::Map(map) => Some((pseudo::MAP_IDX, 0, map as i32)),
        Imm64::MapValue { map, offset } if offset <= i16::MAX as u32 => {
            Some((pseudo::MAP_IDX_VALUE, offset as i16, map as i32))
        }
        _ => None,
    }
}

fn decode_imm64(
    word: u64,
    raw: RawInsn,
    next: Option<u64>,
) -> Result<(HxInsn, usize), DecodeError> {
    let err = |reason: &str| DecodeError {
        word,
        reason: reason.to_string(),
    };
    if raw.dst as usize >= FRAME_POINTER as usize {
        return Err(err("64-bit immediate load into r10 or beyond"));
    }
    let (imm, lanes) = match (raw.src, raw.off) {
        (0, 0) => (Imm64::Const(raw.imm as u32 as u64), 1),
        (pseudo::MAP_IDX, 0) if raw.imm >= 0 => (Imm64::Map(raw.imm as u32), 1),
        (pseudo::MAP_IDX_VALUE, off) if raw.imm >= 0 && off >= 0 => (
            Imm64::MapValue {
                map: raw.imm as u32,
                offset: off as u32,
            },
            1,
        ),
        (_, WIDE_MARKER) => {
            let Some(next) = next else {
                return Err(err("wide 64-bit immediate load in the last lane"));
            };
            let first = RawInsn { off: 0, ..raw };
            let insn =
                Instruction::decode(&[first, raw_of(next)], 0).map_err(|e| err(&e.to_string()))?;
            let Instruction::LoadImm64 { imm, .. } = insn else {
                return Err(err("not a 64-bit immediate load"));
            };
            (imm, 2)
        }
        _ => return Err(err("64-bit immediate load with an unknown source kind")),
    };
    Ok((
        HxInsn::Ebpf(Instruction::LoadImm64 { dst: raw.dst, imm }),
        lanes,
    ))
}

/// The lane word of an eBPF slot: its little-endian bytes as an integer.
pub fn word_of(raw: RawInsn) -> u64 {
    u64::from_le_bytes(raw.to_bytes())
}

/// The eBPF slot of a lane word.
pub fn raw_of(word: u64) -> RawInsn {
    RawInsn::from_bytes(word.to_le_bytes())
}

fn alu3_symbol(op: AluOp) -> &'static str {
    match op {
        AluOp::Add => "+",
        AluOp::Sub => "-",
        AluOp::Or => "|",
        AluOp::And => "&",
        AluOp::Lsh => "<<",
        AluOp::Rsh => ">>",
        AluOp::Xor => "^",
        _ => "?",
    }
}

impl fmt::Display for HxInsn {
    /// The instruction in the kernel's (and llvm-objdump's) notation, extended naturally:
    /// `r4 = r2 + 42`, `r1 = *(u48 *)(r2 + 6)`, `exit XDP_DROP`. A jump shows its raw offset;
    /// a schedule prints targets as rows.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            HxInsn::Ebpf(insn) => write!(
                f,
                "{}",
                linerate_bpf::disasm::format_instruction(&insn, &linerate_bpf::disasm::NoNames)
            ),
            HxInsn::Alu3 {
                wide,
                op,
                dst,
                src,
                imm,
            } => {
                let r = if wide { "r" } else { "w" };
                write!(f, "{r}{dst} = {r}{src} {} {imm}", alu3_symbol(op))
            }
            HxInsn::Load48 { dst, src, off } => {
                write!(f, "r{dst} = *(u48 *)(r{src} {})", signed_offset(off))
            }
            HxInsn::Store48 { dst, off, src } => {
                write!(f, "*(u48 *)(r{dst} {}) = r{src}", signed_offset(off))
            }
            HxInsn::ExitWith(action @ 0..=4) => write!(
                f,
                "exit {}",
                linerate_bpf::facts::xdp::action_name(action as u64)
            ),
            HxInsn::ExitWith(action) => write!(f, "exit {action}"),
            HxInsn::ImmHigh(high) => write!(f, "(high word {high:#x})"),
        }
    }
}

fn signed_offset(off: i16) -> String {
    if off < 0 {
        format!("- {}", -(off as i32))
    } else {
        format!("+ {off}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(insn: HxInsn) {
        let words = insn.encode();
        let (back, lanes) = HxInsn::decode(words[0], words.get(1).copied()).unwrap();
        assert_eq!(back, insn, "{insn}");
        assert_eq!(lanes, words.len());
        assert_eq!(insn.lanes(), words.len());
    }

    #[test]
    fn issue_example_words() {
        let mov = HxInsn::Ebpf(Instruction::Alu {
            wide: true,
            op: AluOp::Mov,
            dst: 0,
            src: Operand::Imm(1),
        });
        assert_eq!(mov.encode(), vec![0x0000_0001_0000_00b7]);
        assert_eq!(HxInsn::Ebpf(Instruction::Exit).encode(), vec![0x95]);
        // The artifacts' XDP_DROP ROM with early exit is this one word.
        assert_eq!(HxInsn::ExitWith(1).encode(), vec![0x0000_0001_0000_0096]);
    }

    #[test]
    fn extended_instructions_round_trip() {
        for &(wide, op, _) in &ALU3_OPCODES {
            round_trip(HxInsn::Alu3 {
                wide,
                op,
                dst: 4,
                src: 2,
                imm: -42,
            });
        }
        round_trip(HxInsn::Load48 {
            dst: 3,
            src: 1,
            off: 6,
        });
        round_trip(HxInsn::Store48 {
            dst: 10,
            off: -16,
            src: 3,
        });
        round_trip(HxInsn::ExitWith(3));
        for imm in [
            Imm64::Const(7),
            Imm64::Const(0x1234_5678_9abc),
            Imm64::Map(2),
            Imm64::MapValue { map: 1, offset: 8 },
            Imm64::MapValue {
                map: 1,
                offset: 70_000,
            },
        ] {
            round_trip(HxInsn::Ebpf(Instruction::LoadImm64 { dst: 5, imm }));
        }
    }

    #[test]
    fn artifact_words_decode() {
        // Row 0 of the artifacts' xdp1 ROM: `r2 = *(u32 *)(r1 + 4)` and `r1 = *(u32 *)(r1 + 0)`.
        let (insn, _) = HxInsn::decode(0x0000_0000_0004_1261, None).unwrap();
        assert_eq!(
            insn,
            HxInsn::Ebpf(Instruction::Load {
                size: Size::W,
                signed: false,
                dst: 2,
                src: 1,
                off: 4
            })
        );
        assert!(HxInsn::decode(0, None).is_err());
    }

    #[test]
    fn scratch_avoids_operands() {
        let insn = HxInsn::Load48 {
            dst: 0,
            src: 1,
            off: 0,
        };
        assert_eq!(insn.scratch(), 2);
        assert!(insn
            .as_ebpf(insn.scratch())
            .iter()
            .all(|i| i.writes() & 0b10 == 0));
    }
}
