//! Reading maps of maps (`ARRAY_OF_MAPS`, `HASH_OF_MAPS`) the way libbpf does: the inner map
//! template declared in BTF by the outer map's `values` member (`__array(values, struct inner)`)
//! and the inner maps placed statically with `.values = { [slot] = &inner }`, which clang emits as
//! relocations of the `values` pointer slots in `.maps`. The result is [`InnerMaps`] on the outer
//! [`MapDef`] (see its documentation for the model).

use crate::btf::{Btf, Kind, TypeId};
use crate::program::{InnerMaps, MapDef, MapType};

use super::{parse_btf_map_def, ObjectError, Reader, Rel};

/// The inner map template of map-in-map `outer`, whose `values` member has type `values_type`
/// (a zero-length array of pointers to the inner map's definition struct). libbpf names the
/// template `OUTER.inner`.
pub(super) fn inner_template(
    btf: &Btf,
    outer: &str,
    values_type: TypeId,
) -> Result<InnerMaps, ObjectError> {
    let map_err = |reason: String| ObjectError::Map {
        map: outer.to_string(),
        reason,
    };
    let (_, array) = btf.skip_mods_and_typedefs(values_type)?;
    let elem = match array.map(|t| &t.kind) {
        Some(&Kind::Array { elem, .. }) => elem,
        _ => return Err(map_err("member `values` is not an array".into())),
    };
    let (_, ptr) = btf.skip_mods_and_typedefs(elem)?;
    let Some(&Kind::Ptr(target)) = ptr.map(|t| &t.kind) else {
        return Err(map_err(
            "member `values` is not an array of pointers to the inner map's definition \
             (declare it with __array(values, struct inner))"
                .into(),
        ));
    };
    let name = format!("{outer}.inner");
    let (template, values) = parse_btf_map_def(btf, &name, target)?;
    if template.map_type.is_map_in_map() || values.is_some() {
        return Err(map_err(format!(
            "inner map template is a {} with `values`: one level of maps in maps only",
            template.map_type.name()
        )));
    }
    Ok(InnerMaps {
        template,
        initial: Vec::new(),
    })
}

impl Reader<'_, '_> {
    /// The map that relocation `rel` of slot `slot` of map-in-map `outer`'s `values` points to.
    pub(super) fn inner_map_of(
        &self,
        outer: &MapDef,
        slot: u32,
        rel: &Rel,
    ) -> Result<usize, ObjectError> {
        let sym = self.elf.symbols.get(rel.sym as usize);
        let inner = sym.and_then(|s| self.map_at.get(&(s.section()?, s.value)).copied());
        inner.ok_or_else(|| ObjectError::Map {
            map: outer.name.clone(),
            reason: format!(
                "slot {slot} is initialised with `{}`, which is not a map of section .maps",
                sym.map_or("?", |s| s.name.as_str())
            ),
        })
    }
}

/// Records inner maps placed statically, `(outer map, slot, inner map)`, on their outer maps,
/// each checked against the outer map's template as the kernel checks it.
pub(super) fn place_initial(
    maps: &mut [MapDef],
    slots: Vec<(usize, u32, usize)>,
) -> Result<(), ObjectError> {
    for (outer, slot, inner) in slots {
        let inner_def = maps[inner].clone();
        let def = &mut maps[outer];
        let map_err = |reason: String| ObjectError::Map {
            map: def.name.clone(),
            reason,
        };
        // libbpf writes the slot number as an int key, so hash maps of maps need 4-byte keys.
        if def.map_type == MapType::HASH_OF_MAPS && def.key_size != 4 {
            return Err(map_err(format!(
                "slot {slot} is initialised, but `.values` needs 4-byte keys, not {}",
                def.key_size
            )));
        }
        if def.map_type == MapType::ARRAY_OF_MAPS && slot >= def.max_entries {
            return Err(map_err(format!(
                "slot {slot} is initialised, but the array has {} entries",
                def.max_entries
            )));
        }
        let Some(inner_maps) = def.inner.as_deref_mut() else {
            return Err(map_err(format!(
                "slot {slot} is initialised, but the map declares no inner map template"
            )));
        };
        if let Some(reason) = inner_maps.mismatch(&inner_def) {
            return Err(ObjectError::Map {
                map: def.name.clone(),
                reason: format!("slot {slot}: {reason}"),
            });
        }
        inner_maps.initial.push((slot, inner));
    }
    for def in maps.iter_mut() {
        if let Some(inner) = def.inner.as_deref_mut() {
            inner.initial.sort_unstable();
        }
    }
    Ok(())
}
