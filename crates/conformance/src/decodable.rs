//! Objects holding arbitrary *decodable* programs, built from bytes, for fuzzing and property
//! tests of everything that reads a program (`inspect`, `cost`, the analyses).
//!
//! [`random_program`](crate::random_program) makes programs the verifier accepts; this module
//! makes anything an object file can hold once read: every instruction decodes, and that is all
//! that is promised. Registers, immediates and offsets range over their whole types with the
//! extremes favoured (`i32::MIN`, `i16::MIN`, `u64::MAX`, ...), map references may name maps that
//! do not exist, maps have any type and size, jumps may leave their function and calls may recurse.
//! Most programs still build a CFG: jump targets are mostly chosen among the instructions of the
//! jump's own function, calls among the functions' first instructions, and every function ends
//! with `exit`.
//!
//! [`object_from_bytes`] reads its first byte as a choice of how to use the rest:
//!
//! - `0`: as a file a user hands linerate (`linerate_io::object::parse_object`: ELF or `llvm-objdump`
//!   text), so that clang objects and their mutations take the same checks;
//! - `1`: as raw instruction slots, keeping the instructions that decode, then an `exit`;
//! - anything else: as choices of a structured generator — maps, functions, and instructions with
//!   their fields, including counter loops, BPF-to-BPF calls, function addresses and `may_goto`.
//!
//! The same bytes always give the same object, so a fuzzer's input reproduces as a test.

use linerate_bpf::insn::{
    pseudo, AluOp, AtomicOp, CallTarget, Cond, Imm64, Instruction, Operand, RawInsn, Reg, Size,
};
use linerate_bpf::program::{Function, MapDef, MapOrigin, MapType};
use linerate_bpf::{Object, Program};

/// Most instructions a structured program gets (beyond them, the remaining bytes are ignored).
pub const MAX_INSNS: usize = 256;
/// Most functions of a structured program.
pub const MAX_FUNCTIONS: usize = 4;
/// Most maps of a structured object.
pub const MAX_MAPS: usize = 6;

/// The object `data` describes (see the module documentation); `None` when mode `0` bytes are
/// no readable object, or nothing decodes.
pub fn object_from_bytes(data: &[u8]) -> Option<Object> {
    let (&mode, rest) = data.split_first()?;
    match mode % 4 {
        0 => linerate_io::object::parse_object(rest, "fuzz").ok(),
        1 => from_slots(rest),
        _ => Some(Generator::new(rest).object()),
    }
}

/// Mode `1`: the decodable instructions of `bytes` read as slots, then `exit`, with a few maps.
fn from_slots(bytes: &[u8]) -> Option<Object> {
    let slots = RawInsn::parse_all(&bytes[..bytes.len() - bytes.len() % RawInsn::SIZE])?;
    let mut insns = Vec::new();
    let mut i = 0;
    while i < slots.len() {
        match Instruction::decode(&slots, i) {
            Ok(insn) => {
                i += insn.slots();
                insns.push(insn);
            }
            Err(_) => i += 1,
        }
    }
    insns.push(Instruction::Exit);
    let maps = vec![
        map(MapType::HASH, 4, 8, 1024, MapOrigin::Btf),
        map(MapType::ARRAY, 4, 16, 4, MapOrigin::Legacy),
        global(".rodata", 32, true),
        map(MapType::PROG_ARRAY, 4, 4, 8, MapOrigin::Btf),
    ];
    Some(one_program(insns, maps))
}

fn map(map_type: MapType, key: u32, value: u32, entries: u32, origin: MapOrigin) -> MapDef {
    MapDef {
        name: format!("m_{}", map_type.name()),
        map_type,
        key_size: key,
        value_size: value,
        max_entries: entries,
        flags: 0,
        origin,
        initial_value: None,
        initial_programs: Vec::new(),
        inner: None,
        spin_lock: None,
    }
}

/// A global-data map as the object reader makes one; its bytes count up from 0.
fn global(section: &str, size: u32, read_only: bool) -> MapDef {
    MapDef {
        name: format!("fuzz{section}"),
        map_type: MapType::ARRAY,
        key_size: 4,
        value_size: size,
        max_entries: 1,
        flags: 0,
        origin: MapOrigin::GlobalData {
            section: section.into(),
            read_only,
        },
        // Large sections keep no initial value rather than megabytes of it.
        initial_value: (size <= 1 << 16).then(|| (0..size).map(|b| b as u8).collect()),
        initial_programs: Vec::new(),
        inner: None,
        spin_lock: None,
    }
}

fn one_program(insns: Vec<Instruction>, maps: Vec<MapDef>) -> Object {
    let slots = linerate_bpf::insn::encode_all(&insns);
    Object {
        name: "fuzz".into(),
        programs: vec![Program {
            name: "prog".into(),
            section: "xdp".into(),
            functions: vec![Function {
                name: "prog".into(),
                start: 0,
                len: slots.len(),
            }],
            insns: slots,
            func_info: Vec::new(),
            line_info: Vec::new(),
        }],
        maps,
        license: Some("GPL".into()),
        kfuncs: Vec::new(),
        btf: None,
    }
}

/// Where a jump goes, before the layout is known.
#[derive(Clone, Copy, Debug)]
enum Target {
    /// This many instructions after the jump (negative: before), clamped into its function.
    Near(i32),
    /// This offset, as it is.
    Raw(i32),
}

/// One instruction of a function before offsets are known.
#[derive(Clone, Copy, Debug)]
enum Item {
    Plain(Instruction),
    /// A jump (`Ja`, `Jump` or `MayGoto`, its offset a placeholder) to `Target`.
    Jump(Instruction, Target),
    /// A BPF-to-BPF call of function `k` (modulo the function count).
    Call(usize),
    /// `dst = &function k` (a `bpf_loop` callback's address).
    FuncAddr(Reg, usize),
}

/// Reads choices from bytes; past the end every choice is 0.
struct Generator<'a> {
    data: &'a [u8],
    at: usize,
}

const IMM32: [i32; 24] = [
    0,
    1,
    -1,
    2,
    7,
    8,
    14,
    16,
    31,
    32,
    63,
    64,
    255,
    0xffff,
    -8,
    -16,
    -512,
    i32::MIN,
    i32::MAX,
    i32::MIN + 1,
    0x7fff_fff8,
    0x8000,
    -0x8000,
    0x10000,
];

const OFF16: [i16; 16] = [
    0,
    1,
    -1,
    2,
    4,
    8,
    12,
    14,
    -8,
    -16,
    -512,
    -511,
    i16::MIN,
    i16::MAX,
    0x7ff8,
    -0x7ff8,
];

const IMM64: [u64; 10] = [
    0,
    1,
    u64::MAX,
    1 << 63,
    (1 << 63) - 1,
    0x8000_0000,
    0xffff_ffff,
    0xffff_ffff_8000_0000,
    1 << 32,
    0x0102_0304_0506_0708,
];

const SIZES: [u32; 14] = [
    0,
    1,
    2,
    3,
    4,
    8,
    16,
    20,
    64,
    512,
    4096,
    1 << 20,
    u32::MAX,
    1 << 31,
];

/// Helpers of XDP programs (the costed ones, map and tail calls) and some others.
const HELPERS: [u32; 24] = [
    1,
    2,
    3,
    12,
    5,
    6,
    7,
    8,
    23,
    28,
    44,
    51,
    54,
    65,
    69,
    125,
    188,
    189,
    190,
    87,
    88,
    0,
    4,
    u32::MAX,
];

const MAP_TYPES: [u32; 16] = [1, 2, 3, 5, 6, 9, 10, 11, 14, 16, 17, 25, 27, 12, 0, 999];

impl<'a> Generator<'a> {
    fn new(data: &'a [u8]) -> Self {
        Generator { data, at: 0 }
    }

    fn done(&self) -> bool {
        self.at >= self.data.len()
    }

    fn byte(&mut self) -> u8 {
        let b = self.data.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        b
    }

    fn below(&mut self, n: usize) -> usize {
        self.byte() as usize % n
    }

    fn flag(&mut self) -> bool {
        self.byte() & 1 == 1
    }

    fn bytes<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0; N];
        for b in &mut out {
            *b = self.byte();
        }
        out
    }

    /// One of `table` or, one time in four, raw bytes through `raw`.
    fn pick<T: Copy>(&mut self, table: &[T], raw: impl FnOnce(&mut Self) -> T) -> T {
        let b = self.byte() as usize;
        if b % 4 == 3 {
            raw(self)
        } else {
            table[(b / 4) % table.len()]
        }
    }

    fn imm32(&mut self) -> i32 {
        self.pick(&IMM32, |g| i32::from_le_bytes(g.bytes()))
    }

    fn off16(&mut self) -> i16 {
        self.pick(&OFF16, |g| i16::from_le_bytes(g.bytes()))
    }

    fn imm64(&mut self) -> u64 {
        self.pick(&IMM64, |g| u64::from_le_bytes(g.bytes()))
    }

    fn size32(&mut self) -> u32 {
        self.pick(&SIZES, |g| u32::from_le_bytes(g.bytes()))
    }

    /// A register, `r0`..`r10` (writes to `r10` decode too).
    fn reg(&mut self) -> Reg {
        self.below(11) as Reg
    }

    fn operand(&mut self) -> Operand {
        if self.flag() {
            Operand::Reg(self.reg())
        } else {
            Operand::Imm(self.imm32())
        }
    }

    fn size(&mut self) -> Size {
        [Size::B, Size::H, Size::W, Size::Dw][self.below(4)]
    }

    fn cond(&mut self) -> Cond {
        use Cond::*;
        [Eq, Gt, Ge, Set, Ne, Sgt, Sge, Lt, Le, Slt, Sle][self.below(11)]
    }

    fn map_def(&mut self, i: usize) -> MapDef {
        match self.below(4) {
            0 => global(
                [".rodata", ".data", ".bss", ".rodata.str1.1"][self.below(4)],
                self.size32(),
                self.flag(),
            ),
            _ => MapDef {
                name: format!("map{i}"),
                map_type: MapType(self.pick(&MAP_TYPES, |g| u32::from_le_bytes(g.bytes()))),
                key_size: self.size32(),
                value_size: self.size32(),
                max_entries: self.size32(),
                flags: if self.flag() { 0 } else { self.imm32() as u32 },
                origin: if self.flag() {
                    MapOrigin::Btf
                } else {
                    MapOrigin::Legacy
                },
                initial_value: None,
                initial_programs: Vec::new(),
                inner: None,
                spin_lock: None,
            },
        }
    }

    /// A map index: mostly one of the `maps` maps, sometimes one past them or any.
    fn map_index(&mut self, maps: usize) -> u32 {
        match self.below(8) {
            0 => u32::from_le_bytes(self.bytes()),
            1 => maps as u32,
            _ => self.below(maps.max(1)) as u32,
        }
    }

    fn imm64_operand(&mut self, maps: usize) -> Imm64 {
        match self.below(6) {
            0 | 1 => Imm64::Const(self.imm64()),
            2 | 3 => Imm64::Map(self.map_index(maps)),
            4 => Imm64::MapValue {
                map: self.map_index(maps),
                offset: self.imm32() as u32,
            },
            _ => Imm64::Pseudo {
                src: [pseudo::MAP_FD, pseudo::MAP_VALUE, pseudo::BTF_ID][self.below(3)],
                imm: self.imm32(),
                next_imm: self.imm32(),
            },
        }
    }

    /// A jump target: mostly near the jump, sometimes any offset.
    fn target(&mut self) -> Target {
        match self.below(8) {
            0 => Target::Raw(
                self.pick(&[i32::MIN, i32::MAX, -1, 0, i16::MIN as i32], |g| {
                    i32::from_le_bytes(g.bytes())
                }),
            ),
            _ => Target::Near(self.byte() as i8 as i32),
        }
    }

    /// The next items of a function: usually one instruction, sometimes a counter loop.
    fn items(&mut self, maps: usize, out: &mut Vec<Item>) {
        use Instruction::*;
        let item = match self.below(24) {
            0..=4 => {
                let wide = self.flag();
                let op = AluOp::ALL[self.below(AluOp::ALL.len())];
                let (dst, src) = (self.reg(), self.operand());
                Item::Plain(Alu { wide, op, dst, src })
            }
            5 => {
                let kind = [
                    linerate_bpf::insn::Endian::ToLe,
                    linerate_bpf::insn::Endian::ToBe,
                    linerate_bpf::insn::Endian::Swap,
                ][self.below(3)];
                let bits = [16, 32, 64][self.below(3)];
                Item::Plain(Endian {
                    kind,
                    bits,
                    dst: self.reg(),
                })
            }
            6 | 7 => Item::Plain(LoadImm64 {
                dst: self.reg(),
                imm: self.imm64_operand(maps),
            }),
            8 | 9 => Item::Plain(Load {
                size: self.size(),
                signed: self.below(4) == 0,
                dst: self.reg(),
                src: self.reg(),
                off: self.off16(),
            }),
            10 | 11 => Item::Plain(Store {
                size: self.size(),
                dst: self.reg(),
                off: self.off16(),
                src: self.operand(),
            }),
            12 => {
                let (op, fetch) = [
                    (AtomicOp::Add, false),
                    (AtomicOp::Add, true),
                    (AtomicOp::Or, self.flag()),
                    (AtomicOp::And, self.flag()),
                    (AtomicOp::Xor, self.flag()),
                    (AtomicOp::Xchg, true),
                    (AtomicOp::CmpXchg, true),
                ][self.below(7)];
                Item::Plain(Atomic {
                    size: [Size::W, Size::Dw][self.below(2)],
                    op,
                    fetch,
                    dst: self.reg(),
                    src: self.reg(),
                    off: self.off16(),
                })
            }
            13 => Item::Plain(LegacyPacketLoad {
                size: self.size(),
                indirect: self.flag(),
                src: self.reg(),
                imm: self.imm32(),
            }),
            14..=16 => {
                let (wide, cond, dst, src) = (self.flag(), self.cond(), self.reg(), self.operand());
                Item::Jump(
                    Jump {
                        wide,
                        cond,
                        dst,
                        src,
                        off: 0,
                    },
                    self.target(),
                )
            }
            17 => Item::Jump(
                Ja {
                    off: 0,
                    long: self.flag(),
                },
                self.target(),
            ),
            18 => Item::Jump(MayGoto { off: 0 }, self.target()),
            19 => match self.below(8) {
                0 => Item::Plain(Call(CallTarget::Local(self.imm32()))),
                1 => Item::Plain(Call(CallTarget::Kfunc(self.imm32()))),
                2 => Item::FuncAddr(self.reg(), self.byte() as usize),
                _ => Item::Call(self.byte() as usize),
            },
            20 | 21 => Item::Plain(Call(CallTarget::Helper(
                self.pick(&HELPERS, |g| g.byte() as u32),
            ))),
            22 => Item::Plain(Exit),
            _ => {
                // A counter loop around the next few items: `r = n; head: ...; r += step;
                // if r cond bound goto head`.
                let r = self.reg();
                let start = self.imm32();
                out.push(Item::Plain(Alu {
                    wide: self.flag(),
                    op: AluOp::Mov,
                    dst: r,
                    src: Operand::Imm(start),
                }));
                let head = out.len();
                for _ in 0..self.below(4) {
                    if self.done() {
                        break;
                    }
                    self.items(maps, out);
                }
                let step = [-1, 1, -2, 4, 0, i32::MIN][self.below(6)];
                out.push(Item::Plain(Alu {
                    wide: self.flag(),
                    op: AluOp::Add,
                    dst: r,
                    src: Operand::Imm(step),
                }));
                let (wide, cond, bound) = (self.flag(), self.cond(), self.imm32());
                let back = head as i32 - out.len() as i32;
                Item::Jump(
                    Jump {
                        wide,
                        cond,
                        dst: r,
                        src: Operand::Imm(bound),
                        off: 0,
                    },
                    Target::Near(back),
                )
            }
        };
        if decodes(&instruction_of(item)) {
            out.push(item);
        }
    }

    fn object(mut self) -> Object {
        let maps: Vec<MapDef> = (0..self.below(MAX_MAPS + 1))
            .map(|i| self.map_def(i))
            .collect();
        let functions = 1 + self.below(MAX_FUNCTIONS);
        let mut bodies: Vec<Vec<Item>> = vec![Vec::new(); functions];
        let mut total = 0;
        let mut f = 0;
        while !self.done() && total < MAX_INSNS {
            // One byte in 32 moves on to the next function.
            if self.below(32) == 0 && f + 1 < functions {
                f += 1;
                continue;
            }
            let before = bodies[f].len();
            self.items(maps.len(), &mut bodies[f]);
            total += bodies[f].len() - before;
        }
        for body in &mut bodies {
            body.push(Item::Plain(Instruction::Exit));
        }
        let insns = lay_out(&bodies);
        let mut object = one_program(Vec::new(), maps);
        let program = &mut object.programs[0];
        let mut start = 0;
        program.functions.clear();
        for (k, body) in insns.iter().enumerate() {
            let len: usize = body.iter().map(Instruction::slots).sum();
            program.functions.push(Function {
                name: if k == 0 {
                    "prog".into()
                } else {
                    format!("f{k}")
                },
                start,
                len,
            });
            start += len;
        }
        program.insns = linerate_bpf::insn::encode_all(&insns.concat());
        object
    }
}

/// The instruction an item becomes (with a placeholder offset).
fn instruction_of(item: Item) -> Instruction {
    match item {
        Item::Plain(i) | Item::Jump(i, _) => i,
        Item::Call(_) => Instruction::Call(CallTarget::Local(0)),
        Item::FuncAddr(dst, _) => Instruction::LoadImm64 {
            dst,
            imm: Imm64::Pseudo {
                src: pseudo::FUNC,
                imm: 0,
                next_imm: 0,
            },
        },
    }
}

/// Whether `insn` encodes to slots that decode back to it (not every combination of fields is an
/// instruction: `neg` has no register form, byte swaps have three widths, ...).
fn decodes(insn: &Instruction) -> bool {
    Instruction::decode(&insn.encode(), 0).as_ref() == Ok(insn)
}

/// Resolves jump targets and call offsets of the functions laid out one after the other.
fn lay_out(bodies: &[Vec<Item>]) -> Vec<Vec<Instruction>> {
    // Slot of every item of every function, and one past each function's last.
    let mut slot_of: Vec<Vec<usize>> = Vec::new();
    let mut starts = Vec::new();
    let mut next = 0;
    for body in bodies {
        starts.push(next);
        let mut slots = Vec::new();
        for item in body {
            slots.push(next);
            next += instruction_of(*item).slots();
        }
        slots.push(next);
        slot_of.push(slots);
    }
    bodies
        .iter()
        .enumerate()
        .map(|(f, body)| {
            body.iter()
                .enumerate()
                .map(|(i, item)| {
                    let here = slot_of[f][i] as i64;
                    // Offsets count from the next instruction.
                    let rel = |to: usize| {
                        (to as i64 - here - 1).clamp(i32::MIN.into(), i32::MAX.into()) as i32
                    };
                    let off = |target: Target| match target {
                        Target::Raw(off) => off,
                        Target::Near(delta) => {
                            let last = body.len() as i64 - 1;
                            let k = (i as i64 + delta as i64).clamp(0, last) as usize;
                            rel(slot_of[f][k])
                        }
                    };
                    let func = |k: usize| rel(starts[k % starts.len()]);
                    match *item {
                        Item::Plain(insn) => insn,
                        Item::Jump(Instruction::Ja { long, .. }, t) => {
                            let off = off(t);
                            if long {
                                Instruction::Ja { off, long }
                            } else {
                                Instruction::Ja {
                                    off: off as i16 as i32,
                                    long,
                                }
                            }
                        }
                        Item::Jump(Instruction::MayGoto { .. }, t) => {
                            Instruction::MayGoto { off: off(t) as i16 }
                        }
                        Item::Jump(
                            Instruction::Jump {
                                wide,
                                cond,
                                dst,
                                src,
                                ..
                            },
                            t,
                        ) => Instruction::Jump {
                            wide,
                            cond,
                            dst,
                            src,
                            off: off(t) as i16,
                        },
                        Item::Jump(insn, _) => insn,
                        Item::Call(k) => Instruction::Call(CallTarget::Local(func(k))),
                        Item::FuncAddr(dst, k) => Instruction::LoadImm64 {
                            dst,
                            imm: Imm64::Pseudo {
                                src: pseudo::FUNC,
                                imm: func(k),
                                next_imm: 0,
                            },
                        },
                    }
                })
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_testkit::XorShift;

    /// Every mode gives decodable programs, and most structured ones build a CFG.
    #[test]
    fn structured_programs_decode_and_mostly_build() {
        let mut rng = XorShift::new(7);
        let mut built = 0;
        for _ in 0..500 {
            let len = 1 + rng.below(600);
            let mut data: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
            data[0] = 2;
            let obj = object_from_bytes(&data).expect("structured mode always gives an object");
            let p = &obj.programs[0];
            p.decode().expect("every instruction decodes");
            if jumps_stay_in_their_function(p) {
                built += 1;
            }
        }
        assert!(
            built > 100,
            "only {built} of 500 programs jump inside their functions"
        );
    }

    /// Whether every jump stays in its function (part of what the CFG builder checks, restated
    /// because this crate does not depend on linerate-cfg).
    fn jumps_stay_in_their_function(p: &Program) -> bool {
        let insns = p.decode().unwrap();
        insns.iter().all(|(slot, insn)| {
            let f = p.function_at(*slot).unwrap();
            match insn.jump_target(*slot) {
                Some(t) => (f.start as i64..(f.start + f.len) as i64).contains(&t),
                None => true,
            }
        })
    }

    #[test]
    fn raw_slots_keep_what_decodes() {
        // `r0 = 1; <bad opcode>; exit`.
        let mut data = vec![1u8];
        data.extend([0xb7, 0, 0, 0, 1, 0, 0, 0]);
        data.extend([0xff, 0, 0, 0, 0, 0, 0, 0]);
        data.extend([0x95, 0, 0, 0, 0, 0, 0, 0]);
        let obj = object_from_bytes(&data).unwrap();
        assert_eq!(obj.programs[0].decode().unwrap().len(), 3);
    }
}
