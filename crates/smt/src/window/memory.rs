//! The memory two windows run on: the initial bytes, shared by both (inputs of the formula),
//! and the bytes each window writes, per region.
//!
//! An initial byte at a constant offset is one 8-bit variable; one at a symbolic offset is a
//! variable of its own, tied to every other initial byte of the region by Ackermann's reduction
//! (equal offsets read equal bytes), as the path checker's memory does (see `crate::memory` for
//! why constraints beat an array or an if-then-else chain). A window's writes are kept in order;
//! a read scans them newest first, which needs no solver where both offsets are constants.

use std::collections::HashMap;

use z3::ast::{Ast, Bool, BV};

use super::value::WinValue;
use super::WindowRegion;
use crate::value::Bits;

/// One byte of memory.
#[derive(Clone, Debug)]
pub enum Byte {
    Const(u8),
    /// An 8-bit formula.
    Sym(BV),
    /// Byte `index` (little endian) of a pointer stored whole.
    Ptr {
        region: WindowRegion,
        offset: Bits,
        index: u8,
    },
    Invalid(&'static str),
}

impl Byte {
    /// Byte `index` of a scalar.
    pub fn of_scalar(bits: &Bits, index: u32) -> Byte {
        match bits {
            Bits::Const(v) => Byte::Const((v >> (8 * index)) as u8),
            Bits::Sym(bv) => Byte::Sym(bv.extract(8 * index + 7, 8 * index).simplify()),
        }
    }

    /// The byte as an 8-bit formula, for a number's byte.
    pub fn bv(&self) -> Option<BV> {
        match self {
            Byte::Const(b) => Some(BV::from_u64(u64::from(*b), 8)),
            Byte::Sym(bv) => Some(bv.clone()),
            Byte::Ptr { .. } | Byte::Invalid(_) => None,
        }
    }
}

/// The initial contents of every region, read by either window.
#[derive(Debug, Default)]
pub struct Inputs {
    /// The variable of the initial byte at a constant offset.
    concrete: HashMap<(WindowRegion, u64), BV>,
    /// Initial bytes read at symbolic offsets: region, offset and variable.
    symbolic: Vec<(WindowRegion, BV, BV)>,
    /// Constraints the precondition assumes: Ackermann's, and offsets within their bounds.
    pub constraints: Vec<Bool>,
    /// Whether a window loaded a pointer field of the context (whose bytes a counterexample
    /// then holds).
    pub context_pointers: bool,
    /// Every variable of the formula and what it stands for, for guessing values.
    pub variables: Vec<(BV, Variable)>,
}

/// What a variable of the formula stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variable {
    /// A register's 64-bit number.
    Scalar,
    /// A pointer's unknown offset.
    Offset,
    /// An initial byte of memory.
    Byte,
}

impl Inputs {
    /// The initial byte of `region` at `offset`.
    pub fn initial(&mut self, region: WindowRegion, offset: &Bits) -> BV {
        match offset {
            Bits::Const(o) => {
                if let Some(byte) = self.concrete.get(&(region, *o)) {
                    return byte.clone();
                }
                let byte = BV::new_const(format!("{region:?}@{}", *o as i64), 8);
                let at = BV::from_u64(*o, 64);
                for (r, other, var) in &self.symbolic {
                    if *r == region {
                        self.constraints.push(other.eq(&at).implies(var.eq(&byte)));
                    }
                }
                self.concrete.insert((region, *o), byte.clone());
                self.variables.push((byte.clone(), Variable::Byte));
                byte
            }
            Bits::Sym(o) => {
                // The same offset term (Z3 shares equal terms) reads the same variable, so two
                // windows reading alike give alike formulas that fold without the solver.
                if let Some((_, _, var)) = self
                    .symbolic
                    .iter()
                    .find(|(r, other, _)| *r == region && other == o)
                {
                    return var.clone();
                }
                let byte = BV::new_const(format!("{region:?}@sym{}", self.symbolic.len()), 8);
                for (r, other, var) in &self.symbolic {
                    if *r == region {
                        self.constraints.push(other.eq(o).implies(var.eq(&byte)));
                    }
                }
                for ((r, at), var) in &self.concrete {
                    if *r == region {
                        let at = BV::from_u64(*at, 64);
                        self.constraints.push(o.eq(&at).implies(var.eq(&byte)));
                    }
                }
                self.symbolic.push((region, o.clone(), byte.clone()));
                self.variables.push((byte.clone(), Variable::Byte));
                byte
            }
        }
    }

    /// Every initial byte read at a constant offset: region, offset, variable.
    pub fn concrete(&self) -> impl Iterator<Item = (WindowRegion, u64, &BV)> {
        self.concrete.iter().map(|((r, o), v)| (*r, *o, v))
    }

    /// Every initial byte read at a symbolic offset: region, offset, variable.
    pub fn symbolic(&self) -> impl Iterator<Item = &(WindowRegion, BV, BV)> {
        self.symbolic.iter()
    }
}

/// The bytes one window wrote, in order.
#[derive(Debug, Default)]
pub struct Writes {
    pub bytes: Vec<(WindowRegion, Bits, Byte)>,
}

/// `offset + k` for memory addressing.
pub fn offset_plus(offset: &Bits, k: u64) -> Bits {
    match offset {
        Bits::Const(o) => Bits::Const(o.wrapping_add(k)),
        Bits::Sym(_) if k == 0 => offset.clone(),
        Bits::Sym(o) => Bits::Sym(o.bvadd(BV::from_u64(k, 64))),
    }
}

impl Writes {
    /// The byte of `region` at `offset` now: the newest write there, over the initial byte.
    pub fn read(&self, inputs: &mut Inputs, region: WindowRegion, offset: &Bits) -> Byte {
        // Writes that may be at `offset`, newest first, each with the condition that it is.
        let mut maybe: Vec<(Bool, &Byte)> = Vec::new();
        let mut found = None;
        for (r, at, byte) in self.bytes.iter().rev() {
            if *r != region {
                continue;
            }
            let same = match (offset, at) {
                (Bits::Const(a), Bits::Const(b)) => Bool::from_bool(a == b),
                _ => offset.bv().eq(at.bv()).simplify(),
            };
            match same.as_bool() {
                Some(true) => {
                    found = Some(byte.clone());
                    break;
                }
                Some(false) => {}
                None => maybe.push((same, byte)),
            }
        }
        let mut value = found.unwrap_or_else(|| Byte::Sym(inputs.initial(region, offset)));
        for (same, byte) in maybe.into_iter().rev() {
            value = match (byte.bv(), value.bv()) {
                (Some(then), Some(otherwise)) => Byte::Sym(same.ite(&then, &otherwise)),
                _ => Byte::Invalid("a pointer's byte where a symbolic offset may or may not be"),
            };
        }
        value
    }
}

/// The value of `size` bytes read little endian: a number, a pointer read back whole, or
/// invalid (part of a pointer).
pub fn assemble(bytes: &[Byte]) -> WinValue {
    if let Some(Byte::Invalid(why)) = bytes.iter().find(|b| matches!(b, Byte::Invalid(_))) {
        return WinValue::Invalid(why);
    }
    if let Some(Byte::Ptr { region, offset, .. }) = bytes.first() {
        let whole = bytes.len() == 8
            && bytes.iter().enumerate().all(|(i, b)| match b {
                Byte::Ptr {
                    region: r,
                    offset: o,
                    index,
                } => r == region && usize::from(*index) == i && same_bits(o, offset),
                _ => false,
            });
        return if whole {
            WinValue::Ptr {
                region: *region,
                offset: offset.clone(),
            }
        } else {
            WinValue::Invalid("a load of part of a stored pointer")
        };
    }
    let mut constant = 0u64;
    let mut all_constant = true;
    for (i, b) in bytes.iter().enumerate() {
        match b {
            Byte::Const(v) => constant |= u64::from(*v) << (8 * i),
            Byte::Sym(_) => all_constant = false,
            Byte::Ptr { .. } | Byte::Invalid(_) => {
                return WinValue::Invalid("a load of part of a stored pointer")
            }
        }
    }
    if all_constant {
        return WinValue::Scalar(Bits::Const(constant));
    }
    let mut value: Option<BV> = None;
    for b in bytes.iter().rev() {
        let Some(byte) = b.bv() else {
            return WinValue::Invalid("a load of part of a stored pointer");
        };
        value = Some(match value {
            None => byte,
            Some(high) => high.concat(&byte),
        });
    }
    match value {
        Some(v) => {
            let width = v.get_size();
            let v = if width < 64 {
                v.zero_ext(64 - width)
            } else {
                v
            };
            WinValue::Scalar(Bits::Sym(v.simplify()))
        }
        None => WinValue::Scalar(Bits::Const(0)),
    }
}

/// Whether two offsets are the same term (structurally).
pub fn same_bits(a: &Bits, b: &Bits) -> bool {
    match (a, b) {
        (Bits::Const(x), Bits::Const(y)) => x == y,
        (Bits::Sym(x), Bits::Sym(y)) => x == y,
        _ => false,
    }
}
