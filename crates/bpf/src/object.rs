//! Reading clang-compiled BPF ELF objects into the linked [`Object`] model.
//!
//! [`read_object`] understands an object the way libbpf does (`bpf_object__open` followed by the
//! code-relocation part of `bpf_object__load`), without talking to the kernel:
//!
//! * **Programs.** Every executable section holds functions, delimited by their `STT_FUNC`
//!   symbols. Each global function outside `.text` is a program entry; `.text` holds sub-programs
//!   — unless no other executable section exists, in which case every global `.text` function is
//!   a program (the old "everything in `.text`" convention). Any section name is accepted
//!   (`xdp`, `xdp_prog`, `xdp/foo`, `prog`, ...).
//! * **Linking.** Like libbpf's `bpf_object__reloc_code`, each program's instructions are its
//!   entry function followed by every function it reaches through bpf-to-bpf calls (`call` with
//!   `src_reg = 1`) or function-address loads (`ld_imm64`, e.g. `bpf_loop` callbacks), each
//!   appended once, depth first in order of first use, with call immediates rewritten for the
//!   new layout.
//! * **Maps.** BTF-defined maps in `.maps` (parsed through [`crate::btf`]), legacy
//!   `struct bpf_map_def` maps in `maps`/`maps/*`, and one single-element array map per
//!   referenced global-data section (`.rodata*`, `.data*`, `.bss*`). Map references in
//!   instructions become `BPF_PSEUDO_MAP_IDX` / `BPF_PSEUDO_MAP_IDX_VALUE` loads whose immediate
//!   is the map's index in [`Object::maps`]. Program-array slots initialised with
//!   `.values = { [i] = &prog }` are recorded in [`MapDef::initial_programs`]; maps of maps get
//!   their inner map template and statically placed inner maps from [`map_in_map`].
//! * **Externs.** kfunc calls and `__kconfig` variables, resolved by [`externs`]: kfunc calls
//!   keep their callee's name in [`Object::kfuncs`], kconfig variables read the `.kconfig` map.
//!
//! Reading never panics, whatever the input: all offsets are bounds-checked, arithmetic is
//! checked, and every problem is an [`ObjectError`] whose one-line message names the cause and
//! where it is (file offset, section, symbol, instruction index).

mod btf_info;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use object::elf;
use object::read::elf::{FileHeader, SectionHeader, Sym};
use object::LittleEndian;

use crate::btf::{Btf, BtfError, Kind, SectionLayout, TypeId};
use crate::insn::{pseudo, DecodeError, RawInsn};
use crate::kconfig::KernelConfig;
use crate::object::btf_info::SlotRecords;
use crate::program::{Function, MapDef, MapOrigin, MapType, Object, Program};

mod externs;
mod map_in_map;

/// `e_machine` of BPF objects.
pub const EM_BPF: u16 = 247;
/// Relocation of a 64-bit immediate load (map, global data or function address).
pub const R_BPF_64_64: u32 = 1;
/// 64-bit absolute data relocation (`.maps` initialisers, BTF, debug info).
pub const R_BPF_64_ABS64: u32 = 2;
/// 32-bit absolute data relocation (BTF, debug info).
pub const R_BPF_64_ABS32: u32 = 3;
/// Relocation of a bpf-to-bpf call.
pub const R_BPF_64_32: u32 = 10;
/// Map flag making a map read-only for programs (set on `.rodata` maps).
pub const BPF_F_RDONLY_PROG: u32 = 0x80;

/// Size of the part of `struct bpf_map_def` we read (type, key size, value size, max entries,
/// flags).
const LEGACY_MAP_DEF_SIZE: u64 = 20;
/// Kernel limit on the number of instructions of one program.
const MAX_PROGRAM_SLOTS: usize = 1_000_000;
/// Limit on the linked instructions of all programs together (keeps hostile input cheap).
const MAX_TOTAL_SLOTS: usize = 1 << 23;
/// Largest global-data section turned into a map (the kernel's own limit is lower).
const MAX_GLOBAL_DATA: u64 = 64 << 20;
/// Kernel limit on object names including the terminating NUL (`BPF_OBJ_NAME_LEN`).
const BPF_OBJ_NAME_LEN: usize = 16;
/// Opcode of `call`.
const CALL_OPCODE: u8 = 0x85;

/// Why an object could not be read. Every message is one line naming the cause and location.
#[derive(Debug, thiserror::Error)]
pub enum ObjectError {
    /// The file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The input is not ELF at all (empty, wrong magic, unknown class or encoding).
    #[error("not an ELF file: {0}")]
    NotElf(String),
    /// The input is ELF, but not a 64-bit little-endian relocatable BPF object.
    #[error("not a BPF object: {0}")]
    NotBpf(String),
    /// A structure the headers point to lies (partly) beyond the end of the file.
    #[error("truncated ELF: {what} at offset {offset:#x} past end of file (size {file_size})")]
    Truncated {
        what: String,
        offset: u64,
        file_size: usize,
    },
    /// The ELF structures are inconsistent (bad sizes, alignment, symbols or relocations).
    #[error("malformed ELF: {0}")]
    Malformed(String),
    /// The `.BTF` section needed to read `.maps` is malformed.
    #[error("invalid .BTF section: {0}")]
    Btf(#[from] BtfError),
    /// A map definition cannot be understood.
    #[error("map `{map}`: {reason}")]
    Map { map: String, reason: String },
    /// A relocation of an instruction is unsupported or inconsistent.
    #[error("relocation at insn {index} of section {section} {reason}")]
    Relocation {
        section: String,
        index: usize,
        reason: String,
    },
    /// A bpf-to-bpf call or function address cannot be linked.
    #[error("{what} at insn {index} of section {section} {reason}")]
    Link {
        what: &'static str,
        section: String,
        index: usize,
        reason: String,
    },
    /// A linked program contains an instruction that does not decode.
    #[error("{source} of section {section}")]
    Decode {
        section: String,
        /// Entry function of the program being decoded.
        program: String,
        /// The decode error, its index relative to the start of `section`.
        source: DecodeError,
    },
    /// A CO-RE relocation cannot be applied, or there is no target BTF for it.
    #[error("{0}")]
    Core(String),
    /// A linked program is too large.
    #[error("program `{program}`: {reason}")]
    Program { program: String, reason: String },
    /// The object defines no program.
    #[error("no programs: {0}")]
    NoPrograms(&'static str),
    /// An extern symbol (kfunc, `__kconfig` or `__ksym` variable) cannot be resolved.
    #[error("extern `{name}` {reason}")]
    Extern { name: String, reason: String },
}

/// Reads the object file at `path`; the object is named after the file name without directory
/// and extension.
pub fn read_object_file(path: &Path) -> Result<Object, ObjectError> {
    read_object_file_with(path, None)
}

/// [`read_object_file`] with CO-RE relocations resolved against `target` (see
/// [`read_object_with`]).
pub fn read_object_file_with(path: &Path, target: Option<&Btf>) -> Result<Object, ObjectError> {
    let bytes = std::fs::read(path).map_err(|source| ObjectError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let name = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    read_object_with(
        &bytes,
        &name,
        &ReadOptions {
            core_target: target,
            ..ReadOptions::default()
        },
    )
}

/// Reads and links a BPF ELF object held in memory. `name` becomes [`Object::name`] and, as in
/// libbpf, its part before the first `.` prefixes the names of global-data maps. CO-RE
/// relocations, if the object has any, are resolved against the running kernel's BTF
/// ([`crate::core_relo::running_kernel_btf`]) and `__kconfig` variables take their values from
/// the running kernel ([`KernelConfig::running`]); [`read_object_with`] takes either from
/// elsewhere.
pub fn read_object(bytes: &[u8], name: &str) -> Result<Object, ObjectError> {
    read_object_with(bytes, name, &ReadOptions::default())
}

/// Where an object's load-time values come from, when not from the running kernel.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReadOptions<'a> {
    /// The BTF CO-RE relocations are resolved against (`None`: the running kernel's BTF, read
    /// only when the object has CO-RE relocations).
    pub core_target: Option<&'a Btf>,
    /// Where `__kconfig` values come from (`None`: the running kernel).
    pub kconfig: Option<&'a KernelConfig>,
}

/// [`read_object`] with load-time values taken from `options`.
pub fn read_object_with(
    bytes: &[u8],
    name: &str,
    options: &ReadOptions<'_>,
) -> Result<Object, ObjectError> {
    check_header(bytes)?;
    // The `object` crate reads ELF structures in place and needs them aligned; copy misaligned
    // input (rare: buffers from the allocator are aligned) to an aligned position.
    let mut storage = Vec::new();
    let data = aligned(bytes, &mut storage);
    let elf = Elf::parse(data)?;
    let mut reader = Reader::new(&elf, name)?;
    reader.core_target = options.core_target;
    reader.kconfig = options.kconfig;
    reader.read()
}

/// Validates the ELF identification and file header, giving precise messages for the common
/// ways a file is not a BPF object.
fn check_header(data: &[u8]) -> Result<(), ObjectError> {
    let file_size = data.len();
    if data.is_empty() {
        return Err(ObjectError::NotElf("empty file".into()));
    }
    if !data.starts_with(&elf::ELFMAG) {
        let shown = data.len().min(4);
        return Err(ObjectError::NotElf(format!(
            "bad magic {:02x?}, expected 7f 45 4c 46 (\"\\x7fELF\")",
            &data[..shown]
        )));
    }
    let truncated = |what: &str, offset: u64| ObjectError::Truncated {
        what: what.into(),
        offset,
        file_size,
    };
    match data.get(4) {
        None => return Err(truncated("ELF identification", 0)),
        Some(&elf::ELFCLASS64) => {}
        Some(&elf::ELFCLASS32) => {
            return Err(ObjectError::NotBpf(
                "32-bit ELF (ELFCLASS32), expected 64-bit (ELFCLASS64)".into(),
            ))
        }
        Some(c) => return Err(ObjectError::NotElf(format!("unknown ELF class {c}"))),
    }
    match data.get(5) {
        None => return Err(truncated("ELF identification", 0)),
        Some(&elf::ELFDATA2LSB) => {}
        Some(&elf::ELFDATA2MSB) => {
            return Err(ObjectError::NotBpf(
                "big-endian ELF (ELFDATA2MSB), expected little-endian".into(),
            ))
        }
        Some(d) => {
            return Err(ObjectError::NotElf(format!(
                "unknown ELF data encoding {d}"
            )))
        }
    }
    if data.len() < 64 {
        return Err(truncated("file header", 0));
    }
    let u16_at = |o: usize| u16::from_le_bytes([data[o], data[o + 1]]);
    let u64_at = |o: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&data[o..o + 8]);
        u64::from_le_bytes(b)
    };
    let machine = u16_at(18);
    if machine != EM_BPF {
        return Err(ObjectError::NotBpf(format!(
            "machine is {}, expected EM_BPF (247)",
            machine_name(machine)
        )));
    }
    let e_type = u16_at(16);
    if e_type != elf::ET_REL {
        let kind = match e_type {
            elf::ET_EXEC => "ET_EXEC (2)".to_string(),
            elf::ET_DYN => "ET_DYN (3)".to_string(),
            elf::ET_CORE => "ET_CORE (4)".to_string(),
            t => t.to_string(),
        };
        return Err(ObjectError::NotBpf(format!(
            "ELF type is {kind}, expected a relocatable object (ET_REL, 1)"
        )));
    }
    let shoff = u64_at(40);
    let shentsize = u16_at(58);
    let shnum = u16_at(60);
    if shoff == 0 {
        return Err(ObjectError::Malformed("no section header table".into()));
    }
    if usize::from(shentsize) != std::mem::size_of::<elf::SectionHeader64<LittleEndian>>() {
        return Err(ObjectError::Malformed(format!(
            "section header size is {shentsize} bytes, expected 64"
        )));
    }
    // With more than 0xff00 sections e_shnum is 0 and the count is in the first header.
    let count = u64::from(shnum.max(1));
    let end = count.checked_mul(64).and_then(|len| shoff.checked_add(len));
    if end.filter(|&end| end <= file_size as u64).is_none() {
        return Err(truncated("section header table", shoff));
    }
    if shoff % 8 != 0 {
        return Err(ObjectError::Malformed(format!(
            "section header table at offset {shoff:#x} is not 8-byte aligned"
        )));
    }
    Ok(())
}

fn machine_name(machine: u16) -> String {
    let known = match machine {
        elf::EM_NONE => "none (EM_NONE)",
        elf::EM_386 => "x86 (EM_386)",
        elf::EM_X86_64 => "x86_64 (EM_X86_64)",
        elf::EM_ARM => "ARM (EM_ARM)",
        elf::EM_AARCH64 => "AArch64 (EM_AARCH64)",
        elf::EM_RISCV => "RISC-V (EM_RISCV)",
        elf::EM_PPC64 => "PowerPC64 (EM_PPC64)",
        elf::EM_S390 => "s390 (EM_S390)",
        elf::EM_MIPS => "MIPS (EM_MIPS)",
        elf::EM_LOONGARCH => "LoongArch (EM_LOONGARCH)",
        _ => return format!("{machine}"),
    };
    known.to_string()
}

/// A name from the file as text fit for one-line messages: invalid UTF-8 is replaced and control
/// characters are escaped.
fn printable(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    if text.chars().any(char::is_control) {
        text.chars().flat_map(char::escape_debug).collect()
    } else {
        text.into_owned()
    }
}

/// `bytes` itself if 8-byte aligned, else a copy at an 8-byte aligned position of `storage`.
fn aligned<'a>(bytes: &'a [u8], storage: &'a mut Vec<u8>) -> &'a [u8] {
    if bytes.as_ptr().align_offset(8) == 0 {
        return bytes;
    }
    storage.resize(bytes.len() + 8, 0);
    let start = storage.as_ptr().align_offset(8).min(8);
    storage[start..start + bytes.len()].copy_from_slice(bytes);
    &storage[start..start + bytes.len()]
}

/// One ELF section.
struct Section<'a> {
    name: String,
    sh_type: u32,
    flags: u64,
    size: u64,
    info: u32,
    /// File contents; empty for `SHT_NOBITS`.
    data: &'a [u8],
}

impl Section<'_> {
    fn is_code(&self) -> bool {
        self.sh_type == elf::SHT_PROGBITS && self.flags & u64::from(elf::SHF_EXECINSTR) != 0
    }
}

/// One ELF symbol.
#[derive(Clone)]
struct Symbol {
    /// The name; for unnamed section symbols, the section's name.
    name: String,
    value: u64,
    size: u64,
    st_type: u8,
    bind: u8,
    shndx: u16,
}

impl Symbol {
    fn is_global(&self) -> bool {
        matches!(self.bind, elf::STB_GLOBAL | elf::STB_WEAK)
    }

    /// The section the symbol is defined in (`None` for undefined and special symbols).
    fn section(&self) -> Option<usize> {
        if self.shndx == elf::SHN_UNDEF || self.shndx >= elf::SHN_LORESERVE {
            None
        } else {
            Some(usize::from(self.shndx))
        }
    }
}

/// One `Elf64_Rel` entry.
#[derive(Clone, Copy)]
struct Rel {
    offset: u64,
    sym: u32,
    r_type: u32,
}

/// The parts of an ELF file the reader uses.
struct Elf<'a> {
    sections: Vec<Section<'a>>,
    symbols: Vec<Symbol>,
    /// Indices of the symbols defined in each section, in symbol table order.
    symbols_in: HashMap<usize, Vec<usize>>,
    /// `SHT_REL` sections by target section index.
    rels: BTreeMap<usize, Vec<(usize, Vec<Rel>)>>,
}

fn malformed(context: &str, err: object::read::Error) -> ObjectError {
    ObjectError::Malformed(format!("{context}: {err}"))
}

impl<'a> Elf<'a> {
    fn parse(data: &'a [u8]) -> Result<Elf<'a>, ObjectError> {
        let file_size = data.len();
        let header = elf::FileHeader64::<LittleEndian>::parse(data)
            .map_err(|e| malformed("file header", e))?;
        let endian = header.endian().map_err(|e| malformed("file header", e))?;
        let table = header
            .sections(endian, data)
            .map_err(|e| malformed("section headers", e))?;
        let mut sections = Vec::with_capacity(table.len());
        for (index, sh) in table.enumerate() {
            let name = match table.section_name(endian, sh) {
                Ok(bytes) => printable(bytes),
                Err(e) => return Err(malformed(&format!("name of section {}", index.0), e)),
            };
            let sh_type = sh.sh_type(endian);
            let offset = sh.sh_offset(endian);
            let size = sh.sh_size(endian);
            let data = if sh_type == elf::SHT_NOBITS || sh_type == elf::SHT_NULL {
                &[][..]
            } else {
                offset
                    .checked_add(size)
                    .filter(|&end| end <= file_size as u64)
                    .and_then(|end| data.get(offset as usize..end as usize))
                    .ok_or_else(|| ObjectError::Truncated {
                        what: format!("data of section {name} ({size} bytes)"),
                        offset,
                        file_size,
                    })?
            };
            sections.push(Section {
                name,
                sh_type,
                flags: sh.sh_flags(endian),
                size,
                info: sh.sh_info(endian),
                data,
            });
        }

        let symtab = table
            .symbols(endian, data, elf::SHT_SYMTAB)
            .map_err(|e| malformed("symbol table", e))?;
        let mut symbols = Vec::with_capacity(symtab.len());
        for sym in symtab.iter() {
            let shndx = sym.st_shndx(endian);
            let st_type = sym.st_type();
            let mut name = match symtab.symbol_name(endian, sym) {
                Ok(bytes) => printable(bytes),
                Err(e) => return Err(malformed(&format!("name of symbol {}", symbols.len()), e)),
            };
            if name.is_empty() && st_type == elf::STT_SECTION {
                if let Some(s) = sections.get(usize::from(shndx)) {
                    name.clone_from(&s.name);
                }
            }
            symbols.push(Symbol {
                name,
                value: sym.st_value(endian),
                size: sym.st_size(endian),
                st_type,
                bind: sym.st_bind(),
                shndx,
            });
        }

        let mut symbols_in: HashMap<usize, Vec<usize>> = HashMap::new();
        for (index, sym) in symbols.iter().enumerate() {
            if let Some(sec) = sym.section() {
                symbols_in.entry(sec).or_default().push(index);
            }
        }
        let mut rels: BTreeMap<usize, Vec<(usize, Vec<Rel>)>> = BTreeMap::new();
        for (index, s) in sections.iter().enumerate() {
            if s.sh_type == elf::SHT_RELA
                && sections.get(s.info as usize).is_some_and(Section::is_code)
            {
                return Err(ObjectError::Malformed(format!(
                    "section {} holds RELA relocations for code, but BPF objects use REL",
                    s.name
                )));
            }
            if s.sh_type != elf::SHT_REL {
                continue;
            }
            if s.data.len() % 16 != 0 {
                return Err(ObjectError::Malformed(format!(
                    "relocation section {} size {} is not a multiple of 16",
                    s.name,
                    s.data.len()
                )));
            }
            let entries = s
                .data
                .chunks_exact(16)
                .map(|c| {
                    let word = |i: usize| {
                        let mut b = [0u8; 8];
                        b.copy_from_slice(&c[i..i + 8]);
                        u64::from_le_bytes(b)
                    };
                    let info = word(8);
                    Rel {
                        offset: word(0),
                        sym: (info >> 32) as u32,
                        r_type: info as u32,
                    }
                })
                .collect();
            rels.entry(s.info as usize)
                .or_default()
                .push((index, entries));
        }
        Ok(Elf {
            sections,
            symbols,
            symbols_in,
            rels,
        })
    }

    fn section_name(&self, index: usize) -> &str {
        self.sections.get(index).map_or("?", |s| s.name.as_str())
    }

    /// The symbols defined in section `sec` with their indices, in symbol table order.
    fn symbols_of(&self, sec: usize) -> impl Iterator<Item = (usize, &Symbol)> {
        self.symbols_in
            .get(&sec)
            .into_iter()
            .flatten()
            .map(|&i| (i, &self.symbols[i]))
    }
}

/// What a section holds, as far as the reader cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SecKind {
    Code,
    BtfMaps,
    LegacyMaps,
    Data {
        read_only: bool,
    },
    /// `.data.rel*` and `.rodata.rel*`: data made of pointers that need load-time relocation.
    RelocatedData,
    Other,
}

fn classify(s: &Section<'_>) -> SecKind {
    let name = s.name.as_str();
    let is =
        |base: &str| name == base || name.strip_prefix(base).is_some_and(|r| r.starts_with('.'));
    if s.is_code() {
        SecKind::Code
    } else if name == ".maps" {
        SecKind::BtfMaps
    } else if name == "maps" || name.starts_with("maps/") {
        SecKind::LegacyMaps
    } else if name.starts_with(".data.rel") || name.starts_with(".rodata.rel") {
        SecKind::RelocatedData
    } else if !matches!(s.sh_type, elf::SHT_PROGBITS | elf::SHT_NOBITS) {
        SecKind::Other
    } else if is(".rodata") {
        SecKind::Data { read_only: true }
    } else if is(".data") || is(".bss") {
        SecKind::Data { read_only: false }
    } else {
        SecKind::Other
    }
}

/// A function: a contiguous run of instructions of one executable section.
struct Func {
    name: String,
    section: usize,
    /// First instruction, as an index into the section.
    start: usize,
    len: usize,
    global: bool,
}

/// What a relocated instruction refers to, resolved against the object's maps and functions.
#[derive(Clone, Copy, Debug)]
enum Target {
    /// Instruction `insn` of executable section `section` (call or function address).
    Code { section: usize, insn: i64 },
    /// A map handle.
    Map(usize),
    /// An address inside the value of a global-data map.
    MapValue { map: usize, offset: u32 },
    /// Entry `index` of [`Object::kfuncs`].
    Kfunc(usize),
}

/// A BTF-defined map still being assembled.
struct BtfMapInfo {
    section: usize,
    offset: u64,
    size: u64,
    /// Byte offset of the `values` member within the definition.
    values_offset: Option<u64>,
}

struct Reader<'e, 'a> {
    elf: &'e Elf<'a>,
    name: String,
    kinds: Vec<SecKind>,
    /// Instructions of every executable section, by section index.
    code: HashMap<usize, Vec<RawInsn>>,
    funcs: Vec<Func>,
    /// Function ids of each executable section, sorted by start.
    funcs_by_section: HashMap<usize, Vec<usize>>,
    /// Program entry functions, in section then offset order.
    entries: Vec<usize>,
    maps: Vec<MapDef>,
    /// Map index of each map symbol location `(section, offset)`.
    map_at: HashMap<(usize, u64), usize>,
    /// Map index of each global-data section.
    data_maps: HashMap<usize, usize>,
    btf_maps: Vec<(usize, BtfMapInfo)>,
    targets: HashMap<(usize, usize), Target>,
    /// The BTF CO-RE relocations are resolved against (`None`: the running kernel's).
    core_target: Option<&'e Btf>,
    externs: externs::Externs,
    /// Where `__kconfig` values come from (`None`: the running kernel).
    kconfig: Option<&'e KernelConfig>,
}

impl<'e, 'a> Reader<'e, 'a> {
    fn new(elf: &'e Elf<'a>, name: &str) -> Result<Self, ObjectError> {
        let kinds: Vec<SecKind> = elf.sections.iter().map(classify).collect();
        if kinds.iter().filter(|&&k| k == SecKind::BtfMaps).count() > 1 {
            return Err(ObjectError::Malformed("more than one .maps section".into()));
        }
        let mut code = HashMap::new();
        for (index, s) in elf.sections.iter().enumerate() {
            if kinds[index] != SecKind::Code || s.data.is_empty() {
                continue;
            }
            let insns = RawInsn::parse_all(s.data).ok_or_else(|| {
                ObjectError::Malformed(format!(
                    "section {} size {} is not a multiple of the 8-byte instruction size",
                    s.name,
                    s.data.len()
                ))
            })?;
            code.insert(index, insns);
        }
        Ok(Reader {
            elf,
            name: name.to_string(),
            kinds,
            code,
            funcs: Vec::new(),
            funcs_by_section: HashMap::new(),
            entries: Vec::new(),
            maps: Vec::new(),
            map_at: HashMap::new(),
            data_maps: HashMap::new(),
            btf_maps: Vec::new(),
            targets: HashMap::new(),
            core_target: None,
            externs: externs::Externs::default(),
            kconfig: None,
        })
    }

    fn read(mut self) -> Result<Object, ObjectError> {
        if self.code.is_empty() {
            return Err(ObjectError::NoPrograms("object has no executable sections"));
        }
        self.collect_functions()?;
        if self.entries.is_empty() {
            return Err(ObjectError::NoPrograms(
                "no global function in any executable section",
            ));
        }
        self.collect_user_maps()?;
        self.collect_data_maps()?;
        self.collect_externs()?;
        self.resolve_relocations()?;
        self.collect_initial_programs()?;

        let btf = btf_info::read(
            self.elf.sections.iter().map(|s| (s.name.as_str(), s.data)),
            &self.section_layout(),
        );
        if let Some(btf) = &btf {
            btf_info::relocate_core(btf, &mut self.code, self.core_target, |i| {
                self.elf.section_name(i)
            })?;
            for map in &mut self.maps {
                map.spin_lock = btf.spin_lock_offset(map);
            }
        }
        let records = SlotRecords::new(btf.as_ref(), |name| {
            self.code
                .keys()
                .copied()
                .filter(|&i| self.section_name(i) == name)
                .min()
        });
        let mut programs = Vec::with_capacity(self.entries.len());
        let mut total = 0usize;
        for &entry in &self.entries {
            let program = self.link(entry, &records)?;
            total = total.saturating_add(program.insns.len());
            if total > MAX_TOTAL_SLOTS {
                return Err(ObjectError::Program {
                    program: program.name,
                    reason: format!(
                        "linked programs exceed {MAX_TOTAL_SLOTS} instructions in total"
                    ),
                });
            }
            programs.push(program);
        }
        let license = self
            .elf
            .sections
            .iter()
            .find(|s| s.name == "license")
            .map(|s| {
                let end = s.data.iter().position(|&b| b == 0).unwrap_or(s.data.len());
                String::from_utf8_lossy(&s.data[..end]).into_owned()
            });
        Ok(Object {
            name: self.name,
            programs,
            maps: self.maps,
            license,
            kfuncs: self.externs.kfuncs,
            btf,
        })
    }

    fn section_name(&self, index: usize) -> &str {
        self.elf.section_name(index)
    }

    /// Section sizes and symbol offsets, for fixing up the BTF that describes them.
    fn section_layout(&self) -> SectionLayout {
        let sizes = self.elf.sections.iter().map(|s| (s.name.clone(), s.size));
        let symbols = self.elf.symbols.iter().filter_map(|sym| {
            let sec = sym.section()?;
            Some((
                (self.section_name(sec).to_string(), sym.name.clone()),
                sym.value,
            ))
        });
        SectionLayout {
            sizes: sizes.collect(),
            symbols: symbols.collect(),
        }
    }

    /// Finds function extents from `STT_FUNC` symbols and chooses the program entries.
    fn collect_functions(&mut self) -> Result<(), ObjectError> {
        let mut sections: Vec<usize> = self.code.keys().copied().collect();
        sections.sort_unstable();
        for &sec in &sections {
            let n_insns = self.code[&sec].len();
            let sec_name = self.section_name(sec).to_string();
            let mut syms: Vec<&Symbol> = self
                .elf
                .symbols_of(sec)
                .map(|(_, s)| s)
                .filter(|s| s.st_type == elf::STT_FUNC)
                .collect();
            // By start; at equal starts (aliases) the global one first.
            syms.sort_by_key(|s| (s.value, !s.is_global()));
            syms.dedup_by_key(|s| s.value);
            let mut ids = Vec::with_capacity(syms.len());
            for (i, sym) in syms.iter().enumerate() {
                let bad = |what: String| {
                    ObjectError::Malformed(format!(
                        "function `{}` in section {sec_name} {what}",
                        sym.name
                    ))
                };
                if sym.value % 8 != 0 || sym.size % 8 != 0 {
                    return Err(bad(format!(
                        "at byte offset {:#x} with size {} is not aligned to instructions",
                        sym.value, sym.size
                    )));
                }
                let start = sym.value / 8;
                if start >= n_insns as u64 {
                    return Err(bad(format!(
                        "starts at insn {start}, past the section end (insn {n_insns})"
                    )));
                }
                let next = syms.get(i + 1).map_or(n_insns as u64, |n| n.value / 8);
                let end = if sym.size == 0 {
                    next
                } else {
                    start.saturating_add(sym.size / 8)
                };
                if end > n_insns as u64 {
                    return Err(bad(format!(
                        "(insns {start}..{end}) extends past the section end (insn {n_insns})"
                    )));
                }
                if end > next {
                    return Err(bad(format!(
                        "(insns {start}..{end}) overlaps function `{}` at insn {next}",
                        syms[i + 1].name
                    )));
                }
                ids.push(self.funcs.len());
                self.funcs.push(Func {
                    name: sym.name.clone(),
                    section: sec,
                    start: start as usize,
                    len: (end - start) as usize,
                    global: sym.is_global(),
                });
            }
            if syms.is_empty() && sec_name != ".text" {
                // No symbols at all (hand-written assembly): the whole section is one program.
                ids.push(self.funcs.len());
                self.funcs.push(Func {
                    name: sec_name.clone(),
                    section: sec,
                    start: 0,
                    len: n_insns,
                    global: true,
                });
            }
            self.funcs_by_section.insert(sec, ids);
        }
        let only_text = sections.iter().all(|&s| self.section_name(s) == ".text");
        for &sec in &sections {
            let is_text = self.section_name(sec) == ".text";
            if is_text && !only_text {
                continue;
            }
            for &id in &self.funcs_by_section[&sec] {
                if self.funcs[id].global && self.funcs[id].len > 0 {
                    self.entries.push(id);
                }
            }
        }
        Ok(())
    }

    /// The function of executable section `section` starting at instruction `insn`.
    fn function_at(&self, section: usize, insn: i64) -> Option<usize> {
        let ids = self.funcs_by_section.get(&section)?;
        let pos = ids
            .binary_search_by_key(&insn, |&id| self.funcs[id].start as i64)
            .ok()?;
        ids.get(pos).copied()
    }

    /// Collects BTF-defined and legacy maps, ordered by symbol table index.
    fn collect_user_maps(&mut self) -> Result<(), ObjectError> {
        let mut pending: Vec<(usize, MapDef, u64, usize, Option<BtfMapInfo>)> = Vec::new();
        for (sec, kind) in self.kinds.clone().into_iter().enumerate() {
            match kind {
                SecKind::BtfMaps => self.btf_maps_of(sec, &mut pending)?,
                SecKind::LegacyMaps => self.legacy_maps_of(sec, &mut pending)?,
                _ => {}
            }
        }
        pending.sort_by_key(|p| p.0);
        for (_, def, offset, sec, info) in pending {
            let index = self.maps.len();
            if self.map_at.insert((sec, offset), index).is_some() {
                return Err(ObjectError::Map {
                    map: def.name,
                    reason: format!(
                        "defined at offset {offset:#x} of section {}, where another map already is",
                        self.section_name(sec)
                    ),
                });
            }
            if let Some(info) = info {
                self.btf_maps.push((index, info));
            }
            self.maps.push(def);
        }
        Ok(())
    }

    fn btf_maps_of(
        &self,
        sec: usize,
        pending: &mut Vec<(usize, MapDef, u64, usize, Option<BtfMapInfo>)>,
    ) -> Result<(), ObjectError> {
        let btf_section = self
            .elf
            .sections
            .iter()
            .find(|s| s.name == ".BTF")
            .ok_or_else(|| {
                ObjectError::Malformed(
                    "section .maps needs .BTF to describe its maps, but the object has no .BTF"
                        .into(),
                )
            })?;
        let btf = Btf::parse(btf_section.data)?;
        let Some((_, datasec)) = btf.find_datasec(".maps") else {
            return Err(ObjectError::Malformed(
                ".BTF has no DATASEC `.maps` describing section .maps".into(),
            ));
        };
        let Kind::Datasec { vars, .. } = &datasec.kind else {
            return Ok(());
        };
        // First symbol of each name in the section.
        let mut by_name: HashMap<&str, usize> = HashMap::new();
        for (i, s) in self.elf.symbols_of(sec) {
            if s.st_type != elf::STT_SECTION {
                by_name.entry(s.name.as_str()).or_insert(i);
            }
        }
        for vsi in vars {
            let var = btf.ty(vsi.type_id)?;
            let Kind::Var { type_id, .. } = var.kind else {
                return Err(ObjectError::Malformed(format!(
                    "DATASEC `.maps` entry [{}] is a {}, expected a VAR",
                    vsi.type_id,
                    var.kind_name()
                )));
            };
            let name = printable(btf.name(var)?.as_bytes());
            // Clang leaves the DATASEC offsets of global variables at 0; the symbol has them.
            let symbol = by_name.get(name.as_str()).copied();
            let (order, offset, size) = match symbol {
                Some(i) => {
                    let s = &self.elf.symbols[i];
                    let size = if s.size == 0 {
                        u64::from(vsi.size)
                    } else {
                        s.size
                    };
                    (i, s.value, size)
                }
                None => (usize::MAX, u64::from(vsi.offset), u64::from(vsi.size)),
            };
            let (def, values_offset) = parse_btf_map_def(&btf, &name, type_id)?;
            pending.push((
                order,
                def,
                offset,
                sec,
                Some(BtfMapInfo {
                    section: sec,
                    offset,
                    size,
                    values_offset,
                }),
            ));
        }
        Ok(())
    }

    fn legacy_maps_of(
        &self,
        sec: usize,
        pending: &mut Vec<(usize, MapDef, u64, usize, Option<BtfMapInfo>)>,
    ) -> Result<(), ObjectError> {
        let section = &self.elf.sections[sec];
        let syms: Vec<usize> = self
            .elf
            .symbols_of(sec)
            .filter(|(_, s)| s.st_type != elf::STT_SECTION)
            .map(|(i, _)| i)
            .collect();
        if syms.is_empty() {
            return Ok(());
        }
        let n = syms.len() as u64;
        let record = section.size / n;
        if record * n != section.size || record < LEGACY_MAP_DEF_SIZE {
            return Err(ObjectError::Malformed(format!(
                "legacy map section {} of {} bytes cannot hold its {n} maps as struct bpf_map_def \
                 records of at least {LEGACY_MAP_DEF_SIZE} bytes",
                section.name, section.size
            )));
        }
        for i in syms {
            let sym = &self.elf.symbols[i];
            let record = sym
                .value
                .checked_add(LEGACY_MAP_DEF_SIZE)
                .and_then(|end| section.data.get(sym.value as usize..end as usize))
                .ok_or_else(|| ObjectError::Map {
                    map: sym.name.clone(),
                    reason: format!(
                        "struct bpf_map_def at offset {:#x} lies outside the data of section {}",
                        sym.value, section.name
                    ),
                })?;
            let field = |k: usize| {
                u32::from_le_bytes([
                    record[4 * k],
                    record[4 * k + 1],
                    record[4 * k + 2],
                    record[4 * k + 3],
                ])
            };
            pending.push((
                i,
                MapDef {
                    name: sym.name.clone(),
                    map_type: MapType(field(0)),
                    key_size: field(1),
                    value_size: field(2),
                    max_entries: field(3),
                    flags: field(4),
                    origin: MapOrigin::Legacy,
                    initial_value: None,
                    initial_programs: Vec::new(),
                    inner: None,
                    spin_lock: None,
                },
                sym.value,
                sec,
                None,
            ));
        }
        Ok(())
    }

    /// Creates one array map per global-data section that an instruction refers to, in section
    /// order.
    fn collect_data_maps(&mut self) -> Result<(), ObjectError> {
        let mut referenced = HashSet::new();
        for (&target, rel_sections) in &self.elf.rels {
            if !self.code.contains_key(&target) {
                continue;
            }
            for rel in rel_sections.iter().flat_map(|(_, rels)| rels) {
                let Some(sec) = self
                    .elf
                    .symbols
                    .get(rel.sym as usize)
                    .and_then(Symbol::section)
                else {
                    continue;
                };
                if matches!(self.kinds.get(sec), Some(SecKind::Data { .. })) {
                    referenced.insert(sec);
                }
            }
        }
        let mut referenced: Vec<usize> = referenced.into_iter().collect();
        referenced.sort_unstable();
        let prefix = self.name.split('.').next().unwrap_or_default().to_string();
        for sec in referenced {
            let SecKind::Data { read_only } = self.kinds[sec] else {
                continue;
            };
            let s = &self.elf.sections[sec];
            if s.size == 0 {
                continue;
            }
            let map = internal_map_name(&prefix, &s.name);
            if s.size > MAX_GLOBAL_DATA {
                return Err(ObjectError::Map {
                    map,
                    reason: format!(
                        "global data section {} of {} bytes exceeds the {} byte limit",
                        s.name, s.size, MAX_GLOBAL_DATA
                    ),
                });
            }
            let initial = if s.sh_type == elf::SHT_NOBITS {
                vec![0; s.size as usize]
            } else {
                s.data.to_vec()
            };
            self.data_maps.insert(sec, self.maps.len());
            self.maps.push(MapDef {
                name: map,
                map_type: MapType::ARRAY,
                key_size: 4,
                value_size: s.size as u32,
                max_entries: 1,
                flags: if read_only { BPF_F_RDONLY_PROG } else { 0 },
                origin: MapOrigin::GlobalData {
                    section: s.name.clone(),
                    read_only,
                },
                initial_value: Some(initial),
                initial_programs: Vec::new(),
                inner: None,
                spin_lock: None,
            });
        }
        Ok(())
    }

    /// Resolves every relocation of every executable section into a [`Target`].
    fn resolve_relocations(&mut self) -> Result<(), ObjectError> {
        for (&sec, rel_sections) in &self.elf.rels {
            let Some(insns) = self.code.get(&sec) else {
                continue;
            };
            for (rel_sec, rels) in rel_sections {
                for rel in rels {
                    let index = rel.offset / 8;
                    if rel.offset % 8 != 0 || index >= insns.len() as u64 {
                        return Err(ObjectError::Malformed(format!(
                            "relocation at byte offset {:#x} in {} is not on an instruction of \
                             section {} ({} instructions)",
                            rel.offset,
                            self.section_name(*rel_sec),
                            self.section_name(sec),
                            insns.len()
                        )));
                    }
                    let index = index as usize;
                    let target = self.resolve(sec, index, insns[index], rel)?;
                    if self.targets.insert((sec, index), target).is_some() {
                        return Err(self.reloc_error(sec, index, "is a duplicate".into()));
                    }
                }
            }
        }
        Ok(())
    }

    fn reloc_error(&self, sec: usize, index: usize, reason: String) -> ObjectError {
        ObjectError::Relocation {
            section: self.section_name(sec).to_string(),
            index,
            reason,
        }
    }

    fn resolve(
        &self,
        sec: usize,
        index: usize,
        insn: RawInsn,
        rel: &Rel,
    ) -> Result<Target, ObjectError> {
        let err = |reason: String| self.reloc_error(sec, index, reason);
        let sym = self.elf.symbols.get(rel.sym as usize).ok_or_else(|| {
            err(format!(
                "refers to symbol index {}, beyond the symbol table ({} symbols)",
                rel.sym,
                self.elf.symbols.len()
            ))
        })?;
        if sym.shndx == elf::SHN_UNDEF {
            return self.resolve_extern(sym, insn, rel).map_err(err);
        }
        let Some(sym_sec) = sym.section() else {
            return Err(err({
                format!(
                    "refers to symbol `{}` in special section index {:#x}",
                    sym.name, sym.shndx
                )
            }));
        };
        let sym_sec_name = self.section_name(sym_sec);
        let kind = self.kinds.get(sym_sec).copied().unwrap_or(SecKind::Other);
        let is_call = insn.code == CALL_OPCODE;
        if !is_call && !insn.is_wide() {
            return Err(err(format!(
                "is on an instruction with opcode {:#04x}, expected a call or a 64-bit immediate \
                 load",
                insn.code
            )));
        }
        let expected = if is_call { R_BPF_64_32 } else { R_BPF_64_64 };
        if rel.r_type != expected {
            return Err(err(format!(
                "has type {}, expected {} on a {}",
                rel.r_type,
                if is_call {
                    "R_BPF_64_32 (10)"
                } else {
                    "R_BPF_64_64 (1)"
                },
                if is_call {
                    "call"
                } else {
                    "64-bit immediate load"
                }
            )));
        }
        if is_call {
            if insn.src != pseudo::CALL {
                return Err(err(format!(
                    "is on a call with src_reg {}, expected a bpf-to-bpf call (src_reg 1)",
                    insn.src
                )));
            }
            if kind != SecKind::Code {
                return Err(err(format!(
                    "calls symbol `{}` in non-executable section {sym_sec_name}",
                    sym.name
                )));
            }
            if sym.value % 8 != 0 {
                return Err(err(format!(
                    "calls symbol `{}` at byte offset {:#x}, not on an instruction",
                    sym.name, sym.value
                )));
            }
            let target = (sym.value / 8) as i64 + i64::from(insn.imm) + 1; // No overflow: value / 8 < 2^61.
            return Ok(Target::Code {
                section: sym_sec,
                insn: target,
            });
        }
        match kind {
            SecKind::Code => {
                let byte = i128::from(sym.value) + i128::from(insn.imm);
                if byte % 8 != 0 {
                    return Err(err(format!(
                        "takes the address of byte {byte:#x} of section {sym_sec_name}, not an \
                         instruction"
                    )));
                }
                Ok(Target::Code {
                    section: sym_sec,
                    insn: i64::try_from(byte / 8).unwrap_or(i64::MAX),
                })
            }
            SecKind::BtfMaps | SecKind::LegacyMaps => self
                .map_at
                .get(&(sym_sec, sym.value))
                .map(|&m| Target::Map(m))
                .ok_or_else(|| {
                    err(format!(
                        "refers to `{}` at offset {:#x} of section {sym_sec_name}, where no map \
                         is defined",
                        sym.name, sym.value
                    ))
                }),
            SecKind::Data { .. } => {
                let Some(&map) = self.data_maps.get(&sym_sec) else {
                    return Err(err(format!(
                        "refers to symbol `{}` in empty section {sym_sec_name}",
                        sym.name
                    )));
                };
                let size = self.elf.sections[sym_sec].size;
                let offset = i128::from(sym.value) + i128::from(insn.imm);
                if offset < 0 || offset > i128::from(size) {
                    return Err(err(format!(
                        "refers to offset {offset:#x} of section {sym_sec_name} ({size} bytes) \
                         through symbol `{}`",
                        sym.name
                    )));
                }
                Ok(Target::MapValue {
                    map,
                    offset: offset as u32,
                })
            }
            SecKind::RelocatedData | SecKind::Other => Err(err(format!(
                "refers to symbol `{}` in unsupported section {sym_sec_name}",
                sym.name
            ))),
        }
    }

    /// Fills `initial_programs` of program arrays and the initial inner maps of maps of maps from
    /// the relocations of `.maps`.
    fn collect_initial_programs(&mut self) -> Result<(), ObjectError> {
        let mut slots: Vec<(usize, u32, usize)> = Vec::new();
        let mut inner_slots: Vec<(usize, u32, usize)> = Vec::new();
        for (map_index, info) in &self.btf_maps {
            let Some(rel_sections) = self.elf.rels.get(&info.section) else {
                continue;
            };
            let map = &self.maps[*map_index];
            let map_err = |reason: String| ObjectError::Map {
                map: map.name.clone(),
                reason,
            };
            let end = info.offset.saturating_add(info.size);
            for (rel_sec, rel) in rel_sections
                .iter()
                .flat_map(|(s, rels)| rels.iter().map(move |r| (*s, r)))
            {
                if rel.offset < info.offset || rel.offset.saturating_add(8) > end {
                    continue;
                }
                let rel_sec_name = self.section_name(rel_sec);
                let Some(values) = info.values_offset else {
                    return Err(map_err(format!(
                        "relocation at offset {:#x} of {rel_sec_name} initialises a map without \
                         a `values` member",
                        rel.offset
                    )));
                };
                let within = rel.offset - info.offset;
                if within < values || (within - values) % 8 != 0 || rel.r_type != R_BPF_64_ABS64 {
                    return Err(map_err(format!(
                        "relocation at offset {:#x} of {rel_sec_name} (type {}) is not a pointer \
                         slot of `values`",
                        rel.offset, rel.r_type
                    )));
                }
                let slot = u32::try_from((within - values) / 8).unwrap_or(u32::MAX);
                if map.map_type.is_map_in_map() {
                    inner_slots.push((*map_index, slot, self.inner_map_of(map, slot, rel)?));
                    continue;
                }
                let sym = self.elf.symbols.get(rel.sym as usize);
                let program = sym.and_then(|s| {
                    let sec = s.section()?;
                    if s.value % 8 != 0 {
                        return None;
                    }
                    let func = self.function_at(sec, (s.value / 8) as i64)?;
                    self.entries.iter().position(|&e| e == func)
                });
                let Some(program) = program else {
                    return Err(map_err(format!(
                        "slot {slot} is initialised with `{}`, which is not a program",
                        sym.map_or("?", |s| s.name.as_str())
                    )));
                };
                slots.push((*map_index, slot, program));
            }
        }
        for (map, slot, program) in slots {
            self.maps[map].initial_programs.push((slot, program));
        }
        for map in &mut self.maps {
            map.initial_programs.sort_unstable();
        }
        map_in_map::place_initial(&mut self.maps, inner_slots)
    }

    /// Links the program whose entry is function `entry`.
    fn link(&self, entry: usize, records: &SlotRecords<'_>) -> Result<Program, ObjectError> {
        let entry_func = &self.funcs[entry];
        let mut out = Linked::default();
        out.append(self, entry, &entry_func.name)?;
        // Depth-first walk: (function, its linked start, next instruction to visit).
        let mut stack = vec![(entry, 0usize, 0usize)];
        while let Some(&(id, base, cursor)) = stack.last() {
            let f = &self.funcs[id];
            if cursor >= f.len {
                stack.pop();
                continue;
            }
            let slot = base + cursor;
            let raw = out.insns[slot];
            let sec_index = f.start + cursor;
            let wide = raw.is_wide();
            let top = stack.len() - 1;
            stack[top].2 += if wide { 2 } else { 1 };
            let link_err = |what: &'static str, reason: String| ObjectError::Link {
                what,
                section: self.section_name(f.section).to_string(),
                index: sec_index,
                reason,
            };
            if wide && cursor + 1 >= f.len {
                return Err(link_err(
                    "64-bit immediate load",
                    format!("is cut off by the end of function `{}`", f.name),
                ));
            }
            let insns = &mut out.insns;
            let code_target = match self.targets.get(&(f.section, sec_index)) {
                Some(&Target::Code { section, insn }) => Some((section, insn)),
                Some(&Target::Map(map)) => {
                    insns[slot].src = pseudo::MAP_IDX;
                    insns[slot].imm = map as i32;
                    insns[slot + 1].imm = 0;
                    None
                }
                Some(&Target::MapValue { map, offset }) => {
                    insns[slot].src = pseudo::MAP_IDX_VALUE;
                    insns[slot].imm = map as i32;
                    insns[slot + 1].imm = offset as i32;
                    None
                }
                Some(&Target::Kfunc(index)) => {
                    insns[slot].src = pseudo::KFUNC_CALL;
                    insns[slot].imm = index as i32;
                    insns[slot].off = 0;
                    None
                }
                None if raw.code == CALL_OPCODE && raw.src == pseudo::CALL => {
                    Some((f.section, sec_index as i64 + i64::from(raw.imm) + 1))
                }
                None if wide && raw.src == pseudo::FUNC => {
                    return Err(link_err(
                        "function address load",
                        "has no relocation naming the function".into(),
                    ))
                }
                None => None,
            };
            let Some((target_sec, target_insn)) = code_target else {
                continue;
            };
            let what = if wide {
                "function address load"
            } else {
                "call"
            };
            let callee = self.function_at(target_sec, target_insn).ok_or_else(|| {
                link_err(
                    what,
                    format!(
                        "targets insn {target_insn} of section {}, which is not the start of a \
                         function",
                        self.section_name(target_sec)
                    ),
                )
            })?;
            let start = match out.placed.get(&callee) {
                Some(&start) => start,
                None => {
                    let start = out.append(self, callee, &entry_func.name)?;
                    stack.push((callee, start, 0));
                    start
                }
            };
            let rel = i32::try_from(start as i64 - slot as i64 - 1)
                .map_err(|_| link_err(what, "offset does not fit 32 bits".into()))?;
            out.insns[slot].imm = rel;
            if wide {
                out.insns[slot].src = pseudo::FUNC;
                out.insns[slot + 1].imm = 0;
            }
        }
        let (func_info, line_info) = records.remap(&out.origin, &out.functions);
        let program = Program {
            name: entry_func.name.clone(),
            section: self.section_name(entry_func.section).to_string(),
            insns: out.insns,
            functions: out.functions,
            func_info,
            line_info,
        };
        if let Err(e) = program.decode() {
            let (slot, e) = relocate_decode_error(e, &out.origin);
            let section = out
                .origin
                .get(slot)
                .map_or(program.section.clone(), |&(s, _)| {
                    self.section_name(s).to_string()
                });
            return Err(ObjectError::Decode {
                section,
                program: program.name,
                source: e,
            });
        }
        Ok(program)
    }
}

/// A program being linked.
#[derive(Default)]
struct Linked {
    insns: Vec<RawInsn>,
    /// Section and section-relative index of every linked slot, for error messages.
    origin: Vec<(usize, usize)>,
    functions: Vec<Function>,
    /// Linked start of every function appended so far.
    placed: HashMap<usize, usize>,
}

impl Linked {
    /// Appends function `id` unchanged and returns its linked start.
    fn append(
        &mut self,
        reader: &Reader<'_, '_>,
        id: usize,
        program: &str,
    ) -> Result<usize, ObjectError> {
        let f = &reader.funcs[id];
        let start = self.insns.len();
        if start.saturating_add(f.len) > MAX_PROGRAM_SLOTS {
            return Err(ObjectError::Program {
                program: program.to_string(),
                reason: format!(
                    "linked program exceeds the kernel limit of {MAX_PROGRAM_SLOTS} instructions"
                ),
            });
        }
        let code = reader.code.get(&f.section).map_or(&[][..], Vec::as_slice);
        let body = code.get(f.start..f.start + f.len).unwrap_or_default();
        self.insns.extend_from_slice(body);
        self.origin
            .extend((f.start..f.start + body.len()).map(|i| (f.section, i)));
        self.functions.push(Function {
            name: f.name.clone(),
            start,
            len: body.len(),
        });
        self.placed.insert(id, start);
        Ok(start)
    }
}

/// Rewrites the linked-slot index of a decode error to the index within its section, returning
/// the linked slot too.
fn relocate_decode_error(e: DecodeError, origin: &[(usize, usize)]) -> (usize, DecodeError) {
    let local = |i: usize| origin.get(i).map_or(i, |&(_, idx)| idx);
    match e {
        DecodeError::UnknownOpcode { index, code } => (
            index,
            DecodeError::UnknownOpcode {
                index: local(index),
                code,
            },
        ),
        DecodeError::InvalidField { index, code, what } => (
            index,
            DecodeError::InvalidField {
                index: local(index),
                code,
                what,
            },
        ),
        DecodeError::TruncatedImm64 { index } => (
            index,
            DecodeError::TruncatedImm64 {
                index: local(index),
            },
        ),
    }
}

/// Parses one BTF map definition struct; returns the map and the byte offset of its `values`
/// member, if any.
fn parse_btf_map_def(
    btf: &Btf,
    name: &str,
    type_id: TypeId,
) -> Result<(MapDef, Option<u64>), ObjectError> {
    let map_err = |reason: String| ObjectError::Map {
        map: name.to_string(),
        reason,
    };
    let (_, ty) = btf.skip_mods_and_typedefs(type_id)?;
    let Some(ty) = ty.filter(|t| matches!(t.kind, Kind::Struct { .. })) else {
        return Err(map_err(format!(
            "definition is a {}, expected a struct",
            ty.map_or("void", |t| t.kind_name())
        )));
    };
    let mut map_type = None;
    let (mut key_size, mut value_size, mut max_entries, mut flags) = (None, None, 0, 0);
    let mut values_offset = None;
    let mut values_type = None;
    let members = ty.members();
    for (i, m) in members.iter().enumerate() {
        let member = btf.str_at(m.name_off)?;
        let shown = printable(member.as_bytes());
        let int_field = || -> Result<u32, ObjectError> {
            let (_, ptr) = btf.skip_mods_and_typedefs(m.type_id)?;
            let array = match ptr.map(|t| &t.kind) {
                Some(&Kind::Ptr(target)) => btf.skip_mods_and_typedefs(target)?.1,
                _ => None,
            };
            match array.map(|t| &t.kind) {
                Some(&Kind::Array { nelems, .. }) => Ok(nelems),
                _ => Err(map_err(format!(
                    "member `{shown}` is not a pointer to an array (declare it with __uint)"
                ))),
            }
        };
        let pointee_size = || -> Result<u32, ObjectError> {
            let (_, ptr) = btf.skip_mods_and_typedefs(m.type_id)?;
            let Some(&Kind::Ptr(target)) = ptr.map(|t| &t.kind) else {
                return Err(map_err(format!(
                    "member `{shown}` is not a pointer (declare it with __type)"
                )));
            };
            let size = btf.resolve_size(target)?;
            u32::try_from(size).map_err(|_| map_err(format!("`{shown}` size {size} is too big")))
        };
        let set_size = |slot: &mut Option<u32>, size: u32, what: &str| match *slot {
            Some(old) if old != size => Err(map_err(format!(
                "conflicting {what} sizes {old} and {size}"
            ))),
            _ => {
                *slot = Some(size);
                Ok(())
            }
        };
        match member {
            "type" => map_type = Some(MapType(int_field()?)),
            "max_entries" => max_entries = int_field()?,
            "map_flags" => flags = int_field()?,
            "key_size" => set_size(&mut key_size, int_field()?, "key")?,
            "value_size" => set_size(&mut value_size, int_field()?, "value")?,
            "key" => set_size(&mut key_size, pointee_size()?, "key")?,
            "value" => set_size(&mut value_size, pointee_size()?, "value")?,
            "numa_node" | "pinning" | "map_extra" => {
                int_field()?;
            }
            "values" => {
                if i + 1 != members.len() {
                    return Err(map_err("member `values` must be the last member".into()));
                }
                let (_, array) = btf.skip_mods_and_typedefs(m.type_id)?;
                if !matches!(array.map(|t| &t.kind), Some(Kind::Array { nelems: 0, .. })) {
                    return Err(map_err(
                        "member `values` is not a zero-length array (declare it with __array)"
                            .into(),
                    ));
                }
                values_offset = Some(u64::from(m.bit_offset / 8));
                values_type = Some(m.type_id);
            }
            // libbpf in non-strict mode also ignores unknown members.
            _ => {}
        }
    }
    let Some(map_type) = map_type else {
        return Err(map_err("definition has no `type` member".into()));
    };
    if values_offset.is_some() {
        if map_type != MapType::PROG_ARRAY && !map_type.is_map_in_map() {
            return Err(map_err(format!(
                "`values` is only allowed in prog_array and map-in-map maps, not {}",
                map_type.name()
            )));
        }
        // The values are program or map file descriptors.
        if value_size.is_some_and(|v| v != 4) {
            return Err(map_err(format!(
                "conflicting value sizes {} and 4",
                value_size.unwrap_or_default()
            )));
        }
        value_size = Some(4);
    }
    let inner = match values_type {
        Some(values) if map_type.is_map_in_map() => {
            Some(Box::new(map_in_map::inner_template(btf, name, values)?))
        }
        _ => None,
    };
    Ok((
        MapDef {
            name: name.to_string(),
            map_type,
            key_size: key_size.unwrap_or(0),
            value_size: value_size.unwrap_or(0),
            max_entries,
            flags,
            origin: MapOrigin::Btf,
            initial_value: None,
            initial_programs: Vec::new(),
            inner,
            spin_lock: None,
        },
        values_offset,
    ))
}

/// The name libbpf gives the map of a global-data section (`internal_map_name`): up to 8
/// characters of the object name followed by the section name for `.rodata`, `.data` and `.bss`;
/// the section name alone for suffixed sections such as `.rodata.str1.1`; at most 15 characters,
/// with characters the kernel rejects replaced by `_`.
pub fn internal_map_name(object_name: &str, section: &str) -> String {
    let max = BPF_OBJ_NAME_LEN - 1;
    let suffix_len = section.len().clamp(7, max);
    let custom = section.get(1..).is_some_and(|rest| rest.contains('.'));
    let prefix_len = if custom {
        0
    } else {
        (BPF_OBJ_NAME_LEN - suffix_len - 1).min(object_name.len())
    };
    object_name
        .bytes()
        .take(prefix_len)
        .chain(section.bytes().take(suffix_len))
        .take(max)
        .map(|b| {
            if b.is_ascii_alphanumeric() || b == b'_' || b == b'.' {
                char::from(b)
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_map_names_follow_libbpf() {
        assert_eq!(
            internal_map_name("my_object_name", ".rodata"),
            "my_objec.rodata"
        );
        assert_eq!(internal_map_name("my_object_name", ".bss"), "my_objec.bss");
        assert_eq!(internal_map_name("obj", ".data"), "obj.data");
        assert_eq!(internal_map_name("obj", ".rodata.str1.1"), ".rodata.str1.1");
        assert_eq!(
            internal_map_name("obj", ".data.a_very_long_name"),
            ".data.a_very_lo"
        );
        assert_eq!(internal_map_name("a-b", ".data"), "a_b.data");
        assert_eq!(internal_map_name("", ".bss"), ".bss");
    }

    #[test]
    fn aligned_copies_misaligned_input() {
        let backing = [0u8; 33];
        let odd = &backing[1..];
        let mut storage = Vec::new();
        let out = aligned(odd, &mut storage);
        assert_eq!(out, odd);
        assert_eq!(out.as_ptr().align_offset(8), 0);
    }
}
