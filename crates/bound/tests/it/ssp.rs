//! The SSP search with a stand-in checker that declares impossible every path taking one of a
//! chosen set of branch outcomes: the search must find exactly the slowest path of the
//! brute-force list that avoids them, in any thread count, prune through cores without losing
//! it, and report a bound that only rises.

use crate::support;

use std::collections::HashSet;
use std::sync::Arc;

use linerate_bound::enumerate::Exhaustive;
use linerate_bound::prepare::{prepare, Options as PrepareOptions};
use linerate_bound::ssp::{exhaustive, search, MakeChecker, Options, PathChecker, Stop, Verdict};
use linerate_cfg::Decision;
use linerate_conformance::examples::load_all;
use linerate_cost::Model;
use support::rate_of;

/// Refutes paths holding a decision of `impossible`, with that decision alone as the core.
struct Refuter {
    impossible: HashSet<Decision>,
}

impl PathChecker for Refuter {
    type Witness = usize;
    fn check(&mut self, decisions: &[Decision]) -> Verdict<usize> {
        match decisions.iter().position(|d| self.impossible.contains(d)) {
            Some(i) => Verdict::Unsat { core: vec![i] },
            None => Verdict::Sat(decisions.len()),
        }
    }
}

#[test]
fn search_finds_the_slowest_path_that_avoids_refuted_decisions() {
    let model = Model::builtin("x86").expect("model");
    let examples = load_all().expect("examples");
    let mut searched = 0;
    for name in [
        "xdp_firewall",
        "xdp_dns",
        "xdp_router",
        "xdp_cms_d5",
        "xdp_quic_lb_v4",
    ] {
        let example = examples
            .iter()
            .find(|e| e.name() == format!("{name}.o"))
            .expect(name);
        let prepared = prepare(&example.object, 0, &model, &PrepareOptions::default()).expect(name);
        let paths: Vec<Vec<usize>> = Exhaustive::new(&prepared.dag).expect(name).collect();
        // Refute the outcomes the slowest paths take, so that the search has to look deeper.
        let mut by_rate: Vec<&Vec<usize>> = paths.iter().collect();
        by_rate.sort_by(|a, b| {
            rate_of(&prepared.dag, &model, a).total_cmp(&rate_of(&prepared.dag, &model, b))
        });
        let impossible: HashSet<Decision> = by_rate
            .iter()
            .take(3)
            .filter_map(|p| prepared.decisions(p).last().copied())
            .collect();
        let expected = paths
            .iter()
            .filter(|p| !prepared.decisions(p).iter().any(|d| impossible.contains(d)))
            .map(|p| rate_of(&prepared.dag, &model, p))
            .min_by(f64::total_cmp);
        for threads in [1, 3] {
            let options = Options {
                threads,
                ..Options::default()
            };
            let refuted = impossible.clone();
            let make: MakeChecker<Refuter> = Arc::new(move || Refuter {
                impossible: refuted.clone(),
            });
            let outcome = search(&prepared, &model, &options, &make, |_| {}).expect(name);
            match expected {
                Some(rate) => {
                    assert_eq!(outcome.stop, Stop::Found, "{name}");
                    let found = &outcome.found[0];
                    assert!(
                        (found.path.rate - rate).abs() <= rate * 1e-12,
                        "{name}: {} vs {rate}",
                        found.path.rate
                    );
                    assert!(found.witness.is_ok());
                    assert!(
                        !found.decisions.iter().any(|d| impossible.contains(d)),
                        "{name}"
                    );
                }
                None => assert_eq!(outcome.stop, Stop::Exhausted, "{name}"),
            }
            let naive = outcome.naive.as_ref().expect("naive").rate;
            let mut last = naive;
            for step in &outcome.improvements {
                assert!(step.rate >= last, "{name}: the bound fell");
                last = step.rate;
            }
            assert!(outcome.complete);
            let baseline = exhaustive(&prepared, &model, &options, &make).expect(name);
            assert_eq!(baseline.paths_checked as usize, paths.len(), "{name}");
            assert_eq!(
                baseline.found.first().map(|f| f.path.rate),
                expected,
                "{name}: exhaustive"
            );
            assert!(outcome.paths_checked <= baseline.paths_checked);
            searched += 1;
        }
    }
    assert_eq!(searched, 10);
}
