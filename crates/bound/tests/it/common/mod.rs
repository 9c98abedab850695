//! What the preparation tests share: following an interpreter run through a prepared graph,
//! pricing a run instruction by instruction, the graph's longest paths, and hand-built programs
//! behind a packet length check.

#![allow(dead_code)]

use linerate_bound::dag::{EdgeId, PathDag};
use linerate_bound::prepare::Prepared;
use linerate_bpf::insn::build::{add64, exit, jmp_reg, ldx, mov64, mov64_reg};
use linerate_bpf::insn::{Cond, Instruction, Size};
use linerate_bpf::program::{MapDef, Object};
use linerate_cost::{Cost, ProgramCost};
use linerate_vm::trace::Step as Executed;

/// `body` (from slot 6) behind `r2 = data; r3 = data_end; if (data + 20 > data_end) exit;`, then
/// `exit`; `r0` starts as `XDP_PASS`.
pub fn with_packet_of_20(body: &[Instruction], maps: Vec<MapDef>) -> Object {
    let exit_slot = 6 + body.iter().map(Instruction::slots).sum::<usize>();
    let mut insns = vec![
        mov64(0, 2),
        ldx(Size::W, 2, 1, 0),
        ldx(Size::W, 3, 1, 4),
        mov64_reg(4, 2),
        add64(4, 20),
        jmp_reg(Cond::Gt, 4, 3, (exit_slot - 6) as i16),
    ];
    insns.extend_from_slice(body);
    insns.push(exit());
    Object::single("prog", &insns, maps)
}

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
