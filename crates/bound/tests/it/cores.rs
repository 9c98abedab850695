//! What an unsatisfiable core claims, checked directly: the search prunes every path that shares
//! the decisions up to a core's last one, so those decisions alone — checked as a prefix in a
//! fresh session, which has seen no other path — must be impossible. Paths are checked in the
//! search's order by one session each program (reusing prefixes, trying helper outcomes both
//! ways, shrinking cores), as `linerate bound` checks them, on every example and on generated
//! programs. A fresh session's prefix check also catches a reused session refuting a possible
//! path (an unsatisfiable answer that a fresh session does not repeat).

use linerate_bound::enumerate::{Enumerator, Metric};
use linerate_bound::prepare::{prepare, Options, Prepared};
use linerate_bpf::Object;
use linerate_cfg::Decision;
use linerate_conformance::examples::{load_all, runnable_programs};
use linerate_conformance::random_program::paths::{generate, GenOptions};
use linerate_cost::Model;
use linerate_smt::{PathChecker, PrefixVerdict, Verdict};
use linerate_testkit::map_in_parallel;

/// Paths checked per program, slowest first.
const PATHS: usize = 48;
/// Time after which no further path of a program is checked (satisfiable paths of the larger
/// examples take a second each to find a witness for).
const BUDGET: std::time::Duration = std::time::Duration::from_secs(2);

/// Checks the first [`PATHS`] paths of `prepared` in order in one session; for every refuted
/// one, its core's prefix in a fresh session (until [`BUDGET`] runs out). Returns the cores
/// checked.
fn check_cores(name: &str, object: &Object, program: usize, prepared: &Prepared) -> usize {
    let model = Model::builtin("x86").expect("shipped model");
    let mut enumerator =
        Enumerator::with_model(&prepared.dag, &model, Metric::PacketRate).expect(name);
    // A check that needs longer (the DNS example's first paths) gives no verdict and is skipped.
    let options = linerate_smt::Options {
        timeout: Some(std::time::Duration::from_secs(1)),
        ..linerate_smt::Options::default()
    };
    let mut session = PathChecker::new(object, program, options.clone()).expect(name);
    let started = std::time::Instant::now();
    let mut cores = 0;
    for _ in 0..PATHS {
        if started.elapsed() > BUDGET {
            break;
        }
        let Some(path) = enumerator.next_path() else {
            break;
        };
        let decisions: Vec<Decision> = prepared
            .decision_edges(&path.edges)
            .into_iter()
            .map(|(d, _)| d)
            .collect();
        let Ok(Verdict::Unsat { core }) = session.check(&decisions) else {
            continue;
        };
        let Some(&last) = core.iter().max() else {
            continue;
        };
        assert!(
            last < decisions.len(),
            "{name}: core {core:?} past the path"
        );
        let prefix = &decisions[..=last];
        let mut fresh = PathChecker::new(object, program, options.clone()).expect(name);
        let verdict = fresh.check_prefix(prefix).expect(name);
        assert!(
            !matches!(verdict, PrefixVerdict::Holds { .. }),
            "{name}: core {core:?} of path {decisions:?}: its prefix of {} decisions is possible",
            prefix.len()
        );
        cores += 1;
    }
    eprintln!(
        "{name}: {cores} cores in {:.2} s",
        started.elapsed().as_secs_f64()
    );
    cores
}

#[test]
fn every_core_prefix_is_impossible_on_its_own_in_the_examples() {
    let model = Model::builtin("x86").expect("shipped model");
    let examples = load_all().expect("examples load");
    let programs = runnable_programs(&examples);
    // Each program's checks take up to BUDGET on one session: two threads halve the wait.
    let cores: usize = map_in_parallel(&programs, 2, |&(example, program)| {
        let Ok(prepared) = prepare(&example.object, program, &model, &Options::default()) else {
            return 0;
        };
        let name = format!("{} program {program}", example.name());
        check_cores(&name, &example.object, program, &prepared)
    })
    .into_iter()
    .sum();
    assert!(cores > 100, "only {cores} cores checked");
}

#[test]
fn every_core_prefix_is_impossible_on_its_own_in_generated_programs() {
    let model = Model::builtin("x86").expect("shipped model");
    let options = GenOptions {
        branches: 8,
        max_paths: 256,
        ..GenOptions::default()
    };
    let mut cores = 0;
    for seed in 0..40u64 {
        let generated = generate(seed, &options);
        let object = &generated.object;
        let Ok(prepared) = prepare(object, 0, &model, &Options::default()) else {
            continue;
        };
        let name = format!("seed {seed}: {}", generated.description);
        cores += check_cores(&name, object, 0, &prepared);
    }
    assert!(cores > 100, "only {cores} cores checked");
}
