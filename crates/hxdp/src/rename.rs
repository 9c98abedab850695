//! Register renaming (paper 003 §3.4, "physical register assignment"): a value defined again in
//! a block where its register already served gets a free register, so that its instructions no
//! longer wait for the earlier ones (Bernstein's third condition, and the write-after-read order
//! the rows must otherwise keep).
//!
//! A *web* is a value's life inside one block: its definition (an instruction that writes the
//! register without reading it), the instructions that update it in place (`r4 <<= 8` reads and
//! writes the same field), and the reads of it, up to the next definition. A web is renamed only
//! when it ends inside the block (its value is not live out), no call or exit reads its register
//! implicitly, and the new register is referenced by nothing from the definition to the last read
//! and holds no value live there; the renamed program computes the same values in other
//! registers, and every register live after the web holds what it held before.

use linerate_bpf::insn::{AluOp, Instruction, Operand, Reg};

use crate::isa::HxInsn;
use crate::liveness::Liveness;
use crate::program::Lowered;

/// How an instruction field uses its register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Read,
    Write,
    ReadWrite,
}

/// `insn` with each explicit register field `f` replaced by `map(f, role)`; `None` for
/// instructions whose registers are not all explicit fields (calls, exits, atomics).
fn map_regs(insn: HxInsn, map: &mut impl FnMut(Reg, Role) -> Reg) -> Option<HxInsn> {
    use Role::*;
    let operand = |src: Operand, map: &mut dyn FnMut(Reg, Role) -> Reg| match src {
        Operand::Reg(r) => Operand::Reg(map(r, Read)),
        imm => imm,
    };
    Some(match insn {
        HxInsn::Ebpf(i) => HxInsn::Ebpf(match i {
            Instruction::Alu { wide, op, dst, src } => {
                let src = operand(src, map);
                let role = match op {
                    AluOp::Mov | AluOp::MovSx(_) => Write,
                    _ => ReadWrite,
                };
                Instruction::Alu {
                    wide,
                    op,
                    dst: map(dst, role),
                    src,
                }
            }
            Instruction::Endian { kind, bits, dst } => Instruction::Endian {
                kind,
                bits,
                dst: map(dst, ReadWrite),
            },
            Instruction::LoadImm64 { dst, imm } => Instruction::LoadImm64 {
                dst: map(dst, Write),
                imm,
            },
            Instruction::Load {
                size,
                signed,
                dst,
                src,
                off,
            } => {
                let src = map(src, Read);
                Instruction::Load {
                    size,
                    signed,
                    dst: map(dst, Write),
                    src,
                    off,
                }
            }
            Instruction::Store {
                size,
                dst,
                off,
                src,
            } => Instruction::Store {
                size,
                dst: map(dst, Read),
                off,
                src: operand(src, map),
            },
            Instruction::Jump {
                wide,
                cond,
                dst,
                src,
                off,
            } => Instruction::Jump {
                wide,
                cond,
                dst: map(dst, Read),
                src: operand(src, map),
                off,
            },
            Instruction::Ja { .. } => i,
            _ => return None,
        }),
        HxInsn::Alu3 {
            wide,
            op,
            dst,
            src,
            imm,
        } => {
            let src = map(src, Read);
            HxInsn::Alu3 {
                wide,
                op,
                dst: map(dst, Write),
                src,
                imm,
            }
        }
        HxInsn::Load48 { dst, src, off } => {
            let src = map(src, Read);
            HxInsn::Load48 {
                dst: map(dst, Write),
                src,
                off,
            }
        }
        HxInsn::Store48 { dst, off, src } => HxInsn::Store48 {
            dst: map(dst, Read),
            off,
            src: map(src, Read),
        },
        HxInsn::ExitWith(_) | HxInsn::ImmHigh(_) => insn,
    })
}

/// The roles in which `insn` uses register `r` through explicit fields, and whether it uses it
/// otherwise (`None`).
fn roles(insn: HxInsn, r: Reg) -> Option<Vec<Role>> {
    let mut found = Vec::new();
    map_regs(insn, &mut |reg, role| {
        if reg == r {
            found.push(role);
        }
        reg
    })?;
    Some(found)
}

/// Renames the webs of `program` that can be, block by block; returns how many were renamed.
pub fn rename(program: &mut Lowered) -> usize {
    let leaders = program.leaders();
    let n = program.len();
    let mut renamed = 0;
    let mut block_start = 0;
    for d in 0..n {
        if leaders[d] {
            block_start = d;
        }
        let liveness = Liveness::of(program);
        if let Some(web) = web_at(program, &leaders, &liveness, block_start, d) {
            apply(program, &web);
            renamed += 1;
        }
    }
    renamed
}

/// A web to rename: from its definition `def` to its last read `last`, register `from` becomes
/// `to` (in the definition's written field and every later read or updated field).
struct Web {
    def: usize,
    last: usize,
    from: Reg,
    to: Reg,
}

fn web_at(
    program: &Lowered,
    leaders: &[bool],
    liveness: &Liveness,
    block_start: usize,
    def: usize,
) -> Option<Web> {
    let insn = program.insns[def].insn;
    let written = insn.writes();
    if written.count_ones() != 1 || insn.is_call() {
        return None;
    }
    let r = written.trailing_zeros() as Reg;
    // A fresh definition only.
    if roles(insn, r)? != [Role::Write] {
        return None;
    }
    let mask = 1u16 << r;
    // Follow the web to its end inside the block.
    let n = program.len();
    let mut last = def;
    let mut j = def + 1;
    let mut ended = false;
    while j < n && !leaders[j] {
        let other = program.insns[j].insn;
        let uses = other.reads() & mask != 0;
        let kills = other.writes() & mask != 0;
        if !uses && !kills {
            j += 1;
            continue;
        }
        let field_roles = roles(other, r)?;
        let explicit_read = field_roles.iter().any(|&x| x != Role::Write);
        if uses && !explicit_read {
            return None;
        }
        if uses {
            last = j;
        }
        if kills {
            if field_roles.contains(&Role::ReadWrite) {
                j += 1;
                continue;
            }
            // A fresh definition (explicit or a call's clobber) ends the web.
            ended = true;
            break;
        }
        j += 1;
    }
    if !ended && liveness.live_out[last] & mask != 0 {
        return None;
    }
    if last == def {
        return None;
    }
    // Worth it only where the register serves elsewhere in the block too (before the web, or
    // after it: a later definition would otherwise wait for the web's reads), or holds a value
    // read where the branch falling into this block goes (the web could not run beside that
    // branch).
    let block_end = (def + 1..n).find(|&k| leaders[k]).unwrap_or(n);
    let serves_elsewhere = (block_start..def)
        .chain(last + 1..block_end)
        .any(|i| (program.insns[i].insn.reads() | program.insns[i].insn.writes()) & mask != 0);
    let live_past_branch = block_start
        .checked_sub(1)
        .filter(|&p| program.falls_through(p))
        .and_then(|p| program.insns[p].target)
        .map_or(0, |t| liveness.live_in[t]);
    if !serves_elsewhere && live_past_branch & mask == 0 {
        return None;
    }
    let referenced = |t: Reg| {
        (def..=last).any(|k| {
            let i = program.insns[k].insn;
            (i.reads() | i.writes()) & (1 << t) != 0 || liveness.live_out[k] & (1 << t) != 0
        })
    };
    let used_in_block = |t: Reg| {
        (block_start..block_end).any(|k| {
            let i = program.insns[k].insn;
            (i.reads() | i.writes()) & (1 << t) != 0
        })
    };
    let candidates: Vec<Reg> = (0..10).filter(|&t| t != r && !referenced(t)).collect();
    let free_past_branch = |t: Reg| live_past_branch & (1 << t) == 0;
    let to = candidates
        .iter()
        .copied()
        .find(|&t| !used_in_block(t) && free_past_branch(t))
        .or_else(|| candidates.iter().copied().find(|&t| !used_in_block(t)))
        .or_else(|| candidates.first().copied())?;
    Some(Web {
        def,
        last,
        from: r,
        to,
    })
}

/// Renames `web` in place.
fn apply(program: &mut Lowered, web: &Web) {
    for k in web.def..=web.last {
        let insn = program.insns[k].insn;
        let renamed = map_regs(insn, &mut |reg, role| {
            let in_web = match role {
                Role::Write => k == web.def,
                Role::Read | Role::ReadWrite => k != web.def,
            };
            if reg == web.from && in_web {
                web.to
            } else {
                reg
            }
        });
        if let Some(renamed) = renamed {
            program.insns[k].insn = renamed;
        }
    }
}
