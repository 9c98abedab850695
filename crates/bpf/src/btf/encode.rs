//! Writing a [`Btf`] back to the `.BTF` section format: the header, the type section and the
//! string section, the inverse of [`Btf::parse`] (a parsed section encodes to the same bytes).

use super::{Btf, Kind, Member, Type, BTF_MAGIC, HEADER_LEN};

/// `BTF_KIND_*` number of a kind (include/uapi/linux/btf.h).
fn kind_code(kind: &Kind) -> u32 {
    match kind {
        Kind::Int { .. } => 1,
        Kind::Ptr(_) => 2,
        Kind::Array { .. } => 3,
        Kind::Struct { .. } => 4,
        Kind::Union { .. } => 5,
        Kind::Enum { .. } => 6,
        Kind::Fwd { .. } => 7,
        Kind::Typedef(_) => 8,
        Kind::Volatile(_) => 9,
        Kind::Const(_) => 10,
        Kind::Restrict(_) => 11,
        Kind::Func { .. } => 12,
        Kind::FuncProto { .. } => 13,
        Kind::Var { .. } => 14,
        Kind::Datasec { .. } => 15,
        Kind::Float { .. } => 16,
        Kind::DeclTag { .. } => 17,
        Kind::TypeTag(_) => 18,
        Kind::Enum64 { .. } => 19,
    }
}

/// Appends the encoding of one type to `out`. Counts that do not fit the 16-bit `vlen` are
/// truncated to it, which a parsed type never needs.
fn encode_type(ty: &Type, out: &mut Vec<u32>) {
    let vlen = |n: usize| (n as u32) & 0xffff;
    let members = |ms: &[Member], out: &mut Vec<u32>| {
        for m in ms {
            let offset = if ty.kind_flag {
                m.bitfield_size << 24 | (m.bit_offset & 0x00ff_ffff)
            } else {
                m.bit_offset
            };
            out.extend([m.name_off, m.type_id, offset]);
        }
    };
    let (count, size_or_type) = match &ty.kind {
        Kind::Int { size, .. } | Kind::Float { size } => (0, *size),
        Kind::Ptr(t)
        | Kind::Typedef(t)
        | Kind::Volatile(t)
        | Kind::Const(t)
        | Kind::Restrict(t)
        | Kind::TypeTag(t) => (0, *t),
        Kind::Array { .. } | Kind::Fwd { .. } => (0, 0),
        Kind::Struct { size, members } | Kind::Union { size, members } => {
            (vlen(members.len()), *size)
        }
        Kind::Enum { size, values, .. } | Kind::Enum64 { size, values, .. } => {
            (vlen(values.len()), *size)
        }
        Kind::Func { proto, linkage } => (*linkage & 0xffff, *proto),
        Kind::FuncProto { ret, params } => (vlen(params.len()), *ret),
        Kind::Var { type_id, .. } => (0, *type_id),
        Kind::Datasec { size, vars } => (vlen(vars.len()), *size),
        Kind::DeclTag { target, .. } => (0, *target),
    };
    let flag = u32::from(ty.kind_flag) << 31;
    out.extend([
        ty.name_off,
        flag | kind_code(&ty.kind) << 24 | count,
        size_or_type,
    ]);
    match &ty.kind {
        Kind::Int { encoding, .. } => out.push(*encoding),
        Kind::Array {
            elem,
            index,
            nelems,
        } => out.extend([*elem, *index, *nelems]),
        Kind::Struct { members: ms, .. } | Kind::Union { members: ms, .. } => members(ms, out),
        Kind::Enum { values, .. } => {
            out.extend(values.iter().flat_map(|v| [v.name_off, v.value as u32]));
        }
        Kind::Enum64 { values, .. } => out.extend(
            values
                .iter()
                .flat_map(|v| [v.name_off, v.value as u32, (v.value as u64 >> 32) as u32]),
        ),
        Kind::FuncProto { params, .. } => {
            out.extend(params.iter().flat_map(|p| [p.name_off, p.type_id]));
        }
        Kind::Var { linkage, .. } => out.push(*linkage),
        Kind::Datasec { vars, .. } => {
            out.extend(vars.iter().flat_map(|v| [v.type_id, v.offset, v.size]));
        }
        Kind::DeclTag { component, .. } => out.push(*component as u32),
        Kind::Ptr(_)
        | Kind::Fwd { .. }
        | Kind::Typedef(_)
        | Kind::Volatile(_)
        | Kind::Const(_)
        | Kind::Restrict(_)
        | Kind::Func { .. }
        | Kind::Float { .. }
        | Kind::TypeTag(_) => {}
    }
}

impl Btf {
    /// The `.BTF` section bytes of these types and strings: a 24-byte header, the types, then
    /// the strings.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut words = Vec::new();
        for ty in &self.types {
            encode_type(ty, &mut words);
        }
        let type_len = (words.len() * 4) as u32;
        let mut out = Vec::with_capacity(HEADER_LEN + words.len() * 4 + self.strings.len());
        out.extend_from_slice(&BTF_MAGIC.to_le_bytes());
        out.extend_from_slice(&[1, 0]);
        for w in [
            HEADER_LEN as u32,
            0,
            type_len,
            type_len,
            self.strings.len() as u32,
        ] {
            out.extend_from_slice(&w.to_le_bytes());
        }
        for w in words {
            out.extend_from_slice(&w.to_le_bytes());
        }
        out.extend_from_slice(&self.strings);
        out
    }
}
