//! Rewriting the instructions of a program's entry function inside its object: the drop-in `.o`
//! `linerate optimize` writes (and the P4 compiler's output shares the writer).
//!
//! A [`Replacement`] gives the entry function's new slots in the *linked* encoding a
//! [`Program`](crate::Program) has, and where each old slot went. [`rewrite_object`] writes the
//! input object with those slots in place and everything that addresses instructions kept
//! consistent; every other byte of the file stays as it was (an identity replacement gives the
//! input back byte for byte):
//!
//! * **Pinned slots** ([`pinned_slots`]) are those whose linked form the writer cannot turn back
//!   into the file's: slots with a relocation (both halves of a relocated `ld_imm64`: map, global
//!   data, function address, kconfig and kfunc references), bpf-to-bpf calls, and CO-RE-relocated
//!   slots. A replacement must keep them, unchanged; the writer emits their *original* section
//!   bytes, so resolved immediates (map indices, linked call offsets, the running kernel's CO-RE
//!   values) never leak into the file.
//! * **What follows moves.** Functions after the entry function in its section move by the
//!   change in length: their symbols, the relocations on them, the calls and function-address
//!   loads that reach them (pc-relative calls crossing the change, relocated ones through the
//!   symbol and the immediate), and their `.BTF.ext` records.
//! * **Symbols** inside the entry function keep their instruction (or, removed, go to the next
//!   kept one); the entry function's symbol size is its new length.
//! * **`.BTF.ext`** (`func_info`, `line_info`, CO-RE relocations) follow their instructions. A
//!   `line_info` record of a removed slot moves to the next kept slot of the entry function when
//!   no record starts there, and is dropped otherwise; the record of the function's first slot
//!   stays on the first slot (the kernel wants one there) when slots are inserted before it or
//!   it is removed. The relocations of `.rel.BTF.ext` follow their records.
//! * DWARF (`.debug_*`) is kept byte for byte: its addresses inside the rewritten function and
//!   after it are stale, which no loader reads (libbpf and the kernel use BTF).
//!
//! Replacements are applied one after another, each on the object the previous one wrote, which
//! leaves every other program's linked form unchanged. A replacement's slot map must keep the
//! order of the slots it keeps (records are sorted by instruction).

use std::collections::HashMap;

use crate::btf_ext::BtfExtError;
use crate::elf_file::{ElfFile, ElfFileError};
use crate::insn::{pseudo, RawInsn};
use crate::object::read_object;

mod apply;

/// New instructions for one program's entry function.
#[derive(Clone, Copy, Debug)]
pub struct Replacement<'a> {
    /// The program (its entry function's symbol name, = `Program.name`).
    pub program: &'a str,
    /// The entry function's new slots, in the linked program's encoding (`Program.insns`
    /// conventions: map references as the linked program has them).
    pub insns: &'a [RawInsn],
    /// For each old slot of the entry function (`0..functions[0].len`), its new slot, or `None`
    /// where it was removed. Jumps inside `insns` are already correct for the new layout.
    pub slot_map: &'a [Option<usize>],
}

/// Why an object could not be rewritten.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RewriteError {
    #[error(transparent)]
    Elf(#[from] ElfFileError),
    /// The object does not read as programs.
    #[error("{0}")]
    Object(String),
    #[error("no program `{0}` in the object")]
    UnknownProgram(String),
    /// The replacement of a program is inconsistent (the message names the slot).
    #[error("program `{program}`: {message}")]
    Replacement { program: String, message: String },
    /// Something the writer must adjust is malformed.
    #[error("{0}")]
    Malformed(String),
    #[error("cannot adjust .BTF.ext: {0}")]
    BtfExt(#[from] BtfExtError),
}

/// `SHF_EXECINSTR`.
const SHF_EXECINSTR: u64 = 0x4;
/// `SHT_PROGBITS`.
const SHT_PROGBITS: u32 = 1;
/// `STT_FUNC`, the low nibble of `st_info`.
const STT_FUNC: u8 = 2;
/// `STT_SECTION`.
const STT_SECTION: u8 = 3;
/// `BPF_JMP | BPF_CALL`.
const CALL_OPCODE: u8 = 0x85;

/// Where a program's entry function is in its object, and what a rewrite must keep.
struct Located {
    /// The code section.
    section: usize,
    /// First slot of the entry function in the section, and its length.
    start: usize,
    len: usize,
    /// The section's slots as in the file.
    code: Vec<RawInsn>,
    /// The entry function's slots as linked.
    linked: Vec<RawInsn>,
    /// Which entry-function slots start a two-slot `ld_imm64`.
    wide: Vec<bool>,
    /// Pinned entry-function slots, sorted.
    pinned: Vec<usize>,
}

fn is_code(file: &ElfFile, index: usize) -> bool {
    let s = &file.sections[index];
    s.sh_type == SHT_PROGBITS && s.flags & SHF_EXECINSTR != 0
}

/// The code section of `name` the `.BTF.ext` records of that name apply to (the first one, as
/// the reader takes it).
fn code_section_named(file: &ElfFile, name: &str) -> Option<usize> {
    (1..file.sections.len()).find(|&i| is_code(file, i) && file.sections[i].name == name)
}

fn locate(bytes: &[u8], file: &ElfFile, program: &str) -> Result<Located, RewriteError> {
    let object = read_object(bytes, "object").map_err(|e| RewriteError::Object(e.to_string()))?;
    let prog = object
        .programs
        .iter()
        .find(|p| p.name == program)
        .ok_or_else(|| RewriteError::UnknownProgram(program.to_string()))?;
    let len = prog.functions.first().map_or(0, |f| f.len);
    let malformed = |what: String| RewriteError::Malformed(format!("program `{program}`: {what}"));
    let symbols = file.symbols();
    let by_symbol = symbols.iter().find_map(|s| {
        let sec = usize::from(s.shndx);
        let found = s.info & 0xf == STT_FUNC
            && sec < file.sections.len()
            && is_code(file, sec)
            && file.sections[sec].name == prog.section
            && file.symbol_name(s) == Some(program);
        found.then_some((sec, s.value))
    });
    let (section, value) = match by_symbol {
        Some(found) => found,
        None => (
            code_section_named(file, &prog.section)
                .ok_or_else(|| malformed(format!("no code section {}", prog.section)))?,
            0,
        ),
    };
    let code = RawInsn::parse_all(&file.sections[section].data)
        .ok_or_else(|| malformed("section size is not a multiple of 8".into()))?;
    let start = usize::try_from(value / 8).unwrap_or(usize::MAX);
    if value % 8 != 0 || start.checked_add(len).is_none_or(|end| end > code.len()) {
        return Err(malformed(format!(
            "entry function at byte {value:#x} ({len} slots) is not inside its section"
        )));
    }
    let linked = prog.insns.get(..len).unwrap_or_default().to_vec();
    let mut wide = vec![false; len];
    let mut pinned = vec![false; len];
    let mut pin = |i: usize, wide_at: &[bool]| {
        pinned[i] = true;
        if wide_at[i] && i + 1 < len {
            pinned[i + 1] = true;
        }
    };
    let mut i = 0;
    while i < len {
        let raw = code[start + i];
        wide[i] = raw.is_wide();
        i += if wide[i] { 2 } else { 1 };
    }
    for i in 0..len {
        let raw = code[start + i];
        let call = raw.code == CALL_OPCODE && matches!(raw.src, pseudo::CALL | pseudo::KFUNC_CALL);
        if call || (wide[i] && raw.src != 0) {
            pin(i, &wide);
        }
    }
    if let Some(rel_sec) = file.rel_section_of(section) {
        for rel in file.rels(rel_sec) {
            let slot = rel.offset / 8;
            if let Some(i) = slot.checked_sub(start as u64).filter(|&i| i < len as u64) {
                pin(i as usize, &wide);
            }
        }
    }
    if let Some(ext) = object.btf.as_ref().map(|b| &b.ext) {
        let first = code_section_named(file, &prog.section);
        for relo in &ext.core_relos {
            if relo.section == prog.section && first == Some(section) {
                if let Some(i) = relo.insn.checked_sub(start).filter(|&i| i < len) {
                    pin(i, &wide);
                }
            }
        }
    }
    Ok(Located {
        section,
        start,
        len,
        code,
        linked,
        wide,
        pinned: (0..len).filter(|&i| pinned[i]).collect(),
    })
}

/// Slots of the entry function of `program` that a rewrite must keep unchanged (same encoding)
/// and present in `slot_map`: relocated slots (both halves of a relocated `ld_imm64`), calls to
/// other functions and kfuncs, function-address loads, global data references, CO-RE-relocated
/// slots. Sorted.
pub fn pinned_slots(object_bytes: &[u8], program: &str) -> Result<Vec<usize>, RewriteError> {
    let file = ElfFile::parse(object_bytes)?;
    Ok(locate(object_bytes, &file, program)?.pinned)
}

/// The object with each replacement applied (see the module documentation). Errors, on one line
/// naming the program and slot, on a pinned slot removed or changed, a slot map inconsistent
/// with the instructions, an unknown program or one replaced twice.
pub fn rewrite_object(
    object_bytes: &[u8],
    replacements: &[Replacement],
) -> Result<Vec<u8>, RewriteError> {
    let mut seen = HashMap::new();
    for r in replacements {
        if seen.insert(r.program, ()).is_some() {
            return Err(RewriteError::Replacement {
                program: r.program.to_string(),
                message: "replaced twice".into(),
            });
        }
    }
    let mut bytes = object_bytes.to_vec();
    for r in replacements {
        let mut file = ElfFile::parse(&bytes)?;
        let at = locate(&bytes, &file, r.program)?;
        let moves = check(&at, r)?;
        apply::apply(&mut file, &at, r, &moves)?;
        bytes = file.to_bytes();
    }
    Ok(bytes)
}

/// How the slots of the entry function's section move.
struct SlotMoves {
    start: usize,
    old_len: usize,
    new_len: usize,
    /// New function-relative slot of each old one.
    map: Vec<Option<usize>>,
    /// New function-relative slot of the first kept slot at or after each old one (`new_len`
    /// when none is).
    next: Vec<usize>,
}

impl SlotMoves {
    /// The new section slot of old section slot `s`; `None` if it was removed.
    fn exact(&self, s: usize) -> Option<usize> {
        if s < self.start {
            Some(s)
        } else if s - self.start < self.old_len {
            self.map[s - self.start].map(|n| self.start + n)
        } else {
            Some(s - self.old_len + self.new_len)
        }
    }

    /// Where a call or function-address load reaching old slot `s` lands: the entry function's
    /// first slot stays its first slot whatever is inserted before or removed from it.
    fn target(&self, s: usize) -> Option<usize> {
        if s == self.start {
            Some(s)
        } else {
            self.exact(s)
        }
    }

    /// The new section slot of old slot `s`, or of the next kept slot of the entry function.
    fn next_kept(&self, s: usize) -> usize {
        if s <= self.start {
            s
        } else if s - self.start < self.old_len {
            self.start + self.next[s - self.start]
        } else {
            s - self.old_len + self.new_len
        }
    }
}

/// Checks replacement `r` against the located function and returns how slots move.
fn check(at: &Located, r: &Replacement) -> Result<SlotMoves, RewriteError> {
    let err = |message: String| RewriteError::Replacement {
        program: r.program.to_string(),
        message,
    };
    if r.slot_map.len() != at.len {
        return Err(err(format!(
            "slot_map has {} entries, the entry function {} slots",
            r.slot_map.len(),
            at.len
        )));
    }
    let mut last: Option<(usize, usize)> = None;
    let mut image = vec![None; r.insns.len()];
    for (i, &new) in r.slot_map.iter().enumerate() {
        let Some(n) = new else { continue };
        if n >= r.insns.len() {
            return Err(err(format!(
                "old slot {i} maps to new slot {n}, past the {} new slots",
                r.insns.len()
            )));
        }
        if let Some((li, ln)) = last.filter(|&(_, ln)| ln >= n) {
            return Err(err(format!(
                "slot_map does not keep the order of slots: old slot {li} goes to {ln}, old slot \
                 {i} to {n}"
            )));
        }
        last = Some((i, n));
        image[n] = Some(i);
    }
    for &i in &at.pinned {
        let Some(n) = r.slot_map[i] else {
            return Err(err(format!("pinned slot {i} is removed")));
        };
        if r.insns[n] != at.linked[i] {
            return Err(err(format!(
                "pinned slot {i} (new slot {n}) is changed: {:?} became {:?}",
                at.linked[i], r.insns[n]
            )));
        }
    }
    for i in (0..at.len).filter(|&i| at.wide[i]) {
        let (a, b) = (r.slot_map[i], r.slot_map.get(i + 1).copied().flatten());
        let split = match (a, b) {
            (None, None) => false,
            (Some(a), Some(b)) => b != a + 1,
            _ => true,
        };
        if split {
            return Err(err(format!(
                "old slots {i} and {} (a 64-bit immediate load) are not kept together",
                i + 1
            )));
        }
    }
    let pinned_image: Vec<bool> = image
        .iter()
        .map(|old| old.is_some_and(|i| at.pinned.binary_search(&i).is_ok()))
        .collect();
    let mut j = 0;
    while j < r.insns.len() {
        let raw = r.insns[j];
        let reference = raw.src != 0 && (raw.code == CALL_OPCODE || raw.is_wide());
        if reference && !pinned_image[j] {
            return Err(err(format!(
                "new slot {j} refers to a function, map or kfunc but is not a pinned slot kept \
                 in place: the writer has no relocation for it"
            )));
        }
        j += if raw.is_wide() && pinned_image[j] {
            2
        } else {
            1
        };
    }
    let mut next = vec![r.insns.len(); at.len + 1];
    for i in (0..at.len).rev() {
        next[i] = r.slot_map[i].unwrap_or(next[i + 1]);
    }
    next.pop();
    Ok(SlotMoves {
        start: at.start,
        old_len: at.len,
        new_len: r.insns.len(),
        map: r.slot_map.to_vec(),
        next,
    })
}
