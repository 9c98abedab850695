//! The abstract value domain: what a register or stack slot may hold, as a region tag and an
//! interval.
//!
//! A scalar is an interval of unsigned 64-bit values; a pointer is a region (context, packet from
//! `data`, packet from `data_meta`, packet end, stack frame, map value, map handle) and an interval
//! of signed offsets into it. Operations follow the BPF verifier's pointer rules — pointer ± scalar
//! stays in its region, pointer − pointer of one region is a scalar, anything else on a pointer is
//! unknown — so the region of every pointer a verified program computes is known. Every value
//! carries an identity: copies share it, every operation makes a new one, so a branch condition
//! on a value can be applied to every register holding that same value.

use linerate_sem::{BinOp, CmpOp, Domain};

/// An interval `lo..=hi` of 64-bit values (unsigned for scalars, signed for pointer offsets).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Interval {
    pub lo: i128,
    pub hi: i128,
}

/// Bounds of unsigned 64-bit values.
const U64_MAX: i128 = u64::MAX as i128;
/// Bounds of signed 64-bit offsets.
const I64_MIN: i128 = i64::MIN as i128;
const I64_MAX: i128 = i64::MAX as i128;

impl Interval {
    /// Every unsigned 64-bit value.
    pub const UNSIGNED: Interval = Interval { lo: 0, hi: U64_MAX };
    /// Every signed 64-bit offset.
    pub const SIGNED: Interval = Interval {
        lo: I64_MIN,
        hi: I64_MAX,
    };

    pub fn exactly(v: i128) -> Interval {
        Interval { lo: v, hi: v }
    }

    /// The single value, if the interval holds one.
    pub fn constant(self) -> Option<i128> {
        (self.lo == self.hi).then_some(self.lo)
    }

    pub fn contains(self, v: i128) -> bool {
        self.lo <= v && v <= self.hi
    }

    pub fn join(self, other: Interval) -> Interval {
        Interval {
            lo: self.lo.min(other.lo),
            hi: self.hi.max(other.hi),
        }
    }

    /// The intersection, `None` if empty.
    pub fn meet(self, other: Interval) -> Option<Interval> {
        let i = Interval {
            lo: self.lo.max(other.lo),
            hi: self.hi.min(other.hi),
        };
        (i.lo <= i.hi).then_some(i)
    }

    /// Widening: a bound that moved goes to the end of `limits`.
    pub fn widen(self, next: Interval, limits: Interval) -> Interval {
        Interval {
            lo: if next.lo < self.lo {
                limits.lo
            } else {
                self.lo
            },
            hi: if next.hi > self.hi {
                limits.hi
            } else {
                self.hi
            },
        }
    }

    /// `self + other` within `limits`, or all of `limits` where it may leave them.
    fn add(self, other: Interval, limits: Interval) -> Interval {
        let r = Interval {
            lo: self.lo + other.lo,
            hi: self.hi + other.hi,
        };
        if limits.contains(r.lo) && limits.contains(r.hi) {
            r
        } else {
            limits
        }
    }

    fn negate(self) -> Interval {
        Interval {
            lo: -self.hi,
            hi: -self.lo,
        }
    }

    /// An unsigned scalar interval read as signed offsets, where it does not straddle 2^63.
    fn as_signed(self) -> Interval {
        if self.hi <= I64_MAX {
            self
        } else if self.lo > I64_MAX {
            Interval {
                lo: self.lo - (1i128 << 64),
                hi: self.hi - (1i128 << 64),
            }
        } else {
            Interval::SIGNED
        }
    }
}

/// Which memory a pointer points into.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Region {
    /// The `xdp_md` context.
    Ctx,
    /// Packet data; offsets count from `data`.
    Packet,
    /// The metadata area; offsets count from `data_meta`.
    PacketMeta,
    /// `data_end`; offsets count from it.
    PacketEnd,
    /// A stack frame: of call depth `depth` (0 for the entry function) where known; offsets count
    /// from its frame pointer.
    Stack { depth: Option<u8> },
    /// A value of map `map` (where known); offsets count from the value's start.
    MapValue { map: Option<usize> },
    /// A map itself (an argument of map helpers, never dereferenced).
    MapHandle { map: Option<usize> },
    /// A function's address (a helper's callback, never dereferenced); the offset is the slot
    /// the function starts at.
    Function,
}

impl Region {
    /// The least region holding both, where one does.
    pub(crate) fn join(self, other: Region) -> Option<Region> {
        use Region::*;
        Some(match (self, other) {
            (a, b) if a == b => a,
            (Stack { .. }, Stack { .. }) => Stack { depth: None },
            (MapValue { .. }, MapValue { .. }) => MapValue { map: None },
            (MapHandle { .. }, MapHandle { .. }) => MapHandle { map: None },
            _ => return None,
        })
    }
}

/// What a value may be.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Shape {
    /// Anything (a scalar or a pointer of any region).
    Unknown,
    /// A scalar in the interval.
    Scalar(Interval),
    /// A pointer into `region` at an offset in the interval; `maybe_null` where it may be zero
    /// instead (a map lookup's result before its null check).
    Pointer {
        region: Region,
        offset: Interval,
        maybe_null: bool,
    },
}

/// An abstract value: its shape and its identity (see the module documentation).
#[derive(Clone, Copy, Debug)]
pub struct AbsValue {
    pub shape: Shape,
    pub id: u64,
}

impl PartialEq for AbsValue {
    /// Values are equal as facts: identities do not matter.
    fn eq(&self, other: &AbsValue) -> bool {
        self.shape == other.shape
    }
}

impl AbsValue {
    /// The constant `v`, if this is one.
    pub fn constant(&self) -> Option<u64> {
        match self.shape {
            Shape::Scalar(i) => i.constant().map(|v| v as u64),
            _ => None,
        }
    }

    /// `k` where this is the constant `2^k - 1`, `0 < k < 64`.
    fn constant_interval_mask(&self) -> Option<u32> {
        match self.shape {
            Shape::Scalar(i) => low_mask(i),
            _ => None,
        }
    }

    /// The region this value points into, if it is a pointer.
    pub fn region(&self) -> Option<Region> {
        match self.shape {
            Shape::Pointer { region, .. } => Some(region),
            _ => None,
        }
    }

    /// The least shape holding both.
    pub fn join_shape(a: Shape, b: Shape) -> Shape {
        match (a, b) {
            (a, b) if a == b => a,
            (Shape::Scalar(x), Shape::Scalar(y)) => Shape::Scalar(x.join(y)),
            (
                Shape::Pointer {
                    region: r1,
                    offset: o1,
                    maybe_null: n1,
                },
                Shape::Pointer {
                    region: r2,
                    offset: o2,
                    maybe_null: n2,
                },
            ) => match r1.join(r2) {
                Some(region) => Shape::Pointer {
                    region,
                    offset: if region == r1 && region == r2 {
                        o1.join(o2)
                    } else {
                        Interval::SIGNED
                    },
                    maybe_null: n1 || n2,
                },
                None => Shape::Unknown,
            },
            // A pointer joined with zero is a null-or-pointer.
            (Shape::Pointer { region, offset, .. }, Shape::Scalar(z))
            | (Shape::Scalar(z), Shape::Pointer { region, offset, .. })
                if z == Interval::exactly(0) =>
            {
                Shape::Pointer {
                    region,
                    offset,
                    maybe_null: true,
                }
            }
            _ => Shape::Unknown,
        }
    }

    /// Widening of a loop header's shape `self` by the next iteration's `next`.
    pub fn widen_shape(a: Shape, next: Shape) -> Shape {
        match (a, AbsValue::join_shape(a, next)) {
            (Shape::Scalar(x), Shape::Scalar(y)) => Shape::Scalar(x.widen(y, Interval::UNSIGNED)),
            (
                Shape::Pointer {
                    region: r1,
                    offset: o1,
                    ..
                },
                Shape::Pointer {
                    region,
                    offset,
                    maybe_null,
                },
            ) if r1 == region => Shape::Pointer {
                region,
                offset: o1.widen(offset, Interval::SIGNED),
                maybe_null,
            },
            (_, joined) => joined,
        }
    }
}

/// An abstract condition: whether it is known to hold, and the comparison it came from (for
/// refining the compared values where a branch assumes it).
#[derive(Clone, Copy, Debug)]
pub struct AbsBool {
    /// `Some(b)` where the condition is known to be `b`.
    pub known: Option<bool>,
    /// `op(a, b)`, negated where `negated`.
    pub compare: Option<(CmpOp, AbsValue, AbsValue)>,
    pub negated: bool,
}

impl AbsBool {
    fn known(b: Option<bool>) -> AbsBool {
        AbsBool {
            known: b,
            compare: None,
            negated: false,
        }
    }
}

/// The abstract domain: hands out value identities.
#[derive(Clone, Debug, Default)]
pub struct AbsDomain {
    next_id: u64,
}

impl AbsDomain {
    /// A value of this shape with a new identity.
    pub fn value(&mut self, shape: Shape) -> AbsValue {
        self.next_id += 1;
        AbsValue {
            shape,
            id: self.next_id,
        }
    }

    pub fn scalar(&mut self, i: Interval) -> AbsValue {
        self.value(Shape::Scalar(i))
    }

    pub fn unknown(&mut self) -> AbsValue {
        self.value(Shape::Unknown)
    }

    /// A scalar of `bits` bits.
    pub fn bits(&mut self, bits: u32) -> AbsValue {
        let hi = if bits >= 64 {
            U64_MAX
        } else {
            (1i128 << bits) - 1
        };
        self.scalar(Interval { lo: 0, hi })
    }

    pub fn pointer(&mut self, region: Region, offset: Interval) -> AbsValue {
        self.value(Shape::Pointer {
            region,
            offset,
            maybe_null: false,
        })
    }

    /// The shape of `op(a, b)`.
    fn binary_shape(op: BinOp, a: Shape, b: Shape) -> Shape {
        use Shape::*;
        match (op, a, b) {
            (_, Scalar(x), Scalar(y)) => Scalar(scalar_op(op, x, y)),
            (BinOp::Add, Pointer { region, offset, .. }, Scalar(s))
            | (BinOp::Add, Scalar(s), Pointer { region, offset, .. }) => Pointer {
                region,
                offset: offset.add(s.as_signed(), Interval::SIGNED),
                maybe_null: false,
            },
            (BinOp::Sub, Pointer { region, offset, .. }, Scalar(s)) => Pointer {
                region,
                offset: offset.add(s.as_signed().negate(), Interval::SIGNED),
                maybe_null: false,
            },
            // Pointer differences are scalars whose size we do not follow.
            (BinOp::Sub, Pointer { .. }, Pointer { .. }) => Scalar(Interval::UNSIGNED),
            // The verifier lets only scalars be added to pointers, so an unknown addend is one.
            (BinOp::Add, Pointer { region, .. }, Unknown)
            | (BinOp::Add, Unknown, Pointer { region, .. })
            | (BinOp::Sub, Pointer { region, .. }, Unknown) => Pointer {
                region,
                offset: Interval::SIGNED,
                maybe_null: false,
            },
            // Whatever `v` is, `v & m <= m`, `v % c < c` and `v >> s < 2^(64-s)`.
            (BinOp::And, _, Scalar(m)) | (BinOp::And, Scalar(m), _) => {
                Scalar(Interval { lo: 0, hi: m.hi })
            }
            (BinOp::URem, _, Scalar(c)) if c.lo > 0 => Scalar(Interval {
                lo: 0,
                hi: c.hi - 1,
            }),
            (BinOp::LShr, _, Scalar(s)) if s.lo > 0 && s.hi < 64 => Scalar(Interval {
                lo: 0,
                hi: (U64_MAX >> s.lo),
            }),
            // Anything else on a pointer (never by a verified program, which treats such values
            // as unknown scalars), or on unknowns.
            _ => Unknown,
        }
    }

    /// Whether `op(a, b)` holds for every, or for no, pair of values the intervals hold.
    fn decide(op: CmpOp, a: Shape, b: Shape) -> Option<bool> {
        let (Shape::Scalar(x), Shape::Scalar(y)) = (a, b) else {
            return match (op, a, b) {
                // A non-null pointer is never zero.
                (
                    CmpOp::Eq,
                    Shape::Pointer {
                        maybe_null: false, ..
                    },
                    Shape::Scalar(z),
                )
                | (
                    CmpOp::Eq,
                    Shape::Scalar(z),
                    Shape::Pointer {
                        maybe_null: false, ..
                    },
                ) if z == Interval::exactly(0) => Some(false),
                _ => None,
            };
        };
        let (x, y) = match op {
            CmpOp::Slt | CmpOp::Sle => (x.as_signed(), y.as_signed()),
            _ => (x, y),
        };
        match op {
            CmpOp::Eq => {
                if x.constant().is_some() && x == y {
                    Some(true)
                } else if x.meet(y).is_none() {
                    Some(false)
                } else {
                    None
                }
            }
            CmpOp::Ult | CmpOp::Slt => {
                if x.hi < y.lo {
                    Some(true)
                } else if x.lo >= y.hi {
                    Some(false)
                } else {
                    None
                }
            }
            CmpOp::Ule | CmpOp::Sle => {
                if x.hi <= y.lo {
                    Some(true)
                } else if x.lo > y.hi {
                    Some(false)
                } else {
                    None
                }
            }
        }
    }
}

/// `op` on scalar intervals, exact where cheap and otherwise every value.
fn scalar_op(op: BinOp, x: Interval, y: Interval) -> Interval {
    if let (Some(a), Some(b)) = (x.constant(), y.constant()) {
        let v = linerate_sem::Concrete::eval_binary(op, a as u64, b as u64);
        return Interval::exactly(v as i128);
    }
    let all = Interval::UNSIGNED;
    match op {
        BinOp::Add => wrapped(Interval {
            lo: x.lo + y.lo,
            hi: x.hi + y.hi,
        }),
        BinOp::Sub => wrapped(Interval {
            lo: x.lo - y.hi,
            hi: x.hi - y.lo,
        }),
        BinOp::Mul if x.hi <= u32::MAX as i128 && y.hi <= u32::MAX as i128 => Interval {
            lo: x.lo * y.lo,
            hi: x.hi * y.hi,
        },
        BinOp::And => match (low_mask(x), low_mask(y)) {
            (_, Some(bits)) => masked(x, bits),
            (Some(bits), _) => masked(y, bits),
            _ => Interval {
                lo: 0,
                hi: x.hi.min(y.hi),
            },
        },
        BinOp::Or | BinOp::Xor => {
            let top = x.hi.max(y.hi);
            let bits = 128 - top.leading_zeros();
            Interval {
                lo: 0,
                hi: if bits >= 64 {
                    U64_MAX
                } else {
                    (1i128 << bits) - 1
                },
            }
        }
        BinOp::LShr => match y.constant() {
            Some(s) if (0..64).contains(&s) => Interval {
                lo: x.lo >> s,
                hi: x.hi >> s,
            },
            _ => Interval { lo: 0, hi: x.hi },
        },
        BinOp::Shl => match y.constant() {
            Some(s) if (0..64).contains(&s) && (x.hi << s) <= U64_MAX => Interval {
                lo: x.lo << s,
                hi: x.hi << s,
            },
            _ => all,
        },
        BinOp::UDiv => match y.constant() {
            Some(d) if d > 0 => Interval {
                lo: x.lo / d,
                hi: x.hi / d,
            },
            // Division by zero is handled by the semantics; a quotient never exceeds the dividend.
            _ => Interval { lo: 0, hi: x.hi },
        },
        BinOp::URem => match y.constant() {
            Some(d) if d > 0 => Interval {
                lo: 0,
                hi: (d - 1).min(x.hi),
            },
            _ => Interval { lo: 0, hi: x.hi },
        },
        BinOp::AShr | BinOp::SDiv | BinOp::SRem | BinOp::Mul => all,
    }
}

/// The exact sum or difference `r` of two unsigned intervals taken modulo 2^64: where every
/// value of `r` wraps the same way (all above 2^64 - 1, or all below 0) it is shifted back, as a
/// subtraction written as the addition of a two's complement (`w3 += -1`) needs; where `r`
/// straddles a wrap, every value.
fn wrapped(r: Interval) -> Interval {
    let modulus = 1i128 << 64;
    if r.lo >= 0 && r.hi <= U64_MAX {
        r
    } else if r.lo > U64_MAX && r.hi - modulus <= U64_MAX {
        Interval {
            lo: r.lo - modulus,
            hi: r.hi - modulus,
        }
    } else if r.hi < 0 && r.lo + modulus >= 0 {
        Interval {
            lo: r.lo + modulus,
            hi: r.hi + modulus,
        }
    } else {
        Interval::UNSIGNED
    }
}

/// `k` where the interval is the one constant `2^k - 1` (a mask of the `k` low bits), `0 < k <
/// 64`.
fn low_mask(i: Interval) -> Option<u32> {
    let m = i.constant()?;
    (m > 0 && m < U64_MAX && (m + 1) & m == 0).then(|| (m + 1).trailing_zeros())
}

/// The `bits` low bits of the values of `x`: exact where every value has the same higher bits
/// (they then keep their order), else every `bits`-bit value.
fn masked(x: Interval, bits: u32) -> Interval {
    let m = (1i128 << bits) - 1;
    if x.lo >> bits == x.hi >> bits {
        Interval {
            lo: x.lo & m,
            hi: x.hi & m,
        }
    } else {
        Interval { lo: 0, hi: m }
    }
}

impl Domain for AbsDomain {
    type Value = AbsValue;
    type Bool = AbsBool;

    fn constant(&mut self, v: u64) -> AbsValue {
        self.scalar(Interval::exactly(v as i128))
    }

    fn binary(&mut self, op: BinOp, a: &AbsValue, b: &AbsValue) -> AbsValue {
        // Masking a value to low bits it already fits in (the zero extension of every 32-bit
        // operation and comparison, `w &= 0xff` of a byte) is that same value: keeping its
        // identity lets a branch on the masked value narrow the register it came from.
        if op == BinOp::And {
            for (v, m) in [(a, b), (b, a)] {
                if let (Shape::Scalar(x), Some(bits)) = (v.shape, m.constant_interval_mask()) {
                    if x.hi < (1i128 << bits) {
                        return *v;
                    }
                }
            }
        }
        let shape = AbsDomain::binary_shape(op, a.shape, b.shape);
        self.value(shape)
    }

    fn compare(&mut self, op: CmpOp, a: &AbsValue, b: &AbsValue) -> AbsBool {
        AbsBool {
            known: AbsDomain::decide(op, a.shape, b.shape),
            compare: Some((op, *a, *b)),
            negated: false,
        }
    }

    fn not(&mut self, c: &AbsBool) -> AbsBool {
        AbsBool {
            known: c.known.map(|b| !b),
            compare: c.compare,
            negated: !c.negated,
        }
    }

    fn ite(&mut self, c: &AbsBool, a: &AbsValue, b: &AbsValue) -> AbsValue {
        match c.known {
            Some(true) => *a,
            Some(false) => *b,
            None => {
                let shape = AbsValue::join_shape(a.shape, b.shape);
                self.value(shape)
            }
        }
    }

    fn truth(&mut self, b: bool) -> AbsBool {
        AbsBool::known(Some(b))
    }

    fn and(&mut self, a: &AbsBool, b: &AbsBool) -> AbsBool {
        AbsBool::known(match (a.known, b.known) {
            (Some(false), _) | (_, Some(false)) => Some(false),
            (Some(true), Some(true)) => Some(true),
            _ => None,
        })
    }

    fn or(&mut self, a: &AbsBool, b: &AbsBool) -> AbsBool {
        AbsBool::known(match (a.known, b.known) {
            (Some(true), _) | (_, Some(true)) => Some(true),
            (Some(false), Some(false)) => Some(false),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointer_arithmetic_keeps_the_region() {
        let mut d = AbsDomain::default();
        let fp = d.pointer(Region::Stack { depth: Some(0) }, Interval::exactly(0));
        let minus = d.constant((-8i64) as u64);
        let slot = d.binary(BinOp::Add, &fp, &minus);
        assert_eq!(
            slot.shape,
            Shape::Pointer {
                region: Region::Stack { depth: Some(0) },
                offset: Interval::exactly(-8),
                maybe_null: false
            }
        );
        // `r1 -= -0x80000000` as the semantics computes it: sub of a sign-extended immediate.
        let big = d.constant((-0x8000_0000i64) as u64);
        let moved = d.binary(BinOp::Sub, &fp, &big);
        assert_eq!(moved.region(), Some(Region::Stack { depth: Some(0) }));
    }

    #[test]
    fn sums_wrap_modulo_two_to_the_64_where_every_value_wraps_alike() {
        let mut d = AbsDomain::default();
        let x = d.scalar(Interval { lo: 63, hi: 64 });
        // `w3 += -1`: the immediate sign-extended, then the low 32 bits kept.
        let minus_one = d.constant(u64::MAX);
        let sum = d.binary(BinOp::Add, &x, &minus_one);
        assert_eq!(sum.shape, Shape::Scalar(Interval { lo: 62, hi: 63 }));
        let minus_one_32 = d.constant(u32::MAX as u64);
        let wide = d.binary(BinOp::Add, &x, &minus_one_32);
        let low = d.constant(u32::MAX as u64);
        let sum32 = d.binary(BinOp::And, &wide, &low);
        assert_eq!(sum32.shape, Shape::Scalar(Interval { lo: 62, hi: 63 }));
        // Straddling the wrap: every value.
        let around = d.scalar(Interval { lo: 0, hi: 1 });
        let straddle = d.binary(BinOp::Add, &around, &minus_one);
        assert_eq!(straddle.shape, Shape::Scalar(Interval::UNSIGNED));
    }

    #[test]
    fn masking_a_value_to_bits_it_fits_in_keeps_it() {
        let mut d = AbsDomain::default();
        let x = d.scalar(Interval { lo: 2, hi: 64 });
        let byte = d.constant(0xff);
        let same = d.binary(BinOp::And, &x, &byte);
        assert_eq!((same.shape, same.id), (x.shape, x.id));
        let nibble = d.constant(0xf);
        let low = d.binary(BinOp::And, &x, &nibble);
        assert_eq!(low.shape, Shape::Scalar(Interval { lo: 0, hi: 0xf }));
        assert_ne!(low.id, x.id);
    }

    #[test]
    fn comparisons_are_decided_where_the_intervals_allow() {
        let mut d = AbsDomain::default();
        let small = d.scalar(Interval { lo: 0, hi: 9 });
        let ten = d.constant(10);
        assert_eq!(d.compare(CmpOp::Ult, &small, &ten).known, Some(true));
        assert_eq!(d.compare(CmpOp::Ult, &ten, &small).known, Some(false));
        let five = d.constant(5);
        assert_eq!(d.compare(CmpOp::Ult, &small, &five).known, None);
    }
}
