//! Paths of a [`crate::dag::PathDag`] in order of throughput (paper 000 §5.1, §5.3, §5.4).
//!
//! The paper finds the slowest satisfiable path by checking paths slowest first and stopping at
//! the first satisfiable one; this module supplies that order.
//!
//! - [`Search`] (`search.rs`): one search instance — the paths of the sub-graph of edges a packet
//!   of a given size may take, in non-increasing order of one cost component; the next path costs
//!   one pop and a walk along it, however many came before (§5.1).
//! - [`Forbidden`] (`forbid.rs`): learned conflicts, sets of edges no produced path may contain
//!   all of; they prune inside the search, not after it.
//! - [`Enumerator`] (`order.rs`): one search instance per (component, distinct minimum packet
//!   size), interleaved so that paths come out slowest first in overall throughput, each once, at
//!   its bottleneck component and its own minimum packet size (§5.3, §5.4); [`Rates`] is how
//!   cost turns into throughput ([`ModelRates`] for a device model, packet or bit rate);
//!   [`naive`] is the first of them, the bound that ignores satisfiability.
//! - [`Exhaustive`] (`exhaustive.rs`): every path once in no particular order, the baseline.

mod exhaustive;
mod forbid;
mod order;
mod search;

pub use exhaustive::Exhaustive;
pub use forbid::Forbidden;
pub use order::{
    model_rates, naive, rank, Enumerator, Metric, ModelRates, Paused, RankedPath, Rates, Stats,
};
pub use search::{Next, Search};

use crate::dag::{EdgeId, NodeId, PathDag};

/// Why a path graph or a request cannot be enumerated.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum EnumerateError {
    /// The graph breaks an invariant of [`PathDag`].
    #[error("path graph: {0}")]
    Graph(String),
    /// A forbidden edge set names an edge the graph does not have.
    #[error("forbidden edge set names edge {edge}, but the path graph has {edges} edges")]
    NoSuchEdge { edge: EdgeId, edges: usize },
    /// The cost component of a search instance does not exist.
    #[error("cost component {component} does not exist (the path graph has {components})")]
    NoSuchComponent { component: usize, components: usize },
    /// A device model and the graph disagree on the cost components.
    #[error("the model's cost components ({model}) are not the path graph's ({graph})")]
    Components { model: String, graph: String },
}

/// Checks the invariants every search relies on, so that enumeration never indexes out of range
/// or sums a NaN: a node exists, ids fit the searches' `u32` records, edges go forward and stay
/// in range, every cost vector has one finite non-negative entry per component.
pub(crate) fn validate(dag: &PathDag) -> Result<(), EnumerateError> {
    let bad = |m: String| Err(EnumerateError::Graph(m));
    if dag.nodes.is_empty() {
        return bad("no nodes (a graph has at least its source)".into());
    }
    if dag.components.is_empty() {
        return bad("no cost components".into());
    }
    if dag.nodes.len() >= u32::MAX as usize || dag.edges.len() >= u32::MAX as usize {
        return bad(format!(
            "{} nodes and {} edges: more than this enumeration indexes",
            dag.nodes.len(),
            dag.edges.len()
        ));
    }
    let nodes: NodeId = dag.nodes.len();
    for (id, e) in dag.edges.iter().enumerate() {
        if e.from >= e.to || e.to >= nodes {
            return bad(format!(
                "edge {id} goes from node {} to node {} (edges go forward, {nodes} nodes)",
                e.from, e.to
            ));
        }
        if e.cost.0.len() != dag.components.len() {
            return bad(format!(
                "edge {id} has {} cost entries for {} components",
                e.cost.0.len(),
                dag.components.len()
            ));
        }
        if let Some(c) = e.cost.0.iter().find(|c| !(c.is_finite() && **c >= 0.0)) {
            return bad(format!(
                "edge {id} costs {c} (costs are finite and non-negative)"
            ));
        }
    }
    Ok(())
}
