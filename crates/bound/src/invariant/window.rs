//! Conditions invariant along a stretch of one path: for each branch decision of a path, the
//! shortest stretch of the path ending at the decision's edge (a window) such that every path
//! holding that stretch tests the same formula there.
//!
//! [`Invariance`] finds the branches whose condition is the same on every path; most are not (a
//! register reloaded from the stack, a value computed after a helper call or a BPF-to-BPF call),
//! and a core with such a decision prunes only the paths sharing its whole prefix. Yet many of
//! those conditions are fixed by a few instructions just before the branch: the null test of an
//! array lookup with a constant index, a flag a callee returns as a constant, a value the path
//! stored on the stack and loads back. This walk follows one path, the way the program runs it,
//! tracking for each register and each stack slot written at a known frame offset the earliest
//! node of the path its value depends on (its definition, and transitively its operands'); a
//! value that the global analysis finds invariant at a point depends on no node there, and
//! where a later join makes it vary, on the node before that join (every path through the edge
//! from it holds the same formula). A
//! condition whose compared registers depend on nodes from position `s` on is the same formula
//! on every path holding the path's edges `s..=` the decision's edge: such a path holds them in
//! a row (a path through two consecutive edges of a loop-free graph takes them one after the
//! other), so it runs the same instructions on the same operands from node `s` to the branch.
//!
//! What a value depends on, by instruction (anything else, or an operand that depends on an
//! unknown, makes it unknown):
//!
//! - constants (immediates, 64-bit constant loads): their own node;
//! - ALU and byte-order operations: their node and their operands' nodes; adding a constant to a
//!   frame pointer keeps it a frame pointer at a known offset, which is how stack slots are named;
//! - context and packet loads: as in the global analysis (no path to here may have written the
//!   packet), their node and their address's;
//! - stack loads at a known offset within what one store on the path wrote (since the last
//!   helper that may write through its arguments, or store at an unknown stack address): their
//!   node and the stored value's (a narrower load reads fixed bytes of the stored formula, and
//!   a later store over some of its bytes leaves the others as they were: a flag byte of a
//!   zeroed struct);
//! - `bpf_map_lookup_elem` on an array (`BPF_MAP_TYPE_ARRAY`, `PERCPU_ARRAY`) whose key is a
//!   constant the path stored on the stack: the pointer and its null-ness are a function of the
//!   index alone (`linerate_smt`'s maps resolve an array's constant index to its own slot, present
//!   within `max_entries`), so they depend on the lookup's node and the key's.
//!
//! BPF-to-BPF calls push a frame (the callee sees the caller's arguments, not its `r0` or
//! `r6`–`r9`), returns pop it (restoring the caller's `r6`–`r9` and frame pointer, `r0` the
//! callee's); tail calls, summarised callbacks and loops make everything unknown.
//!
//! A window need not be one stretch. A value stored on the stack and loaded back further on, or
//! held in a callee-saved register from an earlier node to its use, is the same formula on every
//! path holding what made it (up to the store or the definition) and the stretch from the load
//! or use on, where no path of the graph between may write those bytes or that register
//! ([`super::gap`]): the stretch between, with the branches that differ from path to path, drops
//! out of the window ([`Window::heads`], at most [`MAX_HEADS`] such pieces before the last).

use std::collections::BTreeMap;

use linerate_analysis::{Fact, Region};
use linerate_bpf::facts::helper;
use linerate_bpf::insn::{AluOp, CallTarget, Imm64, Instruction, Operand, Size, NUM_REGS};
use linerate_cfg::EdgeKind;

use super::{gap, leaves_packet, off_packet, Invariance, VARYING};
use crate::dag::{EdgeId, Step};
use crate::prepare::Prepared;

/// What a value depends on ([`Dep`]); `None`: unknown.
type Since = Option<Dep>;
const ANY: usize = usize::MAX;

/// What a value depends on: the earliest path position (node index along the path) it depends
/// on ([`ANY`]: none, the same on every path), so that it is the same formula on every path
/// holding the path's edges from there on; and where stack stores and loads of their bytes
/// allow it, a window with gaps ([`Gap`]), a claim about more paths.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Dep {
    start: usize,
    gap: Option<Gap>,
}

/// Most stretches before a gap a window holds: a value stored on the stack, loaded back, stored
/// again (a spill) and so on.
const MAX_HEADS: usize = 4;

/// The value is the same formula on every path holding the path's edges in each of `heads` (what
/// made a value stored on the stack, up to the store, in order) and its edges from `tail` on
/// (from the last load): the graph between each store and the load of its bytes leaves them
/// alone ([`Invariance::kept_between`]), and so does it between a callee-saved register's
/// definition and its use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Gap {
    heads: [(usize, usize); MAX_HEADS],
    count: usize,
    tail: usize,
}

impl Gap {
    fn heads(&self) -> &[(usize, usize)] {
        &self.heads[..self.count]
    }

    /// The gap with `stretch` (after every head) as one more head, and `tail`; `None` where it
    /// holds [`MAX_HEADS`] already.
    fn then(heads: &[(usize, usize)], stretch: (usize, usize), tail: usize) -> Option<Gap> {
        let mut out = [(0, 0); MAX_HEADS];
        let count = heads.len() + 1;
        out.get_mut(..count)?
            .copy_from_slice(&[heads, &[stretch]].concat());
        Some(Gap {
            heads: out,
            count,
            tail,
        })
    }

    /// The gap with its tail from `start` on at the latest, where that is after its heads.
    fn with_tail_from(self, start: usize) -> Option<Gap> {
        let last = self.heads().last().map_or(0, |h| h.1);
        (start > last).then_some(Gap {
            tail: self.tail.min(start),
            ..self
        })
    }
}

/// Depends on position `j` on.
fn at(j: usize) -> Since {
    Some(Dep {
        start: j,
        gap: None,
    })
}

/// The same on every path.
const INVARIANT: Since = Some(Dep {
    start: ANY,
    gap: None,
});

/// What a value computed from `a` and `b` depends on: both; gaps where both allow them (the same
/// heads, and the other part within the tail).
fn join(a: Since, b: Since) -> Since {
    let (a, b) = (a?, b?);
    let gap = match (a.gap, b.gap) {
        _ if a.start == ANY => b.gap,
        _ if b.start == ANY => a.gap,
        (Some(x), Some(y)) => {
            let tail = x.tail.min(y.tail);
            (x.heads() == y.heads()).then_some(Gap { tail, ..x })
        }
        (Some(g), None) => g.with_tail_from(b.start),
        (None, Some(g)) => g.with_tail_from(a.start),
        (None, None) => None,
    };
    Some(Dep {
        start: a.start.min(b.start),
        gap,
    })
}

/// The window of a branch at path position `j` whose compared values depend on `dep`.
fn window_of(dep: Dep, j: usize) -> Window {
    match dep.gap {
        _ if dep.start == ANY => Window {
            heads: Vec::new(),
            start: j,
        },
        Some(g) => Window {
            heads: g.heads().to_vec(),
            start: g.tail,
        },
        None => Window {
            heads: Vec::new(),
            start: dep.start,
        },
    }
}

/// The stretches of a path that decide a branch's condition: every path holding the path's edges
/// `start..=` the branch's, and those of each stretch of `heads`, tests the same formula there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Window {
    pub heads: Vec<(usize, usize)>,
    pub start: usize,
}

impl Window {
    /// The edges of `path` the window of the branch at position `end` holds.
    pub fn edges(&self, path: &[EdgeId], end: usize) -> Vec<EdgeId> {
        self.heads
            .iter()
            .chain([&(self.start, end)])
            .filter_map(|&(s, e)| path.get(s..=e))
            .flatten()
            .copied()
            .collect()
    }
}

/// A register's or stack slot's value along the path.
#[derive(Clone, Copy, Debug)]
struct Val {
    since: Since,
    /// The value, where it is a constant.
    konst: Option<u64>,
    /// A frame pointer plus this offset: (frame depth along the path, offset).
    fp: Option<(usize, i64)>,
}

const UNKNOWN: Val = Val {
    since: None,
    konst: None,
    fp: None,
};

/// One frame: its stack slots (offset -> width, value, and the path position of the store), and
/// the caller's registers `r6`–`r10` to restore on return, with where each was set.
#[derive(Clone, Debug, Default)]
struct Frame {
    slots: BTreeMap<i64, (u32, Val, usize)>,
    saved: Vec<(Val, usize)>,
}

/// The walk's state.
struct Walk {
    regs: [Val; NUM_REGS],
    /// For each register, the path position of the node that set it.
    set_at: [usize; NUM_REGS],
    /// The path position of the node the walk is in.
    position: usize,
    frames: Vec<Frame>,
    dirty: bool,
}

impl Walk {
    fn clear_stack(&mut self) {
        for f in &mut self.frames {
            f.slots.clear();
        }
    }

    /// Forgets the `width` bytes at `off` of frame `frame`: a slot they overlap keeps its other
    /// bytes, each a slot of its own holding that byte of the value (a flag byte stored into a
    /// zeroed struct leaves the struct's other bytes as they were).
    fn forget(&mut self, frame: usize, off: i64, width: u32) {
        let Some(f) = self.frames.get_mut(frame) else {
            return;
        };
        let end = off + i64::from(width);
        let overlapping: Vec<(i64, u32, Val, usize)> = f
            .slots
            .range(..end)
            .filter(|&(&o, &(w, _, _))| o + i64::from(w) > off)
            .map(|(&o, &(w, v, at))| (o, w, v, at))
            .collect();
        for (o, w, v, at) in overlapping {
            f.slots.remove(&o);
            for byte in o..o + i64::from(w) {
                if (off..end).contains(&byte) {
                    continue;
                }
                f.slots
                    .insert(byte, (1, bytes_of(v, (byte - o) as u32, 1), at));
            }
        }
    }

    /// The value a load of `width` bytes at `off` reads, and the path position of the store that
    /// wrote it: that of a store of the same width there, or the bytes of a wider store holding
    /// them.
    fn slot(&self, frame: usize, off: i64, width: u32) -> Option<(Val, usize)> {
        let slots = &self.frames.get(frame)?.slots;
        let (&o, &(w, v, at)) = slots.range(..=off).next_back()?;
        if o == off && w == width {
            return Some((v, at));
        }
        let inside = off + i64::from(width) <= o + i64::from(w);
        inside.then(|| (bytes_of(v, (off - o) as u32, width), at))
    }

    fn reg(&self, r: u8) -> Val {
        self.regs.get(r as usize).copied().unwrap_or(UNKNOWN)
    }

    fn set(&mut self, r: u8, v: Val) {
        if let Some(slot) = self.regs.get_mut(r as usize) {
            *slot = v;
            self.set_at[r as usize] = self.position;
        }
    }

    fn clobber_call(&mut self) {
        for r in 0..=5 {
            self.regs[r] = UNKNOWN;
        }
    }
}

/// The `width` bytes from byte `from` (little-endian) of a stored value: a function of the
/// value, so they depend on what the value depends on.
fn bytes_of(v: Val, from: u32, width: u32) -> Val {
    Val {
        since: v.since,
        konst: v.konst.map(|c| mask(width, c >> (8 * from))),
        fp: None,
    }
}

fn mask(width: u32, v: u64) -> u64 {
    if width >= 8 {
        v
    } else {
        v & ((1u64 << (8 * width)) - 1)
    }
}

impl Invariance {
    /// For each position `j` of `path` (edges from the source) whose edge is a conditional
    /// branch outcome, the window ending there: every path holding `path[w.start..=j]` and each
    /// of its heads' stretches tests the same formula at that branch. Positions without a known window are absent. Empty where the graph was not
    /// analysed ([`Invariance::none`]).
    pub fn windows(&self, prepared: &Prepared, path: &[EdgeId]) -> BTreeMap<usize, Window> {
        let mut out = BTreeMap::new();
        let dag = &prepared.dag;
        if self.entries.len() != dag.nodes.len() {
            return out;
        }
        let mut walk = unknown_walk();
        walk.regs[10] = Val {
            since: INVARIANT,
            konst: None,
            fp: Some((0, 0)),
        };
        for (j, &e) in path.iter().enumerate() {
            let Some(edge) = dag.edges.get(e) else { break };
            let node = edge.from;
            let entry = &self.entries[node];
            walk.position = j;
            for (r, v) in walk.regs.iter_mut().enumerate() {
                if entry.regs[r] != VARYING {
                    v.since = INVARIANT;
                } else if v.since == INVARIANT {
                    // Invariant up to the previous node's exit, no longer after the join here:
                    // the same on every path through the edge from there.
                    v.since = at(j.saturating_sub(1));
                    walk.set_at[r] = j.saturating_sub(1);
                }
            }
            walk.dirty = entry.dirty;
            let n = &dag.nodes[node];
            let Some(program) = n
                .program
                .and_then(|p| self.programs.get(p))
                .and_then(Option::as_ref)
            else {
                break;
            };
            let end = prepared.ends.get(node).copied().unwrap_or(n.slot);
            // The global analysis along the node: a register it finds invariant after an
            // instruction depends on no node (its instance numbers only need to differ within
            // the node).
            let mut global = entry.clone();
            let mut scratch: super::Def = super::CONTEXT + 1;
            for slot in n.slot..end {
                let Some(Some(insn)) = program.slots.get(slot) else {
                    continue;
                };
                if prepared.branch_pc(node) == Some(slot)
                    && matches!(edge.step, Step::Flow(EdgeKind::Taken | EdgeKind::NotTaken))
                {
                    if let Some(dep) = self.compared(prepared, path, &walk, insn, j) {
                        out.insert(j, window_of(dep, j));
                    }
                }
                let fact = program.analysis.fact(slot);
                self.transfer(prepared, path, &mut walk, insn, fact, j);
                super::transfer(&mut global, insn, fact, &mut scratch);
                for (v, d) in walk.regs.iter_mut().zip(&global.regs) {
                    if *d != VARYING {
                        v.since = INVARIANT;
                    }
                }
            }
            across(&mut walk, edge.step);
        }
        out
    }

    /// Applies `insn` at path position `j` of `path` (analysis fact `fact`).
    fn transfer(
        &self,
        prepared: &Prepared,
        path: &[EdgeId],
        w: &mut Walk,
        insn: &Instruction,
        fact: Option<Fact>,
        j: usize,
    ) {
        let here = at(j);
        match *insn {
            Instruction::Alu {
                wide, op, dst, src, ..
            } => {
                let s = match src {
                    Operand::Imm(i) => Val {
                        since: here,
                        konst: Some(i as i64 as u64),
                        fp: None,
                    },
                    Operand::Reg(r) => self.read(prepared, path, w, r, j),
                };
                // A move overwrites its destination without reading it.
                let d = if op == AluOp::Mov {
                    w.reg(dst)
                } else {
                    self.read(prepared, path, w, dst, j)
                };
                let v = match op {
                    AluOp::Mov => Val {
                        since: join(here, s.since),
                        konst: s.konst.map(|k| if wide { k } else { mask(4, k) }),
                        fp: s.fp.filter(|_| wide),
                    },
                    AluOp::Add | AluOp::Sub if wide && d.fp.is_some() => {
                        let delta = s.konst.map(|k| k as i64);
                        let fp = d.fp.zip(delta).map(|((f, o), k)| {
                            (
                                f,
                                if op == AluOp::Add {
                                    o.wrapping_add(k)
                                } else {
                                    o.wrapping_sub(k)
                                },
                            )
                        });
                        Val {
                            since: join(here, join(d.since, s.since)),
                            konst: None,
                            fp,
                        }
                    }
                    _ => Val {
                        since: join(here, join(d.since, s.since)),
                        konst: None,
                        fp: None,
                    },
                };
                w.set(dst, v);
            }
            Instruction::Endian { dst, .. } => {
                let d = self.read(prepared, path, w, dst, j);
                w.set(
                    dst,
                    Val {
                        since: join(here, d.since),
                        konst: None,
                        fp: None,
                    },
                );
            }
            Instruction::LoadImm64 { dst, imm } => {
                let v = match imm {
                    Imm64::Const(c) => Val {
                        since: here,
                        konst: Some(c),
                        fp: None,
                    },
                    _ => UNKNOWN,
                };
                w.set(dst, v);
            }
            Instruction::Load {
                size,
                signed,
                dst,
                src,
                off,
            } => {
                let a = self.read(prepared, path, w, src, j);
                let v = match fact {
                    Some(Fact::Memory(Some(Region::Ctx | Region::Packet))) if !w.dirty => Val {
                        since: join(here, a.since),
                        konst: None,
                        fp: None,
                    },
                    Some(Fact::Memory(Some(Region::Stack { .. }))) if !signed => {
                        a.fp.and_then(|(f, o)| {
                            let bytes = gap::Bytes {
                                depth: f,
                                offset: o + i64::from(off),
                                width: size.bytes(),
                            };
                            let (v, stored) = w.slot(f, bytes.offset, bytes.width)?;
                            let kept = gap::Kept::Bytes(bytes);
                            Some((v, self.across_gap(prepared, path, v.since, stored, j, kept)))
                        })
                        .map_or(UNKNOWN, |(v, gapped)| Val {
                            since: join(here, gapped.or(v.since)),
                            konst: v.konst.map(|k| mask(size.bytes(), k)),
                            fp: v.fp.filter(|_| size == Size::Dw),
                        })
                    }
                    _ => UNKNOWN,
                };
                w.set(dst, v);
            }
            Instruction::Store {
                size,
                dst,
                off,
                src,
            } => match fact {
                Some(Fact::Memory(Some(Region::Stack { .. }))) => match w.reg(dst).fp {
                    Some((f, o)) => {
                        let offset = o + i64::from(off);
                        w.forget(f, offset, size.bytes());
                        let v = match src {
                            Operand::Imm(i) => Val {
                                since: here,
                                konst: Some(mask(size.bytes(), i as i64 as u64)),
                                fp: None,
                            },
                            Operand::Reg(r) => {
                                let v = self.read(prepared, path, w, r, j);
                                Val {
                                    since: join(here, v.since),
                                    konst: v.konst.map(|k| mask(size.bytes(), k)),
                                    fp: v.fp.filter(|_| size == Size::Dw),
                                }
                            }
                        };
                        if let Some(frame) = w.frames.get_mut(f) {
                            frame.slots.insert(offset, (size.bytes(), v, j));
                        }
                    }
                    None => w.clear_stack(),
                },
                other => {
                    if !off_packet(other) {
                        w.dirty = true;
                        w.clear_stack();
                    }
                }
            },
            Instruction::Atomic {
                size,
                fetch,
                dst,
                src,
                off,
                ..
            } => {
                match (fact, w.reg(dst).fp) {
                    (Some(Fact::Memory(Some(Region::Stack { .. }))), Some((f, o))) => {
                        w.forget(f, o + i64::from(off), size.bytes());
                    }
                    (other, _) if off_packet(other) => {}
                    _ => {
                        w.dirty = true;
                        w.clear_stack();
                    }
                }
                if fetch {
                    w.set(src, UNKNOWN);
                }
                w.set(0, UNKNOWN);
            }
            Instruction::LegacyPacketLoad { .. } => w.clobber_call(),
            Instruction::Call(target) => {
                let result = match (target, fact) {
                    (CallTarget::Helper(helper::MAP_LOOKUP_ELEM), Some(Fact::MapCall(Some(m)))) => {
                        self.array_lookup(w, m, j)
                    }
                    _ => UNKNOWN,
                };
                match target {
                    CallTarget::Helper(id) if leaves_packet(id) => {}
                    CallTarget::Helper(_) | CallTarget::Kfunc(_) => {
                        w.dirty = true;
                        w.clear_stack();
                    }
                    // The callee's frame comes with the call edge.
                    CallTarget::Local(_) => return,
                }
                w.clobber_call();
                w.set(0, result);
            }
            Instruction::Ja { .. }
            | Instruction::MayGoto { .. }
            | Instruction::Jump { .. }
            | Instruction::Exit => {}
        }
    }

    /// What the registers a conditional jump at path position `j` compares depend on.
    fn compared(
        &self,
        prepared: &Prepared,
        path: &[EdgeId],
        w: &Walk,
        insn: &Instruction,
        j: usize,
    ) -> Since {
        let Instruction::Jump { dst, src, .. } = *insn else {
            return None;
        };
        let d = self.read(prepared, path, w, dst, j).since;
        match src {
            Operand::Imm(_) => d,
            Operand::Reg(s) => join(d, self.read(prepared, path, w, s, j).since),
        }
    }

    /// Register `r` as an instruction at path position `j` reads it: where it is a callee-saved
    /// one set at an earlier node and no path between may set it, what made it and the stretch
    /// from here on, with the gap between.
    fn read(&self, prepared: &Prepared, path: &[EdgeId], w: &Walk, r: u8, j: usize) -> Val {
        let v = w.reg(r);
        if !(6..=9).contains(&r) {
            return v;
        }
        let (Some(&set), Some(depth)) = (w.set_at.get(r as usize), w.frames.len().checked_sub(1))
        else {
            return v;
        };
        let kept = gap::Kept::Register { reg: r, depth };
        match self.across_gap(prepared, path, v.since, set, j, kept) {
            Some(dep) => Val {
                since: Some(dep),
                ..v
            },
            None => v,
        }
    }

    /// What a value made at path position `made` (depending on `since`: stored on the stack, or
    /// set in a register) depends on when read back at position `j` from `kept`: the stretches
    /// that made it, up to `made`, and the read's own from `j` on, where the graph between leaves
    /// `kept` alone; `None` where no gap is known (the stretch from `since` on is then the
    /// window).
    fn across_gap(
        &self,
        prepared: &Prepared,
        path: &[EdgeId],
        since: Since,
        made: usize,
        j: usize,
        kept: gap::Kept,
    ) -> Since {
        let dep = since?;
        if dep.start == ANY || dep.start > made || made + 1 >= j {
            return None;
        }
        // The value's own gaps stay; its last stretch ends where it was made.
        let gap = match dep.gap {
            Some(g) if g.tail <= made => Gap::then(g.heads(), (g.tail, made), j)?,
            Some(_) => return None,
            None => Gap::then(&[], (dep.start, made), j)?,
        };
        let edge = *path.get(made)?;
        let used = prepared.dag.edges.get(*path.get(j)?)?.from;
        self.kept_between(prepared, edge, used, kept)
            .then_some(Dep {
                start: dep.start,
                gap: Some(gap),
            })
    }

    /// `r0` after `bpf_map_lookup_elem` on map `map` at path position `j`: known where the map
    /// is an array and the key (at `r2`) a constant the path stored on the stack.
    fn array_lookup(&self, w: &Walk, map: usize, j: usize) -> Val {
        let Some(Some(key_size)) = self.arrays.get(map) else {
            return UNKNOWN;
        };
        let Some((f, o)) = w.reg(2).fp else {
            return UNKNOWN;
        };
        match w.slot(f, o, *key_size) {
            Some((key, _)) if key.konst.is_some() => Val {
                since: join(at(j), key.since),
                konst: None,
                fp: None,
            },
            _ => UNKNOWN,
        }
    }
}

/// Follows an edge of kind `step`.
fn across(w: &mut Walk, step: Step) {
    match step {
        Step::Flow(_) | Step::Exit => {}
        Step::Call { .. } => {
            let saved = (6..=10).map(|r| (w.regs[r], w.set_at[r])).collect();
            w.frames.push(Frame {
                slots: BTreeMap::new(),
                saved,
            });
            w.regs[0] = UNKNOWN;
            for r in 6..=9 {
                w.regs[r] = UNKNOWN;
            }
            w.regs[10] = Val {
                since: INVARIANT,
                konst: None,
                fp: Some((w.frames.len() - 1, 0)),
            };
        }
        Step::Return { .. } => {
            let frame = if w.frames.len() > 1 {
                w.frames.pop()
            } else {
                None
            };
            match frame {
                Some(f) if f.saved.len() == 5 => {
                    for (r, &(v, set)) in (6..=10).zip(&f.saved) {
                        w.regs[r] = v;
                        w.set_at[r] = set;
                    }
                    for r in 1..=5 {
                        w.regs[r] = UNKNOWN;
                    }
                }
                _ => *w = unknown_walk(),
            }
        }
        Step::TailCall { program: None, .. } => w.clobber_call(),
        Step::TailCall { .. } | Step::Callbacks { .. } | Step::Loop { .. } => *w = unknown_walk(),
    }
}

/// Nothing known: after work the walk does not follow.
fn unknown_walk() -> Walk {
    Walk {
        regs: [UNKNOWN; NUM_REGS],
        set_at: [0; NUM_REGS],
        position: 0,
        frames: vec![Frame::default()],
        dirty: true,
    }
}
