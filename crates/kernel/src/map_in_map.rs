//! Maps of maps (`ARRAY_OF_MAPS`, `HASH_OF_MAPS`) in the kernel: creating an outer map from its
//! inner map template, and translating between the model's form of an outer map's values (the
//! inner map's index in `Object::maps`, see `linerate_bpf::program::InnerMaps`) and the kernel's
//! (a map file descriptor when user space writes a slot, a map id when it reads one).

use std::os::fd::{AsRawFd, OwnedFd};

use linerate_bpf::MapDef;

use crate::error::KernelError;
use crate::sys::{self, Cmd, Errno};

/// The inner map template's file descriptor for creating map of maps `def`
/// (`BPF_MAP_CREATE`'s `inner_map_fd`): a map created from the template, which the caller closes
/// once the outer map exists (the kernel keeps a copy of its shape, as libbpf relies on).
pub(crate) fn template_fd(
    def: &MapDef,
    create: impl Fn(&MapDef) -> Result<OwnedFd, KernelError>,
) -> Result<OwnedFd, KernelError> {
    let Some(inner) = def.inner.as_deref() else {
        return Err(KernelError::InvalidArgument(format!(
            "map `{}`: a {} needs its inner map template declared in BTF (__array(values, \
             struct inner)) to be created",
            def.name,
            def.map_type.name()
        )));
    };
    create(&inner.template)
}

/// The kernel's id of a map (`bpf_map_info.id`), by which a map-of-maps lookup from user space
/// names the inner map.
pub(crate) fn map_id(fd: &OwnedFd) -> Result<u32, Errno> {
    let mut info = sys::MapInfoHead::default();
    let mut attr = sys::InfoAttr {
        bpf_fd: fd.as_raw_fd() as u32,
        info_len: std::mem::size_of::<sys::MapInfoHead>() as u32,
        info: sys::ptr_u64(&mut info as *mut sys::MapInfoHead),
    };
    // SAFETY: `info` is writable for `info_len` bytes for the duration of the call.
    unsafe { sys::sys_bpf(Cmd::ObjGetInfoByFd, &mut attr) }?;
    Ok(info.id)
}

/// The 4-byte value user space writes into a slot of map of maps `def` to place the map of index
/// `value` (little-endian `u32`) there: that map's file descriptor.
pub(crate) fn slot_value(
    def: &MapDef,
    value: &[u8],
    fd_of: impl Fn(usize) -> Option<i32>,
) -> Result<Vec<u8>, KernelError> {
    let index = <[u8; 4]>::try_from(value)
        .map(u32::from_le_bytes)
        .map_err(|_| {
            KernelError::InvalidArgument(format!(
                "map `{}` is a {}: the value must be a 4-byte map index, got {} bytes",
                def.name,
                def.map_type.name(),
                value.len()
            ))
        })?;
    let fd = fd_of(index as usize).ok_or_else(|| {
        KernelError::InvalidArgument(format!(
            "map `{}`: value names map {index}, which the object does not have",
            def.name
        ))
    })?;
    Ok((fd as u32).to_le_bytes().to_vec())
}

/// The model's value for a slot the kernel read back as map id `raw`: the index of the object's
/// map with that id (`index_of`), or the raw id for a map that is not the object's.
pub(crate) fn slot_index(raw: &[u8], index_of: impl Fn(u32) -> Option<usize>) -> Vec<u8> {
    let index = <[u8; 4]>::try_from(raw)
        .ok()
        .and_then(|id| index_of(u32::from_le_bytes(id)));
    match index {
        Some(index) => (index as u32).to_le_bytes().to_vec(),
        None => raw.to_vec(),
    }
}
