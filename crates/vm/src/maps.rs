//! Maps as the interpreter keeps them.
//!
//! Every map stores its values in one [`Slab`] with a fixed stride, so a pointer to a value is
//! stable for as long as the entry lives and can be encoded as (map, byte offset into the slab) —
//! see [`crate::memory`]. Array-like maps have a slot per index, allocated (zeroed) only when
//! written, so a 2^25-entry array costs what its written pages cost; hash-like maps add slots on
//! insertion and find them through a key index. Return codes follow the kernel's (negative errno).

use linerate_bpf::{MapDef, MapType};

use crate::hash_order::{Position, VisitOrder};
use crate::key_hash::KeyIndex;
use crate::keyless::{Queue, Ring};
use crate::slab::{Loc, Slab};

pub use linerate_bpf::facts::errno::{E2BIG, EEXIST, EINVAL, ENOENT, ENOMEM};

/// `BPF_ANY`, `BPF_NOEXIST`, `BPF_EXIST` and `BPF_F_LOCK` update flags.
pub const BPF_ANY: u64 = 0;
pub const BPF_NOEXIST: u64 = 1;
pub const BPF_EXIST: u64 = 2;
pub const BPF_F_LOCK: u64 = 4;

/// How a map finds its entries.
#[derive(Clone, Debug)]
enum Layout {
    /// Key is a u32 index; slot = index. Plain arrays have every slot live; `sparse` ones
    /// (program, device, CPU and socket arrays) hold only what was inserted.
    Array { sparse: bool },
    /// Exact-match keys.
    Hash {
        index: KeyIndex,
        free: Vec<usize>,
        /// Use order for LRU eviction: slot → last-use tick.
        last_use: Vec<u64>,
        lru: bool,
        /// Slot → tick at which its element was linked into its bucket ([`crate::hash_order`]).
        age: Vec<u64>,
        /// The visit order of `bpf_for_each_map_elem`, built on first use after a change.
        order: Option<VisitOrder>,
    },
    /// Longest-prefix match on `{u32 prefixlen; u8 data[]}` keys.
    LpmTrie { index: KeyIndex, free: Vec<usize> },
    /// Ring buffers and perf event arrays: no entries ([`crate::keyless`]).
    Ring(Ring),
    /// Queues and stacks: values without keys ([`crate::keyless`]).
    Queue(Queue),
}

/// One map's contents.
#[derive(Clone, Debug)]
pub struct MapState {
    pub def: MapDef,
    /// Bytes between consecutive values in [`MapState::slab`] (value size rounded up to 8).
    pub stride: usize,
    /// Values, `stride` bytes each.
    pub slab: Slab,
    /// Which slots hold an entry; empty for plain arrays, whose every slot below `max_entries`
    /// holds one.
    live: Vec<bool>,
    layout: Layout,
    tick: u64,
}

/// Errors building a map.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MapError {
    #[error("map `{name}`: {reason}")]
    Invalid { name: String, reason: String },
}

/// Largest array the interpreter accepts (bytes of values, 16 GiB): far more than the kernel
/// allocates on the machines linerate runs on, and small enough that the page table of a sparse
/// array stays within 64 MiB.
const MAX_ARRAY_BYTES: usize = 1 << 34;

impl MapState {
    /// An empty map (arrays zero-filled; global data initialised from the object).
    pub fn new(def: &MapDef) -> Result<MapState, MapError> {
        let invalid = |reason: String| MapError::Invalid {
            name: def.name.clone(),
            reason,
        };
        let value_size = def.value_size as usize;
        let stride = value_size.div_ceil(8).max(1) * 8;
        let array_like = def.map_type.is_array_like();
        if array_like && def.key_size != 4 {
            return Err(invalid(format!(
                "{} maps need 4-byte keys, not {}",
                def.map_type.name(),
                def.key_size
            )));
        }
        if def.max_entries == 0 {
            return Err(invalid("max_entries is 0".into()));
        }
        let layout = match def.map_type {
            MapType::ARRAY | MapType::PERCPU_ARRAY => Layout::Array { sparse: false },
            t if t.is_array_like() => Layout::Array { sparse: true },
            MapType::HASH | MapType::PERCPU_HASH | MapType::DEVMAP_HASH | MapType::HASH_OF_MAPS => {
                Layout::Hash {
                    index: KeyIndex::default(),
                    free: Vec::new(),
                    last_use: Vec::new(),
                    lru: false,
                    age: Vec::new(),
                    order: None,
                }
            }
            MapType::LRU_HASH | MapType::LRU_PERCPU_HASH => Layout::Hash {
                index: KeyIndex::default(),
                free: Vec::new(),
                last_use: Vec::new(),
                lru: true,
                age: Vec::new(),
                order: None,
            },
            MapType::RINGBUF => {
                let size = u64::from(def.max_entries);
                if !size.is_power_of_two() || size % 4096 != 0 {
                    return Err(invalid(format!(
                        "ring buffer size {size} is not a power of 2 multiple of the page size"
                    )));
                }
                Layout::Ring(Ring::new(size))
            }
            t if t.is_record_output() => Layout::Ring(Ring::default()),
            t if t.is_queue() => {
                if def.key_size != 0 {
                    return Err(invalid(format!("{} maps have no keys", t.name())));
                }
                Layout::Queue(Queue::new(t == MapType::STACK))
            }
            MapType::LPM_TRIE => {
                if def.key_size <= 4 {
                    return Err(invalid(
                        "LPM trie keys need a prefix length and data".into(),
                    ));
                }
                Layout::LpmTrie {
                    index: KeyIndex::default(),
                    free: Vec::new(),
                }
            }
            other => {
                return Err(invalid(format!(
                    "map type {} ({}) is not supported by the interpreter",
                    other.0,
                    other.name()
                )))
            }
        };
        let max_entries = def.max_entries as usize;
        let (slab, live) = if def.map_type == MapType::RINGBUF {
            // The data area, twice ([`Ring`]): one slot, so that it stays contiguous.
            let data = max_entries
                .checked_mul(2)
                .ok_or_else(|| invalid(format!("ring of {max_entries} bytes is too large")))?;
            (Slab::new(data, 1, 1), Vec::new())
        } else if array_like {
            stride
                .checked_mul(max_entries)
                .filter(|b| *b <= MAX_ARRAY_BYTES)
                .ok_or_else(|| {
                    invalid(format!(
                        "array of {} entries of {stride} bytes is larger than the interpreter's \
                         limit of {} GiB",
                        def.max_entries,
                        MAX_ARRAY_BYTES >> 30
                    ))
                })?;
            let live = match layout {
                Layout::Array { sparse: true } => vec![false; max_entries],
                _ => Vec::new(),
            };
            (Slab::new(stride, max_entries, max_entries), live)
        } else {
            (Slab::new(stride, 0, max_entries), Vec::new())
        };
        let mut map = MapState {
            def: def.clone(),
            stride,
            slab,
            live,
            layout,
            tick: 0,
        };
        if let Some(init) = &def.initial_value {
            let n = init.len().min(value_size);
            map.slab.slot_mut(0, n).copy_from_slice(&init[..n]);
        }
        for &(slot, program) in &def.initial_programs {
            map.update(
                &slot.to_le_bytes(),
                &(program as u32).to_le_bytes(),
                BPF_ANY,
            );
        }
        if def.map_type.is_map_in_map() {
            crate::map_in_map::place_initial(def, &mut map)?;
        }
        Ok(map)
    }

    #[inline]
    fn array_index(&self, key: &[u8]) -> Option<usize> {
        let index = u32::from_le_bytes(key.get(..4)?.try_into().ok()?) as usize;
        (index < self.def.max_entries as usize).then_some(index)
    }

    /// The slot holding `key`'s value (exact match; for LPM tries, longest-prefix match).
    #[inline]
    pub fn lookup(&mut self, key: &[u8]) -> Option<usize> {
        self.tick += 1;
        match &mut self.layout {
            Layout::Array { .. } => self.array_index(key).filter(|&slot| self.is_live(slot)),
            Layout::Hash {
                index, last_use, ..
            } => {
                let slot = *index.get(key)?;
                last_use[slot] = self.tick;
                Some(slot)
            }
            Layout::LpmTrie { .. } => self.longest_prefix_match(key),
            Layout::Ring(_) | Layout::Queue(_) => None,
        }
    }

    /// The ring of a ring buffer or perf event array.
    pub fn ring_mut(&mut self) -> Option<&mut Ring> {
        match &mut self.layout {
            Layout::Ring(ring) => Some(ring),
            _ => None,
        }
    }

    /// The ring of a ring buffer with its data area.
    pub fn ring_and_data(&mut self) -> Option<(&mut Ring, &mut [u8])> {
        match &mut self.layout {
            Layout::Ring(ring) => {
                let len = self.slab.stride();
                Some((ring, self.slab.slot_mut(0, len)))
            }
            _ => None,
        }
    }

    /// The values of a queue or stack.
    pub fn queue_mut(&mut self) -> Option<&mut Queue> {
        match &mut self.layout {
            Layout::Queue(queue) => Some(queue),
            _ => None,
        }
    }

    fn longest_prefix_match(&self, key: &[u8]) -> Option<usize> {
        let Layout::LpmTrie { index, .. } = &self.layout else {
            return None;
        };
        let max_bits = (self.def.key_size as usize - 4) * 8;
        let query_len = (u32::from_le_bytes(key.get(..4)?.try_into().ok()?) as usize).min(max_bits);
        let query = &key[4..];
        index
            .iter()
            .filter_map(|(entry, &slot)| {
                let len = u32::from_le_bytes(entry[..4].try_into().ok()?) as usize;
                (len <= query_len && prefix_matches(&entry[4..], query, len)).then_some((len, slot))
            })
            .max_by_key(|(len, _)| *len)
            .map(|(_, slot)| slot)
    }

    /// Inserts or replaces `key`; returns 0 or a negative errno as the helper does.
    ///
    /// The checks come in the kernel's order: unknown flags, then (arrays) the index and
    /// `BPF_NOEXIST`, then `BPF_F_LOCK`, which needs a spin lock in the value
    /// ([`MapDef::spin_lock`]) and a map that takes it (arrays and plain hash maps; LRU and per-CPU
    /// hash maps refuse the flag). A locked update of an existing hash element rewrites it in
    /// place (`copy_map_value_locked`), so its place in the walk order stays. No update writes
    /// the lock's own bytes.
    pub fn update(&mut self, key: &[u8], value: &[u8], flags: u64) -> i64 {
        if flags & !BPF_F_LOCK > BPF_EXIST {
            return -EINVAL;
        }
        let lock = flags & BPF_F_LOCK != 0;
        let flags = flags & !BPF_F_LOCK;
        let max_entries = self.def.max_entries as usize;
        let slot = match &mut self.layout {
            Layout::Ring(_) => return -EINVAL,
            // An update of a queue or stack from user space is a push (`BPF_MAP_UPDATE_ELEM`
            // calls `map_push_elem`): `BPF_EXIST` makes room in a full map.
            Layout::Queue(queue) => {
                if flags & BPF_NOEXIST != 0 || flags > BPF_EXIST || lock {
                    return -EINVAL;
                }
                let full = queue.len() >= max_entries;
                if full && flags != BPF_EXIST {
                    return -E2BIG;
                }
                let n = value.len().min(self.def.value_size as usize);
                queue.push(value[..n].to_vec(), full);
                return 0;
            }
            Layout::Array { .. } => {
                let Some(slot) = self.array_index(key) else {
                    return -E2BIG;
                };
                if flags == BPF_NOEXIST && self.is_live(slot) {
                    return -EEXIST;
                }
                if lock && self.def.spin_lock.is_none() {
                    return -EINVAL;
                }
                if flags == BPF_EXIST && !self.is_live(slot) {
                    return -ENOENT;
                }
                if let Some(live) = self.live.get_mut(slot) {
                    *live = true;
                }
                slot
            }
            Layout::Hash { lru, index, .. } if lock => {
                if *lru || self.def.map_type.is_percpu() || self.def.spin_lock.is_none() {
                    return -EINVAL;
                }
                match index.get(key) {
                    Some(_) if flags == BPF_NOEXIST => return -EEXIST,
                    Some(&slot) => slot,
                    None if flags == BPF_EXIST => return -ENOENT,
                    None => match self.insert_slot(key, flags) {
                        Ok(slot) => slot,
                        Err(errno) => return errno,
                    },
                }
            }
            Layout::LpmTrie { .. } if lock => return -EINVAL,
            Layout::Hash { .. } | Layout::LpmTrie { .. } => {
                if let Layout::LpmTrie { .. } = self.layout {
                    let len = u32::from_le_bytes(key[..4].try_into().unwrap_or_default());
                    if len as usize > (self.def.key_size as usize - 4) * 8 {
                        return -EINVAL;
                    }
                }
                match self.insert_slot(key, flags) {
                    Ok(slot) => slot,
                    Err(errno) => return errno,
                }
            }
        };
        let n = value.len().min(self.def.value_size as usize);
        let lock = self
            .def
            .spin_lock
            .map(|at| at as usize..at as usize + 4)
            .filter(|l| l.end <= n);
        let dest = self.slab.slot_mut(slot, n);
        let kept_lock = lock.clone().map(|l| <[u8; 4]>::try_from(&dest[l]));
        dest.copy_from_slice(&value[..n]);
        if let (Some(l), Some(Ok(old))) = (lock, kept_lock) {
            dest[l].copy_from_slice(&old);
        }
        0
    }

    /// Finds or allocates the slot of `key` in a hash-like map, honouring `flags`.
    fn insert_slot(&mut self, key: &[u8], flags: u64) -> Result<usize, i64> {
        self.tick += 1;
        let tick = self.tick;
        let max = self.def.max_entries as usize;
        let relinks = !self.def.map_type.updates_in_place();
        let (index, free, last_use, lru) = match &mut self.layout {
            Layout::Hash {
                index,
                free,
                last_use,
                lru,
                age,
                order,
            } => {
                if let Some(&slot) = index.get(key) {
                    if flags == BPF_NOEXIST {
                        return Err(-EEXIST);
                    }
                    last_use[slot] = tick;
                    if relinks {
                        age[slot] = tick;
                        *order = None;
                    }
                    return Ok(slot);
                }
                (index, free, Some(last_use), *lru)
            }
            Layout::LpmTrie { index, free } => (index, free, None, false),
            Layout::Array { .. } | Layout::Ring(_) | Layout::Queue(_) => return Err(-EINVAL),
        };
        if let Some(&slot) = index.get(key) {
            if flags == BPF_NOEXIST {
                return Err(-EEXIST);
            }
            return Ok(slot);
        }
        if flags == BPF_EXIST {
            return Err(-ENOENT);
        }
        if index.len() >= max {
            let Some(last_use) = last_use.filter(|_| lru) else {
                return Err(-E2BIG);
            };
            // Evict the least recently used entry.
            let (victim_key, victim) = index
                .iter()
                .min_by_key(|(_, &slot)| last_use[slot])
                .map(|(k, &s)| (k.clone(), s))
                .ok_or(-ENOMEM)?;
            index.remove(&victim_key);
            self.live[victim] = false;
            free.push(victim);
        }
        let slot = match free.pop() {
            Some(slot) => slot,
            None => {
                let slot = self.live.len();
                self.live.push(false);
                self.slab.set_slots(slot + 1);
                slot
            }
        };
        if let Layout::Hash {
            last_use,
            age,
            order,
            ..
        } = &mut self.layout
        {
            if last_use.len() <= slot {
                last_use.resize(slot + 1, 0);
                age.resize(slot + 1, 0);
            }
            last_use[slot] = tick;
            age[slot] = tick;
            *order = None;
        }
        let (Layout::Hash { index, .. } | Layout::LpmTrie { index, .. }) = &mut self.layout else {
            return Err(-EINVAL);
        };
        index.insert(key.to_vec(), slot);
        self.live[slot] = true;
        self.slab.clear_slot(slot);
        Ok(slot)
    }

    /// Removes `key`; returns 0 or a negative errno as the helper does.
    pub fn delete(&mut self, key: &[u8]) -> i64 {
        match &mut self.layout {
            Layout::Array { sparse: false } | Layout::Ring(_) | Layout::Queue(_) => -EINVAL,
            Layout::Array { sparse: true } => match self.array_index(key) {
                Some(slot) if self.live[slot] => {
                    self.live[slot] = false;
                    0
                }
                _ => -ENOENT,
            },
            Layout::Hash {
                index, free, order, ..
            } => match index.remove(key) {
                Some(slot) => {
                    self.live[slot] = false;
                    free.push(slot);
                    *order = None;
                    0
                }
                None => -ENOENT,
            },
            Layout::LpmTrie { index, free } => match index.remove(key) {
                Some(slot) => {
                    self.live[slot] = false;
                    free.push(slot);
                    0
                }
                None => -ENOENT,
            },
        }
    }

    /// The element `bpf_for_each_map_elem` visits after the one at `after` (the first where
    /// `None`) in a hash map: its key, slot and position ([`crate::hash_order`]); `None` at the
    /// end of the walk or for other maps.
    pub fn next_in_visit_order(
        &mut self,
        after: Option<Position>,
    ) -> Option<(Vec<u8>, usize, Position)> {
        let max_entries = self.def.max_entries;
        let Layout::Hash {
            index, age, order, ..
        } = &mut self.layout
        else {
            return None;
        };
        let order = order.get_or_insert_with(|| {
            VisitOrder::new(
                index.iter().map(|(k, &slot)| (&k[..], age[slot], slot)),
                max_entries,
            )
        });
        let (slot, position, key) = order.next(after)?;
        Some((key.to_vec(), slot, position))
    }

    /// Whether `slot` holds an entry.
    #[inline]
    pub fn is_live(&self, slot: usize) -> bool {
        match self.layout {
            Layout::Array { sparse: false } => slot < self.def.max_entries as usize,
            _ => self.live.get(slot).copied().unwrap_or(false),
        }
    }

    /// The value bytes of a slot.
    pub fn value(&self, slot: usize) -> &[u8] {
        self.slab.slot(slot, self.def.value_size as usize)
    }

    /// All entries as `(key, value)` byte strings, sorted by key (queues and stacks: in pop
    /// order), in the canonical form of [`linerate_bpf::contents::normalize_entries`]: plain
    /// arrays list only entries whose value is not all zeros (an untouched array has no visible
    /// entries), found among the slab's written pages without visiting the rest.
    pub fn entries(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out: Vec<(Vec<u8>, Vec<u8>)> = match &self.layout {
            Layout::Array { sparse: false } => self
                .slab
                .written_slots()
                .filter(|&slot| self.value(slot).iter().any(|b| *b != 0))
                .map(|slot| {
                    (
                        (slot as u32).to_le_bytes().to_vec(),
                        self.value(slot).to_vec(),
                    )
                })
                .collect(),
            Layout::Array { sparse: true } => (0..self.live.len())
                .filter(|&slot| self.live[slot])
                .map(|slot| {
                    (
                        (slot as u32).to_le_bytes().to_vec(),
                        self.value(slot).to_vec(),
                    )
                })
                .collect(),
            Layout::Hash { index, .. } | Layout::LpmTrie { index, .. } => index
                .iter()
                .map(|(k, &slot)| (k.clone(), self.value(slot).to_vec()))
                .collect(),
            Layout::Ring(_) => Vec::new(),
            // In pop order, not sorted.
            Layout::Queue(queue) => return queue.entries(),
        };
        out.sort();
        out
    }

    /// Where the byte range `[offset, offset + len)` of the slab lives, if it lies inside one
    /// live value (in a ring buffer: inside a reserved record).
    #[inline(always)]
    pub fn locate_value(&self, offset: usize, len: usize) -> Option<Loc> {
        if let Layout::Array { sparse: false } = self.layout {
            let loc = self.slab.locate(offset, len)?;
            return (loc.slot < self.def.max_entries as usize
                && loc.within + len <= self.def.value_size as usize)
                .then_some(loc);
        }
        if let Layout::Ring(ring) = &self.layout {
            return ring
                .covers(offset, len)
                .then(|| self.slab.locate(offset, len))
                .flatten();
        }
        let loc = self.slab.locate(offset, len)?;
        (self.is_live(loc.slot) && loc.within + len <= self.def.value_size as usize).then_some(loc)
    }
}

/// Whether the first `bits` bits of `a` and `b` agree.
fn prefix_matches(a: &[u8], b: &[u8], bits: usize) -> bool {
    let full = bits / 8;
    if a.len() < full || b.len() < full || a[..full] != b[..full] {
        return false;
    }
    let rest = bits % 8;
    if rest == 0 {
        return true;
    }
    let mask = 0xffu8 << (8 - rest);
    match (a.get(full), b.get(full)) {
        (Some(x), Some(y)) => x & mask == y & mask,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(map_type: MapType, key_size: u32, value_size: u32, max_entries: u32) -> MapDef {
        MapDef::new("m", map_type, key_size, value_size, max_entries)
    }

    #[test]
    fn array_bounds_and_flags() {
        let mut m = MapState::new(&def(MapType::ARRAY, 4, 4, 2)).unwrap();
        assert_eq!(m.lookup(&1u32.to_le_bytes()), Some(1));
        assert_eq!(m.lookup(&2u32.to_le_bytes()), None);
        assert_eq!(
            m.update(&2u32.to_le_bytes(), &[1, 2, 3, 4], BPF_ANY),
            -E2BIG
        );
        assert_eq!(
            m.update(&0u32.to_le_bytes(), &[1, 2, 3, 4], BPF_NOEXIST),
            -EEXIST
        );
        assert_eq!(m.update(&0u32.to_le_bytes(), &[1, 2, 3, 4], BPF_EXIST), 0);
        assert_eq!(m.delete(&0u32.to_le_bytes()), -EINVAL);
        assert_eq!(m.entries(), vec![(vec![0, 0, 0, 0], vec![1, 2, 3, 4])]);
    }

    #[test]
    fn huge_arrays_are_sparse() {
        let mut m = MapState::new(&def(MapType::ARRAY, 4, 4, 1 << 25)).unwrap();
        assert_eq!(m.slab.allocated_bytes(), 0);
        let last = ((1u32 << 25) - 1).to_le_bytes();
        let slot = m.lookup(&last).unwrap();
        assert_eq!(m.value(slot), &[0; 4]);
        assert_eq!(m.slab.allocated_bytes(), 0, "reading allocates nothing");
        assert_eq!(m.update(&last, &[5, 0, 0, 0], BPF_EXIST), 0);
        assert_eq!(m.update(&0u32.to_le_bytes(), &[0; 4], BPF_ANY), 0);
        assert_eq!(m.entries(), vec![(last.to_vec(), vec![5, 0, 0, 0])]);
        assert!(m.slab.allocated_bytes() <= 2 * crate::slab::PAGE_BYTES);
        let err = MapState::new(&def(MapType::ARRAY, 4, 8, u32::MAX)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "map `m`: array of 4294967295 entries of 8 bytes is larger than the interpreter's \
             limit of 16 GiB"
        );
    }

    #[test]
    fn hash_capacity_and_flags() {
        let mut m = MapState::new(&def(MapType::HASH, 2, 1, 2)).unwrap();
        assert_eq!(m.update(&[1, 0], &[9], BPF_EXIST), -ENOENT);
        assert_eq!(m.update(&[1, 0], &[9], BPF_NOEXIST), 0);
        assert_eq!(m.update(&[1, 0], &[8], BPF_NOEXIST), -EEXIST);
        assert_eq!(m.update(&[2, 0], &[7], BPF_ANY), 0);
        assert_eq!(m.update(&[3, 0], &[7], BPF_ANY), -E2BIG);
        assert_eq!(m.delete(&[1, 0]), 0);
        assert_eq!(m.delete(&[1, 0]), -ENOENT);
        assert_eq!(m.update(&[3, 0], &[6], BPF_ANY), 0);
        assert_eq!(
            m.entries(),
            vec![(vec![2, 0], vec![7]), (vec![3, 0], vec![6])]
        );
    }

    #[test]
    fn lru_evicts_least_recently_used() {
        let mut m = MapState::new(&def(MapType::LRU_HASH, 1, 1, 2)).unwrap();
        m.update(&[1], &[1], BPF_ANY);
        m.update(&[2], &[2], BPF_ANY);
        m.lookup(&[1]);
        assert_eq!(m.update(&[3], &[3], BPF_ANY), 0);
        assert_eq!(m.entries(), vec![(vec![1], vec![1]), (vec![3], vec![3])]);
    }

    #[test]
    fn lpm_longest_prefix_wins() {
        let mut m = MapState::new(&def(MapType::LPM_TRIE, 8, 1, 8)).unwrap();
        let key = |len: u32, a: [u8; 4]| [len.to_le_bytes(), a].concat();
        m.update(&key(8, [10, 0, 0, 0]), &[1], BPF_ANY);
        m.update(&key(24, [10, 1, 2, 0]), &[2], BPF_ANY);
        m.update(&key(0, [0, 0, 0, 0]), &[3], BPF_ANY);
        assert_eq!(m.update(&key(33, [0; 4]), &[3], BPF_ANY), -EINVAL);
        let hit = |m: &mut MapState, a| m.lookup(&key(32, a)).map(|s| m.value(s)[0]);
        assert_eq!(hit(&mut m, [10, 1, 2, 3]), Some(2));
        assert_eq!(hit(&mut m, [10, 1, 3, 3]), Some(1));
        assert_eq!(hit(&mut m, [11, 1, 3, 3]), Some(3));
    }
}
