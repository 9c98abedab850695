//! Run-time values of the reference interpreter and P4-16's fixed-width arithmetic on them.
//!
//! A `bit<w>`/`int<w>` value is held as its `w` low bits in a `u128` (the front end caps widths at
//! 128), so every operation is "compute, then keep the low `w` bits": that is P4-16's wrap-around
//! modulo 2^w. Signedness only changes comparisons, right shifts, widening casts and saturation.
//! Division by zero has no P4 meaning; the interpreter gives BPF's answer (x / 0 = 0, x % 0 = x) so
//! that it and the compiled program agree.

use crate::ast::BinaryOp;
use crate::check::types::{Type, TypeTable};

/// A fixed-width integer: the low `width` bits of `bits`, all higher bits zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bits {
    /// Width in bits, 1..=128.
    pub width: u32,
    /// `int<w>` rather than `bit<w>`.
    pub signed: bool,
    /// The value's bits.
    pub bits: u128,
}

/// A header instance: its validity and its fields in wire order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderValue {
    /// The header type's name.
    pub type_name: String,
    /// Whether the header is valid (extracted or `setValid`).
    pub valid: bool,
    /// Field names and values in declaration order.
    pub fields: Vec<(String, Value)>,
}

/// A header stack: its elements and the index `next` refers to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StackValue {
    /// The elements (all [`Value::Header`]).
    pub elements: Vec<Value>,
    /// How many elements the parser has extracted (`nextIndex` of the P4 spec).
    pub next_index: u32,
}

/// Any value the interpreter computes or stores.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// `bit<w>`, `int<w>` and serializable enums (as their underlying type).
    Bits(Bits),
    /// An unsized integer constant (only as an operand of a cast or of other unsized operands).
    Unsized(i128),
    /// `bool`.
    Bool(bool),
    /// A member of `error`.
    Error(String),
    /// A member of a plain (not serializable) enum.
    Enum(String),
    /// A header.
    Header(HeaderValue),
    /// A struct: field names and values in order.
    Struct(Vec<(String, Value)>),
    /// A header stack.
    Stack(StackValue),
    /// The result of `t.apply()`.
    ApplyResult {
        /// Whether an entry matched.
        hit: bool,
        /// The action that ran.
        action: String,
    },
    /// `t.apply().action_run`.
    ActionRun(String),
    /// `packet_in`/`packet_out` parameters and anything else with no value of its own.
    Opaque,
}

/// The mask of the low `width` bits.
pub fn mask(width: u32) -> u128 {
    if width >= 128 {
        u128::MAX
    } else {
        (1u128 << width) - 1
    }
}

impl Bits {
    /// `value` reduced modulo 2^width.
    pub fn new(width: u32, signed: bool, value: u128) -> Bits {
        let width = width.clamp(1, 128);
        Bits {
            width,
            signed,
            bits: value & mask(width),
        }
    }

    /// A (possibly negative) integer reduced modulo 2^width.
    pub fn from_i128(width: u32, signed: bool, value: i128) -> Bits {
        Bits::new(width, signed, value as u128)
    }

    /// The value as a mathematical integer: two's complement for `int<w>`.
    pub fn to_i128(self) -> i128 {
        let sign_bit = self.width.saturating_sub(1);
        if self.signed && self.width < 128 && self.bits >> sign_bit & 1 == 1 {
            (self.bits | !mask(self.width)) as i128
        } else {
            self.bits as i128
        }
    }

    /// The value sign-extended (for `int<w>`) to 128 bits.
    fn extended(self) -> u128 {
        self.to_i128() as u128
    }
}

impl Value {
    /// The zero value of a type: integers 0, `false`, headers invalid with zero fields, stacks
    /// empty, structs of zero values. The interpreter starts every header, metadata field and
    /// uninitialised variable here, which makes runs deterministic.
    pub fn zero(types: &TypeTable, ty: &Type) -> Value {
        match ty {
            Type::Bit(w) => Value::Bits(Bits::new(*w, false, 0)),
            Type::Int(w) => Value::Bits(Bits::new(*w, true, 0)),
            Type::Bool => Value::Bool(false),
            Type::InfInt => Value::Unsized(0),
            Type::Error => Value::Error(String::from("NoError")),
            Type::Enum(name) => match types.enums.get(name) {
                Some(info) => match &info.underlying {
                    Some(under) => Value::zero(types, under),
                    None => Value::Enum(
                        info.members
                            .first()
                            .map(|m| m.0.clone())
                            .unwrap_or_default(),
                    ),
                },
                None => Value::Opaque,
            },
            Type::Header(name) => Value::Header(HeaderValue {
                type_name: name.clone(),
                valid: false,
                fields: types
                    .headers
                    .get(name)
                    .map(|l| {
                        l.fields
                            .iter()
                            .map(|f| (f.name.clone(), Value::zero(types, &f.ty)))
                            .collect()
                    })
                    .unwrap_or_default(),
            }),
            Type::Struct(name) => Value::Struct(
                types
                    .structs
                    .get(name)
                    .map(|l| {
                        l.fields
                            .iter()
                            .map(|f| (f.name.clone(), Value::zero(types, &f.ty)))
                            .collect()
                    })
                    .unwrap_or_default(),
            ),
            Type::Stack(element, size) => Value::Stack(StackValue {
                elements: (0..*size).map(|_| Value::zero(types, element)).collect(),
                next_index: 0,
            }),
            _ => Value::Opaque,
        }
    }

    /// A constant of type `ty` (integers reduced modulo 2^w, `bool` from 0/1).
    pub fn constant(types: &TypeTable, ty: &Type, value: i128) -> Value {
        match ty {
            Type::Bit(w) => Value::Bits(Bits::from_i128(*w, false, value)),
            Type::Int(w) => Value::Bits(Bits::from_i128(*w, true, value)),
            Type::Bool => Value::Bool(value != 0),
            Type::Enum(name) => match types.enums.get(name).and_then(|i| i.underlying.as_ref()) {
                Some(under) => Value::constant(types, under, value),
                None => Value::Unsized(value),
            },
            _ => Value::Unsized(value),
        }
    }

    /// The integer bits of a scalar (`bool` as 1/0); `None` for anything else.
    pub fn as_bits(&self) -> Option<u128> {
        match self {
            Value::Bits(b) => Some(b.bits),
            Value::Unsized(v) => Some(*v as u128),
            Value::Bool(b) => Some(u128::from(*b)),
            _ => None,
        }
    }

    /// The value as a `bool` (`bit<1>` 1 counts as true).
    pub fn truthy(&self) -> bool {
        match self {
            Value::Bool(b) => *b,
            other => other.as_bits().is_some_and(|b| b != 0),
        }
    }

    /// The named field of a header or struct.
    pub fn field(&self, name: &str) -> Option<&Value> {
        match self {
            Value::Header(h) => h.fields.iter().find(|f| f.0 == name).map(|f| &f.1),
            Value::Struct(fields) => fields.iter().find(|f| f.0 == name).map(|f| &f.1),
            _ => None,
        }
    }

    /// The named field of a header or struct, to write.
    pub fn field_mut(&mut self, name: &str) -> Option<&mut Value> {
        match self {
            Value::Header(h) => h.fields.iter_mut().find(|f| f.0 == name).map(|f| &mut f.1),
            Value::Struct(fields) => fields.iter_mut().find(|f| f.0 == name).map(|f| &mut f.1),
            _ => None,
        }
    }
}

/// Adapts an unsized operand to the sized operand beside it (the checker normally did this
/// already; this keeps evaluation total when it did not).
fn sized_pair(a: Value, b: Value) -> (Value, Value) {
    match (&a, &b) {
        (Value::Bits(x), Value::Unsized(v)) => {
            let y = Bits::from_i128(x.width, x.signed, *v);
            (a, Value::Bits(y))
        }
        (Value::Unsized(v), Value::Bits(y)) => {
            let x = Bits::from_i128(y.width, y.signed, *v);
            (Value::Bits(x), b)
        }
        _ => (a, b),
    }
}

/// Applies an arithmetic, bitwise or comparison operator (not `&&`/`||`, which short-circuit).
/// `None` when the operands do not fit the operator, which a checked program never produces.
pub fn binary(op: BinaryOp, a: Value, b: Value) -> Option<Value> {
    if op == BinaryOp::Concat {
        return concat(a, b);
    }
    if matches!(op, BinaryOp::Shl | BinaryOp::Shr) {
        return shift(op, a, b);
    }
    let (a, b) = sized_pair(a, b);
    match (a, b) {
        (Value::Bits(x), Value::Bits(y)) => sized_binary(op, x, y),
        (Value::Unsized(x), Value::Unsized(y)) => unsized_binary(op, x, y),
        (x, y) => match op {
            BinaryOp::Eq => Some(Value::Bool(x == y)),
            BinaryOp::Ne => Some(Value::Bool(x != y)),
            _ => None,
        },
    }
}

fn sized_binary(op: BinaryOp, x: Bits, y: Bits) -> Option<Value> {
    let (w, s) = (x.width, x.signed);
    let wrap = |v: u128| Some(Value::Bits(Bits::new(w, s, v)));
    let compare = |ordering: std::cmp::Ordering| {
        let holds = match op {
            BinaryOp::Lt => ordering.is_lt(),
            BinaryOp::Le => ordering.is_le(),
            BinaryOp::Gt => ordering.is_gt(),
            BinaryOp::Ge => ordering.is_ge(),
            BinaryOp::Eq => ordering.is_eq(),
            _ => ordering.is_ne(),
        };
        Some(Value::Bool(holds))
    };
    match op {
        BinaryOp::Add => wrap(x.bits.wrapping_add(y.bits)),
        BinaryOp::Sub => wrap(x.bits.wrapping_sub(y.bits)),
        BinaryOp::Mul => wrap(x.bits.wrapping_mul(y.bits)),
        BinaryOp::Div => wrap(x.bits.checked_div(y.bits).unwrap_or(0)),
        BinaryOp::Mod => wrap(x.bits.checked_rem(y.bits).unwrap_or(x.bits)),
        BinaryOp::BitAnd => wrap(x.bits & y.bits),
        BinaryOp::BitOr => wrap(x.bits | y.bits),
        BinaryOp::BitXor => wrap(x.bits ^ y.bits),
        BinaryOp::SatAdd | BinaryOp::SatSub => Some(Value::Bits(saturate(op, x, y))),
        BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge | BinaryOp::Eq | BinaryOp::Ne => {
            if s {
                compare(x.to_i128().cmp(&y.to_i128()))
            } else {
                compare(x.bits.cmp(&y.bits))
            }
        }
        _ => None,
    }
}

/// `|+|` and `|-|`: the exact result clamped to the type's range.
fn saturate(op: BinaryOp, x: Bits, y: Bits) -> Bits {
    let (w, s) = (x.width, x.signed);
    if s {
        let (lo, hi) = if w >= 128 {
            (i128::MIN, i128::MAX)
        } else {
            (-(1i128 << (w - 1)), (1i128 << (w - 1)) - 1)
        };
        let exact = if op == BinaryOp::SatAdd {
            x.to_i128().checked_add(y.to_i128())
        } else {
            x.to_i128().checked_sub(y.to_i128())
        };
        let clamped = match exact {
            Some(v) => v.clamp(lo, hi),
            None if op == BinaryOp::SatAdd && y.to_i128() > 0 => hi,
            None if op == BinaryOp::SatSub && y.to_i128() < 0 => hi,
            None => lo,
        };
        Bits::from_i128(w, true, clamped)
    } else if op == BinaryOp::SatAdd {
        let sum = x.bits.saturating_add(y.bits);
        Bits::new(w, false, sum.min(mask(w)))
    } else {
        Bits::new(w, false, x.bits.saturating_sub(y.bits))
    }
}

fn unsized_binary(op: BinaryOp, x: i128, y: i128) -> Option<Value> {
    let int = |v: Option<i128>| v.map(Value::Unsized);
    match op {
        BinaryOp::Add | BinaryOp::SatAdd => int(x.checked_add(y)),
        BinaryOp::Sub | BinaryOp::SatSub => int(x.checked_sub(y)),
        BinaryOp::Mul => int(x.checked_mul(y)),
        BinaryOp::Div => int(x.checked_div(y)),
        BinaryOp::Mod => int(x.checked_rem(y)),
        BinaryOp::BitAnd => int(Some(x & y)),
        BinaryOp::BitOr => int(Some(x | y)),
        BinaryOp::BitXor => int(Some(x ^ y)),
        BinaryOp::Lt => Some(Value::Bool(x < y)),
        BinaryOp::Le => Some(Value::Bool(x <= y)),
        BinaryOp::Gt => Some(Value::Bool(x > y)),
        BinaryOp::Ge => Some(Value::Bool(x >= y)),
        BinaryOp::Eq => Some(Value::Bool(x == y)),
        BinaryOp::Ne => Some(Value::Bool(x != y)),
        _ => None,
    }
}

/// `<<` and `>>`: the result has the left operand's type; shifting by the width or more gives 0
/// (or all sign bits for `>>` of a negative `int<w>`).
fn shift(op: BinaryOp, a: Value, b: Value) -> Option<Value> {
    let amount = match &b {
        Value::Bits(y) => y.bits,
        Value::Unsized(v) => u128::try_from(*v).ok()?,
        _ => return None,
    };
    match a {
        Value::Bits(x) => {
            let by = u32::try_from(amount).unwrap_or(u32::MAX);
            let bits = if op == BinaryOp::Shl {
                if by >= x.width {
                    0
                } else {
                    x.bits << by
                }
            } else if x.signed {
                (x.to_i128() >> by.min(127)) as u128
            } else if by >= x.width {
                0
            } else {
                x.bits >> by
            };
            Some(Value::Bits(Bits::new(x.width, x.signed, bits)))
        }
        Value::Unsized(x) => {
            let by = u32::try_from(amount).ok()?;
            if op == BinaryOp::Shl {
                x.checked_mul(1i128.checked_shl(by)?).map(Value::Unsized)
            } else {
                Some(Value::Unsized(x >> by.min(127)))
            }
        }
        _ => None,
    }
}

/// `a ++ b`: `a`'s bits above `b`'s, the width the sum, the signedness `a`'s.
fn concat(a: Value, b: Value) -> Option<Value> {
    let (Value::Bits(x), Value::Bits(y)) = (a, b) else {
        return None;
    };
    let width = x.width.checked_add(y.width).filter(|w| *w <= 128)?;
    let high = x.bits.checked_shl(y.width).unwrap_or(0);
    Some(Value::Bits(Bits::new(width, x.signed, high | y.bits)))
}

/// `-x` and `~x` on integers.
pub fn negate(value: Value) -> Option<Value> {
    match value {
        Value::Bits(x) => Some(Value::Bits(Bits::new(
            x.width,
            x.signed,
            x.bits.wrapping_neg(),
        ))),
        Value::Unsized(v) => v.checked_neg().map(Value::Unsized),
        _ => None,
    }
}

/// `~x`.
pub fn complement(value: Value) -> Option<Value> {
    match value {
        Value::Bits(x) => Some(Value::Bits(Bits::new(x.width, x.signed, !x.bits))),
        Value::Unsized(v) => Some(Value::Unsized(!v)),
        _ => None,
    }
}

/// `(to) value`: integers are taken at their mathematical value (sign-extended for `int<w>`) and
/// reduced modulo 2^w of the target; `bool` and `bit<1>` convert both ways; a serializable enum is
/// its underlying integer already.
pub fn cast(types: &TypeTable, to: &Type, value: Value) -> Option<Value> {
    let target = match to {
        Type::Enum(name) => types
            .enums
            .get(name)
            .and_then(|i| i.underlying.clone())
            .unwrap_or(Type::Bool),
        other => other.clone(),
    };
    match (target, value) {
        (Type::Bool, Value::Bool(b)) => Some(Value::Bool(b)),
        (Type::Bool, other) => Some(Value::Bool(other.as_bits()? & 1 == 1)),
        (Type::Bit(w), Value::Bits(x)) => Some(Value::Bits(Bits::new(w, false, x.extended()))),
        (Type::Int(w), Value::Bits(x)) => Some(Value::Bits(Bits::new(w, true, x.extended()))),
        (Type::Bit(w), Value::Unsized(v)) => Some(Value::Bits(Bits::from_i128(w, false, v))),
        (Type::Int(w), Value::Unsized(v)) => Some(Value::Bits(Bits::from_i128(w, true, v))),
        (Type::Bit(w), Value::Bool(b)) => Some(Value::Bits(Bits::new(w, false, u128::from(b)))),
        (Type::Int(w), Value::Bool(b)) => Some(Value::Bits(Bits::new(w, true, u128::from(b)))),
        (_, other) => Some(other),
    }
}

/// `value[hi:lo]` as `bit<hi-lo+1>`.
pub fn slice(value: &Value, hi: u32, lo: u32) -> Option<Value> {
    let bits = value.as_bits()?;
    let width = hi.checked_sub(lo)?.checked_add(1)?;
    Some(Value::Bits(Bits::new(
        width,
        false,
        bits.checked_shr(lo).unwrap_or(0),
    )))
}

/// `target[hi:lo] = part`: replaces those bits of `target`.
pub fn write_slice(target: &mut Value, hi: u32, lo: u32, part: &Value) -> Option<()> {
    let Value::Bits(x) = target else {
        return None;
    };
    let width = hi.checked_sub(lo)?.checked_add(1)?;
    let field_mask = mask(width).checked_shl(lo).unwrap_or(0);
    let new = (part.as_bits()? & mask(width)).checked_shl(lo).unwrap_or(0);
    *x = Bits::new(x.width, x.signed, (x.bits & !field_mask) | new);
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bit(w: u32, v: u128) -> Value {
        Value::Bits(Bits::new(w, false, v))
    }

    fn int(w: u32, v: i128) -> Value {
        Value::Bits(Bits::from_i128(w, true, v))
    }

    #[test]
    fn arithmetic_wraps_modulo_the_width() {
        assert_eq!(
            binary(BinaryOp::Sub, bit(8, 0), bit(8, 1)),
            Some(bit(8, 255))
        );
        assert_eq!(
            binary(BinaryOp::Add, bit(8, 200), bit(8, 100)),
            Some(bit(8, 44))
        );
        assert_eq!(binary(BinaryOp::Mul, bit(4, 5), bit(4, 5)), Some(bit(4, 9)));
        assert_eq!(
            binary(BinaryOp::Add, bit(128, u128::MAX), bit(128, 2)),
            Some(bit(128, 1))
        );
    }

    #[test]
    fn saturating_operators_clamp() {
        assert_eq!(
            binary(BinaryOp::SatAdd, bit(8, 200), bit(8, 100)),
            Some(bit(8, 255))
        );
        assert_eq!(
            binary(BinaryOp::SatSub, bit(8, 1), bit(8, 2)),
            Some(bit(8, 0))
        );
        assert_eq!(
            binary(BinaryOp::SatAdd, int(8, 100), int(8, 100)),
            Some(int(8, 127))
        );
        assert_eq!(
            binary(BinaryOp::SatSub, int(8, -100), int(8, 100)),
            Some(int(8, -128))
        );
    }

    #[test]
    fn signedness_changes_comparison_and_right_shift() {
        assert_eq!(
            binary(BinaryOp::Lt, int(8, -1), int(8, 1)),
            Some(Value::Bool(true))
        );
        assert_eq!(
            binary(BinaryOp::Lt, bit(8, 255), bit(8, 1)),
            Some(Value::Bool(false))
        );
        assert_eq!(
            binary(BinaryOp::Shr, int(8, -4), bit(8, 1)),
            Some(int(8, -2))
        );
        assert_eq!(
            binary(BinaryOp::Shr, bit(8, 0xfc), bit(8, 1)),
            Some(bit(8, 0x7e))
        );
        assert_eq!(binary(BinaryOp::Shl, bit(8, 1), bit(8, 9)), Some(bit(8, 0)));
    }

    #[test]
    fn division_by_zero_gives_bpf_results() {
        assert_eq!(binary(BinaryOp::Div, bit(8, 7), bit(8, 0)), Some(bit(8, 0)));
        assert_eq!(binary(BinaryOp::Mod, bit(8, 7), bit(8, 0)), Some(bit(8, 7)));
    }

    #[test]
    fn concatenation_slices_and_casts() {
        assert_eq!(
            binary(BinaryOp::Concat, bit(4, 0xa), bit(8, 0x5b)),
            Some(bit(12, 0xa5b))
        );
        assert_eq!(slice(&bit(16, 0xabcd), 11, 4), Some(bit(8, 0xbc)));
        let mut target = bit(16, 0xffff);
        assert_eq!(write_slice(&mut target, 7, 4, &bit(4, 0)), Some(()));
        assert_eq!(target, bit(16, 0xff0f));
        let types = TypeTable::default();
        assert_eq!(
            cast(&types, &Type::Bit(16), int(8, -1)),
            Some(bit(16, 0xffff))
        );
        assert_eq!(
            cast(&types, &Type::Bit(4), bit(16, 0x1234)),
            Some(bit(4, 4))
        );
        assert_eq!(
            cast(&types, &Type::Bool, bit(1, 1)),
            Some(Value::Bool(true))
        );
    }
}
