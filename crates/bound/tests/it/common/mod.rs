//! What the preparation tests share: following an interpreter run through a prepared graph,
//! pricing a run instruction by instruction, and the graph's longest paths.

#![allow(dead_code)]

use linerate_bound::dag::{EdgeId, PathDag};
use linerate_bound::prepare::Prepared;
use linerate_cost::{Cost, ProgramCost};
use linerate_vm::trace::Step as Executed;

/// The source-to-sink path of `prepared` that the run `steps` follows
/// ([`Prepared::follow`]).
pub fn follow(prepared: &Prepared, steps: &[Executed]) -> Result<Vec<EdgeId>, String> {
    prepared.follow(steps)
}

/// The run priced instruction by instruction (each program's slot charges, a conditional jump's
/// by its outcome), stalls left out: what every executed instruction costs at least.
pub fn executed_cost(costs: &[Option<ProgramCost>], steps: &[Executed], n: usize) -> Cost {
    let mut total = Cost::zero(n);
    for s in steps {
        let cost = costs[s.program].as_ref().expect("priced program");
        if let Some(charge) = cost.slots.get(&s.slot) {
            match (s.taken, &charge.taken) {
                (Some(true), Some(taken)) => total.add(taken),
                _ => total.add(&charge.cost),
            }
        }
    }
    total
}

/// For each component, the largest cost of a source-to-sink path.
pub fn longest(dag: &PathDag) -> Vec<f64> {
    (0..dag.components.len())
        .map(|c| {
            let mut best = vec![f64::NEG_INFINITY; dag.nodes.len()];
            best[dag.sink()] = 0.0;
            for v in (0..dag.sink()).rev() {
                for &e in &dag.nodes[v].out {
                    let edge = &dag.edges[e];
                    best[v] = best[v].max(edge.cost.0[c] + best[edge.to]);
                }
            }
            best[PathDag::SOURCE]
        })
        .collect()
}

/// Whether `a` is at least `b` in every component, up to rounding.
pub fn at_least(a: &Cost, b: &Cost) -> bool {
    a.0.iter()
        .zip(&b.0)
        .all(|(x, y)| *x >= *y - 1e-9 * y.abs().max(1.0))
}

/// Whether `a` equals `b` in every component, up to rounding.
pub fn same(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| (x - y).abs() <= 1e-9 * y.abs().max(1.0))
}
