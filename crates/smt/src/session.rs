//! The solver session of one [`crate::PathChecker`]: Z3's solver, one assumption literal per
//! decision of the current path, and a machine snapshot after each decision.
//!
//! The session never pushes or pops a solver scope: Z3's bit-vector solver (bit-blasting to its
//! SAT solver, several times faster on these formulas than its array or general solvers) redoes
//! its preprocessing at every push, which made a 300-decision path take seconds before its
//! first check. What the execution asserts after a snapshot is guarded by a literal of its own
//! (a segment of the path) instead, and a check assumes the segments and decisions of the
//! current path only; going back to a prefix starts a new segment, so the old continuation's
//! assertions no longer bind. Literals are never reused, so a guarded assertion keeps meaning
//! what it meant when it was made.
//!
//! An unsatisfiable answer names the last segment its core needs besides the assumptions
//! ([`Answer::Unsat`]): the checker turns cores into claims about a prefix of the path (its
//! decisions up to the core's last one are impossible on every path that takes them), and a
//! segment asserted after decision `k - 1` makes the claim reach that decision.
//! [`Session::check_through`] checks with only the segments such a prefix shares, which is how
//! a core is shrunk without borrowing what later parts of the path asserted.
//!
//! This module and [`crate::value`]/[`crate::memory`]/[`crate::maps`] are the only ones that build
//! Z3 terms; what the checker asks of a solver is the small set of methods here (assert, add a
//! decision, go back to a prefix, check under assumptions, core, model), which another solver would
//! implement to be measured against Z3.

use z3::ast::Bool;
use z3::{Model, Params, SatResult, Solver};

use crate::machine::State;

/// Outcome of one check.
pub(crate) enum Answer {
    Sat(Model),
    /// An unsatisfiable subset: `core` holds indices into the assumptions given, `segment` the
    /// last segment of the path it needs (what the execution asserted after decision
    /// `segment - 1`; `None`: only the assumptions and what the entry asserted).
    Unsat {
        core: Vec<usize>,
        segment: Option<usize>,
    },
    Unknown,
}

pub(crate) struct Session {
    solver: Solver,
    /// `lits[i]`: the assumption literal of decision `i`, which implies its condition.
    pub lits: Vec<Bool>,
    /// `conds[i]`: the condition decision `i` asserts under `lits[i]` (what
    /// [`crate::PathChecker::input_conflicts`] checks a core's conditions on their own with).
    pub conds: Vec<Bool>,
    /// What was asserted before any decision (the inputs' ranges): the axioms every path shares.
    pub axioms: Vec<Bool>,
    /// `snapshots[k]`: the machine state right after decision `k - 1` was taken (`snapshots[0]`:
    /// at the entry).
    pub snapshots: Vec<State>,
    /// `segments[k]`: the literal guarding what the execution asserted after `snapshots[k]`.
    segments: Vec<Bool>,
    /// Literals made so far (each one's name is new).
    made: u64,
    /// Checks made, for statistics.
    pub checks: u64,
    /// Instructions executed symbolically, for statistics.
    pub executed: u64,
}

impl Session {
    /// A session with Z3's solver for bit-vectors (`general`: its general-purpose one, tried
    /// where the former gives up).
    pub fn new(timeout: Option<std::time::Duration>, general: bool) -> Session {
        let solver = if general {
            Solver::new()
        } else {
            Solver::new_for_logic("QF_BV").unwrap_or_default()
        };
        if let Some(ms) = timeout.map(|t| t.as_millis().clamp(1, u128::from(u32::MAX)) as u32) {
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
            segments: Vec::new(),
            made: 0,
            checks: 0,
            executed: 0,
        }
    }

    /// A literal no other in this session has the name of.
    pub(crate) fn literal(&mut self, what: &str) -> Bool {
        self.made += 1;
        Bool::new_const(format!("{what}{}", self.made))
    }

    /// Literals made so far: what the solver holds grows with them.
    pub fn literals_made(&self) -> u64 {
        self.made
    }

    /// Asserts `c` on the current path from here on (constraints that hold on every path
    /// through here).
    pub fn assert(&mut self, c: &Bool) {
        if c.as_bool() == Some(true) {
            return;
        }
        match self.segments.last() {
            Some(segment) => self.solver.assert(segment.implies(c)),
            // Before the entry's snapshot: the inputs' ranges, shared by every path.
            None => {
                self.solver.assert(c);
                self.axioms.push(c.clone());
            }
        }
    }

    /// Adds decision `index`, whose literal implies `cond`.
    pub fn decide(&mut self, index: usize, cond: &Bool) {
        debug_assert_eq!(index, self.lits.len());
        let literal = self.literal("decision");
        if cond.as_bool() != Some(true) {
            self.solver.assert(literal.implies(cond));
        }
        self.lits.push(literal);
        self.conds.push(cond.clone());
    }

    /// Records the state after the decision just taken.
    pub fn snapshot(&mut self, state: &State) {
        debug_assert_eq!(self.snapshots.len(), self.lits.len());
        self.snapshots.push(state.clone());
        let segment = self.literal("segment");
        self.segments.push(segment);
    }

    /// Goes back to the state after the first `prefix` decisions of the current path.
    pub fn rewind(&mut self, prefix: usize) -> State {
        let depth = self.snapshots.len().saturating_sub(1);
        let prefix = prefix.min(depth);
        self.snapshots.truncate(prefix + 1);
        self.lits.truncate(prefix);
        self.conds.truncate(prefix);
        self.segments.truncate(prefix);
        let segment = self.literal("segment");
        self.segments.push(segment);
        self.snapshots[prefix].clone()
    }

    /// Scope depth (decisions with a snapshot).
    pub fn depth(&self) -> usize {
        self.snapshots.len().saturating_sub(1)
    }

    /// Checks the assertions of the current path under `assumptions`; a core holds indices
    /// into `assumptions`.
    pub fn check(&mut self, assumptions: &[Bool]) -> Answer {
        self.check_segments(assumptions, self.segments.len())
    }

    /// Checks `assumptions` with only what the execution asserted before decision `through + 1`
    /// (segments `0..=through + 1`): the assertions every path that takes the current path's
    /// decisions `0..=through` shares, as it runs the same instructions on the same state up to
    /// its next decision. An unsatisfiable answer then proves every such path impossible.
    pub fn check_through(&mut self, assumptions: &[Bool], through: usize) -> Answer {
        self.check_segments(assumptions, through.saturating_add(2))
    }

    /// Checks `assumptions` with the first `segments` segments of the current path.
    fn check_segments(&mut self, assumptions: &[Bool], segments: usize) -> Answer {
        self.checks += 1;
        let segments = &self.segments[..segments.min(self.segments.len())];
        let mut all = assumptions.to_vec();
        all.extend(segments.iter().cloned());
        match self.solver.check_assumptions(&all) {
            SatResult::Sat => match self.solver.get_model() {
                Some(model) => Answer::Sat(model),
                None => Answer::Unknown,
            },
            SatResult::Unsat => {
                let core = self.solver.get_unsat_core();
                let in_core = |a: &Bool| core.iter().any(|c| c == a);
                Answer::Unsat {
                    core: (0..assumptions.len())
                        .filter(|&i| in_core(&assumptions[i]))
                        .collect(),
                    segment: (0..segments.len()).rev().find(|&k| in_core(&segments[k])),
                }
            }
            SatResult::Unknown => Answer::Unknown,
        }
    }

    /// Whether `cond` may hold together with the path so far (an unknown answer counts as yes).
    pub fn possible(&mut self, cond: &Bool, choices: &[Bool]) -> bool {
        let mut assumptions: Vec<Bool> = self.lits.clone();
        assumptions.extend(choices.iter().cloned());
        assumptions.push(cond.clone());
        !matches!(self.check(&assumptions), Answer::Unsat { .. })
    }
}
