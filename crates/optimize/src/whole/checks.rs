//! A cheap first safety check of whole-program candidates (paper 002 §6), before the kernel's
//! checker, which stays the ground truth: register provenance along every path of the
//! candidate, refusing only what the checker surely refuses — reading a register no path wrote,
//! arithmetic the checker forbids on pointers (32-bit, bitwise, multiplying, pointer plus
//! pointer, scalar minus pointer, any arithmetic on `data_end`), dereferencing a scalar or
//! `data_end`, writing the context or the frame pointer, returning a pointer. The rules are the
//! kernel's `check_alu_op`, `adjust_ptr_min_max_vals`, `check_mem_access` and
//! `check_return_code` (kernel/bpf/verifier.c). Where it cannot tell (a value loaded from
//! memory, a helper's result), it lets the kernel decide.

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
    /// Another pointer: the stack, the packet, a map or map value.
    Pointer,
    /// Anything: a value loaded from memory, a helper's result, a mix of paths.
    Any,
}

/// Tags of r0–r10.
pub type Regs = [Tag; NUM_REGS];

/// Where control goes after a unit: falling through, jumping (`None` when it leaves the
/// function).
pub type Successors<'a> = &'a dyn Fn(usize, &Instruction) -> Option<[Option<usize>; 2]>;

/// The tags at the function's entry: r1 the context, r10 the frame.
pub fn entry() -> Regs {
    let mut regs = [Tag::Uninit; NUM_REGS];
    regs[1] = Tag::Ctx;
    regs[FRAME_POINTER as usize] = Tag::Pointer;
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
    matches!(t, Tag::Ctx | Tag::End | Tag::Pointer)
}

/// The tags after `insn`, or `None` when the kernel's checker refuses it.
pub fn transfer(insn: &Instruction, regs: &Regs) -> Option<Regs> {
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
                _ if pointer(d) => {
                    if !wide || d == Tag::End {
                        return None;
                    }
                    match (op, pointer(s)) {
                        (AluOp::Add, false) if d == Tag::Pointer => Tag::Pointer,
                        (AluOp::Sub, false) if d == Tag::Pointer => Tag::Pointer,
                        (AluOp::Add | AluOp::Sub, false) => Tag::Any,
                        (AluOp::Sub, true) => Tag::Any,
                        _ => return None,
                    }
                }
                _ if pointer(s) => match op {
                    AluOp::Add if wide && s == Tag::Pointer && d == Tag::Scalar => Tag::Pointer,
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
            if matches!(base, Tag::Scalar | Tag::End) {
                return None;
            }
            out[dst as usize] = match (base, size, off as u64) {
                (Tag::Ctx, Size::W, xdp_md::DATA_END) => Tag::End,
                (Tag::Ctx, Size::W, xdp_md::DATA | xdp_md::DATA_META) => Tag::Pointer,
                (Tag::Ctx, _, _) => Tag::Scalar,
                _ => Tag::Any,
            };
        }
        Instruction::Store { dst, .. } => {
            if matches!(regs[dst as usize], Tag::Scalar | Tag::End | Tag::Ctx) {
                return None;
            }
        }
        Instruction::Atomic {
            dst, src, fetch, ..
        } => {
            if matches!(regs[dst as usize], Tag::Scalar | Tag::End | Tag::Ctx) {
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
    Some(out)
}

/// The tags before each of `units` (`None`: not reached) along `successors` from unit `first`,
/// or the first unit found that the checker refuses.
pub fn flow(
    units: &[Option<Instruction>],
    first: usize,
    successors: Successors,
) -> Result<Vec<Option<Regs>>, usize> {
    let mut states: Vec<Option<Regs>> = vec![None; units.len()];
    *states.get_mut(first).ok_or(first)? = Some(entry());
    let mut work = vec![first];
    while let Some(i) = work.pop() {
        let (Some(regs), Some(Some(insn))) = (states[i], units.get(i)) else {
            continue;
        };
        let out = transfer(insn, &regs).ok_or(i)?;
        for s in successors(i, insn).ok_or(i)?.into_iter().flatten() {
            let merged = match states[s] {
                None => out,
                Some(old) => {
                    let mut m = old;
                    for (t, o) in m.iter_mut().zip(out) {
                        *t = merge(*t, o);
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
    use linerate_bpf::insn::build::{add64, alu64, exit, ldx, mov64, mov64_reg, st};

    /// Whether the straight-line `insns` pass the first check.
    fn passes(insns: &[Instruction]) -> bool {
        let units: Vec<Option<Instruction>> = insns.iter().map(|i| Some(*i)).collect();
        let n = units.len();
        let next = |i: usize, insn: &Instruction| {
            let fall = (!matches!(insn, Instruction::Exit)).then_some(i + 1);
            Some([fall.filter(|&f| f < n), None])
        };
        flow(&units, 0, &next).is_ok()
    }

    #[test]
    fn what_the_kernel_refuses_is_refused() {
        // r0 read before any write.
        assert!(!passes(&[add64(0, 1), exit()]));
        // Bitwise arithmetic on the context pointer.
        assert!(!passes(&[alu64(AluOp::And, 1, 1), mov64(0, 2), exit()]));
        // Arithmetic on data_end.
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
    }

    #[test]
    fn what_the_kernel_takes_passes() {
        assert!(passes(&[
            ldx(Size::W, 2, 1, 0),
            ldx(Size::W, 3, 1, 4),
            mov64_reg(4, 2),
            add64(4, 14),
            st(Size::W, 10, -4, 1),
            mov64(0, 2),
            exit()
        ]));
    }
}
