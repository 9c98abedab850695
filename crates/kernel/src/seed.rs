//! Seeding a loaded object's maps: the one place a [`MapSeed`] is written into the kernel.

use linerate_bpf::contents::{MapSeed, SeedError};

use crate::object::LoadedObject;

impl LoadedObject {
    /// Writes `seed` into the maps in order with `BPF_MAP_UPDATE_ELEM` (`BPF_ANY`), exactly as
    /// `linerate_vm::Vm::seed` does in the interpreter.
    ///
    /// Every entry is checked first ([`MapSeed::check`]: the map exists, key and value sizes, a
    /// program array's value names a program), so a bad seed changes nothing. A map that refuses
    /// an entry stops the seeding with [`SeedError::Refused`] carrying the kernel's errno
    /// (negative, as the update helper returns it).
    pub fn seed(&self, seed: &MapSeed) -> Result<(), SeedError> {
        seed.check(self.num_maps(), self.num_programs(), |i| self.map_def(i))?;
        for entry in seed.entries() {
            let def = self.map_def(entry.map).ok_or(SeedError::NoSuchMap {
                map: entry.map,
                maps: self.num_maps(),
            })?;
            self.update(entry.map, &entry.key, &entry.value)
                .map_err(|e| match e.errno() {
                    Some(errno) => entry.refused(def, -i64::from(errno.0)),
                    None => SeedError::Failed {
                        map: def.name.clone(),
                        entry: entry.entry,
                        key: entry.key.clone(),
                        reason: e.to_string(),
                    },
                })?;
        }
        Ok(())
    }
}
