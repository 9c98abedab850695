//! Windows: the pieces of a program the search rewrites one at a time (paper 002 §5 IV and
//! appendix C.2, modular verification).
//!
//! A window is a run of straight-line instructions inside one basic block of the entry function:
//! ALU operations, byte swaps, loads and stores, never a jump, call, exit, 64-bit immediate or
//! atomic, and never a slot the object writer must keep ([`crate::Options::pinned`]). Each
//! window carries what K2's window condition needs: what is known of every register where it
//! starts (from `linerate-analysis`: pointer places and offsets, constants, and which
//! registers are readable at all), the registers read after it (liveness) and the stack bytes
//! read after it.

use linerate_analysis::{Analysis, Region, Shape, State};
use linerate_bpf::insn::regs::{RegSet, ARGUMENT_REGS, RETURN_REG};
use linerate_bpf::insn::{AtomicOp, Instruction, FRAME_POINTER, NUM_REGS};
use linerate_bpf::program::Object;
use linerate_cfg::{BlockId, Cfg};

/// A memory place a pointer points into; different places never alias.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Place {
    Stack,
    Packet,
    PacketMeta,
    /// `data_end`: a pointer never dereferenced.
    PacketEnd,
    Ctx,
    MapValue(usize),
    /// A map value of a map the analysis could not name, a map handle, a function.
    Other(u32),
}

/// What is known of a register where a window starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EntryFact {
    /// Not readable: the kernel's checker refuses a read.
    Uninit,
    Scalar,
    Constant(u64),
    /// A pointer into `place`, at `offset` from its base where known (stack offsets count from
    /// the frame pointer, packet offsets from `data`).
    Pointer {
        place: Place,
        offset: Option<i64>,
    },
}

/// Stack bytes of the entry function's frame, bit `i` for `r10 - 512 + i`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct StackSet(pub [u64; 8]);

impl StackSet {
    pub const ALL: StackSet = StackSet([u64::MAX; 8]);

    fn index(offset: i64) -> Option<usize> {
        let i = offset + 512;
        (0..512).contains(&i).then_some(i as usize)
    }

    /// Whether the byte at `offset` from the frame pointer is in the set.
    pub fn contains(&self, offset: i64) -> bool {
        Self::index(offset).is_some_and(|i| self.0[i / 64] >> (i % 64) & 1 == 1)
    }

    fn set(&mut self, offset: i64, len: u64, on: bool) {
        for k in 0..len as i64 {
            if let Some(i) = Self::index(offset + k) {
                if on {
                    self.0[i / 64] |= 1 << (i % 64);
                } else {
                    self.0[i / 64] &= !(1 << (i % 64));
                }
            }
        }
    }

    fn union(&mut self, other: &StackSet) {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a |= b;
        }
    }

    /// As one flag per byte, index 0 for `r10 - 512`.
    pub fn to_flags(self) -> [bool; 512] {
        let mut out = [false; 512];
        for (i, f) in out.iter_mut().enumerate() {
            *f = self.0[i / 64] >> (i % 64) & 1 == 1;
        }
        out
    }
}

/// A window of the program and what holds around it. What it says of registers where the window
/// starts holds of the registers the original window reads; the others are [`EntryFact::Uninit`].
#[derive(Clone, Debug)]
pub struct Window {
    /// Slot of the first instruction (windows hold one-slot instructions only).
    pub start: usize,
    pub block: BlockId,
    /// First slot of the block (how paths name blocks).
    pub block_first: usize,
    /// How much the window's cost counts toward the goal (1; less off the slowest path when the
    /// goal is the worst case).
    pub weight: f64,
    pub original: Vec<Instruction>,
    pub entry: [EntryFact; NUM_REGS],
    /// Registers read after the window before being written.
    pub live_out: RegSet,
    /// Stack bytes read after the window before being written.
    pub live_stack: StackSet,
    /// Entry states real runs reached it with ([`crate::observe`]): tests beside the random ones.
    pub observed: Vec<crate::run::WindowTest>,
    /// How many times a packet runs it on average, where observed.
    pub per_packet: Option<f64>,
}

impl Window {
    /// The slots the window occupies.
    pub fn slots(&self) -> std::ops::Range<usize> {
        self.start..self.start + self.original.len()
    }
}

/// Whether an instruction may be part of a window.
pub fn windowable(insn: &Instruction) -> bool {
    matches!(
        insn,
        Instruction::Alu { .. }
            | Instruction::Endian { .. }
            | Instruction::Load { .. }
            | Instruction::Store { .. }
            | Instruction::Atomic {
                op: AtomicOp::Add | AtomicOp::Or | AtomicOp::And | AtomicOp::Xor,
                fetch: false,
                ..
            }
    )
}

/// The place an analysis region is.
pub fn place_of(region: Region) -> Place {
    match region {
        Region::Ctx => Place::Ctx,
        Region::Packet => Place::Packet,
        Region::PacketMeta => Place::PacketMeta,
        Region::PacketEnd => Place::PacketEnd,
        Region::Stack { .. } => Place::Stack,
        Region::MapValue { map: Some(m) } => Place::MapValue(m),
        Region::MapValue { map: None } => Place::Other(0),
        Region::MapHandle { .. } => Place::Other(1),
        Region::Function => Place::Other(2),
    }
}

fn fact_of(shape: Shape) -> EntryFact {
    match shape {
        Shape::Unknown => EntryFact::Scalar,
        Shape::Scalar(i) => match i.constant() {
            Some(c) => EntryFact::Constant(c as u64),
            None => EntryFact::Scalar,
        },
        // A pointer that may be null is not yet usable as one.
        Shape::Pointer {
            maybe_null: true, ..
        } => EntryFact::Pointer {
            place: Place::Other(3),
            offset: None,
        },
        Shape::Pointer { region, offset, .. } => EntryFact::Pointer {
            place: place_of(region),
            offset: offset.constant().map(|o| o as i64),
        },
    }
}

/// The own-frame stack offset an address register holds at a slot, where known exactly.
fn stack_offset(state: &State, reg: u8, off: i16) -> Option<i64> {
    match state.regs.get(reg as usize)?.shape {
        Shape::Pointer {
            region: Region::Stack { depth: Some(0) },
            offset,
            maybe_null: false,
        } => offset.constant().map(|o| o as i64 + off as i64),
        _ => None,
    }
}

/// Whether an address register may point into the own frame at a slot.
fn may_be_stack(state: &State, reg: u8) -> bool {
    match state.regs.get(reg as usize).map(|v| v.shape) {
        Some(Shape::Pointer { region, .. }) => matches!(region, Region::Stack { .. }),
        Some(Shape::Scalar(_)) => false,
        _ => true,
    }
}

/// Liveness facts of the entry function: registers and stack bytes live in front of each slot.
struct Liveness {
    regs: Vec<RegSet>,
    stack: Vec<StackSet>,
}

/// Backward liveness of registers and own-frame stack bytes over the entry function's blocks.
fn liveness(cfg: &Cfg, states: &[Option<State>], slots: usize) -> Liveness {
    let mut regs = vec![0 as RegSet; slots + 1];
    let mut stack = vec![StackSet::default(); slots + 1];
    let blocks: Vec<_> = cfg.blocks().iter().filter(|b| b.function == 0).collect();
    let mut block_in: Vec<(RegSet, StackSet)> = vec![(0, StackSet::default()); cfg.blocks().len()];
    loop {
        let mut changed = false;
        for block in blocks.iter().rev() {
            let mut live = 0 as RegSet;
            let mut live_stack = StackSet::default();
            for s in cfg.successors(block.id) {
                live |= block_in[s].0;
                live_stack.union(&block_in[s].1);
            }
            for (slot, insn) in cfg.block_instructions(block.id).iter().rev() {
                let state = states.get(*slot).and_then(|s| s.as_ref());
                transfer(insn, state, &mut live, &mut live_stack);
                if *slot < slots {
                    regs[*slot] = live;
                    stack[*slot] = live_stack;
                }
            }
            if block_in[block.id] != (live, live_stack) {
                block_in[block.id] = (live, live_stack);
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    Liveness { regs, stack }
}

/// Liveness in front of `insn` from liveness behind it.
fn transfer(insn: &Instruction, state: Option<&State>, live: &mut RegSet, stack: &mut StackSet) {
    match insn {
        Instruction::Exit => *stack = StackSet::default(),
        Instruction::Call(_) | Instruction::LegacyPacketLoad { .. } => *stack = StackSet::ALL,
        Instruction::Store { dst, off, size, .. } => {
            if let Some(o) = state.and_then(|s| stack_offset(s, *dst, *off)) {
                stack.set(o, size.bytes() as u64, false);
            }
        }
        Instruction::Load { src, off, size, .. } => {
            match state.and_then(|s| stack_offset(s, *src, *off)) {
                Some(o) => stack.set(o, size.bytes() as u64, true),
                None if state.is_none_or(|s| may_be_stack(s, *src)) => *stack = StackSet::ALL,
                None => {}
            }
        }
        Instruction::Atomic { dst, off, size, .. } => {
            match state.and_then(|s| stack_offset(s, *dst, *off)) {
                Some(o) => stack.set(o, size.bytes() as u64, true),
                None => *stack = StackSet::ALL,
            }
        }
        _ => {}
    }
    *live = (*live & !insn.writes()) | insn.reads();
}

/// Registers certainly written on every path from the entry to each slot of the entry function
/// (forward, intersecting where paths meet): the readable ones.
fn initialised(cfg: &Cfg, slots: usize) -> Vec<RegSet> {
    let entry_regs: RegSet = (1 << 1) | (1 << FRAME_POINTER);
    let mut out = vec![0 as RegSet; slots + 1];
    let blocks: Vec<_> = cfg.blocks().iter().filter(|b| b.function == 0).collect();
    let mut block_in: Vec<Option<RegSet>> = vec![None; cfg.blocks().len()];
    if let Some(first) = blocks.first() {
        block_in[first.id] = Some(entry_regs);
    }
    for &b in cfg
        .functions()
        .first()
        .map(|f| f.topological_order())
        .unwrap_or(&[])
    {
        let Some(mut regs) = block_in[b] else {
            continue;
        };
        for (slot, insn) in cfg.block_instructions(b) {
            if *slot < slots {
                out[*slot] = regs;
            }
            regs = match insn {
                Instruction::Call(_) | Instruction::LegacyPacketLoad { .. } => {
                    (regs & !ARGUMENT_REGS) | RETURN_REG
                }
                _ => regs | insn.writes(),
            };
        }
        for s in cfg.successors(b) {
            block_in[s] = Some(match block_in[s] {
                Some(old) => old & regs,
                None => regs,
            });
        }
    }
    out
}

/// The windows of program `program`'s entry function: maximal runs of windowable instructions
/// inside each reachable block, none holding a slot of `pinned`, cut into pieces of at most
/// `max_len` instructions, the first piece of a run `phase` instructions long when that is
/// shorter (so that a later pass with another phase puts the cuts elsewhere).
pub fn find_windows(
    object: &Object,
    program: usize,
    cfg: &Cfg,
    analysis: &Analysis,
    pinned: &[usize],
    max_len: usize,
    phase: usize,
) -> Vec<Window> {
    let Some(prog) = object.programs.get(program) else {
        return Vec::new();
    };
    let slots = prog.functions.first().map_or(0, |f| f.len);
    let mut states: Vec<Option<State>> = vec![None; slots + 1];
    for block in cfg.blocks().iter().filter(|b| b.function == 0) {
        for (slot, state) in analysis.slot_states(object, cfg, block.id) {
            if slot < slots {
                states[slot] = Some(state);
            }
        }
    }
    let live = liveness(cfg, &states, slots);
    let init = initialised(cfg, slots);
    let mut windows = Vec::new();
    for block in cfg.blocks().iter().filter(|b| b.function == 0) {
        let insns = cfg.block_instructions(block.id);
        let mut run: Vec<(usize, Instruction)> = Vec::new();
        let mut flush = |run: &mut Vec<(usize, Instruction)>| {
            let max_len = max_len.max(1);
            let first = if phase > 0 && phase < max_len {
                phase.min(run.len())
            } else {
                0
            };
            let (head, rest) = run.split_at(first);
            for piece in std::iter::once(head)
                .filter(|h| !h.is_empty())
                .chain(rest.chunks(max_len))
            {
                let start = piece[0].0;
                let Some(state) = states.get(start).and_then(|s| s.as_ref()) else {
                    continue;
                };
                let end = start + piece.len();
                // Only registers the original window reads before writing them (and the frame
                // pointer) are readable to a candidate. Windows of one pass are rewritten
                // together: another window's rewrite keeps exactly what is live after it, so a
                // register this window does not read may hold anything by the time it runs,
                // whatever the analysis of the original program says it holds.
                let live_in = piece
                    .iter()
                    .rev()
                    .fold(live.regs[end], |l, (_, i)| (l & !i.writes()) | i.reads())
                    | (1 << FRAME_POINTER);
                let mut entry = [EntryFact::Uninit; NUM_REGS];
                for (r, e) in entry.iter_mut().enumerate() {
                    if init[start] >> r & 1 == 1 && live_in >> r & 1 == 1 {
                        *e = fact_of(state.regs[r].shape);
                    }
                }
                windows.push(Window {
                    start,
                    block: block.id,
                    block_first: block.first,
                    weight: 1.0,
                    original: piece.iter().map(|(_, i)| *i).collect(),
                    entry,
                    live_out: live.regs[end],
                    live_stack: live.stack[end],
                    observed: Vec::new(),
                    per_packet: None,
                });
            }
            run.clear();
        };
        for (slot, insn) in insns {
            let usable = windowable(insn) && !pinned.contains(slot) && *slot < slots;
            if usable {
                run.push((*slot, *insn));
            } else {
                flush(&mut run);
            }
        }
        flush(&mut run);
    }
    windows
}
