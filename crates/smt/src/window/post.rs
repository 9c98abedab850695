//! The postcondition, negated: the conditions under which the two windows' live outputs differ.
//! A live-out register, or a byte either window stored (on the stack only where code after the
//! window may read it), must be the same at the end; both windows' bytes are compared at every
//! offset either wrote, which covers every byte that can differ (the others are the initial
//! bytes in both).

use std::collections::BTreeSet;

use linerate_bpf::insn::{Instruction, NUM_REGS};
use z3::ast::{Ast, Bool, BV};

use super::memory::{Byte, Inputs};
use super::value::WinValue;
use super::{registers_used, End, WindowQuery, WindowRegion, STACK_BYTES};
use crate::value::Bits;

/// The conditions under which some live output differs; an error names an output whose
/// difference the model cannot decide soundly.
pub(super) fn differences(
    q: &WindowQuery,
    a: &End,
    b: &End,
    inputs: &mut Inputs,
) -> Result<Vec<Bool>, String> {
    let mut out = Vec::new();
    let written = |window: &[Instruction]| {
        window
            .iter()
            .filter_map(registers_used)
            .fold(0u16, |m, (_, w)| m | w)
    };
    // A register neither window writes keeps its entry value in both.
    let changed = written(q.original) | written(q.candidate);
    for r in 0..NUM_REGS {
        if q.live_out & changed & (1 << r) == 0 {
            continue;
        }
        if let Some(d) = value_difference(&a.regs[r], &b.regs[r])
            .map_err(|why| format!("live-out r{r}: {why}"))?
        {
            out.push(d);
        }
    }
    let mut constant: BTreeSet<(WindowRegion, u64)> = BTreeSet::new();
    let mut symbolic: Vec<(WindowRegion, Bits)> = Vec::new();
    for (region, offset, _) in a.writes.bytes.iter().chain(&b.writes.bytes) {
        match offset {
            Bits::Const(o) => {
                constant.insert((*region, *o));
            }
            Bits::Sym(_) => symbolic.push((*region, offset.clone())),
        }
    }
    let written = constant
        .into_iter()
        .map(|(r, o)| (r, Bits::Const(o)))
        .chain(symbolic);
    for (region, offset) in written {
        let live = if region == WindowRegion::Stack {
            stack_live(&q.live_stack, &offset)
        } else {
            Bool::from_bool(true)
        };
        if live.as_bool() == Some(false) {
            continue;
        }
        let x = a.writes.read(inputs, region, &offset);
        let y = b.writes.read(inputs, region, &offset);
        let at = match &offset {
            Bits::Const(o) => format!("{region:?} byte {}", *o as i64),
            Bits::Sym(_) => format!("{region:?} byte at a symbolic offset"),
        };
        if let Some(d) = byte_difference(&x, &y).map_err(|why| format!("{at}: {why}"))? {
            out.push(Bool::and(&[&live, &d]).simplify());
        }
    }
    Ok(out)
}

/// The condition that two register values differ (`None`: never).
fn value_difference(a: &WinValue, b: &WinValue) -> Result<Option<Bool>, String> {
    match (a, b) {
        (WinValue::Scalar(x), WinValue::Scalar(y)) => Ok(bits_difference(x, y)),
        (
            WinValue::Ptr {
                region: ra,
                offset: oa,
            },
            WinValue::Ptr {
                region: rb,
                offset: ob,
            },
        ) if ra == rb => Ok(bits_difference(oa, ob)),
        (WinValue::Invalid(why), _) | (_, WinValue::Invalid(why)) => Err(format!("holds {why}")),
        _ => Err("a pointer after one window and not the same region's after the other".into()),
    }
}

fn bits_difference(a: &Bits, b: &Bits) -> Option<Bool> {
    let d = match (a, b) {
        (Bits::Const(x), Bits::Const(y)) => return (x != y).then(|| Bool::from_bool(true)),
        _ => a.bv().eq(b.bv()).not().simplify(),
    };
    (d.as_bool() != Some(false)).then_some(d)
}

/// The condition that two bytes differ (`None`: never).
fn byte_difference(a: &Byte, b: &Byte) -> Result<Option<Bool>, String> {
    match (a, b) {
        (
            Byte::Ptr {
                region: ra,
                offset: oa,
                index: ia,
            },
            Byte::Ptr {
                region: rb,
                offset: ob,
                index: ib,
            },
        ) if ra == rb && ia == ib => Ok(bits_difference(oa, ob)),
        (Byte::Invalid(why), _) | (_, Byte::Invalid(why)) => Err(format!("holds {why}")),
        _ => match (a.bv(), b.bv()) {
            (Some(x), Some(y)) => {
                let d = x.eq(&y).not().simplify();
                Ok((d.as_bool() != Some(false)).then_some(d))
            }
            _ => Err("a pointer's byte after one window and something else after the other".into()),
        },
    }
}

/// The condition that the stack byte at `offset` (from r10) is live after the window: a live
/// byte of the frame, or any byte outside it (the verifier rejects such an access; compare it).
fn stack_live(live: &[bool; STACK_BYTES], offset: &Bits) -> Bool {
    let frame = STACK_BYTES as i64;
    match offset {
        Bits::Const(o) => {
            let o = *o as i64;
            Bool::from_bool(!(-frame..0).contains(&o) || live[(o + frame) as usize])
        }
        Bits::Sym(o) => {
            let at = |k: i64| BV::from_i64(k, 64);
            let in_frame = Bool::and(&[&at(-frame).bvsle(o), &o.bvslt(at(0))]);
            let mut cases = vec![in_frame.not()];
            // Maximal runs of live bytes, each a range test.
            let mut i = 0;
            while i < STACK_BYTES {
                if !live[i] {
                    i += 1;
                    continue;
                }
                let start = i;
                while i < STACK_BYTES && live[i] {
                    i += 1;
                }
                let (lo, hi) = (start as i64 - frame, i as i64 - frame);
                cases.push(Bool::and(&[&at(lo).bvsle(o), &o.bvslt(at(hi))]));
            }
            Bool::or(&cases.iter().collect::<Vec<_>>()).simplify()
        }
    }
}
