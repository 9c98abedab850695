//! From the expansion's nodes and edges to a [`PathDag`]: nodes that reach no exit removed,
//! the rest numbered in topological order (source first, sink last), and minimum packet sizes
//! made to hold along paths (see [`super`] for the rule).

use linerate_cost::Cost;

use super::expand::{Key, MIN_PACKET};
use super::{AssumedBound, LoopSummary, PrepareError, Prepared, Programs, Stats, Summary};
use crate::dag::{Edge, EdgeId, Node, NodeId, PathDag, Step};

/// A node as the expansion builds it.
pub(super) struct Raw {
    /// Where the piece is; `None` for the sink.
    pub key: Option<Key>,
    /// One past its last slot.
    pub end: usize,
    /// Slot of the conditional jump ending it.
    pub branch_pc: Option<usize>,
    /// Whether its instructions may move the packet's start or end.
    pub moves_packet: bool,
}

impl Raw {
    pub fn sink() -> Raw {
        Raw {
            key: None,
            end: 0,
            branch_pc: None,
            moves_packet: false,
        }
    }

    pub fn piece(key: Key) -> Raw {
        Raw {
            end: key.start,
            key: Some(key),
            branch_pc: None,
            moves_packet: false,
        }
    }
}

/// An edge as the expansion builds it; `min_packet` is what the analysis proved on it alone.
pub(super) struct RawEdge {
    pub from: usize,
    pub to: usize,
    pub step: Step,
    pub cost: Cost,
    pub min_packet: u32,
}

/// Orders and trims the expansion (raw node 0 is the sink, `source` the entry).
#[allow(clippy::too_many_arguments)]
pub(super) fn finish(
    programs: &Programs<'_>,
    name: &str,
    raw: Vec<Raw>,
    edges: Vec<RawEdge>,
    source: usize,
    summaries: Vec<Summary>,
    loops: Vec<LoopSummary>,
    assumed: Vec<AssumedBound>,
    mut stats: Stats,
) -> Result<Prepared, PrepareError> {
    let n = raw.len();
    let mut out_edges: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut in_edges: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, e) in edges.iter().enumerate() {
        out_edges[e.from].push(i);
        in_edges[e.to].push(i);
    }
    // Nodes from which the sink is reachable.
    let mut live = vec![false; n];
    live[0] = true;
    let mut stack = vec![0usize];
    while let Some(v) = stack.pop() {
        for &e in &in_edges[v] {
            let u = edges[e].from;
            if !live[u] {
                live[u] = true;
                stack.push(u);
            }
        }
    }
    if !live[source] {
        return Err(PrepareError::NoPath {
            program: name.to_string(),
        });
    }
    stats.dead_nodes = live.iter().filter(|l| !**l).count();
    let kept = |e: &RawEdge| live[e.from] && live[e.to];

    // Kahn's algorithm from the source, the sink held back to come last.
    let mut indegree = vec![0usize; n];
    for e in edges.iter().filter(|e| kept(e)) {
        indegree[e.to] += 1;
    }
    let mut order = Vec::with_capacity(n);
    let mut ready = vec![source];
    while let Some(v) = ready.pop() {
        order.push(v);
        for &e in out_edges[v].iter().rev() {
            if !kept(&edges[e]) {
                continue;
            }
            let w = edges[e].to;
            indegree[w] -= 1;
            if indegree[w] == 0 && w != 0 {
                ready.push(w);
            }
        }
    }
    order.push(0);
    let mut id = vec![usize::MAX; n];
    for (i, &v) in order.iter().enumerate() {
        id[v] = i;
    }

    let mut nodes = Vec::with_capacity(order.len());
    let mut ends = Vec::with_capacity(order.len());
    let mut branch_pc = Vec::with_capacity(order.len());
    for &v in &order {
        let r = &raw[v];
        let node = match &r.key {
            None => Node {
                program: None,
                slot: 0,
                calls: Vec::new(),
                iterations: Vec::new(),
                out: Vec::new(),
            },
            Some(key) => {
                let cfg = &programs
                    .get_built(key.program)
                    .expect("expanded programs are built")
                    .cfg;
                Node {
                    program: Some(key.program),
                    slot: key.start,
                    calls: key.frames.iter().map(|&(call, _)| call).collect(),
                    iterations: key
                        .iterations
                        .iter()
                        .map(|&(header, i)| (cfg.blocks()[header].first, i))
                        .collect(),
                    out: Vec::new(),
                }
            }
        };
        nodes.push(node);
        ends.push(r.end);
        branch_pc.push(r.branch_pc);
    }

    // Edges in the order of their source nodes, each node's in the order the expansion added
    // them (the program's edge order).
    let mut dag_edges: Vec<Edge> = Vec::new();
    for &v in &order {
        for &e in &out_edges[v] {
            let raw_edge = &edges[e];
            if !kept(raw_edge) {
                continue;
            }
            let eid = dag_edges.len();
            nodes[id[v]].out.push(eid);
            dag_edges.push(Edge {
                from: id[v],
                to: id[raw_edge.to],
                step: raw_edge.step,
                cost: raw_edge.cost.clone(),
                min_packet: raw_edge.min_packet,
            });
        }
    }

    // Packet sizes: what the analysis proved where the packet is still the one that arrived,
    // and at least the least of what every way into the source node had.
    let mut moved_before = vec![false; nodes.len()];
    let mut arrived: Vec<Option<u32>> = vec![None; nodes.len()];
    for v in 0..nodes.len() {
        let moves = order
            .get(v)
            .is_some_and(|&r| raw[r].moves_packet || moved_before[v]);
        let before = arrived[v].unwrap_or(0);
        for k in 0..nodes[v].out.len() {
            let e = nodes[v].out[k];
            let own = if moves {
                MIN_PACKET
            } else {
                dag_edges[e].min_packet
            };
            let size = own.max(before);
            dag_edges[e].min_packet = size;
            let to = dag_edges[e].to;
            arrived[to] = Some(arrived[to].map_or(size, |a| a.min(size)));
            if moves {
                moved_before[to] = true;
            }
        }
    }
    let moves_packet = raw.iter().any(|r| r.moves_packet);

    let dag = PathDag {
        components: programs
            .model
            .components()
            .iter()
            .map(|c| c.name.clone())
            .collect(),
        nodes,
        edges: dag_edges,
    };
    Ok(Prepared {
        dag,
        ends,
        summaries,
        loops,
        assumed,
        stats,
        branch_pc,
        moves_packet,
        conflicts: Vec::new(),
    })
}

/// Removes the edges of `prepared` that `impossible` marks, then every node no longer on a
/// source-to-sink path, keeping the order of the rest (still topological: the source first, the
/// sink last). Returns the new id of each old edge (`None` for a removed one).
pub(super) fn remove_edges(
    prepared: &mut Prepared,
    impossible: &[bool],
    name: &str,
) -> Result<Vec<Option<EdgeId>>, PrepareError> {
    let dag = &prepared.dag;
    let kept = |e: EdgeId| !impossible.get(e).copied().unwrap_or(false);
    let n = dag.nodes.len();
    // Reached from the source, in node order (edges go forward).
    let mut reached = vec![false; n];
    reached[PathDag::SOURCE] = true;
    for v in 0..n {
        if reached[v] {
            for &e in dag.nodes[v].out.iter().filter(|&&e| kept(e)) {
                reached[dag.edges[e].to] = true;
            }
        }
    }
    // Reaching the sink, in reverse node order.
    let mut live = vec![false; n];
    live[dag.sink()] = reached[dag.sink()];
    for v in (0..n).rev() {
        if reached[v]
            && dag.nodes[v]
                .out
                .iter()
                .any(|&e| kept(e) && live[dag.edges[e].to])
        {
            live[v] = true;
        }
    }
    if !live[PathDag::SOURCE] {
        return Err(PrepareError::NoPath {
            program: name.to_string(),
        });
    }
    let mut node_id = vec![usize::MAX; n];
    let mut count = 0;
    for v in 0..n {
        if live[v] {
            node_id[v] = count;
            count += 1;
        }
    }
    let mut edge_id: Vec<Option<EdgeId>> = vec![None; dag.edges.len()];
    let mut edges = Vec::new();
    let mut nodes = Vec::with_capacity(count);
    let mut ends = Vec::with_capacity(count);
    let mut branch_pc = Vec::with_capacity(count);
    for v in (0..n).filter(|&v| live[v]) {
        let mut node = dag.nodes[v].clone();
        node.out.clear();
        for &e in &dag.nodes[v].out {
            let edge = &dag.edges[e];
            if !kept(e) || !live[edge.to] {
                continue;
            }
            edge_id[e] = Some(edges.len());
            node.out.push(edges.len());
            let mut edge = edge.clone();
            edge.from = node_id[edge.from];
            edge.to = node_id[edge.to];
            edges.push(edge);
        }
        nodes.push(node);
        ends.push(prepared.ends[v]);
        branch_pc.push(prepared.branch_pc[v]);
    }
    prepared.stats.impossible_edges += impossible.iter().filter(|&&i| i).count();
    prepared.stats.dead_nodes += n - count;
    prepared.dag.nodes = nodes;
    prepared.dag.edges = edges;
    prepared.ends = ends;
    prepared.branch_pc = branch_pc;
    Ok(edge_id)
}

/// For each component, a source-to-sink path with the largest cost in it.
pub(super) fn worst_paths(dag: &PathDag) -> Vec<Vec<EdgeId>> {
    (0..dag.components.len())
        .map(|c| {
            // Longest cost from each node to the sink, and the edge achieving it.
            let mut best: Vec<(f64, Option<EdgeId>)> =
                vec![(f64::NEG_INFINITY, None); dag.nodes.len()];
            let sink: NodeId = dag.sink();
            best[sink] = (0.0, None);
            for v in (0..sink).rev() {
                for &e in &dag.nodes[v].out {
                    let edge = &dag.edges[e];
                    let through = edge.cost.0[c] + best[edge.to].0;
                    if through > best[v].0 {
                        best[v] = (through, Some(e));
                    }
                }
            }
            let mut path = Vec::new();
            let mut v = PathDag::SOURCE;
            while let (_, Some(e)) = best[v] {
                path.push(e);
                v = dag.edges[e].to;
            }
            path
        })
        .collect()
}
