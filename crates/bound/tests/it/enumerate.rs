//! Ordered path enumeration against brute force: every path of small random graphs, sorted by
//! hand, with 1–3 cost components, several minimum packet sizes and forbidden edge sets learned
//! along the way; the work per path on a large graph; pruning by forbids; the model's rates.

use crate::support;

use std::collections::BTreeSet;

use linerate_bound::dag::PathDag;
use linerate_bound::enumerate::{
    naive, EnumerateError, Enumerator, Exhaustive, Forbidden, Metric, ModelRates, Next, RankedPath,
    Rates, Search,
};
use linerate_cost::{Cost, Model};
use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use support::{all_paths, diamonds, graph, random};

/// Rates for tests: capacity / (cost + per-packet work) per component, times the packet size in
/// "bit rate" mode; a limit that depends on the size.
#[derive(Clone, Debug)]
struct Simple {
    capacity: Vec<f64>,
    per_packet: Vec<f64>,
    per_byte: bool,
    limit: Option<f64>,
}

impl Simple {
    fn random(rng: &mut StdRng, components: usize) -> Simple {
        Simple {
            capacity: (0..components)
                .map(|_| f64::from(rng.gen_range(1..4u32) * 60))
                .collect(),
            per_packet: (0..components)
                .map(|_| f64::from(rng.gen_range(0..3u32)))
                .collect(),
            per_byte: rng.gen_bool(0.5),
            limit: rng
                .gen_bool(0.4)
                .then(|| f64::from(rng.gen_range(1..30u32))),
        }
    }

    fn size_factor(&self, size: u32) -> f64 {
        if self.per_byte {
            f64::from(size.max(1))
        } else {
            1.0
        }
    }

    /// A path's rate, computed directly from its definition.
    fn of(&self, dag: &PathDag, path: &[usize]) -> f64 {
        let cost = dag.path_cost(path);
        let size = dag.path_min_packet(path);
        let mut rate = self.limit(size);
        for (c, &amount) in cost.0.iter().enumerate() {
            rate = rate.min(self.component_rate(c, amount, size));
        }
        rate
    }
}

impl Rates for Simple {
    fn component_rate(&self, component: usize, cost: f64, size: u32) -> f64 {
        let total = cost + self.per_packet[component];
        let pps = if total > 0.0 {
            self.capacity[component] / total
        } else {
            f64::INFINITY
        };
        pps * self.size_factor(size)
    }

    fn limit(&self, size: u32) -> f64 {
        match self.limit {
            // Like a line rate: fewer packets per second as they grow, bit rate constant.
            Some(l) if self.per_byte => l * 100.0,
            Some(l) => l * 100.0 / f64::from(size.max(1)),
            None => f64::INFINITY,
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// One instance yields exactly the paths of its sub-graph, each once, costliest first, with
    /// their costs.
    #[test]
    fn search_is_sorted_and_complete(seed in any::<u64>(), components in 1usize..4) {
        let dag = random(seed, components);
        let paths = all_paths(&dag);
        let mut sizes: Vec<u32> = dag.edges.iter().map(|e| e.min_packet).collect();
        sizes.sort_unstable();
        sizes.dedup();
        for component in 0..components {
            for &size in &sizes {
                let mut search = Search::new(&dag, component, size).unwrap();
                let mut forbidden = Forbidden::new(dag.edges.len());
                let mut got = Vec::new();
                while let Next::Path(path, cost) = search.next_path(&mut forbidden, u64::MAX) {
                    prop_assert_eq!(cost, dag.path_cost(&path).0[component]);
                    got.push((path, cost));
                }
                for pair in got.windows(2) {
                    prop_assert!(pair[0].1 >= pair[1].1, "not costliest first: {:?}", got);
                }
                let got: Vec<Vec<usize>> = got.into_iter().map(|(p, _)| p).collect();
                let set: BTreeSet<Vec<usize>> = got.iter().cloned().collect();
                prop_assert_eq!(set.len(), got.len(), "a path came twice");
                let want: BTreeSet<Vec<usize>> = paths
                    .iter()
                    .filter(|p| p.iter().all(|&e| dag.edges[e].min_packet <= size))
                    .cloned()
                    .collect();
                prop_assert_eq!(set, want);
            }
        }
    }

    /// The interleaved enumeration yields every path once, slowest first, with its rate.
    #[test]
    fn enumeration_is_sorted_and_complete(seed in any::<u64>(), components in 1usize..4) {
        let dag = random(seed, components);
        let rates = Simple::random(&mut StdRng::seed_from_u64(seed ^ 0x5eed), components);
        let got: Vec<RankedPath> = Enumerator::new(&dag, rates.clone()).unwrap().collect();
        check_ranked(&dag, &rates, &got)?;
        let set: BTreeSet<Vec<usize>> = got.iter().map(|p| p.edges.clone()).collect();
        prop_assert_eq!(set.len(), got.len(), "a path came twice");
        let want: BTreeSet<Vec<usize>> = all_paths(&dag).into_iter().collect();
        prop_assert_eq!(set, want);
        let first = naive(&dag, rates.clone()).unwrap();
        prop_assert_eq!(first.as_ref(), got.first());
        let slowest = all_paths(&dag)
            .iter()
            .map(|p| rates.of(&dag, p))
            .min_by(f64::total_cmp);
        prop_assert_eq!(first.map(|p| p.rate), slowest);
    }

    /// With edge sets forbidden while enumerating: no path produced after a forbid contains a
    /// forbidden set, every path not produced contains one, and none was skipped that should
    /// have come before the forbid that removed it.
    #[test]
    fn forbids_prune_exactly(seed in any::<u64>(), components in 1usize..4) {
        let dag = random(seed, components);
        let mut rng = StdRng::seed_from_u64(seed ^ 0xf0b1d);
        let rates = Simple::random(&mut rng, components);
        let paths = all_paths(&dag);
        let mut enumerator = Enumerator::new(&dag, rates.clone()).unwrap();
        let mut forbids: Vec<(usize, Vec<usize>)> = Vec::new();
        let mut got: Vec<RankedPath> = Vec::new();
        loop {
            if rng.gen_bool(0.3) {
                let path = &paths[rng.gen_range(0..paths.len())];
                if !path.is_empty() {
                    let k = rng.gen_range(1..=path.len().min(3));
                    let mut set: Vec<usize> = (0..k).map(|_| path[rng.gen_range(0..path.len())]).collect();
                    set.sort_unstable();
                    set.dedup();
                    enumerator.forbid(set.clone()).unwrap();
                    forbids.push((got.len(), set));
                }
            }
            match enumerator.next() {
                Some(p) => got.push(p),
                None => break,
            }
        }
        check_ranked(&dag, &rates, &got)?;
        let contains = |path: &[usize], set: &[usize]| set.iter().all(|e| path.contains(e));
        for (i, p) in got.iter().enumerate() {
            for (t, set) in &forbids {
                prop_assert!(!(*t <= i && contains(&p.edges, set)),
                    "path {:?} produced after {:?} was forbidden", p.edges, set);
            }
        }
        let produced: BTreeSet<&Vec<usize>> = got.iter().map(|p| &p.edges).collect();
        prop_assert_eq!(produced.len(), got.len(), "a path came twice");
        for path in paths.iter().filter(|p| !produced.contains(p)) {
            let removed_at = forbids
                .iter()
                .filter(|(_, set)| contains(path, set))
                .map(|(t, _)| *t)
                .min();
            prop_assert!(removed_at.is_some(), "path {:?} never produced", path);
            if let Some(t) = removed_at.filter(|&t| t > 0) {
                prop_assert!(rates.of(&dag, path) >= got[t - 1].rate,
                    "path {:?} should have come before the forbid at {}", path, t);
            }
        }
    }

    /// The exhaustive iteration yields every path exactly once.
    #[test]
    fn exhaustive_is_complete(seed in any::<u64>()) {
        let dag = random(seed, 1);
        let got: Vec<Vec<usize>> = Exhaustive::new(&dag).unwrap().collect();
        let set: BTreeSet<Vec<usize>> = got.iter().cloned().collect();
        prop_assert_eq!(set.len(), got.len());
        prop_assert_eq!(set, all_paths(&dag).into_iter().collect::<BTreeSet<_>>());
    }
}

/// Rates non-decreasing, each the path's own, each path's figures its own.
fn check_ranked(dag: &PathDag, rates: &Simple, got: &[RankedPath]) -> Result<(), TestCaseError> {
    for pair in got.windows(2) {
        prop_assert!(
            pair[0].rate <= pair[1].rate,
            "not slowest first: {} then {}",
            pair[0].rate,
            pair[1].rate
        );
    }
    for p in got {
        prop_assert_eq!(p.rate, rates.of(dag, &p.edges));
        prop_assert_eq!(&p.cost, &dag.path_cost(&p.edges));
        prop_assert_eq!(p.min_packet, dag.path_min_packet(&p.edges));
    }
    Ok(())
}

/// Rates of one component: a million units a second, a unit per packet.
fn one_component() -> Simple {
    Simple {
        capacity: vec![1e6],
        per_packet: vec![1.0],
        per_byte: false,
        limit: None,
    }
}

/// Path n+1 costs one queue pop and one walk along it, whatever n is: the incremental property.
#[test]
fn next_path_work_is_independent_of_n() {
    let stages = 40;
    let dag = diamonds(stages, 3, 7);
    let mut search = Search::new(&dag, 0, 60).unwrap();
    let mut forbidden = Forbidden::new(dag.edges.len());
    let mut previous = f64::INFINITY;
    for n in 0..20_000 {
        let before = search.work();
        let Next::Path(path, cost) = search.next_path(&mut forbidden, u64::MAX) else {
            panic!("3^40 paths, and the search stopped at {n}");
        };
        assert_eq!(path.len(), stages);
        assert!(cost <= previous);
        previous = cost;
        let work = search.work() - before;
        assert!(
            work <= 1 + stages as u64,
            "path {n} took {work} steps, more than one pop and one walk"
        );
    }
}

/// Forbidding the edge every slow path takes prunes them all at once: the next path comes after
/// a bounded amount of work, not after the 2^29 paths through the edge.
#[test]
fn single_edge_forbid_prunes() {
    let stages = 30;
    let mut edges = vec![(0, 1, vec![1000.0], 60), (0, 1, vec![0.0], 60)];
    for s in 1..stages {
        edges.push((s, s + 1, vec![f64::from((s % 7) as u32)], 60));
        edges.push((s, s + 1, vec![f64::from((s % 5) as u32)], 60));
    }
    let dag = graph(1, stages + 1, &edges);
    let rates = one_component();
    let mut enumerator = Enumerator::new(&dag, rates).unwrap();
    let first = enumerator.next().unwrap();
    assert_eq!(first.edges[0], 0);
    enumerator.forbid(vec![0]).unwrap();
    let before = enumerator.stats().work;
    for _ in 0..100 {
        let p = enumerator.next().unwrap();
        assert_eq!(p.edges[0], 1, "a path through the forbidden edge");
    }
    let work = enumerator.stats().work - before;
    assert!(
        work < 100 * 3 * (stages as u64 + 1),
        "{work} steps for 100 paths"
    );
}

/// A forbidden pair cuts every path holding both at the prefix that completes the pair.
#[test]
fn edge_set_forbid_prunes() {
    let stages = 30;
    let mut edges = vec![
        (0, 1, vec![1000.0], 60),
        (0, 1, vec![0.0], 60),
        (1, 2, vec![1000.0], 60),
        (1, 2, vec![0.0], 60),
    ];
    for s in 2..stages {
        edges.push((s, s + 1, vec![f64::from((s % 7) as u32)], 60));
        edges.push((s, s + 1, vec![f64::from((s % 5) as u32)], 60));
    }
    let dag = graph(1, stages + 1, &edges);
    let rates = one_component();
    let mut enumerator = Enumerator::new(&dag, rates).unwrap();
    enumerator.forbid(vec![0, 2]).unwrap();
    let mut cost = 0.0;
    for _ in 0..100 {
        let p = enumerator.next().unwrap();
        assert!(!(p.edges[0] == 0 && p.edges[1] == 2));
        cost = p.cost.0[0];
    }
    assert!(
        cost >= 1000.0,
        "the paths taking one of the pair come first"
    );
    let work = enumerator.stats().work;
    assert!(
        work < 100 * 3 * (stages as u64 + 1),
        "{work} steps for 100 paths"
    );
}

/// Pairs whose edges lie far apart — each stage's costly arm against one costly edge at the end
/// (a test of each bit of a word, then a test that the word is zero: the CoNEXT'21 artifact's
/// path explosion) — prune every path holding a pair without walking them: the next path comes
/// after work linear in the stages, not after the 2^30 combinations of the arms, each walked into
/// the late edge and cut there.
#[test]
fn far_apart_pairs_prune_without_walking_their_combinations() {
    let stages = 30;
    let mut edges = Vec::new();
    for s in 0..stages {
        edges.push((s, s + 1, vec![10.0], 60));
        edges.push((s, s + 1, vec![0.0], 60));
    }
    // The late edge is worth every arm together.
    edges.push((stages, stages + 1, vec![1000.0], 60));
    edges.push((stages, stages + 1, vec![0.0], 60));
    let late = edges.len() - 2;
    let dag = graph(1, stages + 2, &edges);
    let rates = one_component();
    let mut enumerator = Enumerator::new(&dag, rates).unwrap();
    for s in 0..stages {
        enumerator.forbid(vec![2 * s, late]).unwrap();
    }
    let first = enumerator.next_path_within(100_000).unwrap().unwrap();
    assert_eq!(first.cost.0[0], 1000.0, "the late edge with no arm");
    let second = enumerator.next_path_within(100_000).unwrap().unwrap();
    assert_eq!(second.cost.0[0], 300.0, "every arm, without the late edge");
    let work = enumerator.stats().work;
    assert!(work < 100 * (stages as u64 + 2), "{work} steps for 2 paths");
}

/// Forbidding the empty set (every path contains it) ends the enumeration; naming an edge that
/// does not exist is an error.
#[test]
fn forbid_edge_cases() {
    let dag = diamonds(3, 2, 1);
    let rates = Simple {
        capacity: vec![1.0],
        per_packet: vec![0.0],
        per_byte: false,
        limit: None,
    };
    let mut enumerator = Enumerator::new(&dag, rates).unwrap();
    assert_eq!(
        enumerator.forbid(vec![1, 99]),
        Err(EnumerateError::NoSuchEdge { edge: 99, edges: 6 })
    );
    assert!(enumerator.next().is_some());
    enumerator.forbid(Vec::new()).unwrap();
    assert_eq!(enumerator.next(), None);
    assert_eq!(enumerator.next_bound(), None);
}

/// A graph whose source is its sink has one path, with no edges.
#[test]
fn single_node_graph() {
    let dag = graph(1, 1, &[]);
    let rates = Simple {
        capacity: vec![1.0],
        per_packet: vec![1.0],
        per_byte: false,
        limit: None,
    };
    let got: Vec<RankedPath> = Enumerator::new(&dag, rates).unwrap().collect();
    assert_eq!(got.len(), 1);
    assert!(got[0].edges.is_empty());
    assert_eq!(Exhaustive::new(&dag).unwrap().count(), 1);
}

/// Graphs that break the invariants are refused with the reason, not enumerated.
#[test]
fn bad_graphs_are_refused() {
    let backwards = graph(1, 3, &[(1, 0, vec![1.0], 60), (0, 2, vec![1.0], 60)]);
    let nan = graph(1, 2, &[(0, 1, vec![f64::NAN], 60)]);
    let short = graph(2, 2, &[(0, 1, vec![1.0], 60)]);
    let empty = PathDag {
        components: vec!["c".into()],
        nodes: Vec::new(),
        edges: Vec::new(),
    };
    for dag in [&backwards, &nan, &short, &empty] {
        let err = Search::new(dag, 0, 60).unwrap_err();
        assert!(matches!(err, EnumerateError::Graph(_)), "{err}");
        assert!(Exhaustive::new(dag).is_err());
    }
    let ok = diamonds(2, 2, 3);
    assert_eq!(
        Search::new(&ok, 1, 60).unwrap_err(),
        EnumerateError::NoSuchComponent {
            component: 1,
            components: 1
        }
    );
}

/// [`ModelRates`] gives the model's own packet rate (per-packet work added, limits applied),
/// and the bit rate as that × the frame's bits.
#[test]
fn model_rates_are_the_models() {
    let mut rng = StdRng::seed_from_u64(11);
    for target in ["x86", "nfp"] {
        let model = Model::builtin(target).unwrap();
        let k = model.components().len();
        let pps = ModelRates::new(&model, Metric::PacketRate);
        let bps = ModelRates::new(&model, Metric::BitRate);
        for _ in 0..200 {
            let cost = Cost((0..k).map(|_| rng.gen_range(0.0..2000.0)).collect());
            let size = rng.gen_range(14..1600u32);
            let mut with_packet = cost.clone();
            with_packet.add(model.per_packet());
            let want = model.packet_rate(&with_packet, size).pps;
            let of = |r: &ModelRates| {
                (0..k)
                    .map(|c| r.component_rate(c, cost.0[c], size))
                    .fold(r.limit(size), f64::min)
            };
            assert_eq!(of(&pps), want);
            let bits = 8.0 * f64::from(size.max(model.limits().min_frame_bytes));
            assert_eq!(of(&bps), want * bits);
        }
    }
    let model = Model::builtin("nfp").unwrap();
    let dag = diamonds(2, 2, 5);
    assert!(matches!(
        Enumerator::with_model(&dag, &model, Metric::PacketRate),
        Err(EnumerateError::Components { .. })
    ));
}

/// The reported memory grows with the paths produced, by at most what one walk can add per
/// path (two queued deviations and one record per three-way stage, with the vectors' doubling):
/// a caller's cap sees the real growth.
#[test]
fn memory_use_is_reported() {
    let stages = 40;
    let dag = diamonds(stages, 3, 9);
    let rates = one_component();
    let mut enumerator = Enumerator::new(&dag, rates).unwrap();
    let start = enumerator.memory_bytes();
    assert!(start > 0);
    let n = 5_000;
    for _ in 0..n {
        enumerator.next().unwrap();
    }
    let grown = enumerator.memory_bytes() - start;
    let per_walk = stages * (2 * 24 + 8);
    assert!(grown > n, "{grown} bytes for {n} paths");
    assert!(grown <= 2 * n * per_walk, "{grown} bytes for {n} paths");
}
