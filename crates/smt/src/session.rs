//! The solver session of one [`crate::PathChecker`]: Z3's solver, one scope and one assumption
//! literal per decision of the current path, and a machine snapshot after each decision.
//!
//! This module and [`crate::value`]/[`crate::memory`]/[`crate::maps`] are the only ones that build
//! Z3 terms; what the checker asks of a solver is the small set of methods here (assert, push a
//! decision, pop to a prefix, check under assumptions, core, model), which another solver would
//! implement to be measured against Z3.

use z3::ast::Bool;
use z3::{Model, Params, SatResult, Solver};

use crate::machine::State;

/// Outcome of one check.
pub(crate) enum Answer {
    Sat(Model),
    /// Indices (into the assumptions given) of an unsatisfiable subset.
    Unsat(Vec<usize>),
    Unknown,
}

pub(crate) struct Session {
    solver: Solver,
    /// `lits[i]`: the assumption literal of decision `i`; `lits[i] => condition of decision i`
    /// is asserted in scope `2 i + 2`.
    pub lits: Vec<Bool>,
    /// `conds[i]`: the condition decision `i` asserts under `lits[i]` (what
    /// [`crate::PathChecker::input_conflicts`] checks a core's conditions on their own with).
    pub conds: Vec<Bool>,
    /// What was asserted before any decision (the inputs' ranges): the axioms every path shares.
    pub axioms: Vec<Bool>,
    /// `snapshots[k]`: the machine state right after decision `k - 1` was taken (`snapshots[0]`:
    /// at the entry). Taking one opens scope `2 k + 1`, which holds what the execution asserts
    /// after it, so that going back to it forgets what the previous continuation asserted.
    pub snapshots: Vec<State>,
    /// The solver's scope depth.
    level: u32,
    /// Checks made, for statistics.
    pub checks: u64,
    /// Instructions executed symbolically, for statistics.
    pub executed: u64,
}

impl Session {
    /// A session with Z3's solver for arrays and bit-vectors (`general`: its general-purpose
    /// one). The former is several times faster on these formulas (count-min sketch paths: 2 s
    /// against 11 s) but incomplete where a packet grows by a symbolic amount (an array
    /// `lambda`), where it answers unknown at once.
    pub fn new(timeout_ms: Option<u32>, general: bool) -> Session {
        let solver = if general {
            Solver::new()
        } else {
            Solver::new_for_logic("QF_ABV").unwrap_or_default()
        };
        if let Some(ms) = timeout_ms {
            let mut params = Params::new();
            params.set_u32("timeout", ms);
            solver.set_params(&params);
        }
        Session {
            solver,
            lits: Vec::new(),
            conds: Vec::new(),
            axioms: Vec::new(),
            snapshots: Vec::new(),
            level: 0,
            checks: 0,
            executed: 0,
        }
    }

    /// Asserts `c` in the current scope (constraints that hold on every path through here).
    pub fn assert(&mut self, c: &Bool) {
        if c.as_bool() != Some(true) {
            self.solver.assert(c);
            if self.level == 0 {
                self.axioms.push(c.clone());
            }
        }
    }

    /// Opens the scope of decision `index` and asserts that its literal implies `cond`.
    pub fn decide(&mut self, index: usize, cond: &Bool) {
        debug_assert_eq!(index, self.lits.len());
        self.push();
        let literal = Bool::new_const(format!("decision{index}"));
        self.solver.assert(literal.implies(cond));
        self.lits.push(literal);
        self.conds.push(cond.clone());
    }

    /// Records the state after the decision just taken.
    pub fn snapshot(&mut self, state: &State) {
        debug_assert_eq!(self.snapshots.len(), self.lits.len());
        self.snapshots.push(state.clone());
        self.push();
    }

    fn push(&mut self) {
        self.solver.push();
        self.level += 1;
    }

    /// Goes back to the state after the first `prefix` decisions of the current path.
    pub fn rewind(&mut self, prefix: usize) -> State {
        let depth = self.snapshots.len().saturating_sub(1);
        let prefix = prefix.min(depth);
        // Snapshot `prefix` was taken at depth `2 prefix`; reopen its continuation scope.
        let level = 2 * prefix as u32;
        if self.level > level {
            self.solver.pop(self.level - level);
            self.level = level;
        }
        self.push();
        self.snapshots.truncate(prefix + 1);
        self.lits.truncate(prefix);
        self.conds.truncate(prefix);
        self.snapshots[prefix].clone()
    }

    /// Scope depth (decisions with a snapshot).
    pub fn depth(&self) -> usize {
        self.snapshots.len().saturating_sub(1)
    }

    /// Checks the assertions under `assumptions`.
    pub fn check(&mut self, assumptions: &[Bool]) -> Answer {
        self.checks += 1;
        match self.solver.check_assumptions(assumptions) {
            SatResult::Sat => match self.solver.get_model() {
                Some(model) => Answer::Sat(model),
                None => Answer::Unknown,
            },
            SatResult::Unsat => {
                let core = self.solver.get_unsat_core();
                Answer::Unsat(
                    assumptions
                        .iter()
                        .enumerate()
                        .filter(|(_, a)| core.iter().any(|c| c == *a))
                        .map(|(i, _)| i)
                        .collect(),
                )
            }
            SatResult::Unknown => Answer::Unknown,
        }
    }

    /// Whether `cond` may hold together with the path so far (an unknown answer counts as yes).
    pub fn possible(&mut self, cond: &Bool, choices: &[Bool]) -> bool {
        let mut assumptions: Vec<Bool> = self.lits.clone();
        assumptions.extend(choices.iter().cloned());
        assumptions.push(cond.clone());
        !matches!(self.check(&assumptions), Answer::Unsat(_))
    }
}
