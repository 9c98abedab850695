//! A reader for `.BTF.ext`, the section clang writes beside `.BTF` with per-instruction debug and
//! relocation records: `func_info` (the BTF `FUNC` type of each function), `line_info` (the source
//! line of instructions) and CO-RE relocations (`bpf_core_relo`).
//!
//! Every record is kept section-relative, as the ELF stores it: [`crate::object`] remaps
//! `func_info` and `line_info` to the slots of each linked [`crate::Program`], and CO-RE
//! relocations are applied to the sections' instructions before linking. Strings (file names,
//! source text, CO-RE access strings) live in the `.BTF` string section, so reading them needs the
//! parsed [`Btf`].
//!
//! The layout is `struct btf_ext_header` and `struct btf_ext_info_sec` of libbpf
//! (tools/lib/bpf/libbpf_internal.h); the records are the kernel's `struct bpf_func_info`,
//! `struct bpf_line_info` and `struct bpf_core_relo` (include/uapi/linux/bpf.h). Each info block
//! starts with its record size, which may exceed the size this reader knows (newer compilers may
//! append fields): the known prefix of each record is read and the rest skipped, as libbpf does.
//!
//! Parsing never panics; malformed input is a [`BtfExtError`] naming the part and offset.

use crate::btf::{Btf, BtfError, TypeId, BTF_MAGIC};

mod write;
pub use write::{move_records, ExtBlock, MovedExt};

/// Size of the header up to and including `line_info_len` (`struct btf_ext_header` without the
/// optional CO-RE part).
const HEADER_MIN_LEN: u32 = 24;
/// Size of the header including `core_relo_off` and `core_relo_len`.
const HEADER_CORE_LEN: u32 = 32;
/// `sizeof(struct bpf_func_info)`.
const FUNC_INFO_MIN: u32 = 8;
/// `sizeof(struct bpf_line_info)`.
const LINE_INFO_MIN: u32 = 16;
/// `sizeof(struct bpf_core_relo)`.
const CORE_RELO_MIN: u32 = 16;
/// Bytes of one instruction slot; `insn_off` fields in the ELF are byte offsets.
const INSN_SIZE: u32 = 8;

/// The column of a `line_info` record is the low 10 bits of `line_col` and the line the rest
/// (`BPF_LINE_INFO_LINE_NUM`, `BPF_LINE_INFO_LINE_COL` in include/uapi/linux/bpf.h).
const LINE_COL_BITS: u32 = 10;

/// A malformed `.BTF.ext` section.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BtfExtError {
    /// A part of the section lies beyond its end.
    #[error("truncated .BTF.ext: {what} at offset {offset:#x} past end of section (size {size})")]
    Truncated {
        what: &'static str,
        offset: u64,
        size: usize,
    },
    /// The section does not start with the BTF magic.
    #[error("bad .BTF.ext magic {0:#06x}, expected 0xeb9f")]
    BadMagic(u16),
    /// The header names a version other than 1.
    #[error("unsupported .BTF.ext version {0}, expected 1")]
    UnsupportedVersion(u8),
    /// The header length is shorter than the fixed header.
    #[error(".BTF.ext header length {0} is shorter than the 24-byte header")]
    BadHeaderLen(u32),
    /// An info block's record size is smaller than its record.
    #[error(".BTF.ext {what} record size {size} is smaller than the {min}-byte record")]
    RecordSize {
        what: &'static str,
        size: u32,
        min: u32,
    },
    /// A record's instruction offset is not a multiple of the instruction size.
    #[error(
        ".BTF.ext {what} record of section {section} has insn_off {offset:#x}, not a multiple of 8"
    )]
    Misaligned {
        what: &'static str,
        section: String,
        offset: u32,
    },
    /// A string (section name, file name, source line, access string) is invalid.
    #[error(".BTF.ext {what}: {source}")]
    String {
        what: &'static str,
        #[source]
        source: BtfError,
    },
    /// A CO-RE access string is not a `:`-separated list of numbers.
    #[error(".BTF.ext CO-RE relocation at insn {insn} of section {section}: bad access string `{access}`")]
    BadAccess {
        section: String,
        insn: usize,
        access: String,
    },
}

/// A `bpf_func_info` record: the BTF `FUNC` type of the function starting at an instruction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExtFuncInfo {
    /// ELF section of the function.
    pub section: String,
    /// Instruction index of the function's start within its section.
    pub insn: usize,
    /// The function's BTF `FUNC` type.
    pub type_id: TypeId,
}

/// A `bpf_line_info` record: the source line an instruction was compiled from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExtLineInfo {
    /// ELF section of the instruction.
    pub section: String,
    /// Instruction index within the section.
    pub insn: usize,
    /// The source location, strings resolved.
    pub source: SourceLine,
}

/// A source location with its strings, as `line_info` gives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceLine {
    /// Offset of the file name in the `.BTF` string section (the kernel wants the offset).
    pub file_name_off: u32,
    /// Offset of the source text in the `.BTF` string section.
    pub line_off: u32,
    /// The file name.
    pub file: String,
    /// The source text of the line (may be empty).
    pub text: String,
    /// 1-based line number.
    pub line: u32,
    /// 1-based column (0 when unknown).
    pub column: u32,
}

/// A CO-RE relocation kind, `enum bpf_core_relo_kind` (include/uapi/linux/bpf.h).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CoreReloKind(pub u32);

impl CoreReloKind {
    /// Byte offset of a field.
    pub const FIELD_BYTE_OFFSET: CoreReloKind = CoreReloKind(0);
    /// Byte size of a field.
    pub const FIELD_BYTE_SIZE: CoreReloKind = CoreReloKind(1);
    /// Whether a field exists in the target.
    pub const FIELD_EXISTS: CoreReloKind = CoreReloKind(2);
    /// Whether a field is signed.
    pub const FIELD_SIGNED: CoreReloKind = CoreReloKind(3);
    /// Left shift of a bitfield read as a u64.
    pub const FIELD_LSHIFT_U64: CoreReloKind = CoreReloKind(4);
    /// Right shift of a bitfield read as a u64.
    pub const FIELD_RSHIFT_U64: CoreReloKind = CoreReloKind(5);
    /// A type's id in the object's own BTF.
    pub const TYPE_ID_LOCAL: CoreReloKind = CoreReloKind(6);
    /// A type's id in the target BTF.
    pub const TYPE_ID_TARGET: CoreReloKind = CoreReloKind(7);
    /// Whether a type exists in the target.
    pub const TYPE_EXISTS: CoreReloKind = CoreReloKind(8);
    /// A type's size in the target.
    pub const TYPE_SIZE: CoreReloKind = CoreReloKind(9);
    /// Whether an enumerator exists in the target.
    pub const ENUMVAL_EXISTS: CoreReloKind = CoreReloKind(10);
    /// An enumerator's value in the target.
    pub const ENUMVAL_VALUE: CoreReloKind = CoreReloKind(11);
    /// Whether a type matches the target's (`bpf_core_type_matches`).
    pub const TYPE_MATCHES: CoreReloKind = CoreReloKind(12);

    const NAMES: &'static [&'static str] = &[
        "byte_off",
        "byte_sz",
        "field_exists",
        "signed",
        "lshift_u64",
        "rshift_u64",
        "local_type_id",
        "target_type_id",
        "type_exists",
        "type_size",
        "enumval_exists",
        "enumval_value",
        "type_matches",
    ];

    /// libbpf's short name of the kind (`core_relo_kind_str`), `unknown` for others.
    pub fn name(self) -> &'static str {
        Self::NAMES
            .get(self.0 as usize)
            .copied()
            .unwrap_or("unknown")
    }
}

/// A `bpf_core_relo` record, its access string resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoreRelo {
    /// ELF section of the relocated instruction.
    pub section: String,
    /// Instruction index within the section.
    pub insn: usize,
    /// The root type in the object's BTF.
    pub type_id: TypeId,
    /// Offset of the access string in the `.BTF` string section.
    pub access_str_off: u32,
    /// The access string: `:`-separated indices (first an array index of the root, then member
    /// or array indices) for field relocations, an enumerator index for enum relocations, `0`
    /// for type relocations.
    pub access: String,
    /// What is relocated.
    pub kind: CoreReloKind,
}

impl CoreRelo {
    /// The access string's indices.
    pub fn access_indices(&self) -> Result<Vec<u32>, BtfExtError> {
        self.access
            .split(':')
            .map(|s| s.parse::<u32>())
            .collect::<Result<_, _>>()
            .map_err(|_| BtfExtError::BadAccess {
                section: self.section.clone(),
                insn: self.insn,
                access: self.access.clone(),
            })
    }
}

/// A parsed `.BTF.ext` section: every record of every section, in section order.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct BtfExt {
    pub func_info: Vec<ExtFuncInfo>,
    pub line_info: Vec<ExtLineInfo>,
    pub core_relos: Vec<CoreRelo>,
}

fn u32_at(data: &[u8], offset: u64, what: &'static str) -> Result<u32, BtfExtError> {
    usize::try_from(offset)
        .ok()
        .and_then(|o| data.get(o..o.checked_add(4)?))
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .ok_or(BtfExtError::Truncated {
            what,
            offset,
            size: data.len(),
        })
}

/// The records of one info block: `(section name, records)` pairs.
type SectionRecords<'d> = Vec<(String, Vec<&'d [u8]>)>;

/// One info block's records, split per section: `(section name, record bytes)` pairs, each record
/// at least `min` bytes long (the rest of a longer record is left to newer readers).
fn info_records<'d>(
    data: &'d [u8],
    start: u64,
    len: u32,
    min: u32,
    btf: &Btf,
    what: &'static str,
) -> Result<SectionRecords<'d>, BtfExtError> {
    let mut out = Vec::new();
    if len == 0 {
        return Ok(out);
    }
    let end = start + u64::from(len);
    if end > data.len() as u64 {
        return Err(BtfExtError::Truncated {
            what,
            offset: start,
            size: data.len(),
        });
    }
    let record_size = u32_at(data, start, what)?;
    if record_size < min {
        return Err(BtfExtError::RecordSize {
            what,
            size: record_size,
            min,
        });
    }
    let mut pos = start + 4;
    while pos < end {
        let name_off = u32_at(data, pos, what)?;
        let count = u32_at(data, pos + 4, what)?;
        pos += 8;
        let section = btf
            .str_at(name_off)
            .map_err(|source| BtfExtError::String {
                what: "section name",
                source,
            })?
            .to_string();
        let bytes = u64::from(count) * u64::from(record_size);
        if pos + bytes > end {
            return Err(BtfExtError::Truncated {
                what,
                offset: pos,
                size: data.len(),
            });
        }
        // In bounds: pos + bytes <= end <= data.len().
        let records = (0..u64::from(count))
            .map(|i| {
                let at = (pos + i * u64::from(record_size)) as usize;
                &data[at..at + min as usize]
            })
            .collect();
        out.push((section, records));
        pos += bytes;
    }
    Ok(out)
}

fn word(record: &[u8], i: usize) -> u32 {
    let b = &record[4 * i..4 * i + 4];
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

fn insn_index(what: &'static str, section: &str, insn_off: u32) -> Result<usize, BtfExtError> {
    if !insn_off.is_multiple_of(INSN_SIZE) {
        return Err(BtfExtError::Misaligned {
            what,
            section: section.to_string(),
            offset: insn_off,
        });
    }
    Ok((insn_off / INSN_SIZE) as usize)
}

fn string(btf: &Btf, offset: u32, what: &'static str) -> Result<String, BtfExtError> {
    btf.str_at(offset)
        .map(str::to_string)
        .map_err(|source| BtfExtError::String { what, source })
}

/// The length of a `.BTF.ext` section's header, once its magic number and version are checked:
/// what the reader and the record mover both start from.
pub(crate) fn header_len(data: &[u8]) -> Result<u32, BtfExtError> {
    if data.len() < HEADER_MIN_LEN as usize {
        return Err(BtfExtError::Truncated {
            what: "header",
            offset: 0,
            size: data.len(),
        });
    }
    let magic = u16::from_le_bytes([data[0], data[1]]);
    if magic != BTF_MAGIC {
        return Err(BtfExtError::BadMagic(magic));
    }
    if data[2] != 1 {
        return Err(BtfExtError::UnsupportedVersion(data[2]));
    }
    let hdr_len = u32_at(data, 4, "header")?;
    if hdr_len < HEADER_MIN_LEN {
        return Err(BtfExtError::BadHeaderLen(hdr_len));
    }
    Ok(hdr_len)
}

impl BtfExt {
    /// Parses a `.BTF.ext` section whose strings live in `btf`.
    pub fn parse(data: &[u8], btf: &Btf) -> Result<BtfExt, BtfExtError> {
        let hdr_len = header_len(data)?;
        let base = u64::from(hdr_len);
        let field = |i: u64| u32_at(data, 8 + 4 * i, "header");
        let mut ext = BtfExt::default();

        let (off, len) = (field(0)?, field(1)?);
        let what = "func_info";
        for (section, records) in
            info_records(data, base + u64::from(off), len, FUNC_INFO_MIN, btf, what)?
        {
            for r in records {
                ext.func_info.push(ExtFuncInfo {
                    insn: insn_index(what, &section, word(r, 0))?,
                    type_id: word(r, 1),
                    section: section.clone(),
                });
            }
        }

        let (off, len) = (field(2)?, field(3)?);
        let what = "line_info";
        for (section, records) in
            info_records(data, base + u64::from(off), len, LINE_INFO_MIN, btf, what)?
        {
            for r in records {
                let (file_name_off, line_off, line_col) = (word(r, 1), word(r, 2), word(r, 3));
                ext.line_info.push(ExtLineInfo {
                    insn: insn_index(what, &section, word(r, 0))?,
                    source: SourceLine {
                        file_name_off,
                        line_off,
                        file: string(btf, file_name_off, "line_info file name")?,
                        text: string(btf, line_off, "line_info source line")?,
                        line: line_col >> LINE_COL_BITS,
                        column: line_col & ((1 << LINE_COL_BITS) - 1),
                    },
                    section: section.clone(),
                });
            }
        }

        if hdr_len >= HEADER_CORE_LEN {
            let (off, len) = (field(4)?, field(5)?);
            let what = "CO-RE relocation";
            for (section, records) in
                info_records(data, base + u64::from(off), len, CORE_RELO_MIN, btf, what)?
            {
                for r in records {
                    let access_str_off = word(r, 2);
                    ext.core_relos.push(CoreRelo {
                        insn: insn_index(what, &section, word(r, 0))?,
                        type_id: word(r, 1),
                        access_str_off,
                        access: string(btf, access_str_off, "CO-RE access string")?,
                        kind: CoreReloKind(word(r, 3)),
                        section: section.clone(),
                    });
                }
            }
        }
        Ok(ext)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `.BTF` with no types and the string table `strings`.
    fn btf(strings: &[u8]) -> Btf {
        let mut out = Vec::new();
        out.extend_from_slice(&BTF_MAGIC.to_le_bytes());
        out.extend_from_slice(&[1, 0]);
        for w in [24u32, 0, 0, 0, strings.len() as u32] {
            out.extend_from_slice(&w.to_le_bytes());
        }
        out.extend_from_slice(strings);
        Btf::parse(&out).unwrap()
    }

    /// Records of one section: its name's offset and each record's words.
    type Sec<'a> = (u32, &'a [&'a [u32]]);

    /// A `.BTF.ext` of the three blocks, each `(record size, sections)`.
    fn ext(blocks: [(u32, &[Sec<'_>]); 3]) -> Vec<u8> {
        let mut body = Vec::new();
        let mut header = Vec::new();
        for (size, secs) in blocks {
            let start = body.len() as u32;
            if !secs.is_empty() {
                body.extend_from_slice(&size.to_le_bytes());
                for (name, records) in secs {
                    body.extend_from_slice(&name.to_le_bytes());
                    body.extend_from_slice(&(records.len() as u32).to_le_bytes());
                    for r in *records {
                        let mut bytes: Vec<u8> = r.iter().flat_map(|w| w.to_le_bytes()).collect();
                        bytes.resize(size as usize, 0xee);
                        body.extend_from_slice(&bytes);
                    }
                }
            }
            header.extend_from_slice(&start.to_le_bytes());
            header.extend_from_slice(&(body.len() as u32 - start).to_le_bytes());
        }
        let mut out = Vec::new();
        out.extend_from_slice(&BTF_MAGIC.to_le_bytes());
        out.extend_from_slice(&[1, 0]);
        out.extend_from_slice(&HEADER_CORE_LEN.to_le_bytes());
        out.extend_from_slice(&header);
        out.extend_from_slice(&body);
        out
    }

    const STRINGS: &[u8] = b"\0xdp\0a.c\0return 1;\0.text\x000:1\0";

    #[test]
    fn reads_every_record_kind_with_its_strings() {
        let btf = btf(STRINGS);
        let data = ext([
            (8, &[(1, &[&[0, 7]]), (19, &[&[16, 9]])]),
            // A longer record than the kernel's: the tail is skipped.
            (20, &[(1, &[&[8, 5, 9, (12 << 10) | 3]])]),
            (16, &[(1, &[&[24, 4, 25, 0]])]),
        ]);
        let ext = BtfExt::parse(&data, &btf).unwrap();
        assert_eq!(
            ext.func_info,
            vec![
                ExtFuncInfo {
                    section: "xdp".into(),
                    insn: 0,
                    type_id: 7
                },
                ExtFuncInfo {
                    section: ".text".into(),
                    insn: 2,
                    type_id: 9
                }
            ]
        );
        let line = &ext.line_info[0];
        assert_eq!((line.section.as_str(), line.insn), ("xdp", 1));
        assert_eq!(
            line.source,
            SourceLine {
                file_name_off: 5,
                line_off: 9,
                file: "a.c".into(),
                text: "return 1;".into(),
                line: 12,
                column: 3,
            }
        );
        let relo = &ext.core_relos[0];
        assert_eq!((relo.insn, relo.type_id), (3, 4));
        assert_eq!(relo.kind, CoreReloKind::FIELD_BYTE_OFFSET);
        assert_eq!(relo.access, "0:1");
        assert_eq!(relo.access_indices().unwrap(), vec![0, 1]);
    }

    #[test]
    fn malformed_sections_are_errors() {
        let btf = btf(STRINGS);
        let good = ext([(8, &[(1, &[&[0, 7]])]), (16, &[]), (16, &[])]);
        assert!(BtfExt::parse(&good, &btf).is_ok());
        for len in 0..good.len() {
            assert!(BtfExt::parse(&good[..len], &btf).is_err(), "prefix {len}");
        }
        let small = ext([(4, &[(1, &[&[0]])]), (16, &[]), (16, &[])]);
        assert!(matches!(
            BtfExt::parse(&small, &btf),
            Err(BtfExtError::RecordSize { .. })
        ));
        let misaligned = ext([(8, &[(1, &[&[3, 7]])]), (16, &[]), (16, &[])]);
        assert!(matches!(
            BtfExt::parse(&misaligned, &btf),
            Err(BtfExtError::Misaligned { .. })
        ));
        let bad_name = ext([(8, &[(999, &[&[0, 7]])]), (16, &[]), (16, &[])]);
        assert!(matches!(
            BtfExt::parse(&bad_name, &btf),
            Err(BtfExtError::String { .. })
        ));
        let relo = CoreRelo {
            section: "xdp".into(),
            insn: 0,
            type_id: 1,
            access_str_off: 0,
            access: "0:x".into(),
            kind: CoreReloKind::FIELD_EXISTS,
        };
        assert!(relo.access_indices().is_err());
    }
}
