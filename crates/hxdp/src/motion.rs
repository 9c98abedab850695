//! Code motion between superblocks (paper 003 §3.4 and Fig. 9, "code movement": instructions
//! anticipated from control-equivalent blocks), so that a block's instructions fill the free
//! lanes of an earlier block's rows instead of rows of their own.
//!
//! The scheduler fills rows only within a superblock. This pass moves instructions up, across
//! superblock boundaries, into the block `A` that immediately dominates their block `C`, in front
//! of `A`'s closing jump:
//!
//! - **Control-equivalent** blocks: every path from `A` reaches `C`, through blocks entered only
//!   from `A` or from each other, and `C` is entered only from those blocks or `A` (a region with
//!   one entry and one exit, without exits of its own). Every run through `A` then runs the moved
//!   instruction exactly once, as before. It moves if it commutes, under Bernstein's conditions
//!   ([`crate::deps::distance`]), with every instruction of the region, `A`'s jump, and the
//!   instructions of `C` it passes. A possible fault keeps its order with every effect, so a
//!   packet the moved access drops still sees no effect it did not see.
//! - **The target of a branch** entered only from that branch: the moved instruction now also
//!   runs where the branch falls through, so it may only compute registers or load what cannot
//!   fault there ([`crate::deps::Facts::speculable_past`]), into registers dead on that side.
//!
//! A motion is kept only where it leaves the program with fewer rows: an instruction moved in
//! front of `A`'s jump may also hold the jump back a row.

use linerate_bpf::insn::regs::RegSet;

use crate::deps::{self, distance, Facts};
use crate::liveness::Liveness;
use crate::program::Lowered;
use crate::source::SourceFacts;

/// Moves instructions up where that saves rows, as `rows` counts them for a program and its
/// facts; returns the first source slot of each instruction moved.
pub fn hoist(
    program: &mut Lowered,
    source: &SourceFacts,
    rows: impl Fn(&Lowered, &[Facts]) -> usize,
) -> Vec<usize> {
    let mut moved = Vec::new();
    let mut facts = deps::facts(source, program);
    let mut best = rows(program, &facts);
    // Each block in turn, again while some motion pays: a moved instruction may move on.
    loop {
        let mut improved = false;
        let mut c = 1;
        let mut shape = Shape::of(program);
        while c < shape.graph.blocks.len() {
            for motion in motions(program, &facts, &shape, c) {
                let mut trial = program.clone();
                motion.apply(&mut trial);
                let trial_facts = deps::facts(source, &trial);
                let trial_rows = rows(&trial, &trial_facts);
                if trial_rows < best {
                    best = trial_rows;
                    moved.extend(
                        motion
                            .moving
                            .iter()
                            .filter_map(|&x| program.insns[x].from.first().copied()),
                    );
                    *program = trial;
                    facts = trial_facts;
                    shape = Shape::of(program);
                    improved = true;
                    break;
                }
            }
            c += 1;
        }
        if !improved {
            moved.sort_unstable();
            moved.dedup();
            return moved;
        }
    }
}

/// Instructions of one block to move in front of its dominator's closing jump (which, in a loop,
/// may come after them in the program).
#[derive(Clone, Debug)]
struct Motion {
    /// Where they go: in front of this instruction, `A`'s jump or, where `A` falls through, the
    /// instruction after `A`.
    at: usize,
    /// Whether a jump to `at` enters the moved instructions (`at` is `A`'s jump, itself a jump
    /// target where it is all of `A`).
    enters: bool,
    /// The instructions, in order (indices before the motion).
    moving: Vec<usize>,
}

impl Motion {
    fn apply(&self, program: &mut Lowered) {
        program.relocate(&self.moving, self.at, self.enters);
    }
}

/// The block graph of a program: successors and predecessors by block index.
struct Graph {
    blocks: Vec<(usize, usize)>,
    successors: Vec<Vec<usize>>,
    predecessors: Vec<Vec<usize>>,
}

impl Graph {
    fn of(program: &Lowered) -> Graph {
        let blocks = program.blocks();
        let ids = program.block_ids();
        let successors: Vec<Vec<usize>> = blocks
            .iter()
            .map(|&(_, end)| {
                program
                    .successors(end - 1)
                    .into_iter()
                    .map(|s| ids[s])
                    .collect()
            })
            .collect();
        let mut predecessors = vec![Vec::new(); blocks.len()];
        for (b, succ) in successors.iter().enumerate() {
            for &s in succ {
                predecessors[s].push(b);
            }
        }
        Graph {
            blocks,
            successors,
            predecessors,
        }
    }

    /// The immediate dominator of each block reachable from the first (`None` for the first).
    fn immediate_dominators(&self) -> Vec<Option<usize>> {
        let n = self.blocks.len();
        // Reverse postorder from block 0.
        let mut order = Vec::with_capacity(n);
        let mut seen = vec![false; n];
        let mut stack = vec![(0usize, 0usize)];
        seen[0] = true;
        while let Some((b, k)) = stack.pop() {
            if let Some(&s) = self.successors[b].get(k) {
                stack.push((b, k + 1));
                if !seen[s] {
                    seen[s] = true;
                    stack.push((s, 0));
                }
            } else {
                order.push(b);
            }
        }
        order.reverse();
        let mut rank = vec![usize::MAX; n];
        for (i, &b) in order.iter().enumerate() {
            rank[b] = i;
        }
        let mut idom: Vec<Option<usize>> = vec![None; n];
        linerate_cfg::immediate_dominators(
            &mut idom,
            &order,
            |b| rank[b],
            |b| self.predecessors[b].iter().copied(),
        );
        idom[0] = None;
        idom
    }

    /// The blocks strictly between `a` and `c`, if they form a region entered only from `a`,
    /// left only to `c`, and every path from `a` goes through `c`.
    fn region(&self, a: usize, c: usize) -> Option<Vec<usize>> {
        let mut inside = vec![false; self.blocks.len()];
        let mut work: Vec<usize> = self.successors[a]
            .iter()
            .copied()
            .filter(|&s| s != c)
            .collect();
        while let Some(b) = work.pop() {
            if b == a {
                return None;
            }
            if std::mem::replace(&mut inside[b], true) {
                continue;
            }
            if self.successors[b].is_empty() {
                return None;
            }
            work.extend(self.successors[b].iter().copied().filter(|&s| s != c));
        }
        let region: Vec<usize> = (0..self.blocks.len()).filter(|&b| inside[b]).collect();
        let entered_from_inside =
            |b: usize| self.predecessors[b].iter().all(|&p| p == a || inside[p]);
        (!region.is_empty()
            && region.iter().all(|&b| entered_from_inside(b))
            && entered_from_inside(c))
        .then_some(region)
    }
}

/// What the motions of a program are decided on: its blocks, their dominators and liveness.
struct Shape {
    graph: Graph,
    idom: Vec<Option<usize>>,
    liveness: Liveness,
}

impl Shape {
    fn of(program: &Lowered) -> Shape {
        let graph = Graph::of(program);
        let idom = graph.immediate_dominators();
        Shape {
            graph,
            idom,
            liveness: Liveness::of(program),
        }
    }
}

/// The motions worth trying for block `c`: into its immediate dominator when they are control
/// equivalent, or when `c` is the target of that block's branch and entered only from it.
fn motions(program: &Lowered, facts: &[Facts], shape: &Shape, c: usize) -> Vec<Motion> {
    let graph = &shape.graph;
    let Some(a) = shape.idom.get(c).copied().flatten() else {
        return Vec::new();
    };
    let (a_first, a_end) = graph.blocks[a];
    let last = a_end - 1;
    let closing = program.insns[last].insn.is_control();
    let at = if closing { last } else { a_end };
    let enters = closing && last == a_first;
    let (c_first, c_end) = graph.blocks[c];
    let mut out = Vec::new();
    if let Some(region) = graph.region(a, c) {
        let mut passed: Vec<usize> = region
            .iter()
            .flat_map(|&b| graph.blocks[b].0..graph.blocks[b].1)
            .collect();
        if closing {
            passed.push(last);
        }
        let moving = movable(program, facts, c_first..c_end, passed, |_| true);
        if !moving.is_empty() {
            out.push(Motion { at, enters, moving });
        }
    } else if closing
        && graph.predecessors[c] == [a]
        && program.insns[last].target == Some(c_first)
        && program.falls_through(last)
        && last + 1 < program.len()
    {
        let branch = &facts[last];
        let other_side: RegSet = shape.liveness.live_in[last + 1];
        let moving = movable(program, facts, c_first..c_end, vec![last], |f| {
            f.speculable_past(branch) && f.writes & other_side == 0
        });
        if !moving.is_empty() {
            out.push(Motion { at, enters, moving });
        }
    }
    // Where moving all of them costs rows, the first half may still pay.
    if let Some(m) = out.first() {
        if m.moving.len() > 1 {
            let mut half = m.clone();
            half.moving.truncate(m.moving.len().div_ceil(2));
            out.push(half);
        }
    }
    out
}

/// The instructions of `block` that may move in front of all of `passed` (which run before them
/// on every path) and of the instructions of `block` that stay, and that `allowed` admits.
fn movable(
    program: &Lowered,
    facts: &[Facts],
    block: std::ops::Range<usize>,
    mut passed: Vec<usize>,
    allowed: impl Fn(&Facts) -> bool,
) -> Vec<usize> {
    let mut moving = Vec::new();
    for x in block {
        let insn = &program.insns[x].insn;
        let f = &facts[x];
        let free = !insn.is_control()
            && !insn.is_call()
            && allowed(f)
            && passed.iter().all(|&y| distance(&facts[y], f).is_none());
        if free {
            moving.push(x);
        } else {
            passed.push(x);
        }
    }
    moving
}
