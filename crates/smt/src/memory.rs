//! The memory of one region: bytes at concrete offsets kept as they were written, over the
//! region's initial contents and the writes at symbolic offsets.
//!
//! Most accesses are at constant offsets (stack slots, header fields at fixed positions), so the
//! bytes written there are kept per offset and read back without the solver. What lies beneath
//! them is spelled out without Z3's array theory, whose solver is slow on these formulas (a
//! DNS name's label walk: over 30 s for one path) where plain bit-vectors let Z3 bit-blast
//! (under 1 s): the initial contents are zero or an input, one 8-bit variable per offset read
//! (reads at symbolic offsets are defined by comparing the offset with every earlier read's,
//! Ackermann's reduction, so equal offsets read equal bytes); writes at symbolic offsets, and
//! the zeroing of a range by a packet's growth, are layers above, which a read compares its
//! offset with, newest first. A pointer spilled to memory (an 8-byte store of a pointer, as the
//! verifier tracks spills) is kept whole and read back whole.
//!
//! A symbolic offset that those comparisons use is first given a name: a fresh variable defined
//! equal to the offset ([`Memory::take_definitions`], asserted by the machine on the path). Compared
//! with the offset's formula itself, Z3's rewriter solves each `offset == k` for one summand
//! (a DNS label walk's offset is a sum of every earlier label's length): one adder per compared
//! offset and per earlier read, hundreds of thousands of SAT variables and no answer within 10 s
//! on the walk's slowest path; compared with the name, the sum is built once per read.

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use linerate_sem::Concrete;
use z3::ast::{Ast, Bool, Dynamic, BV};
use z3::DeclKind;

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

    /// Byte `index` of a scalar.
    pub fn of_scalar(bits: &Bits, index: u32) -> Byte {
        match bits {
            Bits::Const(v) => Byte::Const((v >> (8 * index)) as u8),
            Bits::Sym(bv) => Byte::Sym(byte_of(bv, 8 * index)),
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

/// Terms in a value beyond which a stored byte of it is not simplified ([`byte_of`]).
const MAX_SIMPLIFIED_TERMS: usize = 256;

/// Bits `lo..lo + 8` of `bv`, simplified where the value is small. Z3's simplifier pushes the
/// extraction down through the value's operations: a walk, and a new term, as large as the value
/// at every byte stored, which an accumulator stored at each of the path explosion's 48 stages
/// made quadratic in the path (6–13 s of its 148-decision paths went there). A larger value gives
/// the byte a zero extension or concatenation building it holds there, else an extraction.
/// (Never simplifying at all sent a check of `xdp_quic_lb_nfp_v6` from 4 s to a time-out: the
/// simplified bytes of its shifted and masked words are what the solver reasons well about.)
fn byte_of(bv: &BV, lo: u32) -> BV {
    if let Some(v) = bv.as_u64() {
        return BV::from_u64((v >> lo) & 0xff, 8);
    }
    if bv.get_size() == 8 && lo == 0 {
        return bv.clone();
    }
    if smaller_than(bv, MAX_SIMPLIFIED_TERMS) {
        return bv.extract(lo + 7, lo).simplify();
    }
    if bv.is_app() {
        let parts: Option<Vec<BV>> = bv.children().iter().map(|c| c.as_bv()).collect();
        match (bv.decl().kind(), parts) {
            (DeclKind::ZeroExt, Some(parts)) if parts.len() == 1 => {
                let width = parts[0].get_size();
                if lo >= width {
                    return BV::from_u64(0, 8);
                }
                if lo + 8 <= width {
                    return byte_of(&parts[0], lo);
                }
            }
            (DeclKind::Concat, Some(parts)) => {
                // The first part is the most significant.
                let mut base = bv.get_size();
                for part in &parts {
                    base -= part.get_size();
                    if lo >= base && lo + 8 <= base + part.get_size() {
                        return byte_of(part, lo - base);
                    }
                }
            }
            _ => {}
        }
    }
    bv.extract(lo + 7, lo)
}

/// Whether `bv` is made of fewer than `limit` distinct terms (counting stops there).
fn smaller_than(bv: &BV, limit: usize) -> bool {
    let mut seen: HashSet<Dynamic> = HashSet::new();
    let mut todo = vec![Dynamic::from_ast(bv)];
    while let Some(term) = todo.pop() {
        if seen.len() >= limit {
            return false;
        }
        if seen.insert(term.clone()) && term.is_app() {
            todo.extend(term.children());
        }
    }
    true
}

/// Unknown initial contents (an input of the formula) and the offsets read from them so far.
///
/// A read at a symbolic offset gives a variable of its own, equal to the byte of each earlier
/// read (constant or symbolic) where their offsets are equal: constraints, Ackermann's
/// reduction, never an if-then-else in the byte's formula. Nesting every earlier read's choice
/// into each later one's (a DNS label walk over the packet, each offset a sum of earlier
/// bytes) gave Z3 no answer for xdp_dns_nfp's walk in 10 s; a flat if-then-else among the
/// constant offsets read was still slow (most likely because Z3's rewriter pushes a comparison
/// of the byte, `len != 0`, into every branch, so the bound the walk's sum needs, each label
/// adding at least 2, is no longer a fact about one variable): proving that 32 labels cannot end
/// on byte 63 took 35 s as an if-then-else and 1.2 s as constraints on a variable (a
/// 32-label model of the walk), and the real walk's first check went from 9 s to 2.3 s.
#[derive(Clone, Debug)]
struct Input {
    name: String,
    /// Every read at a constant offset, in order: the offset and the byte it gave.
    reads: Vec<(u64, BV)>,
    /// Where each offset of `reads` is in it (a map value of 64 KiB is read whole when a lookup
    /// introduces it; searching the list per read made that quadratic, the whole of the paper
    /// artifact's path explosion's time). The list keeps the order: the definitions of a
    /// symbolic read follow it, and the solver's time depends on their order (in offset order,
    /// a check of `xdp_quic_lb_nfp_v6` took 5 s instead of 2).
    read_at: HashMap<u64, usize>,
    /// Every read at a symbolic offset, in order: the offset and its variable.
    symbolic: Vec<(BV, BV)>,
}

impl Input {
    /// The initial byte at `offset`, recorded as read; the constraints that tie it to earlier
    /// reads go to `definitions`.
    fn read(&mut self, offset: &Bits, definitions: &mut Vec<Bool>) -> BV {
        match offset {
            Bits::Const(o) => {
                if let Some(&i) = self.read_at.get(o) {
                    return self.reads[i].1.clone();
                }
                let byte = self.lookup(*o);
                self.read_at.insert(*o, self.reads.len());
                self.reads.push((*o, byte.clone()));
                byte
            }
            Bits::Sym(o) => {
                // The same offset's formula read again: the same byte, without a variable.
                if let Some((_, var)) = self.symbolic.iter().find(|(other, _)| other == o) {
                    return var.clone();
                }
                let own = BV::new_const(format!("{}#{}", self.name, fresh_number()), 8);
                for (other, var) in &self.symbolic {
                    definitions.push(o.eq(other).implies(own.eq(var)));
                }
                for (at, b) in &self.reads {
                    definitions.push(o.eq(BV::from_u64(*at, 64)).implies(own.eq(b)));
                }
                self.symbolic.push((o.clone(), own.clone()));
                own
            }
        }
    }

    /// The initial byte at the constant offset `offset` given the reads so far, without
    /// recording it: the byte read there, else the variable of a symbolic read at an equal
    /// offset, else a variable named after the offset (so that a witness can read it).
    fn lookup(&self, offset: u64) -> BV {
        if let Some(&i) = self.read_at.get(&offset) {
            return self.reads[i].1.clone();
        }
        let at = BV::from_u64(offset, 64);
        let mut byte = BV::new_const(format!("{}@{offset}", self.name), 8);
        for (o, var) in self.symbolic.iter().rev() {
            byte = at.eq(o).ite(var, &byte);
        }
        byte
    }
}

/// A change below the bytes kept per offset, in order of writing.
#[derive(Clone, Debug)]
enum Layer {
    /// A byte written at an offset.
    Store(Bits, BV),
    /// Offsets in `from..to` zeroed (a packet grown by a symbolic amount).
    Zero(BV, BV),
}

/// One region's memory.
#[derive(Clone, Debug)]
pub struct Memory {
    /// The contents before the run: an input, or zeros (`None`).
    input: Option<Input>,
    /// Writes folded beneath `cells`, oldest first.
    layers: Vec<Layer>,
    cells: BTreeMap<u64, Byte>,
    /// Definitions of the offsets named since the machine last took them.
    definitions: Vec<Bool>,
    /// Every offset named so far and its name: an offset read and then written (a counter
    /// incremented in place) keeps one name, so that the store's offset is the read's.
    names: HashMap<BV, BV>,
    /// Whether symbolic offsets are named ([`Memory::naming_offsets`]).
    naming: bool,
}

thread_local! {
    /// Variables made so far on this thread (Z3 terms belong to a thread's context): each name
    /// is new, so a constraint made on an abandoned path never constrains a later one.
    static NAMED: Cell<u64> = const { Cell::new(0) };
}

/// A number no variable made on this thread had yet.
fn fresh_number() -> u64 {
    NAMED.with(|named| {
        let n = named.get();
        named.set(n.wrapping_add(1));
        n
    })
}

/// Whether `bv` is a variable, or a variable plus a constant: an offset comparisons can use as
/// it is.
fn is_named(bv: &BV) -> bool {
    let variable = |b: &BV| b.is_const() && b.as_u64().is_none();
    if variable(bv) {
        return true;
    }
    if !bv.is_app() || bv.decl().kind() != DeclKind::Badd || bv.num_children() != 2 {
        return false;
    }
    let children = bv.children();
    let (Some(a), Some(b)) = (children[0].as_bv(), children[1].as_bv()) else {
        return false;
    };
    (variable(&a) && b.as_u64().is_some()) || (variable(&b) && a.as_u64().is_some())
}

impl Memory {
    /// Memory holding zeros.
    pub fn zeroed() -> Memory {
        Memory {
            input: None,
            layers: Vec::new(),
            cells: BTreeMap::new(),
            definitions: Vec::new(),
            names: HashMap::new(),
            naming: false,
        }
    }

    /// Memory holding the unknown contents `name` (an input of the formula).
    pub fn input(name: &str) -> Memory {
        Memory {
            input: Some(Input {
                name: name.to_string(),
                reads: Vec::new(),
                read_at: HashMap::new(),
                symbolic: Vec::new(),
            }),
            layers: Vec::new(),
            cells: BTreeMap::new(),
            definitions: Vec::new(),
            names: HashMap::new(),
            naming: false,
        }
    }

    /// The definitions of the offsets named since the last call, for the machine to assert on
    /// the path (each a fresh variable equal to an offset's formula: asserting it constrains
    /// nothing else).
    pub fn take_definitions(&mut self) -> Vec<Bool> {
        std::mem::take(&mut self.definitions)
    }

    /// The memory, naming the symbolic offsets its accesses compare ([`Memory::name`]): for the
    /// packet and the stack, whose offsets are sums of bytes read (a parser's position). A map
    /// value's offset (an index hashed from the packet: count-min's rows) is compared as it is,
    /// which Z3 rewrites into smaller comparisons (xdp_cms_d20's paths: 0.7 s each as it is,
    /// 2 to 12 s named).
    pub fn naming_offsets(mut self) -> Memory {
        self.naming = true;
        self
    }

    /// `offset` as the comparisons of a symbolic access use it: a constant, an if-then-else of
    /// constants (chosen among without comparing), a variable plus a constant, or else a fresh
    /// variable whose definition [`Memory::take_definitions`] hands out.
    fn name(&mut self, offset: &Bits) -> Bits {
        let Bits::Sym(bv) = offset else {
            return offset.clone();
        };
        if !self.naming || is_named(bv) || choices(bv).is_some() {
            return offset.clone();
        }
        if let Some(name) = self.names.get(bv) {
            return Bits::Sym(name.clone());
        }
        let var = BV::new_const(format!("offset!{}", fresh_number()), 64);
        self.definitions.push(var.eq(bv));
        self.names.insert(bv.clone(), var.clone());
        Bits::Sym(var)
    }

    /// Forgets what the memory holds, as after writes of unknown scalars anywhere in it: every
    /// byte becomes unknown (a new input named after `name`), but spilled pointers stay
    /// (`crate::callbacks`: a callback's effects, not followed, over-approximated).
    pub fn havoc(&mut self, name: &str) {
        let pointers: BTreeMap<u64, Byte> = self
            .cells
            .iter()
            .filter(|(_, b)| matches!(b, Byte::Pointer { .. }))
            .map(|(&o, b)| (o, b.clone()))
            .collect();
        let definitions = std::mem::take(&mut self.definitions);
        let naming = self.naming;
        *self = Memory::input(&format!("{name}!{}", fresh_number()));
        self.cells = pointers;
        self.definitions = definitions;
        self.naming = naming;
    }

    /// The memory as it was before any write, knowing the reads made of its initial contents and
    /// the offsets named: the start of a second program run on the same inputs
    /// (`crate::equivalence`), whose reads at symbolic offsets must equal the first run's where
    /// the offsets are equal.
    pub fn initial(&self) -> Memory {
        Memory {
            input: self.input.clone(),
            layers: Vec::new(),
            cells: BTreeMap::new(),
            definitions: Vec::new(),
            // The offsets named so far keep their names (their definitions hold on the path
            // the second run continues), so equal offsets' formulas read the same variables.
            names: self.names.clone(),
            naming: self.naming,
        }
    }

    /// Takes over the reads `other` (the same initial contents, read by another run) made of
    /// the initial contents, which include this memory's: later reads here are tied to both
    /// runs' (`crate::equivalence`).
    pub fn share_input(&mut self, other: &Memory) {
        self.input = other.input.clone();
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
        // a symbolic amount needs a layer compared with every later read.
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
        self.layers.push(Layer::Zero(from.clone(), to.clone()));
    }

    /// The initial byte at `offset` (an input's variable, recorded as read).
    pub fn initial_byte(&mut self, offset: u64) -> BV {
        match &mut self.input {
            Some(input) => input.read(&Bits::Const(offset), &mut self.definitions),
            None => BV::from_u64(0, 8),
        }
    }

    /// The initial byte at `offset` as the reads so far define it, without recording a read
    /// (for reading a model: an offset never read is unconstrained).
    pub fn peek_initial(&self, offset: u64) -> BV {
        match &self.input {
            Some(input) => input.lookup(offset),
            None => BV::from_u64(0, 8),
        }
    }

    /// Writes the constant `bytes` at `offset` (initial contents).
    pub fn fill(&mut self, offset: u64, bytes: &[u8]) {
        for (i, b) in bytes.iter().enumerate() {
            self.cells.insert(offset + i as u64, Byte::Const(*b));
        }
    }

    /// Folds the bytes kept per offset into the layers, so that a symbolic access sees them.
    fn flush(&mut self) {
        let cells = std::mem::take(&mut self.cells);
        for (offset, byte) in cells {
            match byte.bv() {
                // A zero over zeros changes nothing.
                Some(_)
                    if self.input.is_none()
                        && self.layers.is_empty()
                        && matches!(byte, Byte::Const(0)) => {}
                Some(bv) => self.layers.push(Layer::Store(Bits::Const(offset), bv)),
                None => {
                    self.cells.insert(offset, byte);
                }
            }
        }
    }

    /// The byte at `offset` beneath the cells: the newest layer that covers it, else the
    /// initial contents.
    fn below(&mut self, offset: &Bits) -> BV {
        let zero = || BV::from_u64(0, 8);
        let mut covers: Vec<(Bool, BV)> = Vec::new();
        let mut found = None;
        for layer in self.layers.iter().rev() {
            match layer {
                Layer::Store(at, byte) => match (offset, at) {
                    (Bits::Const(a), Bits::Const(b)) if a == b => {
                        found = Some(byte.clone());
                        break;
                    }
                    (Bits::Const(_), Bits::Const(_)) => {}
                    _ => covers.push((offset.bv().eq(at.bv()), byte.clone())),
                },
                Layer::Zero(from, to) => {
                    let o = offset.bv();
                    let inside = Bool::and(&[&from.bvule(&o), &o.bvult(to)]).simplify();
                    match inside.as_bool() {
                        Some(true) => {
                            found = Some(zero());
                            break;
                        }
                        Some(false) => {}
                        None => covers.push((inside, zero())),
                    }
                }
            }
        }
        let mut acc = match found {
            Some(byte) => byte,
            None => match &mut self.input {
                Some(input) => input.read(offset, &mut self.definitions),
                None => zero(),
            },
        };
        for (cond, byte) in covers.into_iter().rev() {
            acc = cond.ite(&byte, &acc);
        }
        acc
    }

    /// The byte at `offset`.
    pub fn byte(&mut self, offset: &Bits) -> Byte {
        match offset {
            Bits::Const(o) => match self.cells.get(o) {
                Some(b) => b.clone(),
                None => Byte::Sym(self.below(offset)),
            },
            Bits::Sym(bv) => {
                if let Some(byte) = choices(bv).and_then(|l| self.byte_of_choice(&l)) {
                    return byte;
                }
                let offset = self.name(offset);
                self.flush();
                Byte::Sym(self.below(&offset))
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

    /// Writes `byte` at `offset`.
    pub fn set_byte(&mut self, offset: &Bits, byte: Byte) {
        match offset {
            Bits::Const(o) => {
                self.cells.insert(*o, byte);
            }
            Bits::Sym(bv) => {
                let value = byte.bv().unwrap_or_else(|| BV::from_u64(0, 8));
                if let Some(choice) = choices(bv) {
                    for (cond, o) in choice {
                        let at = Bits::Const(o);
                        if let Some(old) = self.byte(&at).bv() {
                            self.cells.insert(o, Byte::Sym(cond.ite(&value, &old)));
                            continue;
                        }
                        // A spilled pointer in the way: a layer takes the store.
                        self.flush();
                        self.layers.push(Layer::Store(offset.clone(), value));
                        return;
                    }
                    return;
                }
                let offset = self.name(offset);
                self.flush();
                self.layers.push(Layer::Store(offset, value));
            }
        }
    }

    /// Reads `len` bytes from `offset` as a little-endian value; `Err` for a read of part of a
    /// spilled pointer.
    pub fn load(&mut self, offset: &Bits, len: u32) -> Result<SymValue, &'static str> {
        let offset = &self.name(offset);
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
        let offset = &self.name(offset);
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

/// Most constants a symbolic offset is split into along its if-then-else tree ([`leaves`]):
/// each leaf's condition is the conjunction of the tests above it, which grows with the tree.
const MAX_LEAVES: usize = 32;

/// Most constants a symbolic offset is split into by comparing it with each ([`choices`]).
const MAX_CONSTANTS: usize = 1024;

/// The offset as `(condition, constant)` pairs whose conditions are exhaustive and exclusive,
/// where it is an if-then-else tree of constants (through additions, ors and shifts by
/// constants); `None` otherwise. Small trees name their branches' tests ([`leaves`]); larger
/// ones, up to [`MAX_CONSTANTS`] distinct values, compare the offset with each value: the slot
/// of a map's hundred-and-fiftieth access chooses among 150 constants, which read as a symbolic
/// offset would tie each byte read to every earlier one (a definition per pair, quadratic in
/// the path's accesses).
pub(crate) fn choices(bv: &BV) -> Option<Vec<(Bool, u64)>> {
    if let Some(small) = leaves(bv) {
        return Some(small);
    }
    Some(
        constants(bv)?
            .into_iter()
            .map(|c| (bv.eq(BV::from_u64(c, 64)), c))
            .collect(),
    )
}

/// The distinct values of an if-then-else tree of constants (through additions, ors and shifts
/// by constants), at most [`MAX_CONSTANTS`] of them; `None` otherwise. Each node is visited
/// once per chain of operations above it, so a long chain of if-then-elses costs its length.
fn constants(bv: &BV) -> Option<BTreeSet<u64>> {
    // The operations above a node, outermost first.
    type Above = Vec<ConstantOperand>;
    let mut out = BTreeSet::new();
    let mut seen: HashSet<(BV, Above)> = HashSet::new();
    let mut stack: Vec<(BV, Above)> = vec![(bv.clone(), Vec::new())];
    while let Some((node, above)) = stack.pop() {
        if !seen.insert((node.clone(), above.clone())) {
            continue;
        }
        if seen.len() > 4 * MAX_CONSTANTS {
            return None;
        }
        if let Some(v) = node.as_u64() {
            out.insert(above.iter().rev().fold(v, |v, op| op.apply(v)));
            if out.len() > MAX_CONSTANTS {
                return None;
            }
            continue;
        }
        if node.get_size() != 64 || !node.is_app() {
            return None;
        }
        if node.decl().kind() == DeclKind::Ite {
            let children = node.children();
            let [_, a, b] = children.as_slice() else {
                return None;
            };
            stack.push((a.as_bv()?, above.clone()));
            stack.push((b.as_bv()?, above));
        } else {
            let (op, inner) = constant_operand(&node)?;
            let mut above = above;
            above.push(op);
            stack.push((inner, above));
        }
    }
    Some(out)
}

/// An operation with a constant operand, of the kinds an offset is built with: `k op x`
/// (`k_on_left`) or `x op k`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct ConstantOperand {
    op: linerate_sem::BinOp,
    k: u64,
    k_on_left: bool,
}

impl ConstantOperand {
    /// The operation applied to `x`.
    fn apply(self, x: u64) -> u64 {
        if self.k_on_left {
            Concrete::eval_binary(self.op, self.k, x)
        } else {
            Concrete::eval_binary(self.op, x, self.k)
        }
    }
}

/// `bv` as an addition, or or shift with one constant operand, and its other operand; `None`
/// otherwise.
fn constant_operand(bv: &BV) -> Option<(ConstantOperand, BV)> {
    use linerate_sem::BinOp;
    let op = match bv.decl().kind() {
        DeclKind::Badd => BinOp::Add,
        DeclKind::Bor => BinOp::Or,
        DeclKind::Bshl => BinOp::Shl,
        _ => return None,
    };
    let children = bv.children();
    let [x, y] = children.as_slice() else {
        return None;
    };
    let (x, y) = (x.as_bv()?, y.as_bv()?);
    let (inner, k, k_on_left) = match (x.as_u64(), y.as_u64()) {
        // Z3 shifts by 64 or more to zero, the interpreter's primitive modulo 64.
        (_, Some(k)) if op == BinOp::Shl && k >= 64 => return None,
        (_, Some(k)) => (x, k, false),
        (Some(k), None) if op != BinOp::Shl => (y, k, true),
        _ => return None,
    };
    Some((ConstantOperand { op, k, k_on_left }, inner))
}

/// [`choices`] of a small tree: each constant with the tests of the branches that lead to it.
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
        _ => {
            let (op, inner) = constant_operand(bv)?;
            leaves(&inner)?
                .into_iter()
                .map(|(c, v)| (c, op.apply(v)))
                .collect()
        }
    };
    (out.len() <= MAX_LEAVES).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ite(slot == k0, 1000, ite(slot == k1, 1001, ...))` over `n` constants, as the slots of
    /// `n` accesses to one map are (`crate::maps`), shifted into a value's offset.
    fn chain(n: u64) -> BV {
        let slot = BV::new_const("slot", 64);
        let mut offset = BV::from_u64(1000 + n, 64);
        for k in (0..n).rev() {
            offset = slot
                .eq(BV::from_u64(k, 64))
                .ite(&BV::from_u64(1000 + k, 64), &offset);
        }
        offset.bvshl(BV::from_u64(32, 64)).bvor(BV::from_u64(3, 64))
    }

    /// A byte read at a choice among 150 constant offsets is a choice among 150 bytes, with
    /// nothing tied to other reads: read as a symbolic offset, each such read was constrained
    /// against every earlier read (the path explosion's execution, quadratic in its accesses).
    #[test]
    fn a_choice_among_many_constant_offsets_reads_each_offset() {
        let offset = chain(149);
        let constants: Vec<u64> = choices(&offset)
            .expect("a choice among constants")
            .iter()
            .map(|(_, c)| *c)
            .collect();
        let expected: Vec<u64> = (1000..1150).map(|k| (k << 32) | 3).collect();
        assert_eq!(constants, expected);

        let mut memory = Memory::input("value");
        memory.set_byte(&Bits::Const((1020 << 32) | 3), Byte::Const(0x5a));
        let byte = memory.byte(&Bits::Sym(offset.clone()));
        assert!(memory.take_definitions().is_empty());
        let byte = byte.bv().expect("a scalar byte");
        // Where the slot is 20, the byte is the one stored there.
        let solver = z3::Solver::new();
        solver.assert(BV::new_const("slot", 64).eq(BV::from_u64(20, 64)));
        solver.assert(byte.eq(BV::from_u64(0x5a, 8)).not());
        assert_eq!(solver.check(), z3::SatResult::Unsat);
    }

    /// A stored byte of a large arithmetic value (an accumulator of 100 stages) is an
    /// extraction of the value itself, not a term rebuilt through its arithmetic; of a
    /// zero-extended or concatenated one, the part it was.
    #[test]
    fn a_stored_byte_is_taken_out_of_its_value_without_rewriting_it() {
        let mut sum = BV::new_const("x", 64);
        for stage in 0..100 {
            sum = sum
                .bvmul(BV::from_u64(31, 64))
                .bvadd(BV::new_const(format!("v{stage}"), 64));
        }
        assert!(!smaller_than(&sum, MAX_SIMPLIFIED_TERMS));
        let Byte::Sym(byte) = Byte::of_scalar(&Bits::Sym(sum.clone()), 2) else {
            panic!("a symbolic byte");
        };
        assert_eq!(byte.decl().kind(), DeclKind::Extract);
        assert_eq!(byte.children()[0].as_bv(), Some(sum));

        let low = BV::new_const("low", 8);
        let high = BV::new_const("high", 8);
        let word = high.concat(&low).zero_ext(48);
        let byte_at = |i| match Byte::of_scalar(&Bits::Sym(word.clone()), i) {
            Byte::Sym(b) => b,
            other => panic!("byte {i}: {other:?}"),
        };
        assert_eq!(byte_at(0), low);
        assert_eq!(byte_at(1), high);
        assert_eq!(byte_at(5).as_u64(), Some(0));
    }
}
