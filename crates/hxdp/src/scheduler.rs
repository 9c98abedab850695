//! VLIW scheduling (paper 003 §3.4 "instruction scheduling", §4.2 "parallel branching"): packs a
//! [`Lowered`] program into the rows of a [`Schedule`] under the distances of [`crate::deps`].
//!
//! The unit of scheduling is a *superblock*: a basic block followed by the blocks it falls into
//! that nothing else reaches (with parallel branching on; a single block otherwise). Its
//! instructions are placed in source order, each in the first row and lane its dependences allow,
//! as the paper's scheduler fills the current row with every enabled instruction. The branches of
//! a superblock keep their order: a later one sits in a later row, or in the same row in a later
//! lane (lower priority), which is what lets a chain of header checks resolve in one row (Fig. 6).
//! An instruction of a later block of the superblock may move up beside or above an earlier
//! block's branch only where executing it when that branch is taken changes nothing: it computes
//! registers, or loads what cannot fault there ([`crate::deps::Facts::speculable_past`]), into
//! registers dead where the branch goes.
//! Every other instruction stays below the branches that precede it.
//!
//! Superblocks are laid out in source order, so that fall-through stays fall-through; each jump
//! target starts a superblock. Where control enters a superblock, the first row sees the last row
//! executed before it (the row of the jump, or the previous superblock's last row) through the
//! same forwarding rule as within one: it reads a register written there only in the writer's
//! lane. The writers of a superblock entered by a backward jump are not known when it is placed, so
//! its first row reads no register and no memory.

use std::ops::Range;

use linerate_bpf::insn::regs::{members, RegSet};
use linerate_bpf::insn::NUM_REGS;

use linerate_analysis::Region;

use crate::deps::{distance, Facts, Kind};
use crate::liveness::Liveness;
use crate::program::Lowered;
use crate::rom::aim_jump;
use crate::schedule::{Row, Schedule, Slot};

/// How to schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScheduleOptions {
    /// Execution lanes per row (the hXDP core has 4).
    pub lanes: usize,
    /// Merge fall-through chains into superblocks and resolve their branches in parallel (§4.2).
    pub parallel_branching: bool,
}

impl Default for ScheduleOptions {
    fn default() -> ScheduleOptions {
        ScheduleOptions {
            lanes: 4,
            parallel_branching: true,
        }
    }
}

/// What the first row of a superblock may read of the row executed before it.
#[derive(Clone, Debug)]
struct Entry {
    /// For each register, the lane that wrote it in a row control may come from: `None` where no
    /// such row wrote it; `Some(None)` where it must not be read (several lanes, or unknown).
    written: [Option<Option<usize>>; NUM_REGS],
    /// Whether a row control may come from stored to memory (no load or call in the first row).
    stored: bool,
}

impl Entry {
    fn clean() -> Entry {
        Entry {
            written: [None; NUM_REGS],
            stored: false,
        }
    }

    fn unknown() -> Entry {
        Entry {
            written: [Some(None); NUM_REGS],
            stored: true,
        }
    }

    /// Adds the effects of a row control may come from.
    fn add_row(&mut self, row: &Building, facts: &[Facts]) {
        for (lane, i) in row.lanes.iter().enumerate() {
            let Some(i) = *i else { continue };
            let f = &facts[i];
            for r in members(f.writes) {
                self.written[r] = match self.written[r] {
                    None => Some(Some(lane)),
                    Some(Some(l)) if l == lane => Some(Some(lane)),
                    _ => Some(None),
                };
            }
            if matches!(f.kind, Kind::Store(_)) {
                self.stored = true;
            }
        }
    }

    /// Whether an instruction with `facts` may sit in the first row in `lane`.
    fn allows(&self, f: &Facts, lane: usize) -> bool {
        if self.stored && matches!(f.kind, Kind::Load(_) | Kind::Call) {
            return false;
        }
        members(f.reads).all(|r| match self.written[r] {
            None => true,
            Some(Some(l)) => l == lane,
            Some(None) => false,
        })
    }
}

/// A row being filled: which instruction each lane holds.
#[derive(Clone, Debug)]
struct Building {
    lanes: Vec<Option<usize>>,
    /// Lanes holding the second word of a wide immediate load.
    high: Vec<bool>,
    call: bool,
}

/// Schedules `program` (with its `facts` and `liveness`) into rows; also returns the rows of each
/// superblock, in order.
///
/// A superblock entered by a backward jump is first placed without knowing the row the jump
/// sits in (its first row reads nothing: [`Entry::unknown`]). A second placement takes that row
/// from the first; it is kept if every superblock's first row respects the rows that actually
/// lead to it, and the first placement otherwise.
pub fn schedule(
    program: &Lowered,
    facts: &[Facts],
    liveness: &Liveness,
    options: &ScheduleOptions,
) -> (Schedule, Vec<Range<usize>>) {
    let lanes = options.lanes.max(1);
    let blocks = program.blocks();
    let superblocks = superblocks(program, &blocks, options.parallel_branching);
    let units = Units {
        program,
        facts,
        liveness,
        blocks: &blocks,
        superblocks: &superblocks,
        lanes,
    };
    let first = units.place_all(None);
    let second = units.place_all(Some(&first));
    let chosen = if units.entries_hold(&second) {
        second
    } else {
        first
    };
    let ends = chosen
        .starts
        .iter()
        .skip(1)
        .copied()
        .chain([chosen.rows.len()]);
    let ranges = chosen.starts.iter().zip(ends).map(|(&s, e)| s..e).collect();
    (
        assemble(program, &chosen.rows, &chosen.entry_rows, lanes),
        ranges,
    )
}

/// What placing a program needs.
struct Units<'a> {
    program: &'a Lowered,
    facts: &'a [Facts],
    liveness: &'a Liveness,
    blocks: &'a [(usize, usize)],
    superblocks: &'a [Vec<usize>],
    lanes: usize,
}

/// A placement of the whole program.
struct Placement {
    rows: Vec<Building>,
    /// Where each instruction was placed: (absolute row, lane).
    at: Vec<Option<(usize, usize)>>,
    /// The first row of each superblock.
    starts: Vec<usize>,
    /// The row each superblock starts at, by its first instruction: where jumps to it go (its
    /// first instruction may sit in a later row, when it must wait for what precedes the jump).
    entry_rows: std::collections::HashMap<usize, usize>,
}

impl Units<'_> {
    /// Places every superblock in order; a jump not yet placed is looked up in `earlier`.
    fn place_all(&self, earlier: Option<&Placement>) -> Placement {
        let mut p = Placement {
            rows: Vec::new(),
            at: vec![None; self.program.len()],
            starts: Vec::with_capacity(self.superblocks.len()),
            entry_rows: std::collections::HashMap::new(),
        };
        for (s, members) in self.superblocks.iter().enumerate() {
            let start = p.rows.len();
            p.starts.push(start);
            let first = self.blocks[members[0]].0;
            p.entry_rows.insert(first, start);
            let entry = self.entry_of(&p, earlier, s, start);
            place_superblock(
                self.program,
                self.facts,
                self.liveness,
                self.blocks,
                members,
                &entry,
                self.lanes,
                start,
                &mut p.rows,
                &mut p.at,
            );
        }
        p
    }

    /// What the first row of superblock `s`, starting at row `start`, may read: the rows control
    /// may come from, in `p`, else in `earlier`; unknown where neither placed them.
    fn entry_of(
        &self,
        p: &Placement,
        earlier: Option<&Placement>,
        s: usize,
        start: usize,
    ) -> Entry {
        let program = self.program;
        let mut entry = Entry::clean();
        if s > 0 {
            let previous = self.superblocks[s - 1]
                .last()
                .map(|&b| self.blocks[b].1 - 1);
            if let (Some(last), Some(row)) = (previous, start.checked_sub(1)) {
                if program.falls_through(last) {
                    entry.add_row(&p.rows[row], self.facts);
                }
            }
        }
        let first = self.blocks[self.superblocks[s][0]].0;
        for (i, l) in program.insns.iter().enumerate() {
            if l.target != Some(first) {
                continue;
            }
            let placed = match p.at[i] {
                Some((row, _)) if row < p.rows.len() => Some(&p.rows[row]),
                _ => earlier.and_then(|e| e.at[i].map(|(row, _)| &e.rows[row])),
            };
            match placed {
                Some(row) => entry.add_row(row, self.facts),
                None => return Entry::unknown(),
            }
        }
        entry
    }

    /// Whether every superblock's first row of `p` respects the rows that lead to it in `p`.
    fn entries_hold(&self, p: &Placement) -> bool {
        (0..self.superblocks.len()).all(|s| {
            let start = p.starts[s];
            let entry = self.entry_of(p, None, s, start);
            p.rows.get(start).is_none_or(|row| {
                row.lanes
                    .iter()
                    .enumerate()
                    .all(|(lane, i)| i.is_none_or(|i| entry.allows(&self.facts[i], lane)))
            })
        })
    }
}

/// Groups blocks into superblocks: a block starts one unless it is reached only by falling out
/// of the block before it (and parallel branching is on).
fn superblocks(
    program: &Lowered,
    blocks: &[(usize, usize)],
    parallel_branching: bool,
) -> Vec<Vec<usize>> {
    let mut targeted = vec![false; program.len()];
    for l in &program.insns {
        if let Some(t) = l.target {
            targeted[t] = true;
        }
    }
    let mut out: Vec<Vec<usize>> = Vec::new();
    for (b, &(first, _)) in blocks.iter().enumerate() {
        let joins = parallel_branching
            && b > 0
            && !targeted[first]
            && program.falls_through(blocks[b - 1].1 - 1);
        match out.last_mut() {
            Some(current) if joins => current.push(b),
            _ => out.push(vec![b]),
        }
    }
    out
}

/// Places the instructions of one superblock (blocks `members`) in rows from `start` on.
#[allow(clippy::too_many_arguments)]
fn place_superblock(
    program: &Lowered,
    facts: &[Facts],
    liveness: &Liveness,
    blocks: &[(usize, usize)],
    members: &[usize],
    entry: &Entry,
    lanes: usize,
    start: usize,
    rows: &mut Vec<Building>,
    at: &mut [Option<(usize, usize)>],
) {
    let mut placed = Placed::default();
    // Branches placed so far: (row, lane, registers live where it goes, the branch).
    let mut branches: Vec<(usize, usize, RegSet, usize)> = Vec::new();
    // Registers read by the instructions after each one of the superblock: a lane whose previous
    // row produced one of them is kept free for its reader, which only that lane can serve then.
    let order: Vec<usize> = members
        .iter()
        .flat_map(|&b| blocks[b].0..blocks[b].1)
        .collect();
    let mut read_later = vec![0 as RegSet; program.len()];
    let mut later = 0 as RegSet;
    for &i in order.iter().rev() {
        read_later[i] = later;
        later |= facts[i].reads;
    }
    for &b in members {
        let (first, end) = blocks[b];
        let mut block_rows_max = start;
        for i in first..end {
            let f = &facts[i];
            let insn = &program.insns[i].insn;
            let control = insn.is_control();
            let mut earliest = start;
            // Below the branches it follows, unless it may run where they go.
            for &(row, _, live_there, branch) in &branches {
                let harmless = f.speculable_past(&facts[branch]) && f.writes & live_there == 0;
                if control {
                    // A later branch may share the row, in a later lane.
                    earliest = earliest.max(row);
                } else if !harmless {
                    earliest = earliest.max(row + 1);
                }
            }
            if control {
                earliest = earliest.max(block_rows_max);
            }
            let width = insn.lanes();
            let needs = Needs::of(facts, &placed.related(facts, i), at, i);
            let mut row = earliest.max(needs.row);
            let lane = loop {
                while rows.len() <= row {
                    rows.push(Building {
                        lanes: vec![None; lanes],
                        high: vec![false; lanes],
                        call: false,
                    });
                }
                if rows[row].lanes.iter().all(Option::is_some) {
                    row += 1;
                    continue;
                }
                let reserved: Vec<bool> = (0..lanes)
                    .map(|l| {
                        row > start
                            && rows[row - 1].lanes[l]
                                .is_some_and(|p| facts[p].writes & read_later[i] != 0)
                    })
                    .collect();
                if let Some(lane) = free_lane(
                    program, facts, &needs, &rows[row], row, i, width, entry, start, &branches,
                    control, &reserved,
                ) {
                    break lane;
                }
                row += 1;
            };
            rows[row].lanes[lane] = Some(i);
            if width == 2 {
                rows[row].high[lane + 1] = true;
            }
            if insn.is_call() {
                rows[row].call = true;
            }
            at[i] = Some((row, lane));
            placed.push(facts, i);
            block_rows_max = block_rows_max.max(row);
            if control {
                let live = program.insns[i].target.map_or(0, |t| liveness.live_in[t]);
                branches.push((row, lane, live, i));
            }
        }
    }
}

/// The instructions of a superblock placed so far, indexed so that an instruction's dependences
/// are found without a look at every one of them.
///
/// Of the writers of a register, only the last placed can bind a later instruction: writers keep
/// their order a row apart, so an earlier writer is always further away than the last. Likewise
/// only the readers since the last writer bind a later writer. Memory dependences, faults and
/// effects concern only memory accesses and calls. Two loads never depend on each other but
/// through registers. An access to a known stack slot can neither fault nor act outside the
/// program, so it concerns only calls, accesses the analysis could not place, and accesses to
/// the same stack bytes (found by byte).
#[derive(Default)]
struct Placed {
    last_writer: [Option<usize>; NUM_REGS],
    readers_since: [Vec<usize>; NUM_REGS],
    /// Accesses outside known stack slots, and calls: loads, then stores and calls.
    loads: Vec<usize>,
    writes_memory: Vec<usize>,
    /// Accesses to known stack slots: every one, and by (frame depth, byte) loads and stores.
    stack: Vec<usize>,
    stack_bytes: std::collections::HashMap<(u8, i128), (Vec<usize>, Vec<usize>)>,
}

/// The frame and bytes of an access to a known stack slot.
fn stack_slot(f: &Facts) -> Option<(u8, std::ops::Range<i128>)> {
    match f.kind {
        Kind::Load(p) | Kind::Store(p) => match (p.region, p.bytes) {
            (Some(Region::Stack { depth: Some(d) }), Some((lo, hi))) if hi - lo <= 64 => {
                Some((d, lo..hi))
            }
            _ => None,
        },
        _ => None,
    }
}

impl Placed {
    fn push(&mut self, facts: &[Facts], i: usize) {
        let f = &facts[i];
        for r in members(f.reads) {
            self.readers_since[r].push(i);
        }
        for r in members(f.writes) {
            self.last_writer[r] = Some(i);
            self.readers_since[r].clear();
        }
        if let Some((depth, bytes)) = stack_slot(f) {
            self.stack.push(i);
            for b in bytes {
                let (loads, stores) = self.stack_bytes.entry((depth, b)).or_default();
                match f.kind {
                    Kind::Load(_) => loads.push(i),
                    _ => stores.push(i),
                }
            }
            return;
        }
        match f.kind {
            Kind::Load(_) => self.loads.push(i),
            Kind::Store(_) | Kind::Call => self.writes_memory.push(i),
            Kind::Pure | Kind::Control => {}
        }
    }

    /// The placed instructions instruction `i` may depend on (some more than once).
    fn related(&self, facts: &[Facts], i: usize) -> Vec<usize> {
        let f = &facts[i];
        let mut out: Vec<usize> = members(f.reads | f.writes)
            .filter_map(|r| self.last_writer[r])
            .collect();
        for r in members(f.writes) {
            out.extend_from_slice(&self.readers_since[r]);
        }
        if matches!(f.kind, Kind::Pure | Kind::Control) {
            return out;
        }
        let is_load = matches!(f.kind, Kind::Load(_));
        // Calls and the accesses not placed in a known stack slot.
        out.extend(
            self.writes_memory
                .iter()
                .copied()
                .filter(|&p| stack_slot(f).is_none() || !placed_elsewhere(&facts[p])),
        );
        if !is_load {
            out.extend(
                self.loads
                    .iter()
                    .copied()
                    .filter(|&p| stack_slot(f).is_none() || !placed_elsewhere(&facts[p])),
            );
        }
        match stack_slot(f) {
            Some((depth, bytes)) => {
                for b in bytes {
                    if let Some((loads, stores)) = self.stack_bytes.get(&(depth, b)) {
                        out.extend_from_slice(stores);
                        if !is_load {
                            out.extend_from_slice(loads);
                        }
                    }
                }
            }
            None => out.extend_from_slice(&self.stack),
        }
        out
    }
}

/// Whether an access is placed by the analysis in a region other than the stack (so that it
/// cannot touch a stack slot; calls and unplaced accesses can).
fn placed_elsewhere(f: &Facts) -> bool {
    match f.kind {
        Kind::Load(p) | Kind::Store(p) => {
            p.region.is_some() && !matches!(p.region, Some(Region::Stack { .. }))
        }
        _ => false,
    }
}

/// What the instructions placed before it require of an instruction's row and lane.
struct Needs {
    /// The first row its dependences allow.
    row: usize,
    /// Rows at which it must sit in a given lane, to read a forwarded register: (row, lane).
    forwarded: Vec<(usize, usize)>,
}

impl Needs {
    /// The needs of instruction `i` given the instructions `placed` (at `at`) before it that it
    /// may depend on.
    fn of(facts: &[Facts], placed: &[usize], at: &[Option<(usize, usize)>], i: usize) -> Needs {
        let mut needs = Needs {
            row: 0,
            forwarded: Vec::new(),
        };
        for &p in placed {
            let Some((prow, plane)) = at[p] else { continue };
            let Some(d) = distance(&facts[p], &facts[i]) else {
                continue;
            };
            needs.row = needs.row.max(prow + d.rows);
            if d.forwarded {
                needs.forwarded.push((prow + d.rows, plane));
            }
        }
        needs
    }
}

/// The first lane of `building` (absolute row `row`) where instruction `i` may go, if any; lanes
/// `reserved` marks are tried last.
#[allow(clippy::too_many_arguments)]
fn free_lane(
    program: &Lowered,
    facts: &[Facts],
    needs: &Needs,
    building: &Building,
    row: usize,
    i: usize,
    width: usize,
    entry: &Entry,
    start: usize,
    branches: &[(usize, usize, RegSet, usize)],
    control: bool,
    reserved: &[bool],
) -> Option<usize> {
    let lanes = building.lanes.len();
    if program.insns[i].insn.is_call() && building.call {
        return None;
    }
    if row < needs.row {
        return None;
    }
    // Lanes the dependences force at this row (forwarded reads).
    let mut forced: Option<usize> = None;
    for &(at_row, plane) in &needs.forwarded {
        if at_row == row {
            match forced {
                Some(l) if l != plane => return None,
                _ => forced = Some(plane),
            }
        }
    }
    // A branch after the branches of its row.
    let min_lane = if control {
        branches
            .iter()
            .filter(|&&(r, ..)| r == row)
            .map(|&(_, l, ..)| l + 1)
            .max()
            .unwrap_or(0)
    } else {
        0
    };
    // Unforced, a lane kept for a forwarded read comes last.
    let unreserved = (0..lanes).filter(|&l| !reserved[l]);
    let kept = (0..lanes).filter(|&l| reserved[l]);
    let mut candidates = unreserved
        .chain(kept)
        .filter(|&l| forced.is_none_or(|f| f == l));
    candidates.find(|&lane| {
        lane >= min_lane
            && lane + width <= lanes
            && (lane..lane + width).all(|l| building.lanes[l].is_none() && !building.high[l])
            && (row != start || entry.allows(&facts[i], lane))
    })
}

/// Turns placed rows into a [`Schedule`]: slots with their source slots, jumps aimed at rows.
fn assemble(
    program: &Lowered,
    rows: &[Building],
    entry_rows: &std::collections::HashMap<usize, usize>,
    lanes: usize,
) -> Schedule {
    let mut out = Schedule {
        lanes,
        rows: Vec::with_capacity(rows.len()),
    };
    for (r, building) in rows.iter().enumerate() {
        let mut row = Row::empty(lanes);
        for (lane, i) in building.lanes.iter().enumerate() {
            let Some(i) = *i else { continue };
            let l = &program.insns[i];
            let target = l.target.and_then(|t| entry_rows.get(&t).copied());
            let insn = target
                .and_then(|t| aim_jump(&l.insn, r, t))
                .unwrap_or(l.insn);
            row.put(
                lane,
                Slot {
                    insn,
                    from: l.from.clone(),
                    target,
                    order: Some(i),
                },
            );
        }
        out.rows.push(row);
    }
    out
}
