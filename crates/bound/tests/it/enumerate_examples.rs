//! Enumeration on the prepared graphs of every example, both models and both metrics: paths come
//! out in non-decreasing order of rate, and where a graph has few enough paths to list them all,
//! the first ones are exactly the slowest of the brute-force sorted list.

use linerate_bound::enumerate::{Enumerator, Exhaustive, Metric, ModelRates, Rates};
use linerate_bound::prepare::{prepare, Options};
use linerate_conformance::examples::load_all;
use linerate_cost::Model;

/// Paths compared with the brute-force order per graph and metric.
const FIRST: usize = 1000;
/// Graphs with more paths than this are only checked for order.
const BRUTE_FORCE_LIMIT: usize = 50_000;

#[test]
fn enumeration_matches_brute_force_on_every_example() {
    let examples = load_all().expect("examples load");
    let mut compared = 0;
    for target in ["x86", "nfp"] {
        let model = Model::builtin(target).expect("builtin model");
        for example in &examples {
            for program in example.runnable_programs() {
                let options = Options {
                    max_unroll: Some(64),
                    ..Options::default()
                };
                // The nfp model refuses some examples by name; prepare's own tests cover that.
                let Ok(prepared) = prepare(&example.object, program, &model, &options) else {
                    continue;
                };
                let dag = &prepared.dag;
                for metric in [Metric::PacketRate, Metric::BitRate] {
                    let name = format!("{} program {program} {target} {metric:?}", example.name());
                    let rates = ModelRates::new(&model, metric);
                    let mut enumerator = Enumerator::with_model(dag, &model, metric).expect(&name);
                    let first: Vec<_> = (&mut enumerator).take(FIRST).collect();
                    assert!(!first.is_empty(), "{name}: no path");
                    for w in first.windows(2) {
                        assert!(
                            w[0].rate <= w[1].rate * (1.0 + 1e-12),
                            "{name}: out of order"
                        );
                    }
                    let mut all: Vec<f64> = Exhaustive::new(dag)
                        .expect(&name)
                        .take(BRUTE_FORCE_LIMIT + 1)
                        .map(|path| {
                            let cost = dag.path_cost(&path);
                            let size = dag.path_min_packet(&path);
                            (0..cost.0.len())
                                .map(|c| rates.component_rate(c, cost.0[c], size))
                                .fold(rates.limit(size), f64::min)
                        })
                        .collect();
                    if all.len() > BRUTE_FORCE_LIMIT {
                        continue;
                    }
                    all.sort_by(f64::total_cmp);
                    assert_eq!(first.len(), all.len().min(FIRST), "{name}: path count");
                    for (i, (path, expected)) in first.iter().zip(&all).enumerate() {
                        let relative = (path.rate - expected).abs() / expected.max(1e-300);
                        assert!(
                            relative < 1e-9,
                            "{name}: path {i}: {} vs {expected}",
                            path.rate
                        );
                    }
                    compared += 1;
                }
            }
        }
    }
    assert!(compared > 50, "only {compared} graphs compared");
}
