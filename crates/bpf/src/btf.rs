//! A compact reader for BTF, the BPF Type Format of an object's `.BTF` section.
//!
//! linerate needs BTF for one thing: reading BTF-defined map definitions from the `.maps` section
//! (see [`crate::object`]). This module parses the whole format nonetheless — the header, every
//! type kind the kernel defines (`INT` through `ENUM64`) and the string section — so that any
//! clang-produced `.BTF` section reads, and offers the few queries map parsing needs: looking a
//! type up by id, skipping modifiers and typedefs, resolving a type's size and finding a
//! `DATASEC` by name.
//!
//! Split BTF (a kernel module's, on top of vmlinux) reads too, with [`Btf::parse_split`]: its
//! type ids and string offsets continue after its base's (see [`split`]).
//!
//! Parsing never panics: every read is bounds-checked and every malformed input yields a
//! [`BtfError`] naming the offending offset or type id. Type-graph walks are depth-limited, so
//! reference cycles in corrupt input end in an error rather than a hang.

use std::sync::Arc;

/// A BTF type id. Id 0 is `void`; real types are numbered from 1 in section order.
pub type TypeId = u32;

mod encode;
mod fixup;
pub mod split;

pub use fixup::SectionLayout;

/// Magic number at the start of a BTF section.
pub const BTF_MAGIC: u16 = 0xeb9f;

/// Size of the fixed part of the header (`struct btf_header`).
const HEADER_LEN: usize = 24;

/// How many links a type-graph walk follows before assuming a cycle (libbpf uses the same bound).
const MAX_RESOLVE_DEPTH: usize = 32;

/// A malformed or unsupported BTF section.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BtfError {
    /// A part of the section lies beyond its end.
    #[error("truncated BTF: {what} at offset {offset:#x} past end of section (size {size})")]
    Truncated {
        what: &'static str,
        offset: usize,
        size: usize,
    },
    /// The section does not start with the little-endian BTF magic.
    #[error("bad BTF magic {0:#06x}, expected 0xeb9f (big-endian BTF is not supported)")]
    BadMagic(u16),
    /// The header names a BTF version other than 1.
    #[error("unsupported BTF version {0}, expected 1")]
    UnsupportedVersion(u8),
    /// The header length field is too small.
    #[error("BTF header length {0} is shorter than the 24-byte header")]
    BadHeaderLen(u32),
    /// A type has a kind this parser does not know (beyond `ENUM64`).
    #[error("unknown BTF kind {kind} of type [{id}] at offset {offset:#x} of the type section")]
    UnknownKind {
        kind: u32,
        id: TypeId,
        offset: usize,
    },
    /// A name offset points outside the string section.
    #[error("BTF string offset {0:#x} is outside the string section")]
    BadStringOffset(u32),
    /// A string is not NUL-terminated or not UTF-8.
    #[error("BTF string at offset {0:#x} is not terminated or not UTF-8")]
    BadString(u32),
    /// A type id refers to no type.
    #[error("BTF type [{0}] does not exist")]
    NoSuchType(TypeId),
    /// A type has no size (void, function, forward declaration) or its size overflows.
    #[error("cannot resolve the size of BTF type [{id}]: {reason}")]
    Size { id: TypeId, reason: &'static str },
    /// Following type references did not end within 32 steps.
    #[error("BTF type chain starting at [{0}] is too deep or cyclic")]
    TooDeep(TypeId),
}

/// A member of a struct or union.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    /// Offset of the member name in the string section.
    pub name_off: u32,
    /// Type of the member.
    pub type_id: TypeId,
    /// Offset of the member from the start of the aggregate, in bits.
    pub bit_offset: u32,
    /// Width of a bitfield member in bits (0 when the member is not a bitfield or the aggregate
    /// does not use the `kind_flag` encoding).
    pub bitfield_size: u32,
}

/// A parameter of a function prototype.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Param {
    /// Offset of the parameter name in the string section (0 when unnamed).
    pub name_off: u32,
    /// Type of the parameter.
    pub type_id: TypeId,
}

/// An enumerator of an `ENUM` or `ENUM64`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Enumerator {
    /// Offset of the enumerator name in the string section.
    pub name_off: u32,
    /// The value, sign- or zero-extended according to the enum's signedness.
    pub value: i64,
}

/// A variable placed in a `DATASEC`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VarSecinfo {
    /// The `VAR` (or `FUNC`, for extern functions) type.
    pub type_id: TypeId,
    /// Byte offset in the section. Clang leaves 0 here for global variables and lets the loader
    /// fill it in from the ELF symbol table.
    pub offset: u32,
    /// Size in bytes.
    pub size: u32,
}

/// The kind-specific part of a type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// An integer; `encoding` is the raw `BTF_INT_*` word (encoding, offset and bit count).
    Int { size: u32, encoding: u32 },
    /// A pointer to the type.
    Ptr(TypeId),
    /// An array of `nelems` elements of type `elem`, indexed by type `index`.
    Array {
        elem: TypeId,
        index: TypeId,
        nelems: u32,
    },
    /// A struct of `size` bytes.
    Struct { size: u32, members: Vec<Member> },
    /// A union of `size` bytes.
    Union { size: u32, members: Vec<Member> },
    /// An enum of `size` bytes with 32-bit enumerators.
    Enum {
        size: u32,
        signed: bool,
        values: Vec<Enumerator>,
    },
    /// A forward declaration of a struct (`union == false`) or union.
    Fwd { union: bool },
    /// A typedef naming the type.
    Typedef(TypeId),
    /// The type, `volatile`.
    Volatile(TypeId),
    /// The type, `const`.
    Const(TypeId),
    /// The type, `restrict`.
    Restrict(TypeId),
    /// A function; `linkage` is 0 static, 1 global, 2 extern.
    Func { proto: TypeId, linkage: u32 },
    /// A function prototype (`ret` 0 is `void`).
    FuncProto { ret: TypeId, params: Vec<Param> },
    /// A variable; `linkage` is 0 static, 1 global, 2 extern.
    Var { type_id: TypeId, linkage: u32 },
    /// The variables of an ELF data section; clang leaves `size` 0 for the loader to fill in.
    Datasec { size: u32, vars: Vec<VarSecinfo> },
    /// A floating-point type of `size` bytes.
    Float { size: u32 },
    /// A declaration tag on `target` (on member/parameter `component` when not -1).
    DeclTag { target: TypeId, component: i32 },
    /// A type tag (`btf_type_tag`) on the type.
    TypeTag(TypeId),
    /// An enum with 64-bit enumerators.
    Enum64 {
        size: u32,
        signed: bool,
        values: Vec<Enumerator>,
    },
}

/// One BTF type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Type {
    /// Offset of the type's name in the string section (0 for anonymous types).
    pub name_off: u32,
    /// The `kind_flag` bit of the type's info word, kept so that the type encodes back unchanged
    /// (its meaning per kind is also decoded into [`Kind`]).
    pub kind_flag: bool,
    /// What the type is.
    pub kind: Kind,
}

impl Type {
    /// Short upper-case name of the kind, as `bpftool btf dump` prints it.
    pub fn kind_name(&self) -> &'static str {
        match self.kind {
            Kind::Int { .. } => "INT",
            Kind::Ptr(_) => "PTR",
            Kind::Array { .. } => "ARRAY",
            Kind::Struct { .. } => "STRUCT",
            Kind::Union { .. } => "UNION",
            Kind::Enum { .. } => "ENUM",
            Kind::Fwd { .. } => "FWD",
            Kind::Typedef(_) => "TYPEDEF",
            Kind::Volatile(_) => "VOLATILE",
            Kind::Const(_) => "CONST",
            Kind::Restrict(_) => "RESTRICT",
            Kind::Func { .. } => "FUNC",
            Kind::FuncProto { .. } => "FUNC_PROTO",
            Kind::Var { .. } => "VAR",
            Kind::Datasec { .. } => "DATASEC",
            Kind::Float { .. } => "FLOAT",
            Kind::DeclTag { .. } => "DECL_TAG",
            Kind::TypeTag(_) => "TYPE_TAG",
            Kind::Enum64 { .. } => "ENUM64",
        }
    }

    /// Members of a struct or union (empty for every other kind).
    pub fn members(&self) -> &[Member] {
        match &self.kind {
            Kind::Struct { members, .. } | Kind::Union { members, .. } => members,
            _ => &[],
        }
    }
}

/// A parsed BTF section (see [`Btf::to_bytes`] for writing it back and [`Btf::fixed_for_kernel`]
/// for the fix-ups a loader makes before `BPF_BTF_LOAD`), standalone or split on top of a base.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Btf {
    /// Types by id minus [`Btf::start_id`] (id 0, `void`, is implicit; ids below the start are
    /// the base's).
    types: Vec<Type>,
    /// This section's own strings; offsets below [`Btf::start_str_off`] are the base's.
    strings: Vec<u8>,
    /// The BTF this one is split from (a module's BTF is split from vmlinux's).
    base: Option<Arc<Btf>>,
}

/// Bounds-checked little-endian reader over the type section.
struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn u32(&mut self, what: &'static str) -> Result<u32, BtfError> {
        let bytes = self
            .pos
            .checked_add(4)
            .and_then(|end| self.data.get(self.pos..end))
            .ok_or(BtfError::Truncated {
                what,
                offset: self.pos,
                size: self.data.len(),
            })?;
        self.pos += 4;
        Ok(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
    }
}

fn read_u32_at(data: &[u8], offset: usize) -> Option<u32> {
    let b = data.get(offset..offset.checked_add(4)?)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// The sub-slice `[start, start + len)` of `data`, or a truncation error naming `what`.
fn sub<'a>(data: &'a [u8], start: u64, len: u32, what: &'static str) -> Result<&'a [u8], BtfError> {
    let end = start.checked_add(u64::from(len));
    match end {
        Some(end) if end <= data.len() as u64 => Ok(&data[start as usize..end as usize]),
        _ => Err(BtfError::Truncated {
            what,
            offset: usize::try_from(start).unwrap_or(usize::MAX),
            size: data.len(),
        }),
    }
}

impl Btf {
    /// Parses a little-endian `.BTF` section.
    pub fn parse(data: &[u8]) -> Result<Btf, BtfError> {
        Self::parse_on(data, None)
    }

    /// Parses a standalone section (`base` `None`) or one split from `base`.
    fn parse_on(data: &[u8], base_btf: Option<Arc<Btf>>) -> Result<Btf, BtfError> {
        let truncated = |what, offset| BtfError::Truncated {
            what,
            offset,
            size: data.len(),
        };
        if data.len() < HEADER_LEN {
            return Err(truncated("header", 0));
        }
        let magic = u16::from_le_bytes([data[0], data[1]]);
        if magic != BTF_MAGIC {
            return Err(BtfError::BadMagic(magic));
        }
        if data[2] != 1 {
            return Err(BtfError::UnsupportedVersion(data[2]));
        }
        let word = |i: usize| read_u32_at(data, 4 + 4 * i).unwrap_or(0);
        let (hdr_len, type_off, type_len, str_off, str_len) =
            (word(0), word(1), word(2), word(3), word(4));
        if (hdr_len as usize) < HEADER_LEN {
            return Err(BtfError::BadHeaderLen(hdr_len));
        }
        let base = u64::from(hdr_len);
        let type_data = sub(data, base + u64::from(type_off), type_len, "type section")?;
        let strings = sub(data, base + u64::from(str_off), str_len, "string section")?;
        if base_btf.is_some() {
            split::check_strings(strings)?;
        }
        let mut btf = Btf {
            types: Vec::new(),
            strings: strings.to_vec(),
            base: base_btf,
        };
        let start_id = btf.start_id();
        let mut r = Reader {
            data: type_data,
            pos: 0,
        };
        while r.pos < type_data.len() {
            let id = TypeId::try_from(btf.types.len())
                .ok()
                .and_then(|n| n.checked_add(start_id))
                .unwrap_or(TypeId::MAX);
            let ty = Self::parse_type(&mut r, id)?;
            btf.types.push(ty);
        }
        Ok(btf)
    }

    fn parse_type(r: &mut Reader<'_>, id: TypeId) -> Result<Type, BtfError> {
        let start = r.pos;
        let name_off = r.u32("type name")?;
        let info = r.u32("type info")?;
        let size_or_type = r.u32("type size")?;
        let vlen = info & 0xffff;
        let kind_flag = info & 0x8000_0000 != 0;
        let kind_code = (info >> 24) & 0x1f;
        let members = |r: &mut Reader<'_>| -> Result<Vec<Member>, BtfError> {
            (0..vlen)
                .map(|_| {
                    let name_off = r.u32("member")?;
                    let type_id = r.u32("member")?;
                    let offset = r.u32("member")?;
                    let (bit_offset, bitfield_size) = if kind_flag {
                        (offset & 0x00ff_ffff, offset >> 24)
                    } else {
                        (offset, 0)
                    };
                    Ok(Member {
                        name_off,
                        type_id,
                        bit_offset,
                        bitfield_size,
                    })
                })
                .collect()
        };
        let kind = match kind_code {
            1 => Kind::Int {
                size: size_or_type,
                encoding: r.u32("int encoding")?,
            },
            2 => Kind::Ptr(size_or_type),
            3 => Kind::Array {
                elem: r.u32("array")?,
                index: r.u32("array")?,
                nelems: r.u32("array")?,
            },
            4 => Kind::Struct {
                size: size_or_type,
                members: members(r)?,
            },
            5 => Kind::Union {
                size: size_or_type,
                members: members(r)?,
            },
            6 => Kind::Enum {
                size: size_or_type,
                signed: kind_flag,
                values: (0..vlen)
                    .map(|_| {
                        let name_off = r.u32("enumerator")?;
                        let raw = r.u32("enumerator")?;
                        let value = if kind_flag {
                            i64::from(raw as i32)
                        } else {
                            i64::from(raw)
                        };
                        Ok(Enumerator { name_off, value })
                    })
                    .collect::<Result<_, BtfError>>()?,
            },
            7 => Kind::Fwd { union: kind_flag },
            8 => Kind::Typedef(size_or_type),
            9 => Kind::Volatile(size_or_type),
            10 => Kind::Const(size_or_type),
            11 => Kind::Restrict(size_or_type),
            12 => Kind::Func {
                proto: size_or_type,
                linkage: vlen,
            },
            13 => Kind::FuncProto {
                ret: size_or_type,
                params: (0..vlen)
                    .map(|_| {
                        Ok(Param {
                            name_off: r.u32("parameter")?,
                            type_id: r.u32("parameter")?,
                        })
                    })
                    .collect::<Result<_, BtfError>>()?,
            },
            14 => Kind::Var {
                type_id: size_or_type,
                linkage: r.u32("var linkage")?,
            },
            15 => Kind::Datasec {
                size: size_or_type,
                vars: (0..vlen)
                    .map(|_| {
                        Ok(VarSecinfo {
                            type_id: r.u32("datasec entry")?,
                            offset: r.u32("datasec entry")?,
                            size: r.u32("datasec entry")?,
                        })
                    })
                    .collect::<Result<_, BtfError>>()?,
            },
            16 => Kind::Float { size: size_or_type },
            17 => Kind::DeclTag {
                target: size_or_type,
                component: r.u32("decl tag")? as i32,
            },
            18 => Kind::TypeTag(size_or_type),
            19 => Kind::Enum64 {
                size: size_or_type,
                signed: kind_flag,
                values: (0..vlen)
                    .map(|_| {
                        let name_off = r.u32("enumerator")?;
                        let lo = r.u32("enumerator")?;
                        let hi = r.u32("enumerator")?;
                        let value = (u64::from(hi) << 32 | u64::from(lo)) as i64;
                        Ok(Enumerator { name_off, value })
                    })
                    .collect::<Result<_, BtfError>>()?,
            },
            kind => {
                return Err(BtfError::UnknownKind {
                    kind,
                    id,
                    offset: start,
                })
            }
        };
        Ok(Type {
            name_off,
            kind_flag,
            kind,
        })
    }

    /// Number of types this section defines, not counting `void` (nor, for split BTF, its
    /// base's types).
    pub fn len(&self) -> usize {
        self.types.len()
    }

    /// Whether the section defines no types.
    pub fn is_empty(&self) -> bool {
        self.types.is_empty()
    }

    /// The types this section defines with their ids, in id order (for split BTF: its own types,
    /// numbered from [`Btf::start_id`]; the base's are reachable by id through [`Btf::get`]).
    pub fn types(&self) -> impl Iterator<Item = (TypeId, &Type)> {
        (self.start_id()..).zip(self.types.iter())
    }

    /// The type with this id, looked up in the base for ids below [`Btf::start_id`] (`None`
    /// for `void` and unknown ids).
    pub fn get(&self, id: TypeId) -> Option<&Type> {
        let start = self.start_id();
        if id < start {
            return self.base.as_deref()?.get(id);
        }
        let index = usize::try_from(id - start).ok()?;
        self.types.get(index)
    }

    /// The type with this id, or [`BtfError::NoSuchType`].
    pub fn ty(&self, id: TypeId) -> Result<&Type, BtfError> {
        self.get(id).ok_or(BtfError::NoSuchType(id))
    }

    /// The string at `offset` of the string section (of the base's, for split BTF and offsets
    /// below [`Btf::start_str_off`]).
    pub fn str_at(&self, offset: u32) -> Result<&str, BtfError> {
        let start = self.start_str_off();
        if offset < start {
            return match self.base.as_deref() {
                Some(base) => base.str_at(offset),
                None => Err(BtfError::BadStringOffset(offset)),
            };
        }
        let rest = usize::try_from(offset - start)
            .ok()
            .and_then(|o| self.strings.get(o..))
            .ok_or(BtfError::BadStringOffset(offset))?;
        let end = rest
            .iter()
            .position(|&b| b == 0)
            .ok_or(BtfError::BadString(offset))?;
        std::str::from_utf8(&rest[..end]).map_err(|_| BtfError::BadString(offset))
    }

    /// The name of a type (empty for anonymous types).
    pub fn name(&self, ty: &Type) -> Result<&str, BtfError> {
        self.str_at(ty.name_off)
    }

    /// Follows typedefs and `const`/`volatile`/`restrict`/type-tag modifiers from `id` to the
    /// underlying type. Returns `None` as the type when the chain ends in `void`.
    pub fn skip_mods_and_typedefs(&self, id: TypeId) -> Result<(TypeId, Option<&Type>), BtfError> {
        let mut cur = id;
        for _ in 0..MAX_RESOLVE_DEPTH {
            if cur == 0 {
                return Ok((0, None));
            }
            let ty = self.ty(cur)?;
            match ty.kind {
                Kind::Typedef(next)
                | Kind::Volatile(next)
                | Kind::Const(next)
                | Kind::Restrict(next)
                | Kind::TypeTag(next) => cur = next,
                _ => return Ok((cur, Some(ty))),
            }
        }
        Err(BtfError::TooDeep(id))
    }

    /// The size in bytes of a value of type `id`, resolving typedefs, modifiers, variables and
    /// arrays (pointers are 8 bytes on BPF).
    pub fn resolve_size(&self, id: TypeId) -> Result<u64, BtfError> {
        let mut cur = id;
        let mut multiplier: u64 = 1;
        let overflow = BtfError::Size {
            id,
            reason: "size overflows",
        };
        for _ in 0..MAX_RESOLVE_DEPTH {
            if cur == 0 {
                return Err(BtfError::Size {
                    id,
                    reason: "void has no size",
                });
            }
            let ty = self.ty(cur)?;
            let size = match ty.kind {
                Kind::Int { size, .. }
                | Kind::Struct { size, .. }
                | Kind::Union { size, .. }
                | Kind::Enum { size, .. }
                | Kind::Enum64 { size, .. }
                | Kind::Datasec { size, .. }
                | Kind::Float { size } => u64::from(size),
                Kind::Ptr(_) => 8,
                Kind::Typedef(next)
                | Kind::Volatile(next)
                | Kind::Const(next)
                | Kind::Restrict(next)
                | Kind::TypeTag(next)
                | Kind::Var { type_id: next, .. } => {
                    cur = next;
                    continue;
                }
                Kind::Array { elem, nelems, .. } => {
                    multiplier = multiplier
                        .checked_mul(u64::from(nelems))
                        .ok_or(overflow.clone())?;
                    cur = elem;
                    continue;
                }
                Kind::Fwd { .. } => {
                    return Err(BtfError::Size {
                        id,
                        reason: "forward declaration has no size",
                    })
                }
                Kind::Func { .. } | Kind::FuncProto { .. } | Kind::DeclTag { .. } => {
                    return Err(BtfError::Size {
                        id,
                        reason: "functions and tags have no size",
                    })
                }
            };
            return size.checked_mul(multiplier).ok_or(overflow);
        }
        Err(BtfError::TooDeep(id))
    }

    /// The `DATASEC` with this name.
    pub fn find_datasec(&self, name: &str) -> Option<(TypeId, &Type)> {
        self.types().find(|(_, ty)| {
            matches!(ty.kind, Kind::Datasec { .. }) && self.name(ty).is_ok_and(|n| n == name)
        })
    }
}

/// Hand-built BTF sections for this module's and its submodules' tests.
#[cfg(test)]
pub(crate) mod testing {
    use super::BTF_MAGIC;

    /// Builds a BTF section from raw type words and a string table.
    pub fn build(types: &[u32], strings: &[u8]) -> Vec<u8> {
        let type_len = (types.len() * 4) as u32;
        let mut out = Vec::new();
        out.extend_from_slice(&BTF_MAGIC.to_le_bytes());
        out.extend_from_slice(&[1, 0]);
        for w in [24, 0, type_len, type_len, strings.len() as u32] {
            out.extend_from_slice(&w.to_le_bytes());
        }
        for w in types {
            out.extend_from_slice(&w.to_le_bytes());
        }
        out.extend_from_slice(strings);
        out
    }

    /// A type's info word: its kind and member count.
    pub fn info(kind: u32, vlen: u32) -> u32 {
        kind << 24 | vlen
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{build, info};
    use super::*;

    #[test]
    fn parses_and_resolves_sizes() {
        let strings = b"\0int\0s\0a\0";
        let types = [
            // [1] int, 4 bytes
            1,
            info(1, 0),
            4,
            0x20,
            // [2] int[6]
            0,
            info(3, 0),
            0,
            1,
            1,
            6,
            // [3] typedef s -> [4]
            5,
            info(8, 0),
            4,
            // [4] const -> [5]
            0,
            info(10, 0),
            5,
            // [5] struct s { int[6] a; } size 24
            5,
            info(4, 1),
            24,
            7,
            2,
            0,
            // [6] ptr -> [3]
            0,
            info(2, 0),
            3,
        ];
        let btf = Btf::parse(&build(&types, strings)).unwrap();
        assert_eq!(btf.len(), 6);
        assert_eq!(btf.resolve_size(2).unwrap(), 24);
        assert_eq!(btf.resolve_size(3).unwrap(), 24);
        assert_eq!(btf.resolve_size(6).unwrap(), 8);
        let (id, ty) = btf.skip_mods_and_typedefs(3).unwrap();
        assert_eq!(id, 5);
        assert_eq!(btf.name(ty.unwrap()).unwrap(), "s");
        assert_eq!(btf.str_at(ty.unwrap().members()[0].name_off).unwrap(), "a");
        assert!(btf.resolve_size(0).is_err());
        assert_eq!(btf.ty(7), Err(BtfError::NoSuchType(7)));
    }

    #[test]
    fn cycles_end_in_an_error() {
        // [1] typedef -> [2], [2] const -> [1]
        let types = [1, info(8, 0), 2, 0, info(10, 0), 1];
        let btf = Btf::parse(&build(&types, b"\0t\0")).unwrap();
        assert_eq!(btf.resolve_size(1), Err(BtfError::TooDeep(1)));
        assert_eq!(btf.skip_mods_and_typedefs(2), Err(BtfError::TooDeep(2)));
    }

    #[test]
    fn rejects_malformed_sections() {
        assert!(matches!(
            Btf::parse(&[0x9f, 0xeb]),
            Err(BtfError::Truncated { .. })
        ));
        let mut bad_magic = build(&[], b"\0");
        bad_magic[0] = 0;
        assert!(matches!(Btf::parse(&bad_magic), Err(BtfError::BadMagic(_))));
        // An unknown kind.
        let err = Btf::parse(&build(&[0, info(30, 0), 0], b"\0")).unwrap_err();
        assert_eq!(
            err,
            BtfError::UnknownKind {
                kind: 30,
                id: 1,
                offset: 0
            }
        );
        // A struct whose members run past the type section.
        let err = Btf::parse(&build(&[0, info(4, 3), 8, 0, 0], b"\0")).unwrap_err();
        assert!(matches!(err, BtfError::Truncated { .. }), "{err}");
        // Every truncation of a valid section is an error or a shorter valid parse, never a panic.
        let full = build(&[1, info(1, 0), 4, 0x20], b"\0int\0");
        for len in 0..full.len() {
            let _ = Btf::parse(&full[..len]);
        }
    }
}
