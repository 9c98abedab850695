//! The hash function of the maps' key indexes ([`crate::maps`]).
//!
//! The standard library's hasher (SipHash with a random key) resists inputs chosen to collide,
//! which the interpreter does not need: its keys come from programs and packets a user runs on
//! their own machine. A map lookup hashes its key on every call, so a cheaper function matters:
//! this one reads the key a word at a time and mixes each word with a multiply and a rotate. The
//! order of a map's index is never observable (listings are sorted, `bpf_for_each_map_elem`
//! follows [`crate::hash_order`]), so the function is free to change.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A map from keys to slots with [`KeyHasher`].
pub type KeyIndex = HashMap<Vec<u8>, usize, BuildHasherDefault<KeyHasher>>;

/// An odd constant with bits spread over the word (the 64-bit golden ratio), for mixing.
const MIX: u64 = 0x9e37_79b9_7f4a_7c15;

/// A multiply-rotate hasher over 64-bit words.
#[derive(Clone, Copy, Debug, Default)]
pub struct KeyHasher {
    state: u64,
}

impl KeyHasher {
    #[inline(always)]
    fn add(&mut self, word: u64) {
        self.state = (self.state.rotate_left(23) ^ word).wrapping_mul(MIX);
    }
}

impl Hasher for KeyHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            // The length tells `[0]` from `[0, 0]` within the last word.
            self.add(u64::from_le_bytes(word) ^ ((rest.len() as u64) << 56));
        }
    }

    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        // The table picks buckets with the low bits and tags with the high ones: fold the
        // well-mixed high half into the low.
        self.state ^ (self.state >> 29)
    }
}

#[cfg(test)]
mod tests {
    use std::hash::{BuildHasher, BuildHasherDefault};

    use super::*;

    fn hash(key: &[u8]) -> u64 {
        BuildHasherDefault::<KeyHasher>::default().hash_one(key)
    }

    #[test]
    fn keys_that_differ_hash_differently() {
        let keys: Vec<Vec<u8>> = vec![
            vec![],
            vec![0],
            vec![0, 0],
            vec![0; 8],
            vec![0; 9],
            vec![1, 0, 0, 0],
            vec![0, 0, 0, 1],
            (0..16).collect(),
            (1..17).collect(),
        ];
        for (i, a) in keys.iter().enumerate() {
            for b in &keys[i + 1..] {
                assert_ne!(hash(a), hash(b), "{a:?} and {b:?}");
            }
        }
    }

    #[test]
    fn an_index_finds_what_it_holds() {
        let mut index = KeyIndex::default();
        for i in 0u32..10_000 {
            index.insert(i.to_be_bytes().to_vec(), i as usize);
        }
        for i in 0u32..10_000 {
            assert_eq!(index.get(&i.to_be_bytes()[..]), Some(&(i as usize)));
        }
        assert_eq!(index.get(&10_000u32.to_be_bytes()[..]), None);
    }
}
