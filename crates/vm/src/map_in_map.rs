//! Maps of maps (`ARRAY_OF_MAPS`, `HASH_OF_MAPS`) in the interpreter.
//!
//! An outer map is stored like any map ([`crate::maps`]: a sparse array or a hash map) whose
//! 4-byte values are the indices of inner maps in the object's maps — the form map contents use
//! everywhere (`linerate_bpf::program::InnerMaps`). What a lookup means is written in
//! `linerate_sem::helpers`; this file gives it the handle of the map a slot names, and places
//! the inner maps the object declares statically.

use linerate_bpf::MapDef;

use crate::error::VmError;
use crate::machine::Execution;
use crate::maps::{MapError, MapState, BPF_ANY};
use crate::memory::{pointer, MAP_HANDLE_REGION};

/// Checks that map of maps `def` can be created (it has an inner map template, without which the
/// kernel cannot create it either) and writes the inner maps it places statically into `map`.
pub(crate) fn place_initial(def: &MapDef, map: &mut MapState) -> Result<(), MapError> {
    let Some(inner) = def.inner.as_deref() else {
        return Err(MapError::Invalid {
            name: def.name.clone(),
            reason: format!(
                "a {} needs its inner map template declared in BTF (__array(values, struct \
                 inner))",
                def.map_type.name()
            ),
        });
    };
    for &(slot, index) in &inner.initial {
        let rc = map.update(&slot.to_le_bytes(), &(index as u32).to_le_bytes(), BPF_ANY);
        if rc != 0 {
            return Err(MapError::Invalid {
                name: def.name.clone(),
                reason: format!("cannot place its inner map in slot {slot}: error {rc}"),
            });
        }
    }
    Ok(())
}

impl Execution<'_> {
    /// The handle of the map whose index a slot of map of maps `outer` holds.
    pub(crate) fn inner_map_handle(
        &self,
        pc: usize,
        outer: usize,
        slot: u64,
    ) -> Result<u64, Box<VmError>> {
        match usize::try_from(slot)
            .ok()
            .filter(|&i| i < self.vm.maps.len())
        {
            Some(index) => Ok(pointer(MAP_HANDLE_REGION + index as u64, 0)),
            None => Err(Box::new(VmError::MemoryFault {
                program: self.program_name(),
                pc,
                what: format!(
                    "slot of map `{}` naming map {slot}, but the object has {} maps",
                    self.vm.maps[outer].def.name,
                    self.vm.maps.len()
                ),
            })),
        }
    }
}
