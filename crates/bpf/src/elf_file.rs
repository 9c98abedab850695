//! BPF ELF objects as a list of sections, read and written byte for byte: the writer the
//! optimizer's drop-in objects and the P4 compiler's output share.
//!
//! [`read_object`](crate::read_object) turns an object into programs and maps, which is all the
//! analyses need; writing an object back needs every section as it was, including those linerate
//! does not interpret (`.BTF`, `.BTF.ext`, license, `.rodata`, DWARF, sections of other tools),
//! so that a rewritten object loads wherever the input did. [`ElfFile`] is that: the sections in
//! their original order with their header fields and bytes, the symbol table and relocations
//! readable and writable as entries. [`ElfFile::to_bytes`] lays the file out anew (header, each
//! section's data at its alignment, the section headers) and rebuilds the section-name table;
//! section indices, and so every `sh_link`, `sh_info` and symbol's section, stay as they are.
//! Only little-endian 64-bit relocatable objects for `EM_BPF` are read, what clang's `-target
//! bpf` (`bpfel`) writes.

use crate::object::EM_BPF;

/// `SHT_NOBITS`: a section with a size but no bytes in the file (`.bss`).
pub const SHT_NOBITS: u32 = 8;
/// `SHT_SYMTAB`.
pub const SHT_SYMTAB: u32 = 2;
/// `SHT_STRTAB`.
pub const SHT_STRTAB: u32 = 3;
/// `SHT_REL`: relocations without addends, what BPF objects use.
pub const SHT_REL: u32 = 9;

const EHDR_LEN: usize = 64;
const SHDR_LEN: usize = 64;
const SYM_LEN: usize = 24;
const REL_LEN: usize = 16;
/// `ET_REL`.
const ET_REL: u16 = 1;

/// Why an object could not be read as sections.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ElfFileError {
    #[error("not an ELF file (no \\x7fELF magic)")]
    NotElf,
    #[error("{0}: only little-endian 64-bit relocatable EM_BPF objects are read")]
    Unsupported(String),
    #[error("truncated: {0}")]
    Truncated(String),
    #[error("section {index}: {message}")]
    Section { index: usize, message: String },
}

/// One section: its header fields but the name offset, file offset and size, which the layout
/// decides, and its bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Section {
    pub name: String,
    pub sh_type: u32,
    pub flags: u64,
    pub addr: u64,
    pub link: u32,
    pub info: u32,
    pub addralign: u64,
    pub entsize: u64,
    /// The bytes (empty for `SHT_NOBITS`, whose size is `nobits_size`).
    pub data: Vec<u8>,
    /// Size of an `SHT_NOBITS` section.
    pub nobits_size: u64,
}

impl Section {
    /// The section's size in its header.
    pub fn size(&self) -> u64 {
        if self.sh_type == SHT_NOBITS {
            self.nobits_size
        } else {
            self.data.len() as u64
        }
    }
}

/// An `Elf64_Sym`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Symbol {
    /// Offset of the name in the symbol table's string table (`sh_link`).
    pub name: u32,
    pub info: u8,
    pub other: u8,
    pub shndx: u16,
    pub value: u64,
    pub size: u64,
}

/// An `Elf64_Rel`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rel {
    pub offset: u64,
    pub symbol: u32,
    pub kind: u32,
}

/// A BPF object as its sections (index 0 is the null section).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ElfFile {
    /// `e_flags` of the header.
    pub flags: u32,
    pub sections: Vec<Section>,
    /// Index of the section-name table (`e_shstrndx`).
    pub shstrndx: usize,
    /// How the parsed file was laid out, so that writing it back reproduces its bytes.
    pub layout: FileLayout,
}

/// The parts of a file's layout that are not in its sections: the order of the sections' bytes
/// in the file and each section's name offset. Compilers choose both freely (LLVM writes the
/// relocation sections, the symbol table and the string table after the other sections, and
/// shares name suffixes: `.maps` inside `.rel.maps`); keeping them makes a rewrite that changes
/// nothing give back the input byte for byte. A default (empty) layout writes the sections in
/// index order and finds names in the section-name table.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileLayout {
    /// Section indices in the order their bytes appear in the file.
    pub order: Vec<usize>,
    /// The name offset of each section (by index) in the section-name table.
    pub name_offsets: Vec<u32>,
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// The NUL-terminated string at `offset` of a string table.
pub fn string_at(table: &[u8], offset: u32) -> Option<&str> {
    let rest = table.get(offset as usize..)?;
    let end = rest.iter().position(|&b| b == 0)?;
    std::str::from_utf8(&rest[..end]).ok()
}

impl ElfFile {
    /// Reads every section of `bytes`.
    pub fn parse(bytes: &[u8]) -> Result<ElfFile, ElfFileError> {
        if bytes.get(..4) != Some(b"\x7fELF") {
            return Err(ElfFileError::NotElf);
        }
        let truncated = |what: &str| ElfFileError::Truncated(what.into());
        let ident = bytes
            .get(..16)
            .ok_or_else(|| truncated("ELF identification"))?;
        if ident[4] != 2 || ident[5] != 1 {
            return Err(ElfFileError::Unsupported(format!(
                "class {} and data encoding {}",
                ident[4], ident[5]
            )));
        }
        let header = |at, what| u16_at(bytes, at).ok_or_else(|| truncated(what));
        let (e_type, machine) = (header(16, "e_type")?, header(18, "e_machine")?);
        if e_type != ET_REL || machine != EM_BPF {
            return Err(ElfFileError::Unsupported(format!(
                "type {e_type} and machine {machine}"
            )));
        }
        let shoff = u64_at(bytes, 40).ok_or_else(|| truncated("e_shoff"))? as usize;
        let flags = u32_at(bytes, 48).ok_or_else(|| truncated("e_flags"))?;
        let shentsize = usize::from(header(58, "e_shentsize")?);
        let shnum = usize::from(header(60, "e_shnum")?);
        let shstrndx = usize::from(header(62, "e_shstrndx")?);
        if shentsize != SHDR_LEN {
            return Err(ElfFileError::Unsupported(format!(
                "section header size {shentsize}"
            )));
        }
        struct Raw {
            name: u32,
            offset: u64,
            section: Section,
        }
        let mut raw = Vec::with_capacity(shnum);
        for index in 0..shnum {
            let at = shoff
                .checked_add(index * SHDR_LEN)
                .ok_or_else(|| truncated("section headers"))?;
            let h = bytes
                .get(at..at + SHDR_LEN)
                .ok_or_else(|| truncated("section headers"))?;
            let field32 = |o| u32_at(h, o).unwrap_or(0);
            let field64 = |o| u64_at(h, o).unwrap_or(0);
            let (sh_type, offset, size) = (field32(4), field64(24) as usize, field64(32));
            let data = if sh_type == SHT_NOBITS || index == 0 {
                Vec::new()
            } else {
                offset
                    .checked_add(size as usize)
                    .and_then(|end| bytes.get(offset..end))
                    .ok_or_else(|| ElfFileError::Section {
                        index,
                        message: format!("{size} bytes at offset {offset} lie past the file"),
                    })?
                    .to_vec()
            };
            raw.push(Raw {
                name: field32(0),
                offset: offset as u64,
                section: Section {
                    name: String::new(),
                    sh_type,
                    flags: field64(8),
                    addr: field64(16),
                    link: field32(40),
                    info: field32(44),
                    addralign: field64(48),
                    entsize: field64(56),
                    nobits_size: if sh_type == SHT_NOBITS { size } else { 0 },
                    data,
                },
            });
        }
        let names = raw
            .get(shstrndx)
            .filter(|r| r.section.sh_type == SHT_STRTAB)
            .map(|r| r.section.data.clone())
            .ok_or_else(|| ElfFileError::Section {
                index: shstrndx,
                message: "the section-name table is missing".into(),
            })?;
        let mut order: Vec<usize> = (1..raw.len()).collect();
        order.sort_by_key(|&i| (raw[i].offset, i));
        let layout = FileLayout {
            order,
            name_offsets: raw.iter().map(|r| r.name).collect(),
        };
        let sections = raw
            .into_iter()
            .enumerate()
            .map(|(index, r)| {
                let name = string_at(&names, r.name).ok_or_else(|| ElfFileError::Section {
                    index,
                    message: format!("name offset {} is not in the section-name table", r.name),
                })?;
                Ok(Section {
                    name: name.to_string(),
                    ..r.section
                })
            })
            .collect::<Result<Vec<_>, ElfFileError>>()?;
        Ok(ElfFile {
            flags,
            sections,
            shstrndx,
            layout,
        })
    }

    /// The file: header, then each section's bytes at its alignment (in the parsed file's order
    /// where [`ElfFile::layout`] gives one, else in index order), then the section headers.
    /// Section names keep their offsets in the section-name table where the layout gives them and
    /// the name is still there (clang shares the table with the symbol names, which must keep
    /// their offsets); other names are found in the table or appended.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut names = self
            .sections
            .get(self.shstrndx)
            .map(|s| s.data.clone())
            .unwrap_or_default();
        if names.is_empty() {
            names.push(0);
        }
        let mut name_offsets = Vec::with_capacity(self.sections.len());
        for (i, s) in self.sections.iter().enumerate() {
            if i == 0 || s.name.is_empty() {
                name_offsets.push(0u32);
                continue;
            }
            let kept = self
                .layout
                .name_offsets
                .get(i)
                .copied()
                .filter(|&o| string_at(&names, o) == Some(s.name.as_str()));
            if let Some(offset) = kept {
                name_offsets.push(offset);
                continue;
            }
            let mut wanted = s.name.as_bytes().to_vec();
            wanted.push(0);
            let found = names
                .windows(wanted.len())
                .position(|w| w == wanted.as_slice());
            let offset = found.unwrap_or_else(|| {
                let at = names.len();
                names.extend_from_slice(&wanted);
                at
            });
            name_offsets.push(offset as u32);
        }
        let mut out = vec![0u8; EHDR_LEN];
        let mut placed = vec![(0u64, 0u64); self.sections.len()];
        for i in self.file_order() {
            let s = &self.sections[i];
            let data: &[u8] = if i == self.shstrndx { &names } else { &s.data };
            let align = s.addralign.max(1) as usize;
            if s.sh_type != SHT_NOBITS {
                out.resize(out.len().div_ceil(align) * align, 0);
            }
            let size = if s.sh_type == SHT_NOBITS {
                s.nobits_size
            } else {
                data.len() as u64
            };
            placed[i] = (out.len() as u64, size);
            if s.sh_type != SHT_NOBITS {
                out.extend_from_slice(data);
            }
        }
        out.resize(out.len().div_ceil(8) * 8, 0);
        let shoff = out.len() as u64;
        for (i, s) in self.sections.iter().enumerate() {
            let (offset, size) = placed[i];
            let mut h = Vec::with_capacity(SHDR_LEN);
            h.extend_from_slice(&name_offsets[i].to_le_bytes());
            h.extend_from_slice(&s.sh_type.to_le_bytes());
            h.extend_from_slice(&s.flags.to_le_bytes());
            h.extend_from_slice(&s.addr.to_le_bytes());
            h.extend_from_slice(&offset.to_le_bytes());
            h.extend_from_slice(&size.to_le_bytes());
            h.extend_from_slice(&s.link.to_le_bytes());
            h.extend_from_slice(&s.info.to_le_bytes());
            h.extend_from_slice(&s.addralign.to_le_bytes());
            h.extend_from_slice(&s.entsize.to_le_bytes());
            out.extend_from_slice(&h);
        }
        let mut header = Vec::with_capacity(EHDR_LEN);
        header.extend_from_slice(b"\x7fELF");
        header.extend_from_slice(&[2, 1, 1, 0]);
        header.extend_from_slice(&[0; 8]);
        header.extend_from_slice(&ET_REL.to_le_bytes());
        header.extend_from_slice(&EM_BPF.to_le_bytes());
        header.extend_from_slice(&1u32.to_le_bytes());
        header.extend_from_slice(&0u64.to_le_bytes()); // e_entry
        header.extend_from_slice(&0u64.to_le_bytes()); // e_phoff
        header.extend_from_slice(&shoff.to_le_bytes());
        header.extend_from_slice(&self.flags.to_le_bytes());
        header.extend_from_slice(&(EHDR_LEN as u16).to_le_bytes());
        header.extend_from_slice(&0u16.to_le_bytes()); // e_phentsize
        header.extend_from_slice(&0u16.to_le_bytes()); // e_phnum
        header.extend_from_slice(&(SHDR_LEN as u16).to_le_bytes());
        header.extend_from_slice(&(self.sections.len() as u16).to_le_bytes());
        header.extend_from_slice(&(self.shstrndx as u16).to_le_bytes());
        out[..EHDR_LEN].copy_from_slice(&header);
        out
    }

    /// The sections but the null one in the order their bytes are written: the layout's order
    /// when it names every section once, else index order.
    fn file_order(&self) -> Vec<usize> {
        let n = self.sections.len();
        let mut seen = vec![false; n];
        let valid = self.layout.order.len() + 1 == n
            && self
                .layout
                .order
                .iter()
                .all(|&i| i != 0 && i < n && !std::mem::replace(&mut seen[i], true));
        if valid {
            self.layout.order.clone()
        } else {
            (1..n).collect()
        }
    }

    /// Index of the section named `name`.
    pub fn section_index(&self, name: &str) -> Option<usize> {
        self.sections.iter().position(|s| s.name == name)
    }

    /// Index of the symbol table.
    pub fn symtab_index(&self) -> Option<usize> {
        self.sections.iter().position(|s| s.sh_type == SHT_SYMTAB)
    }

    /// The symbols of the symbol table (index 0 the null symbol); empty without one.
    pub fn symbols(&self) -> Vec<Symbol> {
        let Some(t) = self.symtab_index() else {
            return Vec::new();
        };
        self.sections[t]
            .data
            .chunks_exact(SYM_LEN)
            .map(|e| Symbol {
                name: u32_at(e, 0).unwrap_or(0),
                info: e[4],
                other: e[5],
                shndx: u16_at(e, 6).unwrap_or(0),
                value: u64_at(e, 8).unwrap_or(0),
                size: u64_at(e, 16).unwrap_or(0),
            })
            .collect()
    }

    /// Replaces the symbol table's entries (same count and order keep every relocation's
    /// symbol index valid).
    pub fn set_symbols(&mut self, symbols: &[Symbol]) -> Result<(), ElfFileError> {
        let t = self.symtab_index().ok_or(ElfFileError::Section {
            index: 0,
            message: "no symbol table".into(),
        })?;
        let mut data = Vec::with_capacity(symbols.len() * SYM_LEN);
        for s in symbols {
            data.extend_from_slice(&s.name.to_le_bytes());
            data.push(s.info);
            data.push(s.other);
            data.extend_from_slice(&s.shndx.to_le_bytes());
            data.extend_from_slice(&s.value.to_le_bytes());
            data.extend_from_slice(&s.size.to_le_bytes());
        }
        self.sections[t].data = data;
        Ok(())
    }

    /// The name of a symbol (from the symbol table's string table).
    pub fn symbol_name(&self, symbol: &Symbol) -> Option<&str> {
        let t = self.symtab_index()?;
        let strtab = self.sections.get(self.sections[t].link as usize)?;
        string_at(&strtab.data, symbol.name)
    }

    /// The `SHT_REL` section applying to section `target`, if any.
    pub fn rel_section_of(&self, target: usize) -> Option<usize> {
        self.sections
            .iter()
            .position(|s| s.sh_type == SHT_REL && s.info as usize == target)
    }

    /// The entries of relocation section `index`.
    pub fn rels(&self, index: usize) -> Vec<Rel> {
        self.sections
            .get(index)
            .map(|s| {
                s.data
                    .chunks_exact(REL_LEN)
                    .map(|e| {
                        let info = u64_at(e, 8).unwrap_or(0);
                        Rel {
                            offset: u64_at(e, 0).unwrap_or(0),
                            symbol: (info >> 32) as u32,
                            kind: info as u32,
                        }
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Replaces the entries of relocation section `index`.
    pub fn set_rels(&mut self, index: usize, rels: &[Rel]) {
        let mut data = Vec::with_capacity(rels.len() * REL_LEN);
        for r in rels {
            data.extend_from_slice(&r.offset.to_le_bytes());
            data.extend_from_slice(
                &((u64::from(r.symbol) << 32) | u64::from(r.kind)).to_le_bytes(),
            );
        }
        if let Some(s) = self.sections.get_mut(index) {
            s.data = data;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_headers_are_refused_by_name() {
        assert_eq!(ElfFile::parse(b"not elf"), Err(ElfFileError::NotElf));
        let mut head = b"\x7fELF".to_vec();
        assert!(matches!(
            ElfFile::parse(&head),
            Err(ElfFileError::Truncated(_))
        ));
        head.extend_from_slice(&[1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert!(matches!(
            ElfFile::parse(&head),
            Err(ElfFileError::Unsupported(_))
        ));
    }
}
