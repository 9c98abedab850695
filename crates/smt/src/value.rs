//! The symbolic value domain: 64-bit bit-vector formulas with pointer provenance.
//!
//! A [`SymValue`] is a scalar or a pointer. A pointer carries the [`Region`] it points into,
//! known when the path is executed (the verifier keeps a pointer inside its region), and its
//! offset inside the region as a formula; a pointer that may be NULL (a map lookup's result)
//! carries the condition under which it is. Constants are folded with the interpreter's own
//! primitives ([`Concrete`]), so stack offsets, context offsets and most packet offsets stay
//! concrete and never reach the solver. Operations the verifier does not allow on pointers
//! (multiplying one, comparing pointers of two regions, ...) give an [`Tag::Invalid`] value, or
//! for a comparison a recorded fault, which the machine reports as an error naming the slot:
//! never a formula that means something else.

use linerate_sem::{BinOp, CmpOp, Concrete, Domain};
use z3::ast::{Ast, Bool, BV};

/// Where a pointer points.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Region {
    /// The `struct xdp_md` context.
    Ctx,
    /// The packet buffer; offsets are offsets into `BPF_PROG_TEST_RUN`'s frame, as the
    /// interpreter numbers them (`data` starts at the headroom).
    Packet,
    /// The stack frames of all call depths, frame `d` at `d * 512 .. (d + 1) * 512`, as the
    /// interpreter lays them out.
    Stack,
    /// Function addresses (callbacks): the offset is the slot.
    Function,
    /// The values of map `i`: offset `slot << 32 | byte`, `slot` naming one entry.
    MapValue(usize),
    /// The handle of map `i`, passed to helpers and never dereferenced.
    MapHandle(usize),
    /// The key `bpf_for_each_map_elem` hands its callback at call depth `d`, at `d << 32`
    /// (read-only: [`crate::callbacks`]).
    CallbackKey,
}

/// The 64 bits of a value: a constant or a formula.
#[derive(Clone, Debug)]
pub enum Bits {
    Const(u64),
    Sym(BV),
}

impl Bits {
    /// The formula (a numeral for a constant).
    pub fn bv(&self) -> BV {
        match self {
            Bits::Const(v) => BV::from_u64(*v, 64),
            Bits::Sym(bv) => bv.clone(),
        }
    }

    /// The constant, where known.
    pub fn as_const(&self) -> Option<u64> {
        match self {
            Bits::Const(v) => Some(*v),
            Bits::Sym(_) => None,
        }
    }
}

/// What a value is.
#[derive(Clone, Debug)]
pub enum Tag {
    Scalar,
    /// A pointer into `region`, NULL where `null` holds (`None`: never NULL).
    Ptr {
        region: Region,
        null: Option<Bool>,
    },
    /// A value of which only the low 32 bits are defined: arithmetic mixing a packet or stack
    /// pointer into a 32-bit operation (`w6 = w2; w6 -= w4` on `data_end` and `data`). The
    /// high half is a kernel address's in the kernel, a region tag's in the interpreter; the
    /// 32-bit operation's zero extension makes it a scalar again.
    Low32,
    /// The result of an operation the verifier forbids on pointers; using it is an error.
    Invalid(&'static str),
}

/// A 64-bit register or memory value.
#[derive(Clone, Debug)]
pub struct SymValue {
    pub tag: Tag,
    /// The value of a scalar, the offset of a pointer.
    pub bits: Bits,
}

impl SymValue {
    pub fn scalar(bits: Bits) -> SymValue {
        SymValue {
            tag: Tag::Scalar,
            bits,
        }
    }

    pub fn constant(v: u64) -> SymValue {
        SymValue::scalar(Bits::Const(v))
    }

    pub fn symbolic(bv: BV) -> SymValue {
        SymValue::scalar(Bits::Sym(bv))
    }

    /// A pointer to `offset` in `region`, never NULL.
    pub fn pointer(region: Region, offset: Bits) -> SymValue {
        SymValue {
            tag: Tag::Ptr { region, null: None },
            bits: offset,
        }
    }

    fn invalid(why: &'static str) -> SymValue {
        SymValue {
            tag: Tag::Invalid(why),
            bits: Bits::Const(0),
        }
    }

    /// The region, for a pointer.
    pub fn region(&self) -> Option<Region> {
        match self.tag {
            Tag::Ptr { region, .. } => Some(region),
            _ => None,
        }
    }

    pub fn is_scalar(&self) -> bool {
        matches!(self.tag, Tag::Scalar)
    }
}

/// The domain: builds formulas in the thread's Z3 context, folding constants. Comparisons the
/// verifier forbids are recorded in [`SymDomain::fault`] for the machine to report.
#[derive(Clone, Debug, Default)]
pub struct SymDomain {
    /// The first forbidden comparison since the machine last looked.
    pub fault: Option<&'static str>,
}

/// Whether a value's low 32 bits are defined as a number: a scalar, a [`Tag::Low32`], or a
/// packet or stack pointer (its offset, as the interpreter's low half).
fn low_half(tag: &Tag) -> bool {
    matches!(
        tag,
        Tag::Scalar
            | Tag::Low32
            | Tag::Ptr {
                region: Region::Packet | Region::Stack,
                ..
            }
    )
}

/// `a op b` on formulas.
pub fn bv_binary(op: BinOp, a: &BV, b: &BV) -> BV {
    match op {
        BinOp::Add => a.bvadd(b),
        BinOp::Sub => a.bvsub(b),
        BinOp::Mul => a.bvmul(b),
        BinOp::UDiv => a.bvudiv(b),
        BinOp::URem => a.bvurem(b),
        BinOp::SDiv => a.bvsdiv(b),
        BinOp::SRem => a.bvsrem(b),
        BinOp::And => a.bvand(b),
        BinOp::Or => a.bvor(b),
        BinOp::Xor => a.bvxor(b),
        BinOp::Shl => a.bvshl(b),
        BinOp::LShr => a.bvlshr(b),
        BinOp::AShr => a.bvashr(b),
    }
}

/// `a op b` on formulas.
pub fn bv_compare(op: CmpOp, a: &BV, b: &BV) -> Bool {
    match op {
        CmpOp::Eq => a.eq(b),
        CmpOp::Ult => a.bvult(b),
        CmpOp::Ule => a.bvule(b),
        CmpOp::Slt => a.bvslt(b),
        CmpOp::Sle => a.bvsle(b),
    }
}

pub(crate) fn bits_binary(op: BinOp, a: &Bits, b: &Bits) -> Bits {
    match (a, b) {
        (Bits::Const(x), Bits::Const(y)) => Bits::Const(Concrete::eval_binary(op, *x, *y)),
        _ => {
            // Identities that keep offsets readable: x + 0, x - 0, x & all-ones, x | 0.
            match (op, b.as_const()) {
                (BinOp::Add | BinOp::Sub | BinOp::Or | BinOp::Xor, Some(0))
                | (BinOp::And, Some(u64::MAX)) => return a.clone(),
                // Zero extension of the low 8, 16 or 32 bits (every 32-bit ALU result): the
                // simplifier pushes the extraction into additions and multiplications, so
                // 32-bit arithmetic reaches the solver 32 bits wide.
                (BinOp::And, Some(mask @ (0xff | 0xffff | 0xffff_ffff))) => {
                    let bits = mask.count_ones();
                    let low = a.bv().extract(bits - 1, 0).simplify();
                    return Bits::Sym(low.zero_ext(64 - bits));
                }
                _ => {}
            }
            Bits::Sym(bv_binary(op, &a.bv(), &b.bv()))
        }
    }
}

pub(crate) fn bits_compare(op: CmpOp, a: &Bits, b: &Bits) -> Bool {
    match (a, b) {
        (Bits::Const(x), Bits::Const(y)) => Bool::from_bool(Concrete::eval_compare(op, *x, *y)),
        _ => bv_compare(op, &a.bv(), &b.bv()),
    }
}

/// `c ? a : b` on conditions, folding constants.
pub fn bool_ite(c: &Bool, a: &Bool, b: &Bool) -> Bool {
    match c.as_bool() {
        Some(true) => a.clone(),
        Some(false) => b.clone(),
        None => c.ite(a, b),
    }
}

fn null_of(tag: &Tag) -> Bool {
    match tag {
        Tag::Ptr { null: Some(n), .. } => n.clone(),
        _ => Bool::from_bool(false),
    }
}

impl SymDomain {
    /// Comparison of a pointer that may be NULL with the constant 0.
    fn null_compare(&mut self, op: CmpOp, null: &Bool, ptr_left: bool) -> Bool {
        match (op, ptr_left) {
            (CmpOp::Eq, _) => null.clone(),
            // 0 < p, p <= 0.
            (CmpOp::Ult, false) => null.not(),
            (CmpOp::Ule, true) => null.clone(),
            (CmpOp::Ult, true) => Bool::from_bool(false),
            (CmpOp::Ule, false) => Bool::from_bool(true),
            _ => {
                self.fault
                    .get_or_insert("signed comparison of a pointer with 0");
                Bool::from_bool(false)
            }
        }
    }
}

impl Domain for SymDomain {
    type Value = SymValue;
    type Bool = Bool;

    fn constant(&mut self, v: u64) -> SymValue {
        SymValue::constant(v)
    }

    fn binary(&mut self, op: BinOp, a: &SymValue, b: &SymValue) -> SymValue {
        match (&a.tag, &b.tag) {
            (Tag::Invalid(why), _) | (_, Tag::Invalid(why)) => SymValue::invalid(why),
            (Tag::Scalar, Tag::Scalar) => SymValue::scalar(bits_binary(op, &a.bits, &b.bits)),
            (Tag::Ptr { .. }, Tag::Scalar) if matches!(op, BinOp::Add | BinOp::Sub) => SymValue {
                tag: a.tag.clone(),
                bits: bits_binary(op, &a.bits, &b.bits),
            },
            (Tag::Scalar, Tag::Ptr { .. }) if op == BinOp::Add => SymValue {
                tag: b.tag.clone(),
                bits: bits_binary(op, &a.bits, &b.bits),
            },
            (Tag::Ptr { region: ra, .. }, Tag::Ptr { region: rb, .. })
                if op == BinOp::Sub && ra == rb =>
            {
                SymValue::scalar(bits_binary(op, &a.bits, &b.bits))
            }
            // The semantics masks, shifts and ors values it moves whole (zero extension of a
            // 64-bit value is the identity): keep a pointer through those.
            (Tag::Ptr { .. }, Tag::Scalar)
                if matches!(
                    (op, b.bits.as_const()),
                    (BinOp::And, Some(u64::MAX))
                        | (BinOp::Or | BinOp::Xor | BinOp::Shl | BinOp::LShr, Some(0))
                ) =>
            {
                a.clone()
            }
            // The low half of a packet or stack pointer (a 32-bit move of it): its offset, as in
            // the interpreter, whose offsets in these regions are the same as here; differences
            // of such halves are then exact.
            (ta, tb) if low_half(ta) && low_half(tb) => {
                let bits = bits_binary(op, &a.bits, &b.bits);
                match (op, b.bits.as_const()) {
                    (BinOp::And, Some(mask))
                        if mask <= 0xffff_ffff && matches!(tb, Tag::Scalar) =>
                    {
                        SymValue::scalar(bits)
                    }
                    (BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::And | BinOp::Or, _)
                    | (BinOp::Xor | BinOp::Shl, _) => SymValue {
                        tag: Tag::Low32,
                        bits,
                    },
                    _ => SymValue::invalid(
                        "arithmetic on a pointer other than adding or subtracting",
                    ),
                }
            }
            _ => SymValue::invalid("arithmetic on a pointer other than adding or subtracting"),
        }
    }

    fn compare(&mut self, op: CmpOp, a: &SymValue, b: &SymValue) -> Bool {
        match (&a.tag, &b.tag) {
            (Tag::Invalid(why), _) | (_, Tag::Invalid(why)) => {
                self.fault.get_or_insert(why);
                Bool::from_bool(false)
            }
            (Tag::Scalar, Tag::Scalar) => bits_compare(op, &a.bits, &b.bits),
            (Tag::Ptr { region: ra, .. }, Tag::Ptr { region: rb, .. }) if ra == rb => {
                bits_compare(op, &a.bits, &b.bits)
            }
            (Tag::Ptr { .. }, Tag::Scalar) if b.bits.as_const() == Some(0) => {
                let null = null_of(&a.tag);
                self.null_compare(op, &null, true)
            }
            (Tag::Scalar, Tag::Ptr { .. }) if a.bits.as_const() == Some(0) => {
                let null = null_of(&b.tag);
                self.null_compare(op, &null, false)
            }
            _ => {
                self.fault.get_or_insert(
                    "comparison of a pointer with a non-zero scalar or a pointer of another region",
                );
                Bool::from_bool(false)
            }
        }
    }

    fn not(&mut self, c: &Bool) -> Bool {
        match c.as_bool() {
            Some(b) => Bool::from_bool(!b),
            None => c.not(),
        }
    }

    fn ite(&mut self, c: &Bool, a: &SymValue, b: &SymValue) -> SymValue {
        match c.as_bool() {
            Some(true) => return a.clone(),
            Some(false) => return b.clone(),
            None => {}
        }
        let bits = |a: &Bits, b: &Bits| match (a, b) {
            (Bits::Const(x), Bits::Const(y)) if x == y => Bits::Const(*x),
            _ => Bits::Sym(c.ite(&a.bv(), &b.bv())),
        };
        match (&a.tag, &b.tag) {
            (Tag::Invalid(why), _) | (_, Tag::Invalid(why)) => SymValue::invalid(why),
            (Tag::Scalar, Tag::Scalar) => SymValue::scalar(bits(&a.bits, &b.bits)),
            (Tag::Ptr { region: ra, .. }, Tag::Ptr { region: rb, .. }) if ra == rb => {
                let null = bool_ite(c, &null_of(&a.tag), &null_of(&b.tag));
                SymValue {
                    tag: Tag::Ptr {
                        region: *ra,
                        null: Some(null),
                    },
                    bits: bits(&a.bits, &b.bits),
                }
            }
            (Tag::Ptr { region, .. }, Tag::Scalar) if b.bits.as_const() == Some(0) => SymValue {
                tag: Tag::Ptr {
                    region: *region,
                    null: Some(bool_ite(c, &null_of(&a.tag), &Bool::from_bool(true))),
                },
                bits: a.bits.clone(),
            },
            (Tag::Scalar, Tag::Ptr { region, .. }) if a.bits.as_const() == Some(0) => SymValue {
                tag: Tag::Ptr {
                    region: *region,
                    null: Some(bool_ite(c, &Bool::from_bool(true), &null_of(&b.tag))),
                },
                bits: b.bits.clone(),
            },
            _ => SymValue::invalid("a value that is a pointer on one side of a condition only"),
        }
    }

    fn truth(&mut self, b: bool) -> Bool {
        Bool::from_bool(b)
    }

    fn and(&mut self, a: &Bool, b: &Bool) -> Bool {
        match (a.as_bool(), b.as_bool()) {
            (Some(false), _) | (_, Some(false)) => Bool::from_bool(false),
            (Some(true), _) => b.clone(),
            (_, Some(true)) => a.clone(),
            _ => Bool::and(&[a, b]),
        }
    }

    fn or(&mut self, a: &Bool, b: &Bool) -> Bool {
        match (a.as_bool(), b.as_bool()) {
            (Some(true), _) | (_, Some(true)) => Bool::from_bool(true),
            (Some(false), _) => b.clone(),
            (_, Some(false)) => a.clone(),
            _ => Bool::or(&[a, b]),
        }
    }
}
