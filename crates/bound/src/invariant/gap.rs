//! Whether stack bytes keep what one point of the graph stored there until another point, on
//! every path between them: what lets a window skip the stretch between a store and the load of
//! the same bytes ([`super::window`]).
//!
//! A path holding the store's edge and the load's node runs, in between, some path of the graph
//! from the one to the other. The bytes are untouched there when no node in between (reachable
//! from the store's edge, reaching the load's node) may write them: a store or atomic at the
//! frame pointer plus an offset overlapping them in their frame, a store through another pointer
//! that may be into that frame's stack, a helper that may write through its arguments, a kfunc;
//! nor leaves the frame (a return) or runs what the walk does not follow (a tail call, a
//! summarised callback or loop). The store's node after the store and the load's node before
//! the load are the same instructions on every such path, which the walk itself follows.

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

impl Invariance {
    /// Whether `bytes` keep their contents on every path of the graph from edge `stored` (leaving
    /// the node that stored them) to node `load`.
    pub(super) fn untouched_between(
        &self,
        prepared: &Prepared,
        stored: EdgeId,
        load: usize,
        bytes: Bytes,
    ) -> bool {
        let dag = &prepared.dag;
        let Some(first) = dag.edges.get(stored).map(|e| e.to) else {
            return false;
        };
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
            .all(|n| self.leaves_alone(prepared, n, load, &reaches, bytes))
    }

    /// Whether node `node`, and its edges toward `load` (within `between`), leave `bytes` alone.
    fn leaves_alone(
        &self,
        prepared: &Prepared,
        node: usize,
        load: usize,
        between: &[bool],
        bytes: Bytes,
    ) -> bool {
        let dag = &prepared.dag;
        let n = &dag.nodes[node];
        let depth = n.calls.len();
        if depth < bytes.depth {
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
        (n.slot..end).all(|slot| match program.slots.get(slot) {
            Some(Some(insn)) => writes_elsewhere(
                insn,
                program.analysis.fact(slot),
                depth == bytes.depth,
                bytes,
            ),
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
