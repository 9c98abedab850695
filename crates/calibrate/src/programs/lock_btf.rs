//! The type information the spin-lock bench's map needs: the kernel accepts `bpf_spin_lock` only
//! on a map value whose BTF type contains a `struct bpf_spin_lock`, so the group's object carries
//! a minimal `.BTF` describing that one map as a BTF-defined (`.maps`) map would
//! (include/uapi/linux/btf.h for the encoding; Documentation/bpf/btf.rst).

use linerate_bpf::btf::Btf;
use linerate_bpf::program::ObjectBtf;

/// `BTF_MAGIC`, version 1, and the 24-byte header.
const MAGIC: u16 = 0xeb9f;
const HEADER_LEN: u32 = 24;
/// `BTF_KIND_*`.
const KIND_INT: u32 = 1;
const KIND_PTR: u32 = 2;
const KIND_STRUCT: u32 = 4;
const KIND_VAR: u32 = 14;
const KIND_DATASEC: u32 = 15;
/// `BTF_INT_SIGNED`, in bits 24..28 of an int's encoding word.
const INT_SIGNED: u32 = 1 << 24;
/// `BTF_VAR_GLOBAL_ALLOCATED`.
const VAR_GLOBAL: u32 = 1;

/// Bytes of the map value: `struct { struct bpf_spin_lock lock; int n; }`.
pub(crate) const LOCK_VALUE_SIZE: u32 = 8;

struct Builder {
    types: Vec<u8>,
    strings: Vec<u8>,
}

impl Builder {
    fn name(&mut self, s: &str) -> u32 {
        if s.is_empty() {
            return 0;
        }
        let at = self.strings.len() as u32;
        self.strings.extend(s.as_bytes());
        self.strings.push(0);
        at
    }

    fn words(&mut self, words: &[u32]) {
        for w in words {
            self.types.extend(w.to_le_bytes());
        }
    }

    fn head(&mut self, name: &str, kind: u32, vlen: u32, size_or_type: u32) {
        let name = self.name(name);
        self.words(&[name, (kind << 24) | vlen, size_or_type]);
    }

    fn member(&mut self, name: &str, type_id: u32, bit_offset: u32) {
        let name = self.name(name);
        self.words(&[name, type_id, bit_offset]);
    }
}

/// The `.BTF` of one array map named `map` (int keys) whose value holds a spin lock at offset 0.
pub(crate) fn lock_map_btf(map: &str) -> ObjectBtf {
    let mut b = Builder {
        types: Vec::new(),
        strings: vec![0],
    };
    // [1] int
    b.head("int", KIND_INT, 0, 4);
    b.words(&[INT_SIGNED | 32]);
    // [2] struct bpf_spin_lock { int val; }
    b.head("bpf_spin_lock", KIND_STRUCT, 1, 4);
    b.member("val", 1, 0);
    // [3] struct lock_value { struct bpf_spin_lock lock; int n; }
    b.head("lock_value", KIND_STRUCT, 2, LOCK_VALUE_SIZE);
    b.member("lock", 2, 0);
    b.member("n", 1, 32);
    // [4] int *, [5] struct lock_value *
    b.head("", KIND_PTR, 0, 1);
    b.head("", KIND_PTR, 0, 3);
    // [6] struct { int *key; struct lock_value *value; }: the map's definition.
    b.head("", KIND_STRUCT, 2, 16);
    b.member("key", 4, 0);
    b.member("value", 5, 64);
    // [7] the map variable, [8] the `.maps` section holding it.
    b.head(map, KIND_VAR, 0, 6);
    b.words(&[VAR_GLOBAL]);
    b.head(".maps", KIND_DATASEC, 1, 16);
    b.words(&[7, 0, 16]);

    let mut bytes = Vec::new();
    bytes.extend(MAGIC.to_le_bytes());
    bytes.extend([1u8, 0]);
    for w in [
        HEADER_LEN,
        0,
        b.types.len() as u32,
        b.types.len() as u32,
        b.strings.len() as u32,
    ] {
        bytes.extend(w.to_le_bytes());
    }
    bytes.extend(&b.types);
    bytes.extend(&b.strings);
    ObjectBtf {
        btf: Btf::parse(&bytes).expect("the calibration's own BTF parses"),
        kernel_bytes: Ok(bytes),
        ..ObjectBtf::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_bpf::program::{MapDef, MapOrigin, MapType};

    #[test]
    fn the_map_finds_its_types() {
        let btf = lock_map_btf("locks");
        let def = MapDef {
            origin: MapOrigin::Btf,
            ..MapDef::new("locks", MapType::ARRAY, 4, LOCK_VALUE_SIZE, 1)
        };
        assert_eq!(btf.map_type_ids(&def), Some((1, 3)));
    }
}
