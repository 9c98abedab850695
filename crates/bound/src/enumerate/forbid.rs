//! Learned conflicts: sets of edges that no path produced from now on may contain all of (an
//! unsatisfiable core's branch decisions). Single edges are the common case and are a flag per
//! edge; a search also removes them from its graph, so that its suffix bounds stay exact.

use crate::dag::EdgeId;

/// The forbidden edge sets of one enumeration.
#[derive(Clone, Debug, Default)]
pub struct Forbidden {
    /// Edges forbidden on their own.
    single: Vec<bool>,
    /// Sets of two or more edges, each sorted and without repeats.
    sets: Vec<Vec<EdgeId>>,
    /// For each edge, the sets of [`Forbidden::sets`] it belongs to.
    by_edge: Vec<Vec<u32>>,
    /// Scratch for [`Forbidden::first_violation`]: edges of each set seen so far on the path.
    hits: Vec<u32>,
    /// Scratch: the sets `hits` counts something for, to reset them.
    touched: Vec<u32>,
    /// The empty set was forbidden: every path contains it.
    everything: bool,
}

impl Forbidden {
    /// No conflicts, for a graph of `edges` edges.
    pub fn new(edges: usize) -> Forbidden {
        Forbidden {
            single: vec![false; edges],
            by_edge: vec![Vec::new(); edges],
            ..Forbidden::default()
        }
    }

    /// Adds a conflict; `edges` are checked to exist by the caller. Returns the edge when the
    /// set is a single edge (newly forbidden), so that searches can remove it.
    pub(crate) fn add(&mut self, mut edges: Vec<EdgeId>) -> Option<EdgeId> {
        edges.sort_unstable();
        edges.dedup();
        if edges.iter().any(|&e| self.single[e]) || self.everything {
            return None;
        }
        match edges.as_slice() {
            [] => {
                self.everything = true;
                None
            }
            [e] => {
                self.single[*e] = true;
                Some(*e)
            }
            _ => {
                let id = self.sets.len() as u32;
                for &e in &edges {
                    self.by_edge[e].push(id);
                }
                self.sets.push(edges);
                self.hits.push(0);
                None
            }
        }
    }

    /// Whether every path is forbidden (the empty set was).
    pub fn everything(&self) -> bool {
        self.everything
    }

    /// Whether `edge` is forbidden on its own.
    pub fn is_single(&self, edge: EdgeId) -> bool {
        self.single[edge]
    }

    /// Whether a path whose edges so far were given to [`Forbidden::walk_onto`] would hold a
    /// whole forbidden set if it took `edge` next.
    pub(crate) fn completes(&self, edge: EdgeId) -> bool {
        self.everything
            || self.single[edge]
            || self.by_edge[edge]
                .iter()
                .any(|&s| self.hits[s as usize] as usize + 1 == self.sets[s as usize].len())
    }

    /// Whether some set lacks only one edge of the path walked so far (which
    /// [`Forbidden::completes`] then names).
    pub(crate) fn one_short(&self) -> bool {
        self.touched
            .iter()
            .any(|&s| self.hits[s as usize] as usize + 1 == self.sets[s as usize].len())
    }

    /// Whether a set of `edge`'s lacks only one edge of the path walked so far.
    pub(crate) fn one_short_with(&self, edge: EdgeId) -> bool {
        self.by_edge[edge]
            .iter()
            .any(|&s| self.hits[s as usize] as usize + 1 == self.sets[s as usize].len())
    }

    /// Counts `edge` as taken by the path being walked (edge by edge, each at most once, until
    /// [`Forbidden::end_walk`]).
    pub(crate) fn walk_onto(&mut self, edge: EdgeId) {
        for &s in &self.by_edge[edge] {
            let hits = &mut self.hits[s as usize];
            if *hits == 0 {
                self.touched.push(s);
            }
            *hits += 1;
        }
    }

    /// [`Forbidden::walk_onto`] each edge of `path` in turn, up to the first that completes a
    /// set: its position, or `None` when none does.
    pub(crate) fn walk_onto_path(&mut self, path: &[EdgeId]) -> Option<usize> {
        path.iter().position(|&e| {
            let completes = self.completes(e);
            self.walk_onto(e);
            completes
        })
    }

    /// Forgets the path walked.
    pub(crate) fn end_walk(&mut self) {
        for s in self.touched.drain(..) {
            self.hits[s as usize] = 0;
        }
    }

    /// The first position `i` such that `path[..=i]` contains a whole forbidden set: every path
    /// starting with that prefix is forbidden. `None` when `path` is allowed.
    pub fn first_violation(&mut self, path: &[EdgeId]) -> Option<usize> {
        if self.everything {
            return Some(0);
        }
        let found = self.walk_onto_path(path);
        self.end_walk();
        found
    }

    /// Approximate bytes held.
    pub fn memory_bytes(&self) -> usize {
        self.single.capacity()
            + self.by_edge.capacity() * std::mem::size_of::<Vec<u32>>()
            + self.by_edge.iter().map(|v| v.capacity() * 4).sum::<usize>()
            + self.sets.capacity() * std::mem::size_of::<Vec<EdgeId>>()
            + self
                .sets
                .iter()
                .map(|s| s.capacity() * std::mem::size_of::<EdgeId>())
                .sum::<usize>()
            + (self.hits.capacity() + self.touched.capacity()) * 4
    }
}
