//! One search instance (paper 000 §5.1): the source-to-sink paths of the sub-graph of edges whose
//! `min_packet` is at most one packet size, in non-increasing order of one cost component.
//!
//! A best-first search over path prefixes with exact suffix bounds: `best[v]` is the largest cost
//! from node `v` to the sink, so a prefix ending at `v` with cost `c` has no completion costlier
//! than `c + best[v]`, and its costliest completion is found by walking the argmax edges down to
//! the sink. The queue holds *deviations*: "this prefix, then this other out-edge of its last
//! node". Popping the costliest one gives the next path: its prefix, its edge and the argmax walk
//! from there, queueing the walk's other out-edges on the way. Producing path n+1 is one pop (plus
//! re-queueing of entries a forbid made stale) and one walk along the path, independent of n: the
//! incremental property the paper takes from Ju & Saleh's incremental longest path algorithm.
//!
//! Prefixes are stored once and shared, as a parent-pointer tree of the choices made at nodes
//! with more than one out-edge (the edges in between are the only way on). Forbidding a single
//! edge removes it and repairs `best` upward from it, so the bounds stay exact and the search
//! never walks into it again; queue entries keep their older, larger keys (still upper bounds)
//! and get their exact key when they reach the top. Larger forbidden sets are followed along
//! every walk: an edge that would complete one is not taken (every path through it from there
//! holds the set), and a walk that had to leave its costliest edge for that queues its path whole,
//! at its own cost, rather than giving it out of order.

use std::cmp::Ordering;
use std::collections::{BTreeSet, BinaryHeap};

use super::{validate, EnumerateError, Forbidden};
use crate::dag::{EdgeId, NodeId, PathDag};

/// Marks "no record" (the empty prefix) and "no edge" (the entry at the source).
const NONE: u32 = u32::MAX;

/// Marks an entry that is one whole path (its record holds every choice), at its exact cost.
const COMPLETE: u32 = u32::MAX - 1;

/// What [`Search::next_path`] found.
#[derive(Debug, PartialEq)]
pub enum Next {
    /// The next path and its cost.
    Path(Vec<EdgeId>, f64),
    /// No path is left.
    Exhausted,
    /// The search used its budget on forbidden paths; call again to go on.
    Paused,
}

/// One search instance over one component and one packet size.
#[derive(Clone, Debug)]
pub struct Search {
    component: usize,
    size: u32,
    sink: NodeId,
    /// Per edge: its cost in this component.
    weight: Vec<f64>,
    /// Per edge: its source and target node.
    ends: Vec<(u32, u32)>,
    /// Per edge: in this instance's sub-graph and not forbidden.
    alive: Vec<bool>,
    /// Out-edges per node that lie on a source-to-sink path of the sub-graph, in the graph's
    /// edge order: `out_edges[out_start[v]..out_start[v + 1]]`. Fixed after construction, so
    /// that which nodes have a choice (and so a record) never changes.
    out_start: Vec<u32>,
    out_edges: Vec<u32>,
    /// In-edges per node, the same way, for repairing `best` after a removal.
    in_start: Vec<u32>,
    in_edges: Vec<u32>,
    /// Largest cost from each node to the sink over alive edges; −∞ when none is left.
    best: Vec<f64>,
    queue: BinaryHeap<Deviation>,
    records: Vec<Record>,
    /// Scratch: the path being built, and the deviations found on its walk.
    path: Vec<EdgeId>,
    found: Vec<(usize, Deviation)>,
    /// Scratch: suffix bounds for the walk under way that leave out the edges completing a
    /// forbidden set with its prefix (empty when none does).
    avoiding: Vec<f64>,
    /// Work done: queue pops plus edges of walked paths.
    work: u64,
}

/// A choice at a node with more than one out-edge, and the prefix before it.
#[derive(Clone, Copy, Debug)]
struct Record {
    parent: u32,
    edge: u32,
}

/// A queued set of paths: the prefix `record`, then `edge`, then any way to the sink (or, with
/// `edge` = [`NONE`], every path from the source; with [`COMPLETE`], the one path `record`
/// holds). `key` bounds their costs from above.
#[derive(Clone, Copy, Debug)]
struct Deviation {
    key: f64,
    /// Cost of the prefix up to `edge`'s source.
    prefix: f64,
    record: u32,
    edge: u32,
}

impl PartialEq for Deviation {
    fn eq(&self, other: &Deviation) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Deviation {}
impl PartialOrd for Deviation {
    fn partial_cmp(&self, other: &Deviation) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Deviation {
    fn cmp(&self, other: &Deviation) -> Ordering {
        self.key
            .total_cmp(&other.key)
            .then(other.edge.cmp(&self.edge))
            .then(other.record.cmp(&self.record))
    }
}

/// Splits `pairs` (node, edge) into compressed rows per node.
fn rows(nodes: usize, mut pairs: Vec<(u32, u32)>) -> (Vec<u32>, Vec<u32>) {
    pairs.sort_unstable();
    let mut start = vec![0u32; nodes + 1];
    for &(v, _) in &pairs {
        start[v as usize + 1] += 1;
    }
    for v in 0..nodes {
        start[v + 1] += start[v];
    }
    (start, pairs.into_iter().map(|(_, e)| e).collect())
}

impl Search {
    /// The instance over `dag`'s edges with `min_packet <= size`, ordered by `component`.
    pub fn new(dag: &PathDag, component: usize, size: u32) -> Result<Search, EnumerateError> {
        validate(dag)?;
        if component >= dag.components.len() {
            return Err(EnumerateError::NoSuchComponent {
                component,
                components: dag.components.len(),
            });
        }
        let n = dag.nodes.len();
        let sink = dag.sink();
        let weight: Vec<f64> = dag.edges.iter().map(|e| e.cost.0[component]).collect();
        let ends: Vec<(u32, u32)> = dag
            .edges
            .iter()
            .map(|e| (e.from as u32, e.to as u32))
            .collect();
        let mut alive: Vec<bool> = dag.edges.iter().map(|e| e.min_packet <= size).collect();
        // Which nodes reach the sink and are reached from the source inside the sub-graph:
        // only edges between such nodes are on a path.
        let mut reaches = vec![false; n];
        reaches[sink] = true;
        let mut by_source: Vec<usize> = (0..dag.edges.len()).collect();
        by_source.sort_unstable_by_key(|&e| std::cmp::Reverse(dag.edges[e].from));
        for &e in &by_source {
            let edge = &dag.edges[e];
            if alive[e] && reaches[edge.to] {
                reaches[edge.from] = true;
            }
        }
        let mut reached = vec![false; n];
        reached[PathDag::SOURCE] = true;
        for &e in by_source.iter().rev() {
            let edge = &dag.edges[e];
            if alive[e] && reached[edge.from] {
                reached[edge.to] = true;
            }
        }
        for (e, edge) in dag.edges.iter().enumerate() {
            alive[e] = alive[e] && reached[edge.from] && reaches[edge.to];
        }
        let live: Vec<u32> = (0..dag.edges.len() as u32)
            .filter(|&e| alive[e as usize])
            .collect();
        let (out_start, out_edges) =
            rows(n, live.iter().map(|&e| (ends[e as usize].0, e)).collect());
        let (in_start, in_edges) = rows(n, live.iter().map(|&e| (ends[e as usize].1, e)).collect());
        let mut search = Search {
            component,
            size,
            sink,
            weight,
            ends,
            alive,
            out_start,
            out_edges,
            in_start,
            in_edges,
            best: vec![f64::NEG_INFINITY; n],
            queue: BinaryHeap::new(),
            records: Vec::new(),
            path: Vec::new(),
            found: Vec::new(),
            avoiding: Vec::new(),
            work: 0,
        };
        search.best[sink] = 0.0;
        for v in (0..sink).rev() {
            search.best[v] = search.best_from(v);
        }
        if search.best[PathDag::SOURCE] > f64::NEG_INFINITY {
            search.queue.push(Deviation {
                key: search.best[PathDag::SOURCE],
                prefix: 0.0,
                record: NONE,
                edge: NONE,
            });
        }
        Ok(search)
    }

    /// The component this instance orders by.
    pub fn component(&self) -> usize {
        self.component
    }

    /// The packet size this instance's sub-graph admits.
    pub fn size(&self) -> u32 {
        self.size
    }

    /// Queue pops plus edges of the paths walked so far: the work done, for checking that the
    /// next path costs the same however many came before.
    pub fn work(&self) -> u64 {
        self.work
    }

    fn out(&self, v: usize) -> &[u32] {
        &self.out_edges[self.out_start[v] as usize..self.out_start[v + 1] as usize]
    }

    /// Cost of leaving `v` by `e` and going on the costliest way; −∞ if `e` leads nowhere.
    fn through(&self, e: u32) -> f64 {
        self.through_under(e, &self.best)
    }

    /// [`Search::through`] with the suffix bounds `bounds` (per node).
    fn through_under(&self, e: u32, bounds: &[f64]) -> f64 {
        if self.alive[e as usize] {
            self.weight[e as usize] + bounds[self.ends[e as usize].1 as usize]
        } else {
            f64::NEG_INFINITY
        }
    }

    fn best_from(&self, v: usize) -> f64 {
        self.out(v)
            .iter()
            .map(|&e| self.through(e))
            .fold(f64::NEG_INFINITY, f64::max)
    }

    /// The key of `d` under the current bounds: never above its own, which a walk may have
    /// tightened with what its prefix forbids ([`Search::bound_avoiding`]).
    fn fresh_key(&self, d: &Deviation) -> f64 {
        match d.edge {
            NONE => self.best[PathDag::SOURCE].min(d.key),
            COMPLETE => d.key,
            edge => (d.prefix + self.through(edge)).min(d.key),
        }
    }

    /// Upper bound of the cost of every path not produced yet (exact unless a larger forbidden
    /// set cuts the costliest one); `None` when no path is left.
    pub fn peek(&mut self) -> Option<f64> {
        while let Some(top) = self.queue.peek() {
            let key = self.fresh_key(top);
            if key == top.key {
                return Some(key);
            }
            self.requeue();
        }
        None
    }

    /// Pops the top entry and queues it again with its exact key (or drops it if nothing is
    /// left below it).
    fn requeue(&mut self) {
        if let Some(mut top) = self.queue.pop() {
            self.work += 1;
            top.key = self.fresh_key(&top);
            if top.key > f64::NEG_INFINITY {
                self.queue.push(top);
            }
        }
    }

    /// Removes `edge` from the sub-graph (it was forbidden on its own) and repairs the suffix
    /// bounds of the nodes above it.
    pub fn remove(&mut self, edge: EdgeId) {
        if edge >= self.alive.len() || !self.alive[edge] {
            return;
        }
        self.alive[edge] = false;
        let mut dirty = BTreeSet::from([self.ends[edge].0 as usize]);
        while let Some(v) = dirty.pop_last() {
            let best = self.best_from(v);
            if best != self.best[v] {
                self.best[v] = best;
                for &e in &self.in_edges[self.in_start[v] as usize..self.in_start[v + 1] as usize] {
                    dirty.insert(self.ends[e as usize].0 as usize);
                }
            }
        }
    }

    /// The next path (edges from source to sink) and its cost in this instance's component
    /// (summed along the search, so equal to the path's cost up to rounding). Paths containing a
    /// set of `forbidden` are skipped and pruned; after `budget` of them, the search pauses (it
    /// goes on where it stopped at the next call), so that its caller can keep to its limits.
    pub fn next_path(&mut self, forbidden: &mut Forbidden, budget: u64) -> Next {
        for _ in 0..budget.max(1) {
            let (Some(key), Some(top)) = (self.peek(), self.queue.pop()) else {
                return Next::Exhausted;
            };
            self.work += 1;
            if let Some(path) = self.expand(top, forbidden) {
                return Next::Path(path, key);
            }
        }
        Next::Paused
    }

    /// Walks the costliest allowed path of `d`'s set, queues the deviations along the walk, and
    /// returns the path if it is the costliest of the set and avoided no forbidden set on the way
    /// (else queues it whole, at its own cost).
    ///
    /// The walk takes, at each node, the costliest out-edge that completes no forbidden set with
    /// the edges before it; an edge that does is dropped with every path through it (they all
    /// hold that set). A learned set whose edges lie far apart (a test of a byte early, a
    /// contradicting test late) would otherwise be walked into by every combination of the
    /// choices between, each walk cut at its last edge: the paper artifact's path explosion
    /// spent its time there, and Katran's sets filled the queue with such deviations. Where the
    /// walk turned away from an edge, its path may cost less than the set's key: it goes back
    /// to the queue as a whole path, so that paths still come out in order.
    fn expand(&mut self, d: Deviation, forbidden: &mut Forbidden) -> Option<Vec<EdgeId>> {
        self.path.clear();
        self.found.clear();
        if d.edge == COMPLETE {
            self.rebuild_prefix(d.record, self.sink);
            self.work += self.path.len() as u64;
            // Edges removed and sets forbidden since it was queued.
            let allowed = self.path.iter().all(|&e| self.alive[e])
                && forbidden.first_violation(&self.path).is_none();
            return allowed.then(|| self.path.clone());
        }
        let start = if d.edge == NONE {
            PathDag::SOURCE
        } else {
            self.ends[d.edge as usize].0 as usize
        };
        self.rebuild_prefix(d.record, start);
        let first = self.path.len();
        let (mut node, mut cost) = if d.edge == NONE {
            (PathDag::SOURCE, 0.0)
        } else {
            let e = d.edge as usize;
            self.path.push(e);
            (self.ends[e].1 as usize, d.prefix + self.weight[e])
        };
        // The prefix (and the deviation's edge) against the sets forbidden since it was queued.
        let mut allowed = forbidden.walk_onto_path(&self.path).is_none();
        // Where a set lacks one edge of the prefix, that edge is out of every path of the set:
        // bounds without it (the others' keys, and the walk's choices) are tighter, and still
        // bounds. Without them, every combination of the choices between a set's early edge and
        // its late one has a key as if the late one were possible. They are made again wherever
        // the walk brings a set to one edge short.
        if allowed && forbidden.one_short() {
            self.bound_avoiding(node, forbidden);
        } else {
            self.avoiding.clear();
        }
        let mut avoided = false;
        while allowed && node != self.sink {
            let (lo, hi) = (
                self.out_start[node] as usize,
                self.out_start[node + 1] as usize,
            );
            // The costliest edge (the first of equals), and the costliest allowed one.
            let mut costliest: Option<(u32, f64)> = None;
            let mut chosen: Option<(u32, f64)> = None;
            for &e in &self.out_edges[lo..hi] {
                let c = self.through_avoiding(e);
                if c == f64::NEG_INFINITY {
                    continue;
                }
                if costliest.is_none_or(|(_, best)| c > best) {
                    costliest = Some((e, c));
                }
                if !forbidden.completes(e as usize) && chosen.is_none_or(|(_, best)| c > best) {
                    chosen = Some((e, c));
                }
            }
            let Some((chosen, _)) = chosen else {
                allowed = false;
                break;
            };
            avoided |= costliest.is_some_and(|(e, _)| e != chosen);
            let at = self.path.len();
            for &e in &self.out_edges[lo..hi] {
                let c = self.through_avoiding(e);
                if e != chosen && c > f64::NEG_INFINITY && !forbidden.completes(e as usize) {
                    self.found.push((
                        at,
                        Deviation {
                            key: cost + c,
                            prefix: cost,
                            record: NONE,
                            edge: e,
                        },
                    ));
                }
            }
            forbidden.walk_onto(chosen as usize);
            self.path.push(chosen as usize);
            cost += self.weight[chosen as usize];
            node = self.ends[chosen as usize].1 as usize;
            if forbidden.one_short_with(chosen as usize) {
                self.bound_avoiding(node, forbidden);
            }
        }
        forbidden.end_walk();
        self.work += self.path.len() as u64;
        // The path's cost and its set's key, summed along different ways, differ by rounding.
        // A walk that turned away from its costliest edge for a forbidden set queues its path
        // whole even where it costs the key (a tie): it then comes after the other entries of that key (among equal costs,
        // a prefix that ran into a refuted conflict is the likelier to be impossible again;
        // taking it first sent `xdp_quic_lb_nfp_v6`'s NFP search through dozens of impossible
        // paths of its slowest rate).
        let below_key = cost < d.key - 1e-9 * d.key.abs().max(1.0);
        let whole_path_queued = allowed && (avoided || below_key);
        // Record the choices before each queued deviation (the prefix it shares), and no further
        // unless the whole path is queued.
        let found = std::mem::take(&mut self.found);
        let mut record = d.record;
        let mut next = 0;
        for i in first..self.path.len() {
            while let Some((_, dev)) = found.get(next).filter(|(at, _)| *at == i) {
                self.queue.push(Deviation { record, ..*dev });
                next += 1;
            }
            if next == found.len() && !whole_path_queued {
                break;
            }
            let e = self.path[i];
            let from = self.ends[e].0 as usize;
            if self.out_start[from + 1] - self.out_start[from] > 1 {
                record = self.push_record(record, e as u32);
            }
        }
        self.found = found;
        self.found.clear();
        if whole_path_queued {
            self.queue.push(Deviation {
                key: cost,
                prefix: cost,
                record,
                edge: COMPLETE,
            });
            return None;
        }
        allowed.then(|| self.path.clone())
    }

    /// Fills [`Search::avoiding`]: the largest cost from each node from `from` on to the sink
    /// without the edges that complete a forbidden set with the path walked so far.
    fn bound_avoiding(&mut self, from: NodeId, forbidden: &Forbidden) {
        self.avoiding.clear();
        self.avoiding.extend_from_slice(&self.best);
        for v in (from..self.sink).rev() {
            self.avoiding[v] = self
                .out(v)
                .iter()
                .filter(|&&e| !forbidden.completes(e as usize))
                .map(|&e| self.through_under(e, &self.avoiding))
                .fold(f64::NEG_INFINITY, f64::max);
        }
    }

    /// [`Search::through`] under the bounds of [`Search::bound_avoiding`] where they are set.
    fn through_avoiding(&self, e: u32) -> f64 {
        if self.avoiding.is_empty() {
            self.through(e)
        } else {
            self.through_under(e, &self.avoiding)
        }
    }

    fn push_record(&mut self, parent: u32, edge: u32) -> u32 {
        self.records.push(Record { parent, edge });
        (self.records.len() - 1) as u32
    }

    /// Writes the path from the source to `end` whose choices are `record` into `self.path`:
    /// the recorded edge at every node with a choice, the only out-edge at every other node.
    fn rebuild_prefix(&mut self, record: u32, end: NodeId) {
        let mut choices = Vec::new();
        let mut r = record;
        while r != NONE {
            choices.push(self.records[r as usize].edge);
            r = self.records[r as usize].parent;
        }
        let mut node = PathDag::SOURCE;
        while node != end {
            let out = self.out(node);
            let e = match out {
                [only] => *only,
                _ => match choices.pop() {
                    Some(e) => e,
                    None => break,
                },
            };
            self.path.push(e as usize);
            node = self.ends[e as usize].1 as usize;
        }
    }

    /// Approximate bytes held.
    pub fn memory_bytes(&self) -> usize {
        use std::mem::size_of;
        self.weight.capacity() * size_of::<f64>()
            + self.ends.capacity() * size_of::<(u32, u32)>()
            + self.alive.capacity()
            + (self.out_start.capacity()
                + self.out_edges.capacity()
                + self.in_start.capacity()
                + self.in_edges.capacity())
                * size_of::<u32>()
            + self.best.capacity() * size_of::<f64>()
            + self.queue.capacity() * size_of::<Deviation>()
            + self.records.capacity() * size_of::<Record>()
            + self.path.capacity() * size_of::<EdgeId>()
            + self.found.capacity() * size_of::<(usize, Deviation)>()
            + self.avoiding.capacity() * size_of::<f64>()
    }
}
