//! The `.BTF` and `.BTF.ext` sections of a written object: the map definitions libbpf and
//! linerate read from `.maps`, the `FUNC` of every program, and the `func_info` / `line_info`
//! records that hand them to the kernel (see the layout in [`super`]).
//!
//! Types are appended to a [`Btf`] and shared where equal (one `int (*)[N]` per `N`, one
//! integer type per size), so the section holds each type once whatever the number of maps.

use std::collections::HashMap;

use crate::btf::{Btf, Kind, Member, Param, Type, TypeId, VarSecinfo, BTF_MAGIC};
use crate::program::{MapType, ObjectBtf};

use super::{EmitError, MapSpec};

/// `BTF_INT_SIGNED`, in the encoding bits (24..28) of an `INT`'s encoding word.
const INT_SIGNED: u32 = 1 << 24;
/// `BTF_VAR_GLOBAL_ALLOCATED`.
const VAR_GLOBAL_ALLOCATED: u32 = 1;
/// `BTF_FUNC_GLOBAL`.
const FUNC_GLOBAL: u32 = 1;
/// Bytes of a pointer, the size of every member of a map definition.
const POINTER_BYTES: u32 = 8;
/// `sizeof(struct bpf_spin_lock)`.
const SPIN_LOCK_BYTES: u32 = 4;
/// `offsetof(struct bpf_lpm_trie_key_u8, data)`: the prefix length before an LPM key's data.
const LPM_PREFIXLEN_BYTES: u32 = 4;
/// `struct xdp_md`'s `__u32` fields in order (include/uapi/linux/bpf.h), which the kernel
/// matches a program's context argument against by the struct's name.
const XDP_MD_FIELDS: [&str; 6] = [
    "data",
    "data_end",
    "data_meta",
    "ingress_ifindex",
    "rx_queue_index",
    "egress_ifindex",
];
/// The `.BTF.ext` header length with the CO-RE fields (which stay empty).
const EXT_HEADER_LEN: u32 = 32;
/// `sizeof(struct bpf_func_info)` and `sizeof(struct bpf_line_info)`.
const FUNC_INFO_LEN: u32 = 8;
const LINE_INFO_LEN: u32 = 16;
/// The column is the low 10 bits of a `line_info` record's `line_col`, the line the rest.
const LINE_COL_BITS: u32 = 10;
/// Largest line number a `line_col` word holds.
pub(super) const MAX_LINE: u32 = u32::MAX >> LINE_COL_BITS;
/// Largest column a `line_col` word holds.
pub(super) const MAX_COLUMN: u32 = (1 << LINE_COL_BITS) - 1;

/// A `.BTF` section being built.
pub(super) struct BtfBuilder {
    btf: Btf,
    strings: HashMap<String, u32>,
    ints: HashMap<(u32, bool), TypeId>,
    arrays: HashMap<(TypeId, u32), TypeId>,
    pointers: HashMap<TypeId, TypeId>,
    array_index: Option<TypeId>,
    xdp_md_pointer: Option<TypeId>,
    program_proto: Option<TypeId>,
}

impl BtfBuilder {
    pub(super) fn new() -> BtfBuilder {
        let mut btf = Btf::default();
        // Offset 0 is the empty string, the name of anonymous types.
        btf.push_string("");
        BtfBuilder {
            btf,
            strings: HashMap::from([(String::new(), 0)]),
            ints: HashMap::new(),
            arrays: HashMap::new(),
            pointers: HashMap::new(),
            array_index: None,
            xdp_md_pointer: None,
            program_proto: None,
        }
    }

    /// The offset of `s` in the string section, appended once.
    pub(super) fn string(&mut self, s: &str) -> u32 {
        if let Some(&offset) = self.strings.get(s) {
            return offset;
        }
        let offset = self.btf.push_string(s);
        self.strings.insert(s.to_string(), offset);
        offset
    }

    fn push(&mut self, name: &str, kind: Kind) -> TypeId {
        let name_off = self.string(name);
        self.btf.push_type(Type {
            name_off,
            kind_flag: false,
            kind,
        })
    }

    /// The C integer type of `bytes` bytes (1, 2, 4 or 8), signed or not.
    fn int(&mut self, bytes: u32, signed: bool) -> TypeId {
        if let Some(&id) = self.ints.get(&(bytes, signed)) {
            return id;
        }
        let name = match (bytes, signed) {
            (1, false) => "unsigned char",
            (2, false) => "unsigned short",
            (4, false) => "unsigned int",
            (8, false) => "unsigned long long",
            (1, true) => "signed char",
            (2, true) => "short",
            (4, true) => "int",
            _ => "long long",
        };
        let encoding = if signed { INT_SIGNED } else { 0 } | (bytes * 8);
        let id = self.push(
            name,
            Kind::Int {
                size: bytes,
                encoding,
            },
        );
        self.ints.insert((bytes, signed), id);
        id
    }

    /// `elem[nelems]`, indexed by clang's `__ARRAY_SIZE_TYPE__`.
    fn array(&mut self, elem: TypeId, nelems: u32) -> TypeId {
        if let Some(&id) = self.arrays.get(&(elem, nelems)) {
            return id;
        }
        let index = match self.array_index {
            Some(id) => id,
            None => {
                let id = self.push(
                    "__ARRAY_SIZE_TYPE__",
                    Kind::Int {
                        size: 4,
                        encoding: 32,
                    },
                );
                self.array_index = Some(id);
                id
            }
        };
        let id = self.push(
            "",
            Kind::Array {
                elem,
                index,
                nelems,
            },
        );
        self.arrays.insert((elem, nelems), id);
        id
    }

    fn pointer(&mut self, target: TypeId) -> TypeId {
        if let Some(&id) = self.pointers.get(&target) {
            return id;
        }
        let id = self.push("", Kind::Ptr(target));
        self.pointers.insert(target, id);
        id
    }

    /// `int (*)[value]`: how a BTF-defined map says a number (libbpf's `__uint`).
    fn number(&mut self, value: u32) -> TypeId {
        let int = self.int(4, true);
        let array = self.array(int, value);
        self.pointer(array)
    }

    fn anonymous_struct(&mut self, size: u32, fields: &[(&str, TypeId, u32)]) -> TypeId {
        let members = fields
            .iter()
            .map(|&(name, type_id, bit_offset)| Member {
                name_off: self.string(name),
                type_id,
                bit_offset,
                bitfield_size: 0,
            })
            .collect();
        self.push("", Kind::Struct { size, members })
    }

    /// The type of a map's key or value of `bytes` bytes: an unsigned integer where one has that
    /// size (array maps demand a 32-bit integer key), else `unsigned char[bytes]`; an LPM trie's
    /// key is a struct, as the kernel demands, of the prefix length and the data bytes.
    fn key_or_value(
        &mut self,
        map: &MapSpec,
        bytes: u32,
        is_key: bool,
    ) -> Result<TypeId, EmitError> {
        if is_key && map.map_type == MapType::LPM_TRIE {
            let data_bytes = bytes
                .checked_sub(LPM_PREFIXLEN_BYTES)
                .filter(|&n| n > 0)
                .ok_or_else(|| {
                    map.error(format!(
                        "an LPM trie key is a 4-byte prefix length and at least one data byte, \
                         not {bytes} bytes"
                    ))
                })?;
            let prefixlen = self.int(4, false);
            let byte = self.int(1, false);
            let data = self.array(byte, data_bytes);
            return Ok(
                self.anonymous_struct(bytes, &[("prefixlen", prefixlen, 0), ("data", data, 32)])
            );
        }
        Ok(match bytes {
            1 | 2 | 4 | 8 => self.int(bytes, false),
            _ => {
                let byte = self.int(1, false);
                self.array(byte, bytes)
            }
        })
    }

    /// A value of `bytes` bytes holding a `struct bpf_spin_lock` at byte `lock`: an anonymous
    /// struct of the bytes before, the lock (named `bpf_spin_lock`, which is how the kernel
    /// finds it) and the bytes after.
    fn value_with_lock(
        &mut self,
        map: &MapSpec,
        bytes: u32,
        lock: u32,
    ) -> Result<TypeId, EmitError> {
        let misplaced = || {
            map.error(format!(
                "a spin lock at byte {lock} is not 4-byte aligned inside the {bytes}-byte value"
            ))
        };
        let end = lock.checked_add(SPIN_LOCK_BYTES).ok_or_else(misplaced)?;
        let after = bytes
            .checked_sub(end)
            .filter(|_| lock.is_multiple_of(SPIN_LOCK_BYTES))
            .ok_or_else(misplaced)?;
        let (lock_bits, end_bits) = lock
            .checked_mul(8)
            .zip(end.checked_mul(8))
            .ok_or_else(|| map.error(format!("a {bytes}-byte value is too large for BTF")))?;
        let val = self.int(4, false);
        let val_name = self.string("val");
        let lock_type = self.push(
            "bpf_spin_lock",
            Kind::Struct {
                size: SPIN_LOCK_BYTES,
                members: vec![Member {
                    name_off: val_name,
                    type_id: val,
                    bit_offset: 0,
                    bitfield_size: 0,
                }],
            },
        );
        let byte = self.int(1, false);
        let mut fields = Vec::new();
        if lock > 0 {
            fields.push(("before", self.array(byte, lock), 0));
        }
        fields.push(("lock", lock_type, lock_bits));
        if after > 0 {
            fields.push(("after", self.array(byte, after), end_bits));
        }
        Ok(self.anonymous_struct(bytes, &fields))
    }

    /// The anonymous struct defining `map` in `.maps`, and its size in `.maps`.
    pub(super) fn map_definition(&mut self, map: &MapSpec) -> Result<(TypeId, u32), EmitError> {
        let typed = !ObjectBtf::UNTYPED_MAPS.contains(&map.map_type.0);
        if map.spin_lock.is_some() && (!typed || map.value_size == 0) {
            return Err(map.error(format!(
                "a {} map has no typed value to hold a spin lock",
                map.map_type.name()
            )));
        }
        let mut fields: Vec<(&str, TypeId)> = vec![("type", self.number(map.map_type.0))];
        for (is_key, bytes) in [(true, map.key_size), (false, map.value_size)] {
            if bytes == 0 {
                continue;
            }
            let field = match (is_key, typed) {
                (true, true) => {
                    let key = self.key_or_value(map, bytes, true)?;
                    ("key", self.pointer(key))
                }
                (false, true) => {
                    let value = match map.spin_lock {
                        Some(lock) => self.value_with_lock(map, bytes, lock)?,
                        None => self.key_or_value(map, bytes, false)?,
                    };
                    ("value", self.pointer(value))
                }
                (true, false) => ("key_size", self.number(bytes)),
                (false, false) => ("value_size", self.number(bytes)),
            };
            fields.push(field);
        }
        fields.push(("max_entries", self.number(map.max_entries)));
        if map.flags != 0 {
            fields.push(("map_flags", self.number(map.flags)));
        }
        let placed: Vec<(&str, TypeId, u32)> = (0u32..)
            .zip(&fields)
            .map(|(i, &(name, id))| (name, id, i * POINTER_BYTES * 8))
            .collect();
        let size = POINTER_BYTES * placed.len() as u32;
        Ok((self.anonymous_struct(size, &placed), size))
    }

    /// `DATASEC .maps` of the map variables: `(name, definition, offset, size)` each.
    pub(super) fn maps_section(&mut self, maps: &[(&str, TypeId, u32, u32)], size: u32) {
        let vars = maps
            .iter()
            .map(|&(name, definition, offset, size)| VarSecinfo {
                type_id: self.push(
                    name,
                    Kind::Var {
                        type_id: definition,
                        linkage: VAR_GLOBAL_ALLOCATED,
                    },
                ),
                offset,
                size,
            })
            .collect();
        self.push(".maps", Kind::Datasec { size, vars });
    }

    /// The global `FUNC` of XDP program `name`: `int name(struct xdp_md *ctx)`.
    pub(super) fn program_function(&mut self, name: &str) -> TypeId {
        let proto = match self.program_proto {
            Some(id) => id,
            None => {
                let ctx = self.xdp_md_pointer();
                let int = self.int(4, true);
                let param = Param {
                    name_off: self.string("ctx"),
                    type_id: ctx,
                };
                let id = self.push(
                    "",
                    Kind::FuncProto {
                        ret: int,
                        params: vec![param],
                    },
                );
                self.program_proto = Some(id);
                id
            }
        };
        self.push(
            name,
            Kind::Func {
                proto,
                linkage: FUNC_GLOBAL,
            },
        )
    }

    fn xdp_md_pointer(&mut self) -> TypeId {
        if let Some(id) = self.xdp_md_pointer {
            return id;
        }
        let u32_type = self.int(4, false);
        let members = (0u32..)
            .zip(XDP_MD_FIELDS)
            .map(|(i, field)| Member {
                name_off: self.string(field),
                type_id: u32_type,
                bit_offset: i * 32,
                bitfield_size: 0,
            })
            .collect();
        let size = 4 * XDP_MD_FIELDS.len() as u32;
        let xdp_md = self.push("xdp_md", Kind::Struct { size, members });
        let id = self.pointer(xdp_md);
        self.xdp_md_pointer = Some(id);
        id
    }

    pub(super) fn to_bytes(&self) -> Vec<u8> {
        self.btf.to_bytes()
    }
}

/// One `line_info` record: the instruction slot in its section and the source it came from.
pub(super) struct LineRecord {
    pub slot: u32,
    pub file_name_off: u32,
    pub line_off: u32,
    pub line: u32,
    pub column: u32,
}

/// The records of one code section.
pub(super) struct SectionRecords {
    /// Offset of the section's name in the `.BTF` strings.
    pub name_off: u32,
    /// `(first slot, FUNC type)` of each program in the section, by slot.
    pub functions: Vec<(u32, TypeId)>,
    pub lines: Vec<LineRecord>,
}

fn push_words(out: &mut Vec<u8>, words: &[u32]) {
    for w in words {
        out.extend_from_slice(&w.to_le_bytes());
    }
}

/// One info block: the record size, then each section with records (libbpf refuses a section
/// without records, and a block without sections is left out: length 0). Records are given as
/// four words, of which the first `record_len / 4` are written.
fn info_block(record_len: u32, sections: &[(u32, Vec<[u32; 4]>)]) -> Result<Vec<u8>, EmitError> {
    let words = (record_len / 4) as usize;
    let mut out = Vec::new();
    for (name_off, records) in sections.iter().filter(|(_, r)| !r.is_empty()) {
        let count = u32::try_from(records.len())
            .map_err(|_| EmitError::Object("too many .BTF.ext records in one section".into()))?;
        push_words(&mut out, &[*name_off, count]);
        for record in records {
            push_words(&mut out, &record[..words]);
        }
    }
    if out.is_empty() {
        return Ok(out);
    }
    let mut block = record_len.to_le_bytes().to_vec();
    block.extend_from_slice(&out);
    Ok(block)
}

/// Byte offset of instruction slot `slot` (`.BTF.ext` counts in bytes).
fn byte_offset(slot: u32) -> Result<u32, EmitError> {
    slot.checked_mul(8).ok_or_else(|| {
        EmitError::Object(format!(
            "slot {slot} is beyond what .BTF.ext records can address"
        ))
    })
}

/// The `.BTF.ext` section: header, `func_info`, `line_info`, and no CO-RE relocations.
pub(super) fn btf_ext(sections: &[SectionRecords]) -> Result<Vec<u8>, EmitError> {
    let mut functions = Vec::with_capacity(sections.len());
    let mut lines = Vec::with_capacity(sections.len());
    for section in sections {
        let records = section
            .functions
            .iter()
            .map(|&(slot, type_id)| Ok([byte_offset(slot)?, type_id, 0, 0]))
            .collect::<Result<Vec<_>, EmitError>>()?;
        functions.push((section.name_off, records));
        let records = section
            .lines
            .iter()
            .map(|l| {
                let line_col = l.line << LINE_COL_BITS | l.column.min(MAX_COLUMN);
                Ok([byte_offset(l.slot)?, l.file_name_off, l.line_off, line_col])
            })
            .collect::<Result<Vec<_>, EmitError>>()?;
        lines.push((section.name_off, records));
    }
    let func_info = info_block(FUNC_INFO_LEN, &functions)?;
    let line_info = info_block(LINE_INFO_LEN, &lines)?;
    let too_big = || EmitError::Object(".BTF.ext is larger than 4 GiB".into());
    let func_len = u32::try_from(func_info.len()).map_err(|_| too_big())?;
    let line_len = u32::try_from(line_info.len()).map_err(|_| too_big())?;
    let core_off = func_len.checked_add(line_len).ok_or_else(too_big)?;
    let mut out = Vec::new();
    out.extend_from_slice(&BTF_MAGIC.to_le_bytes());
    out.extend_from_slice(&[1, 0]);
    push_words(
        &mut out,
        &[EXT_HEADER_LEN, 0, func_len, func_len, line_len, core_off, 0],
    );
    out.extend_from_slice(&func_info);
    out.extend_from_slice(&line_info);
    Ok(out)
}
