//! Time per path of the ordered enumeration on a chain of 48 three-way diamonds (3^48 paths),
//! against a naive baseline that finds the k-th path by running the search again from scratch
//! (what a non-incremental k-longest-path search costs: k paths of work for the k-th).
//!
//! Rows: one search instance alone for the first 10^5 paths (time per path over windows, the
//! queue's memory at the end); the same through the interleaving enumerator with the x86 model
//! (one component, one packet size); with the NFP model's three components and two packet sizes
//! (six instances, paths found by other instances discarded); and the baseline for k up to 300.
//! Run with `cargo bench -p linerate-bound --bench enumerate`.

#[path = "../tests/it/support/mod.rs"]
mod support;

use std::time::Instant;

use linerate_bound::dag::PathDag;
use linerate_bound::enumerate::{Enumerator, Forbidden, Metric, Next, Search};
use linerate_cost::Model;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const STAGES: usize = 48;
const PATHS: usize = 100_000;
const BASELINE_K: usize = 300;

/// Microseconds per path over `windows` of paths taken one after another from `next`.
fn per_path(windows: &[(usize, usize)], mut next: impl FnMut()) -> Vec<f64> {
    let mut taken = 0;
    windows
        .iter()
        .map(|&(from, to)| {
            while taken < from {
                next();
                taken += 1;
            }
            let start = Instant::now();
            while taken < to {
                next();
                taken += 1;
            }
            start.elapsed().as_secs_f64() * 1e6 / (to - from) as f64
        })
        .collect()
}

/// The diamond chain with the NFP model's three components (comparable rates) and a larger
/// minimum packet size on a tenth of the edges.
fn nfp_diamonds(seed: u64) -> PathDag {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut edges = Vec::new();
    for s in 0..STAGES {
        for _ in 0..3 {
            // DRAM work correlated with the cycles, so that the same paths are slow in several
            // components and instances find each other's paths.
            let cycles = rng.gen_range(0..1000u32);
            let cost = vec![
                f64::from(cycles),
                f64::from(cycles) * 0.0042 + rng.gen_range(0.0..1.0),
                f64::from(rng.gen_range(0..3u32)),
            ];
            let size = if rng.gen_bool(0.1) { 100 } else { 60 };
            edges.push((s, s + 1, cost, size));
        }
    }
    let mut dag = support::graph(3, STAGES + 1, &edges);
    dag.components = vec!["cycles".into(), "dram_read".into(), "dram_atomic".into()];
    dag
}

fn main() {
    let windows = [(0, 10), (10, 1_000), (1_000, 10_000), (10_000, PATHS)];
    println!(
        "{STAGES}-stage 3-way diamond chain (3^{STAGES} paths): µs per path for paths [from, to)"
    );
    println!(
        "{:<38} {:>9} {:>12} {:>14} {:>15} {:>10}",
        "enumeration", "[0,10)", "[10,1e3)", "[1e3,1e4)", "[1e4,1e5)", "memory"
    );
    let dag = support::diamonds(STAGES, 3, 1);
    let mut search = Search::new(&dag, 0, 60).expect("valid graph");
    let mut forbidden = Forbidden::new(dag.edges.len());
    let times = per_path(&windows, || {
        let next = search.next_path(&mut forbidden, u64::MAX);
        assert!(matches!(next, Next::Path(..)), "paths left");
    });
    row("one search instance", &times, search.memory_bytes());

    let mut x86_dag = dag.clone();
    x86_dag.components = vec!["cycles".into()];
    let x86 = Model::builtin("x86").expect("builtin model");
    let mut enumerator =
        Enumerator::with_model(&x86_dag, &x86, Metric::PacketRate).expect("components match");
    let times = per_path(&windows, || {
        enumerator.next_path().expect("paths left");
    });
    row(
        "enumerator, x86 (1 instance)",
        &times,
        enumerator.memory_bytes(),
    );

    let nfp_dag = nfp_diamonds(2);
    let nfp = Model::builtin("nfp").expect("builtin model");
    for metric in [Metric::PacketRate, Metric::BitRate] {
        let mut enumerator =
            Enumerator::with_model(&nfp_dag, &nfp, metric).expect("components match");
        let times = per_path(&windows, || {
            enumerator.next_path().expect("paths left");
        });
        let stats = enumerator.stats();
        row(
            &format!(
                "enumerator, nfp {:?} ({} inst.)",
                metric,
                enumerator.instances()
            ),
            &times,
            enumerator.memory_bytes(),
        );
        println!(
            "{:<38} {} produced, {} discarded",
            "", stats.produced, stats.discarded
        );
    }

    // The baseline: path k by a fresh search taking k paths.
    let mut total = 0.0;
    let mut at = Vec::new();
    for k in 1..=BASELINE_K {
        let start = Instant::now();
        let mut fresh = Search::new(&dag, 0, 60).expect("valid graph");
        let mut forbidden = Forbidden::new(dag.edges.len());
        for _ in 0..k {
            let next = fresh.next_path(&mut forbidden, u64::MAX);
            assert!(matches!(next, Next::Path(..)), "paths left");
        }
        let us = start.elapsed().as_secs_f64() * 1e6;
        total += us;
        if [1, 10, 100, BASELINE_K].contains(&k) {
            at.push((k, us));
        }
    }
    println!(
        "baseline (path k from scratch): {}; {:.1} µs per path over k = 1..{BASELINE_K}",
        at.iter()
            .map(|(k, us)| format!("k={k} {us:.0} µs"))
            .collect::<Vec<_>>()
            .join(", "),
        total / BASELINE_K as f64
    );
}

fn row(name: &str, times: &[f64], memory: usize) {
    println!(
        "{:<38} {:>9.2} {:>12.2} {:>14.2} {:>15.2} {:>7.1} MB",
        name,
        times[0],
        times[1],
        times[2],
        times[3],
        memory as f64 / 1e6
    );
}
