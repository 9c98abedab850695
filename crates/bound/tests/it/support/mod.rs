//! Hand-built and random path graphs for the enumeration's tests and benchmark, and the
//! brute-force rate of a path that the search tests compare with.

#![allow(dead_code)]

use linerate_bound::dag::{Edge, Node, PathDag, Step};
use linerate_bound::enumerate::{Metric, ModelRates, Rates};
use linerate_cost::{Cost, Model};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// A graph of `nodes` nodes (the last is the sink) and `edges` as (from, to, cost per
/// component, min_packet).
pub fn graph(components: usize, nodes: usize, edges: &[(usize, usize, Vec<f64>, u32)]) -> PathDag {
    let mut dag = PathDag {
        components: (0..components).map(|c| format!("c{c}")).collect(),
        nodes: (0..nodes)
            .map(|slot| Node {
                program: (slot + 1 < nodes).then_some(0),
                slot,
                calls: Vec::new(),
                iterations: Vec::new(),
                out: Vec::new(),
            })
            .collect(),
        edges: Vec::new(),
    };
    for (from, to, cost, min_packet) in edges {
        dag.nodes[*from].out.push(dag.edges.len());
        dag.edges.push(Edge {
            from: *from,
            to: *to,
            step: if *to + 1 == nodes {
                Step::Exit
            } else {
                Step::Flow(linerate_cfg::EdgeKind::Fallthrough)
            },
            cost: Cost(cost.clone()),
            min_packet: *min_packet,
        });
    }
    dag
}

/// A chain of `stages` diamonds of `ways` parallel edges each, one component, the cost of each
/// edge drawn from `rng` (integers, so that sums are exact): `ways^stages` paths.
pub fn diamonds(stages: usize, ways: usize, seed: u64) -> PathDag {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut edges = Vec::new();
    for s in 0..stages {
        for _ in 0..ways {
            edges.push((s, s + 1, vec![f64::from(rng.gen_range(0..1000u32))], 60));
        }
    }
    graph(1, stages + 1, &edges)
}

/// A random graph: 2 to 9 nodes with a chain through all of them (so every node is on a path),
/// extra forward edges (parallel ones too), integer costs over `components` components and
/// minimum packet sizes from a few distinct values.
pub fn random(seed: u64, components: usize) -> PathDag {
    let mut rng = StdRng::seed_from_u64(seed);
    let nodes = rng.gen_range(2..10usize);
    let sizes = [14u32, 60, 100, 200];
    let cost = |rng: &mut StdRng| -> Vec<f64> {
        (0..components)
            .map(|_| f64::from(rng.gen_range(0..12u32)))
            .collect()
    };
    let mut edges = Vec::new();
    for v in 0..nodes - 1 {
        let c = cost(&mut rng);
        edges.push((v, v + 1, c, sizes[rng.gen_range(0..sizes.len())]));
    }
    let extra = rng.gen_range(0..2 * nodes);
    for _ in 0..extra {
        let from = rng.gen_range(0..nodes - 1);
        let to = rng.gen_range(from + 1..nodes);
        let c = cost(&mut rng);
        edges.push((from, to, c, sizes[rng.gen_range(0..sizes.len())]));
    }
    // Some graphs with a single packet size, so that one instance per component is covered.
    if rng.gen_bool(0.2) {
        for e in &mut edges {
            e.3 = 60;
        }
    }
    graph(components, nodes, &edges)
}

/// Every path of `dag`, by plain recursion (independent of the library's iteration).
pub fn all_paths(dag: &PathDag) -> Vec<Vec<usize>> {
    fn walk(dag: &PathDag, node: usize, path: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
        if node == dag.sink() {
            out.push(path.clone());
            return;
        }
        for (id, e) in dag.edges.iter().enumerate() {
            if e.from == node {
                path.push(id);
                walk(dag, e.to, path, out);
                path.pop();
            }
        }
    }
    let mut out = Vec::new();
    walk(dag, PathDag::SOURCE, &mut Vec::new(), &mut out);
    out
}

/// The packet rate of `path` under `model`, worked out from its definition: the lowest of each
/// component's rate and the model's limits at the path's minimum packet size.
pub fn rate_of(dag: &PathDag, model: &Model, path: &[usize]) -> f64 {
    let rates = ModelRates::new(model, Metric::PacketRate);
    let cost = dag.path_cost(path);
    let size = dag.path_min_packet(path);
    (0..cost.0.len())
        .map(|c| rates.component_rate(c, cost.0[c], size))
        .fold(rates.limit(size), f64::min)
}
