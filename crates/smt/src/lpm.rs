//! Lookups in LPM tries (`BPF_MAP_TYPE_LPM_TRIE`, kernel/bpf/lpm_trie.c): keys are
//! `{u32 prefixlen; u8 data[]}`, and a lookup returns the entry with the longest prefix (at most
//! the key's `prefixlen`, capped at the data's bits) that matches the key's data.
//!
//! The contents are unknown, so each lookup may find an entry or not, and any value: a lookup is
//! an access of the map's symbolic contents (module `maps`) under its *normalised* key — the
//! prefix length it considers and the data masked to it — so lookups that consider the same
//! prefix alias. Between lookups of different prefixes, only what every trie guarantees is
//! added: an entry that a lookup finds for prefix `A` matches every key that extends `A`, so a
//! lookup of such a key finds an entry too. A witness installs one entry per lookup that found
//! one, under the normalised key; that entry is the longest match of its own lookup, and the
//! constraint keeps it from matching a lookup that found none, so a replay sees what the path
//! saw.

use z3::ast::{Ast, Bool, BV};

use crate::memory::Byte;
use crate::value::SymValue;

/// One lookup of the path: the prefix length it considers, its data masked to it (as one
/// big-endian formula, the first byte highest), and whether it found an entry.
#[derive(Clone, Debug)]
pub struct Access {
    prefix: BV,
    data: BV,
    found: Bool,
}

/// The data bytes of `key` (after the 4-byte prefix length) as one big-endian formula.
fn data_formula(key: &[SymValue]) -> BV {
    let byte = |v: &SymValue| match Byte::of_scalar(&v.bits, 0) {
        Byte::Const(c) => BV::from_u64(u64::from(c), 8),
        Byte::Sym(bv) => bv,
        Byte::Pointer { .. } => BV::from_u64(0, 8),
    };
    key[4..]
        .iter()
        .map(byte)
        .reduce(|w, b| w.concat(&b))
        .unwrap_or_else(|| BV::from_u64(0, 8))
}

/// `data` with all but its first `prefix` bits cleared (`prefix` at most the data's width).
fn masked(data: &BV, prefix: &BV) -> BV {
    let width = data.get_size();
    let ones = BV::from_i64(-1, width);
    let shift = if width < 32 {
        prefix.extract(width - 1, 0)
    } else {
        prefix.zero_ext(width - 32)
    };
    data.bvand(ones.bvlshr(&shift).bvnot()).simplify()
}

/// The normalised key of a lookup with `key` (`prefixlen` capped at the data's bits, the data
/// masked to it) as key bytes, and the access to record once the lookup's outcome is known.
/// `key` holds at least 5 bytes (the map's definition was checked when it was loaded).
pub fn normalise(key: &[SymValue]) -> (Vec<SymValue>, BV, BV) {
    let bits = 8 * (key.len() as u64 - 4);
    let word = |bytes: &[SymValue]| {
        bytes
            .iter()
            .rev()
            .map(|v| match Byte::of_scalar(&v.bits, 0) {
                Byte::Const(c) => BV::from_u64(u64::from(c), 8),
                Byte::Sym(bv) => bv,
                Byte::Pointer { .. } => BV::from_u64(0, 8),
            })
            .reduce(|w, b| w.concat(&b))
            .unwrap_or_else(|| BV::from_u64(0, 32))
    };
    let asked = word(&key[..4]);
    let cap = BV::from_u64(bits, 32);
    let prefix = asked.bvule(&cap).ite(&asked, &cap).simplify();
    let data = masked(&data_formula(key), &prefix);
    let mut out = Vec::with_capacity(key.len());
    for i in 0..4 {
        out.push(SymValue::symbolic(
            prefix.extract(8 * i + 7, 8 * i).zero_ext(56).simplify(),
        ));
    }
    let width = data.get_size();
    for i in 0..(key.len() as u32 - 4) {
        let hi = width - 1 - 8 * i;
        out.push(SymValue::symbolic(
            data.extract(hi, hi - 7).zero_ext(56).simplify(),
        ));
    }
    (out, prefix, data)
}

impl Access {
    pub fn new(prefix: BV, data: BV, found: Bool) -> Access {
        Access {
            prefix,
            data,
            found,
        }
    }

    /// What every trie guarantees between this lookup and `earlier`: where one found an entry
    /// whose prefix the other's key extends, the other found one too.
    pub fn consistent_with(&self, earlier: &Access) -> Bool {
        let covers = |a: &Access, b: &Access| {
            // `a`'s normalised key is a prefix of `b`'s key.
            Bool::and(&[
                &a.prefix.bvule(&b.prefix),
                &masked(&b.data, &a.prefix).eq(&a.data),
            ])
        };
        Bool::and(&[
            &Bool::and(&[&earlier.found, &covers(earlier, self)]).implies(&self.found),
            &Bool::and(&[&self.found, &covers(self, earlier)]).implies(&earlier.found),
        ])
    }
}
