//! CO-RE ("compile once, run everywhere") relocations: the field offsets and sizes, type sizes,
//! existence checks and enum values a program was compiled with (its own BTF, from a
//! `vmlinux.h`-style header) rewritten to those of a target BTF, by default the running kernel's
//! `/sys/kernel/btf/vmlinux`. [`crate::object`] applies them to the sections' instructions before
//! linking, so the interpreter, the analyses and the kernel loader all see the relocated program.
//!
//! The rules follow libbpf's `relo_core.c` (tools/lib/bpf): candidates are the target types of
//! the same kind whose name equals the local name up to a `___flavor` suffix; a field access is
//! matched member by member by name (descending into anonymous members of the target), array
//! indices must be in range, and the accessed fields' types must be compatible (both composite,
//! both integer or enum, both pointers, ...). Every candidate that matches must give the same
//! value. A relocation with no match yields 0 for the existence kinds and otherwise *poisons* the
//! instruction as libbpf does: it becomes a call of the nonexistent helper `0xbad2310`, which the
//! verifier refuses and the interpreter reports, only if the program reaches it.
//!
//! `TYPE_MATCHES` (`bpf_core_type_matches`) is decided like `TYPE_EXISTS` with the kinds
//! compared, not by libbpf's full structural match.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use crate::btf::{Btf, Kind, Type, TypeId};
use crate::btf_ext::{CoreRelo, CoreReloKind};
use crate::insn::RawInsn;

/// Where the running kernel publishes its BTF.
pub const VMLINUX_BTF: &str = "/sys/kernel/btf/vmlinux";
/// The helper number libbpf puts in poisoned instructions (`POISON_CALL_KFUNC_BASE` aside,
/// `0xbad2310` is what `bpf_core_poison_insn` writes).
pub const POISON_HELPER: i32 = 0xbad2310;
/// `BTF_INT_SIGNED` in an `INT` encoding word (bits 24..28).
const INT_SIGNED: u32 = 1 << 24;
/// How deep anonymous members are followed in a target struct.
const MAX_ANON_DEPTH: usize = 8;

/// A CO-RE relocation that cannot be applied.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("CO-RE relocation #{index} ({kind}) at insn {insn} of section {section}: {reason}")]
pub struct CoreError {
    /// Position of the record in `.BTF.ext`.
    pub index: usize,
    pub kind: &'static str,
    pub section: String,
    pub insn: usize,
    pub reason: String,
}

/// A target BTF with its types indexed by essential name (the name without `___flavor`).
pub struct CoreTarget<'t> {
    btf: &'t Btf,
    by_name: HashMap<&'t str, Vec<TypeId>>,
}

impl<'t> CoreTarget<'t> {
    /// Indexes `btf` for candidate lookups.
    pub fn new(btf: &'t Btf) -> CoreTarget<'t> {
        let mut by_name: HashMap<&str, Vec<TypeId>> = HashMap::new();
        for (id, ty) in btf.types() {
            if let Ok(name) = btf.name(ty) {
                if !name.is_empty() {
                    by_name.entry(essential(name)).or_default().push(id);
                }
            }
        }
        CoreTarget { btf, by_name }
    }

    /// The BTF this target indexes.
    pub fn btf(&self) -> &'t Btf {
        self.btf
    }
}

/// The running kernel's BTF, read and parsed once per process.
pub fn running_kernel_btf() -> Result<&'static Btf, String> {
    running_kernel_btf_shared().map(|btf| &**btf)
}

/// [`running_kernel_btf`] as a shared base for the kernel modules' split BTF
/// ([`Btf::parse_split`]).
pub fn running_kernel_btf_shared() -> Result<&'static Arc<Btf>, String> {
    static BTF: OnceLock<Result<Arc<Btf>, String>> = OnceLock::new();
    BTF.get_or_init(|| {
        let bytes =
            std::fs::read(VMLINUX_BTF).map_err(|e| format!("cannot read {VMLINUX_BTF}: {e}"))?;
        Btf::parse(&bytes)
            .map(Arc::new)
            .map_err(|e| format!("{VMLINUX_BTF}: {e}"))
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// A name without its `___flavor` suffix.
fn essential(name: &str) -> &str {
    name.find("___").map_or(name, |i| &name[..i])
}

/// Kinds that candidates must share with the local type (enums of either width match).
fn kind_family(ty: &Type) -> u8 {
    match ty.kind {
        Kind::Int { .. } => 1,
        Kind::Ptr(_) => 2,
        Kind::Array { .. } => 3,
        Kind::Struct { .. } => 4,
        Kind::Union { .. } => 5,
        Kind::Enum { .. } | Kind::Enum64 { .. } => 6,
        Kind::Fwd { .. } => 7,
        Kind::Typedef(_) => 8,
        Kind::Float { .. } => 16,
        Kind::Func { .. } => 12,
        Kind::FuncProto { .. } => 13,
        _ => 0,
    }
}

/// One step of a field access path.
#[derive(Debug)]
enum Step {
    Member(String),
    Index(u32),
}

/// A resolved field: its bit offset from the root, its type and its bitfield width (0 if none).
struct Field {
    bit_offset: u64,
    type_id: TypeId,
    bitfield: u32,
}

/// The access path of a field relocation, read against the local BTF.
fn local_path(local: &Btf, root: TypeId, access: &[u32]) -> Result<(u32, Vec<Step>), String> {
    let (&first, rest) = access.split_first().ok_or("empty access string")?;
    let mut steps = Vec::with_capacity(rest.len());
    let mut cur = root;
    let mut ends_anonymous = false;
    for &i in rest {
        let (_, ty) = local
            .skip_mods_and_typedefs(cur)
            .map_err(|e| e.to_string())?;
        let ty = ty.ok_or("access through void")?;
        match &ty.kind {
            Kind::Struct { members, .. } | Kind::Union { members, .. } => {
                let m = members
                    .get(i as usize)
                    .ok_or_else(|| format!("member index {i} out of range"))?;
                let name = local.str_at(m.name_off).map_err(|e| e.to_string())?;
                // An anonymous member is no step of its own, as in libbpf's spec: the named
                // member inside it is looked up through the target's anonymous members.
                ends_anonymous = name.is_empty();
                if !ends_anonymous {
                    steps.push(Step::Member(name.to_string()));
                }
                cur = m.type_id;
            }
            Kind::Array { elem, .. } => {
                ends_anonymous = false;
                steps.push(Step::Index(i));
                cur = *elem;
            }
            _ => return Err(format!("access index {i} into a {}", ty.kind_name())),
        }
    }
    if ends_anonymous {
        return Err("the access ends at an anonymous member, which has no name to match".into());
    }
    Ok((first, steps))
}

/// Finds member `name` in struct/union `ty` of `btf`, looking into anonymous members.
fn find_member(btf: &Btf, ty: &Type, name: &str, depth: usize) -> Option<Field> {
    if depth > MAX_ANON_DEPTH {
        return None;
    }
    for m in ty.members() {
        let member_name = btf.str_at(m.name_off).ok()?;
        if member_name == name {
            return Some(Field {
                bit_offset: u64::from(m.bit_offset),
                type_id: m.type_id,
                bitfield: m.bitfield_size,
            });
        }
        if member_name.is_empty() {
            let (_, inner) = btf.skip_mods_and_typedefs(m.type_id).ok()?;
            if let Some(found) = inner.and_then(|t| find_member(btf, t, name, depth + 1)) {
                return Some(Field {
                    bit_offset: found.bit_offset.checked_add(u64::from(m.bit_offset))?,
                    ..found
                });
            }
        }
    }
    None
}

/// Follows `path` from `root` in `btf`: the field reached, or `None` when `btf` lacks it.
fn walk(btf: &Btf, root: TypeId, first: u32, steps: &[Step]) -> Option<Field> {
    let root_size = btf.resolve_size(root).ok()?;
    let mut field = Field {
        bit_offset: u64::from(first).checked_mul(root_size)?.checked_mul(8)?,
        type_id: root,
        bitfield: 0,
    };
    for step in steps {
        let (_, ty) = btf.skip_mods_and_typedefs(field.type_id).ok()?;
        let ty = ty?;
        match (step, &ty.kind) {
            (Step::Member(name), Kind::Struct { .. } | Kind::Union { .. }) => {
                let m = find_member(btf, ty, name, 0)?;
                field = Field {
                    bit_offset: field.bit_offset.checked_add(m.bit_offset)?,
                    ..m
                };
            }
            (Step::Index(i), Kind::Array { elem, nelems, .. }) => {
                if *i >= *nelems && *nelems != 0 {
                    return None;
                }
                let size = btf.resolve_size(*elem).ok()?;
                let skip = u64::from(*i).checked_mul(size)?.checked_mul(8)?;
                field = Field {
                    bit_offset: field.bit_offset.checked_add(skip)?,
                    type_id: *elem,
                    bitfield: 0,
                };
            }
            _ => return None,
        }
    }
    Some(field)
}

/// Whether the types of a local and a target field are compatible (libbpf's
/// `bpf_core_fields_are_compat`, without descending into array element types' names).
fn fields_compatible(local: &Btf, l: TypeId, target: &Btf, t: TypeId) -> bool {
    let (Ok((_, Some(lt))), Ok((_, Some(tt)))) = (
        local.skip_mods_and_typedefs(l),
        target.skip_mods_and_typedefs(t),
    ) else {
        return false;
    };
    match (&lt.kind, &tt.kind) {
        (Kind::Struct { .. } | Kind::Union { .. }, Kind::Struct { .. } | Kind::Union { .. }) => {
            let (ln, tn) = (local.name(lt), target.name(tt));
            matches!((ln, tn), (Ok(a), Ok(b)) if essential(a) == essential(b))
        }
        (
            Kind::Int { .. } | Kind::Enum { .. } | Kind::Enum64 { .. },
            Kind::Int { .. } | Kind::Enum { .. } | Kind::Enum64 { .. },
        )
        | (Kind::Float { .. }, Kind::Float { .. })
        | (Kind::Ptr(_), Kind::Ptr(_)) => true,
        (Kind::Array { elem: le, .. }, Kind::Array { elem: te, .. }) => {
            fields_compatible(local, *le, target, *te)
        }
        _ => false,
    }
}

/// The value of a field relocation for a field found in `btf` (libbpf's
/// `bpf_core_calc_field_relo`, little-endian).
fn field_value(btf: &Btf, kind: CoreReloKind, field: &Field) -> Result<u64, String> {
    let (_, ty) = btf
        .skip_mods_and_typedefs(field.type_id)
        .map_err(|e| e.to_string())?;
    let ty = ty.ok_or("field of type void")?;
    let mut byte_size = btf.resolve_size(field.type_id).map_err(|e| e.to_string())?;
    let bit_off = field.bit_offset;
    let too_large = || "field offset or size out of range".to_string();
    let (byte_off, bit_size) = if field.bitfield == 0 {
        if !bit_off.is_multiple_of(8) {
            return Err("field is not byte-aligned".into());
        }
        (bit_off / 8, byte_size.checked_mul(8).ok_or_else(too_large)?)
    } else {
        let bits = u64::from(field.bitfield);
        if byte_size == 0 || byte_size > 8 {
            return Err(format!("bitfield of a {byte_size}-byte type"));
        }
        let mut off = bit_off / byte_size / 8 * byte_size;
        while bit_off.saturating_add(bits) - off * 8 > byte_size * 8 {
            if byte_size >= 8 {
                return Err("bitfield spans more than 8 bytes".into());
            }
            byte_size *= 2;
            off = bit_off / byte_size / 8 * byte_size;
        }
        (off, bits)
    };
    // Bits of the loaded value above the field (the shifts only mean something for fields of
    // at most 8 bytes; larger fields give an error).
    let span = bit_off
        .checked_add(bit_size)
        .and_then(|end| end.checked_sub(byte_off * 8))
        .filter(|&s| s <= 64)
        .ok_or_else(|| "field wider than 64 bits has no shifts".to_string());
    Ok(match kind {
        CoreReloKind::FIELD_BYTE_OFFSET => byte_off,
        CoreReloKind::FIELD_BYTE_SIZE => byte_size,
        CoreReloKind::FIELD_EXISTS => 1,
        CoreReloKind::FIELD_SIGNED => u64::from(match ty.kind {
            Kind::Int { encoding, .. } => encoding & INT_SIGNED != 0,
            Kind::Enum { signed, .. } | Kind::Enum64 { signed, .. } => signed,
            _ => false,
        }),
        CoreReloKind::FIELD_LSHIFT_U64 => 64 - span?,
        CoreReloKind::FIELD_RSHIFT_U64 => 64u64
            .checked_sub(bit_size)
            .ok_or("field wider than 64 bits has no shifts")?,
        _ => return Err("not a field relocation".into()),
    })
}

/// What a relocation resolves to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Value(u64),
    /// No target matched and the kind has no "missing" value: poison the instruction.
    Poison,
}

/// Resolves one relocation against `target`.
fn resolve(local: &Btf, relo: &CoreRelo, target: &CoreTarget<'_>) -> Result<Outcome, String> {
    let kind = relo.kind;
    let access = relo.access_indices().map_err(|e| e.to_string())?;
    if kind == CoreReloKind::TYPE_ID_LOCAL {
        return Ok(Outcome::Value(u64::from(relo.type_id)));
    }
    let local_ty = local.ty(relo.type_id).map_err(|e| e.to_string())?;
    let name = local.name(local_ty).map_err(|e| e.to_string())?;
    if name.is_empty() {
        return Err(format!("local type [{}] is anonymous", relo.type_id));
    }
    let family = kind_family(local_ty);
    let tbtf = target.btf;
    let candidates: Vec<(TypeId, &Type)> = target
        .by_name
        .get(essential(name))
        .map(|ids| {
            ids.iter()
                .filter_map(|&id| Some((id, tbtf.get(id)?)))
                .filter(|(_, t)| kind_family(t) == family)
                .collect()
        })
        .unwrap_or_default();

    let mut values: Vec<u64> = Vec::new();
    match kind {
        CoreReloKind::FIELD_BYTE_OFFSET
        | CoreReloKind::FIELD_BYTE_SIZE
        | CoreReloKind::FIELD_EXISTS
        | CoreReloKind::FIELD_SIGNED
        | CoreReloKind::FIELD_LSHIFT_U64
        | CoreReloKind::FIELD_RSHIFT_U64 => {
            let (first, steps) = local_path(local, relo.type_id, &access)?;
            let local_field = walk(local, relo.type_id, first, &steps)
                .ok_or("the access string does not resolve in the object's own BTF")?;
            for (id, _) in &candidates {
                let Some(field) = walk(tbtf, *id, first, &steps) else {
                    continue;
                };
                if !steps.is_empty()
                    && !fields_compatible(local, local_field.type_id, tbtf, field.type_id)
                {
                    continue;
                }
                values.push(field_value(tbtf, kind, &field)?);
            }
        }
        CoreReloKind::TYPE_ID_TARGET
        | CoreReloKind::TYPE_EXISTS
        | CoreReloKind::TYPE_SIZE
        | CoreReloKind::TYPE_MATCHES => {
            for (id, _) in &candidates {
                values.push(match kind {
                    CoreReloKind::TYPE_ID_TARGET => u64::from(*id),
                    CoreReloKind::TYPE_SIZE => tbtf.resolve_size(*id).map_err(|e| e.to_string())?,
                    _ => 1,
                });
            }
        }
        CoreReloKind::ENUMVAL_EXISTS | CoreReloKind::ENUMVAL_VALUE => {
            let index = *access.first().ok_or("empty access string")? as usize;
            let local_values = match &local_ty.kind {
                Kind::Enum { values, .. } | Kind::Enum64 { values, .. } => values,
                _ => return Err("enum value relocation of a non-enum type".into()),
            };
            let enumerator = local_values
                .get(index)
                .ok_or_else(|| format!("enumerator index {index} out of range"))?;
            let wanted = local
                .str_at(enumerator.name_off)
                .map_err(|e| e.to_string())?;
            for (_, ty) in &candidates {
                let (Kind::Enum { values: tv, .. } | Kind::Enum64 { values: tv, .. }) = &ty.kind
                else {
                    continue;
                };
                let found = tv.iter().find(|v| {
                    tbtf.str_at(v.name_off)
                        .is_ok_and(|n| essential(n) == essential(wanted))
                });
                if let Some(v) = found {
                    values.push(if kind == CoreReloKind::ENUMVAL_EXISTS {
                        1
                    } else {
                        v.value as u64
                    });
                }
            }
        }
        _ => return Err(format!("unknown relocation kind {}", kind.0)),
    }
    values.dedup();
    match values.as_slice() {
        [] => Ok(match kind {
            CoreReloKind::FIELD_EXISTS
            | CoreReloKind::TYPE_EXISTS
            | CoreReloKind::TYPE_MATCHES
            | CoreReloKind::ENUMVAL_EXISTS => Outcome::Value(0),
            _ => Outcome::Poison,
        }),
        [v] => Ok(Outcome::Value(*v)),
        _ => Err(format!(
            "`{name}` matches {} target types with different values {values:?}",
            candidates.len()
        )),
    }
}

/// Writes `outcome` into the instruction at `at` of `insns` (libbpf's `bpf_core_patch_insn`):
/// the immediate of an ALU instruction or 64-bit load, the offset of a memory access (whose size
/// follows a field whose size changed).
fn patch(
    insns: &mut [RawInsn],
    at: usize,
    kind: CoreReloKind,
    outcome: Outcome,
    new_size: Option<u64>,
) -> Result<(), String> {
    let insn = *insns
        .get(at)
        .ok_or("instruction index past the section end")?;
    let class = insn.code & 0x07;
    let value = match outcome {
        Outcome::Value(v) => v,
        Outcome::Poison => {
            let poison = RawInsn {
                code: 0x85,
                dst: 0,
                src: 0,
                off: 0,
                imm: POISON_HELPER,
            };
            insns[at] = poison;
            if insn.is_wide() {
                if let Some(next) = insns.get_mut(at + 1) {
                    *next = poison;
                }
            }
            return Ok(());
        }
    };
    match class {
        // ALU, ALU64 with an immediate operand.
        0x04 | 0x07 if insn.code & 0x08 == 0 => {
            insns[at].imm = i32::try_from(value as i64)
                .or_else(|_| u32::try_from(value).map(|v| v as i32))
                .map_err(|_| format!("value {value} does not fit a 32-bit immediate"))?;
        }
        // LDX, ST, STX: the offset, and the size when the field's size changed.
        0x01..=0x03 => {
            if kind != CoreReloKind::FIELD_BYTE_OFFSET {
                return Err(format!("a {} relocation on a memory access", kind.name()));
            }
            insns[at].off = i16::try_from(value)
                .map_err(|_| format!("offset {value} does not fit a 16-bit instruction offset"))?;
            if let Some(size) = new_size {
                let bits = match size {
                    1 => 0x10,
                    2 => 0x08,
                    4 => 0x00,
                    8 => 0x18,
                    _ => return Err(format!("field of {size} bytes cannot be loaded")),
                };
                insns[at].code = (insn.code & !0x18) | bits;
            }
        }
        // LD_IMM64: both halves.
        0x00 if insn.is_wide() => {
            let next = insns
                .get_mut(at + 1)
                .ok_or("64-bit load cut off by the section end")?;
            next.imm = (value >> 32) as i32;
            insns[at].imm = value as u32 as i32;
        }
        _ => {
            return Err(format!(
                "cannot relocate instruction with opcode {:#04x}",
                insn.code
            ))
        }
    }
    Ok(())
}

/// Applies every relocation of `relos` to the instructions of its section (`code` holds each
/// section's instructions, `sections` maps names to its keys), resolving against `target`.
pub fn apply<K: Eq + std::hash::Hash + Copy>(
    local: &Btf,
    relos: &[CoreRelo],
    target: &CoreTarget<'_>,
    code: &mut HashMap<K, Vec<RawInsn>>,
    sections: &HashMap<&str, K>,
) -> Result<(), CoreError> {
    for (index, relo) in relos.iter().enumerate() {
        let error = |reason: String| CoreError {
            index,
            kind: relo.kind.name(),
            section: relo.section.clone(),
            insn: relo.insn,
            reason,
        };
        let outcome = resolve(local, relo, target).map_err(error)?;
        let insns = sections
            .get(relo.section.as_str())
            .and_then(|k| code.get_mut(k))
            .ok_or_else(|| error("the section has no instructions".into()))?;
        let new_size = memory_size_change(local, relo, target, insns, outcome);
        patch(insns, relo.insn, relo.kind, outcome, new_size).map_err(error)?;
    }
    Ok(())
}

/// For a field offset relocation on a memory access: the target field's size when it differs
/// from the access size (the access then reads the target field whole).
fn memory_size_change(
    local: &Btf,
    relo: &CoreRelo,
    target: &CoreTarget<'_>,
    insns: &[RawInsn],
    outcome: Outcome,
) -> Option<u64> {
    if relo.kind != CoreReloKind::FIELD_BYTE_OFFSET || outcome == Outcome::Poison {
        return None;
    }
    let insn = insns.get(relo.insn)?;
    if !(0x01..=0x03).contains(&(insn.code & 0x07)) {
        return None;
    }
    let access = match insn.code & 0x18 {
        0x10 => 1,
        0x08 => 2,
        0x00 => 4,
        _ => 8,
    };
    // Only an access that read the local field whole follows the field's size.
    let indices = relo.access_indices().ok()?;
    let (first, steps) = local_path(local, relo.type_id, &indices).ok()?;
    let local_field = walk(local, relo.type_id, first, &steps)?;
    if local_field.bitfield != 0 || local.resolve_size(local_field.type_id).ok()? != access {
        return None;
    }
    let size_relo = CoreRelo {
        kind: CoreReloKind::FIELD_BYTE_SIZE,
        ..relo.clone()
    };
    let Ok(Outcome::Value(size)) = resolve(local, &size_relo, target) else {
        return None;
    };
    (size != access).then_some(size)
}
