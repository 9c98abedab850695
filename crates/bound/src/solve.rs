//! The SSP search with the Z3 engine (`linerate-smt`) as its checker: what `linerate bound`
//! runs, and what later capabilities (optimizing for the worst case, the hXDP worst case, the
//! report) call for a program's guarantee.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use linerate_bpf::Object;
use linerate_cfg::Decision;
use linerate_cost::Model;
use linerate_smt::Witness;

use crate::dfs::{self, PrefixChecker};
use crate::enumerate::{EnumerateError, Metric};
use crate::invariant::Invariance;
use crate::prepare::Prepared;
use crate::ssp::{self, Event, MakeChecker, Outcome, PathChecker, Verdict};

/// A checker of one worker thread: a `linerate_smt` session on the program, counting the solver
/// checks it makes into a total shared by all workers.
pub struct SmtChecker {
    inner: Result<linerate_smt::PathChecker, String>,
    solver_checks: Arc<AtomicU64>,
    counted: u64,
}

impl SmtChecker {
    /// A checker of program `program` of `object`; a failure to set one up makes every check
    /// answer unknown with the reason (the bound then rests on the unchecked paths).
    pub fn new(
        object: &Object,
        program: usize,
        options: linerate_smt::Options,
        solver_checks: Arc<AtomicU64>,
    ) -> SmtChecker {
        SmtChecker {
            inner: linerate_smt::PathChecker::new(object, program, options)
                .map_err(|e| e.to_string()),
            solver_checks,
            counted: 0,
        }
    }

    /// Runs `ask` on the session and adds the solver checks it made to the shared total; without
    /// a session, `no_session` with the reason.
    fn counted<T>(
        &mut self,
        no_session: impl FnOnce(&str) -> T,
        ask: impl FnOnce(&mut linerate_smt::PathChecker) -> T,
    ) -> T {
        let checker = match &mut self.inner {
            Ok(checker) => checker,
            Err(why) => return no_session(why),
        };
        let verdict = ask(checker);
        let checks = checker.solver_checks();
        self.solver_checks
            .fetch_add(checks - self.counted, Ordering::Relaxed);
        self.counted = checks;
        verdict
    }
}

const OUT_OF_TIME: &str = "the solver ran out of time";

/// The verdict of a check that had no session to run in.
fn unknown<T>(why: &str) -> Verdict<T> {
    Verdict::Unknown(why.to_string())
}

impl PathChecker for SmtChecker {
    type Witness = Box<Witness>;

    fn check(&mut self, decisions: &[Decision]) -> Verdict<Box<Witness>> {
        self.counted(unknown, |checker| match checker.check(decisions) {
            Ok(linerate_smt::Verdict::Sat(w)) => Verdict::Sat(w),
            Ok(linerate_smt::Verdict::Unsat { core }) => Verdict::Unsat { core },
            Ok(linerate_smt::Verdict::Unknown) => Verdict::Unknown(OUT_OF_TIME.into()),
            Err(e) => Verdict::Unknown(e.to_string()),
        })
    }

    fn input_conflicts(
        &mut self,
        decisions: &[Decision],
        candidates: &[usize],
        core: &[usize],
    ) -> Vec<Vec<usize>> {
        self.counted(
            |_| Vec::new(),
            |checker| checker.input_conflicts(decisions, candidates, core),
        )
    }
}

impl PrefixChecker for SmtChecker {
    fn check_prefix(&mut self, decisions: &[Decision]) -> Verdict<()> {
        self.counted(unknown, |checker| match checker.check_prefix(decisions) {
            Ok(linerate_smt::PrefixVerdict::Holds { .. }) => Verdict::Sat(()),
            Ok(linerate_smt::PrefixVerdict::Unsat { core }) => Verdict::Unsat { core },
            Ok(linerate_smt::PrefixVerdict::Unknown) => Verdict::Unknown(OUT_OF_TIME.into()),
            Err(e) => Verdict::Unknown(e.to_string()),
        })
    }
}

/// How to look for a program's guarantee.
#[derive(Clone, Debug)]
pub struct GuaranteeOptions {
    pub search: ssp::Options,
    /// Every path instead of the ordered search (the benchmark's baseline).
    pub exhaustive: bool,
    /// Time one solver check may take.
    pub check_timeout: Option<Duration>,
    /// Prune by edge sets where a core's conflict is path-invariant ([`ssp::search_learning`]);
    /// false: by prefixes only ([`ssp::search`]).
    pub learn: bool,
}

/// The search's outcome with the solver checks it made.
pub struct Guarantee {
    pub outcome: Outcome<Box<Witness>>,
    pub solver_checks: u64,
}

/// Searches the slowest satisfiable paths of `prepared` (program `program` of `object`) under
/// `model`, checking paths with Z3.
///
/// The checker threads are not joined ([`ssp`]): they end after the check they are in. A
/// process that exits right after must not run exit handlers under them (Z3's global state is
/// torn down there): `linerate bound` ends with `_exit`.
pub fn guarantee(
    object: &Object,
    program: usize,
    prepared: &Prepared,
    model: &Model,
    options: &GuaranteeOptions,
    progress: impl FnMut(Event),
) -> Result<Guarantee, EnumerateError> {
    let solver_checks = Arc::new(AtomicU64::new(0));
    let smt_options = linerate_smt::Options {
        timeout: options.check_timeout,
        ..linerate_smt::Options::default()
    };
    // Workers outlive a search that stops early, so they own what they check.
    let shared = Arc::new(object.clone());
    let counter = Arc::clone(&solver_checks);
    let make: MakeChecker<SmtChecker> = Arc::new(move || {
        SmtChecker::new(&shared, program, smt_options.clone(), Arc::clone(&counter))
    });
    let outcome = if options.exhaustive {
        ssp::exhaustive(prepared, model, &options.search, &make)?
    } else {
        let invariant = if options.learn {
            Invariance::analyse(object, prepared)
        } else {
            Invariance::none(prepared.dag.edges.len())
        };
        ssp::search_learning(
            prepared,
            model,
            &options.search,
            &make,
            &invariant,
            progress,
        )?
    };
    Ok(Guarantee {
        outcome,
        solver_checks: solver_checks.load(Ordering::Relaxed),
    })
}

/// The check-at-every-branch baseline ([`crate::dfs`]) on `prepared` (program `program` of
/// `object`) with Z3 on the calling thread, stopping after `timeout`, one solver check limited
/// to `check_timeout`; with the solver checks it made.
pub fn check_every_branch(
    object: &Object,
    program: usize,
    prepared: &Prepared,
    model: &Model,
    metric: Metric,
    timeout: Option<Duration>,
    check_timeout: Option<Duration>,
) -> Result<(dfs::Outcome, u64), EnumerateError> {
    let solver_checks = Arc::new(AtomicU64::new(0));
    let options = linerate_smt::Options {
        timeout: check_timeout,
        ..linerate_smt::Options::default()
    };
    let mut checker = SmtChecker::new(object, program, options, solver_checks.clone());
    let outcome = dfs::check_every_branch(prepared, model, metric, timeout, &mut checker)?;
    Ok((outcome, solver_checks.load(Ordering::Relaxed)))
}
