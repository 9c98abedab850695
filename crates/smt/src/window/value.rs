//! The values of a window's execution: 64-bit scalars as bit-vector formulas (constants folded),
//! pointers as a region and an offset from its base, and values the verifier would not let a
//! program use (arithmetic on pointers other than adding and subtracting numbers, the bytes of a
//! pointer). A pointer's concrete value is `region_base(region) + offset`: every operation kept
//! on pointers here gives exactly what that sum gives concretely, so a counterexample found with
//! pointers holds for the concrete window runner.

use linerate_sem::{BinOp, CmpOp, Domain};
use z3::ast::Bool;

use super::WindowRegion;
use crate::value::{bits_binary, bits_compare, Bits};

/// A register or memory value inside a window.
#[derive(Clone, Debug)]
pub enum WinValue {
    Scalar(Bits),
    /// `region_base(region) + offset`.
    Ptr {
        region: WindowRegion,
        offset: Bits,
    },
    /// What the model gives no sound meaning to; a live or dereferenced one makes the verdict
    /// unknown.
    Invalid(&'static str),
}

/// The domain; a comparison it cannot give a meaning to is recorded in `fault`.
#[derive(Debug, Default)]
pub struct WinDomain {
    pub fault: Option<&'static str>,
}

const POINTER_ARITHMETIC: &str =
    "arithmetic on a pointer other than adding or subtracting a number";

/// `c ? a : b` on bits, folding equal constants.
fn bits_ite(c: &Bool, a: &Bits, b: &Bits) -> Bits {
    match (a, b) {
        (Bits::Const(x), Bits::Const(y)) if x == y => Bits::Const(*x),
        _ => Bits::Sym(c.ite(&a.bv(), &b.bv())),
    }
}

impl Domain for WinDomain {
    type Value = WinValue;
    type Bool = Bool;

    fn constant(&mut self, v: u64) -> WinValue {
        WinValue::Scalar(Bits::Const(v))
    }

    fn binary(&mut self, op: BinOp, a: &WinValue, b: &WinValue) -> WinValue {
        use WinValue::{Invalid, Ptr, Scalar};
        match (a, b) {
            (Invalid(why), _) | (_, Invalid(why)) => Invalid(why),
            (Scalar(x), Scalar(y)) => Scalar(bits_binary(op, x, y)),
            (Ptr { region, offset }, Scalar(y)) if matches!(op, BinOp::Add | BinOp::Sub) => Ptr {
                region: *region,
                offset: bits_binary(op, offset, y),
            },
            (Scalar(x), Ptr { region, offset }) if op == BinOp::Add => Ptr {
                region: *region,
                offset: bits_binary(op, x, offset),
            },
            // (base + a) - (base + b) = a - b.
            (
                Ptr {
                    region: ra,
                    offset: oa,
                },
                Ptr {
                    region: rb,
                    offset: ob,
                },
            ) if op == BinOp::Sub && ra == rb => Scalar(bits_binary(op, oa, ob)),
            // The semantics moves whole 64-bit values through identities (masking with all ones,
            // shifting by 0): they keep a pointer.
            (Ptr { .. }, Scalar(y))
                if matches!(
                    (op, y.as_const()),
                    (BinOp::And, Some(u64::MAX))
                        | (
                            BinOp::Or | BinOp::Xor | BinOp::Shl | BinOp::LShr | BinOp::AShr,
                            Some(0)
                        )
                ) =>
            {
                a.clone()
            }
            _ => Invalid(POINTER_ARITHMETIC),
        }
    }

    fn compare(&mut self, op: CmpOp, a: &WinValue, b: &WinValue) -> Bool {
        use WinValue::{Invalid, Ptr, Scalar};
        match (a, b) {
            (Scalar(x), Scalar(y)) => bits_compare(op, x, y),
            // Offsets are bounded (`MAX_OFFSET`) and bases far from 0 and 2^63: comparing the
            // sums compares the offsets, signed or not.
            (
                Ptr {
                    region: ra,
                    offset: oa,
                },
                Ptr {
                    region: rb,
                    offset: ob,
                },
            ) if ra == rb => bits_compare(op, oa, ob),
            (Invalid(why), _) | (_, Invalid(why)) => {
                self.fault.get_or_insert(why);
                Bool::from_bool(false)
            }
            _ => {
                self.fault.get_or_insert(
                    "a comparison of a pointer with a number or another region's pointer",
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

    fn ite(&mut self, c: &Bool, a: &WinValue, b: &WinValue) -> WinValue {
        use WinValue::{Invalid, Ptr, Scalar};
        match c.as_bool() {
            Some(true) => return a.clone(),
            Some(false) => return b.clone(),
            None => {}
        }
        match (a, b) {
            (Scalar(x), Scalar(y)) => Scalar(bits_ite(c, x, y)),
            (
                Ptr {
                    region: ra,
                    offset: oa,
                },
                Ptr {
                    region: rb,
                    offset: ob,
                },
            ) if ra == rb => Ptr {
                region: *ra,
                offset: bits_ite(c, oa, ob),
            },
            (Invalid(why), _) | (_, Invalid(why)) => Invalid(why),
            _ => Invalid("a value that is a pointer on one side of a condition only"),
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
