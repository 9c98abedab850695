//! Every source-to-sink path of a [`PathDag`] once, in depth-first order: the baseline the
//! ordered enumeration is measured against (`bound --exhaustive`). Memory is one path.

use super::{validate, EnumerateError};
use crate::dag::{EdgeId, NodeId, PathDag};

/// Depth-first iteration over every path.
#[derive(Clone, Debug)]
pub struct Exhaustive<'d> {
    dag: &'d PathDag,
    /// Out-edges per node, from the edges' own endpoints.
    out: Vec<Vec<EdgeId>>,
    /// The current path, and for each of its nodes (source first) the index of the next
    /// out-edge to try.
    path: Vec<EdgeId>,
    next: Vec<usize>,
    started: bool,
}

impl<'d> Exhaustive<'d> {
    /// The iteration over `dag`'s paths.
    pub fn new(dag: &'d PathDag) -> Result<Exhaustive<'d>, EnumerateError> {
        validate(dag)?;
        let mut out = vec![Vec::new(); dag.nodes.len()];
        for (id, e) in dag.edges.iter().enumerate() {
            out[e.from].push(id);
        }
        Ok(Exhaustive {
            dag,
            out,
            path: Vec::new(),
            next: vec![0],
            started: false,
        })
    }

    fn node(&self) -> NodeId {
        self.path
            .last()
            .map_or(PathDag::SOURCE, |&e| self.dag.edges[e].to)
    }
}

impl Iterator for Exhaustive<'_> {
    type Item = Vec<EdgeId>;

    fn next(&mut self) -> Option<Vec<EdgeId>> {
        let sink = self.dag.sink();
        if self.started {
            // Leave the path produced last: its end is the sink, which has no way on. With no
            // edge to leave, the search is over (the only path was the empty one, or the last
            // call backed up past the source).
            self.path.pop()?;
            self.next.pop();
        }
        self.started = true;
        loop {
            let node = self.node();
            if node == sink {
                return Some(self.path.clone());
            }
            let i = *self.next.last()?;
            match self.out[node].get(i) {
                Some(&e) => {
                    if let Some(n) = self.next.last_mut() {
                        *n += 1;
                    }
                    self.path.push(e);
                    self.next.push(0);
                }
                None => {
                    // A dead end (or every way from here tried): back up one edge.
                    self.next.pop();
                    self.path.pop()?;
                }
            }
        }
    }
}
