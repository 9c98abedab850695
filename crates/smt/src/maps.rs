//! Symbolic map contents: a guarantee holds for every state the maps may be in.
//!
//! Each map's values live in one region ([`Region::MapValue`]) whose offset is
//! `slot << 32 | byte`. Initially every slot holds unknown bytes (an input array of the formula)
//! and every key is present or not according to an unknown condition. The two levels of
//! aliasing of K2 (paper 002, App. B) are kept exactly: a lookup's key is compared with the key
//! of every earlier access of the same map on the path, and resolves to the slot and presence of
//! the first equal one, or to a slot and presence condition of its own; so equal keys see the
//! same value and the same NULL-ness, and an update or delete along the path is seen by every
//! later lookup of an equal key. Arrays resolve the index itself as the slot and are present
//! within `max_entries`. A frozen global data section (`.rodata`) holds its constants.
//!
//! Two assumptions, stated because they restrict "every map state": an insertion of an absent
//! key finds room (the witness installs only the entries the path saw, so the map is never
//! full), and LRU maps evict nothing the path saw.

use linerate_bpf::facts::errno::{E2BIG, EEXIST, EINVAL, ENOENT};
use linerate_bpf::facts::update;
use linerate_bpf::program::{MapDef, MapOrigin, MapType};
use z3::ast::{Ast, Bool, BV};

use crate::memory::{Byte, Memory};
use crate::streams::{Queue, Ring};
use crate::value::{bool_ite, Bits, Region, SymValue};

/// How a map's entries behave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// Entries exist per key (hash maps; arrays whose slots may be empty).
    Keyed { sparse_array: bool },
    /// Every index below `max_entries` exists.
    Array,
    /// A frozen global data section: its constants, read-only.
    Frozen,
}

/// One key accessed along the path, in access order.
#[derive(Clone, Debug)]
struct Record {
    /// The key as one formula of `8 * key_size` bits, and its bytes where all are constant.
    key: BV,
    key_const: Option<Vec<u8>>,
    /// The slot the key resolved to.
    slot: Bits,
    /// Whether the entry exists now.
    present: Bool,
    /// The slot and initial presence this access introduced, used where the key equals no
    /// earlier one.
    fresh_slot: u64,
    initially_present: Bool,
}

/// An entry of the initial contents that an access introduced: where the map type restricts
/// what user space can install (a device map's ifindex, a CPU map's queue size), the machine
/// constrains it.
#[derive(Clone, Debug)]
pub struct Fresh {
    /// Whether the entry exists initially.
    pub present: Bool,
    /// Its key (little-endian bytes as one formula) and its value's bytes.
    pub key: BV,
    pub value: Vec<BV>,
}

/// One map's symbolic contents.
#[derive(Clone, Debug)]
pub struct SymMap {
    index: usize,
    kind: Kind,
    pub memory: Memory,
    /// Whether the contents before the run are an input (not a frozen section's constants).
    initial: bool,
    records: Vec<Record>,
    next_slot: u64,
    /// Entries introduced since the machine last took them ([`SymMap::take_fresh`]).
    fresh: Vec<Fresh>,
    /// A ring buffer's positions and reservations, once the path used it.
    pub ring: Option<Ring>,
    /// A queue's or stack's elements, once the path used it.
    pub queue: Option<Queue>,
    /// For a map of maps: conditions under which an entry the path saw differs from what the
    /// object places statically (which a witness cannot take away), each with a description.
    pub placement: Vec<(Bool, String)>,
    /// For an LPM trie: the path's lookups ([`crate::lpm`]).
    pub lpm: Vec<crate::lpm::Access>,
}

/// First slot of array elements reached through symbolic indices (element `i` reached through
/// a constant index lives in slot `i`; arrays of more than 2^31 elements are not modelled
/// apart).
const FRESH_ARRAY_SLOTS: u64 = 1 << 31;

/// Arrays of at most this many elements hold each element in the slot of its index, also where
/// the index is symbolic.
const SMALL_ARRAY: u32 = 32;

/// `Record::fresh_slot` of a symbolic index into a small array: the slot is the index's value.
const SMALL_ARRAY_SLOT: u64 = u64::MAX;

/// A map operation on a map type the engine does not model.
pub struct Unmodelled(pub String);

/// Little-endian bytes as one formula (first byte lowest).
fn key_formula(key: &[SymValue]) -> (BV, Option<Vec<u8>>) {
    let consts: Option<Vec<u8>> = key
        .iter()
        .map(|b| b.bits.as_const().map(|v| v as u8))
        .collect();
    let mut word: Option<BV> = None;
    for b in key.iter().rev() {
        let byte = match Byte::of_scalar(&b.bits, 0) {
            Byte::Const(v) => BV::from_u64(u64::from(v), 8),
            Byte::Sym(bv) => bv,
            Byte::Pointer { .. } => BV::from_u64(0, 8),
        };
        word = Some(match word {
            None => byte,
            Some(w) => w.concat(&byte),
        });
    }
    (word.unwrap_or_else(|| BV::from_u64(0, 8)), consts)
}

fn key_equal(a: &Record, key: &BV, key_const: &Option<Vec<u8>>) -> Bool {
    match (&a.key_const, key_const) {
        (Some(x), Some(y)) => Bool::from_bool(x == y),
        // The same formula (a second run computing the key as the first did: equivalence).
        _ if a.key == *key => Bool::from_bool(true),
        _ => a.key.eq(key),
    }
}

fn bits_ite(c: &Bool, a: &Bits, b: &Bits) -> Bits {
    match (c.as_bool(), a, b) {
        (Some(true), _, _) => a.clone(),
        (Some(false), _, _) => b.clone(),
        (_, Bits::Const(x), Bits::Const(y)) if x == y => a.clone(),
        _ => Bits::Sym(c.ite(&a.bv(), &b.bv())),
    }
}

/// `slot << 32 | byte`.
pub fn value_offset(slot: &Bits, byte: u64) -> Bits {
    match slot {
        Bits::Const(s) => Bits::Const((s << 32) | byte),
        Bits::Sym(bv) => Bits::Sym(bv.bvshl(BV::from_u64(32, 64)).bvor(BV::from_u64(byte, 64))),
    }
}

impl SymMap {
    /// The map at `index` of the object, with unknown contents (constants for a frozen
    /// section); `Err` for a map type whose lookups the engine does not model.
    pub fn new(index: usize, def: &MapDef) -> SymMap {
        let frozen = matches!(
            def.origin,
            MapOrigin::GlobalData {
                read_only: true,
                ..
            }
        );
        let kind = if frozen {
            Kind::Frozen
        } else if matches!(def.map_type, MapType::ARRAY | MapType::PERCPU_ARRAY) {
            Kind::Array
        } else {
            Kind::Keyed {
                sparse_array: def.map_type.is_array_like(),
            }
        };
        let memory = if frozen {
            let mut m = Memory::zeroed();
            m.fill(0, def.initial_value.as_deref().unwrap_or(&[]));
            m
        } else {
            Memory::input(&format!("map{index}_values"))
        };
        let initial = !frozen;
        SymMap {
            index,
            kind,
            memory,
            initial,
            records: Vec::new(),
            next_slot: 0,
            fresh: Vec::new(),
            ring: None,
            queue: None,
            placement: Vec::new(),
            lpm: Vec::new(),
        }
    }

    /// Bytes of the value a pointer at offset `off` of the map's region points into: the map's
    /// value size, or for a ring buffer the size of the record reserved in that slot.
    pub fn value_size(&self, def: &MapDef, off: &Bits) -> u64 {
        match (&self.ring, off) {
            (Some(ring), Bits::Const(o)) => {
                ring.reserved.get((o >> 32) as usize).copied().unwrap_or(0)
            }
            (Some(_), Bits::Sym(_)) => 0,
            (None, _) => u64::from(def.value_size),
        }
    }

    /// Whether lookups of this map type are modelled.
    pub fn check_modelled(def: &MapDef) -> Result<(), Unmodelled> {
        let t = def.map_type;
        let ok = matches!(
            t,
            MapType::HASH
                | MapType::ARRAY
                | MapType::PROG_ARRAY
                | MapType::PERCPU_HASH
                | MapType::PERCPU_ARRAY
                | MapType::LRU_HASH
                | MapType::LRU_PERCPU_HASH
                | MapType::DEVMAP
                | MapType::DEVMAP_HASH
                | MapType::CPUMAP
                | MapType::XSKMAP
                | MapType::ARRAY_OF_MAPS
                | MapType::HASH_OF_MAPS
                | MapType::LPM_TRIE
        );
        if ok {
            Ok(())
        } else {
            Err(Unmodelled(format!(
                "map `{}` of type {} (only hash-like and array-like maps whose entries a \
                 witness can install are modelled)",
                def.name,
                t.name()
            )))
        }
    }

    /// Whether updates and deletes of this map type are modelled: those of the types whose
    /// lookups are, except LPM tries (whose lookups do not find entries by their own key).
    pub fn check_changes(def: &MapDef) -> Result<(), Unmodelled> {
        SymMap::check_modelled(def)?;
        if def.map_type == MapType::LPM_TRIE {
            return Err(Unmodelled(format!(
                "an update or delete of LPM trie `{}`",
                def.name
            )));
        }
        Ok(())
    }

    /// The array index a 4-byte key names, zero-extended.
    fn index_of(key: &[SymValue]) -> Bits {
        let (bv, consts) = key_formula(key);
        match consts {
            Some(b) => {
                let mut word = [0u8; 8];
                for (w, v) in word.iter_mut().zip(b) {
                    *w = v;
                }
                Bits::Const(u64::from_le_bytes(word))
            }
            None => Bits::Sym(bv.zero_ext(64 - bv.get_size())),
        }
    }

    fn in_range(def: &MapDef, index: &Bits) -> Bool {
        match index {
            Bits::Const(i) => Bool::from_bool(*i < u64::from(def.max_entries)),
            Bits::Sym(bv) => bv.bvult(BV::from_u64(u64::from(def.max_entries), 64)),
        }
    }

    /// The slot and current presence of `key`, recording the access.
    fn resolve(&mut self, def: &MapDef, key: &[SymValue]) -> (Bits, Bool) {
        let (bv, consts) = key_formula(key);
        if let Some(c) = &consts {
            if let Some(r) = self
                .records
                .iter()
                .find(|r| r.key_const.as_ref() == Some(c))
            {
                return (r.slot.clone(), r.present.clone());
            }
        }
        let (fresh_slot, initially_present) = match self.kind {
            // An array's element `i` lives in slot `i`, unless an earlier access with a
            // symbolic index that turns out equal gave it a slot of its own.
            // A frozen section's constants sit in slot 0: its one element, whatever the index
            // (an index other than 0 is out of range, the pointer NULL).
            Kind::Frozen => {
                let index = SymMap::index_of(key);
                return (Bits::Const(0), SymMap::in_range(def, &index));
            }
            Kind::Array => {
                let index = SymMap::index_of(key);
                let in_range = SymMap::in_range(def, &index);
                match index {
                    Bits::Const(i) => (i, in_range),
                    // A small array's element is the one of the index's value among its few:
                    // one choice among constant slots, which memory reads without comparing
                    // the index with every earlier one (a lookup per payload byte in a table
                    // of 32 entries otherwise grows quadratically).
                    Bits::Sym(ix) if def.max_entries <= SMALL_ARRAY => {
                        let last = u64::from(def.max_entries.saturating_sub(1));
                        let mut slot = Bits::Const(last);
                        for i in (0..last).rev() {
                            let here = ix.eq(BV::from_u64(i, 64));
                            slot = bits_ite(&here, &Bits::Const(i), &slot);
                        }
                        self.records.push(Record {
                            key: bv.clone(),
                            key_const: None,
                            slot: slot.clone(),
                            present: in_range.clone(),
                            fresh_slot: SMALL_ARRAY_SLOT,
                            initially_present: in_range.clone(),
                        });
                        return (slot, in_range);
                    }
                    Bits::Sym(_) => {
                        self.next_slot += 1;
                        (FRESH_ARRAY_SLOTS + self.next_slot, in_range)
                    }
                }
            }
            Kind::Keyed { sparse_array } => {
                self.next_slot += 1;
                let mut present =
                    Bool::new_const(format!("map{}_present{}", self.index, self.next_slot));
                if sparse_array {
                    let index = SymMap::index_of(key);
                    present = Bool::and(&[&present, &SymMap::in_range(def, &index)]);
                }
                (self.next_slot, present)
            }
        };
        let mut slot = Bits::Const(fresh_slot);
        let mut present = initially_present.clone();
        // The key resolves to the slot of the oldest earlier access with an equal key, whose
        // slot is the one it introduced (keys are equal transitively): one constant per earlier
        // access. Nesting the earlier accesses' own slots instead would choose among as many
        // constants as the path has subsets of accesses, 2^14 at count-min's 15th row, which
        // memory then cannot read as a choice among constants. Presence is the current one of
        // that access, which updates and deletes keep equal among equal keys. (An earlier access
        // of a small array by a symbolic index took the slot of its value, which is this slot
        // where the indices are equal.)
        for r in self
            .records
            .iter()
            .rev()
            .filter(|r| r.fresh_slot != SMALL_ARRAY_SLOT)
        {
            let eq = key_equal(r, &bv, &consts);
            slot = bits_ite(&eq, &Bits::Const(r.fresh_slot), &slot);
            present = bool_ite(&eq, &r.present, &present);
        }
        if self.initial {
            let value = (0..u64::from(def.value_size))
                .map(|i| self.memory.initial_byte((fresh_slot << 32) | i))
                .collect();
            self.fresh.push(Fresh {
                present: initially_present.clone(),
                key: bv.clone(),
                value,
            });
        }
        self.records.push(Record {
            key: bv,
            key_const: consts,
            slot: slot.clone(),
            present: present.clone(),
            fresh_slot,
            initially_present,
        });
        (slot, present)
    }

    /// `bpf_map_lookup_elem`: a pointer to the key's value, NULL where it is absent.
    pub fn lookup(&mut self, def: &MapDef, key: &[SymValue]) -> SymValue {
        let (slot, present) = self.resolve(def, key);
        SymValue {
            tag: crate::value::Tag::Ptr {
                region: Region::MapValue(self.index),
                null: match present.as_bool() {
                    Some(true) => None,
                    _ => Some(present.not()),
                },
            },
            bits: value_offset(&slot, 0),
        }
    }

    /// The initial entries introduced since the last call.
    pub fn take_fresh(&mut self) -> Vec<Fresh> {
        std::mem::take(&mut self.fresh)
    }

    /// Whether the map is a frozen (read-only) global data section.
    pub fn is_frozen(&self) -> bool {
        self.kind == Kind::Frozen
    }

    /// The slot of element 0 of a global data section, which `MapValue` immediates point into.
    pub fn global_slot(&mut self, def: &MapDef) -> Bits {
        let zero = vec![SymValue::constant(0); def.key_size as usize];
        self.resolve(def, &zero).0
    }

    /// Writes `value` into `slot` where `ok` holds.
    /// The bytes of a `struct bpf_spin_lock` in the value are never written (`copy_map_value`
    /// skips them).
    fn write_value(&mut self, def: &MapDef, slot: &Bits, value: &[SymValue], ok: &Bool) {
        let lock = def.spin_lock.map(|at| at as usize..at as usize + 4);
        for (i, v) in value.iter().enumerate() {
            if lock.as_ref().is_some_and(|l| l.contains(&i)) {
                continue;
            }
            let at = value_offset(slot, i as u64);
            let new = Byte::of_scalar(&v.bits, 0);
            let byte = match ok.as_bool() {
                Some(true) => new,
                Some(false) => continue,
                None => {
                    let old = self.memory.byte(&at);
                    let to_bv = |b: Byte| match b {
                        Byte::Const(c) => BV::from_u64(u64::from(c), 8),
                        Byte::Sym(bv) => bv,
                        Byte::Pointer { .. } => BV::from_u64(0, 8),
                    };
                    Byte::Sym(ok.ite(&to_bv(new), &to_bv(old)))
                }
            };
            self.memory.set_byte(&at, byte);
        }
    }

    /// `bpf_map_update_elem(map, key, value, flags)`: 0 or a negative errno, in the kernel's
    /// order of checks (as `linerate_vm`'s map store makes them).
    pub fn update(
        &mut self,
        def: &MapDef,
        key: &[SymValue],
        value: &[SymValue],
        flags: &SymValue,
    ) -> Result<SymValue, Unmodelled> {
        let flags = flags.bits.bv();
        let c = |v: u64| BV::from_u64(v, 64);
        // `BPF_F_LOCK` needs a spin lock in the value, and a map that takes the flag: arrays
        // and plain hash maps (LRU and per-CPU hash maps refuse it), as the interpreter checks.
        let takes_lock = def.spin_lock.is_some()
            && (self.kind == Kind::Array
                || !(def.map_type.is_percpu()
                    || matches!(def.map_type, MapType::LRU_HASH | MapType::LRU_PERCPU_HASH)));
        let lock = Bool::and(&[
            &flags.bvand(c(update::F_LOCK)).eq(c(0)).not(),
            &Bool::from_bool(!takes_lock),
        ]);
        let plain = flags.bvand(c(!update::F_LOCK));
        let bad_flags = plain.bvugt(c(update::EXIST));
        let noexist = plain.eq(c(update::NOEXIST));
        let exist = plain.eq(c(update::EXIST));
        let errno = |e: i64| c((-e) as u64);
        let (slot, result, ok) = match self.kind {
            Kind::Frozen => {
                return Err(Unmodelled(format!(
                    "update of read-only map `{}`",
                    def.name
                )))
            }
            Kind::Array => {
                let index = SymMap::index_of(key);
                let in_range = SymMap::in_range(def, &index);
                let (index, _) = self.resolve(def, key);
                let result = bad_flags.ite(
                    &errno(EINVAL),
                    &in_range.not().ite(
                        &errno(E2BIG),
                        &noexist.ite(&errno(EEXIST), &lock.ite(&errno(EINVAL), &c(0))),
                    ),
                );
                (index, result, None)
            }
            Kind::Keyed { .. } => {
                let (slot, present) = self.resolve(def, key);
                let result = bad_flags.ite(
                    &errno(EINVAL),
                    &lock.ite(
                        &errno(EINVAL),
                        &Bool::and(&[&present, &noexist]).ite(
                            &errno(EEXIST),
                            &Bool::and(&[&present.not(), &exist]).ite(&errno(ENOENT), &c(0)),
                        ),
                    ),
                );
                (slot, result, Some(()))
            }
        };
        let result = result.simplify();
        let succeeded = result.eq(c(0)).simplify();
        if ok.is_some() {
            self.set_presence(key, &succeeded, true);
        }
        self.write_value(def, &slot, value, &succeeded);
        Ok(SymValue::scalar(match result.as_u64() {
            Some(v) => Bits::Const(v),
            None => Bits::Sym(result),
        }))
    }

    /// Makes every recorded key equal to `key` present (or absent) where `when` holds.
    fn set_presence(&mut self, key: &[SymValue], when: &Bool, present: bool) {
        let (bv, consts) = key_formula(key);
        let value = Bool::from_bool(present);
        for r in &mut self.records {
            let eq = key_equal(r, &bv, &consts);
            let change = match (when.as_bool(), eq.as_bool()) {
                (Some(false), _) | (_, Some(false)) => continue,
                (Some(true), _) => eq,
                (_, Some(true)) => when.clone(),
                _ => Bool::and(&[when, &eq]),
            };
            r.present = bool_ite(&change, &value, &r.present);
        }
    }

    /// `bpf_map_delete_elem(map, key)`: 0 or a negative errno.
    pub fn delete(&mut self, def: &MapDef, key: &[SymValue]) -> Result<SymValue, Unmodelled> {
        match self.kind {
            Kind::Frozen => Err(Unmodelled(format!(
                "delete from read-only map `{}`",
                def.name
            ))),
            Kind::Array => Ok(SymValue::constant((-EINVAL) as u64)),
            Kind::Keyed { .. } => {
                let (_, present) = self.resolve(def, key);
                self.set_presence(key, &Bool::from_bool(true), false);
                let result = present
                    .ite(&BV::from_u64(0, 64), &BV::from_u64((-ENOENT) as u64, 64))
                    .simplify();
                Ok(SymValue::scalar(match result.as_u64() {
                    Some(v) => Bits::Const(v),
                    None => Bits::Sym(result),
                }))
            }
        }
    }

    /// Whether the path used the map only through lookups (LPM tries' too), updates and
    /// deletes by key (no ring buffer, queue or map-of-maps placement): what a second run on
    /// the same initial contents ([`SymMap::initial`]) can be compared on.
    pub fn keyed_only(&self) -> bool {
        self.ring.is_none() && self.queue.is_none() && self.placement.is_empty()
    }

    /// Whether each recorded key was present before the run, in record order: the presence
    /// `resolve` gave it, with every earlier record's initial presence in place of its
    /// current one.
    fn initial_presences(&self) -> Vec<Bool> {
        let mut out: Vec<Bool> = Vec::with_capacity(self.records.len());
        for (i, r) in self.records.iter().enumerate() {
            let mut present = r.initially_present.clone();
            if r.fresh_slot != SMALL_ARRAY_SLOT {
                for (j, earlier) in self.records[..i].iter().enumerate().rev() {
                    if earlier.fresh_slot == SMALL_ARRAY_SLOT {
                        continue;
                    }
                    let eq = key_equal(earlier, &r.key, &r.key_const);
                    present = bool_ite(&eq, &out[j], &present);
                }
            }
            out.push(present);
        }
        out
    }

    /// The map as it was before the run, knowing the keys the run accessed (each with its slot
    /// and initial presence) and the reads of its initial contents: the start of a second
    /// program run on the same inputs (`crate::equivalence`), so that an equal key finds the
    /// same initial entry in both runs. New keys get slots after this run's.
    pub fn initial(&self) -> SymMap {
        let presences = self.initial_presences();
        let records = self
            .records
            .iter()
            .zip(presences)
            .map(|(r, present)| Record {
                present,
                ..r.clone()
            })
            .collect();
        SymMap {
            index: self.index,
            kind: self.kind,
            memory: if self.initial {
                self.memory.initial()
            } else {
                self.memory.clone()
            },
            initial: self.initial,
            records,
            next_slot: self.next_slot,
            fresh: Vec::new(),
            ring: None,
            queue: None,
            placement: Vec::new(),
            // A trie's lookups stay: the second run's are tied to them as to its own (an LPM
            // trie's contents never change: its updates are not modelled).
            lpm: self.lpm.clone(),
        }
    }

    /// Keys recorded so far.
    pub fn keys(&self) -> usize {
        self.records.len()
    }

    /// The current presence and slot of the key of record `j` of `keys`, a map of the same
    /// initial contents whose records begin with this one's ([`SymMap::initial`]).
    pub fn entry_of(&self, keys: &SymMap, j: usize) -> Option<(Bool, Bits)> {
        if let Some(r) = self.records.get(j) {
            return Some((r.present.clone(), r.slot.clone()));
        }
        let other = keys.records.get(j)?;
        let mut present = keys.initial_presences().get(j)?.clone();
        for r in self
            .records
            .iter()
            .rev()
            .filter(|r| r.fresh_slot != SMALL_ARRAY_SLOT)
        {
            let eq = key_equal(r, &other.key, &other.key_const);
            present = bool_ite(&eq, &r.present, &present);
        }
        // The slot `keys` resolved the key to already chose among this map's slots.
        Some((present, other.slot.clone()))
    }

    /// The entries to install before the run for the path to behave as in `model`: every key
    /// the path saw that was present initially (for arrays and global data, every index it
    /// touched), with the value it held then.
    pub fn witness(&self, def: &MapDef, model: &z3::Model) -> Vec<(Vec<u8>, Vec<u8>)> {
        if let Some(queue) = &self.queue {
            return queue
                .witness(model)
                .into_iter()
                .map(|v| (Vec::new(), v))
                .collect();
        }
        if !self.initial || def.map_type.is_record_output() || def.map_type.is_queue() {
            return Vec::new();
        }
        let value_of = |slot: u64| -> Vec<u8> {
            (0..u64::from(def.value_size))
                .map(|i| {
                    let sel = self.memory.peek_initial((slot << 32) | i);
                    model.eval(&sel, true).and_then(|v| v.as_u64()).unwrap_or(0) as u8
                })
                .collect()
        };
        let mut out: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        match self.kind {
            Kind::Frozen => {}
            Kind::Array => {
                for r in &self.records {
                    let Some(key) = model.eval(&r.key, true).map(|k| bytes_of(&k, def.key_size))
                    else {
                        continue;
                    };
                    let mut word = [0u8; 8];
                    for (w, b) in word.iter_mut().zip(&key) {
                        *w = *b;
                    }
                    let index = u64::from_le_bytes(word);
                    let in_range = index < u64::from(def.max_entries);
                    let slot = if r.fresh_slot == SMALL_ARRAY_SLOT {
                        index
                    } else {
                        r.fresh_slot
                    };
                    if in_range && !out.iter().any(|(k, _)| *k == key) {
                        out.push((key, value_of(slot)));
                    }
                }
            }
            Kind::Keyed { .. } => {
                let mut seen: Vec<Vec<u8>> = Vec::new();
                for r in &self.records {
                    let Some(key) = model.eval(&r.key, true).map(|k| bytes_of(&k, def.key_size))
                    else {
                        continue;
                    };
                    if seen.contains(&key) {
                        continue;
                    }
                    seen.push(key.clone());
                    let present = model
                        .eval(&r.initially_present, true)
                        .and_then(|b| b.as_bool())
                        .unwrap_or(false);
                    if present {
                        out.push((key, value_of(r.fresh_slot)));
                    }
                }
            }
        }
        out
    }
}

/// The `n` little-endian bytes of a numeral (first byte lowest).
fn bytes_of(v: &BV, n: u32) -> Vec<u8> {
    (0..n)
        .map(|i| v.extract(8 * i + 7, 8 * i).simplify().as_u64().unwrap_or(0) as u8)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A key unknown to the formula: four bytes, each a variable.
    fn unknown_key(name: &str) -> Vec<SymValue> {
        (0..4)
            .map(|b| SymValue::scalar(Bits::Sym(BV::new_const(format!("{name}_{b}"), 64))))
            .collect()
    }

    /// The `n`th lookup of an array by an unknown index chooses its slot among `n` constants
    /// (the slot of each earlier lookup's own, and its own), which memory reads as a choice
    /// among constant offsets: count-min's rows, whose slots once chose among 2^(n-1); and the
    /// path explosion's 144 accesses of one map, whose slots from the 33rd on memory once read
    /// as symbolic offsets, each tied to every earlier read.
    #[test]
    fn a_key_chooses_among_one_slot_per_earlier_access() {
        let def = MapDef::new("counters", MapType::ARRAY, 4, 4, 1 << 16);
        let mut map = SymMap::new(0, &def);
        for n in 1..=150 {
            let pointer = map.lookup(&def, &unknown_key(&format!("row{n}")));
            let choice = crate::memory::choices(&pointer.bits.bv())
                .unwrap_or_else(|| panic!("lookup {n}: its slot is no choice among constants"));
            assert_eq!(choice.len(), n, "lookup {n}");
        }
    }
}
