//! The fix-ups a loader makes to an object's BTF before the kernel sees it, as libbpf does
//! (`btf_fixup_datasec` and the extern handling of `bpf_object__collect_externs` in
//! tools/lib/bpf/libbpf.c); the kernel's checks they satisfy are in kernel/bpf/btf.c.
//!
//! * Clang leaves every `DATASEC` size and variable offset 0: the size becomes the ELF section's
//!   and each variable's offset its symbol's value, and the variables are sorted by offset
//!   (`btf_datasec_check_meta` wants them sorted, non-overlapping, inside the section).
//! * `.kconfig` and `.ksyms` describe externs, which have no ELF section: their variables are laid
//!   out one after another and the section sized to hold them; `extern` variables become
//!   global-allocated (`btf_var_check_meta` refuses `BTF_VAR_GLOBAL_EXTERN`), and extern functions
//!   listed there (kfuncs) are replaced in the `DATASEC` by a 4-byte `int` variable `dummy_ksym`
//!   (`btf_datasec_resolve` wants only variables).
//! * Extern functions (`BTF_FUNC_EXTERN` linkage, refused by `btf_func_check_meta`) become global,
//!   and their unnamed parameters are named `dummy_ksym` (`btf_func_check` refuses a global
//!   function's unnamed parameter: "Invalid arg#1").
//!
//! Type ids never change (new types are appended), so `func_info`, CO-RE records and map type ids
//! stay valid.

use std::collections::HashMap;

use super::{Btf, Kind, Type, TypeId};

/// `BTF_VAR_GLOBAL_ALLOCATED` (include/uapi/linux/btf.h).
const VAR_GLOBAL_ALLOCATED: u32 = 1;
/// `BTF_VAR_GLOBAL_EXTERN`.
const VAR_GLOBAL_EXTERN: u32 = 2;
/// `BTF_FUNC_GLOBAL`.
const FUNC_GLOBAL: u32 = 1;
/// `BTF_FUNC_EXTERN`.
const FUNC_EXTERN: u32 = 2;
/// The `INT` encoding word of a signed 32-bit integer: `BTF_INT_SIGNED` in bits 24..28, the bit
/// count in bits 0..8.
const INT_SIGNED_32: u32 = 1 << 24 | 32;

/// What the ELF file says about the sections an object's `DATASEC`s describe.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SectionLayout {
    /// Size of each section by name.
    pub sizes: HashMap<String, u64>,
    /// Value (offset in its section) of each symbol by `(section name, symbol name)`.
    pub symbols: HashMap<(String, String), u64>,
}

/// Whether a `DATASEC` describes externs rather than an ELF section.
fn is_extern_section(name: &str) -> bool {
    name == ".kconfig" || name == ".ksyms"
}

impl Btf {
    /// Appends a type and returns its id.
    pub(crate) fn push_type(&mut self, ty: Type) -> TypeId {
        self.types.push(ty);
        TypeId::try_from(self.types.len()).unwrap_or(TypeId::MAX)
    }

    /// Appends a string and returns its offset.
    pub(crate) fn push_string(&mut self, s: &str) -> u32 {
        let offset = u32::try_from(self.strings.len()).unwrap_or(u32::MAX);
        self.strings.extend_from_slice(s.as_bytes());
        self.strings.push(0);
        offset
    }

    /// A copy fixed up for `BPF_BTF_LOAD` (see the module documentation), or why it cannot be.
    /// Only standalone BTF (an object's) is fixed up; split BTF is the kernel's own.
    pub fn fixed_for_kernel(&self, layout: &SectionLayout) -> Result<Btf, String> {
        if self.base.is_some() {
            return Err("split BTF is not fixed up for loading".to_string());
        }
        let mut btf = self.clone();
        let mut dummy_ksym: Option<TypeId> = None;
        let mut param_name: Option<u32> = None;
        for index in 0..btf.types.len() {
            let id = TypeId::try_from(index + 1).unwrap_or(TypeId::MAX);
            match btf.types[index].kind.clone() {
                Kind::Func { proto, linkage } if linkage == FUNC_EXTERN => {
                    btf.types[index].kind = Kind::Func {
                        proto,
                        linkage: FUNC_GLOBAL,
                    };
                    btf.name_params(proto, &mut param_name);
                }
                Kind::Datasec { size, mut vars } => {
                    let name = btf
                        .str_at(btf.types[index].name_off)
                        .map_err(|e| format!("DATASEC [{id}]: {e}"))?
                        .to_string();
                    let size = if is_extern_section(&name) {
                        btf.lay_out_externs(&mut vars, &mut dummy_ksym)?
                    } else {
                        btf.place_section_vars(&name, size, &mut vars, layout)?
                    };
                    vars.sort_by_key(|v| v.offset);
                    btf.types[index].kind = Kind::Datasec { size, vars };
                }
                _ => {}
            }
        }
        Ok(btf)
    }

    /// Names the unnamed, non-void parameters of prototype `proto` (`name` caches the offset of
    /// the name, appended on first use).
    fn name_params(&mut self, proto: TypeId, name: &mut Option<u32>) {
        let Some(index) = (proto as usize).checked_sub(1) else {
            return;
        };
        let needs_name = match self.types.get(index).map(|t| &t.kind) {
            Some(Kind::FuncProto { params, .. }) => {
                params.iter().any(|p| p.type_id != 0 && p.name_off == 0)
            }
            _ => false,
        };
        if !needs_name {
            return;
        }
        let offset = *name.get_or_insert_with(|| self.push_string("dummy_ksym"));
        if let Some(Kind::FuncProto { params, .. }) = self.types.get_mut(index).map(|t| &mut t.kind)
        {
            for p in params
                .iter_mut()
                .filter(|p| p.type_id != 0 && p.name_off == 0)
            {
                p.name_off = offset;
            }
        }
    }

    /// Sizes an ELF-backed `DATASEC` and places its variables at their symbols' offsets.
    fn place_section_vars(
        &self,
        section: &str,
        size: u32,
        vars: &mut [super::VarSecinfo],
        layout: &SectionLayout,
    ) -> Result<u32, String> {
        if size != 0 {
            // Already laid out (the BPF static linker does it).
            return Ok(size);
        }
        let size = layout
            .sizes
            .get(section)
            .copied()
            .filter(|&s| s > 0)
            .ok_or_else(|| {
                format!("DATASEC `{section}` has no ELF section to take its size from")
            })?;
        let size = u32::try_from(size)
            .map_err(|_| format!("section {section} of {size} bytes is too large for BTF"))?;
        for v in vars.iter_mut() {
            let var = self.ty(v.type_id).map_err(|e| e.to_string())?;
            let Kind::Var { linkage, .. } = var.kind else {
                return Err(format!(
                    "DATASEC `{section}` lists type [{}], which is not a variable",
                    v.type_id
                ));
            };
            if linkage == VAR_GLOBAL_EXTERN {
                continue;
            }
            let name = self.name(var).map_err(|e| e.to_string())?;
            let offset = layout
                .symbols
                .get(&(section.to_string(), name.to_string()))
                .ok_or_else(|| {
                    format!("variable `{name}` of DATASEC `{section}` has no ELF symbol")
                })?;
            v.offset = u32::try_from(*offset)
                .map_err(|_| format!("variable `{name}` at offset {offset:#x} is out of range"))?;
        }
        Ok(size)
    }

    /// Lays out the variables of `.kconfig` / `.ksyms` one after another, each aligned to its
    /// size (at most 8), replacing functions by the `dummy_ksym` variable. Returns the size.
    fn lay_out_externs(
        &mut self,
        vars: &mut [super::VarSecinfo],
        dummy_ksym: &mut Option<TypeId>,
    ) -> Result<u32, String> {
        let mut end: u32 = 0;
        for v in vars.iter_mut() {
            let ty = self.ty(v.type_id).map_err(|e| e.to_string())?.clone();
            match ty.kind {
                Kind::Func { .. } => v.type_id = self.dummy_ksym(dummy_ksym),
                Kind::Var { type_id, linkage } => {
                    if linkage == VAR_GLOBAL_EXTERN {
                        let index = v.type_id as usize - 1;
                        self.types[index].kind = Kind::Var {
                            type_id,
                            linkage: VAR_GLOBAL_ALLOCATED,
                        };
                    }
                }
                _ => {
                    return Err(format!(
                        "extern DATASEC lists type [{}] of kind {}",
                        v.type_id,
                        ty.kind_name()
                    ))
                }
            }
            let size = u32::try_from(self.resolve_size(v.type_id).map_err(|e| e.to_string())?)
                .map_err(|_| format!("extern variable [{}] is too large", v.type_id))?;
            let align = size.clamp(1, 8).next_power_of_two().min(8);
            let offset = end
                .checked_next_multiple_of(align)
                .ok_or("extern DATASEC overflows")?;
            v.offset = offset;
            v.size = size;
            end = offset.checked_add(size).ok_or("extern DATASEC overflows")?;
        }
        Ok(end)
    }

    /// The id of the `dummy_ksym` variable (a signed 4-byte `int`), created on first use.
    fn dummy_ksym(&mut self, cache: &mut Option<TypeId>) -> TypeId {
        if let Some(id) = *cache {
            return id;
        }
        let existing_int = self
            .types()
            .find_map(|(id, t)| matches!(t.kind, Kind::Int { size: 4, .. }).then_some(id));
        let int = match existing_int {
            Some(id) => id,
            None => {
                let name_off = self.push_string("int");
                self.push_type(Type {
                    name_off,
                    kind_flag: false,
                    kind: Kind::Int {
                        size: 4,
                        encoding: INT_SIGNED_32,
                    },
                })
            }
        };
        let name_off = self.push_string("dummy_ksym");
        let id = self.push_type(Type {
            name_off,
            kind_flag: false,
            kind: Kind::Var {
                type_id: int,
                linkage: VAR_GLOBAL_ALLOCATED,
            },
        });
        *cache = Some(id);
        id
    }
}
