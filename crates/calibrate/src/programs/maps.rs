//! Map operations: lookups, updates and deletes per map type and key size.

use super::*;

/// One map under test with the key data its programs use.
pub(crate) struct MapCase {
    pub map_type: MapType,
    pub key_size: u32,
}

impl MapCase {
    fn name(&self) -> String {
        format!("{}.k{}", self.map_type.name(), self.key_size)
    }

    fn is_array(&self) -> bool {
        self.map_type.is_array_like()
    }

    /// A device map, which programs may only look up
    /// ([`linerate_cost::item::LOOKUP_ONLY_MAP_TYPES`]).
    pub(crate) fn lookup_only(&self) -> bool {
        LOOKUP_ONLY_MAP_TYPES.contains(&self.map_type)
    }

    /// Value size: an ifindex (4 bytes, `struct bpf_devmap_val` without a program) in device
    /// maps, [`VALUE_SIZE`] otherwise.
    fn value_size(&self) -> u32 {
        if self.lookup_only() {
            4
        } else {
            VALUE_SIZE
        }
    }

    /// Whether the map is left empty: an `XSKMAP` slot holds an AF_XDP socket, which calibration
    /// does not open. Its lookup costs the same either way: the verifier inlines it
    /// (`xsk_map_gen_lookup` in net/xdp/xskmap.c) as a bounds check and one load of the slot.
    fn left_empty(&self) -> bool {
        self.map_type == MapType::XSKMAP
    }

    /// The value of every populated entry: ifindex 1 (lo) in device maps.
    fn value(&self) -> Vec<u8> {
        if self.lookup_only() {
            1u32.to_le_bytes().to_vec()
        } else {
            vec![0xabu8; VALUE_SIZE as usize]
        }
    }

    fn max_entries(&self) -> u32 {
        if self.is_array() {
            POPULATION
        } else {
            2 * POPULATION
        }
    }

    /// The key of populated entry `i`.
    fn entry_key(&self, i: u32) -> Vec<u8> {
        let ks = self.key_size as usize;
        if self.map_type == MapType::LPM_TRIE {
            return self.lpm_key(i, false, ks == 8, false);
        }
        if self.is_array() {
            return i.to_le_bytes().to_vec();
        }
        let mut key: Vec<u8> = (0..ks).map(|j| (j as u8).wrapping_mul(37) ^ 0x5a).collect();
        key[..4].copy_from_slice(&i.to_le_bytes());
        key
    }

    /// An LPM key: prefix `i` (IPv4 10.a.b.0/24 or IPv6 2001:db8:a:b::/64; `fresh`: a prefix
    /// not in the trie), or with `host` a full-length address inside it.
    fn lpm_key(&self, i: u32, fresh: bool, v4: bool, host: bool) -> Vec<u8> {
        let (hi, lo) = ((i >> 8) as u8, i as u8);
        let (plen, data): (u32, Vec<u8>) = if v4 {
            let first = if fresh { 11 } else { 10 };
            if host {
                (32, vec![first, hi, lo, 7])
            } else {
                (24, vec![first, hi, lo, 0])
            }
        } else {
            let third = if fresh { 0xb9 } else { 0xb8 };
            let mut d = vec![
                0x20, 0x01, 0x0d, third, 0, 0, hi, lo, 0, 0, 0, 0, 0, 0, 0, 0,
            ];
            if host {
                d[15] = 7;
                (128, d)
            } else {
                (64, d)
            }
        };
        let mut key = plen.to_le_bytes().to_vec();
        key.extend(data);
        key
    }

    /// Populated entry the `n`-th key of the lookups and updates uses (spread over the map).
    fn used_entry(n: usize) -> u32 {
        (n as u32 * 61) % POPULATION
    }

    /// The key data: a value, then lookup keys, update keys, fresh keys.
    fn data(&self) -> Vec<u8> {
        let ks = self.key_size as usize;
        let mut d = vec![0u8; DATA_KEYS + 3 * KEYS * ks];
        d[DATA_VALUE..DATA_VALUE + 8].copy_from_slice(&0x1122_3344_5566_7788u64.to_le_bytes());
        for n in 0..KEYS {
            let e = Self::used_entry(n);
            let (lookup, update, fresh) = if self.map_type == MapType::LPM_TRIE {
                let v4 = ks == 8;
                (
                    self.lpm_key(e, false, v4, true),
                    self.lpm_key(e, false, v4, false),
                    self.lpm_key(e, true, v4, false),
                )
            } else {
                let fresh = if self.is_array() {
                    self.entry_key(e)
                } else {
                    self.entry_key(POPULATION * 4 + n as u32)
                };
                (self.entry_key(e), self.entry_key(e), fresh)
            };
            for (set, key) in [lookup, update, fresh].into_iter().enumerate() {
                let at = DATA_KEYS + (set * KEYS + n) * ks;
                d[at..at + ks].copy_from_slice(&key);
            }
        }
        d
    }

    fn key_offset(&self, set: usize, n: usize) -> u32 {
        (DATA_KEYS + (set * KEYS + n % KEYS) * self.key_size as usize) as u32
    }
}

pub(crate) fn map_cases() -> Vec<MapCase> {
    let mut out = Vec::new();
    for map_type in COSTED_MAP_TYPES.into_iter().chain(LOOKUP_ONLY_MAP_TYPES) {
        let sizes: &[u32] = if map_type.is_array_like() {
            &[4]
        } else if map_type == MapType::LPM_TRIE {
            &LPM_KEY_SIZES
        } else if LOOKUP_ONLY_MAP_TYPES.contains(&map_type) {
            // Device-map keys are `u32` indices or ifindex-like numbers.
            &[4]
        } else {
            &HASH_KEY_SIZES
        };
        for &key_size in sizes {
            out.push(MapCase { map_type, key_size });
        }
    }
    out
}

/// Operations a map unit performs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum MapUnit {
    Lookup,
    Update,
    Delete,
    /// Insert a fresh key, then delete it.
    Pair,
    /// [`MapUnit::Pair`] in an empty map of the same kind.
    PairEmpty,
    /// Look up a key the map does not hold (NULL).
    LookupFailed,
    /// Update an existing key with `BPF_NOEXIST` (`-EEXIST`): the refusal that finds the key,
    /// the costlier one.
    UpdateFailed,
    /// Delete a key the map does not hold (`-ENOENT`).
    DeleteFailed,
}

pub(super) fn map_group() -> Group {
    let mut g = Group::new("map");
    let setup = |a: &mut Asm, _: Label| a.extend([mov64(R6, 0)]);
    g.timed("map base", program(setup, 0, |_, _, _| {}), None);
    for case in map_cases() {
        let map = g.maps.len() as u32;
        let data = map + 1;
        let name = case.name();
        let plain = |prefix: &str| {
            plain_map(
                &format!("{prefix}.{name}"),
                case.map_type,
                case.key_size,
                case.value_size(),
                case.max_entries(),
            )
        };
        g.maps.push(plain("m"));
        g.maps.push(data_map(&format!("keys.{name}"), case.data()));
        // Hash maps insert and delete in an empty twin as well: an LRU map's insert and delete
        // cost more when its nodes are all free (an insert+delete pair of 8-byte keys on this
        // project's 2-core Xeon VM, Linux 6.18: 182 ns empty, 70 ns holding 1024 entries).
        let pairs = !case.lookup_only() && !case.is_array();
        let empty = map + 2;
        if pairs {
            g.maps.push(plain("e"));
        }
        let value = case.value();
        let population = if case.left_empty() { 0 } else { POPULATION };
        for i in 0..population {
            let key = if case.map_type == MapType::LPM_TRIE {
                case.lpm_key(i, false, case.key_size == 8, false)
            } else {
                case.entry_key(i)
            };
            g.populate.push((map as usize, key, value.clone()));
        }
        let mut units_of: Vec<(MapUnit, String)> = vec![
            (
                MapUnit::Lookup,
                Item::Map {
                    op: MapOp::Lookup,
                    map_type: case.map_type,
                    key_size: case.key_size,
                }
                .to_string(),
            ),
            (MapUnit::Update, format!("aux.map.overwrite.{name}")),
        ];
        if case.lookup_only() {
            units_of.truncate(1);
        } else if case.is_array() {
            units_of.push((
                MapUnit::Delete,
                Item::Map {
                    op: MapOp::Delete,
                    map_type: case.map_type,
                    key_size: case.key_size,
                }
                .to_string(),
            ));
        } else {
            units_of.push((MapUnit::Pair, format!("aux.map.pair.{name}")));
            units_of.push((MapUnit::PairEmpty, format!("aux.map.pair_empty.{name}")));
        }
        if FAILURE_PRICED_MAP_TYPES.contains(&case.map_type) {
            for (unit, op) in [
                (MapUnit::LookupFailed, MapOp::Lookup),
                (MapUnit::UpdateFailed, MapOp::Update),
                (MapUnit::DeleteFailed, MapOp::Delete),
            ] {
                let item = Item::MapFailed {
                    op,
                    map_type: case.map_type,
                    key_size: case.key_size,
                };
                units_of.push((unit, item.to_string()));
            }
        }
        for (kind, key) in units_of {
            let emit = |a: &mut Asm, k: u32, fail: Option<Label>| {
                let k = k as usize;
                let key_at = |set| Imm64::MapValue {
                    map: data,
                    offset: case.key_offset(set, k),
                };
                let value_at = Imm64::MapValue {
                    map: data,
                    offset: DATA_VALUE as u32,
                };
                let check = |a: &mut Asm, e: Expect| {
                    if let Some(fail) = fail {
                        check_r0(a, e, fail);
                    }
                };
                let on = if kind == MapUnit::PairEmpty {
                    empty
                } else {
                    map
                };
                let update = |a: &mut Asm, set, flags: u64, expect| {
                    a.extend([
                        ld_map(R1, on),
                        ld_imm64(R2, key_at(set)),
                        ld_imm64(R3, value_at),
                        mov64(R4, flags as i32),
                        call_helper(helper::MAP_UPDATE_ELEM),
                    ]);
                    check(a, expect);
                };
                let delete = |a: &mut Asm, set, expect| {
                    a.extend([
                        ld_map(R1, on),
                        ld_imm64(R2, key_at(set)),
                        call_helper(helper::MAP_DELETE_ELEM),
                    ]);
                    check(a, expect);
                };
                let lookup = |a: &mut Asm, set, expect| {
                    a.extend([
                        ld_map(R1, map),
                        ld_imm64(R2, key_at(set)),
                        call_helper(helper::MAP_LOOKUP_ELEM),
                    ]);
                    check(a, expect);
                };
                match kind {
                    MapUnit::Lookup if case.left_empty() => lookup(a, 0, Expect::Null),
                    MapUnit::Lookup => lookup(a, 0, Expect::NonNull),
                    MapUnit::Update => update(a, 1, update::ANY, Expect::Eq(0)),
                    MapUnit::Delete => delete(a, 1, Expect::Eq(-(EINVAL as i32))),
                    MapUnit::Pair | MapUnit::PairEmpty => {
                        update(a, 2, update::ANY, Expect::Eq(0));
                        delete(a, 2, Expect::Eq(0));
                    }
                    MapUnit::LookupFailed => lookup(a, 2, Expect::Null),
                    MapUnit::UpdateFailed => {
                        update(a, 1, update::NOEXIST, Expect::Eq(-(EEXIST as i32)))
                    }
                    MapUnit::DeleteFailed => delete(a, 2, Expect::Eq(-(ENOENT as i32))),
                }
            };
            // Inlined array lookups: code within the 32 KiB instruction cache.
            let units = match (kind, case.is_array()) {
                (MapUnit::Lookup, true) => 400,
                (MapUnit::Pair | MapUnit::PairEmpty, _) => 100,
                _ => 200,
            };
            let (minus, note): (Vec<(&str, f64)>, String) = match kind {
                MapUnit::Lookup if case.left_empty() => (
                    vec![("ld_imm64", 2.0)],
                    format!(
                        "lookups of empty slots, cycling over {KEYS} keys (a slot holds an AF_XDP \
                         socket, which calibration does not open; the verifier inlines the lookup \
                         as a bounds check and one load of the slot, so an occupied slot costs \
                         the same), minus argument setup"
                    ),
                ),
                MapUnit::Lookup => (
                    vec![("ld_imm64", 2.0)],
                    format!(
                        "lookups that hit, cycling over {KEYS} keys of a map holding {POPULATION} \
                         entries{}, minus argument setup",
                        if case.map_type == MapType::LPM_TRIE {
                            " (full-length addresses inside the stored prefixes)"
                        } else {
                            ""
                        }
                    ),
                ),
                MapUnit::Update => (
                    vec![("ld_imm64", 3.0), ("alu64.mov.imm", 1.0)],
                    format!("updates (BPF_ANY) overwriting existing entries, {KEYS} keys"),
                ),
                MapUnit::Delete => (
                    vec![("ld_imm64", 2.0)],
                    "deletes (arrays refuse them with -EINVAL), minus argument setup".into(),
                ),
                MapUnit::Pair => (
                    vec![("ld_imm64", 5.0), ("alu64.mov.imm", 1.0)],
                    format!("insert of a new key then its delete, {KEYS} keys"),
                ),
                MapUnit::PairEmpty => (
                    vec![("ld_imm64", 5.0), ("alu64.mov.imm", 1.0)],
                    format!("insert of a new key then its delete in an empty map, {KEYS} keys"),
                ),
                MapUnit::LookupFailed => (
                    vec![("ld_imm64", 2.0)],
                    format!(
                        "lookups that miss, cycling over {KEYS} keys absent from a map holding \
                         {POPULATION} entries, minus argument setup"
                    ),
                ),
                MapUnit::UpdateFailed => (
                    vec![("ld_imm64", 3.0), ("alu64.mov.imm", 1.0)],
                    format!("updates (BPF_NOEXIST) of existing entries, refused with -EEXIST, {KEYS} keys"),
                ),
                MapUnit::DeleteFailed => (
                    vec![("ld_imm64", 2.0)],
                    format!("deletes of absent keys, refused with -ENOENT, {KEYS} keys, minus argument setup"),
                ),
            };
            let mut bench = Bench::new(&key, "map base", units).note(note);
            for (m, n) in minus {
                bench = bench.minus(m, n);
            }
            g.timed(
                format!("{key} x{units}"),
                program(setup, units, |a, k, _| emit(a, k, None)),
                Some(bench),
            );
            g.probe(
                &key,
                probe_program(setup, KEYS as u32, |a, k, fail| emit(a, k, Some(fail))),
                Some(XDP_PASS as u32),
            );
        }
    }
    g
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn map_key_data_is_distinct() {
        for case in map_cases() {
            let d = case.data();
            let ks = case.key_size as usize;
            let keys: HashSet<&[u8]> = (0..KEYS)
                .map(|n| &d[DATA_KEYS + n * ks..DATA_KEYS + (n + 1) * ks])
                .collect();
            assert_eq!(keys.len(), KEYS, "{}", case.name());
        }
    }
}
