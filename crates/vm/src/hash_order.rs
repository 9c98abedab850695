//! The order in which the kernel's hash tables hand their elements to `bpf_for_each_map_elem`.
//!
//! `kernel/bpf/hashtab.c` keeps `roundup_pow_of_two(max_entries)` buckets, puts a key in bucket
//! `jhash(key, key_size, seed) & (buckets - 1)` and links every new element at the head of its
//! bucket's list; `bpf_for_each_hash_elem` walks the buckets in index order and each list from
//! its head. So the visit order is by bucket, then newest first. Replacing the value of an
//! existing key links a new element at the head and unlinks the old one (except in per-CPU maps,
//! which rewrite in place), so a replaced key becomes the newest of its bucket.
//!
//! The seed is random per map unless the map is created with `BPF_F_ZERO_SEED`; linerate's
//! kernel runner creates hash maps with that flag, and this module models seed 0, so that both
//! engines visit in the same order. An element's position is `(bucket, age)`, `age` being the
//! map's insertion stamp of the element: a position survives the element's deletion or
//! replacement during the walk, which then goes on with the element that followed it, as the
//! kernel's walk does through the unlinked element's next pointer.

/// `JHASH_INITVAL` (include/linux/jhash.h).
const JHASH_INITVAL: u32 = 0xdead_beef;

/// Bob Jenkins' lookup3 mixing step as include/linux/jhash.h defines `__jhash_mix`.
fn mix(a: &mut u32, b: &mut u32, c: &mut u32) {
    *a = a.wrapping_sub(*c);
    *a ^= c.rotate_left(4);
    *c = c.wrapping_add(*b);
    *b = b.wrapping_sub(*a);
    *b ^= a.rotate_left(6);
    *a = a.wrapping_add(*c);
    *c = c.wrapping_sub(*b);
    *c ^= b.rotate_left(8);
    *b = b.wrapping_add(*a);
    *a = a.wrapping_sub(*c);
    *a ^= c.rotate_left(16);
    *c = c.wrapping_add(*b);
    *b = b.wrapping_sub(*a);
    *b ^= a.rotate_left(19);
    *a = a.wrapping_add(*c);
    *c = c.wrapping_sub(*b);
    *c ^= b.rotate_left(4);
    *b = b.wrapping_add(*a);
}

/// `__jhash_final` (include/linux/jhash.h).
fn fin(a: &mut u32, b: &mut u32, c: &mut u32) {
    *c ^= *b;
    *c = c.wrapping_sub(b.rotate_left(14));
    *a ^= *c;
    *a = a.wrapping_sub(c.rotate_left(11));
    *b ^= *a;
    *b = b.wrapping_sub(a.rotate_left(25));
    *c ^= *b;
    *c = c.wrapping_sub(b.rotate_left(16));
    *a ^= *c;
    *a = a.wrapping_sub(c.rotate_left(4));
    *b ^= *a;
    *b = b.wrapping_sub(a.rotate_left(14));
    *c ^= *b;
    *c = c.wrapping_sub(b.rotate_left(24));
}

/// The kernel's `jhash(key, length, seed)` on a little-endian machine (`jhash2` over whole words,
/// which `htab_map_hash` uses for keys of a multiple of 4 bytes, gives the same value).
pub fn jhash(key: &[u8], seed: u32) -> u32 {
    let init = JHASH_INITVAL
        .wrapping_add(key.len() as u32)
        .wrapping_add(seed);
    let (mut a, mut b, mut c) = (init, init, init);
    let word = |bytes: &[u8]| {
        let mut w = [0u8; 4];
        w[..bytes.len()].copy_from_slice(bytes);
        u32::from_le_bytes(w)
    };
    let mut rest = key;
    while rest.len() > 12 {
        a = a.wrapping_add(word(&rest[0..4]));
        b = b.wrapping_add(word(&rest[4..8]));
        c = c.wrapping_add(word(&rest[8..12]));
        mix(&mut a, &mut b, &mut c);
        rest = &rest[12..];
    }
    if rest.is_empty() {
        return c;
    }
    // The tail's bytes, zero-padded to 12, are added as three little-endian words.
    a = a.wrapping_add(word(&rest[..rest.len().min(4)]));
    if rest.len() > 4 {
        b = b.wrapping_add(word(&rest[4..rest.len().min(8)]));
    }
    if rest.len() > 8 {
        c = c.wrapping_add(word(&rest[8..]));
    }
    fin(&mut a, &mut b, &mut c);
    c
}

/// The bucket of `key` in a hash table of `max_entries` created with seed 0.
pub fn bucket(key: &[u8], max_entries: u32) -> u32 {
    let buckets = max_entries
        .max(1)
        .checked_next_power_of_two()
        .unwrap_or(1 << 31);
    jhash(key, 0) & (buckets - 1)
}

/// Where the walk is: an element's bucket and insertion stamp.
pub type Position = (u32, u64);

/// The elements of a hash table in visit order: `(bucket, age, slot, key)`, by bucket, newest
/// first.
#[derive(Clone, Debug, Default)]
pub struct VisitOrder(Vec<(u32, u64, usize, Vec<u8>)>);

impl VisitOrder {
    /// The order of `elements`, given as `(key, age, slot)`.
    pub fn new<'a>(
        elements: impl Iterator<Item = (&'a [u8], u64, usize)>,
        max_entries: u32,
    ) -> VisitOrder {
        let mut order: Vec<_> = elements
            .map(|(key, age, slot)| (bucket(key, max_entries), age, slot, key.to_vec()))
            .collect();
        order.sort_by(|x, y| x.0.cmp(&y.0).then(y.1.cmp(&x.1)));
        VisitOrder(order)
    }

    /// The element visited after the one at `after` (the first where `None`): its slot,
    /// position and key.
    pub fn next(&self, after: Option<Position>) -> Option<(usize, Position, &[u8])> {
        let start = match after {
            None => 0,
            Some((bucket, age)) => self
                .0
                .partition_point(|&(b, a, ..)| b < bucket || (b == bucket && a >= age)),
        };
        self.0
            .get(start)
            .map(|(b, a, slot, key)| (*slot, (*b, *a), &key[..]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jhash_words_and_bytes_agree_and_differ_by_content() {
        // A key of whole words hashes as jhash2 would: changing one byte changes the hash.
        let k1 = [1u8, 0, 0, 0, 2, 0, 0, 0];
        let mut k2 = k1;
        k2[5] = 1;
        assert_ne!(jhash(&k1, 0), jhash(&k2, 0));
        // The empty key is the initial value itself.
        assert_eq!(jhash(&[], 0), JHASH_INITVAL);
        assert_eq!(jhash(&[], 7), JHASH_INITVAL + 7);
    }

    #[test]
    fn visit_order_is_by_bucket_then_newest_first() {
        let keys: Vec<[u8; 4]> = (0u32..6).map(|k| k.to_le_bytes()).collect();
        let order = VisitOrder::new(
            keys.iter().enumerate().map(|(i, k)| (&k[..], i as u64, i)),
            4,
        );
        let mut seen = Vec::new();
        let mut at = None;
        while let Some((slot, pos, _)) = order.next(at) {
            seen.push((pos.0, pos.1, slot));
            at = Some(pos);
        }
        assert_eq!(seen.len(), 6);
        assert!(seen
            .windows(2)
            .all(|w| w[0].0 < w[1].0 || (w[0].0 == w[1].0 && w[0].1 > w[1].1)));
        // A position whose element is gone still leads to what followed it.
        let (_, first, _) = order.next(None).unwrap();
        let without_first = VisitOrder(order.0[1..].to_vec());
        assert_eq!(without_first.next(Some(first)), order.next(Some(first)));
    }
}
