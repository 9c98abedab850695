//! Impossible edges per context: linerate's analysis run again over the prepared graph, one
//! state per block copy instead of one per CFG edge.
//!
//! The analysis proper ([`linerate_analysis::Analysis`]) joins every way into a block: all
//! iterations of a loop, all callers. Unrolled, a loop's iterations are separate nodes, and what
//! an iteration knows (after `l` labels of a DNS name the walk is at byte `2 l` or later) is lost
//! only where the copies meet again. So the transfer of the analysis
//! ([`linerate_analysis::Analysis::run_block`]) is run over the graph's nodes in their
//! (topological) order, each node's entry the join of the states along the edges into it:
//!
//! - an edge out of a node whose state has no successor along it is **impossible** in every run
//!   that reaches the node, and is removed (with what only it leads to);
//! - where several edges meet, each of them alone is run through the node too: an outcome of the
//!   node's branch that no state arriving along edge `e` can take is impossible on every path
//!   holding `e`, and the pair becomes a **conflict** ([`super::Prepared::conflicts`]) the search
//!   forbids from the start (after 32 labels the walk cannot land on the root label, although
//!   after fewer it can).
//!
//! Soundness: a node's entry over-approximates every state reaching it, because each edge's
//! state over-approximates the runs along it (by induction in node order, from the analysis's
//! own transfer). Nodes this pass does not run — pieces of blocks split at calls, nodes inside
//! inlined calls (their frames), a loop's summarised middle — pass nothing on; an edge from one
//! (or one that enters a program, returns from a call or stands for summarised work) contributes
//! the analysis's own state at the target block's entry, which holds for every context.

use linerate_analysis::{AbsDomain, Analysis, State};
use linerate_bpf::program::Object;
use linerate_cfg::BlockId;

use super::{Prepared, Programs};
use crate::dag::{EdgeId, NodeId, PathDag, Step};

/// Graphs with more nodes than this keep the analysis's per-edge facts only: the pass runs
/// every node once per edge into it.
pub(super) const MAX_NODES: usize = 1 << 16;

/// What the pass proved about a prepared graph.
pub(super) struct Proven {
    /// Per edge of the graph: no run takes it.
    pub impossible: Vec<bool>,
    /// Pairs of edges no run takes both of.
    pub conflicts: Vec<[EdgeId; 2]>,
}

/// Runs the analysis's transfer over `prepared`'s nodes (see the module documentation).
pub(super) fn prove(programs: &Programs<'_>, prepared: &Prepared) -> Proven {
    let dag = &prepared.dag;
    let mut into: Vec<Vec<EdgeId>> = vec![Vec::new(); dag.nodes.len()];
    for (e, edge) in dag.edges.iter().enumerate() {
        into[edge.to].push(e);
    }
    let mut d = AbsDomain::default();
    // Per edge: `None` where this pass did not run its source, else its state (`None` inside:
    // impossible).
    let mut along: Vec<Option<Option<State>>> = vec![None; dag.edges.len()];
    let mut proven = Proven {
        impossible: vec![false; dag.edges.len()],
        conflicts: Vec::new(),
    };
    for (v, into_v) in into.iter().enumerate().take(dag.sink()) {
        let Some((inputs, block)) = runnable(programs, prepared, v) else {
            continue;
        };
        let mut fallback: Option<Option<State>> = None;
        let mut arriving: Vec<(Option<EdgeId>, State)> = Vec::new();
        if v == PathDag::SOURCE {
            arriving.extend(own_state(inputs.0, block, &mut d).map(|s| (None, s)));
        }
        for &e in into_v {
            let state = match &along[e] {
                Some(state) => state.clone(),
                None => fallback
                    .get_or_insert_with(|| own_state(inputs.0, block, &mut d))
                    .clone(),
            };
            if let Some(s) = state {
                arriving.push((Some(e), s));
            }
        }
        let Some(entry) = join(&arriving, &mut d) else {
            for &o in &dag.nodes[v].out {
                proven.impossible[o] = true;
            }
            continue;
        };
        let exits = run(programs, inputs, block, &mut d, entry.clone());
        for &o in &dag.nodes[v].out {
            if let Step::Flow(_) = dag.edges[o].step {
                let state = exit_along(dag, inputs.1, block, o, &exits);
                proven.impossible[o] = state.is_none();
                along[o] = Some(state);
            }
        }
        if arriving.len() < 2 {
            continue;
        }
        for (e, state) in &arriving {
            let Some(e) = *e else { continue };
            if state.same_facts(&entry) {
                continue;
            }
            let alone = run(programs, inputs, block, &mut d, state.clone());
            for &o in &dag.nodes[v].out {
                if proven.impossible[o] || !matches!(dag.edges[o].step, Step::Flow(_)) {
                    continue;
                }
                if exit_along(dag, inputs.1, block, o, &alone).is_none() {
                    proven.conflicts.push([e, o]);
                }
            }
        }
    }
    proven
}

/// A program's analysis and CFG.
type ProgramInputs<'p> = (&'p Analysis, &'p linerate_cfg::Cfg);

/// The analysis, CFG and block of node `v` where this pass runs it: a whole block of a program's
/// entry function (no inlined call around it), left only by control-flow edges or the exit.
fn runnable<'p>(
    programs: &'p Programs<'_>,
    prepared: &Prepared,
    v: NodeId,
) -> Option<(ProgramInputs<'p>, BlockId)> {
    let node = &prepared.dag.nodes[v];
    if !node.calls.is_empty() {
        return None;
    }
    let inputs = programs.get_built(node.program?)?;
    let b = inputs.cfg.block_of(node.slot)?;
    let block = &inputs.cfg.blocks()[b];
    let whole = block.first == node.slot && prepared.ends.get(v) == Some(&block.end);
    let plain = node
        .out
        .iter()
        .all(|&o| matches!(prepared.dag.edges[o].step, Step::Flow(_) | Step::Exit));
    (whole && plain).then_some(((&inputs.analysis, &inputs.cfg), b))
}

/// The analysis's own state at the entry of `block` (every context), in domain `d`.
fn own_state(analysis: &Analysis, block: BlockId, d: &mut AbsDomain) -> Option<State> {
    analysis.block_state(block).map(|s| s.renamed(d))
}

/// The join of the states arriving at a node, `None` if none does.
fn join(arriving: &[(Option<EdgeId>, State)], d: &mut AbsDomain) -> Option<State> {
    let (first, rest) = arriving.split_first()?;
    Some(
        rest.iter()
            .fold(first.1.clone(), |acc, (_, s)| acc.join(s, d, false)),
    )
}

/// The states along the CFG edges of `block` run from `entry`.
fn run(
    programs: &Programs<'_>,
    inputs: ProgramInputs<'_>,
    block: BlockId,
    d: &mut AbsDomain,
    entry: State,
) -> Vec<(linerate_cfg::EdgeId, State)> {
    let object: &Object = programs.object;
    Analysis::run_block(object, inputs.1, d, Some(0), block, entry)
}

/// The state along graph edge `o` (a control-flow edge out of a copy of `block`) among `exits`;
/// `None` where it cannot be taken.
fn exit_along(
    dag: &PathDag,
    cfg: &linerate_cfg::Cfg,
    block: BlockId,
    o: EdgeId,
    exits: &[(linerate_cfg::EdgeId, State)],
) -> Option<State> {
    let Step::Flow(kind) = dag.edges[o].step else {
        return None;
    };
    let cfg_edge = cfg.blocks()[block]
        .succs
        .iter()
        .copied()
        .find(|&e| cfg.edges()[e].kind == kind)?;
    exits
        .iter()
        .find(|(e, _)| *e == cfg_edge)
        .map(|(_, s)| s.clone())
}
