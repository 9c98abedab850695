//! Map contents as data, the same for every engine that runs an object: the entries a user seeds
//! its maps with before the first packet ([`MapSeed`], checked against the maps by
//! [`SeedEntry::check`]), what happens to them between packets ([`MapMode`]), and the canonical
//! listing of what a map holds afterwards ([`normalize_entries`]).
//!
//! The interpreter (`linerate_vm::seed`) and the kernel loader (`linerate_kernel`'s
//! `LoadedObject::seed`) write a seed with the same checks and fail with the same [`SeedError`];
//! `linerate-io` reads seeds from files.
//!
//! # What a run reports as a map's contents
//!
//! Both engines list a map in one canonical form ([`normalize_entries`]), which is what `run
//! --json` prints under `maps` and what the differential tests compare:
//!
//! * hash-like maps (hash, LRU and per-CPU hashes, LPM tries, device hashes): every entry;
//! * plain and per-CPU arrays: only the elements whose value (CPU 0's, for per-CPU arrays) is not
//!   all zero bytes; an element not listed holds zeros;
//! * program, device, CPU and socket arrays: the occupied slots.
//!
//! So the listing grows with what the seed and the programs wrote, never with `max_entries`: an
//! untouched array lists nothing, and a 2^25-counter sketch after a thousand packets lists the few
//! thousand counters that are not zero. Non-zero rather than "differs from the seed" because the
//! listing then says what the map holds whatever it was seeded with, and it is itself a valid
//! seed (`--maps`) that recreates the same state; what changed relative to the seed is what
//! `run`'s human output shows (`map changes`: entries added, changed, removed). Neither engine
//! visits untouched elements to produce it: the interpreter keeps arrays in pages written on
//! demand (`linerate_vm::slab`), and the kernel runner reads arrays through a mapping of the
//! kernel's values and hash maps in batches (`LoadedObject::contents`).

use crate::program::{MapDef, MapType};

/// One map's entries as `(key, value)` byte strings.
pub type Entries = Vec<(Vec<u8>, Vec<u8>)>;

/// Every map's entries, in `Object::maps` order.
pub type MapContents = Vec<Entries>;

/// One entry to write into a map before running.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeedEntry {
    /// Index of the map in `Object::maps`.
    pub map: usize,
    /// Position of this entry among the entries given for its map (what messages call
    /// `entry N`: the index in the map's list of a maps file).
    pub entry: usize,
    /// Raw key bytes, as the map stores them.
    pub key: Vec<u8>,
    /// Raw value bytes; for a program array, the little-endian `u32` index of a program of the
    /// object; for a map of maps, that of the inner map in `Object::maps`.
    pub value: Vec<u8>,
}

/// Initial contents of an object's maps, written in order with `BPF_ANY` (a later entry with the
/// same key replaces an earlier one).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MapSeed {
    entries: Vec<SeedEntry>,
    /// Entries given so far per map index (so that numbering a seed of 100,000 entries is not
    /// quadratic).
    per_map: std::collections::BTreeMap<usize, usize>,
}

/// What happens to the maps between the packets of one run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapMode {
    /// Seeded once; each packet sees what the packets before it left (`linerate run`, the
    /// differential tests).
    Persist,
    /// Every packet starts from freshly seeded maps, so each result depends on that packet alone
    /// (`linerate cost --packets`, crafted packets with an expected verdict).
    Fresh,
}

/// A seed entry that cannot be written. Every message names the map and the entry.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SeedError {
    #[error("cannot seed map {map}: the object has {maps} maps")]
    NoSuchMap { map: usize, maps: usize },
    #[error("map `{map}` entry {entry}: key has {got} bytes, the map's keys have {want}")]
    KeySize {
        map: String,
        entry: usize,
        got: usize,
        want: u32,
    },
    #[error("map `{map}` entry {entry}: value has {got} bytes, the map's values have {want}")]
    ValueSize {
        map: String,
        entry: usize,
        got: usize,
        want: u32,
    },
    #[error("map `{map}` entry {entry}: value names program {program}, the object has {programs}")]
    NoSuchProgram {
        map: String,
        entry: usize,
        program: u32,
        programs: usize,
    },
    /// A map-of-maps entry names no map, or one that does not fit the outer map's template.
    #[error("map `{map}` entry {entry}: {reason}")]
    InnerMap {
        map: String,
        entry: usize,
        reason: String,
    },
    /// The map refused the entry; `errno` is negative, as the map update helper returns it.
    #[error(
        "cannot seed map `{map}` with key {} (entry {entry}): error {errno}",
        hex(key)
    )]
    Refused {
        map: String,
        entry: usize,
        key: Vec<u8>,
        errno: i64,
    },
    /// Writing the entry failed for a reason that is not an errno of the map.
    #[error(
        "cannot seed map `{map}` with key {} (entry {entry}): {reason}",
        hex(key)
    )]
    Failed {
        map: String,
        entry: usize,
        key: Vec<u8>,
        reason: String,
    },
}

impl SeedEntry {
    /// Checks the entry against the map it names (`def`, of an object with `programs`
    /// programs): key and value sizes, and for a program array that the value names a program.
    pub fn check(&self, def: &MapDef, programs: usize) -> Result<(), SeedError> {
        if self.key.len() != def.key_size as usize {
            return Err(SeedError::KeySize {
                map: def.name.clone(),
                entry: self.entry,
                got: self.key.len(),
                want: def.key_size,
            });
        }
        if self.value.len() != def.value_size as usize {
            return Err(SeedError::ValueSize {
                map: def.name.clone(),
                entry: self.entry,
                got: self.value.len(),
                want: def.value_size,
            });
        }
        if def.map_type == MapType::PROG_ARRAY {
            let program = <[u8; 4]>::try_from(self.value.as_slice()).map(u32::from_le_bytes);
            if let Some(program) = program.ok().filter(|p| *p as usize >= programs) {
                return Err(SeedError::NoSuchProgram {
                    map: def.name.clone(),
                    entry: self.entry,
                    program,
                    programs,
                });
            }
        }
        Ok(())
    }

    /// Checks that the value of this entry of map-of-maps `def` names a map of the object (of
    /// `maps` maps, by index) that fits `def`'s inner map template, as the kernel checks the map
    /// it is given.
    fn check_inner<'a>(
        &self,
        def: &MapDef,
        maps: usize,
        map_def: impl Fn(usize) -> Option<&'a MapDef>,
    ) -> Result<(), SeedError> {
        let refuse = |reason: String| SeedError::InnerMap {
            map: def.name.clone(),
            entry: self.entry,
            reason,
        };
        let Some(template) = def.inner.as_deref() else {
            return Err(refuse(format!(
                "the {} declares no inner map template (__array(values, struct inner))",
                def.map_type.name()
            )));
        };
        let index = <[u8; 4]>::try_from(self.value.as_slice()).map(u32::from_le_bytes);
        let inner = index.ok().and_then(|i| map_def(i as usize));
        let Some(inner) = inner else {
            return Err(refuse(format!(
                "value {} names no map (the object has {maps})",
                hex(&self.value)
            )));
        };
        match template.mismatch(inner) {
            Some(reason) => Err(refuse(reason)),
            None => Ok(()),
        }
    }

    /// The error for a map that refused this entry with `errno` (negative).
    pub fn refused(&self, def: &MapDef, errno: i64) -> SeedError {
        SeedError::Refused {
            map: def.name.clone(),
            entry: self.entry,
            key: self.key.clone(),
            errno,
        }
    }
}

impl MapSeed {
    /// No entries.
    pub fn new() -> MapSeed {
        MapSeed::default()
    }

    /// Appends an entry for map `map`; its [`SeedEntry::entry`] is the number of entries given
    /// for that map before it.
    pub fn push(&mut self, map: usize, key: Vec<u8>, value: Vec<u8>) {
        let count = self.per_map.entry(map).or_insert(0);
        let entry = *count;
        *count += 1;
        self.entries.push(SeedEntry {
            map,
            entry,
            key,
            value,
        });
    }

    /// The entries, in the order they are written.
    pub fn entries(&self) -> &[SeedEntry] {
        &self.entries
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Checks every entry ([`SeedEntry::check`]) against the maps `map_def` returns by index (of
    /// an object with `maps` maps and `programs` programs), and that a map-of-maps entry names a
    /// map fitting the outer map's inner template, so that an engine can refuse a seed before
    /// writing any of it.
    pub fn check<'a>(
        &self,
        maps: usize,
        programs: usize,
        map_def: impl Fn(usize) -> Option<&'a MapDef>,
    ) -> Result<(), SeedError> {
        for e in &self.entries {
            let def = map_def(e.map).ok_or(SeedError::NoSuchMap { map: e.map, maps })?;
            e.check(def, programs)?;
            if def.map_type.is_map_in_map() {
                e.check_inner(def, maps, &map_def)?;
            }
        }
        Ok(())
    }
}

impl FromIterator<(usize, Vec<u8>, Vec<u8>)> for MapSeed {
    fn from_iter<I: IntoIterator<Item = (usize, Vec<u8>, Vec<u8>)>>(iter: I) -> MapSeed {
        let mut seed = MapSeed::new();
        for (map, key, value) in iter {
            seed.push(map, key, value);
        }
        seed
    }
}

/// Puts map entries read from anywhere (the interpreter, the kernel) into the canonical form (see
/// the module documentation): sorted by key bytes, and for plain and per-CPU arrays without
/// all-zero values (an untouched array lists nothing). Queues and stacks have no keys: their
/// values (with empty keys) stay in the order pops return them.
pub fn normalize_entries(def: &MapDef, mut entries: Entries) -> Entries {
    if def.map_type.is_queue() {
        return entries;
    }
    if matches!(def.map_type, MapType::ARRAY | MapType::PERCPU_ARRAY) {
        entries.retain(|(_, v)| v.iter().any(|b| *b != 0));
    }
    entries.sort();
    entries
}

/// Lower-case hex, for messages.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(map_type: MapType, key_size: u32, value_size: u32) -> MapDef {
        MapDef::new("m", map_type, key_size, value_size, 4)
    }

    #[test]
    fn entries_are_numbered_per_map_and_checked() {
        let seed: MapSeed = [
            (0, vec![1, 0], vec![7]),
            (1, vec![0; 4], vec![5, 0, 0, 0]),
            (0, vec![2], vec![8]),
        ]
        .into_iter()
        .collect();
        let numbers: Vec<(usize, usize)> =
            seed.entries().iter().map(|e| (e.map, e.entry)).collect();
        assert_eq!(numbers, [(0, 0), (1, 0), (0, 1)]);
        let defs = [def(MapType::HASH, 2, 1), def(MapType::PROG_ARRAY, 4, 4)];
        let err = seed.check(2, 6, |i| defs.get(i)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "map `m` entry 1: key has 1 bytes, the map's keys have 2"
        );
        let err = seed.check(2, 5, |i| defs.get(i)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "map `m` entry 0: value names program 5, the object has 5"
        );
        let err = seed
            .check(1, 6, |i| defs.get(i).filter(|_| i == 0))
            .unwrap_err();
        assert_eq!(err, SeedError::NoSuchMap { map: 1, maps: 1 });
        let refused = seed.entries()[0].refused(&defs[0], -7);
        assert_eq!(
            refused.to_string(),
            "cannot seed map `m` with key 0100 (entry 0): error -7"
        );
    }

    #[test]
    fn map_of_maps_entries_name_a_fitting_map() {
        use crate::program::InnerMaps;
        let mut outer = def(MapType::ARRAY_OF_MAPS, 4, 4);
        let defs = [
            outer.clone(),
            def(MapType::HASH, 4, 8),
            def(MapType::ARRAY, 4, 8),
        ];
        let seed: MapSeed = [(0, vec![0; 4], vec![2, 0, 0, 0])].into_iter().collect();
        let err = seed.check(3, 0, |i| defs.get(i)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "map `m` entry 0: the array_of_maps declares no inner map template \
             (__array(values, struct inner))"
        );
        outer.inner = Some(Box::new(InnerMaps {
            template: MapDef::new("m.inner", MapType::ARRAY, 4, 8, 4),
            initial: Vec::new(),
        }));
        let defs = [outer, defs[1].clone(), defs[2].clone()];
        assert_eq!(seed.check(3, 0, |i| defs.get(i)), Ok(()));
        let seed: MapSeed = [(0, vec![0; 4], vec![1, 0, 0, 0])].into_iter().collect();
        let err = seed.check(3, 0, |i| defs.get(i)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "map `m` entry 0: `m` has type hash, but the inner map template `m.inner` has array"
        );
        let seed: MapSeed = [(0, vec![0; 4], vec![3, 0, 0, 0])].into_iter().collect();
        let err = seed.check(3, 0, |i| defs.get(i)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "map `m` entry 0: value 03000000 names no map (the object has 3)"
        );
    }

    #[test]
    fn plain_arrays_list_only_nonzero_values_sorted() {
        let entries = vec![
            (vec![1, 0, 0, 0], vec![0, 0]),
            (vec![0, 0, 0, 0], vec![0, 1]),
        ];
        assert_eq!(
            normalize_entries(&def(MapType::ARRAY, 4, 2), entries.clone()),
            vec![(vec![0, 0, 0, 0], vec![0, 1])]
        );
        assert_eq!(
            normalize_entries(&def(MapType::HASH, 4, 2), entries).len(),
            2
        );
    }
}
