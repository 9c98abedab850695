//! A session stays right after a path whose check tried helper outcomes both ways: on
//! xdp_jumbo, checking an impossible path that flips a helper's outcome and then a possible path
//! sharing ten decisions with it gave Unsat (a core of one decision the possible path shares),
//! while a fresh session finds the second path satisfiable. The cause: the second check resumed
//! from a snapshot holding the first check's last, forced outcome of `bpf_xdp_load_bytes`
//! (failed, its buffer left as it was), which made a later comparison with the buffer a
//! constant; the core named that comparison alone, so the checker never tried the other outcome.
//! Choices whose other outcome was possible now count for every core after them
//! (`helper_choices.rs` has the smallest program).

use linerate_conformance::examples::load_all;
use linerate_smt::{Options, PathChecker, Verdict};

use crate::common::branches as path;

#[test]
fn a_possible_path_after_a_forced_impossible_one_is_satisfiable() {
    let examples = load_all().expect("examples");
    let jumbo = examples
        .iter()
        .find(|e| e.name() == "xdp_jumbo.o")
        .expect("xdp_jumbo");
    let shared = [
        (6, false),
        (12, false),
        (19, false),
        (27, false),
        (34, false),
        (45, false),
        (48, false),
        (56, false),
        (60, true),
        (74, true),
    ];
    let mut impossible = shared.to_vec();
    impossible.push((103, true));
    let mut possible = shared.to_vec();
    possible.extend([(103, false), (107, true), (134, false), (136, false)]);
    let mut checker = PathChecker::new(&jumbo.object, jumbo.entry, Options::default()).unwrap();
    assert!(matches!(
        checker.check(&path(&impossible)).unwrap(),
        Verdict::Unsat { .. }
    ));
    let verdict = checker.check(&path(&possible)).unwrap();
    assert!(matches!(verdict, Verdict::Sat(_)), "{verdict:?}");
}
