//! Reading a loaded map's contents back fast, in the canonical form both engines report
//! ([`normalize_entries`]: sorted by key, plain arrays without all-zero elements).
//!
//! Reading every element with one `BPF_MAP_GET_NEXT_KEY` and one `BPF_MAP_LOOKUP_ELEM` each
//! ([`LoadedObject::entries`]) costs two system calls per element: minutes for a 2^25-element
//! count-min sketch. [`LoadedObject::contents`] instead reads
//!
//! * plain arrays through a read-only `mmap` of their values, kept for the map's life, scanning
//!   4 KiB at a time for non-zero bytes, so only elements that hold something are copied. This
//!   needs the array to be created with `BPF_F_MMAPABLE`, which the loader adds to every
//!   `BPF_MAP_TYPE_ARRAY` (see `object::create_map` for why the program cannot tell);
//! * hash maps (plain, per-CPU, LRU) and arrays without a mapping with `BPF_MAP_LOOKUP_BATCH`
//!   (Linux 5.6+), thousands of elements per call;
//! * everything else (program arrays, whose values are translated to program indices, device and
//!   CPU maps, LPM tries, which have no batch operations) element by element, as before.
//!
//! A kernel that refuses the flag, the mapping or the batch command for a map type falls back to
//! the next way down, so the answer never depends on which way was taken.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd};

use linerate_bpf::contents::{normalize_entries, Entries};
use linerate_bpf::{MapDef, MapType};

use crate::error::KernelError;
use crate::object::{map_op_error, LoadedMap, LoadedObject};
use crate::sys::{self, Cmd};

/// Bytes scanned at once for a non-zero byte before looking at single elements.
const SCAN_CHUNK: usize = 4096;
/// Most elements asked for per `BPF_MAP_LOOKUP_BATCH` call.
const BATCH_ELEMENTS: usize = 1 << 14;

/// A read-only shared mapping of a `BPF_F_MMAPABLE` array's values, unmapped on drop.
#[derive(Debug)]
pub(crate) struct Mapping {
    addr: *mut libc::c_void,
    len: usize,
}

// SAFETY: the mapping is read-only for this process and owned by this value alone; the kernel
// writes it only while a program runs, which never overlaps a read (test runs are synchronous).
unsafe impl Send for Mapping {}
// SAFETY: as above; `&Mapping` only reads.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Maps the values of array `def` created with `BPF_F_MMAPABLE` as `fd`; `None` when the
    /// kernel refuses (then the map is read with batch lookups).
    pub(crate) fn new(fd: BorrowedFd<'_>, def: &MapDef) -> Option<Mapping> {
        // SAFETY: sysconf has no preconditions.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).ok()?;
        let len = element_stride(def)
            .checked_mul(def.max_entries as usize)?
            .checked_next_multiple_of(page.max(1))?;
        if len == 0 {
            return None;
        }
        // SAFETY: a fresh shared read-only mapping of a BPF map file descriptor; the kernel checks
        // `len` against the array's size (`array_map_mmap`).
        let addr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        (addr != libc::MAP_FAILED).then_some(Mapping { addr, len })
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: `addr` is a live mapping of `len` readable bytes until `self` is dropped.
        unsafe { std::slice::from_raw_parts(self.addr.cast::<u8>(), self.len) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `addr`/`len` are exactly what mmap returned, unmapped once.
        unsafe { libc::munmap(self.addr, self.len) };
    }
}

/// Bytes per array element in the kernel's layout (and a mapping): the value rounded up to 8.
fn element_stride(def: &MapDef) -> usize {
    (def.value_size as usize).div_ceil(8) * 8
}

/// The non-zero elements of an array whose values `bytes` holds (`element_stride` bytes each, as
/// many as `def.max_entries`), as `(index, value)` pairs in index order.
fn scan_array(def: &MapDef, bytes: &[u8]) -> Entries {
    let stride = element_stride(def);
    let value_size = def.value_size as usize;
    let values = bytes.len().min(stride * def.max_entries as usize);
    let mut out = Vec::new();
    // Chunks are whole elements, so an all-zero chunk is skipped without looking inside.
    let chunk = (SCAN_CHUNK / stride).max(1) * stride;
    for (c, block) in bytes[..values].chunks(chunk).enumerate() {
        if block.iter().fold(0u8, |acc, b| acc | b) == 0 {
            continue;
        }
        for (i, element) in block.chunks(stride).enumerate() {
            let value = &element[..value_size.min(element.len())];
            if value.iter().any(|b| *b != 0) {
                let index = (c * chunk / stride + i) as u32;
                out.push((index.to_le_bytes().to_vec(), value.to_vec()));
            }
        }
    }
    out
}

impl LoadedObject {
    /// What map `map_index` holds now, canonical ([`normalize_entries`]), read the fastest way
    /// the map and the kernel allow (see the module documentation). Equal to normalizing
    /// [`LoadedObject::entries`], which reads element by element.
    pub fn contents(&self, map_index: usize) -> Result<Entries, KernelError> {
        let map = self.map(map_index)?;
        let def = &map.def;
        if let Some(mapping) = &map.mapping {
            return Ok(normalize_entries(def, scan_array(def, mapping.bytes())));
        }
        let batched = matches!(
            def.map_type,
            MapType::HASH
                | MapType::PERCPU_HASH
                | MapType::LRU_HASH
                | MapType::LRU_PERCPU_HASH
                | MapType::ARRAY
                | MapType::PERCPU_ARRAY
        );
        if batched {
            if let Some(entries) = self.lookup_batch(map)? {
                return Ok(normalize_entries(def, entries));
            }
        }
        Ok(normalize_entries(def, self.entries(map_index)?))
    }

    /// Whether map `map_index` is an array read back through a mapping of its values (it was
    /// created `BPF_F_MMAPABLE` and the kernel let it be mapped).
    pub fn is_mapped(&self, map_index: usize) -> bool {
        self.map(map_index).is_ok_and(|m| m.mapping.is_some())
    }

    /// Every element of `map` with `BPF_MAP_LOOKUP_BATCH` (per-CPU values: CPU 0's), or `None`
    /// when the kernel does not support it for this map.
    fn lookup_batch(&self, map: &LoadedMap) -> Result<Option<Entries>, KernelError> {
        let def = &map.def;
        let key_size = def.key_size as usize;
        let value_size = def.value_size as usize;
        let value_bytes = if def.map_type.is_percpu() {
            element_stride(def) * self.possible_cpus()
        } else {
            value_size
        };
        // Hash maps return whole buckets: a batch smaller than a bucket fails with ENOSPC and
        // is retried twice as large.
        let mut capacity = (def.max_entries as usize).clamp(1, BATCH_ELEMENTS);
        // The position is a u32 bucket index for hash maps and a key for arrays.
        let position_len = key_size.max(8);
        let mut position = vec![0u8; position_len];
        let mut next_position = vec![0u8; position_len];
        let mut started = false;
        let mut out = Vec::new();
        loop {
            let mut keys = vec![0u8; capacity * key_size];
            let mut values = vec![0u8; capacity * value_bytes];
            let mut attr = sys::MapBatchAttr {
                in_batch: if started {
                    sys::ptr_u64(position.as_ptr())
                } else {
                    0
                },
                out_batch: sys::ptr_u64(next_position.as_mut_ptr()),
                keys: sys::ptr_u64(keys.as_mut_ptr()),
                values: sys::ptr_u64(values.as_mut_ptr()),
                count: u32::try_from(capacity).unwrap_or(u32::MAX),
                map_fd: map.fd.as_fd().as_raw_fd() as u32,
                ..Default::default()
            };
            // SAFETY: `keys` and `values` have room for `count` keys and (per-CPU) values,
            // `position` and `next_position` for the position of either kind of map.
            let res = unsafe { sys::sys_bpf(Cmd::MapLookupBatch, &mut attr) };
            let done = match res {
                Ok(_) => false,
                Err(e) if e.0 == libc::ENOENT => true,
                Err(e) if e.0 == libc::ENOSPC && attr.count == 0 && capacity < (1 << 24) => {
                    capacity *= 2;
                    continue;
                }
                Err(e)
                    if !started
                        && (e.0 == libc::EINVAL
                            || e.0 == libc::EOPNOTSUPP
                            || e.0 == sys::ENOTSUPP) =>
                {
                    return Ok(None)
                }
                Err(errno) => return Err(map_op_error(Cmd::MapLookupBatch, def, errno)),
            };
            let count = (attr.count as usize).min(capacity);
            out.extend(
                keys.chunks(key_size.max(1))
                    .zip(values.chunks(value_bytes.max(1)))
                    .take(count)
                    .map(|(k, v)| (k.to_vec(), v[..value_size.min(v.len())].to_vec())),
            );
            if done || count == 0 {
                return Ok(Some(out));
            }
            std::mem::swap(&mut position, &mut next_position);
            started = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_finds_nonzero_elements_by_index() {
        let def = MapDef::new("a", MapType::ARRAY, 4, 4, 2000);
        let mut bytes = vec![0u8; 2000 * 8];
        bytes[8 * 3..8 * 3 + 4].copy_from_slice(&7u32.to_le_bytes());
        bytes[8 * 1999] = 1;
        let found = scan_array(&def, &bytes);
        assert_eq!(
            found,
            vec![
                (3u32.to_le_bytes().to_vec(), vec![7, 0, 0, 0]),
                (1999u32.to_le_bytes().to_vec(), vec![1, 0, 0, 0]),
            ]
        );
    }
}
