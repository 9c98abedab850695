//! Seeding a loaded object's maps: the one place a [`MapSeed`] is written into the kernel.

use std::os::fd::{AsFd, AsRawFd};

use linerate_bpf::contents::{MapSeed, SeedEntry, SeedError};
use linerate_bpf::MapType;

use crate::object::LoadedObject;
use crate::sys::{self, Cmd};

/// Most entries written per `BPF_MAP_UPDATE_BATCH` call.
const BATCH_ENTRIES: usize = 1 << 14;

impl LoadedObject {
    /// Writes `seed` into the maps in order with `BPF_MAP_UPDATE_ELEM` (`BPF_ANY`), exactly as
    /// `linerate_vm::Vm::seed` does in the interpreter.
    ///
    /// Every entry is checked first ([`MapSeed::check`]: the map exists, key and value sizes, a
    /// program array's value names a program), so a bad seed changes nothing. A map that refuses
    /// an entry stops the seeding with [`SeedError::Refused`] carrying the kernel's errno
    /// (negative, as the update helper returns it).
    ///
    /// Consecutive entries for one plain hash or array go in with `BPF_MAP_UPDATE_BATCH`, which
    /// writes them in order with `BPF_ANY` as element-by-element writing does, at a fraction of
    /// the system calls (a seed of 100,000 flows). A batch call that fails is written again
    /// element by element from its first entry, so a refused entry is reported with its own
    /// errno and a kernel without batch updates is seeded as before; writing again what the
    /// failed call already wrote is harmless for these two map types (the same value replaces
    /// itself, and replacing an existing key never needs room). LRU hashes are left out: there a
    /// second write of a key is a fresh insertion that can evict another.
    pub fn seed(&self, seed: &MapSeed) -> Result<(), SeedError> {
        seed.check(self.num_maps(), self.num_programs(), |i| self.map_def(i))?;
        let entries = seed.entries();
        let mut start = 0;
        while let Some(first) = entries.get(start) {
            let run = entries[start..]
                .iter()
                .take_while(|e| e.map == first.map)
                .count();
            let run = &entries[start..start + run];
            start += run.len();
            let written = self.update_batch(run);
            for entry in &run[written..] {
                self.seed_entry(entry)?;
            }
        }
        Ok(())
    }

    fn seed_entry(&self, entry: &SeedEntry) -> Result<(), SeedError> {
        let def = self.map_def(entry.map).ok_or(SeedError::NoSuchMap {
            map: entry.map,
            maps: self.num_maps(),
        })?;
        if def.map_type == MapType::XSKMAP {
            return Err(SeedError::Failed {
                map: def.name.clone(),
                entry: entry.entry,
                key: entry.key.clone(),
                reason: "an AF_XDP socket map holds sockets that user space opens, which a seed \
                         cannot give (the interpreter replays such an entry)"
                    .into(),
            });
        }
        self.update(entry.map, &entry.key, &entry.value)
            .map_err(|e| match e.errno() {
                Some(errno) => entry.refused(def, -i64::from(errno.0)),
                None => SeedError::Failed {
                    map: def.name.clone(),
                    entry: entry.entry,
                    key: entry.key.clone(),
                    reason: e.to_string(),
                },
            })
    }

    /// Writes a prefix of `run` (checked entries of one map) with `BPF_MAP_UPDATE_BATCH` and
    /// returns its length: all of `run`, or the batches before the first that failed (0 when the
    /// map's type is not written in batches here).
    fn update_batch(&self, run: &[SeedEntry]) -> usize {
        let Some(first) = run.first() else {
            return 0;
        };
        let (Some(def), Some(fd)) = (self.map_def(first.map), self.map_fd(first.map)) else {
            return 0;
        };
        // Per-CPU values and program-array values need translating (`LoadedObject::update`).
        let batched = matches!(def.map_type, MapType::HASH | MapType::ARRAY);
        if !batched || run.len() < 2 {
            return 0;
        }
        let mut written = 0;
        for chunk in run.chunks(BATCH_ENTRIES) {
            let keys: Vec<u8> = chunk.iter().flat_map(|e| e.key.iter().copied()).collect();
            let values: Vec<u8> = chunk.iter().flat_map(|e| e.value.iter().copied()).collect();
            let mut attr = sys::MapBatchAttr {
                keys: sys::ptr_u64(keys.as_ptr()),
                values: sys::ptr_u64(values.as_ptr()),
                count: u32::try_from(chunk.len()).unwrap_or(u32::MAX),
                map_fd: fd.as_fd().as_raw_fd() as u32,
                elem_flags: sys::UPDATE_ANY,
                ..Default::default()
            };
            // The count written back on failure is not trusted: a kernel that refuses the command
            // itself leaves it as it was.
            // SAFETY: `keys` and `values` hold `count` keys and values of the map's sizes (every
            // entry was checked against the map).
            if unsafe { sys::sys_bpf(Cmd::MapUpdateBatch, &mut attr) }.is_err() {
                return written;
            }
            written += chunk.len();
        }
        written
    }
}
