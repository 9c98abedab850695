//! Conflicts that hold on their own: whether an unsatisfiable core's decision conditions
//! contradict each other over the program's inputs alone, whatever else the path did.
//!
//! A core found on one path says only that *this* path is impossible: the solver may have used
//! what the path asserted besides its decisions (memory bounds, map slot choices, helper
//! results). [`crate::PathChecker::input_conflicts`] asks more of a set of decisions, for the
//! search to prune every path holding its edges (not only those sharing the path's prefix):
//!
//! 1. each condition mentions only input symbols (the packet's bytes and length, the ingress
//!    device and receive queue, as [`crate::machine::State::entry`] names them), no map value,
//!    helper result, choice or other variable a path makes up; and
//! 2. the conjunction of the conditions is unsatisfiable in a fresh solver holding only the
//!    axioms every path shares (the inputs' ranges, asserted before the first decision).
//!
//! Then any execution whose decisions at those edges assert the same formulas is impossible; that
//! the formulas are the same on every path through the edges is the caller's part (the static
//! invariance analysis of `linerate_bound::invariant`). Besides the core, the path usually holds
//! more such conflicts (path explosion's slowest path: one per stage); they are found in the
//! same fresh solver, each by dropping one decision of every conflict found so far and asking
//! again, so that one expensive path check teaches the search all of them.

use std::collections::HashSet;

use linerate_cfg::Decision;
use z3::ast::{Ast, Bool, Dynamic};
use z3::{AstKind, Params, SatResult, Solver};

use crate::checker::PathChecker;

/// The uninterpreted constants that stand for the program's inputs (`State::entry` and
/// `Memory::input` name them); every other constant is made up along a path.
const INPUT_SYMBOLS: [&str; 4] = ["packet", "packet_len", "ingress_ifindex", "rx_queue_index"];

/// Time the fresh solver may take per check; an unknown answer ends the search for conflicts.
const CHECK_MS: u32 = 2_000;

/// Solver checks one [`PathChecker::input_conflicts`] call may make.
const MAX_CHECKS: usize = 512;

impl PathChecker {
    /// Sets of decisions of `decisions` — the path the last [`PathChecker::check`] answered
    /// unsatisfiable with `core` — whose conditions mention only the program's inputs and
    /// conflict on their own under the input axioms, each as sorted indices into `decisions`,
    /// drawn from `candidates` (the decisions whose conditions the caller knows to be the same
    /// formula on every path through their edges). `core` comes first where it qualifies; then
    /// further conflicts of the path, found by dropping one decision of each conflict found and
    /// asking again, each shrunk until no decision can go. Empty where the checker no longer
    /// holds that path's conditions (it restarted after an unknown answer). An execution that
    /// failed partway (a fault only the impossible path reaches) holds conditions for the
    /// decisions before the failure only; those after it are no candidates.
    pub fn input_conflicts(
        &mut self,
        decisions: &[Decision],
        candidates: &[usize],
        core: &[usize],
    ) -> Vec<Vec<usize>> {
        let session = &self.session;
        let mut found = Vec::new();
        if self.previous != decisions || session.conds.len() > decisions.len() {
            return found;
        }
        if !session.axioms.iter().all(inputs_only) {
            return found;
        }
        let mut usable: Vec<usize> = candidates
            .iter()
            .copied()
            .filter(|&i| session.conds.get(i).is_some_and(inputs_only))
            .collect();
        usable.sort_unstable();
        usable.dedup();
        let solver = Solver::new_for_logic("QF_ABV").unwrap_or_default();
        let mut params = Params::new();
        params.set_u32("timeout", CHECK_MS);
        solver.set_params(&params);
        for axiom in &session.axioms {
            solver.assert(axiom);
        }
        let lits: Vec<(usize, Bool)> = usable
            .iter()
            .map(|&i| {
                let lit = Bool::new_const(format!("conflict{i}"));
                solver.assert(lit.implies(&session.conds[i]));
                (i, lit)
            })
            .collect();
        let lit = |i: usize| lits.iter().find(|(j, _)| *j == i).map(|(_, l)| l.clone());
        let mut checks = 0usize;
        let unsat_core = |set: &[usize], checks: &mut usize| -> Option<Vec<usize>> {
            *checks += 1;
            let assumptions: Vec<Bool> = set.iter().filter_map(|&i| lit(i)).collect();
            match solver.check_assumptions(&assumptions) {
                SatResult::Unsat => {
                    let core = solver.get_unsat_core();
                    Some(
                        set.iter()
                            .copied()
                            .filter(|&i| lit(i).is_some_and(|l| core.contains(&l)))
                            .collect(),
                    )
                }
                _ => None,
            }
        };
        let mut remaining = usable.clone();
        let mut first: Option<Vec<usize>> = None;
        let mut sorted_core = core.to_vec();
        sorted_core.sort_unstable();
        sorted_core.dedup();
        if !sorted_core.is_empty() && sorted_core.iter().all(|i| usable.contains(i)) {
            first = unsat_core(&sorted_core, &mut checks).map(|_| sorted_core.clone());
        }
        // The decision dropped after the last conflict found, and that conflict's first one:
        // where dropping its latest decision leaves no conflict, the path's conflicts may all
        // share it (a test that the packet's word is zero, against each test of one of its
        // bits: the paper artifact's path explosion); they are found by dropping the first.
        let mut dropped: Option<(usize, usize)> = None;
        loop {
            let conflict = match first.take() {
                Some(c) => c,
                None => {
                    if checks >= MAX_CHECKS {
                        break;
                    }
                    let mut c = match unsat_core(&remaining, &mut checks) {
                        Some(c) => c,
                        None => {
                            let Some((last, earliest)) = dropped.take() else {
                                break;
                            };
                            remaining.push(last);
                            remaining.sort_unstable();
                            remaining.retain(|&i| i != earliest);
                            continue;
                        }
                    };
                    // Shrink: drop each decision the rest still conflicts without.
                    let mut k = 0;
                    while k < c.len() && checks < MAX_CHECKS {
                        let trial: Vec<usize> = c
                            .iter()
                            .enumerate()
                            .filter(|&(j, _)| j != k)
                            .map(|(_, &d)| d)
                            .collect();
                        match unsat_core(&trial, &mut checks) {
                            Some(_) => c = trial,
                            None => k += 1,
                        }
                    }
                    c
                }
            };
            // An empty conflict would mean the axioms alone are unsatisfiable: no path is
            // possible, which the search finds by itself; it is not a set to prune by.
            let (Some(&last), Some(&earliest)) = (conflict.last(), conflict.first()) else {
                break;
            };
            remaining.retain(|&i| i != last);
            dropped = (earliest != last).then_some((last, earliest));
            found.push(conflict);
        }
        self.session.checks += checks as u64;
        found
    }
}

/// Whether every constant of `term` is an input symbol or a truth value (and it binds no
/// variables: no quantifier or lambda).
/// Whether `name` is an input of every path alike: the packet's length, a context field, or the
/// packet byte at a constant offset (`packet@14`: [`crate::memory`] names a byte read at a
/// constant offset after it). A byte read at a symbolic offset (`packet#3`) is numbered by the
/// path's reads, so it names different things on different paths and is no input here.
fn is_input_symbol(name: &str) -> bool {
    INPUT_SYMBOLS.contains(&name)
        || name
            .strip_prefix("packet@")
            .is_some_and(|o| !o.is_empty() && o.bytes().all(|b| b.is_ascii_digit()))
}

fn inputs_only(term: &Bool) -> bool {
    let mut seen: HashSet<Dynamic> = HashSet::new();
    let mut todo = vec![Dynamic::from_ast(term)];
    while let Some(t) = todo.pop() {
        if !seen.insert(t.clone()) {
            continue;
        }
        match t.kind() {
            AstKind::Numeral => {}
            AstKind::App => {
                // A constant (no arguments) is an input, `true` or `false`, or else something a
                // path made up. (`DeclKind` is not asked: Debian's libz3 returns kinds the
                // binding's enum lacks.) The engine declares no functions with arguments, so
                // an application with arguments is an interpreted operation.
                if t.num_children() == 0 {
                    let name = t.decl().name();
                    if !is_input_symbol(&name) && name != "true" && name != "false" {
                        return false;
                    }
                }
                todo.extend(t.children());
            }
            _ => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use z3::ast::BV;

    use super::*;

    #[test]
    fn input_symbols_only() {
        let len = BV::new_const("packet_len", 64);
        let other = BV::new_const("source0", 64);
        let packet =
            z3::ast::Array::new_const("packet", &z3::Sort::bitvector(64), &z3::Sort::bitvector(8));
        let byte = packet.select(&BV::from_u64(300, 64));
        let byte = byte.as_bv().expect("a byte");
        assert!(inputs_only(&len.bvugt(BV::from_u64(14, 64))));
        assert!(inputs_only(&byte.bvult(BV::from_u64(0x40, 8))));
        assert!(!inputs_only(&other.bvugt(&len)));
        let renamed = z3::ast::Array::new_const(
            "map0_values",
            &z3::Sort::bitvector(64),
            &z3::Sort::bitvector(8),
        );
        let b = renamed
            .select(&BV::from_u64(0, 64))
            .as_bv()
            .expect("a byte");
        assert!(!inputs_only(&b.eq(BV::from_u64(1, 8))));
        let at_14 = BV::new_const("packet@14", 8);
        let read_3 = BV::new_const("packet#3", 8);
        assert!(inputs_only(&at_14.bvult(BV::from_u64(0x40, 8))));
        assert!(!inputs_only(&read_3.bvult(BV::from_u64(0x40, 8))));
        assert!(!inputs_only(&BV::new_const("packet@", 8).eq(&at_14)));
    }
}
