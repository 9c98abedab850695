//! Forbidden edge sets that come down to one edge: a set whose every edge lies on every
//! source-to-sink path through one of its edges forbids exactly the paths through that edge.
//!
//! The enumeration removes a single forbidden edge from its graph and keeps its bounds exact,
//! while a larger set is only checked on the paths it walks, its bounds still counting the
//! forbidden paths: on path explosion, whose learned conflicts are pairs (the stage's test and the
//! contradicting test right after it, reached only through the first), the enumeration would
//! walk an exponential number of prefixes that sets cut off one by one. Reduced to the second
//! edge of each pair, the same conflicts cost one removal each.

use crate::dag::{EdgeId, NodeId, PathDag};

/// Edges × set-size² work above which a set is left as it is.
const BUDGET: usize = 1 << 26;

/// An edge of `set` that every other edge of `set` lies on every source-to-sink path through,
/// if there is one (then the paths holding all of `set` are those through that edge).
pub fn single_edge(dag: &PathDag, set: &[EdgeId]) -> Option<EdgeId> {
    let n = set.len();
    if n == 0 || dag.edges.len().saturating_mul(n * n) > BUDGET {
        return None;
    }
    if set.iter().any(|&e| e >= dag.edges.len()) {
        return None;
    }
    if n == 1 {
        return Some(set[0]);
    }
    let mut seen = vec![false; dag.nodes.len()];
    set.iter().copied().find(|&e| {
        set.iter()
            .all(|&f| f == e || !avoidable(dag, &mut seen, e, f))
    })
}

/// Whether some source-to-sink path goes through edge `e` and not through edge `f`.
fn avoidable(dag: &PathDag, seen: &mut [bool], e: EdgeId, f: EdgeId) -> bool {
    let edge = &dag.edges[e];
    reaches(dag, seen, PathDag::SOURCE, edge.from, f) && reaches(dag, seen, edge.to, dag.sink(), f)
}

/// Whether node `to` is reachable from node `from` without edge `skip`.
fn reaches(dag: &PathDag, seen: &mut [bool], from: NodeId, to: NodeId, skip: EdgeId) -> bool {
    seen.iter_mut().for_each(|s| *s = false);
    let mut todo = vec![from];
    seen[from] = true;
    while let Some(v) = todo.pop() {
        if v == to {
            return true;
        }
        for &o in &dag.nodes[v].out {
            let w = dag.edges[o].to;
            // Edges go forward: nothing past `to` leads back to it.
            if o != skip && w <= to && !seen[w] {
                seen[w] = true;
                todo.push(w);
            }
        }
    }
    false
}
