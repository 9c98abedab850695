//! The memory of one region: bytes at concrete offsets kept as they were written, over a Z3
//! array for the rest.
//!
//! Most accesses are at constant offsets (stack slots, header fields at fixed positions), so the
//! bytes written there are kept per offset and read back without the solver; only an access at
//! a symbolic offset folds them into the array (`store` terms) and reads or writes it with
//! `select`/`store`. A pointer spilled to memory (an 8-byte store of a pointer, as the verifier
//! tracks spills) is kept whole and read back whole.

use std::collections::BTreeMap;

use linerate_sem::Concrete;
use z3::ast::{lambda_const, Array, Ast, Bool, Dynamic, BV};
use z3::{DeclKind, Sort};

use crate::value::{Bits, SymValue};

/// One byte of memory.
#[derive(Clone, Debug)]
pub enum Byte {
    Const(u8),
    Sym(BV),
    /// Byte `index` of a spilled pointer.
    Pointer {
        value: Box<SymValue>,
        index: u8,
    },
}

impl Byte {
    /// The byte as an 8-bit formula (`None` for a piece of a pointer).
    fn bv(&self) -> Option<BV> {
        match self {
            Byte::Const(b) => Some(BV::from_u64(u64::from(*b), 8)),
            Byte::Sym(bv) => Some(bv.clone()),
            Byte::Pointer { .. } => None,
        }
    }

    /// The low byte of a scalar.
    pub fn of_scalar(bits: &Bits, index: u32) -> Byte {
        match bits {
            Bits::Const(v) => Byte::Const((v >> (8 * index)) as u8),
            Bits::Sym(bv) => Byte::Sym(bv.extract(8 * index + 7, 8 * index).simplify()),
        }
    }

    /// The byte as a zero-extended 64-bit scalar.
    pub fn to_value(&self) -> Option<SymValue> {
        match self {
            Byte::Const(b) => Some(SymValue::constant(u64::from(*b))),
            Byte::Sym(bv) => Some(SymValue::symbolic(bv.zero_ext(56))),
            Byte::Pointer { .. } => None,
        }
    }
}

/// One region's memory.
#[derive(Clone, Debug)]
pub struct Memory {
    /// What offsets not in `cells` hold.
    base: Array,
    cells: BTreeMap<u64, Byte>,
}

/// The sort of a region's array: 64-bit offsets to bytes.
fn sorts() -> (Sort, Sort) {
    (Sort::bitvector(64), Sort::bitvector(8))
}

impl Memory {
    /// Memory holding zeros.
    pub fn zeroed() -> Memory {
        let (domain, _) = sorts();
        Memory {
            base: Array::const_array(&domain, &BV::from_u64(0, 8)),
            cells: BTreeMap::new(),
        }
    }

    /// Memory holding the unknown contents `name` (an input of the formula).
    pub fn input(name: &str) -> Memory {
        let (domain, range) = sorts();
        Memory {
            base: Array::new_const(name, &domain, &range),
            cells: BTreeMap::new(),
        }
    }

    /// Makes offsets in `from..to` hold zero (nothing where `to <= from`).
    pub fn zero_range(&mut self, from: &BV, to: &BV) {
        if let (Some(f), Some(t)) = (from.as_u64(), to.as_u64()) {
            for o in f..t.min(f.saturating_add(1 << 16)) {
                self.cells.insert(o, Byte::Const(0));
            }
            return;
        }
        // A constant growth (`bpf_xdp_adjust_tail(ctx, 8)`) is a few stores; only a growth by
        // a symbolic amount needs an array term (where Z3's array theory may answer unknown).
        if let Some(delta) = to.bvsub(from).simplify().as_u64() {
            if delta <= 1 << 16 || delta > u64::MAX - (1 << 16) {
                // A shrink (a negative delta) zeroes nothing.
                if delta <= 1 << 16 {
                    for k in 0..delta {
                        self.set_byte(&add(&Bits::Sym(from.clone()), k), Byte::Const(0));
                    }
                }
                return;
            }
        }
        self.flush();
        let i = BV::new_const("zero_index", 64);
        let inside = Bool::and(&[&from.bvule(&i), &i.bvult(to)]);
        let body = inside.ite(&BV::from_u64(0, 8), &self.select(&i));
        self.base = lambda_const(&[&i], &Dynamic::from_ast(&body));
    }

    /// The input array itself, for reading a model.
    pub fn base(&self) -> &Array {
        &self.base
    }

    /// Writes the constant `bytes` at `offset` (initial contents).
    pub fn fill(&mut self, offset: u64, bytes: &[u8]) {
        for (i, b) in bytes.iter().enumerate() {
            self.cells.insert(offset + i as u64, Byte::Const(*b));
        }
    }

    /// Folds the bytes kept per offset into the array, so that a symbolic access sees them.
    fn flush(&mut self) {
        let cells = std::mem::take(&mut self.cells);
        for (offset, byte) in cells {
            match byte.bv() {
                Some(bv) => self.base = self.base.store(&BV::from_u64(offset, 64), &bv),
                None => {
                    self.cells.insert(offset, byte);
                }
            }
        }
    }

    /// The byte at `offset`.
    pub fn byte(&mut self, offset: &Bits) -> Byte {
        match offset {
            Bits::Const(o) => match self.cells.get(o) {
                Some(b) => b.clone(),
                None => Byte::Sym(self.select(&BV::from_u64(*o, 64))),
            },
            Bits::Sym(bv) => {
                if let Some(byte) = leaves(bv).and_then(|l| self.byte_of_choice(&l)) {
                    return byte;
                }
                self.flush();
                Byte::Sym(self.select(bv))
            }
        }
    }

    /// The byte at whichever of the constant offsets holds (the conditions are exhaustive):
    /// no array term for an offset that is one of a few constants (a map value's slot chosen by
    /// comparing keys).
    fn byte_of_choice(&mut self, choice: &[(Bool, u64)]) -> Option<Byte> {
        let (_, last) = choice.last()?;
        let mut acc = self.byte(&Bits::Const(*last)).bv()?;
        for (cond, o) in choice.iter().rev().skip(1) {
            let b = self.byte(&Bits::Const(*o)).bv()?;
            acc = cond.ite(&b, &acc);
        }
        Some(Byte::Sym(acc))
    }

    fn select(&self, index: &BV) -> BV {
        self.base
            .select(index)
            .as_bv()
            .expect("a region's array holds bit-vector bytes")
    }

    /// Writes `byte` at `offset`.
    pub fn set_byte(&mut self, offset: &Bits, byte: Byte) {
        match offset {
            Bits::Const(o) => {
                self.cells.insert(*o, byte);
            }
            Bits::Sym(bv) => {
                let value = byte.bv().unwrap_or_else(|| BV::from_u64(0, 8));
                if let Some(choice) = leaves(bv) {
                    for (cond, o) in choice {
                        let at = Bits::Const(o);
                        if let Some(old) = self.byte(&at).bv() {
                            self.cells.insert(o, Byte::Sym(cond.ite(&value, &old)));
                            continue;
                        }
                        // A spilled pointer in the way: the array takes the store.
                        self.flush();
                        self.base = self.base.store(bv, &value);
                        return;
                    }
                    return;
                }
                self.flush();
                self.base = self.base.store(bv, &value);
            }
        }
    }

    /// Reads `len` bytes from `offset` as a little-endian value; `Err` for a read of part of a
    /// spilled pointer.
    pub fn load(&mut self, offset: &Bits, len: u32) -> Result<SymValue, &'static str> {
        let bytes: Vec<Byte> = (0..len)
            .map(|i| self.byte(&add(offset, u64::from(i))))
            .collect();
        if let Some(Byte::Pointer { value, index: 0 }) = bytes.first() {
            let whole = len == 8
                && bytes.iter().enumerate().all(|(i, b)| {
                    matches!(b, Byte::Pointer { value: v, index } if usize::from(*index) == i
                        && same(v, value))
                });
            return if whole {
                Ok((**value).clone())
            } else {
                Err("a load of part of a spilled pointer")
            };
        }
        let mut constant = 0u64;
        let mut all_const = true;
        for (i, b) in bytes.iter().enumerate() {
            match b {
                Byte::Const(v) => constant |= u64::from(*v) << (8 * i),
                Byte::Sym(_) => all_const = false,
                Byte::Pointer { .. } => return Err("a load of part of a spilled pointer"),
            }
        }
        if all_const {
            return Ok(SymValue::constant(constant));
        }
        let mut word: Option<BV> = None;
        for b in bytes.iter().rev() {
            let bv = b.bv().ok_or("a load of part of a spilled pointer")?;
            word = Some(match word {
                None => bv,
                Some(w) => w.concat(&bv),
            });
        }
        let word = word.ok_or("a load of no bytes")?;
        Ok(SymValue::symbolic(word.zero_ext(64 - 8 * len)))
    }

    /// Writes the low `len` bytes of `value` at `offset`.
    pub fn store(&mut self, offset: &Bits, len: u32, value: &SymValue) -> Result<(), &'static str> {
        match value.tag {
            crate::value::Tag::Low32 if len > 4 => {
                Err("a store of a value whose high half is undefined")
            }
            crate::value::Tag::Scalar | crate::value::Tag::Low32 => {
                for i in 0..len {
                    self.set_byte(&add(offset, u64::from(i)), Byte::of_scalar(&value.bits, i));
                }
                Ok(())
            }
            crate::value::Tag::Ptr { .. } if len == 8 && offset.as_const().is_some() => {
                for i in 0..8u8 {
                    self.set_byte(
                        &add(offset, u64::from(i)),
                        Byte::Pointer {
                            value: Box::new(value.clone()),
                            index: i,
                        },
                    );
                }
                Ok(())
            }
            crate::value::Tag::Ptr { .. } => {
                Err("a store of a pointer other than an 8-byte spill at a constant offset")
            }
            crate::value::Tag::Invalid(why) => Err(why),
        }
    }
}

/// Whether two spilled pointers are the same spill (same region and offset formula).
fn same(a: &SymValue, b: &SymValue) -> bool {
    a.region() == b.region()
        && match (&a.bits, &b.bits) {
            (Bits::Const(x), Bits::Const(y)) => x == y,
            (Bits::Sym(x), Bits::Sym(y)) => x == y,
            _ => false,
        }
}

/// `offset + n`.
pub fn add(offset: &Bits, n: u64) -> Bits {
    match offset {
        Bits::Const(o) => Bits::Const(o.wrapping_add(n)),
        Bits::Sym(_) if n == 0 => offset.clone(),
        Bits::Sym(bv) => Bits::Sym(bv.bvadd(BV::from_u64(n, 64))),
    }
}

/// Most constants a symbolic offset is split into ([`leaves`]).
const MAX_LEAVES: usize = 32;

/// The offset as `(condition, constant)` pairs whose conditions are exhaustive and exclusive,
/// where it is an if-then-else tree of constants (through additions, ors and shifts by
/// constants); `None` otherwise.
fn leaves(bv: &BV) -> Option<Vec<(Bool, u64)>> {
    if let Some(v) = bv.as_u64() {
        return Some(vec![(Bool::from_bool(true), v)]);
    }
    if bv.get_size() != 64 || !bv.is_app() || bv.num_children() > 3 {
        return None;
    }
    let children = bv.children();
    let out: Vec<(Bool, u64)> = match bv.decl().kind() {
        DeclKind::Ite => {
            let cond = children[0].as_bool()?;
            let a = leaves(&children[1].as_bv()?)?;
            let b = leaves(&children[2].as_bv()?)?;
            let not = cond.not();
            let both = |c: &Bool, x: &Bool| match x.as_bool() {
                Some(true) => c.clone(),
                _ => Bool::and(&[c, x]),
            };
            a.iter()
                .map(|(c, v)| (both(&cond, c), *v))
                .chain(b.iter().map(|(c, v)| (both(&not, c), *v)))
                .collect()
        }
        kind @ (DeclKind::Badd | DeclKind::Bor | DeclKind::Bshl) if children.len() == 2 => {
            let op = match kind {
                DeclKind::Badd => linerate_sem::BinOp::Add,
                DeclKind::Bor => linerate_sem::BinOp::Or,
                _ => linerate_sem::BinOp::Shl,
            };
            let (x, y) = (children[0].as_bv()?, children[1].as_bv()?);
            match (x.as_u64(), y.as_u64()) {
                // Z3 shifts by 64 or more to zero, the interpreter's primitive modulo 64.
                (_, Some(k)) if op == linerate_sem::BinOp::Shl && k >= 64 => return None,
                (_, Some(k)) => leaves(&x)?
                    .into_iter()
                    .map(|(c, v)| (c, Concrete::eval_binary(op, v, k)))
                    .collect(),
                (Some(k), None) if op != linerate_sem::BinOp::Shl => leaves(&y)?
                    .into_iter()
                    .map(|(c, v)| (c, Concrete::eval_binary(op, k, v)))
                    .collect(),
                _ => return None,
            }
        }
        _ => return None,
    };
    (out.len() <= MAX_LEAVES).then_some(out)
}
