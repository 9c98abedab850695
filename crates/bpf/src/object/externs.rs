//! Extern symbols of an object: kernel functions (`__ksym` kfuncs) and `__kconfig` variables.
//!
//! Clang leaves an extern undefined in the ELF symbol table and describes it in `.BTF`: a kfunc
//! as an extern `FUNC` in the `.ksyms` `DATASEC`, a kconfig variable as an extern `VAR` in the
//! `.kconfig` `DATASEC`. Code refers to them through relocations against the undefined symbol:
//! a `call` with `src_reg = BPF_PSEUDO_KFUNC_CALL` for a kfunc, a 64-bit immediate load of the
//! variable's address for a kconfig variable. As libbpf does (`bpf_object__collect_externs` and
//! `bpf_object__resolve_externs` in tools/lib/bpf/libbpf.c), [`collect`]:
//!
//! * gives each called kfunc a slot in [`crate::program::Object::kfuncs`] (resolving the name to a
//!   kernel BTF id is the kernel loader's job);
//! * lays the kconfig variables out in one read-only `.kconfig` global-data map, biggest
//!   alignment first, and fills its initial value from a [`KernelConfig`]: `LINUX_KERNEL_VERSION`,
//!   `LINUX_HAS_BPF_COOKIE`, `LINUX_HAS_SYSCALL_WRAPPER` from the release, every other name from
//!   the config's settings (`y`/`n`/`m` for `bool`, `char` and `enum libbpf_tristate`, numbers
//!   for integers, quoted text for `char` arrays). A `__weak` variable without a value reads 0;
//!   a non-weak one is an error naming it.
//!
//! `__ksym` variables (addresses of kernel data) and taking a kfunc's address
//! (`bpf_ksym_exists`) are refused with a message saying so.

use std::collections::HashMap;

use object::elf;

use super::{
    internal_map_name, Reader, Rel, Symbol, Target, CALL_OPCODE, R_BPF_64_32, R_BPF_64_64,
};
use crate::btf::{Btf, Kind, TypeId};
use crate::insn::{pseudo, RawInsn};
use crate::kconfig::KernelConfig;
use crate::object::ObjectError;
use crate::program::{Kfunc, MapDef, MapOrigin, MapType};

/// `BTF_INT_CHAR` and `BTF_INT_BOOL` of the encoding bits of a BTF `INT` (include/uapi/linux/btf.h).
const BTF_INT_CHAR: u32 = 2;
const BTF_INT_BOOL: u32 = 4;
/// `linkage` of an extern BTF `VAR` or `FUNC` (`BTF_VAR_GLOBAL_EXTERN`, `BTF_FUNC_EXTERN`).
const BTF_EXTERN: u32 = 2;
/// Kernel release that added BPF cookies (`bpf_get_attach_cookie`, Linux 5.15): libbpf probes
/// for them to set `LINUX_HAS_BPF_COOKIE`; linerate derives it from the release.
const BPF_COOKIE_VERSION: u32 = 0x050f00;
/// Kernel release from which x86-64 system calls go through `__x64_sys_*` wrappers (4.17), the
/// fact `LINUX_HAS_SYSCALL_WRAPPER` states.
const SYSCALL_WRAPPER_VERSION: u32 = 0x041100;

/// A reference from code to an undefined symbol.
pub(crate) struct ExternRef<'a> {
    pub name: &'a str,
    /// Declared `__weak` (`STB_WEAK`).
    pub weak: bool,
    /// The referring instruction is a kfunc call (else a 64-bit immediate load).
    pub call: bool,
}

/// The object's externs, resolved.
#[derive(Default)]
pub(crate) struct Externs {
    pub kfuncs: Vec<Kfunc>,
    kfunc_index: HashMap<String, usize>,
    /// The `.kconfig` map, if any variable is used, and each variable's offset in its value.
    pub kconfig: Option<MapDef>,
    kconfig_offsets: HashMap<String, u32>,
    /// Index of the `.kconfig` map in the object's maps, once added.
    kconfig_map: Option<usize>,
}

impl Externs {
    /// The slot of kfunc `name` in the kfunc table.
    pub fn kfunc(&self, name: &str) -> Option<usize> {
        self.kfunc_index.get(name).copied()
    }

    /// The offset of kconfig variable `name` in the `.kconfig` map's value.
    pub fn kconfig_offset(&self, name: &str) -> Option<u32> {
        self.kconfig_offsets.get(name).copied()
    }
}

impl Reader<'_, '_> {
    /// Resolves the externs code refers to and adds the `.kconfig` map (after every other map).
    pub(super) fn collect_externs(&mut self) -> Result<(), ObjectError> {
        let mut refs = Vec::new();
        for (&target, rel_sections) in &self.elf.rels {
            let Some(insns) = self.code.get(&target) else {
                continue;
            };
            for rel in rel_sections.iter().flat_map(|(_, rels)| rels) {
                let sym = self.elf.symbols.get(rel.sym as usize);
                let insn = usize::try_from(rel.offset / 8)
                    .ok()
                    .and_then(|i| insns.get(i));
                let (Some(sym), Some(insn)) = (sym, insn) else {
                    continue;
                };
                if sym.shndx != elf::SHN_UNDEF || sym.name.is_empty() {
                    continue;
                }
                // Clang emits a call to an extern as a bpf-to-bpf call (src_reg 1); like libbpf,
                // the reader makes it a kfunc call.
                let call = insn.code == CALL_OPCODE
                    && matches!(insn.src, pseudo::CALL | pseudo::KFUNC_CALL);
                if call || insn.is_wide() {
                    refs.push(ExternRef {
                        name: &sym.name,
                        weak: sym.bind == elf::STB_WEAK,
                        call,
                    });
                }
            }
        }
        if refs.is_empty() {
            return Ok(());
        }
        let btf = match self.elf.sections.iter().find(|s| s.name == ".BTF") {
            Some(s) => Some(Btf::parse(s.data)?),
            None => None,
        };
        let prefix = self.name.split('.').next().unwrap_or_default();
        let map_name = internal_map_name(prefix, ".kconfig");
        let given = self.kconfig;
        let mut externs = collect(btf.as_ref(), &refs, &map_name, || {
            given.cloned().unwrap_or_else(KernelConfig::running)
        })?;
        if let Some(map) = externs.kconfig.take() {
            externs.kconfig_map = Some(self.maps.len());
            self.maps.push(map);
        }
        self.externs = externs;
        Ok(())
    }

    /// What a relocation against the undefined symbol `sym` on `insn` refers to; the error is the
    /// reason, for the caller to place.
    pub(super) fn resolve_extern(
        &self,
        sym: &Symbol,
        insn: RawInsn,
        rel: &Rel,
    ) -> Result<Target, String> {
        let name = &sym.name;
        if name.is_empty() {
            return Err("refers to an undefined symbol without a name".into());
        }
        if insn.code == CALL_OPCODE {
            if !matches!(insn.src, pseudo::CALL | pseudo::KFUNC_CALL) {
                return Err(format!(
                    "calls extern `{name}` from a call with src_reg {}, expected a kfunc call",
                    insn.src
                ));
            }
            if rel.r_type != R_BPF_64_32 {
                return Err(format!(
                    "has type {}, expected R_BPF_64_32 (10) on a kfunc call",
                    rel.r_type
                ));
            }
            return self
                .externs
                .kfunc(name)
                .map(Target::Kfunc)
                .ok_or_else(|| format!("calls kfunc `{name}`, which was not collected"));
        }
        if !insn.is_wide() || rel.r_type != R_BPF_64_64 {
            return Err(format!(
                "refers to extern `{name}` from an instruction with opcode {:#04x} (relocation \
                 type {}), expected a kfunc call or a 64-bit immediate load",
                insn.code, rel.r_type
            ));
        }
        let (Some(map), Some(base)) = (self.externs.kconfig_map, self.externs.kconfig_offset(name))
        else {
            return Err(format!(
                "refers to extern `{name}`, which is not a __kconfig variable"
            ));
        };
        let offset = i64::from(base) + i64::from(insn.imm);
        let size = self.maps[map].value_size;
        match u32::try_from(offset) {
            Ok(offset) if offset <= size => Ok(Target::MapValue { map, offset }),
            _ => Err(format!(
                "refers to offset {offset} of the {size}-byte .kconfig map through `{name}`"
            )),
        }
    }
}

/// The kind of value a kconfig variable holds (libbpf's `enum kcfg_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum KcfgType {
    Bool,
    Char,
    Tristate,
    Int { signed: bool },
    CharArray,
}

struct KconfigVar<'a> {
    name: &'a str,
    weak: bool,
    ty: KcfgType,
    size: u32,
    align: u32,
}

/// Resolves the externs `refs` of an object whose BTF is `btf`; the kernel configuration is
/// asked for only if a kconfig variable is used. `map_name` is the `.kconfig` map's name.
pub(crate) fn collect(
    btf: Option<&Btf>,
    refs: &[ExternRef<'_>],
    map_name: &str,
    config: impl FnOnce() -> KernelConfig,
) -> Result<Externs, ObjectError> {
    let mut externs = Externs::default();
    let mut vars: Vec<KconfigVar<'_>> = Vec::new();
    for r in refs {
        if r.call {
            if externs.kfunc(r.name).is_none() {
                externs
                    .kfunc_index
                    .insert(r.name.to_string(), externs.kfuncs.len());
                externs.kfuncs.push(Kfunc {
                    name: r.name.to_string(),
                    btf_func: btf.and_then(|b| extern_func(b, r.name)),
                    weak: r.weak,
                });
            }
            continue;
        }
        if vars.iter().any(|v| v.name == r.name) {
            continue;
        }
        vars.push(kconfig_var(btf, r)?);
    }
    if vars.is_empty() {
        return Ok(externs);
    }
    // libbpf's order (cmp_externs): larger alignment first, then smaller size, then name.
    vars.sort_by(|a, b| {
        b.align
            .cmp(&a.align)
            .then(a.size.cmp(&b.size))
            .then(a.name.cmp(b.name))
    });
    let mut layout = Vec::with_capacity(vars.len());
    let mut end = 0u32;
    for v in &vars {
        let off = end.next_multiple_of(v.align.max(1));
        end = off.checked_add(v.size).ok_or_else(|| ObjectError::Map {
            map: map_name.to_string(),
            reason: "kconfig variables exceed 4 GiB".into(),
        })?;
        layout.push(off);
    }
    let config = config();
    let mut value = vec![0u8; end.next_multiple_of(8) as usize];
    for (v, &off) in vars.iter().zip(&layout) {
        let slot = &mut value[off as usize..(off + v.size) as usize];
        fill(v, slot, &config)?;
        externs.kconfig_offsets.insert(v.name.to_string(), off);
    }
    externs.kconfig = Some(MapDef {
        name: map_name.to_string(),
        map_type: MapType::ARRAY,
        key_size: 4,
        value_size: value.len() as u32,
        max_entries: 1,
        flags: crate::object::BPF_F_RDONLY_PROG,
        origin: MapOrigin::GlobalData {
            section: ".kconfig".into(),
            read_only: true,
        },
        initial_value: Some(value),
        initial_programs: Vec::new(),
        inner: None,
        spin_lock: None,
    });
    Ok(externs)
}

/// The extern `FUNC` named `name` in `btf`.
fn extern_func(btf: &Btf, name: &str) -> Option<TypeId> {
    btf.types()
        .find(|(_, t)| {
            matches!(t.kind, Kind::Func { linkage, .. } if linkage == BTF_EXTERN)
                && btf.name(t).is_ok_and(|n| n == name)
        })
        .map(|(id, _)| id)
}

fn extern_error(name: &str, reason: impl std::fmt::Display) -> ObjectError {
    ObjectError::Extern {
        name: name.to_string(),
        reason: reason.to_string(),
    }
}

/// The kconfig variable a 64-bit immediate load of extern `r` refers to.
fn kconfig_var<'a>(btf: Option<&Btf>, r: &ExternRef<'a>) -> Result<KconfigVar<'a>, ObjectError> {
    let Some(btf) = btf else {
        return Err(extern_error(
            r.name,
            "is used without .BTF saying what it is (a __kconfig variable needs its BTF type)",
        ));
    };
    let in_section = |section: &str| -> Option<TypeId> {
        let (_, sec) = btf.find_datasec(section)?;
        let Kind::Datasec { vars, .. } = &sec.kind else {
            return None;
        };
        vars.iter().map(|v| v.type_id).find(|&id| {
            btf.get(id)
                .is_some_and(|t| btf.name(t).is_ok_and(|n| n == r.name))
        })
    };
    if in_section(".ksyms").is_some() || extern_func(btf, r.name).is_some() {
        return Err(extern_error(
            r.name,
            "is a __ksym address (kernel variables and kfunc addresses are not supported; kfunc \
             calls are)",
        ));
    }
    let Some(var) = in_section(".kconfig") else {
        return Err(extern_error(
            r.name,
            "is neither a __kconfig variable nor a kfunc (no .kconfig or .ksyms entry in .BTF)",
        ));
    };
    let Kind::Var { type_id, .. } = btf.ty(var)?.kind else {
        return Err(extern_error(
            r.name,
            "has a .kconfig entry that is not a VAR",
        ));
    };
    let ty = kcfg_type(btf, type_id)?.ok_or_else(|| {
        extern_error(
            r.name,
            "has a type __kconfig does not support (bool, char, enum libbpf_tristate, integers \
             and char arrays are)",
        )
    })?;
    let size = u32::try_from(btf.resolve_size(type_id)?)
        .ok()
        .filter(|&s| s > 0 && s <= 1 << 16)
        .ok_or_else(|| extern_error(r.name, "has a size outside 1..=65536 bytes"))?;
    let align = match ty {
        KcfgType::CharArray => 1,
        _ => size,
    };
    if let KcfgType::Int { .. } = ty {
        if !matches!(size, 1 | 2 | 4 | 8) {
            return Err(extern_error(
                r.name,
                format!("is an integer of {size} bytes"),
            ));
        }
    }
    Ok(KconfigVar {
        name: r.name,
        weak: r.weak,
        ty,
        size,
        align,
    })
}

/// libbpf's `find_kcfg_type`.
fn kcfg_type(btf: &Btf, id: TypeId) -> Result<Option<KcfgType>, ObjectError> {
    let (_, ty) = btf.skip_mods_and_typedefs(id)?;
    let Some(ty) = ty else {
        return Ok(None);
    };
    Ok(match &ty.kind {
        Kind::Int { size, encoding } => {
            let enc = (encoding >> 24) & 0x0f;
            if enc & BTF_INT_BOOL != 0 {
                (*size == 1).then_some(KcfgType::Bool)
            } else if enc & BTF_INT_CHAR != 0 || (*size == 1 && btf.name(ty)? == "char") {
                (*size == 1).then_some(KcfgType::Char)
            } else {
                Some(KcfgType::Int {
                    signed: enc & 1 != 0,
                })
            }
        }
        Kind::Enum { size: 4, .. } if btf.name(ty)? == "libbpf_tristate" => {
            Some(KcfgType::Tristate)
        }
        Kind::Array { elem, .. } => {
            (kcfg_type(btf, *elem)? == Some(KcfgType::Char)).then_some(KcfgType::CharArray)
        }
        _ => None,
    })
}

/// Writes variable `v`'s value into `slot` (zeroed).
fn fill(v: &KconfigVar<'_>, slot: &mut [u8], config: &KernelConfig) -> Result<(), ObjectError> {
    let version = config.kernel_version();
    let flag = |yes: bool| if yes { "y" } else { "n" }.to_string();
    let text = match v.name {
        "LINUX_KERNEL_VERSION" => Some(version.to_string()),
        "LINUX_HAS_BPF_COOKIE" => Some(flag(version >= BPF_COOKIE_VERSION)),
        "LINUX_HAS_SYSCALL_WRAPPER" => Some(flag(
            cfg!(target_arch = "x86_64") && version >= SYSCALL_WRAPPER_VERSION,
        )),
        name if name.starts_with("LINUX_") => {
            return Err(extern_error(
                name,
                "is not a LINUX_ variable libbpf defines",
            ))
        }
        name => config.settings.get(name).cloned(),
    };
    let Some(text) = text else {
        if v.weak {
            return Ok(());
        }
        let source = config
            .source
            .as_deref()
            .unwrap_or("no kernel config file found");
        return Err(extern_error(
            v.name,
            format!("has no value in the running kernel's config ({source}) and is not __weak"),
        ));
    };
    let bad = |why: &str| extern_error(v.name, format!("cannot take config value {text}: {why}"));
    match (v.ty, text.as_str()) {
        (KcfgType::Bool, "y") | (KcfgType::Tristate, "y") => slot[0] = 1,
        (KcfgType::Bool | KcfgType::Tristate, "n") => {}
        (KcfgType::Tristate, "m") => slot[0] = 2,
        (KcfgType::Bool, _) | (KcfgType::Tristate, _) => {
            return Err(bad("expected y or n (or m for a tristate)"))
        }
        (KcfgType::Char, t) if t.len() == 1 => slot[0] = t.as_bytes()[0],
        (KcfgType::CharArray, t) => {
            let inner = t
                .strip_prefix('"')
                .and_then(|t| t.strip_suffix('"'))
                .ok_or_else(|| bad("expected quoted text for a char array"))?;
            // Truncated to leave the terminating NUL, as libbpf does.
            let n = inner.len().min(slot.len() - 1);
            slot[..n].copy_from_slice(&inner.as_bytes()[..n]);
        }
        (KcfgType::Int { .. } | KcfgType::Char, t) => {
            let signed = matches!(v.ty, KcfgType::Int { signed: true });
            let n = parse_number(t).ok_or_else(|| bad("expected a number"))?;
            let bits = 8 * slot.len() as u32;
            let fits = if bits == 64 {
                true
            } else if signed {
                let min = -(1i128 << (bits - 1));
                (min..(1i128 << (bits - 1))).contains(&(n as i64 as i128))
            } else {
                n < 1u64 << bits
            };
            if !fits {
                return Err(bad(&format!("does not fit {} bytes", slot.len())));
            }
            let bytes = n.to_le_bytes();
            slot.copy_from_slice(&bytes[..slot.len()]);
        }
    }
    Ok(())
}

/// A number as `strtoull(text, NULL, 0)` reads it: decimal, `0x` hex or `0` octal, optionally
/// negative (two's complement).
fn parse_number(text: &str) -> Option<u64> {
    let (negative, t) = match text.strip_prefix('-') {
        Some(t) => (true, t),
        None => (false, text),
    };
    let n = if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u64::from_str_radix(hex, 16).ok()?
    } else if t.len() > 1 && t.starts_with('0') {
        u64::from_str_radix(&t[1..], 8).ok()?
    } else {
        t.parse().ok()?
    };
    Some(if negative { n.wrapping_neg() } else { n })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_like_strtoull() {
        assert_eq!(parse_number("42"), Some(42));
        assert_eq!(parse_number("0x10"), Some(16));
        assert_eq!(parse_number("010"), Some(8));
        assert_eq!(parse_number("-1"), Some(u64::MAX));
        assert_eq!(parse_number("y"), None);
    }

    fn var(ty: KcfgType, size: u32, weak: bool) -> KconfigVar<'static> {
        KconfigVar {
            name: "CONFIG_X",
            weak,
            ty,
            size,
            align: size,
        }
    }

    fn config(value: Option<&str>) -> KernelConfig {
        let mut c = KernelConfig {
            release: "6.18.1".into(),
            source: Some("test".into()),
            ..KernelConfig::default()
        };
        if let Some(v) = value {
            c.settings.insert("CONFIG_X".into(), v.into());
        }
        c
    }

    fn value(ty: KcfgType, size: u32, text: Option<&str>) -> Result<Vec<u8>, String> {
        let mut slot = vec![0u8; size as usize];
        fill(&var(ty, size, false), &mut slot, &config(text)).map_err(|e| e.to_string())?;
        Ok(slot)
    }

    #[test]
    fn values_fill_as_libbpf_sets_them() {
        assert_eq!(value(KcfgType::Bool, 1, Some("y")), Ok(vec![1]));
        assert_eq!(
            value(KcfgType::Tristate, 4, Some("m")),
            Ok(vec![2, 0, 0, 0])
        );
        assert_eq!(value(KcfgType::Char, 1, Some("m")), Ok(vec![b'm']));
        assert_eq!(
            value(KcfgType::Int { signed: false }, 4, Some("0x1234")),
            Ok(vec![0x34, 0x12, 0, 0])
        );
        assert_eq!(
            value(KcfgType::CharArray, 4, Some("\"abcdef\"")),
            Ok(b"abc\0".to_vec())
        );
        let err = value(KcfgType::Int { signed: false }, 1, Some("256")).unwrap_err();
        assert_eq!(
            err,
            "extern `CONFIG_X` cannot take config value 256: does not fit 1 bytes"
        );
        let err = value(KcfgType::Bool, 1, None).unwrap_err();
        assert_eq!(
            err,
            "extern `CONFIG_X` has no value in the running kernel's config (test) and is not \
             __weak"
        );
        let mut slot = [7u8];
        slot[0] = 0;
        fill(&var(KcfgType::Bool, 1, true), &mut slot, &config(None)).unwrap();
        assert_eq!(slot, [0]);
    }
}
