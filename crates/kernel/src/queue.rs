//! Reading a queue or stack map without changing it.
//!
//! The kernel offers no way to list a queue or stack: `BPF_MAP_LOOKUP_ELEM` peeks at the one
//! element a pop would return, `BPF_MAP_GET_NEXT_KEY` is refused. So the map is drained with
//! `BPF_MAP_LOOKUP_AND_DELETE_ELEM` (a pop: oldest first for a queue, newest first for a stack)
//! and the values pushed back with `BPF_MAP_UPDATE_ELEM` (a push) in the order that rebuilds it:
//! a queue's in pop order, a stack's reversed (kernel/bpf/queue_stack_maps.c). Between packets
//! nothing else touches the map, so the state after reading is the state before.

use std::os::fd::{AsRawFd, BorrowedFd};

use linerate_bpf::{MapDef, MapType};

use crate::object::{raw_update, MapEntries};
use crate::sys::{self, Cmd, Errno};

/// The values of queue or stack `fd` in pop order, each with an empty key.
pub(crate) fn entries(fd: BorrowedFd<'_>, def: &MapDef) -> Result<MapEntries, (Cmd, Errno)> {
    let mut values = Vec::new();
    // Bounded so that a map changing under us cannot loop forever.
    for _ in 0..=def.max_entries {
        let mut value = vec![0u8; def.value_size as usize];
        let mut attr = sys::MapElemAttr {
            map_fd: fd.as_raw_fd() as u32,
            value: sys::ptr_u64(value.as_mut_ptr()),
            ..Default::default()
        };
        // SAFETY: the map has no keys (NULL key) and `value` has its value size.
        match unsafe { sys::sys_bpf(Cmd::MapLookupAndDeleteElem, &mut attr) } {
            Ok(_) => values.push(value),
            Err(e) if e.0 == libc::ENOENT => break,
            Err(e) => return Err((Cmd::MapLookupAndDeleteElem, e)),
        }
    }
    let restore: Box<dyn Iterator<Item = &Vec<u8>>> = if def.map_type == MapType::STACK {
        Box::new(values.iter().rev())
    } else {
        Box::new(values.iter())
    };
    for value in restore {
        raw_update(fd, &[], value).map_err(|e| (Cmd::MapUpdateElem, e))?;
    }
    Ok(values.into_iter().map(|v| (Vec::new(), v)).collect())
}
