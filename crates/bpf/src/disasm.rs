//! Disassembler printing instructions in the syntax of `llvm-objdump -d` (LLVM 19).
//!
//! [`format_instruction`] prints one decoded [`Instruction`] exactly as `llvm-objdump-19 -d` prints
//! it — immediates and offsets in hexadecimal with an explicit sign (`r2 += -0x4`,
//! `*(u64 *)(r10 - 0x18) = r1`, `if w1 s< -0x5 goto +0x1`), `w` registers for 32-bit ALU and jump
//! operations, `r1 = (s8)r2`, `r1 s/= r2`, `r1 = bswap16 r1`, `lock *(u64 *)(r1 + 0x0) += r2`,
//! `r0 = atomic_fetch_add((u64 *)(r1 + 0x0), r0)`, `gotol +0x11170`, `r1 = 0x123 ll` — except where
//! llvm's default text does not identify the instruction, where this module departs from it
//! (the assembler in [`crate::asm`] must read back exactly what was printed):
//!
//! - **Map references** print by name: `r1 = counters ll` for [`Imm64::Map`] and
//!   `r1 = .rodata + 0x10 ll` for [`Imm64::MapValue`] (also `+ 0x0`) (llvm prints `r1 = 0x0 ll` and a relocation
//!   line). A map without a name, or with one the assembler could not read back as that
//!   map (not one identifier, a register name like `r1`, a name an earlier map has), prints as
//!   `map[3]`.
//! - **BPF-to-BPF calls** print as `call pc+0x4` / `call pc-0x2` (the kernel verifier's notation)
//!   and **kfunc calls** as `call kfunc 0x4d2`; llvm prints all three call kinds as `call 0x4`, so
//!   only helper calls keep llvm's text.
//! - **32-bit atomics** other than the plain `lock *(u32 *)(r1 + 0x0) += r2` print in the form
//!   llvm uses with `--mattr=+alu32`: `lock *(u32 *)(r1 + 0x4) |= w2`,
//!   `w2 = atomic_fetch_or((u32 *)(r1 + 0x4), w2)`, `w2 = xchg32_32(r1 + 0x4, w2)`,
//!   `w0 = cmpxchg32_32(r1 + 0x4, w0, w2)` (llvm's default prints `<unknown>` for most of them and
//!   prints a 32-bit fetch-add like a plain add).
//! - **Other pseudo 64-bit loads** (kernel map fds, BTF ids, function addresses) print like llvm,
//!   `ld_pseudo r1, 0x1, 0x5`, with the second slot's immediate appended when it is not zero
//!   (`ld_pseudo r1, 0x2, 0x5, 0x8`), which llvm drops.
//! - `LD_IND` with a non-zero immediate prints `r0 = *(u16 *)skb[r1 + 0x4]` (llvm omits it).
//! - Instruction values built by hand that no valid encoding has (`neg` with a non-zero
//!   immediate, `LD_ABS` with a source register; the decoder rejects both) print as `.raw`
//!   followed by their 8 bytes.
//!
//! [`disassemble`] prints a whole linked [`Program`] as an `llvm-objdump -d` section listing: a
//! `Disassembly of section <name>:` header, a `0000000000000000 <function>:` line before each
//! function, then one line per instruction, `<slot index right-aligned to 8>:\t<raw bytes as hex
//! pairs>\t<text>`, with jump targets annotated as llvm does, `goto +0x2 <xdp_prog+0x20>` (the
//! nearest function start at or before the target plus the byte offset from it). BPF-to-BPF calls
//! are annotated with the called function, `call pc+0x4 <helper_fn>`.

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::insn::{AluOp, AtomicOp, CallTarget, Cond, Endian, Imm64, Instruction, Operand, Size};
use crate::program::{MapDef, Program};

/// Resolves map indices (of [`Imm64::Map`] and [`Imm64::MapValue`]) to names and back.
pub trait MapNames {
    /// The name of map `index`, if known.
    fn map_name(&self, index: u32) -> Option<&str>;
    /// The index of the map called `name`, if known.
    fn map_index(&self, name: &str) -> Option<u32>;
}

impl MapNames for [MapDef] {
    fn map_name(&self, index: u32) -> Option<&str> {
        self.get(index as usize).map(|m| m.name.as_str())
    }
    fn map_index(&self, name: &str) -> Option<u32> {
        self.iter().position(|m| m.name == name).map(|i| i as u32)
    }
}

impl MapNames for Vec<MapDef> {
    fn map_name(&self, index: u32) -> Option<&str> {
        self.as_slice().map_name(index)
    }
    fn map_index(&self, name: &str) -> Option<u32> {
        self.as_slice().map_index(name)
    }
}

impl MapNames for [&str] {
    fn map_name(&self, index: u32) -> Option<&str> {
        self.get(index as usize).copied()
    }
    fn map_index(&self, name: &str) -> Option<u32> {
        self.iter().position(|m| *m == name).map(|i| i as u32)
    }
}

impl MapNames for HashMap<String, u32> {
    fn map_name(&self, index: u32) -> Option<&str> {
        self.iter()
            .filter(|(_, i)| **i == index)
            .map(|(n, _)| n.as_str())
            .min()
    }
    fn map_index(&self, name: &str) -> Option<u32> {
        self.get(name).copied()
    }
}

/// No map names: map references print as `map[index]`.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoNames;

impl MapNames for NoNames {
    fn map_name(&self, _: u32) -> Option<&str> {
        None
    }
    fn map_index(&self, _: &str) -> Option<u32> {
        None
    }
}

/// The name of map `index` when the assembler reads it back as that map: one identifier that
/// is not a register name and that no earlier map shares. Other maps print as `map[index]`.
fn printable_map_name(names: &(impl MapNames + ?Sized), index: u32) -> Option<&str> {
    names
        .map_name(index)
        .filter(|n| crate::asm::is_map_name_token(n) && names.map_index(n) == Some(index))
}

/// `0x1f` / `-0x1f`, llvm's signed hexadecimal immediate.
pub(crate) fn shex(v: i64) -> String {
    if v < 0 {
        format!("-{:#x}", v.unsigned_abs())
    } else {
        format!("{v:#x}")
    }
}

/// `+0x1f` / `-0x1f`, llvm's jump offset.
fn rel(v: i64) -> String {
    if v < 0 {
        shex(v)
    } else {
        format!("+{v:#x}")
    }
}

/// `(r1 + 0x4)` / `(r10 - 0x8)`, a memory operand without the parentheses.
fn addr(reg: u8, off: i16) -> String {
    if off < 0 {
        format!("r{reg} - {:#x}", (off as i32).unsigned_abs())
    } else {
        format!("r{reg} + {off:#x}")
    }
}

fn alu_symbol(op: AluOp) -> &'static str {
    match op {
        AluOp::Add => "+=",
        AluOp::Sub => "-=",
        AluOp::Mul => "*=",
        AluOp::Div => "/=",
        AluOp::SDiv => "s/=",
        AluOp::Or => "|=",
        AluOp::And => "&=",
        AluOp::Lsh => "<<=",
        AluOp::Rsh => ">>=",
        AluOp::Mod => "%=",
        AluOp::SMod => "s%=",
        AluOp::Xor => "^=",
        AluOp::Arsh => "s>>=",
        AluOp::Neg | AluOp::Mov | AluOp::MovSx(_) => "=",
    }
}

pub(crate) fn cond_symbol(cond: Cond) -> &'static str {
    match cond {
        Cond::Eq => "==",
        Cond::Gt => ">",
        Cond::Ge => ">=",
        Cond::Set => "&",
        Cond::Ne => "!=",
        Cond::Sgt => "s>",
        Cond::Sge => "s>=",
        Cond::Lt => "<",
        Cond::Le => "<=",
        Cond::Slt => "s<",
        Cond::Sle => "s<=",
    }
}

pub(crate) fn atomic_symbol(op: AtomicOp) -> &'static str {
    match op {
        AtomicOp::Add => "add",
        AtomicOp::Or => "or",
        AtomicOp::And => "and",
        AtomicOp::Xor => "xor",
        AtomicOp::Xchg => "xchg",
        AtomicOp::CmpXchg => "cmpxchg",
    }
}

fn raw_text(insn: &Instruction) -> String {
    let mut s = String::from(".raw");
    for b in insn.encode().iter().flat_map(|r| r.to_bytes()) {
        let _ = write!(s, " {b:02x}");
    }
    s
}

/// Prints one instruction in llvm-objdump's syntax (see the module documentation for the
/// departures). Map references are named through `names`. Jump offsets print as relative offsets
/// (`goto +0x2`) without a target annotation.
pub fn format_instruction(insn: &Instruction, names: &(impl MapNames + ?Sized)) -> String {
    let reg = |wide: bool, r: u8| {
        if wide {
            format!("r{r}")
        } else {
            format!("w{r}")
        }
    };
    match *insn {
        Instruction::Alu { wide, op, dst, src } => {
            let d = reg(wide, dst);
            match (op, src) {
                (AluOp::Neg, Operand::Imm(0)) => format!("{d} = -{d}"),
                (AluOp::Neg, _) => raw_text(insn),
                (AluOp::MovSx(bits), Operand::Reg(s)) => {
                    format!("{d} = (s{bits}){}", reg(wide, s))
                }
                (_, Operand::Reg(s)) => format!("{d} {} {}", alu_symbol(op), reg(wide, s)),
                (_, Operand::Imm(i)) => format!("{d} {} {}", alu_symbol(op), shex(i as i64)),
            }
        }
        Instruction::Endian { kind, bits, dst } => {
            let k = match kind {
                Endian::ToLe => "le",
                Endian::ToBe => "be",
                Endian::Swap => "bswap",
            };
            format!("r{dst} = {k}{bits} r{dst}")
        }
        Instruction::LoadImm64 { dst, imm } => match imm {
            Imm64::Const(v) => format!("r{dst} = {} ll", shex(v as i64)),
            Imm64::Map(m) => match printable_map_name(names, m) {
                Some(n) => format!("r{dst} = {n} ll"),
                None => format!("r{dst} = map[{m}] ll"),
            },
            Imm64::MapValue { map, offset } => {
                let n = match printable_map_name(names, map) {
                    Some(n) => n.to_string(),
                    None => format!("map[{map}]"),
                };
                format!("r{dst} = {n} + {offset:#x} ll")
            }
            Imm64::Pseudo { src, imm, next_imm } => {
                let mut s = format!("ld_pseudo\tr{dst}, {:#x}, {}", src, shex(imm as i64));
                if next_imm != 0 {
                    let _ = write!(s, ", {}", shex(next_imm as i64));
                }
                s
            }
        },
        Instruction::Load {
            size,
            signed,
            dst,
            src,
            off,
        } => {
            let ty = if signed {
                format!("s{}", size.bits())
            } else {
                size.to_string()
            };
            format!("r{dst} = *({ty} *)({})", addr(src, off))
        }
        Instruction::Store {
            size,
            dst,
            off,
            src,
        } => {
            let v = match src {
                Operand::Reg(r) => format!("r{r}"),
                Operand::Imm(i) => shex(i as i64),
            };
            format!("*({size} *)({}) = {v}", addr(dst, off))
        }
        Instruction::Atomic {
            size,
            op,
            fetch,
            dst,
            src,
            off,
        } => {
            let wide = size == Size::Dw;
            let a = addr(dst, off);
            match op {
                AtomicOp::Xchg => {
                    let f = if wide { "xchg_64" } else { "xchg32_32" };
                    format!("{} = {f}({a}, {})", reg(wide, src), reg(wide, src))
                }
                AtomicOp::CmpXchg => {
                    let f = if wide { "cmpxchg_64" } else { "cmpxchg32_32" };
                    format!(
                        "{} = {f}({a}, {}, {})",
                        reg(wide, 0),
                        reg(wide, 0),
                        reg(wide, src)
                    )
                }
                _ if fetch => format!(
                    "{} = atomic_fetch_{}(({size} *)({a}), {})",
                    reg(wide, src),
                    atomic_symbol(op),
                    reg(wide, src)
                ),
                _ => {
                    let sym = match op {
                        AtomicOp::Or => "|=",
                        AtomicOp::And => "&=",
                        AtomicOp::Xor => "^=",
                        _ => "+=",
                    };
                    // llvm's default table knows only the 32-bit add, printed with an `r` register.
                    let r = reg(wide || op == AtomicOp::Add, src);
                    format!("lock *({size} *)({a}) {sym} {r}")
                }
            }
        }
        Instruction::LegacyPacketLoad {
            size,
            indirect,
            src,
            imm,
        } => match (indirect, imm) {
            (false, _) if src != 0 => raw_text(insn),
            (false, _) => format!("r0 = *({size} *)skb[{}]", shex(imm as i64)),
            (true, 0) => format!("r0 = *({size} *)skb[r{src}]"),
            (true, _) if imm < 0 => {
                format!("r0 = *({size} *)skb[r{src} - {:#x}]", imm.unsigned_abs())
            }
            (true, _) => format!("r0 = *({size} *)skb[r{src} + {imm:#x}]"),
        },
        Instruction::Ja { off, long } => {
            format!(
                "{} {}",
                if long { "gotol" } else { "goto" },
                rel(off as i64)
            )
        }
        Instruction::MayGoto { off } => format!("may_goto {}", rel(off as i64)),
        Instruction::Jump {
            wide,
            cond,
            dst,
            src,
            off,
        } => {
            let s = match src {
                Operand::Reg(r) => reg(wide, r),
                Operand::Imm(i) => shex(i as i64),
            };
            format!(
                "if {} {} {s} goto {}",
                reg(wide, dst),
                cond_symbol(cond),
                rel(off as i64)
            )
        }
        Instruction::Call(CallTarget::Helper(id)) => format!("call {}", shex(id as i32 as i64)),
        Instruction::Call(CallTarget::Local(off)) => {
            let sign = if off < 0 { "" } else { "+" };
            format!("call pc{sign}{}", shex(off as i64))
        }
        Instruction::Call(CallTarget::Kfunc(id)) => format!("call kfunc {}", shex(id as i64)),
        Instruction::Exit => "exit".to_string(),
    }
}

/// The raw bytes of an instruction as llvm-objdump prints them: hex pairs separated by spaces.
pub fn format_bytes(insn: &Instruction) -> String {
    let mut s = String::new();
    for b in insn.encode().iter().flat_map(|r| r.to_bytes()) {
        if !s.is_empty() {
            s.push(' ');
        }
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// llvm's `<symbol+0xoffset>` annotation of a slot: the nearest function starting at or before
/// its byte address, computed like llvm in 64-bit wrapping arithmetic (a target before the start
/// wraps around to a huge address, annotated relative to the last function).
fn annotate(program: &Program, target: i64) -> Option<String> {
    let address = (target as u64).wrapping_mul(8);
    let f = program
        .functions
        .iter()
        .filter(|f| (f.start as u64).wrapping_mul(8) <= address)
        .max_by_key(|f| f.start)?;
    let bytes = address.wrapping_sub((f.start as u64).wrapping_mul(8));
    Some(if bytes == 0 {
        format!("<{}>", f.name)
    } else {
        format!("<{}+{:#x}>", f.name, bytes)
    })
}

/// Prints a whole linked program as an llvm-objdump section listing (see the module
/// documentation), naming map references through `maps`. Slots that do not decode print as
/// `<unknown>` like llvm does (the assembler rejects them: their bytes do not decode).
pub fn disassemble(program: &Program, maps: &[MapDef]) -> String {
    let mut out = format!("Disassembly of section {}:\n", program.section);
    let mut starts: Vec<(usize, &str)> = program
        .functions
        .iter()
        .map(|f| (f.start, f.name.as_str()))
        .collect();
    starts.sort();
    let mut next_start = starts.iter().peekable();
    let mut i = 0;
    while i < program.insns.len() {
        while let Some((start, name)) = next_start.peek() {
            if *start > i {
                break;
            }
            let _ = write!(out, "\n{:016x} <{name}>:\n", start * 8);
            next_start.next();
        }
        match Instruction::decode(&program.insns, i) {
            Ok(insn) => {
                let mut text = format_instruction(&insn, maps);
                let target = insn.jump_target(i);
                if let Some(note) = target.and_then(|t| annotate(program, t)) {
                    text.push(' ');
                    text.push_str(&note);
                }
                let _ = writeln!(out, "{i:>8}:\t{}\t{text}", format_bytes(&insn));
                i += insn.slots();
            }
            Err(_) => {
                let bytes = program.insns[i].to_bytes();
                let hex: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
                let _ = writeln!(out, "{i:>8}:\t{}\t<unknown>", hex.join(" "));
                i += 1;
            }
        }
    }
    // Labels of functions at the very end (empty functions) still print.
    for (start, name) in next_start {
        let _ = write!(out, "\n{:016x} <{name}>:\n", start * 8);
    }
    out
}

/// [`disassemble`] with the program's source lines (its `line_info`) interleaved as
/// `llvm-objdump -S` shows them: `; <source text>` before the first instruction of each line,
/// printed again only when the line changes. Without `line_info` it is [`disassemble`]'s text.
pub fn disassemble_with_source(program: &Program, maps: &[MapDef]) -> String {
    let text = disassemble(program, maps);
    if program.line_info.is_empty() {
        return text;
    }
    let mut out = String::with_capacity(text.len() * 2);
    let mut last: Option<(&str, u32)> = None;
    for line in text.lines() {
        let slot = line
            .split_once(":\t")
            .and_then(|(head, _)| head.trim().parse::<usize>().ok());
        let source = slot.and_then(|s| {
            let pos = program
                .line_info
                .binary_search_by_key(&s, |l| l.slot)
                .ok()?;
            Some(&program.line_info[pos].source)
        });
        if let Some(source) = source {
            let key = (source.file.as_str(), source.line);
            if last != Some(key) {
                let _ = writeln!(out, "; {}", source.text);
                last = Some(key);
            }
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}
