//! Whether stack bytes, or a callee-saved register, keep what one point of the graph put there
//! until another point, on every path between them: what lets a window skip the stretch between
//! a store and the load of the same bytes, or between a register's definition and its use
//! ([`super::window`]).
//!
//! A path holding the defining node's edge and the using node runs, in between, some path of
//! the graph from the one to the other. The bytes are untouched there when no node in between
//! (reachable from the defining edge, reaching the using node) may write them: a store or atomic
//! at the frame pointer plus an offset overlapping them in their frame, a store through another
//! pointer that may be into that frame's stack, a helper that may write through its arguments, a
//! kfunc. A register `r6`-`r9` is untouched when no node in between at its frame's depth writes
//! it (a callee's are its own: the caller's come back on return). Neither may leave the frame (a
//! node at a shallower depth) or run what the walk does not follow (a tail call, a summarised
//! callback or loop). The defining node after the definition and the using node before the use
//! are the same instructions on every such path, which the walk itself follows.

use std::collections::VecDeque;

use linerate_analysis::{Fact, Region};
use linerate_bpf::insn::{CallTarget, Instruction};

use super::{leaves_packet, Invariance};
use crate::dag::{EdgeId, Step};
use crate::prepare::Prepared;

/// Stack bytes of one frame: `width` bytes at `offset` from the frame pointer of the frame at
/// call depth `depth` (0: the program's own).
#[derive(Clone, Copy, Debug)]
pub(super) struct Bytes {
    pub depth: usize,
    pub offset: i64,
    pub width: u32,
}

/// What must stay as it was between two points of the graph.
#[derive(Clone, Copy, Debug)]
pub(super) enum Kept {
    Bytes(Bytes),
    /// Register `r6`-`r9` of the frame at call depth `depth`.
    Register {
        reg: u8,
        depth: usize,
    },
}

impl Kept {
    fn depth(self) -> usize {
        match self {
            Kept::Bytes(b) => b.depth,
            Kept::Register { depth, .. } => depth,
        }
    }
}

impl Invariance {
    /// Whether `kept` keeps its contents on every path of the graph from edge `made` (leaving the
    /// node that put them there) to node `load` (which uses them).
    pub(super) fn kept_between(
        &self,
        prepared: &Prepared,
        made: EdgeId,
        load: usize,
        kept: Kept,
    ) -> bool {
        let dag = &prepared.dag;
        let Some(first) = dag.edges.get(made).map(|e| e.to) else {
            return false;
        };
        if dag.nodes.get(load).map(|n| n.calls.len()) != Some(kept.depth()) {
            return false;
        }
        if first == load {
            return true;
        }
        // Nodes reachable from `first` that reach `load`: forward, then keep those from which
        // `load` is reached (backward over the forward set).
        let mut forward = vec![false; dag.nodes.len()];
        let mut todo = VecDeque::from([first]);
        forward[first] = true;
        while let Some(n) = todo.pop_front() {
            if n == load {
                continue;
            }
            for &e in &dag.nodes[n].out {
                let to = dag.edges[e].to;
                if !forward[to] {
                    forward[to] = true;
                    todo.push_back(to);
                }
            }
        }
        if !forward[load] {
            return false;
        }
        let mut reaches = vec![false; dag.nodes.len()];
        reaches[load] = true;
        // Edges point forward in the graph's order of nodes only if it is topological, which is
        // not assumed: iterate to a fixed point over the forward set (latest nodes first, one
        // pass and a confirming one where the order is topological).
        let mut changed = true;
        while changed {
            changed = false;
            for n in (0..dag.nodes.len()).rev() {
                if !forward[n] || reaches[n] {
                    continue;
                }
                if dag.nodes[n].out.iter().any(|&e| reaches[dag.edges[e].to]) {
                    reaches[n] = true;
                    changed = true;
                }
            }
        }
        (0..dag.nodes.len())
            .filter(|&n| reaches[n] && n != load)
            .all(|n| self.leaves_alone(prepared, n, load, &reaches, kept))
    }

    /// Whether node `node`, and its edges toward `load` (within `between`), leave `kept` alone.
    fn leaves_alone(
        &self,
        prepared: &Prepared,
        node: usize,
        load: usize,
        between: &[bool],
        kept: Kept,
    ) -> bool {
        let dag = &prepared.dag;
        let n = &dag.nodes[node];
        let depth = n.calls.len();
        if depth < kept.depth() {
            // The frame holding the bytes was left.
            return false;
        }
        let steps_followed = n
            .out
            .iter()
            .filter(|&&e| between[dag.edges[e].to] || dag.edges[e].to == load)
            .all(|&e| {
                !matches!(
                    dag.edges[e].step,
                    Step::TailCall { .. } | Step::Callbacks { .. } | Step::Loop { .. }
                )
            });
        if !steps_followed {
            return false;
        }
        let Some(program) = n
            .program
            .and_then(|p| self.programs.get(p))
            .and_then(Option::as_ref)
        else {
            return false;
        };
        let end = prepared.ends.get(node).copied().unwrap_or(n.slot);
        let same_frame = depth == kept.depth();
        (n.slot..end).all(|slot| match (program.slots.get(slot), kept) {
            (Some(Some(insn)), Kept::Bytes(bytes)) => {
                writes_elsewhere(insn, program.analysis.fact(slot), same_frame, bytes)
            }
            (Some(Some(insn)), Kept::Register { reg, .. }) => {
                !same_frame || insn.writes() & (1 << reg) == 0
            }
            _ => true,
        })
    }
}

/// Whether `insn` (analysis fact `fact`, in the bytes' frame or not) leaves `bytes` alone.
fn writes_elsewhere(
    insn: &Instruction,
    fact: Option<Fact>,
    same_frame: bool,
    bytes: Bytes,
) -> bool {
    let (dst, off, width) = match *insn {
        Instruction::Store { size, dst, off, .. } | Instruction::Atomic { size, dst, off, .. } => {
            (dst, off, size.bytes())
        }
        Instruction::Call(CallTarget::Helper(id)) => return leaves_packet(id),
        Instruction::Call(CallTarget::Kfunc(_)) => return false,
        _ => return true,
    };
    match fact {
        Some(Fact::Memory(Some(Region::Stack { .. }))) if dst == 10 => {
            // At this frame's pointer: another frame's bytes, or elsewhere in this one.
            let start = i64::from(off);
            let end = start + i64::from(width);
            let theirs = bytes.offset..bytes.offset + i64::from(bytes.width);
            !same_frame || end <= theirs.start || start >= theirs.end
        }
        // Through another pointer into some frame's stack: anywhere.
        Some(Fact::Memory(Some(Region::Stack { .. }))) => false,
        // Certainly another region (the packet, a map value, ...).
        Some(Fact::Memory(Some(_))) => true,
        _ => false,
    }
}
