//! The check-at-every-branch baseline (the alternative paper 000's Table 4 measures the ordered
//! search against): symbolic execution depth-first over the prepared graph's paths, asking the
//! solver at every decision whether the decisions so far can still all hold, dropping only the
//! subtrees it refutes and stopping at nothing. It visits every satisfiable path, prices each,
//! and keeps the slowest, so its slowest path is the SSP; the benchmark compares its time with
//! the ordered search's ([`crate::ssp::search`]).
//!
//! A check that gives no verdict counts as possible (the subtree is explored), as in the ordered
//! search; paths reached through such a check are counted apart. No witnesses are built: this
//! baseline does less per path than the search does for the path it reports.

use std::time::{Duration, Instant};

use linerate_cfg::Decision;
use linerate_cost::Model;

use crate::dag::{EdgeId, NodeId, PathDag};
use crate::enumerate::{rank, EnumerateError, Metric, ModelRates, RankedPath};
use crate::prepare::Prepared;
use crate::ssp::Verdict;

/// Checks prefixes of paths given as decision lists: whether some input takes all of them.
pub trait PrefixChecker {
    /// `Sat(())` where some input takes `decisions` (whatever follows), `Unsat` with a core of
    /// decision indices where none does.
    fn check_prefix(&mut self, decisions: &[Decision]) -> Verdict<()>;
}

/// What the baseline found.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The slowest path visited (satisfiable, or reached through a check without a verdict).
    pub slowest: Option<RankedPath>,
    /// Paths visited: every check on the way satisfiable or without a verdict.
    pub paths: u64,
    /// Of those, paths with a check without a verdict on the way.
    pub unconfirmed: u64,
    /// Prefix checks made (one per decision edge followed, and one of the empty prefix).
    pub checks: u64,
    /// Whether every path was visited (false: the time cap stopped it).
    pub complete: bool,
    pub elapsed: Duration,
}

/// A node of the current path with the next of its edges to follow.
struct Frame {
    node: NodeId,
    next: usize,
    /// Edges and decisions of the path up to the node.
    edges: usize,
    decisions: usize,
    /// Whether a check on the way gave no verdict.
    unconfirmed: bool,
}

/// Visits every path of `prepared` the checker does not refute, depth-first, checking the
/// decisions so far at every edge that makes one; stops after `timeout`.
pub fn check_every_branch(
    prepared: &Prepared,
    model: &Model,
    metric: Metric,
    timeout: Option<Duration>,
    checker: &mut impl PrefixChecker,
) -> Result<Outcome, EnumerateError> {
    let started = Instant::now();
    let rates = ModelRates::new(model, metric);
    rates.check(&prepared.dag)?;
    let dag: &PathDag = &prepared.dag;
    let mut outcome = Outcome {
        slowest: None,
        paths: 0,
        unconfirmed: 0,
        checks: 1,
        complete: true,
        elapsed: Duration::ZERO,
    };
    let root = match checker.check_prefix(&[]) {
        Verdict::Unsat { .. } => {
            outcome.elapsed = started.elapsed();
            return Ok(outcome);
        }
        Verdict::Sat(()) => false,
        Verdict::Unknown(_) => true,
    };
    let mut edges: Vec<EdgeId> = Vec::new();
    let mut decisions: Vec<Decision> = Vec::new();
    let mut stack = vec![Frame {
        node: PathDag::SOURCE,
        next: 0,
        edges: 0,
        decisions: 0,
        unconfirmed: root,
    }];
    while let Some(top) = stack.last_mut() {
        if timeout.is_some_and(|t| started.elapsed() >= t) {
            outcome.complete = false;
            break;
        }
        edges.truncate(top.edges);
        decisions.truncate(top.decisions);
        if top.node == dag.sink() {
            let path = rank(dag, &rates, edges.clone());
            outcome.paths += 1;
            outcome.unconfirmed += u64::from(top.unconfirmed);
            if outcome.slowest.as_ref().is_none_or(|s| path.rate < s.rate) {
                outcome.slowest = Some(path);
            }
            stack.pop();
            continue;
        }
        let Some(&edge) = dag.nodes[top.node].out.get(top.next) else {
            stack.pop();
            continue;
        };
        top.next += 1;
        let mut unconfirmed = top.unconfirmed;
        edges.push(edge);
        if let Some((decision, _)) = prepared.decision_edges(&[edge]).first() {
            decisions.push(*decision);
            outcome.checks += 1;
            match checker.check_prefix(&decisions) {
                // Past a summarised loop the check is of a two-iteration run only.
                Verdict::Unsat { .. } if prepared.summarised_loop_in(&edges).is_some() => {
                    unconfirmed = true
                }
                Verdict::Unsat { .. } => continue,
                Verdict::Sat(()) => {}
                Verdict::Unknown(_) => unconfirmed = true,
            }
        }
        stack.push(Frame {
            node: dag.edges[edge].to,
            next: 0,
            edges: edges.len(),
            decisions: decisions.len(),
            unconfirmed,
        });
    }
    outcome.elapsed = started.elapsed();
    Ok(outcome)
}
