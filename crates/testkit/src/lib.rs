//! Test support shared by linerate's test suites: [`XorShift`], a small deterministic random
//! generator, so that a randomized test (fuzzing an object reader, mutating packets, drawing
//! instruction slots) fails the same way on every run and reproduces from its seed; and
//! [`map_in_parallel`], which spreads a long test's independent cases over threads of its own.
//!
//! This crate is for tests only: linerate's crates take it as a dev-dependency, and it depends on
//! no linerate crate. It is not a general-purpose or cryptographic generator, and not the VM's
//! `bpf_get_prandom_u32` (that is runtime behaviour of the interpreter, kept in `linerate-vm`);
//! tests that want distributions or shrinking use `proptest`.

mod parallel;

pub use parallel::map_in_parallel;

/// The xorshift64* generator (S. Vigna, "An experimental exploration of Marsaglia's xorshift
/// generators, scrambled", 2016): a 64-bit xorshift state (shifts 12, 25, 27) whose output is
/// scrambled by a multiplication. Fast, with no dependencies, and the same sequence for the same
/// seed on every platform.
///
/// A zero seed is a fixed point: it yields only zeros. Every other seed gives a sequence of period
/// 2^64 − 1.
///
/// ```
/// use linerate_testkit::XorShift;
///
/// let mut a = XorShift::new(42);
/// let mut b = XorShift::new(42);
/// assert_eq!(a.next_u64(), b.next_u64());
/// assert!(a.below(10) < 10);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XorShift {
    state: u64,
}

impl XorShift {
    /// A generator starting from `seed` (not zero, see the type's documentation).
    pub fn new(seed: u64) -> XorShift {
        XorShift { state: seed }
    }

    /// The next 64-bit value.
    pub fn next_u64(&mut self) -> u64 {
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        self.state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A value in `0..n`, the next value modulo `n` (slightly biased towards small values when
    /// `n` is not a power of two, which tests do not mind). `n` must not be zero.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sequence is pinned: the test suites' seeds must keep producing the inputs their
    /// assertions were written against.
    #[test]
    fn sequence_is_pinned() {
        let mut rng = XorShift::new(0x9e37_79b9_7f4a_7c15);
        let first: Vec<u64> = (0..3).map(|_| rng.next_u64()).collect();
        assert_eq!(first, PINNED);
    }

    const PINNED: [u64; 3] = [
        0x0d83_b3e2_9a21_487a,
        0x54c4_4c79_f1fe_9d67,
        0xa845_f342_007a_0e78,
    ];

    #[test]
    fn zero_is_a_fixed_point_and_other_seeds_move() {
        let mut zero = XorShift::new(0);
        assert!((0..10).all(|_| zero.next_u64() == 0));
        let mut one = XorShift::new(1);
        let values: std::collections::HashSet<u64> = (0..1000).map(|_| one.next_u64()).collect();
        assert_eq!(values.len(), 1000);
    }

    #[test]
    fn below_stays_below() {
        let mut rng = XorShift::new(7);
        for n in [1, 2, 3, 10, 1000] {
            assert!((0..100).all(|_| rng.below(n) < n));
        }
    }
}
