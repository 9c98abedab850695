//! Writing a BPF ELF object from scratch: the `.o` the P4 compiler emits, which libbpf, the
//! kernel loader of `linerate run --kernel` and linerate's own reader take like one clang wrote.
//! (Rewriting an existing object is [`crate::rewrite`]'s job; both write through
//! [`ElfFile`].)
//!
//! An [`ObjectSpec`] names XDP programs as decoded [`Instruction`]s, the maps they use and the
//! license; [`write_object`] returns the object's bytes. A map reference is an `ld_imm64` of
//! [`Imm64::Map`]`(i)`, `i` an index into [`ObjectSpec::maps`], as in a linked
//! [`Program`](crate::Program).
//!
//! # ELF layout
//!
//! A little-endian 64-bit relocatable `EM_BPF` file, its sections in this order:
//!
//! * one code section per distinct [`ProgramSpec::section`] (`SHF_ALLOC | SHF_EXECINSTR`), in
//!   order of first use, holding its programs back to back, each a global `STT_FUNC` symbol
//!   sized to its code. Sections must start with `xdp` (`xdp`, `xdp.frags`, ...): the BTF below
//!   gives each program an `xdp_md` context. libbpf 1.x takes exactly `xdp` (and `xdp.frags`) as
//!   XDP, so [`ProgramSpec::xdp`] puts every program in `xdp`;
//! * `license`: the license string and its NUL;
//! * `.maps` (when there are maps): one zero-filled definition per map, each a global
//!   `STT_OBJECT` symbol named after the map, sized 8 bytes per member of its BTF struct;
//! * `.rel<section>` (`SHT_REL`) for each code section with map references: one `R_BPF_64_64`
//!   against the map's symbol per `ld_imm64`, whose immediates and `src_reg` are written 0, as
//!   clang writes them (loaders fill them in);
//! * `.BTF`, `.BTF.ext` (see below), `.symtab` (the null symbol, the programs, the maps: no
//!   local symbols) and `.strtab`, which holds the symbol names and is the section-name table
//!   too, as in clang's output.
//!
//! # BTF layout
//!
//! * Each map is a `VAR` (global, allocated) of an anonymous struct of pointer members, libbpf's
//!   `__uint` / `__type` convention: `int (*type)[T]`, `K *key` and `V *value` (or `int
//!   (*key_size)[N]` / `int (*value_size)[N]` for the map types that refuse BTF keys and values:
//!   program, perf-event, device, CPU, socket and map-in-map maps, queues, stacks, stack traces;
//!   a member of size 0 is left out), `int (*max_entries)[N]` and, when not 0, `int
//!   (*map_flags)[N]`. `K` and `V` are unsigned integers where the size is 1, 2, 4 or 8 bytes
//!   (array maps demand a 32-bit integer key), else `unsigned char[N]`; an LPM trie's key is a
//!   struct `{ unsigned int prefixlen; unsigned char data[N - 4]; }`, the only key kind the
//!   kernel accepts for LPM tries. A value with a [`MapSpec::spin_lock`] is a struct of
//!   `unsigned char` arrays around a `struct bpf_spin_lock { unsigned int val; } lock` at its
//!   offset, where the kernel looks for the lock. Numbers are array lengths, so a map of `2^30` or more entries
//!   gives an array of `int` the kernel finds too large and refuses the BTF (as it does clang's).
//! * `DATASEC .maps` lists the variables with their real offsets and sizes and the section's
//!   size (clang leaves them 0 for the loader; written filled in, the section needs no fix-up).
//! * Each program is a global `FUNC` of the `FUNC_PROTO` `int (struct xdp_md *ctx)`, `struct
//!   xdp_md` given with its six `unsigned int` fields.
//! * `.BTF.ext` (32-byte header, CO-RE part empty) has one `func_info` record per program and
//!   the program's `line_info` records ([`ProgramSpec::lines`]), both per code section, offsets
//!   in bytes. A block without records is written with length 0 (libbpf refuses an empty one).
//!
//! # Errors
//!
//! [`write_object`] never panics: anything the writer cannot express, or that no loader would
//! take (bad or duplicate names, unknown map indices, jumps outside a program, bpf-to-bpf calls,
//! kfunc calls, global data, a license with a NUL), is an [`EmitError`] naming the program or
//! map.

mod type_info;

use std::collections::{HashMap, HashSet};

use object::elf;

use crate::elf_file::{ElfFile, FileLayout, Rel, Section, Symbol, SHT_REL, SHT_STRTAB, SHT_SYMTAB};
use crate::insn::{CallTarget, Imm64, Instruction, RawInsn};
use crate::object::R_BPF_64_64;
use crate::program::{MapDef, MapOrigin, MapType, Object};

use type_info::{BtfBuilder, LineRecord, SectionRecords, MAX_LINE};

/// What a written object holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectSpec {
    pub programs: Vec<ProgramSpec>,
    pub maps: Vec<MapSpec>,
    /// The `license` section's string (`GPL` lets programs call GPL-only helpers).
    pub license: String,
}

/// One XDP program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProgramSpec {
    /// The program's (function's) name: a C identifier.
    pub name: String,
    /// Its ELF section, `xdp` or starting with `xdp` (see the module documentation).
    pub section: String,
    /// The instructions; map references are `ld_imm64` of [`Imm64::Map`].
    pub insns: Vec<Instruction>,
    /// Source lines for `line_info`, by instruction index (not slot), strictly increasing, the
    /// first at instruction 0 (the kernel wants a line record on a program's first
    /// instruction); empty for none.
    pub lines: Vec<LineSpec>,
}

/// The source of the instructions from one on (a `line_info` record).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineSpec {
    /// Index into [`ProgramSpec::insns`].
    pub insn: usize,
    pub file: String,
    /// Line number, below 2^22.
    pub line: u32,
    /// Column; columns beyond 1023 (what a `line_info` record holds) are written as 1023.
    pub column: u32,
    /// The source line's text.
    pub text: String,
}

/// One map, written as a libbpf BTF-defined map.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MapSpec {
    /// The map's symbol and variable name: a C identifier.
    pub name: String,
    pub map_type: MapType,
    pub key_size: u32,
    pub value_size: u32,
    pub max_entries: u32,
    pub flags: u32,
    /// Byte offset of a `struct bpf_spin_lock` in the value, for maps whose programs take
    /// `bpf_spin_lock` on their values (a multiple of 4, the lock's 4 bytes inside the value).
    pub spin_lock: Option<u32>,
}

/// Why a spec cannot be written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EmitError {
    #[error("program `{program}`: {message}")]
    Program { program: String, message: String },
    #[error("map `{map}`: {message}")]
    Map { map: String, message: String },
    /// A problem of the object as a whole (license, size limits).
    #[error("{0}")]
    Object(String),
}

impl ObjectSpec {
    /// Programs and maps under the `GPL` license.
    pub fn new(programs: Vec<ProgramSpec>, maps: Vec<MapSpec>) -> ObjectSpec {
        ObjectSpec {
            programs,
            maps,
            license: "GPL".into(),
        }
    }

    /// The spec of an object read or built in linerate's model, so that it can be written anew:
    /// one-function programs and BTF-defined or legacy maps (written as BTF-defined), with the
    /// programs' source lines. Objects with sub-programs, kfuncs, global data, maps of maps or
    /// initialised program arrays are refused, naming the part.
    pub fn from_object(object: &Object) -> Result<ObjectSpec, EmitError> {
        let maps = object
            .maps
            .iter()
            .map(MapSpec::from_def)
            .collect::<Result<Vec<_>, _>>()?;
        let programs = object
            .programs
            .iter()
            .map(|p| {
                let error = |message: String| EmitError::Program {
                    program: p.name.clone(),
                    message,
                };
                if p.functions.len() > 1 {
                    return Err(error(
                        "has sub-programs, which the writer does not lay out".into(),
                    ));
                }
                let decoded = p.decode().map_err(|e| error(e.to_string()))?;
                let index_of: HashMap<usize, usize> = decoded
                    .iter()
                    .enumerate()
                    .map(|(index, &(slot, _))| (slot, index))
                    .collect();
                let lines = p
                    .line_info
                    .iter()
                    .filter_map(|l| {
                        Some(LineSpec {
                            insn: *index_of.get(&l.slot)?,
                            file: l.source.file.clone(),
                            line: l.source.line,
                            column: l.source.column,
                            text: l.source.text.clone(),
                        })
                    })
                    .collect();
                Ok(ProgramSpec {
                    name: p.name.clone(),
                    section: p.section.clone(),
                    insns: decoded.into_iter().map(|(_, insn)| insn).collect(),
                    lines,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ObjectSpec {
            programs,
            maps,
            license: object.license.clone().unwrap_or_else(|| "GPL".into()),
        })
    }
}

impl ProgramSpec {
    /// Program `name` of `insns` in section `xdp`, without source lines.
    pub fn xdp(name: &str, insns: Vec<Instruction>) -> ProgramSpec {
        ProgramSpec {
            name: name.into(),
            section: "xdp".into(),
            insns,
            lines: Vec::new(),
        }
    }

    fn error(&self, message: String) -> EmitError {
        EmitError::Program {
            program: self.name.clone(),
            message,
        }
    }
}

impl MapSpec {
    /// Map `name` with no flags.
    pub fn new(
        name: &str,
        map_type: MapType,
        key_size: u32,
        value_size: u32,
        max_entries: u32,
    ) -> MapSpec {
        MapSpec {
            name: name.into(),
            map_type,
            key_size,
            value_size,
            max_entries,
            flags: 0,
            spin_lock: None,
        }
    }

    /// The spec of a BTF-defined or legacy map of linerate's model.
    pub fn from_def(def: &MapDef) -> Result<MapSpec, EmitError> {
        let refuse = |what: &str| EmitError::Map {
            map: def.name.clone(),
            message: format!("{what} cannot be written"),
        };
        if matches!(def.origin, MapOrigin::GlobalData { .. }) {
            return Err(refuse("global data"));
        }
        if def.inner.is_some() {
            return Err(refuse("a map of maps"));
        }
        if !def.initial_programs.is_empty() {
            return Err(refuse("an initialised program array"));
        }
        Ok(MapSpec {
            name: def.name.clone(),
            map_type: def.map_type,
            key_size: def.key_size,
            value_size: def.value_size,
            max_entries: def.max_entries,
            flags: def.flags,
            spin_lock: def.spin_lock,
        })
    }

    fn error(&self, message: String) -> EmitError {
        EmitError::Map {
            map: self.name.clone(),
            message,
        }
    }
}

/// Most sections an ELF header counts without extended numbering (`SHN_LORESERVE`).
const MAX_SECTIONS: usize = 0xff00;
/// `SHF_INFO_LINK`: `sh_info` of a relocation section names the section it applies to.
const SHF_INFO_LINK: u64 = 0x40;

/// Whether `name` is a C identifier, what the kernel's BTF checks demand of function, variable
/// and member names (`btf_name_valid_identifier`).
fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A program's code as written: slots with map immediates zeroed, and the map references.
struct Encoded {
    slots: Vec<RawInsn>,
    /// Slot of each instruction.
    starts: Vec<usize>,
    /// `(slot, map index)` of each map reference.
    map_refs: Vec<(usize, usize)>,
}

fn encode_program(program: &ProgramSpec, map_count: usize) -> Result<Encoded, EmitError> {
    if program.insns.is_empty() {
        return Err(program.error("has no instructions".into()));
    }
    let mut encoded = Encoded {
        slots: Vec::new(),
        starts: Vec::with_capacity(program.insns.len()),
        map_refs: Vec::new(),
    };
    for (index, insn) in program.insns.iter().enumerate() {
        let at = |what: String| program.error(format!("instruction {index}: {what}"));
        let mut slots = insn.encode();
        if Instruction::decode(&slots, 0).as_ref() != Ok(insn) {
            return Err(at(format!("{insn:?} has no valid encoding")));
        }
        match *insn {
            Instruction::LoadImm64 { imm, .. } => match imm {
                Imm64::Const(_) => {}
                Imm64::Map(map) => {
                    let map = usize::try_from(map)
                        .ok()
                        .filter(|&m| m < map_count)
                        .ok_or_else(|| {
                            at(format!(
                                "refers to map {map}, but the object has {map_count} maps"
                            ))
                        })?;
                    encoded.map_refs.push((encoded.slots.len(), map));
                    for slot in &mut slots {
                        slot.src = 0;
                        slot.imm = 0;
                    }
                }
                Imm64::MapValue { .. } => {
                    return Err(at(
                        "global data (a map value address) cannot be written".into()
                    ))
                }
                Imm64::Pseudo { src, .. } => {
                    return Err(at(format!(
                        "a 64-bit load of pseudo source {src} cannot be written"
                    )))
                }
            },
            Instruction::Call(CallTarget::Local(_)) => {
                return Err(at("bpf-to-bpf calls cannot be written".into()))
            }
            Instruction::Call(CallTarget::Kfunc(_)) => {
                return Err(at("kfunc calls cannot be written".into()))
            }
            _ => {}
        }
        encoded.starts.push(encoded.slots.len());
        encoded.slots.extend(slots);
    }
    let starts: HashSet<usize> = encoded.starts.iter().copied().collect();
    for (index, insn) in program.insns.iter().enumerate() {
        let Some(target) = insn.jump_target(encoded.starts[index]) else {
            continue;
        };
        let lands = usize::try_from(target).is_ok_and(|t| starts.contains(&t));
        if !lands {
            return Err(program.error(format!(
                "instruction {index} jumps to slot {target}, which starts no instruction of the \
                 program's {} slots",
                encoded.slots.len()
            )));
        }
    }
    Ok(encoded)
}

/// Checks the source lines of `program` and returns `(slot, line)` pairs.
fn line_slots<'p>(
    program: &'p ProgramSpec,
    encoded: &Encoded,
) -> Result<Vec<(usize, &'p LineSpec)>, EmitError> {
    let mut previous: Option<usize> = None;
    let mut out = Vec::with_capacity(program.lines.len());
    for line in &program.lines {
        let at = |what: String| {
            program.error(format!("line record at instruction {}: {what}", line.insn))
        };
        let slot = *encoded.starts.get(line.insn).ok_or_else(|| {
            at(format!(
                "the program has {} instructions",
                program.insns.len()
            ))
        })?;
        match previous {
            None if line.insn != 0 => {
                return Err(at("the first line record must be at instruction 0".into()))
            }
            Some(p) if p >= line.insn => {
                return Err(at(format!(
                    "comes after the record at instruction {p}; records must be in increasing order"
                )))
            }
            _ => {}
        }
        if line.file.contains('\0') || line.text.contains('\0') {
            return Err(at("the file name or source text holds a NUL byte".into()));
        }
        if line.line > MAX_LINE {
            return Err(at(format!("line {} is beyond {MAX_LINE}", line.line)));
        }
        previous = Some(line.insn);
        out.push((slot, line));
    }
    Ok(out)
}

/// Checks the names of programs and maps: identifiers, each symbol once.
fn check_names(spec: &ObjectSpec) -> Result<(), EmitError> {
    let mut seen = HashSet::new();
    for program in &spec.programs {
        if !is_identifier(&program.name) {
            return Err(program.error("the name is not a C identifier".into()));
        }
        if !seen.insert(program.name.as_str()) {
            return Err(program.error("the name is used twice".into()));
        }
        if !program.section.starts_with("xdp") {
            return Err(program.error(format!(
                "section `{}` does not start with `xdp`",
                program.section
            )));
        }
        if program.section.contains('\0') {
            return Err(program.error("the section name holds a NUL byte".into()));
        }
    }
    for map in &spec.maps {
        if !is_identifier(&map.name) {
            return Err(map.error("the name is not a C identifier".into()));
        }
        if !seen.insert(map.name.as_str()) {
            return Err(map.error("the name is used twice (by a map or a program)".into()));
        }
    }
    if spec.license.contains('\0') {
        return Err(EmitError::Object("the license holds a NUL byte".into()));
    }
    Ok(())
}

/// Symbol and section-name strings: one table, as clang writes it.
struct StringTable {
    data: Vec<u8>,
}

impl StringTable {
    fn add(&mut self, s: &str) -> Result<u32, EmitError> {
        let offset = u32::try_from(self.data.len())
            .map_err(|_| EmitError::Object("the string table is larger than 4 GiB".into()))?;
        self.data.extend_from_slice(s.as_bytes());
        self.data.push(0);
        Ok(offset)
    }
}

fn section(name: &str, sh_type: u32, flags: u64, addralign: u64, data: Vec<u8>) -> Section {
    Section {
        name: name.into(),
        sh_type,
        flags,
        addr: 0,
        link: 0,
        info: 0,
        addralign,
        entsize: 0,
        data,
        nobits_size: 0,
    }
}

fn section_index(index: usize) -> Result<u16, EmitError> {
    u16::try_from(index)
        .ok()
        .filter(|&i| usize::from(i) < MAX_SECTIONS)
        .ok_or_else(|| EmitError::Object(format!("more than {MAX_SECTIONS} sections")))
}

/// One code section being laid out; slots are the section's.
struct CodeSection<'s> {
    name: &'s str,
    slots: Vec<RawInsn>,
    /// `(program index, first slot, slot count)`.
    programs: Vec<(usize, usize, usize)>,
    /// `(slot, map index)`.
    map_refs: Vec<(usize, usize)>,
    lines: Vec<(usize, &'s LineSpec)>,
}

/// The object file of `spec` (see the module documentation for its layout).
pub fn write_object(spec: &ObjectSpec) -> Result<Vec<u8>, EmitError> {
    check_names(spec)?;
    let mut btf = BtfBuilder::new();

    // Maps: their BTF definitions and places in `.maps`.
    let mut maps_size: u32 = 0;
    let mut placed_maps = Vec::with_capacity(spec.maps.len());
    for map in &spec.maps {
        let (definition, size) = btf.map_definition(map)?;
        placed_maps.push((map.name.as_str(), definition, maps_size, size));
        maps_size = maps_size
            .checked_add(size)
            .ok_or_else(|| map.error(".maps grows beyond 4 GiB".into()))?;
    }
    if !placed_maps.is_empty() {
        btf.maps_section(&placed_maps, maps_size);
    }

    // Programs, grouped by section in order of first use.
    let mut code: Vec<CodeSection> = Vec::new();
    for (index, program) in spec.programs.iter().enumerate() {
        let encoded = encode_program(program, spec.maps.len())?;
        let lines = line_slots(program, &encoded)?;
        let at = match code.iter().position(|c| c.name == program.section) {
            Some(at) => at,
            None => {
                code.push(CodeSection {
                    name: &program.section,
                    slots: Vec::new(),
                    programs: Vec::new(),
                    map_refs: Vec::new(),
                    lines: Vec::new(),
                });
                code.len() - 1
            }
        };
        let section = &mut code[at];
        let start = section.slots.len();
        section.programs.push((index, start, encoded.slots.len()));
        section.map_refs.extend(
            encoded
                .map_refs
                .iter()
                .map(|&(slot, map)| (start + slot, map)),
        );
        section
            .lines
            .extend(lines.into_iter().map(|(slot, line)| (start + slot, line)));
        section.slots.extend(encoded.slots);
    }

    // Section indices: code, license, .maps, relocations, .BTF, .BTF.ext, .symtab, .strtab.
    let license_index = 1 + code.len();
    let maps_index = (!spec.maps.is_empty()).then_some(license_index + 1);
    let mut next = maps_index.unwrap_or(license_index) + 1;
    let mut rel_index = Vec::with_capacity(code.len());
    for c in &code {
        if c.map_refs.is_empty() {
            rel_index.push(None);
        } else {
            rel_index.push(Some(next));
            next += 1;
        }
    }
    // `.BTF` and `.BTF.ext` are `next` and `next + 1`.
    let (symtab_index, strtab_index) = (next + 2, next + 3);
    section_index(strtab_index)?;

    // Symbols: null, programs, maps.
    let mut strings = StringTable { data: vec![0] };
    let mut symbols = vec![Symbol {
        name: 0,
        info: 0,
        other: 0,
        shndx: 0,
        value: 0,
        size: 0,
    }];
    let global = |kind: u8| elf::STB_GLOBAL << 4 | kind;
    for (c_index, c) in code.iter().enumerate() {
        for &(program, start, len) in &c.programs {
            symbols.push(Symbol {
                name: strings.add(&spec.programs[program].name)?,
                info: global(elf::STT_FUNC),
                other: elf::STV_DEFAULT,
                shndx: section_index(1 + c_index)?,
                value: start as u64 * RawInsn::SIZE as u64,
                size: len as u64 * RawInsn::SIZE as u64,
            });
        }
    }
    let first_map_symbol = symbols.len();
    if let Some(maps_index) = maps_index {
        for &(name, _, offset, size) in &placed_maps {
            symbols.push(Symbol {
                name: strings.add(name)?,
                info: global(elf::STT_OBJECT),
                other: elf::STV_DEFAULT,
                shndx: section_index(maps_index)?,
                value: u64::from(offset),
                size: u64::from(size),
            });
        }
    }
    let map_symbol = |map: usize| {
        u32::try_from(first_map_symbol + map)
            .map_err(|_| EmitError::Object("too many symbols".into()))
    };

    // BTF: a FUNC per program, then the records of each code section.
    let mut records = Vec::with_capacity(code.len());
    let ext_slot = |slot: usize| {
        u32::try_from(slot).map_err(|_| {
            EmitError::Object(format!("slot {slot} is beyond what .BTF.ext can address"))
        })
    };
    for c in &code {
        let mut functions = Vec::with_capacity(c.programs.len());
        for &(program, start, _) in &c.programs {
            let func = btf.program_function(&spec.programs[program].name);
            functions.push((ext_slot(start)?, func));
        }
        let mut line_records = Vec::with_capacity(c.lines.len());
        for &(slot, source) in &c.lines {
            line_records.push(LineRecord {
                slot: ext_slot(slot)?,
                file_name_off: btf.string(&source.file),
                line_off: btf.string(&source.text),
                line: source.line,
                column: source.column,
            });
        }
        records.push(SectionRecords {
            name_off: btf.string(c.name),
            functions,
            lines: line_records,
        });
    }
    let btf_ext = type_info::btf_ext(&records)?;

    // The sections.
    let mut sections = vec![section("", 0, 0, 0, Vec::new())];
    for c in &code {
        let data = c.slots.iter().flat_map(|s| s.to_bytes()).collect();
        let flags = u64::from(elf::SHF_ALLOC | elf::SHF_EXECINSTR);
        sections.push(section(c.name, elf::SHT_PROGBITS, flags, 8, data));
    }
    let mut license = spec.license.as_bytes().to_vec();
    license.push(0);
    let data_flags = u64::from(elf::SHF_ALLOC | elf::SHF_WRITE);
    sections.push(section(
        "license",
        elf::SHT_PROGBITS,
        data_flags,
        1,
        license,
    ));
    if maps_index.is_some() {
        let data = vec![0; maps_size as usize];
        sections.push(section(".maps", elf::SHT_PROGBITS, data_flags, 8, data));
    }
    let mut rel_sections = Vec::new();
    for (c_index, c) in code.iter().enumerate() {
        if rel_index[c_index].is_none() {
            continue;
        }
        let rels = c
            .map_refs
            .iter()
            .map(|&(slot, map)| {
                Ok(Rel {
                    offset: slot as u64 * RawInsn::SIZE as u64,
                    symbol: map_symbol(map)?,
                    kind: R_BPF_64_64,
                })
            })
            .collect::<Result<Vec<_>, EmitError>>()?;
        let mut rel = section(
            &format!(".rel{}", c.name),
            SHT_REL,
            SHF_INFO_LINK,
            8,
            Vec::new(),
        );
        rel.link = symtab_index as u32;
        rel.info = u32::from(section_index(1 + c_index)?);
        rel.entsize = 16;
        sections.push(rel);
        rel_sections.push((sections.len() - 1, rels));
    }
    sections.push(section(".BTF", elf::SHT_PROGBITS, 0, 4, btf.to_bytes()));
    sections.push(section(".BTF.ext", elf::SHT_PROGBITS, 0, 4, btf_ext));
    let mut symtab = section(".symtab", SHT_SYMTAB, 0, 8, Vec::new());
    symtab.link = strtab_index as u32;
    symtab.info = 1;
    symtab.entsize = 24;
    sections.push(symtab);
    sections.push(section(".strtab", SHT_STRTAB, 0, 1, strings.data));

    let mut file = ElfFile {
        flags: 0,
        sections,
        shstrndx: strtab_index,
        layout: FileLayout::default(),
    };
    file.set_symbols(&symbols)
        .map_err(|e| EmitError::Object(e.to_string()))?;
    for (index, rels) in rel_sections {
        file.set_rels(index, &rels);
    }
    Ok(file.to_bytes())
}
