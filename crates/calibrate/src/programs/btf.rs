//! The type information some calibration objects need, as minimal `.BTF` sections
//! (include/uapi/linux/btf.h for the encoding; Documentation/bpf/btf.rst):
//! - the spin-lock bench's map: the kernel accepts `bpf_spin_lock` only on a map value whose BTF
//!   type contains a `struct bpf_spin_lock`, so that map is described as a BTF-defined (`.maps`)
//!   map would be;
//! - the callback benches' functions: a program passing a callback (`BPF_PSEUDO_FUNC`) must
//!   carry BTF `func_info` for every function ("missing btf func_info"), so the main function
//!   and the callback get `FUNC` types.

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
const KIND_FUNC: u32 = 12;
const KIND_FUNC_PROTO: u32 = 13;
/// `BTF_FUNC_STATIC` and `BTF_FUNC_GLOBAL`, a `FUNC`'s linkage in its `vlen` bits.
const FUNC_STATIC: u32 = 0;
const FUNC_GLOBAL: u32 = 1;
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

    b.finish()
}

/// `FUNC` type ids of [`callback_btf`]: the main function, a `bpf_loop` callback and a
/// `bpf_for_each_map_elem` callback.
pub(crate) const MAIN_FUNC: u32 = 5;
pub(crate) const LOOP_CALLBACK_FUNC: u32 = 7;
pub(crate) const FOR_EACH_CALLBACK_FUNC: u32 = 9;

/// The `.BTF` of programs passing a callback: `int main(void *ctx)` (global), `long
/// loop_cb(long index, void *ctx)` and `long for_each_cb(void *map, void *key, void *value, void
/// *ctx)` (static, so the verifier takes their arguments from the helper, not from BTF).
pub(crate) fn callback_btf() -> ObjectBtf {
    let mut b = Builder {
        types: Vec::new(),
        strings: vec![0],
    };
    // [1] int, [2] void *, [3] long
    b.head("int", KIND_INT, 0, 4);
    b.words(&[INT_SIGNED | 32]);
    b.head("", KIND_PTR, 0, 0);
    b.head("long", KIND_INT, 0, 8);
    b.words(&[INT_SIGNED | 64]);
    // [4] int (void *ctx), [5] main
    b.head("", KIND_FUNC_PROTO, 1, 1);
    b.member_param("ctx", 2);
    b.head("main", KIND_FUNC, FUNC_GLOBAL, 4);
    // [6] long (long index, void *ctx), [7] loop_cb
    b.head("", KIND_FUNC_PROTO, 2, 3);
    b.member_param("index", 3);
    b.member_param("ctx", 2);
    b.head("loop_cb", KIND_FUNC, FUNC_STATIC, 6);
    // [8] long (void *map, void *key, void *value, void *ctx), [9] for_each_cb
    b.head("", KIND_FUNC_PROTO, 4, 3);
    for name in ["map", "key", "value", "ctx"] {
        b.member_param(name, 2);
    }
    b.head("for_each_cb", KIND_FUNC, FUNC_STATIC, 8);
    b.finish()
}

impl Builder {
    /// A `struct btf_param` of a `FUNC_PROTO`.
    fn member_param(&mut self, name: &str, type_id: u32) {
        let name = self.name(name);
        self.words(&[name, type_id]);
    }

    /// The section: header, types, strings.
    fn finish(self) -> ObjectBtf {
        let b = self;
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
