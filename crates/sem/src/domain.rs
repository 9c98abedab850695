//! Value domains: what a 64-bit register value and a branch condition are.
//!
//! The semantics in [`crate::exec`] is written once against [`Domain`]. A domain provides only
//! primitive, total operations on 64-bit values; every BPF-specific behaviour (32-bit
//! subregisters, sign extension, division by zero, shift masking, byte swaps) is expressed in the
//! semantics from these primitives, so no instantiation can disagree with another on it.

/// Binary operations on 64-bit values. All are total: division and remainder by zero and signed
/// overflow must not trap (the semantics never relies on their result in those cases — it guards
/// them with [`Domain::ite`] — but a concrete domain evaluates both arms).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    /// Unsigned division.
    UDiv,
    /// Unsigned remainder.
    URem,
    /// Signed division, truncating toward zero.
    SDiv,
    /// Signed remainder, with the sign of the dividend.
    SRem,
    And,
    Or,
    Xor,
    /// Shift left; the semantics only passes amounts below 64.
    Shl,
    /// Logical shift right; amounts below 64.
    LShr,
    /// Arithmetic shift right; amounts below 64.
    AShr,
}

/// Comparisons of 64-bit values; the others are derived in the semantics.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmpOp {
    Eq,
    /// Unsigned less than.
    Ult,
    /// Unsigned less or equal.
    Ule,
    /// Signed less than.
    Slt,
    /// Signed less or equal.
    Sle,
}

/// A domain of 64-bit values and booleans.
pub trait Domain {
    /// A 64-bit value.
    type Value: Clone + std::fmt::Debug;
    /// A condition.
    type Bool: Clone + std::fmt::Debug;

    /// The constant `v`.
    fn constant(&mut self, v: u64) -> Self::Value;
    /// `a op b`.
    fn binary(&mut self, op: BinOp, a: &Self::Value, b: &Self::Value) -> Self::Value;
    /// `a op b`.
    fn compare(&mut self, op: CmpOp, a: &Self::Value, b: &Self::Value) -> Self::Bool;
    /// Logical negation.
    fn not(&mut self, c: &Self::Bool) -> Self::Bool;
    /// `if c { a } else { b }`.
    fn ite(&mut self, c: &Self::Bool, a: &Self::Value, b: &Self::Value) -> Self::Value;

    /// The condition `b`. Derived from the primitives; a domain may do better.
    fn truth(&mut self, b: bool) -> Self::Bool {
        let zero = self.constant(0);
        let other = self.constant(u64::from(!b));
        self.compare(CmpOp::Eq, &zero, &other)
    }
    /// `a && b`. Derived from the primitives; a domain may do better.
    fn and(&mut self, a: &Self::Bool, b: &Self::Bool) -> Self::Bool {
        let (one, zero) = (self.constant(1), self.constant(0));
        let b_value = self.ite(b, &one, &zero);
        let both = self.ite(a, &b_value, &zero);
        self.compare(CmpOp::Eq, &both, &one)
    }
    /// `a || b`. Derived from the primitives; a domain may do better.
    fn or(&mut self, a: &Self::Bool, b: &Self::Bool) -> Self::Bool {
        let (not_a, not_b) = (self.not(a), self.not(b));
        let neither = self.and(&not_a, &not_b);
        self.not(&neither)
    }
}

/// Machine integers: the domain of the interpreter.
#[derive(Clone, Copy, Debug, Default)]
pub struct Concrete;

impl Concrete {
    /// Evaluates a binary operation on machine integers (total, see [`BinOp`]).
    #[inline(always)]
    pub fn eval_binary(op: BinOp, a: u64, b: u64) -> u64 {
        match op {
            BinOp::Add => a.wrapping_add(b),
            BinOp::Sub => a.wrapping_sub(b),
            BinOp::Mul => a.wrapping_mul(b),
            BinOp::UDiv => a.checked_div(b).unwrap_or(0),
            BinOp::URem => a.checked_rem(b).unwrap_or(a),
            BinOp::SDiv if b == 0 => 0,
            BinOp::SDiv => (a as i64).wrapping_div(b as i64) as u64,
            BinOp::SRem if b == 0 => a,
            BinOp::SRem => (a as i64).wrapping_rem(b as i64) as u64,
            BinOp::And => a & b,
            BinOp::Or => a | b,
            BinOp::Xor => a ^ b,
            BinOp::Shl => a.wrapping_shl(b as u32),
            BinOp::LShr => a.wrapping_shr(b as u32),
            BinOp::AShr => (a as i64).wrapping_shr(b as u32) as u64,
        }
    }

    /// Evaluates a comparison on machine integers.
    #[inline(always)]
    pub fn eval_compare(op: CmpOp, a: u64, b: u64) -> bool {
        match op {
            CmpOp::Eq => a == b,
            CmpOp::Ult => a < b,
            CmpOp::Ule => a <= b,
            CmpOp::Slt => (a as i64) < (b as i64),
            CmpOp::Sle => (a as i64) <= (b as i64),
        }
    }
}

impl Domain for Concrete {
    type Value = u64;
    type Bool = bool;

    #[inline(always)]
    fn constant(&mut self, v: u64) -> u64 {
        v
    }

    #[inline(always)]
    fn binary(&mut self, op: BinOp, a: &u64, b: &u64) -> u64 {
        Self::eval_binary(op, *a, *b)
    }

    #[inline(always)]
    fn compare(&mut self, op: CmpOp, a: &u64, b: &u64) -> bool {
        Self::eval_compare(op, *a, *b)
    }

    #[inline(always)]
    fn not(&mut self, c: &bool) -> bool {
        !*c
    }

    #[inline(always)]
    fn ite(&mut self, c: &bool, a: &u64, b: &u64) -> u64 {
        if *c {
            *a
        } else {
            *b
        }
    }

    fn truth(&mut self, b: bool) -> bool {
        b
    }

    fn and(&mut self, a: &bool, b: &bool) -> bool {
        *a && *b
    }

    fn or(&mut self, a: &bool, b: &bool) -> bool {
        *a || *b
    }
}
