//! Assembler for the llvm-objdump BPF syntax printed by [`crate::disasm`].
//!
//! Three kinds of text are accepted, also mixed:
//!
//! - the output of [`crate::disasm::disassemble`] and [`crate::disasm::format_instruction`];
//! - real `llvm-objdump -d` listings of LLVM 14 (decimal immediates) and LLVM 19 (hexadecimal),
//!   with or without `-r` (relocation lines `0000000000000090:  R_BPF_64_64\tcounters`), `-S`/`-l`
//!   (`; source` lines), `-t` (a `SYMBOL TABLE:`), `--mattr=+alu32` (`w` registers in loads, stores
//!   and 32-bit atomics), `--no-show-raw-insn` and `--no-leading-addr`;
//! - bare instruction text, one instruction per line, with `name:` label lines, jumps to labels
//!   (`goto out`, `if r1 > r2 goto out`), calls to labels (`call helper_fn`, a BPF-to-BPF call) or to
//!   helpers by name (`call bpf_map_lookup_elem`), and comments starting with `;`, `//` or `#`.
//!
//! Jump targets are relative offsets (`+0x2`, `-3`, counted in slots from the next instruction)
//! or labels; llvm's trailing `<symbol+0x20>` annotation is ignored. Map names (`r1 = counters ll`,
//! `r1 = .rodata + 0x10 ll`, and the symbols of `R_BPF_64_64` relocation lines) resolve through the
//! caller's [`MapNames`]; `map[3]` always means map index 3.
//!
//! When a line carries raw bytes, the bytes are decoded and must agree with the text, otherwise
//! the line is rejected. The decoded bytes are authoritative: they resolve llvm's `<unknown>` and
//! the renderings in which llvm loses information (LLVM 14 prints `r1 s/= r2` as `r1 /= r2` and
//! `r1 = (s32)r2` as `r1 = r1`; LLVM 19 prints a 32-bit fetch-add as a plain `lock ... += r4`;
//! both print BPF-to-BPF and kfunc calls like helper calls, `call 0x4`;
//! `ld_pseudo` drops the second immediate; `skb[r1]` drops the immediate), which are accepted as
//! agreeing. Address columns must count the slots of their section.
//!
//! Errors are one line, `line 12: expected register, found `rx``. No input makes the assembler
//! panic.

use std::collections::HashMap;
use std::fmt;

use crate::disasm::{cond_symbol, MapNames};
use crate::insn::{
    AluOp, AtomicOp, CallTarget, Cond, Endian, Imm64, Instruction, Operand, RawInsn, Size,
};
use crate::program::{Function, Program};

/// An assembly error: the 1-based line it was found on (0 when it concerns the whole text) and
/// what is wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct AsmError {
    /// 1-based line number, 0 for errors about the whole input.
    pub line: usize,
    /// One-line description.
    pub message: String,
}

impl fmt::Display for AsmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            f.write_str(&self.message)
        } else {
            write!(f, "line {}: {}", self.line, self.message)
        }
    }
}

impl AsmError {
    pub(crate) fn new(line: usize, message: impl Into<String>) -> AsmError {
        AsmError {
            line,
            message: message.into(),
        }
    }
}

/// Assembles text (see the module documentation) into instructions, in the order they appear
/// across all sections of the text. Map relocations (`R_BPF_64_64 name`) of an llvm-objdump `-dr`
/// listing turn the 64-bit load they annotate into a map reference when `names` knows the map;
/// call relocations are left alone (use [`crate::objdump::read_objdump_text`] to link a listing).
pub fn assemble(
    text: &str,
    names: &(impl MapNames + ?Sized),
) -> Result<Vec<Instruction>, AsmError> {
    let listing = parse_listing(text, names)?;
    let mut out = Vec::new();
    for mut section in listing.sections {
        apply_map_relocations(&mut section, names)?;
        out.extend(section.insns.into_iter().map(|l| l.insn));
    }
    Ok(out)
}

/// Assembles the first section of the text into a [`Program`]: its instructions, its section name
/// (from a `Disassembly of section <name>:` line, otherwise empty) and its functions (from
/// `0000000000000000 <name>:` or `<name>:` lines; plain `name:` labels and clang's basic-block
/// symbols such as `<LBB0_3>:` are jump targets only). When
/// no function label starts the text, a function named after the section (or `prog`) does. The
/// program is named after its first function. `assemble_program(&disassemble(p, maps), maps)`
/// gives back `p`.
pub fn assemble_program(text: &str, names: &(impl MapNames + ?Sized)) -> Result<Program, AsmError> {
    let listing = parse_listing(text, names)?;
    let mut section = listing
        .sections
        .into_iter()
        .next()
        .unwrap_or_else(|| Section::new(String::new()));
    apply_map_relocations(&mut section, names)?;
    let insns: Vec<Instruction> = section.insns.iter().map(|l| l.insn).collect();
    let mut starts: Vec<(String, usize)> = section
        .labels
        .iter()
        .filter(|l| l.function)
        .map(|l| (l.name.clone(), l.slot))
        .collect();
    if !matches!(starts.first(), Some((_, 0))) {
        let name = if section.name.is_empty() {
            "prog".to_string()
        } else {
            section.name.clone()
        };
        starts.insert(0, (name, 0));
    }
    let mut functions = Vec::with_capacity(starts.len());
    for (i, (name, start)) in starts.iter().enumerate() {
        let end = starts.get(i + 1).map_or(section.slots, |(_, s)| *s);
        functions.push(Function {
            name: name.clone(),
            start: *start,
            len: end.saturating_sub(*start),
        });
    }
    Ok(Program {
        name: functions
            .first()
            .map(|f| f.name.clone())
            .unwrap_or_default(),
        section: section.name,
        insns: crate::insn::encode_all(&insns),
        functions,
        func_info: Vec::new(),
        line_info: Vec::new(),
    })
}

/// Parses one instruction written without address, bytes or label references (`r1 += 0x2`,
/// `goto -0x3`, `r1 = counters ll`). Errors carry line 1.
pub fn parse_instruction(
    text: &str,
    names: &(impl MapNames + ?Sized),
) -> Result<Instruction, AsmError> {
    let insns = assemble(text, names)?;
    match insns.as_slice() {
        [one] => Ok(*one),
        [] => Err(AsmError::new(1, "expected an instruction")),
        _ => Err(AsmError::new(0, "expected a single instruction")),
    }
}

// ---------------------------------------------------------------------------------------------
// Listing structure shared with `objdump`.

/// A label line.
#[derive(Clone, Debug)]
pub(crate) struct Label {
    pub name: String,
    pub slot: usize,
    /// Written as a symbol (`0000000000000000 <name>:` or `<name>:`), not a plain `name:`.
    pub function: bool,
}

/// One assembled instruction and where it came from.
#[derive(Clone, Debug)]
pub(crate) struct Line {
    pub line: usize,
    pub slot: usize,
    pub insn: Instruction,
}

/// A relocation line of an `llvm-objdump -r` listing.
#[derive(Clone, Debug)]
pub(crate) struct Reloc {
    pub line: usize,
    pub slot: usize,
    pub kind: String,
    pub symbol: String,
}

/// A line of an `llvm-objdump -t` symbol table.
#[derive(Clone, Debug)]
pub(crate) struct Symbol {
    pub name: String,
    pub section: String,
    pub value: u64,
    pub size: u64,
}

/// The instructions of one `Disassembly of section` block.
#[derive(Clone, Debug)]
pub(crate) struct Section {
    pub name: String,
    pub labels: Vec<Label>,
    pub insns: Vec<Line>,
    pub relocs: Vec<Reloc>,
    /// Number of slots.
    pub slots: usize,
}

impl Section {
    fn new(name: String) -> Section {
        Section {
            name,
            labels: Vec::new(),
            insns: Vec::new(),
            relocs: Vec::new(),
            slots: 0,
        }
    }

    fn insn_at_mut(&mut self, slot: usize) -> Option<&mut Line> {
        self.insns
            .binary_search_by_key(&slot, |l| l.slot)
            .ok()
            .and_then(|i| self.insns.get_mut(i))
    }
}

/// A whole parsed text.
#[derive(Clone, Debug, Default)]
pub(crate) struct Listing {
    pub sections: Vec<Section>,
    pub symbols: Vec<Symbol>,
}

/// Turns `R_BPF_64_64` relocations into map references through `names`.
fn apply_map_relocations(
    section: &mut Section,
    names: &(impl MapNames + ?Sized),
) -> Result<(), AsmError> {
    let relocs = std::mem::take(&mut section.relocs);
    for r in &relocs {
        if r.kind != "R_BPF_64_64" {
            continue;
        }
        let map = names
            .map_index(&r.symbol)
            .ok_or_else(|| AsmError::new(r.line, format!("unknown map `{}`", r.symbol)))?;
        let line = section
            .insn_at_mut(r.slot)
            .ok_or_else(|| AsmError::new(r.line, "relocation does not point at an instruction"))?;
        line.insn = relocated_load(line.insn, map)
            .ok_or_else(|| AsmError::new(r.line, "map relocation of a non-constant load"))?;
    }
    section.relocs = relocs;
    Ok(())
}

/// The 64-bit load `insn` with its constant (an offset, normally 0) turned into a reference to
/// `map`: [`Imm64::Map`] for offset 0, [`Imm64::MapValue`] otherwise.
pub(crate) fn relocated_load(insn: Instruction, map: u32) -> Option<Instruction> {
    match insn {
        Instruction::LoadImm64 {
            dst,
            imm: Imm64::Const(v),
        } => Some(Instruction::LoadImm64 {
            dst,
            imm: if v == 0 {
                Imm64::Map(map)
            } else {
                Imm64::MapValue {
                    map,
                    offset: u32::try_from(v).ok()?,
                }
            },
        }),
        _ => None,
    }
}

/// Where a jump or call written with a label goes.
#[derive(Clone, Debug)]
enum Target {
    None,
    Label(String),
}

/// A parsed instruction text before label resolution.
#[derive(Clone, Debug)]
struct Parsed {
    insn: Instruction,
    target: Target,
    /// `ld_pseudo` with three operands: llvm dropped the second slot's immediate.
    lossy_pseudo: bool,
}

enum Text {
    Insn(Parsed),
    Unknown,
}

struct Pending {
    line: usize,
    slot: usize,
    text: Text,
    bytes: Option<Instruction>,
}

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == '.' || c == '$'
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '$'
}

/// Whether a symbol is a basic-block label clang leaves in some objects (`LBB0_3`, `.LBB0_3`)
/// or one of llvm-objdump's `--symbolize-operands` labels (`L0`), which llvm-objdump lists like
/// a function but which start no function.
fn is_block_label(name: &str) -> bool {
    let rest = name
        .strip_prefix("LBB")
        .or_else(|| name.strip_prefix(".LBB"))
        .or_else(|| name.strip_prefix(".L"))
        .or_else(|| name.strip_prefix('L'));
    rest.is_some_and(|r| !r.is_empty() && r.chars().all(|c| c.is_ascii_digit() || c == '_'))
}

/// A label line's name: `0000000000000028 <name>:`, `<name>:` (functions) or `name:` (plain).
fn label_line(s: &str) -> Option<(String, bool)> {
    let body = s.strip_suffix(':')?.trim();
    if let Some(open) = body.find('<') {
        let addr = body[..open].trim();
        if !addr.chars().all(|c| c.is_ascii_hexdigit()) {
            return None;
        }
        let name = body[open + 1..].strip_suffix('>')?;
        if name.is_empty() || name.contains(['<', '>', '\t']) {
            return None;
        }
        return Some((name.to_string(), !is_block_label(name)));
    }
    let mut chars = body.chars();
    if chars.next().is_some_and(is_ident_start) && chars.all(is_ident_char) {
        return Some((body.to_string(), false));
    }
    None
}

/// Removes a comment (`;`, `//`, `#`) from a line.
fn strip_comment(s: &str) -> &str {
    let mut end = s.len();
    for pat in [";", "//", "#"] {
        if let Some(i) = s.find(pat) {
            end = end.min(i);
        }
    }
    &s[..end]
}

fn hex_pair(tok: &str) -> Option<u8> {
    if tok.len() == 2 {
        u8::from_str_radix(tok, 16).ok()
    } else {
        None
    }
}

/// Splits `[bytes]\t[text]` into the raw bytes (8 or 16 hex pairs) and the rest.
fn split_bytes(s: &str) -> (Option<Vec<u8>>, &str) {
    let mut bytes = Vec::new();
    let mut rest = s.trim_start();
    loop {
        let tok_end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        match hex_pair(&rest[..tok_end]) {
            Some(b) if bytes.len() < 16 => {
                bytes.push(b);
                rest = rest[tok_end..].trim_start();
            }
            _ => break,
        }
    }
    if bytes.len() == 8 || bytes.len() == 16 {
        (Some(bytes), rest)
    } else {
        (None, s.trim_start())
    }
}

fn decode_bytes(line: usize, bytes: &[u8]) -> Result<Instruction, AsmError> {
    let slots: Vec<RawInsn> = bytes
        .chunks_exact(8)
        .map(|c| {
            let mut b = [0u8; 8];
            b.copy_from_slice(c);
            RawInsn::from_bytes(b)
        })
        .collect();
    let insn = Instruction::decode(&slots, 0)
        .map_err(|e| AsmError::new(line, format!("raw bytes do not decode: {e}")))?;
    if insn.slots() != slots.len() {
        return Err(AsmError::new(
            line,
            format!(
                "raw bytes hold {} slots but the instruction takes {}",
                slots.len(),
                insn.slots()
            ),
        ));
    }
    Ok(insn)
}

/// Parses a whole text into sections of instructions with labels, jumps resolved, and raw bytes
/// checked against the text. Relocations are recorded, not applied.
pub(crate) fn parse_listing(
    text: &str,
    names: &(impl MapNames + ?Sized),
) -> Result<Listing, AsmError> {
    let mut listing = Listing::default();
    let mut pending: Vec<Vec<Pending>> = Vec::new();
    let mut in_symbols = false;
    let current = |listing: &mut Listing, pending: &mut Vec<Vec<Pending>>| -> usize {
        if listing.sections.is_empty() {
            listing.sections.push(Section::new(String::new()));
            pending.push(Vec::new());
        }
        listing.sections.len() - 1
    };
    for (i, raw_line) in text.lines().enumerate() {
        let n = i + 1;
        let line = raw_line.trim_end();
        let trimmed = line.trim();
        if trimmed.is_empty() {
            in_symbols = false;
            continue;
        }
        if trimmed == "SYMBOL TABLE:" {
            in_symbols = true;
            continue;
        }
        if in_symbols {
            listing.symbols.push(parse_symbol(n, trimmed)?);
            continue;
        }
        if let Some(name) = trimmed
            .strip_prefix("Disassembly of section ")
            .and_then(|s| s.strip_suffix(':'))
        {
            listing.sections.push(Section::new(name.to_string()));
            pending.push(Vec::new());
            continue;
        }
        if trimmed.contains("file format ") || trimmed == "..." {
            continue;
        }
        let code = strip_comment(line).trim_end();
        if code.trim().is_empty() {
            continue;
        }
        if code.contains("R_BPF_") {
            let s = current(&mut listing, &mut pending);
            let reloc = parse_reloc(n, code.trim())?;
            listing.sections[s].relocs.push(reloc);
            continue;
        }
        if let Some((name, function)) = label_line(code.trim()) {
            let s = current(&mut listing, &mut pending);
            let sec = &mut listing.sections[s];
            sec.labels.push(Label {
                name,
                slot: sec.slots,
                function,
            });
            continue;
        }
        let s = current(&mut listing, &mut pending);
        let sec = &mut listing.sections[s];
        // Optional `  12:` address column.
        let mut rest = code.trim_start();
        let digits = rest.chars().take_while(|c| c.is_ascii_digit()).count();
        if digits > 0 && rest[digits..].starts_with(':') {
            let addr: usize = rest[..digits]
                .parse()
                .map_err(|_| AsmError::new(n, "instruction index out of range"))?;
            if addr != sec.slots {
                return Err(AsmError::new(
                    n,
                    format!(
                        "instruction index {addr} does not follow the previous instruction (expected {})",
                        sec.slots
                    ),
                ));
            }
            rest = &rest[digits + 1..];
        }
        let (bytes, text) = split_bytes(rest);
        let bytes = bytes.map(|b| decode_bytes(n, &b)).transpose()?;
        let text = text.trim();
        let parsed = if text == "<unknown>" {
            Text::Unknown
        } else {
            Text::Insn(parse_text(n, text, names)?)
        };
        let slots = match (&bytes, &parsed) {
            (Some(b), _) => b.slots(),
            (None, Text::Insn(p)) => p.insn.slots(),
            (None, Text::Unknown) => {
                return Err(AsmError::new(
                    n,
                    "`<unknown>` instruction without raw bytes",
                ))
            }
        };
        pending[s].push(Pending {
            line: n,
            slot: sec.slots,
            text: parsed,
            bytes,
        });
        sec.slots += slots;
    }
    for (sec, lines) in listing.sections.iter_mut().zip(pending) {
        let starts: std::collections::HashSet<usize> = lines.iter().map(|p| p.slot).collect();
        for r in &sec.relocs {
            if !starts.contains(&r.slot) {
                return Err(AsmError::new(
                    r.line,
                    "relocation does not point at an instruction",
                ));
            }
        }
        let labels: HashMap<&str, usize> = sec
            .labels
            .iter()
            .rev()
            .map(|l| (l.name.as_str(), l.slot))
            .collect();
        let mut out = Vec::with_capacity(lines.len());
        for p in lines {
            let insn = resolve(&p, &labels)?;
            out.push(Line {
                line: p.line,
                slot: p.slot,
                insn,
            });
        }
        sec.insns = out;
    }
    Ok(listing)
}

/// Resolves a pending line's label and checks its text against its bytes.
fn resolve(p: &Pending, labels: &HashMap<&str, usize>) -> Result<Instruction, AsmError> {
    let parsed = match &p.text {
        Text::Unknown => {
            return p
                .bytes
                .ok_or_else(|| AsmError::new(p.line, "`<unknown>` instruction without raw bytes"))
        }
        Text::Insn(parsed) => parsed,
    };
    let mut insn = parsed.insn;
    if let Target::Label(name) = &parsed.target {
        match labels.get(name.as_str()) {
            Some(&target) => {
                let off = target as i64 - (p.slot as i64 + 1);
                let too_far = || AsmError::new(p.line, format!("label `{name}` is too far away"));
                insn = match insn {
                    Instruction::Ja { long: true, .. } => Instruction::Ja {
                        off: i32::try_from(off).map_err(|_| too_far())?,
                        long: true,
                    },
                    Instruction::Ja { long: false, .. } => Instruction::Ja {
                        off: i16::try_from(off).map_err(|_| too_far())? as i32,
                        long: false,
                    },
                    Instruction::Jump {
                        wide,
                        cond,
                        dst,
                        src,
                        ..
                    } => Instruction::Jump {
                        wide,
                        cond,
                        dst,
                        src,
                        off: i16::try_from(off).map_err(|_| too_far())?,
                    },
                    Instruction::Call(_) => Instruction::Call(CallTarget::Local(
                        i32::try_from(off).map_err(|_| too_far())?,
                    )),
                    Instruction::MayGoto { .. } => Instruction::MayGoto {
                        off: i16::try_from(off).map_err(|_| too_far())?,
                    },
                    other => other,
                };
            }
            None => match insn {
                Instruction::Call(_) => {
                    let id = crate::helpers::helper_id(name).ok_or_else(|| {
                        AsmError::new(p.line, format!("unknown label or helper `{name}`"))
                    })?;
                    insn = Instruction::Call(CallTarget::Helper(id));
                }
                _ => return Err(AsmError::new(p.line, format!("unknown label `{name}`"))),
            },
        }
    }
    match p.bytes {
        None => Ok(insn),
        Some(bytes) => {
            if agrees(&insn, &bytes, parsed.lossy_pseudo) {
                Ok(bytes)
            } else {
                Err(AsmError::new(
                    p.line,
                    format!(
                        "text does not match the raw bytes, which are `{}`",
                        crate::disasm::format_instruction(&bytes, &crate::disasm::NoNames)
                    ),
                ))
            }
        }
    }
}

/// Whether `text` is a rendering of `bytes`: equal, or one of llvm's lossy renderings.
fn agrees(text: &Instruction, bytes: &Instruction, lossy_pseudo: bool) -> bool {
    if text == bytes {
        return true;
    }
    if lossy_pseudo {
        let (t, b) = (text.encode(), bytes.encode());
        return t.len() == 2 && b.len() == 2 && t[0] == b[0] && t[1].imm == 0;
    }
    let lossy = match *bytes {
        Instruction::Call(CallTarget::Local(imm) | CallTarget::Kfunc(imm)) => {
            Instruction::Call(CallTarget::Helper(imm as u32))
        }
        Instruction::Alu { wide, op, dst, src } => {
            let op = match op {
                AluOp::SDiv => AluOp::Div,
                AluOp::SMod => AluOp::Mod,
                AluOp::MovSx(_) => AluOp::Mov,
                _ => return false,
            };
            Instruction::Alu { wide, op, dst, src }
        }
        Instruction::Atomic {
            size: Size::W,
            op: op @ (AtomicOp::Add | AtomicOp::Or | AtomicOp::And | AtomicOp::Xor),
            fetch: true,
            dst,
            src,
            off,
        } => Instruction::Atomic {
            size: Size::W,
            op,
            fetch: false,
            dst,
            src,
            off,
        },
        Instruction::LegacyPacketLoad {
            size,
            indirect: true,
            src,
            ..
        } => Instruction::LegacyPacketLoad {
            size,
            indirect: true,
            src,
            imm: 0,
        },
        _ => return false,
    };
    *text == lossy
}

fn parse_reloc(line: usize, s: &str) -> Result<Reloc, AsmError> {
    let mut parts = s.split_whitespace();
    let off = parts
        .next()
        .and_then(|o| o.strip_suffix(':'))
        .and_then(|o| u64::from_str_radix(o, 16).ok())
        .ok_or_else(|| AsmError::new(line, "expected relocation offset"))?;
    let kind = parts
        .next()
        .ok_or_else(|| AsmError::new(line, "expected relocation type"))?
        .to_string();
    let symbol = parts.collect::<Vec<_>>().join(" ");
    if off % 8 != 0 {
        return Err(AsmError::new(
            line,
            "relocation offset is not a multiple of 8",
        ));
    }
    Ok(Reloc {
        line,
        slot: usize::try_from(off / 8)
            .map_err(|_| AsmError::new(line, "relocation offset out of range"))?,
        kind,
        symbol,
    })
}

/// `0000000000000028 l     F .text\t0000000000000060 helper_fn`
fn parse_symbol(line: usize, s: &str) -> Result<Symbol, AsmError> {
    let bad = || AsmError::new(line, "malformed symbol table line");
    let (left, right) = s.split_once('\t').ok_or_else(bad)?;
    let mut l = left.split_whitespace();
    let value = l
        .next()
        .and_then(|v| u64::from_str_radix(v, 16).ok())
        .ok_or_else(bad)?;
    let section = l.last().ok_or_else(bad)?.to_string();
    let mut r = right.split_whitespace();
    let size = r
        .next()
        .and_then(|v| u64::from_str_radix(v, 16).ok())
        .ok_or_else(bad)?;
    let name = r.collect::<Vec<_>>().join(" ");
    Ok(Symbol {
        name,
        section,
        value,
        size,
    })
}

// ---------------------------------------------------------------------------------------------
// Instruction text.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Ident,
    Num(u64),
    Punct,
}

#[derive(Clone, Copy, Debug)]
struct Tok<'a> {
    kind: Kind,
    text: &'a str,
}

const PUNCTS: &[&str] = &[
    "s>>=", "<<=", ">>=", "s/=", "s%=", "s<=", "s>=", "+=", "-=", "*=", "/=", "|=", "&=", "%=",
    "^=", "==", "!=", "<=", ">=", "s<", "s>", "=", "<", ">", "&", "*", "(", ")", "[", "]", "+",
    "-", ",",
];

fn tokenize(line: usize, s: &str) -> Result<Vec<Tok<'_>>, AsmError> {
    let mut toks = Vec::new();
    let mut i = 0;
    while i < s.len() {
        let rest = &s[i..];
        let Some(c) = rest.chars().next() else { break };
        if c.is_whitespace() {
            i += c.len_utf8();
            continue;
        }
        let s_op = c == 's' && rest[1..].starts_with(['<', '>', '/', '%']);
        if is_ident_start(c) && !s_op {
            let len = rest.find(|c: char| !is_ident_char(c)).unwrap_or(rest.len());
            toks.push(Tok {
                kind: Kind::Ident,
                text: &rest[..len],
            });
            i += len;
            continue;
        }
        if c.is_ascii_digit() {
            let len = rest
                .find(|c: char| !c.is_ascii_alphanumeric())
                .unwrap_or(rest.len());
            let t = &rest[..len];
            let v = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
                u64::from_str_radix(h, 16)
            } else {
                t.parse::<u64>()
            }
            .map_err(|_| AsmError::new(line, format!("invalid number `{t}`")))?;
            toks.push(Tok {
                kind: Kind::Num(v),
                text: t,
            });
            i += len;
            continue;
        }
        match PUNCTS.iter().find(|p| rest.starts_with(**p)) {
            Some(p) => {
                toks.push(Tok {
                    kind: Kind::Punct,
                    text: &rest[..p.len()],
                });
                i += p.len();
            }
            None => {
                return Err(AsmError::new(line, format!("unexpected character `{c}`")));
            }
        }
    }
    Ok(toks)
}

struct Parser<'a, 'n, N: MapNames + ?Sized> {
    line: usize,
    toks: Vec<Tok<'a>>,
    pos: usize,
    names: &'n N,
}

fn describe(t: Option<&Tok<'_>>) -> String {
    match t {
        Some(t) => format!("`{}`", t.text),
        None => "end of line".to_string(),
    }
}

/// A register with its width (`w` registers are 32-bit).
#[derive(Clone, Copy)]
struct RegTok {
    n: u8,
    wide: bool,
}

/// Whether `name` can stand for a map in an instruction (`r1 = name ll`): one identifier token
/// that is not a register name.
pub(crate) fn is_map_name_token(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(is_ident_start) && chars.all(is_ident_char) && reg_of(name).is_none()
}

fn reg_of(text: &str) -> Option<RegTok> {
    let (wide, num) = if let Some(n) = text.strip_prefix('r') {
        (true, n)
    } else {
        (false, text.strip_prefix('w')?)
    };
    if num.is_empty() || (num.len() > 1 && num.starts_with('0')) {
        return None;
    }
    let n: u8 = num.parse().ok()?;
    (n <= 10).then_some(RegTok { n, wide })
}

fn size_of(text: &str) -> Option<(Size, bool)> {
    Some(match text {
        "u8" => (Size::B, false),
        "u16" => (Size::H, false),
        "u32" => (Size::W, false),
        "u64" => (Size::Dw, false),
        "s8" => (Size::B, true),
        "s16" => (Size::H, true),
        "s32" => (Size::W, true),
        _ => return None,
    })
}

impl<'a, N: MapNames + ?Sized> Parser<'a, '_, N> {
    fn err<T>(&self, msg: impl Into<String>) -> Result<T, AsmError> {
        Err(AsmError::new(self.line, msg))
    }

    fn peek(&self) -> Option<&Tok<'a>> {
        self.toks.get(self.pos)
    }

    fn peek_is(&self, text: &str) -> bool {
        self.peek().is_some_and(|t| t.text == text)
    }

    fn next(&mut self) -> Option<Tok<'a>> {
        let t = self.toks.get(self.pos).copied();
        if t.is_some() {
            self.pos += 1;
        }
        t
    }

    fn expected<T>(&self, what: &str) -> Result<T, AsmError> {
        self.err(format!("expected {what}, found {}", describe(self.peek())))
    }

    fn eat(&mut self, text: &str) -> bool {
        if self.peek_is(text) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, text: &str) -> Result<(), AsmError> {
        if self.eat(text) {
            Ok(())
        } else {
            self.expected(&format!("`{text}`"))
        }
    }

    fn end(&self) -> Result<(), AsmError> {
        match self.peek() {
            None => Ok(()),
            Some(t) => self.err(format!("unexpected `{}` after the instruction", t.text)),
        }
    }

    fn reg(&mut self) -> Result<RegTok, AsmError> {
        match self
            .peek()
            .filter(|t| t.kind == Kind::Ident)
            .and_then(|t| reg_of(t.text))
        {
            Some(r) => {
                self.pos += 1;
                Ok(r)
            }
            None => self.expected("register"),
        }
    }

    fn reg64(&mut self) -> Result<u8, AsmError> {
        let r = self.reg()?;
        if !r.wide {
            self.pos -= 1;
            return self.expected("64-bit register");
        }
        Ok(r.n)
    }

    fn peek_reg(&self) -> Option<RegTok> {
        self.peek()
            .filter(|t| t.kind == Kind::Ident)
            .and_then(|t| reg_of(t.text))
    }

    /// An optionally signed number as i128 (wide enough for every range checked below).
    fn signed(&mut self) -> Result<i128, AsmError> {
        let neg = if self.eat("-") {
            true
        } else {
            self.eat("+");
            false
        };
        match self.peek().map(|t| t.kind) {
            Some(Kind::Num(v)) => {
                self.pos += 1;
                Ok(if neg { -(v as i128) } else { v as i128 })
            }
            _ => self.expected("number"),
        }
    }

    fn ranged<T: TryFrom<i128>>(&mut self, what: &str) -> Result<T, AsmError> {
        let start = self.pos;
        let v = self.signed()?;
        T::try_from(v).or_else(|_| {
            self.pos = start;
            self.err(format!("{what} {v} out of range"))
        })
    }

    fn imm32(&mut self) -> Result<i32, AsmError> {
        self.ranged("immediate")
    }

    /// `r1 + 0x4` / `r10 - 0x8`.
    fn address(&mut self) -> Result<(u8, i16), AsmError> {
        let r = self.reg64()?;
        let neg = if self.eat("-") {
            true
        } else {
            self.expect("+")?;
            false
        };
        let v = match self.peek().map(|t| t.kind) {
            Some(Kind::Num(v)) => {
                self.pos += 1;
                v as i128
            }
            _ => return self.expected("offset"),
        };
        let v = if neg { -v } else { v };
        match i16::try_from(v) {
            Ok(off) => Ok((r, off)),
            Err(_) => self.err(format!("offset {v} out of range")),
        }
    }

    /// `(u32 *)`, returning the size and signedness.
    fn cast(&mut self) -> Result<(Size, bool), AsmError> {
        self.expect("(")?;
        let Some((size, signed)) = self.peek().and_then(|t| size_of(t.text)) else {
            return self.expected("access type like `u32`");
        };
        self.pos += 1;
        self.expect("*")?;
        self.expect(")")?;
        Ok((size, signed))
    }

    /// `(u32 *)(r1 + 0x4)`.
    fn memory(&mut self) -> Result<(Size, bool, u8, i16), AsmError> {
        let (size, signed) = self.cast()?;
        self.expect("(")?;
        let (r, off) = self.address()?;
        self.expect(")")?;
        Ok((size, signed, r, off))
    }

    fn unsigned_memory(&mut self) -> Result<(Size, u8, i16), AsmError> {
        let start = self.pos;
        let (size, signed, r, off) = self.memory()?;
        if signed {
            self.pos = start + 1;
            return self.err("a store or atomic access cannot be signed");
        }
        Ok((size, r, off))
    }

    fn operand(&mut self, wide: bool) -> Result<Operand, AsmError> {
        if let Some(r) = self.peek_reg() {
            if r.wide != wide {
                return self.err(format!(
                    "expected a {} register, found `{}`",
                    if wide { "64-bit" } else { "32-bit" },
                    self.peek().map_or("", |t| t.text)
                ));
            }
            self.pos += 1;
            Ok(Operand::Reg(r.n))
        } else {
            Ok(Operand::Imm(self.imm32()?))
        }
    }

    /// A jump target: `+0x2`, `-3`, `5`, or a label.
    fn target(&mut self) -> Result<(i64, Target), AsmError> {
        match self.peek() {
            Some(t) if t.kind == Kind::Ident => {
                let name = t.text.to_string();
                self.pos += 1;
                Ok((0, Target::Label(name)))
            }
            _ => {
                let v: i64 = self.ranged("jump offset")?;
                Ok((v, Target::None))
            }
        }
    }

    fn statement(&mut self) -> Result<Parsed, AsmError> {
        let plain = |insn| Parsed {
            insn,
            target: Target::None,
            lossy_pseudo: false,
        };
        let Some(first) = self.peek().copied() else {
            return self.expected("instruction");
        };
        match first.text {
            "exit" => {
                self.pos += 1;
                self.end()?;
                Ok(plain(Instruction::Exit))
            }
            "goto" | "gotol" => {
                self.pos += 1;
                let long = first.text == "gotol";
                let (off, target) = self.target()?;
                self.end()?;
                let off = if long {
                    i32::try_from(off).or_else(|_| self.err("jump offset out of range"))?
                } else {
                    i16::try_from(off).or_else(|_| self.err("jump offset out of range"))? as i32
                };
                Ok(Parsed {
                    insn: Instruction::Ja { off, long },
                    target,
                    lossy_pseudo: false,
                })
            }
            "may_goto" => {
                self.pos += 1;
                let (off, target) = self.target()?;
                self.end()?;
                let off = i16::try_from(off).or_else(|_| self.err("jump offset out of range"))?;
                Ok(Parsed {
                    insn: Instruction::MayGoto { off },
                    target,
                    lossy_pseudo: false,
                })
            }
            "call" => {
                self.pos += 1;
                self.call()
            }
            "if" => {
                self.pos += 1;
                let dst = self.reg()?;
                let Some(cond) = self.peek().and_then(|t| cond_of(t.text)) else {
                    return self.expected("comparison");
                };
                self.pos += 1;
                let src = self.operand(dst.wide)?;
                if !self.eat("goto") {
                    return self.expected("`goto`");
                }
                let (off, target) = self.target()?;
                self.end()?;
                let off = i16::try_from(off).or_else(|_| self.err("jump offset out of range"))?;
                Ok(Parsed {
                    insn: Instruction::Jump {
                        wide: dst.wide,
                        cond,
                        dst: dst.n,
                        src,
                        off,
                    },
                    target,
                    lossy_pseudo: false,
                })
            }
            "lock" => {
                self.pos += 1;
                self.expect("*")?;
                let (size, dst, off) = self.unsigned_memory()?;
                let op = match self.next().map(|t| t.text) {
                    Some("+=") => AtomicOp::Add,
                    Some("|=") => AtomicOp::Or,
                    Some("&=") => AtomicOp::And,
                    Some("^=") => AtomicOp::Xor,
                    _ => {
                        self.pos -= 1;
                        return self.expected("`+=`, `|=`, `&=` or `^=`");
                    }
                };
                let src = self.reg()?;
                self.end()?;
                Ok(plain(atomic(self.line, size, op, false, dst, src.n, off)?))
            }
            "ld_pseudo" => {
                self.pos += 1;
                let dst = self.reg64()?;
                self.expect(",")?;
                let src: u8 = self.ranged("pseudo source")?;
                if src > 15 {
                    return self.err("pseudo source out of range");
                }
                self.expect(",")?;
                let imm = self.imm32()?;
                let (next_imm, lossy) = if self.eat(",") {
                    (self.imm32()?, false)
                } else {
                    (0, true)
                };
                self.end()?;
                let slots = [
                    RawInsn {
                        code: 0x18,
                        dst,
                        src,
                        off: 0,
                        imm,
                    },
                    RawInsn {
                        imm: next_imm,
                        ..RawInsn::default()
                    },
                ];
                let insn = Instruction::decode(&slots, 0)
                    .or_else(|e| self.err(format!("invalid pseudo load: {e}")))?;
                Ok(Parsed {
                    insn,
                    target: Target::None,
                    lossy_pseudo: lossy,
                })
            }
            "*" => {
                self.pos += 1;
                let (size, dst, off) = self.unsigned_memory()?;
                self.expect("=")?;
                let src = match self.peek_reg() {
                    Some(r) => {
                        self.pos += 1;
                        Operand::Reg(r.n)
                    }
                    None => Operand::Imm(self.imm32()?),
                };
                self.end()?;
                Ok(plain(Instruction::Store {
                    size,
                    dst,
                    off,
                    src,
                }))
            }
            _ => {
                let dst = self.reg()?;
                let insn = self.assignment(dst)?;
                self.end()?;
                Ok(plain(insn))
            }
        }
    }

    fn call(&mut self) -> Result<Parsed, AsmError> {
        let plain = |insn| Parsed {
            insn,
            target: Target::None,
            lossy_pseudo: false,
        };
        match self.peek().copied() {
            Some(t) if t.text == "pc" => {
                self.pos += 1;
                if !self.peek_is("+") && !self.peek_is("-") {
                    return self.expected("`+` or `-`");
                }
                let off = self.imm32()?;
                self.end()?;
                Ok(plain(Instruction::Call(CallTarget::Local(off))))
            }
            Some(t) if t.text == "kfunc" => {
                self.pos += 1;
                let id = self.imm32()?;
                self.end()?;
                Ok(plain(Instruction::Call(CallTarget::Kfunc(id))))
            }
            Some(t) if t.kind == Kind::Ident => {
                self.pos += 1;
                self.end()?;
                Ok(Parsed {
                    insn: Instruction::Call(CallTarget::Local(0)),
                    target: Target::Label(t.text.to_string()),
                    lossy_pseudo: false,
                })
            }
            _ => {
                let id = self.imm32()?;
                self.end()?;
                Ok(plain(Instruction::Call(CallTarget::Helper(id as u32))))
            }
        }
    }

    /// Everything starting with `rN` or `wN`.
    fn assignment(&mut self, dst: RegTok) -> Result<Instruction, AsmError> {
        let Some(op_tok) = self.next() else {
            return self.expected("assignment operator");
        };
        let op = match op_tok.text {
            "=" => None,
            "+=" => Some(AluOp::Add),
            "-=" => Some(AluOp::Sub),
            "*=" => Some(AluOp::Mul),
            "/=" => Some(AluOp::Div),
            "s/=" => Some(AluOp::SDiv),
            "|=" => Some(AluOp::Or),
            "&=" => Some(AluOp::And),
            "<<=" => Some(AluOp::Lsh),
            ">>=" => Some(AluOp::Rsh),
            "%=" => Some(AluOp::Mod),
            "s%=" => Some(AluOp::SMod),
            "^=" => Some(AluOp::Xor),
            "s>>=" => Some(AluOp::Arsh),
            _ => {
                self.pos -= 1;
                return self.expected("assignment operator");
            }
        };
        if let Some(op) = op {
            let src = self.operand(dst.wide)?;
            return Ok(Instruction::Alu {
                wide: dst.wide,
                op,
                dst: dst.n,
                src,
            });
        }
        let Some(t) = self.peek().copied() else {
            return self.expected("value");
        };
        match t.text {
            "*" => {
                self.pos += 1;
                if self.peek_is("(") && self.toks.get(self.pos + 4).is_some_and(|t| t.text == "skb")
                {
                    return self.legacy_load(dst);
                }
                let (size, signed, src, off) = self.memory()?;
                if signed && size == Size::Dw {
                    return self.err("no sign-extending 64-bit load");
                }
                if !dst.wide && signed {
                    return self.err("sign-extending loads write a 64-bit register");
                }
                Ok(Instruction::Load {
                    size,
                    signed,
                    dst: dst.n,
                    src,
                    off,
                })
            }
            "-" if self
                .toks
                .get(self.pos + 1)
                .is_some_and(|t| t.kind == Kind::Ident) =>
            {
                self.pos += 1;
                let src = self.reg()?;
                if src.n != dst.n || src.wide != dst.wide {
                    return self.err("negation must use the same register on both sides");
                }
                Ok(Instruction::Alu {
                    wide: dst.wide,
                    op: AluOp::Neg,
                    dst: dst.n,
                    src: Operand::Imm(0),
                })
            }
            "(" => {
                self.pos += 1;
                let bits = match self.next().map(|t| t.text) {
                    Some("s8") => 8,
                    Some("s16") => 16,
                    Some("s32") => 32,
                    _ => {
                        self.pos -= 1;
                        return self.expected("`s8`, `s16` or `s32`");
                    }
                };
                self.expect(")")?;
                let src = self.operand(dst.wide)?;
                if !matches!(src, Operand::Reg(_)) || (bits == 32 && !dst.wide) {
                    return self.err("invalid sign-extending move");
                }
                Ok(Instruction::Alu {
                    wide: dst.wide,
                    op: AluOp::MovSx(bits),
                    dst: dst.n,
                    src,
                })
            }
            _ if t.kind == Kind::Ident && reg_of(t.text).is_none() => {
                self.pos += 1;
                self.named_value(dst, t.text)
            }
            _ => {
                let src = if let Some(r) = self.peek_reg() {
                    self.pos += 1;
                    if r.wide != dst.wide {
                        return self.err("register widths differ");
                    }
                    Operand::Reg(r.n)
                } else {
                    let start = self.pos;
                    let v = self.signed()?;
                    if self.eat("ll") {
                        if !dst.wide {
                            return self.err("64-bit immediate load into a 32-bit register");
                        }
                        let c = if v < 0 {
                            i64::try_from(v).ok().map(|v| v as u64)
                        } else {
                            u64::try_from(v).ok()
                        };
                        return match c {
                            Some(c) => Ok(Instruction::LoadImm64 {
                                dst: dst.n,
                                imm: Imm64::Const(c),
                            }),
                            None => self.err(format!("immediate {v} out of range")),
                        };
                    }
                    match i32::try_from(v) {
                        Ok(v) => Operand::Imm(v),
                        Err(_) => {
                            self.pos = start;
                            return self.err(format!("immediate {v} out of range"));
                        }
                    }
                };
                Ok(Instruction::Alu {
                    wide: dst.wide,
                    op: AluOp::Mov,
                    dst: dst.n,
                    src,
                })
            }
        }
    }

    /// `r0 = *(u8 *)skb[0x17]`, `r0 = *(u16 *)skb[r1]`, `skb[r1 + 0x4]` (after the `*`).
    fn legacy_load(&mut self, dst: RegTok) -> Result<Instruction, AsmError> {
        let (size, signed) = self.cast()?;
        if signed || dst.n != 0 {
            return self.err("legacy packet loads are `r0 = *(uN *)skb[...]`");
        }
        self.expect("skb")?;
        self.expect("[")?;
        let insn = if let Some(r) = self.peek_reg() {
            self.pos += 1;
            let imm = if self.peek_is("+") || self.peek_is("-") {
                self.imm32()?
            } else {
                0
            };
            Instruction::LegacyPacketLoad {
                size,
                indirect: true,
                src: r.n,
                imm,
            }
        } else {
            Instruction::LegacyPacketLoad {
                size,
                indirect: false,
                src: 0,
                imm: self.imm32()?,
            }
        };
        self.expect("]")?;
        Ok(insn)
    }

    /// `rN = <ident>...`: byte swaps, atomics with fetch, map references.
    fn named_value(&mut self, dst: RegTok, name: &str) -> Result<Instruction, AsmError> {
        // A name followed by `ll` or `+` is a map reference even when it reads like one of the
        // words below: a map may be called `be16` or `xchg_64`.
        let keyword = if self.peek_is("ll") || self.peek_is("+") {
            ""
        } else {
            name
        };
        let endian = [
            ("le", Endian::ToLe),
            ("be", Endian::ToBe),
            ("bswap", Endian::Swap),
        ]
        .into_iter()
        .find_map(|(p, k)| {
            let bits = keyword.strip_prefix(p)?;
            matches!(bits, "16" | "32" | "64").then(|| (k, bits.parse::<u8>().unwrap_or(64)))
        });
        if let Some((kind, bits)) = endian {
            let src = self.reg()?;
            if src.n != dst.n {
                return self.err("byte swap must use the same register on both sides");
            }
            return Ok(Instruction::Endian {
                kind,
                bits,
                dst: dst.n,
            });
        }
        let fetch_op = match keyword {
            "atomic_fetch_add" => Some(AtomicOp::Add),
            "atomic_fetch_or" => Some(AtomicOp::Or),
            "atomic_fetch_and" => Some(AtomicOp::And),
            "atomic_fetch_xor" => Some(AtomicOp::Xor),
            _ => None,
        };
        if let Some(op) = fetch_op {
            self.expect("(")?;
            let (size, mem, off) = self.unsigned_memory()?;
            self.expect(",")?;
            let src = self.reg()?;
            self.expect(")")?;
            if src.n != dst.n {
                return self.err("atomic_fetch_* must name the same register on both sides");
            }
            return atomic(self.line, size, op, true, mem, src.n, off);
        }
        if let Some(size) = match keyword {
            "xchg_64" => Some(Size::Dw),
            "xchg32_32" => Some(Size::W),
            _ => None,
        } {
            self.expect("(")?;
            let (mem, off) = self.address()?;
            self.expect(",")?;
            let src = self.reg()?;
            self.expect(")")?;
            if src.n != dst.n {
                return self.err("xchg must name the same register on both sides");
            }
            return atomic(self.line, size, AtomicOp::Xchg, true, mem, src.n, off);
        }
        if let Some(size) = match keyword {
            "cmpxchg_64" => Some(Size::Dw),
            "cmpxchg32_32" => Some(Size::W),
            _ => None,
        } {
            self.expect("(")?;
            let (mem, off) = self.address()?;
            self.expect(",")?;
            let cmp = self.reg()?;
            self.expect(",")?;
            let src = self.reg()?;
            self.expect(")")?;
            if dst.n != 0 || cmp.n != 0 {
                return self.err("cmpxchg compares with and writes r0");
            }
            return atomic(self.line, size, AtomicOp::CmpXchg, true, mem, src.n, off);
        }
        // A map reference: `name ll`, `name + 0x10 ll`, `map[3] ll`.
        let map = if name == "map" && self.peek_is("[") {
            self.pos += 1;
            let m: u32 = self.ranged("map index")?;
            self.expect("]")?;
            m
        } else {
            match self.names.map_index(name) {
                Some(m) => m,
                None if self.peek_is("ll") || self.peek_is("+") => {
                    return self.err(format!("unknown map `{name}`"))
                }
                None => return self.err(format!("expected register, found `{name}`")),
            }
        };
        let offset = if self.eat("+") {
            Some(self.ranged::<u32>("map value offset")?)
        } else {
            None
        };
        if !self.eat("ll") {
            return self.expected("`ll`");
        }
        if !dst.wide {
            return self.err("64-bit immediate load into a 32-bit register");
        }
        Ok(Instruction::LoadImm64 {
            dst: dst.n,
            imm: match offset {
                None => Imm64::Map(map),
                Some(offset) => Imm64::MapValue { map, offset },
            },
        })
    }
}

fn cond_of(text: &str) -> Option<Cond> {
    Cond::ALL.into_iter().find(|c| cond_symbol(*c) == text)
}

fn atomic(
    line: usize,
    size: Size,
    op: AtomicOp,
    fetch: bool,
    dst: u8,
    src: u8,
    off: i16,
) -> Result<Instruction, AsmError> {
    if !matches!(size, Size::W | Size::Dw) {
        return Err(AsmError::new(
            line,
            "atomic operations are 32 or 64 bits wide",
        ));
    }
    Ok(Instruction::Atomic {
        size,
        op,
        fetch,
        dst,
        src,
        off,
    })
}

/// Strips llvm's trailing `<symbol+0x20>` annotation of jumps and calls.
fn strip_annotation(text: &str) -> &str {
    let is_branch = ["goto", "gotol", "may_goto", "if", "call"]
        .iter()
        .any(|k| text.starts_with(k));
    if is_branch && text.ends_with('>') {
        if let Some(i) = text.rfind(" <") {
            return text[..i].trim_end();
        }
    }
    text
}

/// `.raw 87 01 00 00 f9 ff ff ff`.
fn parse_raw(line: usize, rest: &str) -> Result<Instruction, AsmError> {
    let mut bytes = Vec::new();
    for tok in rest.split_whitespace() {
        match hex_pair(tok) {
            Some(b) if bytes.len() < 16 => bytes.push(b),
            _ => {
                return Err(AsmError::new(
                    line,
                    format!("expected a hex byte, found `{tok}`"),
                ))
            }
        }
    }
    if bytes.len() != 8 && bytes.len() != 16 {
        return Err(AsmError::new(line, "`.raw` takes 8 or 16 bytes"));
    }
    decode_bytes(line, &bytes)
}

fn parse_text(
    line: usize,
    text: &str,
    names: &(impl MapNames + ?Sized),
) -> Result<Parsed, AsmError> {
    if let Some(rest) = text.strip_prefix(".raw") {
        if rest.is_empty() || rest.starts_with(char::is_whitespace) {
            return Ok(Parsed {
                insn: parse_raw(line, rest)?,
                target: Target::None,
                lossy_pseudo: false,
            });
        }
    }
    let toks = tokenize(line, strip_annotation(text))?;
    let mut p = Parser {
        line,
        toks,
        pos: 0,
        names,
    };
    p.statement()
}
