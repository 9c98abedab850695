//! Paper 001's experiment grid (examples/p4/grid, written by examples/p4/gen_grid.py): every
//! program checks, and linerate's analysis finds the parameters its case has.

use std::path::Path;

use linerate_p4::latency::{Actions, LatencyModel};
use linerate_p4::params::analyze;

/// Table I: parsed headers and modified headers by case.
const CASES: [(&str, u32, u32); 14] = [
    ("A0", 1, 0),
    ("A1", 1, 1),
    ("B0", 2, 0),
    ("B1", 2, 1),
    ("B2", 2, 1),
    ("B3", 2, 2),
    ("C0", 3, 0),
    ("C1", 3, 1),
    ("C2", 3, 1),
    ("C3", 3, 1),
    ("C4", 3, 2),
    ("C5", 3, 2),
    ("C6", 3, 2),
    ("C7", 3, 3),
];

fn grid(name: &str) -> linerate_p4::Checked {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/p4/grid")
        .join(name);
    linerate_p4::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn table_i_cases_have_their_parameters() {
    let model = LatencyModel::agilio_cx();
    for (case, alpha, beta) in CASES {
        for actions in [Actions::Explicit, Actions::Implicit] {
            let a = analyze(&grid(&format!("case_{case}_{actions}.p4")));
            assert_eq!(
                (a.alpha, a.beta, a.gamma),
                (alpha, beta, 0),
                "{case} {actions}"
            );
            if beta > 0 {
                assert_eq!(a.actions, actions, "{case}");
                // Every modified case has its cell in Table II.
                model
                    .estimate(a.params())
                    .unwrap_or_else(|e| panic!("{case} {actions}: {e}"));
            } else {
                // Nothing modified: no cell (Table II starts at one modified header).
                assert!(model.estimate(a.params()).is_err(), "{case}");
            }
        }
    }
}

#[test]
fn added_tables_count_as_gamma() {
    let model = LatencyModel::agilio_cx();
    for gamma in 0..=10u32 {
        let a = analyze(&grid(&format!("tables_{gamma}.p4")));
        assert_eq!((a.alpha, a.beta, a.gamma), (2, 2, gamma));
        assert_eq!(a.actions, Actions::Implicit);
        let e = model.estimate(a.params()).unwrap();
        let g = f64::from(gamma);
        assert!((e.latency_ns - (8200.0 + 22.44 * g * g + 311.6 * g)).abs() < 1e-6);
    }
}

#[test]
fn operations_are_counted_and_do_not_change_the_parameters() {
    for n in (0..=25u32).step_by(5) {
        let binary = analyze(&grid(&format!("ops_binary_{n}.p4")));
        assert_eq!(
            (binary.operations.binary, binary.operations.arithmetic),
            (n, 0)
        );
        let arithmetic = analyze(&grid(&format!("ops_arithmetic_{n}.p4")));
        assert_eq!(
            (
                arithmetic.operations.binary,
                arithmetic.operations.arithmetic
            ),
            (0, n)
        );
        for a in [binary, arithmetic] {
            assert_eq!((a.alpha, a.beta, a.gamma), (2, 2, 0));
            assert_eq!(a.actions, Actions::Explicit);
        }
    }
}
