//! Reading a whole `llvm-objdump -d` listing of an object file into an [`Object`].
//!
//! Users sometimes have only the disassembly of a program (from a bug report, a CI log, another
//! machine). [`read_objdump_text`] rebuilds what [`crate::program`] describes from it: one
//! [`Program`] per function symbol of every disassembled section except `.text`, linked exactly as
//! libbpf (and [`crate::object`]) links an object: the entry function first, then every function it
//! calls, directly or transitively, appended once, depth first in order of first use, with each
//! call's offset fixed up. When the listing has no section but `.text`, the `.text`
//! functions no other function calls are the programs.
//!
//! How much of the object a listing describes depends on the flags it was made with:
//!
//! - With `-r` (`llvm-objdump -dr`), a relocation line follows each instruction the linker must
//!   patch. `R_BPF_64_64 <symbol>` on a 64-bit load makes it a map reference: a [`MapDef`] is created
//!   per symbol, with [`MapOrigin::Legacy`], map type 0 and sizes 0 (the listing does not say them),
//!   and the load becomes [`Imm64::Map`]; symbols starting with `.` (`.rodata`, `.data`, `.bss`,
//!   ...) are global-data sections and become [`MapOrigin::GlobalData`] array maps addressed with
//!   [`Imm64::MapValue`], the load's constant being the offset. `R_BPF_64_32 <symbol>` on a call
//!   names the called function (`.text` for a static one, whose target is then slot `imm + 1` of
//!   `.text`; a function symbol's own offset otherwise). `R_BPF_64_64` against a code section or a
//!   function (a `bpf_loop` callback) makes the load a function address (`BPF_PSEUDO_FUNC`),
//!   whose function is linked in like a called one. Global-data maps are named as libbpf names
//!   them (`crate::object::internal_map_name`).
//! - With `-t` as well (`llvm-objdump -drt`), the symbol table says which symbols are global
//!   variables: a variable in a data section becomes a reference into that section's global-data
//!   map at the variable's offset, and maps of the `.maps` section get [`MapOrigin::Btf`].
//! - **Without raw bytes** (`--no-show-raw-insn`) llvm prints a BPF-to-BPF call like a helper
//!   call (`call 13`): one with an `R_BPF_64_32` relocation is taken as the BPF-to-BPF call it
//!   is, but a call between static functions of `.text`, which has no relocation, reads as a
//!   helper call. Listings of programs with such calls need the raw bytes.
//! - **Without `-r`, map loads stay `Imm64::Const(0)`** — nothing in the text says which map they
//!   load — and a call from a program section to `.text` is recognised only by convention: a
//!   BPF-to-BPF call without relocation in a section other than `.text` is taken to be relative to
//!   the start of `.text` (clang emits no other kind there). A call with offset -1 is an unresolved
//!   call to a global function, which cannot be followed without `-r` and is an error.
//! - A pseudo load of a map file descriptor (`ld_pseudo r1, 1, 4` — what bcc-generated dumps and
//!   listings of programs read back from the kernel carry instead of a relocation) becomes a
//!   reference to a map named `map_fd_4`, one per descriptor, made like a relocation's map above;
//!   `ld_pseudo r1, 2, 4, 8` (a map value) addresses offset 8 of that map's value.
//!
//! Where a line carries raw instruction bytes, they alone give the instruction: its text is not
//! read (releases print some instructions differently, and some lossily). Listings of every
//! llvm-objdump release from LLVM 8 on are read: the `releases` module first rewrites the forms
//! older releases print into the newer ones.
//!
//! The license and map attributes are not part of a listing: [`Object::license`] is `None`.

use std::collections::{HashMap, HashSet};

use crate::asm::{parse_listing, relocated_load, AsmError, Bytes, Line, Listing, Section};
use crate::disasm::NoNames;
use crate::insn::{encode_all, pseudo, CallTarget, Imm64, Instruction};
use crate::object::internal_map_name;
use crate::program::{Function, MapDef, MapOrigin, MapType, Object, Program};

mod releases;

/// Reads a whole `llvm-objdump -d` (or `-dr`, `-drt`, `-dS`) listing into an [`Object`] named
/// `name`. See the module documentation for what is recovered and the limits without `-r`.
pub fn read_objdump_text(text: &str, name: &str) -> Result<Object, AsmError> {
    let listing = parse_listing(&releases::normalize(text), &NoNames, Bytes::Rule)?;
    let mut linker = Linker::new(&listing, name);
    let mut roots: Vec<(usize, usize)> = Vec::new();
    for (si, sec) in listing.sections.iter().enumerate() {
        if sec.name != ".text" {
            for l in sec.labels.iter().filter(|l| l.function) {
                roots.push((si, l.slot));
            }
        }
    }
    if roots.is_empty() {
        // An object whose only code is `.text`: its uncalled functions are the programs.
        if let Some(si) = listing.sections.iter().position(|s| s.name == ".text") {
            let mut called = HashSet::new();
            for l in listing.sections[si].labels.iter().filter(|l| l.function) {
                for (_, target) in linker.calls_of((si, l.slot))? {
                    called.insert(target);
                }
            }
            for l in listing.sections[si].labels.iter().filter(|l| l.function) {
                if !called.contains(&(si, l.slot)) {
                    roots.push((si, l.slot));
                }
            }
        }
    }
    let mut programs = Vec::new();
    let mut seen = HashSet::new();
    for root in roots {
        if seen.insert(root) {
            programs.push(linker.link(root)?);
        }
    }
    Ok(Object {
        name: name.to_string(),
        programs,
        maps: linker.maps,
        license: None,
        kfuncs: Vec::new(),
        btf: None,
    })
}

/// A function: (section index, start slot).
type FuncId = (usize, usize);

struct Linker<'a> {
    object_name: String,
    listing: &'a Listing,
    maps: Vec<MapDef>,
    has_relocs: bool,
    /// Name and length of every function.
    functions: HashMap<FuncId, (String, usize)>,
    /// Function symbols by name (the `.text` one when a name is in several sections).
    symbols: HashMap<String, FuncId>,
    /// Index into its section's relocations of the relocation of (section, slot).
    relocs: HashMap<(usize, usize), usize>,
}

impl<'a> Linker<'a> {
    fn new(listing: &'a Listing, object_name: &str) -> Linker<'a> {
        let mut functions = HashMap::new();
        let mut symbols: HashMap<String, FuncId> = HashMap::new();
        let mut relocs = HashMap::new();
        for (si, sec) in listing.sections.iter().enumerate() {
            let mut labels: Vec<_> = sec.labels.iter().filter(|l| l.function).collect();
            labels.sort_by_key(|l| l.slot);
            for (i, l) in labels.iter().enumerate() {
                let end = labels
                    .get(i + 1..)
                    .unwrap_or_default()
                    .iter()
                    .map(|l| l.slot)
                    .find(|s| *s > l.slot)
                    .unwrap_or(sec.slots);
                functions
                    .entry((si, l.slot))
                    .or_insert_with(|| (l.name.clone(), end - l.slot));
                let keep = symbols.get(&l.name).is_some_and(|f| {
                    sec.name != ".text"
                        || listing.sections.get(f.0).is_some_and(|s| s.name == ".text")
                });
                if !keep {
                    symbols.insert(l.name.clone(), (si, l.slot));
                }
            }
            for (i, r) in sec.relocs.iter().enumerate() {
                relocs.entry((si, r.slot)).or_insert(i);
            }
        }
        Linker {
            object_name: object_name.to_string(),
            listing,
            maps: Vec::new(),
            has_relocs: listing.sections.iter().any(|s| !s.relocs.is_empty()),
            functions,
            symbols,
            relocs,
        }
    }
}

impl Linker<'_> {
    fn section(&self, f: FuncId) -> &Section {
        &self.listing.sections[f.0]
    }

    /// The function starting at `f`: its name and length in slots.
    fn function(&self, f: FuncId) -> Option<(String, usize)> {
        self.functions.get(&f).cloned()
    }

    fn reloc(&self, f: FuncId, slot: usize) -> Option<&crate::asm::Reloc> {
        let i = *self.relocs.get(&(f.0, slot))?;
        self.section(f).relocs.get(i)
    }

    /// Finds a function symbol by name, preferring `.text`.
    fn symbol(&self, name: &str) -> Option<FuncId> {
        self.symbols.get(name).copied()
    }

    /// The instruction lines of function `f` (instructions are sorted by slot).
    fn lines(&self, f: FuncId) -> &[Line] {
        let len = self.function(f).map_or(0, |x| x.1);
        let insns = &self.section(f).insns;
        let from = insns.partition_point(|l| l.slot < f.1);
        let to = insns.partition_point(|l| l.slot < f.1 + len);
        insns.get(from..to).unwrap_or_default()
    }

    /// Every BPF-to-BPF call of function `f`: (slot of the call, called function).
    fn calls_of(&self, f: FuncId) -> Result<Vec<(usize, FuncId)>, AsmError> {
        let sec = self.section(f);
        let text = self.listing.sections.iter().position(|s| s.name == ".text");
        let mut out = Vec::new();
        for line in self.lines(f) {
            let err = |msg: String| AsmError::new(line.line, msg);
            if let Some(target) = self.function_address(f, line)? {
                out.push((line.slot, target));
                continue;
            }
            let relocated = self
                .reloc(f, line.slot)
                .is_some_and(|r| r.kind == "R_BPF_64_32");
            let imm = match line.insn {
                Instruction::Call(CallTarget::Local(imm)) => imm,
                // Without raw bytes llvm prints a BPF-to-BPF call like a helper call; its
                // relocation says which it is.
                Instruction::Call(CallTarget::Helper(id)) if relocated => id as i32,
                _ => continue,
            };
            let (tsec, tslot) = match self.reloc(f, line.slot) {
                Some(r) if r.kind == "R_BPF_64_32" => {
                    let (tsec, base) = if r.symbol == ".text" {
                        (text.ok_or_else(|| err("call into `.text`, which is not listed".into()))?, 0)
                    } else {
                        self.symbol(&r.symbol).ok_or_else(|| {
                            err(format!("call to `{}`, which is not listed", r.symbol))
                        })?
                    };
                    (tsec, base as i64 + imm as i64 + 1)
                }
                _ if !self.has_relocs && imm == -1 => {
                    return Err(err(
                        "call to a global function; list the object with `llvm-objdump -dr` to follow it"
                            .into(),
                    ))
                }
                _ if !self.has_relocs && sec.name != ".text" => (
                    text.ok_or_else(|| err("call into `.text`, which is not listed".into()))?,
                    imm as i64 + 1,
                ),
                _ => (f.0, line.slot as i64 + imm as i64 + 1),
            };
            let target = usize::try_from(tslot)
                .ok()
                .map(|s| (tsec, s))
                .filter(|t| self.function(*t).is_some())
                .ok_or_else(|| err("call target is not the start of a function".into()))?;
            out.push((line.slot, target));
        }
        Ok(out)
    }

    /// The function whose address a relocated 64-bit load of function `f` loads (`bpf_loop`
    /// callbacks): an `R_BPF_64_64` relocation against a code section or function symbol, the
    /// load's constant being the byte offset from it.
    fn function_address(&self, f: FuncId, line: &Line) -> Result<Option<FuncId>, AsmError> {
        let Instruction::LoadImm64 {
            imm: Imm64::Const(v),
            ..
        } = line.insn
        else {
            return Ok(None);
        };
        let Some(r) = self.reloc(f, line.slot).filter(|r| r.kind == "R_BPF_64_64") else {
            return Ok(None);
        };
        let base = match self
            .listing
            .sections
            .iter()
            .position(|s| s.name == r.symbol)
        {
            Some(si) => (si, 0),
            None => match self.symbol(&r.symbol) {
                Some(found) => found,
                None => return Ok(None),
            },
        };
        let target = v
            .checked_add(base.1 as u64 * 8)
            .filter(|b| b % 8 == 0)
            .and_then(|b| usize::try_from(b / 8).ok())
            .map(|slot| (base.0, slot))
            .filter(|t| self.function(*t).is_some())
            .ok_or_else(|| {
                AsmError::new(line.line, "function address is not the start of a function")
            })?;
        Ok(Some(target))
    }

    /// The index of the map for relocation symbol `symbol`, and the offset to add into it.
    fn map_for(&mut self, symbol: &str) -> (u32, u64) {
        let sym = self
            .listing
            .symbols
            .iter()
            .find(|s| s.name == symbol && !s.section.is_empty());
        let (name, origin, base) = match sym {
            Some(s) if is_data_section(&s.section) => (
                internal_map_name(&self.object_name, &s.section),
                MapOrigin::GlobalData {
                    section: s.section.clone(),
                    read_only: s.section.starts_with(".rodata"),
                },
                s.value,
            ),
            Some(s) if s.section == ".maps" => (symbol.to_string(), MapOrigin::Btf, 0),
            _ if symbol.starts_with('.') => (
                internal_map_name(&self.object_name, symbol),
                MapOrigin::GlobalData {
                    section: symbol.to_string(),
                    read_only: symbol.starts_with(".rodata"),
                },
                0,
            ),
            _ => (symbol.to_string(), MapOrigin::Legacy, 0),
        };
        if let Some(i) = self.maps.iter().position(|m| m.name == name) {
            return (i as u32, base);
        }
        let global = matches!(origin, MapOrigin::GlobalData { .. });
        let section = match &origin {
            MapOrigin::GlobalData { section, .. } => section.clone(),
            _ => String::new(),
        };
        let value_size = if global {
            self.listing
                .symbols
                .iter()
                .filter(|s| s.section == section)
                .map(|s| s.value.saturating_add(s.size))
                .max()
                .unwrap_or(0)
        } else {
            0
        };
        self.maps.push(MapDef {
            name,
            map_type: if global { MapType::ARRAY } else { MapType(0) },
            key_size: if global { 4 } else { 0 },
            value_size: u32::try_from(value_size).unwrap_or(u32::MAX),
            max_entries: if global { 1 } else { 0 },
            flags: 0,
            origin,
            initial_value: None,
            initial_programs: Vec::new(),
            inner: None,
            spin_lock: None,
        });
        ((self.maps.len() - 1) as u32, base)
    }

    /// Links the program whose entry function starts at `root`.
    fn link(&mut self, root: FuncId) -> Result<Program, AsmError> {
        // The functions in link order, and where each starts in the linked program.
        // Depth first in order of first use, as libbpf (and `crate::object`) append them.
        let mut order = vec![root];
        let mut placed = HashSet::from([root]);
        let mut stack = vec![(self.calls_of(root)?, 0usize)];
        while let Some((calls, next)) = stack.last_mut() {
            let Some(&(_, target)) = calls.get(*next) else {
                stack.pop();
                continue;
            };
            *next += 1;
            if placed.insert(target) {
                order.push(target);
                stack.push((self.calls_of(target)?, 0));
            }
        }
        let mut starts: HashMap<FuncId, usize> = HashMap::new();
        let mut functions = Vec::new();
        let mut next = 0;
        for f in &order {
            let (name, len) = self.function(*f).unwrap_or_default();
            starts.insert(*f, next);
            functions.push(Function {
                name,
                start: next,
                len,
            });
            next += len;
        }
        let mut insns = Vec::new();
        for (fi, f) in order.iter().enumerate() {
            let calls: HashMap<usize, FuncId> = self.calls_of(*f)?.into_iter().collect();
            let base = functions[fi].start;
            let lines = self.lines(*f).to_vec();
            for line in lines {
                let at = base + (line.slot - f.1);
                let mut insn = line.insn;
                if let Some(target) = calls.get(&line.slot) {
                    let t = starts.get(target).copied().unwrap_or(0);
                    let off = i32::try_from(t as i64 - at as i64 - 1)
                        .map_err(|_| AsmError::new(line.line, "call offset out of range"))?;
                    insn = match insn {
                        Instruction::LoadImm64 { dst, .. } => Instruction::LoadImm64 {
                            dst,
                            imm: Imm64::Pseudo {
                                src: pseudo::FUNC,
                                imm: off,
                                next_imm: 0,
                            },
                        },
                        _ => Instruction::Call(CallTarget::Local(off)),
                    };
                } else if let Some(r) = self.reloc(*f, line.slot) {
                    if r.kind == "R_BPF_64_64" {
                        let symbol = r.symbol.clone();
                        let (map, add) = self.map_for(&symbol);
                        insn = add_offset(insn, add)
                            .and_then(|i| relocated_load(i, map))
                            .ok_or_else(|| {
                                AsmError::new(line.line, "map relocation of a non-constant load")
                            })?;
                        if let (
                            Instruction::LoadImm64 {
                                dst,
                                imm: Imm64::Map(m),
                            },
                            true,
                        ) = (insn, self.is_global(map))
                        {
                            insn = Instruction::LoadImm64 {
                                dst,
                                imm: Imm64::MapValue { map: m, offset: 0 },
                            };
                        }
                    }
                } else {
                    insn = self.fd_map_load(insn);
                }
                insns.push(insn);
            }
        }
        let entry = functions.first().cloned().unwrap_or(Function {
            name: String::new(),
            start: 0,
            len: 0,
        });
        Ok(Program {
            name: entry.name,
            section: self.section(root).name.clone(),
            insns: encode_all(&insns),
            functions,
            func_info: Vec::new(),
            line_info: Vec::new(),
        })
    }

    /// A pseudo load of a map file descriptor as a reference to the map named after it.
    fn fd_map_load(&mut self, insn: Instruction) -> Instruction {
        let Instruction::LoadImm64 {
            dst,
            imm: Imm64::Pseudo { src, imm, next_imm },
        } = insn
        else {
            return insn;
        };
        if src != pseudo::MAP_FD && src != pseudo::MAP_VALUE {
            return insn;
        }
        let (map, _) = self.map_for(&format!("map_fd_{}", imm as u32));
        Instruction::LoadImm64 {
            dst,
            imm: if src == pseudo::MAP_FD {
                Imm64::Map(map)
            } else {
                Imm64::MapValue {
                    map,
                    offset: next_imm as u32,
                }
            },
        }
    }

    fn is_global(&self, map: u32) -> bool {
        self.maps
            .get(map as usize)
            .is_some_and(|m| matches!(m.origin, MapOrigin::GlobalData { .. }))
    }
}

/// Adds `add` to the constant of a 64-bit load.
fn add_offset(insn: Instruction, add: u64) -> Option<Instruction> {
    match insn {
        Instruction::LoadImm64 {
            dst,
            imm: Imm64::Const(v),
        } => Some(Instruction::LoadImm64 {
            dst,
            imm: Imm64::Const(v.checked_add(add)?),
        }),
        _ => None,
    }
}

fn is_data_section(s: &str) -> bool {
    [".rodata", ".data", ".bss"]
        .iter()
        .any(|p| s == *p || s.strip_prefix(p).is_some_and(|r| r.starts_with('.')))
}
