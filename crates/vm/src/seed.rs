//! Seeding the interpreter's maps: the one place a [`MapSeed`] is written into a [`Vm`].

use crate::maps::BPF_ANY;
use crate::Vm;
use linerate_bpf::contents::{MapSeed, SeedError};

impl Vm {
    /// Writes `seed` into the maps in order, each entry as a `BPF_ANY` update.
    ///
    /// Every entry is checked first ([`MapSeed::check`]: the map exists, key and value sizes, a
    /// program array's value names a program), so a bad seed changes nothing. A map that refuses an
    /// entry (an array index past the end, a full hash map) stops the seeding with
    /// [`SeedError::Refused`] carrying the errno the kernel's update would return.
    pub fn seed(&mut self, seed: &MapSeed) -> Result<(), SeedError> {
        let programs = self.object().programs.len();
        let maps = &self.maps;
        seed.check(maps.len(), programs, |i| maps.get(i).map(|m| &m.def))?;
        for entry in seed.entries() {
            let count = self.maps.len();
            let map = self.maps.get_mut(entry.map).ok_or(SeedError::NoSuchMap {
                map: entry.map,
                maps: count,
            })?;
            let rc = map.update(&entry.key, &entry.value, BPF_ANY);
            if rc != 0 {
                return Err(entry.refused(&map.def, rc));
            }
        }
        Ok(())
    }
}
