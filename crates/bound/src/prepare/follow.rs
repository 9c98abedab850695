//! Following a run through the prepared graph: the source-to-sink path an execution of the
//! interpreter takes, for checking what the graph and the search claim against runs
//! (`crate::attack`) and what the graph prices against what runs execute (the tests).

use linerate_cfg::EdgeKind;
use linerate_vm::trace::Step as Executed;

use super::Prepared;
use crate::dag::{EdgeId, PathDag, Step};

impl Prepared {
    /// The source-to-sink path of the graph that the run `steps` (recorded with
    /// [`linerate_vm::VmOptions::record_steps`]) follows: each node's piece is the
    /// executed instructions in it, and the edge out of it is the one whose step matches what ran
    /// next (where a summarised loop's middle iterations end is tried at each later visit of the
    /// header, the earliest first). An error names where the run leaves the graph: the graph has
    /// no edge for something the run did (an edge the analysis found impossible, say).
    pub fn follow(&self, steps: &[Executed]) -> Result<Vec<EdgeId>, String> {
        let mut path = Vec::new();
        follow_from(self, steps, PathDag::SOURCE, 0, &mut path)?;
        Ok(path)
    }
}

fn follow_from(
    prepared: &Prepared,
    steps: &[Executed],
    node: usize,
    mut i: usize,
    path: &mut Vec<EdgeId>,
) -> Result<(), String> {
    let dag = &prepared.dag;
    if node == dag.sink() {
        return if i == steps.len() {
            Ok(())
        } else {
            Err(format!(
                "the graph's path ends at step {i} of {}",
                steps.len()
            ))
        };
    }
    let n = &dag.nodes[node];
    let program = n.program.expect("only the sink has no program");
    let range = n.slot..prepared.ends[node];
    let mut last: Option<Executed> = None;
    while let Some(s) = steps.get(i) {
        let fresh = last.is_none_or(|l| s.slot > l.slot);
        if s.program == program && range.contains(&s.slot) && fresh {
            last = Some(*s);
            i += 1;
        } else {
            break;
        }
    }
    let next = steps.get(i);
    let lands = |to: usize, at: Option<&Executed>| {
        let t = &dag.nodes[to];
        match (at, t.program) {
            (Some(s), Some(p)) => s.program == p && s.slot == t.slot,
            _ => false,
        }
    };
    let mut failure = format!(
        "the run leaves the graph at node {node} (program {program}, slots {range:?}, calls {:?}, \
         iterations {:?}) before executed step {i} ({next:?})",
        n.calls, n.iterations
    );
    for &e in &n.out {
        let edge = &dag.edges[e];
        // Where the run continues if it takes this edge: candidate step indices.
        let resumes: Vec<usize> = match edge.step {
            Step::Flow(kind) => {
                let outcome = last.and_then(|l| l.taken);
                let kind_ok = match kind {
                    EdgeKind::Taken => outcome == Some(true),
                    EdgeKind::NotTaken => outcome == Some(false),
                    _ => true,
                };
                if kind_ok && lands(edge.to, next) {
                    vec![i]
                } else {
                    vec![]
                }
            }
            Step::Call { .. } | Step::Return { .. } | Step::TailCall { .. } => {
                if lands(edge.to, next) {
                    vec![i]
                } else {
                    vec![]
                }
            }
            Step::Exit => {
                if next.is_none() {
                    vec![i]
                } else {
                    vec![]
                }
            }
            // The callback's instructions run in between; the path resumes after the helper.
            Step::Callbacks { call, .. } => steps[i..]
                .iter()
                .position(|s| s.program == program && s.slot == call + 1)
                .map(|k| i + k)
                .filter(|&j| lands(edge.to, steps.get(j)))
                .into_iter()
                .collect(),
            // The middle iterations run in between: the last one starts at some later visit of
            // the header.
            Step::Loop { .. } => (i..steps.len())
                .filter(|&j| lands(edge.to, steps.get(j)))
                .collect(),
        };
        // The fewest middle iterations first: a later landing may be a later entry of the loop.
        for j in resumes {
            path.push(e);
            match follow_from(prepared, steps, edge.to, j, path) {
                Ok(()) => return Ok(()),
                Err(deeper) => {
                    failure = deeper;
                    path.pop();
                }
            }
        }
    }
    Err(failure)
}
