//! The check-at-every-branch baseline: with a stand-in checker that refutes every prefix taking
//! one of a chosen set of branch outcomes, it visits exactly the brute-force list's paths that
//! avoid them and keeps the slowest; with Z3, it visits as many paths as the exhaustive search
//! finds satisfiable, and its slowest is the slowest satisfiable path the ordered search reports.

use crate::support;

use std::collections::HashSet;
use std::time::Duration;

use linerate_bound::dfs::{check_every_branch, PrefixChecker};
use linerate_bound::enumerate::{Exhaustive, Metric};
use linerate_bound::prepare::{prepare, Options as PrepareOptions};
use linerate_bound::solve::{self, guarantee, GuaranteeOptions};
use linerate_bound::ssp::{self, Verdict};
use linerate_cfg::Decision;
use linerate_conformance::examples::{load_all, Example};
use linerate_cost::Model;
use support::rate_of;

/// Refutes prefixes holding a decision of `impossible`; counts its checks.
struct Refuter {
    impossible: HashSet<Decision>,
    checks: u64,
}

impl PrefixChecker for Refuter {
    fn check_prefix(&mut self, decisions: &[Decision]) -> Verdict<()> {
        self.checks += 1;
        match decisions.iter().position(|d| self.impossible.contains(d)) {
            Some(i) => Verdict::Unsat { core: vec![i] },
            None => Verdict::Sat(()),
        }
    }
}

fn example<'a>(examples: &'a [Example], name: &str) -> &'a Example {
    examples
        .iter()
        .find(|e| e.name() == format!("{name}.o"))
        .expect(name)
}

#[test]
fn visits_every_path_the_checker_does_not_refute() {
    let model = Model::builtin("x86").expect("model");
    let examples = load_all().expect("examples");
    for name in ["xdp_firewall", "xdp_dns", "xdp_router", "xdp_quic_lb_v4"] {
        let example = example(&examples, name);
        let prepared = prepare(&example.object, 0, &model, &PrepareOptions::default()).expect(name);
        let paths: Vec<Vec<usize>> = Exhaustive::new(&prepared.dag).expect(name).collect();
        let mut by_rate: Vec<&Vec<usize>> = paths.iter().collect();
        by_rate.sort_by(|a, b| {
            rate_of(&prepared.dag, &model, a).total_cmp(&rate_of(&prepared.dag, &model, b))
        });
        let impossible: HashSet<Decision> = by_rate
            .iter()
            .take(3)
            .filter_map(|p| prepared.decisions(p).first().copied())
            .collect();
        let avoiding: Vec<&Vec<usize>> = paths
            .iter()
            .filter(|p| !prepared.decisions(p).iter().any(|d| impossible.contains(d)))
            .collect();
        let expected = avoiding
            .iter()
            .map(|p| rate_of(&prepared.dag, &model, p))
            .min_by(f64::total_cmp);
        let mut refuter = Refuter {
            impossible,
            checks: 0,
        };
        let outcome = check_every_branch(&prepared, &model, Metric::PacketRate, None, &mut refuter)
            .expect(name);
        assert!(outcome.complete, "{name}");
        assert_eq!(outcome.paths as usize, avoiding.len(), "{name}");
        assert_eq!(outcome.unconfirmed, 0, "{name}");
        assert_eq!(outcome.checks, refuter.checks, "{name}");
        assert_eq!(outcome.slowest.map(|p| p.rate), expected, "{name}");
        // Refuting the first decision of the slowest paths prunes whole subtrees: fewer checks
        // than one per decision of every path.
        let every: usize = paths.iter().map(|p| prepared.decisions(p).len()).sum();
        assert!((outcome.checks as usize) < every, "{name}");
    }
}

#[test]
fn a_time_cap_stops_it_incomplete() {
    let model = Model::builtin("x86").expect("model");
    let examples = load_all().expect("examples");
    let example = example(&examples, "xdp_firewall");
    let prepared =
        prepare(&example.object, 0, &model, &PrepareOptions::default()).expect("prepare");
    let mut refuter = Refuter {
        impossible: HashSet::new(),
        checks: 0,
    };
    let outcome = check_every_branch(
        &prepared,
        &model,
        Metric::PacketRate,
        Some(Duration::ZERO),
        &mut refuter,
    )
    .expect("runs");
    assert!(!outcome.complete);
    assert_eq!(outcome.paths, 0);
}

#[test]
fn with_z3_its_slowest_path_is_the_ssp() {
    let model = Model::builtin("x86").expect("model");
    let examples = load_all().expect("examples");
    for name in [
        "xdp_jumbo",
        "xdp_tailcall",
        "xdp_ipip",
        "xdp_legacy_maps",
        "xdp_reflector",
    ] {
        let example = example(&examples, name);
        let (object, program) = (&example.object, example.entry);
        let prepared = prepare(object, program, &model, &PrepareOptions::default()).expect(name);
        let metric = Metric::PacketRate;
        let (dfs, solver_checks) =
            solve::check_every_branch(object, program, &prepared, &model, metric, None, None)
                .expect(name);
        assert!(dfs.complete && dfs.unconfirmed == 0, "{name}: {dfs:?}");
        assert!(solver_checks >= dfs.checks, "{name}");
        let options = |exhaustive| GuaranteeOptions {
            search: ssp::Options {
                paths: usize::MAX,
                ..ssp::Options::default()
            },
            exhaustive,
            check_timeout: None,
            learn: true,
        };
        let all = guarantee(object, program, &prepared, &model, &options(true), |_| {})
            .expect(name)
            .outcome;
        assert!(all.found.iter().all(|f| f.witness.is_ok()), "{name}");
        assert_eq!(dfs.paths as usize, all.found.len(), "{name}");
        let ssp = GuaranteeOptions {
            search: ssp::Options::default(),
            ..options(false)
        };
        let ssp = guarantee(object, program, &prepared, &model, &ssp, |_| {})
            .expect(name)
            .outcome;
        assert_eq!(
            dfs.slowest.map(|p| p.rate),
            ssp.found.first().map(|f| f.path.rate),
            "{name}"
        );
    }
}
