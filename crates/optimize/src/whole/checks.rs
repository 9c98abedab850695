//! A cheap first safety check of whole-program candidates (paper 002 §6), before the kernel's
//! checker, which stays the ground truth: register provenance along every path of the
//! candidate, refusing only what the checker surely refuses — reading a register no path wrote,
//! arithmetic the checker forbids on pointers (64-bit bitwise, multiplying, pointer plus
//! pointer, scalar minus pointer, any arithmetic on `data_end`), dereferencing a scalar or
//! `data_end`, writing the context or the frame pointer, returning a pointer. The rules are the
//! kernel's `check_alu_op`, `adjust_ptr_min_max_vals`, `check_mem_access` and
//! `check_return_code` (kernel/bpf/verifier.c). Where it cannot tell (a value loaded from
//! memory, a helper's result), it lets the kernel decide.
//!
//! One rule is stricter than the kernel's checker (issue 10 item 4, "no stack read before
//! write"): a privileged program may read stack bytes no path wrote, and gets whatever the last
//! program left there, while the interpreter and the equivalence check start from a zeroed
//! stack — so a candidate that stops writing a byte it reads would pass both and still differ in
//! the kernel. A load from the stack must read bytes written on every path, and at each helper
//! call the candidate must have written every stack byte the starting program had (what a
//! helper reads through a pointer, a map key say, is the helper's business).

use linerate_bpf::facts::xdp_md;
use linerate_bpf::insn::{AluOp, Imm64, Instruction, Operand, Size, FRAME_POINTER, NUM_REGS};

/// What a register holds, as far as the checks go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tag {
    /// Written on no path, or not on every path.
    Uninit,
    Scalar,
    /// The context pointer as the program received it.
    Ctx,
    /// `data_end`.
    End,
    /// The stack, this many bytes from the frame pointer.
    Stack(i32),
    /// Another pointer: the stack at an unknown offset, the packet, a map or map value.
    Pointer,
    /// Anything: a value loaded from memory, a helper's result, a mix of paths.
    Any,
}

/// Tags of r0–r10.
pub type Regs = [Tag; NUM_REGS];

/// Stack bytes written on every path, bit `512 + offset` for the byte `offset` from the frame
/// pointer.
pub type Init = [u64; 8];

/// What holds before an instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct State {
    pub regs: Regs,
    pub init: Init,
}

/// The bits of `len` stack bytes from `offset` (`None` when they leave the frame).
fn stack_bytes(offset: i64, len: usize) -> Option<impl Iterator<Item = usize>> {
    let start = usize::try_from(offset + 512).ok()?;
    (start + len <= 512).then_some(start..start + len)
}

fn size_bytes(size: Size) -> usize {
    match size {
        Size::B => 1,
        Size::H => 2,
        Size::W => 4,
        Size::Dw => 8,
    }
}

/// Whether the bytes an access of `size` at `off` from a register tagged `base` touches were
/// written (`None` when it leaves the frame); true when it is no access to a known stack place.
fn written(init: &Init, base: Tag, off: i16, size: Size) -> Option<bool> {
    let Tag::Stack(o) = base else {
        return Some(true);
    };
    Some(
        stack_bytes(o as i64 + off as i64, size_bytes(size))?
            .all(|b| init[b / 64] >> (b % 64) & 1 == 1),
    )
}

/// Where control goes after a unit: falling through, jumping (`None` when it leaves the
/// function).
pub type Successors<'a> = &'a dyn Fn(usize, &Instruction) -> Option<[Option<usize>; 2]>;

/// The tags at the function's entry: r1 the context, r10 the frame.
pub fn entry() -> Regs {
    let mut regs = [Tag::Uninit; NUM_REGS];
    regs[1] = Tag::Ctx;
    regs[FRAME_POINTER as usize] = Tag::Stack(0);
    regs
}

fn merge(a: Tag, b: Tag) -> Tag {
    match (a, b) {
        _ if a == b => a,
        (Tag::Uninit, _) | (_, Tag::Uninit) => Tag::Uninit,
        _ => Tag::Any,
    }
}

fn pointer(t: Tag) -> bool {
    matches!(t, Tag::Ctx | Tag::End | Tag::Stack(_) | Tag::Pointer)
}

/// The state after `insn`, or `None` when it is refused.
pub fn transfer(insn: &Instruction, state: &State) -> Option<State> {
    let regs = &state.regs;
    let mut init = state.init;
    let reads = insn.reads();
    // A call's argument count is the helper's business: its reads are not checked here.
    if !matches!(insn, Instruction::Call(_))
        && (0..NUM_REGS).any(|r| reads >> r & 1 == 1 && regs[r] == Tag::Uninit)
    {
        return None;
    }
    if insn.writes() >> FRAME_POINTER & 1 == 1 && !matches!(insn, Instruction::Call(_)) {
        return None;
    }
    let mut out = *regs;
    match *insn {
        Instruction::Alu { wide, op, dst, src } => {
            let s = match src {
                Operand::Reg(r) => regs[r as usize],
                Operand::Imm(_) => Tag::Scalar,
            };
            let d = regs[dst as usize];
            out[dst as usize] = match op {
                AluOp::Mov if wide => s,
                AluOp::Mov | AluOp::MovSx(_) => {
                    if pointer(s) || s == Tag::Any {
                        Tag::Any
                    } else {
                        Tag::Scalar
                    }
                }
                // 32-bit arithmetic on a pointer gives a privileged program an unknown scalar.
                _ if !wide && (pointer(d) || pointer(s)) => Tag::Any,
                _ if pointer(d) => {
                    match (op, pointer(s)) {
                        // A pointer difference (`data_end - data` too) is a scalar.
                        (AluOp::Sub, true) => Tag::Any,
                        _ if d == Tag::End => return None,
                        (AluOp::Add | AluOp::Sub, false) if d == Tag::Pointer => Tag::Pointer,
                        (AluOp::Add | AluOp::Sub, false) => match (d, src) {
                            (Tag::Stack(o), Operand::Imm(k)) if op == AluOp::Add => {
                                Tag::Stack(o.checked_add(k)?)
                            }
                            (Tag::Stack(o), Operand::Imm(k)) => Tag::Stack(o.checked_sub(k)?),
                            (Tag::Stack(_), _) => Tag::Pointer,
                            _ => Tag::Any,
                        },
                        _ => return None,
                    }
                }
                _ if pointer(s) => match op {
                    AluOp::Add
                        if wide
                            && matches!(s, Tag::Pointer | Tag::Stack(_))
                            && d == Tag::Scalar =>
                    {
                        Tag::Pointer
                    }
                    AluOp::Add if wide && s != Tag::End => Tag::Any,
                    _ => return None,
                },
                _ if d == Tag::Any || s == Tag::Any => Tag::Any,
                _ => Tag::Scalar,
            };
        }
        Instruction::Endian { dst, .. } => {
            if pointer(regs[dst as usize]) {
                return None;
            }
            if regs[dst as usize] == Tag::Scalar {
                out[dst as usize] = Tag::Scalar;
            }
        }
        Instruction::LoadImm64 { dst, imm } => {
            out[dst as usize] = match imm {
                Imm64::Const(_) => Tag::Scalar,
                _ => Tag::Pointer,
            };
        }
        Instruction::Load {
            size,
            dst,
            src,
            off,
            ..
        } => {
            let base = regs[src as usize];
            if matches!(base, Tag::Scalar | Tag::End) || !written(&init, base, off, size)? {
                return None;
            }
            out[dst as usize] = match (base, size, off as u64) {
                (Tag::Ctx, Size::W, xdp_md::DATA_END) => Tag::End,
                (Tag::Ctx, Size::W, xdp_md::DATA | xdp_md::DATA_META) => Tag::Pointer,
                (Tag::Ctx, _, _) => Tag::Scalar,
                _ => Tag::Any,
            };
        }
        Instruction::Store { dst, off, size, .. } => {
            let base = regs[dst as usize];
            if matches!(base, Tag::Scalar | Tag::End | Tag::Ctx) {
                return None;
            }
            if let Tag::Stack(o) = base {
                for b in stack_bytes(o as i64 + off as i64, size_bytes(size))? {
                    init[b / 64] |= 1 << (b % 64);
                }
            }
        }
        Instruction::Atomic {
            dst,
            src,
            fetch,
            off,
            size,
            ..
        } => {
            let base = regs[dst as usize];
            if matches!(base, Tag::Scalar | Tag::End | Tag::Ctx)
                || !written(&init, base, off, size)?
            {
                return None;
            }
            if fetch {
                out[src as usize] = Tag::Any;
            }
            if insn.writes() & 1 == 1 {
                out[0] = Tag::Any;
            }
        }
        Instruction::Call(_) | Instruction::LegacyPacketLoad { .. } => {
            // The callee may write through a stack pointer it is given, as far as the frame's
            // top (its size is the callee's business).
            for &t in &regs[1..=5] {
                if let Tag::Stack(o) = t {
                    for b in stack_bytes(o as i64, usize::try_from(-(o as i64)).unwrap_or(0))
                        .into_iter()
                        .flatten()
                    {
                        init[b / 64] |= 1 << (b % 64);
                    }
                }
            }
            out[0] = Tag::Any;
            for t in &mut out[1..=5] {
                *t = Tag::Uninit;
            }
        }
        Instruction::Exit => {
            if pointer(regs[0]) {
                return None;
            }
        }
        Instruction::Ja { .. } | Instruction::Jump { .. } | Instruction::MayGoto { .. } => {}
    }
    Some(State { regs: out, init })
}

/// The states before each of `units` (`None`: not reached) along `successors` from unit
/// `first`, or the first unit found refused. With `calls`, the states of the starting program:
/// at each call the candidate must have written the stack bytes it had.
pub fn flow(
    units: &[Option<Instruction>],
    first: usize,
    successors: Successors,
    calls: Option<&[Option<State>]>,
) -> Result<Vec<Option<State>>, usize> {
    let mut states: Vec<Option<State>> = vec![None; units.len()];
    *states.get_mut(first).ok_or(first)? = Some(State {
        regs: entry(),
        init: [0; 8],
    });
    let mut work = vec![first];
    while let Some(i) = work.pop() {
        let (Some(state), Some(Some(insn))) = (states[i], units.get(i)) else {
            continue;
        };
        if let (Instruction::Call(_), Some(Some(before))) = (insn, calls.and_then(|c| c.get(i))) {
            if state.init.iter().zip(before.init).any(|(a, b)| a & b != b) {
                return Err(i);
            }
        }
        let out = transfer(insn, &state).ok_or(i)?;
        for s in successors(i, insn).ok_or(i)?.into_iter().flatten() {
            let merged = match states[s] {
                None => out,
                Some(old) => {
                    let mut m = old;
                    for (t, o) in m.regs.iter_mut().zip(out.regs) {
                        *t = merge(*t, o);
                    }
                    for (a, b) in m.init.iter_mut().zip(out.init) {
                        *a &= b;
                    }
                    m
                }
            };
            if states[s] != Some(merged) {
                states[s] = Some(merged);
                work.push(s);
            }
        }
    }
    Ok(states)
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_bpf::insn::build::{add64, alu64, alu64_reg, exit, ldx, mov64, mov64_reg, st};

    /// Whether the straight-line `insns` pass the first check.
    fn passes(insns: &[Instruction]) -> bool {
        let units: Vec<Option<Instruction>> = insns.iter().map(|i| Some(*i)).collect();
        let n = units.len();
        let next = |i: usize, insn: &Instruction| {
            let fall = (!matches!(insn, Instruction::Exit)).then_some(i + 1);
            Some([fall.filter(|&f| f < n), None])
        };
        flow(&units, 0, &next, None).is_ok()
    }

    #[test]
    fn what_the_kernel_refuses_is_refused() {
        // r0 read before any write.
        assert!(!passes(&[add64(0, 1), exit()]));
        // Bitwise arithmetic on the context pointer.
        assert!(!passes(&[alu64(AluOp::And, 1, 1), mov64(0, 2), exit()]));
        // Arithmetic on data_end (a difference of pointers is fine: see below).
        assert!(!passes(&[
            ldx(Size::W, 3, 1, 4),
            add64(3, 1),
            mov64(0, 2),
            exit()
        ]));
        // A scalar dereferenced, the context written, a pointer returned.
        assert!(!passes(&[mov64(2, 8), ldx(Size::B, 0, 2, 0), exit()]));
        assert!(!passes(&[st(Size::W, 1, 0, 0), mov64(0, 2), exit()]));
        assert!(!passes(&[mov64_reg(0, 10), exit()]));
        // A stack byte read before any write.
        assert!(!passes(&[
            st(Size::H, 10, -4, 1),
            ldx(Size::W, 0, 10, -4),
            exit()
        ]));
    }

    #[test]
    fn what_the_kernel_takes_passes() {
        assert!(passes(&[
            ldx(Size::W, 2, 1, 0),
            ldx(Size::W, 3, 1, 4),
            mov64_reg(4, 2),
            add64(4, 14),
            st(Size::W, 10, -4, 1),
            mov64_reg(6, 10),
            add64(6, -4),
            ldx(Size::H, 7, 6, 2),
            mov64_reg(5, 3),
            alu64_reg(AluOp::Sub, 5, 2),
            mov64(0, 2),
            exit()
        ]));
    }
}
