//! Assuming a branch condition: what a state learns on each side of a conditional jump.
//!
//! The semantics reports a branch as its condition ([`crate::value::AbsBool`]: a comparison of two
//! values, possibly negated). On the side where the condition holds (or does not), every register
//! and spilled slot holding one of the compared values (the same identity) is narrowed, a map
//! lookup's result compared with zero becomes null or a pointer, and a comparison of a packet
//! pointer with `data_end` bounds the packet's length. A side the condition rules out is
//! unreachable.

use linerate_sem::CmpOp;

use crate::machine::State;
use crate::value::{AbsBool, AbsDomain, AbsValue, Interval, Region, Shape};

/// `state` where `cond` is `holds`; `None` where that cannot be.
pub fn assume(state: &State, d: &mut AbsDomain, cond: &AbsBool, holds: bool) -> Option<State> {
    if cond.known.is_some_and(|k| k != holds) {
        return None;
    }
    let Some((op, a, b)) = cond.compare else {
        return Some(state.clone());
    };
    let truth = holds != cond.negated;
    let mut out = state.clone();
    if let Some(len) = packet_length(op, truth, &a, &b) {
        out.packet_len = out.packet_len.meet(len)?;
    }
    let (a_shape, b_shape) = narrow(op, truth, a.shape, b.shape)?;
    replace(&mut out, d, &a, a_shape);
    replace(&mut out, d, &b, b_shape);
    Some(out)
}

/// Gives every register and slot holding `old` (by identity) the shape `shape`.
fn replace(state: &mut State, d: &mut AbsDomain, old: &AbsValue, shape: Shape) {
    if shape == old.shape {
        return;
    }
    let new = AbsValue {
        shape,
        id: d.value(shape).id,
    };
    for v in state.regs.iter_mut().chain(state.slots.values_mut()) {
        if v.id == old.id {
            *v = new;
        }
    }
}

/// The packet lengths `op(a, b) == truth` allows, where it compares a packet pointer with
/// `data_end`.
fn packet_length(op: CmpOp, truth: bool, a: &AbsValue, b: &AbsValue) -> Option<Interval> {
    let offset_of = |v: &AbsValue, region: Region| match v.shape {
        Shape::Pointer {
            region: r, offset, ..
        } if r == region => Some(offset),
        _ => None,
    };
    // `data + p` against `data_end + e` (e is 0 for pointers the verifier allows).
    let (p, end_first) = match (
        offset_of(a, Region::Packet),
        offset_of(b, Region::PacketEnd),
        offset_of(a, Region::PacketEnd),
        offset_of(b, Region::Packet),
    ) {
        (Some(p), Some(e), _, _) if e == Interval::exactly(0) => (p, false),
        (_, _, Some(e), Some(p)) if e == Interval::exactly(0) => (p, true),
        _ => return None,
    };
    let unbounded = i128::MAX / 4;
    // With len = data_end - data: `data + p < data_end` is `p < len`, and so on.
    let at_least = |v: i128| Interval {
        lo: v,
        hi: unbounded,
    };
    let at_most = |v: i128| Interval { lo: 0, hi: v };
    Some(match (op, end_first, truth) {
        // p < len, p <= len, and their negations len <= p, len < p.
        (CmpOp::Ult | CmpOp::Slt, false, true) => at_least(p.lo + 1),
        (CmpOp::Ule | CmpOp::Sle, false, true) => at_least(p.lo),
        (CmpOp::Ult | CmpOp::Slt, false, false) => at_most(p.hi),
        (CmpOp::Ule | CmpOp::Sle, false, false) => at_most(p.hi - 1),
        // len < p, len <= p, and their negations p <= len, p < len.
        (CmpOp::Ult | CmpOp::Slt, true, true) => at_most(p.hi - 1),
        (CmpOp::Ule | CmpOp::Sle, true, true) => at_most(p.hi),
        (CmpOp::Ult | CmpOp::Slt, true, false) => at_least(p.lo),
        (CmpOp::Ule | CmpOp::Sle, true, false) => at_least(p.lo + 1),
        (CmpOp::Eq, _, true) => Interval { lo: p.lo, hi: p.hi },
        (CmpOp::Eq, _, false) => return None,
    })
}

/// The shapes of `a` and `b` where `op(a, b) == truth`; `None` where no values allow it.
fn narrow(op: CmpOp, truth: bool, a: Shape, b: Shape) -> Option<(Shape, Shape)> {
    let zero = Interval::exactly(0);
    match (a, b) {
        (Shape::Scalar(x), Shape::Scalar(y)) => {
            let (x, y) = narrow_intervals(op, truth, x, y)?;
            Some((Shape::Scalar(x), Shape::Scalar(y)))
        }
        // A lookup's result against zero: null on one side, a pointer on the other.
        (p @ Shape::Pointer { .. }, Shape::Scalar(z)) if z == zero && op == CmpOp::Eq => {
            Some((null_or_not(p, truth)?, b))
        }
        (Shape::Scalar(z), p @ Shape::Pointer { .. }) if z == zero && op == CmpOp::Eq => {
            Some((a, null_or_not(p, truth)?))
        }
        _ => Some((a, b)),
    }
}

/// A maybe-null pointer known to be null (`is_null`) or not.
fn null_or_not(p: Shape, is_null: bool) -> Option<Shape> {
    let Shape::Pointer {
        region,
        offset,
        maybe_null,
    } = p
    else {
        return Some(p);
    };
    match (is_null, maybe_null) {
        (true, true) => Some(Shape::Scalar(Interval::exactly(0))),
        (true, false) => None,
        (false, _) => Some(Shape::Pointer {
            region,
            offset,
            maybe_null: false,
        }),
    }
}

/// Narrows two unsigned intervals by `op(x, y) == truth`. Signed comparisons narrow only
/// intervals that read the same signed (below 2^63).
fn narrow_intervals(
    op: CmpOp,
    truth: bool,
    x: Interval,
    y: Interval,
) -> Option<(Interval, Interval)> {
    let signed_ok = x.hi <= i64::MAX as i128 && y.hi <= i64::MAX as i128;
    let op = match op {
        CmpOp::Slt if signed_ok => CmpOp::Ult,
        CmpOp::Sle if signed_ok => CmpOp::Ule,
        CmpOp::Slt | CmpOp::Sle => return Some((x, y)),
        other => other,
    };
    let below = |i: Interval, hi: i128| i.meet(Interval { lo: i.lo, hi });
    let above = |i: Interval, lo: i128| i.meet(Interval { lo, hi: i.hi });
    Some(match (op, truth) {
        (CmpOp::Eq, true) => {
            let both = x.meet(y)?;
            (both, both)
        }
        (CmpOp::Eq, false) => {
            let exclude = |i: Interval, c: Option<i128>| match c {
                Some(c) if i.lo == c && i.hi == c => None,
                Some(c) if i.lo == c => Some(Interval {
                    lo: c + 1,
                    hi: i.hi,
                }),
                Some(c) if i.hi == c => Some(Interval {
                    lo: i.lo,
                    hi: c - 1,
                }),
                _ => Some(i),
            };
            (exclude(x, y.constant())?, exclude(y, x.constant())?)
        }
        // x < y
        (CmpOp::Ult, true) => (below(x, y.hi - 1)?, above(y, x.lo + 1)?),
        // x >= y
        (CmpOp::Ult, false) => (above(x, y.lo)?, below(y, x.hi)?),
        // x <= y
        (CmpOp::Ule, true) => (below(x, y.hi)?, above(y, x.lo)?),
        // x > y
        (CmpOp::Ule, false) => (above(x, y.lo + 1)?, below(y, x.hi - 1)?),
        (CmpOp::Slt | CmpOp::Sle, _) => (x, y),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrowing_follows_the_comparison() {
        let x = Interval { lo: 0, hi: 100 };
        let ten = Interval::exactly(10);
        assert_eq!(
            narrow_intervals(CmpOp::Ult, true, x, ten),
            Some((Interval { lo: 0, hi: 9 }, ten))
        );
        assert_eq!(
            narrow_intervals(CmpOp::Ult, false, x, ten),
            Some((Interval { lo: 10, hi: 100 }, ten))
        );
        assert_eq!(
            narrow_intervals(CmpOp::Ult, true, ten, Interval::exactly(5)),
            None
        );
    }

    #[test]
    fn a_bounds_check_bounds_the_packet() {
        let mut d = AbsDomain::default();
        let p = d.pointer(Region::Packet, Interval::exactly(14));
        let end = d.pointer(Region::PacketEnd, Interval::exactly(0));
        // `if (data + 14 > data_end)` is Ult(end, p); falling through means it does not hold.
        assert_eq!(
            packet_length(CmpOp::Ult, false, &end, &p).map(|i| i.lo),
            Some(14)
        );
    }
}
