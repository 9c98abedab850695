//! The prepared path graph (paper 000 §5.2): a program's control flow made loop-free — bounded
//! loops unrolled, BPF-to-BPF calls inlined, tail calls followed into the programs a program
//! array may hold — with one source, one sink, and constant costs on edges.
//!
//! Every entry-to-sink path of the graph is one way a packet can go through the program; its
//! cost is the component-wise sum of its edges' costs and its minimum packet size the largest
//! `min_packet` of its edges. Costs are over-approximated and packet sizes under-approximated per
//! edge, so a path's throughput computed from them is a valid lower bound for every execution
//! that follows it.
//!
//! Edge costs are the program's own work: the model's per-packet work outside the program
//! (`linerate_cost::Model::per_packet`) is on no edge; the rate function adds it to a path's
//! cost.
//!
//! A node the [`Step::Loop`] edge leaves has no instructions: it stands for the middle iterations
//! of a summarised loop, and its slot is the loop header's.
//!
//! A block that calls a BPF function, tail-calls or calls a helper with callbacks is split there:
//! its first node starts at the block's first slot, and the rest of the block after the call at
//! slot `s` is a node of its own starting at slot `s + 1` (where a return, a failed tail call or
//! the summarised callbacks lead; when the call ends its block, that node has no instructions and
//! its slot is the next block's). The block's cost is on the edges that leave the block: the
//! last piece's control-flow, return and exit edges, and a successful tail call's edge.

use serde::Serialize;

use linerate_cfg::EdgeKind;
use linerate_cost::Cost;

/// Index of a node in [`PathDag::nodes`].
pub type NodeId = usize;
/// Index of an edge in [`PathDag::edges`].
pub type EdgeId = usize;

/// A loop-free graph of program block copies with a cost vector on every edge.
///
/// Invariants: every edge goes from a lower node id to a higher one (the node order is
/// topological); node [`PathDag::SOURCE`] is the program's entry block, the last node is the
/// sink, and every node lies on some source-to-sink path.
#[derive(Clone, Debug, Serialize)]
pub struct PathDag {
    /// Names of the cost components, in the order of every [`Cost`] of the graph (the model's).
    pub components: Vec<String>,
    pub nodes: Vec<Node>,
    pub edges: Vec<Edge>,
}

/// One copy of a basic block: of which program, in which inlined call and loop iteration.
#[derive(Clone, Debug, Serialize)]
pub struct Node {
    /// Index of the program in the object (a tail call leads into another one); `None` for the
    /// sink.
    pub program: Option<usize>,
    /// Slot of the block's first instruction in its program (0 for the sink).
    pub slot: usize,
    /// Call sites (slots of `call` instructions) the block was inlined through, outermost first.
    pub calls: Vec<usize>,
    /// For each loop enclosing the block, innermost last: `(header slot, iteration from 0)`.
    pub iterations: Vec<(usize, u32)>,
    /// Edges leaving the node, in the order the program's edges are listed.
    pub out: Vec<EdgeId>,
}

/// What following an edge means for an execution of the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Step {
    /// An edge of the program's control flow: fallthrough, jump, or a branch outcome.
    Flow(EdgeKind),
    /// Entering the callee of the inlined BPF-to-BPF call at slot `call`.
    Call { call: usize },
    /// Returning from the callee of the inlined call at slot `call` to the slot after it.
    Return { call: usize },
    /// A tail call at slot `call` that jumps to program `program`, or (`None`) fails and falls
    /// through.
    TailCall { call: usize, program: Option<usize> },
    /// The program exits (`exit` at the outermost level): the edge into the sink.
    Exit,
    /// The helper at slot `call` (`bpf_loop`, `bpf_for_each_map_elem`) calls its callback,
    /// priced by a summary instead of the callback's paths: the edge's cost is the most calls one
    /// execution of the helper makes times one call's worst path (entry `summary` of the
    /// preparing side's list, `linerate_bound::prepare::Prepared::summaries`, which holds the
    /// callback's own path graph and its worst path).
    Callbacks { call: usize, summary: usize },
    /// The middle iterations of a loop too long to unroll (header at slot `header`), priced by a
    /// summary: the edge's cost is the most of them a run makes times one iteration's worst path
    /// (entry `summary` of `linerate_bound::prepare::Prepared::loops`, which holds the
    /// iteration's own path graph and its worst path). It leads from the node standing for them
    /// (after the first iteration's back edge) to the loop's last iteration.
    Loop { header: usize, summary: usize },
}

/// An edge between two block copies.
#[derive(Clone, Debug, Serialize)]
pub struct Edge {
    pub from: NodeId,
    pub to: NodeId,
    pub step: Step,
    /// Cost of executing the source block and leaving it by this edge, history-dependent costs
    /// over-approximated (the block's stalls at their worst over paths into it).
    pub cost: Cost,
    /// Fewest packet bytes any execution taking this edge has (from the packet bounds checks the
    /// analysis proved on the way); never below the smallest packet a device accepts.
    pub min_packet: u32,
}

impl PathDag {
    /// The entry node.
    pub const SOURCE: NodeId = 0;

    /// The sink node: every path ends there.
    pub fn sink(&self) -> NodeId {
        self.nodes.len() - 1
    }

    /// Component-wise sum of the costs of `path`'s edges.
    pub fn path_cost(&self, path: &[EdgeId]) -> Cost {
        let mut total = Cost::zero(self.components.len());
        for &e in path {
            total.add(&self.edges[e].cost);
        }
        total
    }

    /// Checks the invariants: edges between existing nodes, from a lower id to a higher one, each
    /// listed once in its source's `out`; one source (node 0, no edges in) and one sink (the last
    /// node, no edges out); every node on a source-to-sink path; every cost vector of the
    /// components' length, finite and not negative. The first violation found, described.
    pub fn validate(&self) -> Result<(), String> {
        let n = self.nodes.len();
        if n < 2 {
            return Err(format!(
                "{n} nodes: a graph has at least a source and a sink"
            ));
        }
        let mut into = vec![0usize; n];
        let mut listed = vec![0usize; self.edges.len()];
        for (id, node) in self.nodes.iter().enumerate() {
            for &e in &node.out {
                let edge = self
                    .edges
                    .get(e)
                    .ok_or_else(|| format!("node {id} lists edge {e}, which does not exist"))?;
                if edge.from != id {
                    return Err(format!(
                        "node {id} lists edge {e}, which leaves node {}",
                        edge.from
                    ));
                }
                listed[e] += 1;
            }
        }
        for (id, edge) in self.edges.iter().enumerate() {
            if edge.to >= n || edge.from >= edge.to {
                return Err(format!(
                    "edge {id} goes from node {} to node {}: not forward in {n} nodes",
                    edge.from, edge.to
                ));
            }
            if listed[id] != 1 {
                return Err(format!(
                    "edge {id} is listed {} times in its source's out",
                    listed[id]
                ));
            }
            if edge.cost.0.len() != self.components.len() {
                return Err(format!(
                    "edge {id} has {} cost components, the graph {}",
                    edge.cost.0.len(),
                    self.components.len()
                ));
            }
            if edge.cost.0.iter().any(|c| !c.is_finite() || *c < 0.0) {
                return Err(format!("edge {id} has cost {:?}", edge.cost.0));
            }
            into[edge.to] += 1;
        }
        if into[Self::SOURCE] != 0 {
            return Err("the source has edges into it".into());
        }
        if !self.nodes[self.sink()].out.is_empty() {
            return Err("the sink has edges out of it".into());
        }
        for (id, &count) in into.iter().enumerate().skip(1) {
            if count == 0 {
                return Err(format!("node {id} is not reachable from the source"));
            }
        }
        for (id, node) in self.nodes.iter().enumerate().take(n - 1) {
            if node.out.is_empty() {
                return Err(format!("node {id} does not reach the sink"));
            }
        }
        // With edges forward only, every node but the sink having an edge out and every node
        // but the source an edge in puts every node on a source-to-sink path.
        Ok(())
    }

    /// Minimum packet size of `path`: the largest of its edges'.
    pub fn path_min_packet(&self, path: &[EdgeId]) -> u32 {
        path.iter()
            .map(|&e| self.edges[e].min_packet)
            .max()
            .unwrap_or(0)
    }
}
