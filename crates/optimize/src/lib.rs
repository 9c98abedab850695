//! `linerate optimize`: a synthesizing optimizer for BPF programs in the manner of K2 (paper 002),
//! on linerate's one semantics.
//!
//! The entry function of a program is cut into windows (module [`window`]): straight-line runs of
//! ALU, load and store instructions inside basic blocks, each with what holds around it — the
//! registers' provenance and constants where it starts, the registers and stack bytes read after
//! it. For each window, Markov chains with K2's proposal rules ([`proposal`]) and cost function
//! ([`search`]) look for a cheaper replacement under the goal ([`goal`]): candidates run on the
//! window's tests in a concrete, provenance-tagged instantiation of the semantics ([`run`]),
//! which also rejects the accesses the kernel's checker would refuse; a candidate that passes
//! every test and improves on the best is proven equivalent by the [`search::Prover`] (Z3 over
//! the same semantics, in `linerate-smt`), or yields a counterexample that joins the tests.
//! Small programs are then searched whole ([`whole`]: cross-block rewrites, proven by the
//! whole-program equivalence check and loaded in the kernel first).
//! The best proven rewrites are put back into the program ([`assemble`]) and the result checked
//! against the original through the interpreter and the kernel ([`verify`]) before anything is
//! written.
//!
//! This crate does not write object files (`linerate_bpf::rewrite` does) or parse arguments
//! (the CLI does).

pub mod assemble;
pub mod goal;
pub mod observe;
pub mod packets;
pub mod pipeline;
pub mod proposal;
pub mod prove;
pub mod rules;
pub mod run;
pub mod search;
pub mod timing;
pub mod verify;
pub mod whole;
pub mod window;

use std::time::{Duration, Instant};

use linerate_analysis::Analysis;
use linerate_bpf::program::Object;
use linerate_cfg::Cfg;
use rayon::prelude::*;

pub use assemble::{assemble, Assembled, Rewrite};
pub use observe::Executions;
pub use search::{Performance, Proof, Prover, SearchStats};
pub use window::Window;

/// Why a program cannot be optimized.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OptimizeError {
    #[error("no program {0} in the object")]
    NoProgram(usize),
    #[error("program {program}: {reason}")]
    Cfg { program: String, reason: String },
    #[error(transparent)]
    Assemble(#[from] assemble::AssembleError),
}

/// How to search.
#[derive(Clone, Debug)]
pub struct SearchOptions {
    /// Wall time for the search (the final checks come on top).
    pub budget: Duration,
    /// Seed of every random choice: the same seed and round count give the same result.
    pub seed: u64,
    /// Most instructions in a window.
    pub max_window: usize,
    /// Random tests each window starts with.
    pub tests: usize,
    /// Steps each chain takes per round; the budget is checked between rounds.
    pub round_steps: u64,
    /// Most rounds (None: until the budget is spent).
    pub max_rounds: Option<u64>,
    /// Slots that must stay as they are (the object writer's relocated slots).
    pub pinned: Vec<usize>,
    /// Length of the first window of each straight-line run (0: `max_window`): passes with
    /// different phases cut runs in different places.
    pub phase: usize,
}

impl Default for SearchOptions {
    fn default() -> SearchOptions {
        SearchOptions {
            budget: Duration::from_secs(60),
            seed: 1,
            max_window: 12,
            tests: 24,
            round_steps: 2_000,
            max_rounds: None,
            pinned: Vec::new(),
            phase: 0,
        }
    }
}

/// Progress of a search, after each round.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    pub round: u64,
    pub elapsed: Duration,
    /// The goal's total gain over every window so far.
    pub gain: f64,
    pub candidates: u64,
}

/// The result of a search: the best proven rewrite of each window that has one.
#[derive(Clone, Debug)]
pub struct Searched {
    pub windows: usize,
    /// Every improvement proven, as `(original, candidate)` windows: what the library learns.
    pub proven: Vec<(Vec<linerate_bpf::insn::Instruction>, proposal::Candidate)>,
    pub rules_applied: u64,
    pub rewrites: Vec<(Rewrite, f64)>,
    pub stats: SearchStats,
    pub rounds: u64,
    pub elapsed: Duration,
}

/// The windows of program `program` with the analyses they need.
pub fn windows(
    object: &Object,
    program: usize,
    options: &SearchOptions,
) -> Result<Vec<Window>, OptimizeError> {
    let prog = object
        .programs
        .get(program)
        .ok_or(OptimizeError::NoProgram(program))?;
    let cfg = Cfg::build(prog).map_err(|e| OptimizeError::Cfg {
        program: prog.name.clone(),
        reason: e.to_string(),
    })?;
    let analysis = Analysis::run(object, &cfg);
    Ok(window::find_windows(
        object,
        program,
        &cfg,
        &analysis,
        &options.pinned,
        options.max_window,
        options.phase,
    ))
}

/// Searches every window for cheaper proven-equivalent replacements: first the library's
/// `rules`, then (unless `rules_only`) Markov chains in rounds across threads until the budget
/// is spent. `prover` makes one prover per worker.
pub fn search(
    windows: Vec<Window>,
    rules: &[rules::Compiled],
    rules_only: bool,
    options: &SearchOptions,
    perf: &dyn Performance,
    prover: &(dyn Fn() -> Box<dyn Prover> + Sync),
    progress: &mut dyn FnMut(Progress),
) -> Searched {
    let started = Instant::now();
    let count = windows.len();
    let mut searches: Vec<search::WindowSearch> = windows
        .into_iter()
        .enumerate()
        .map(|(i, w)| {
            let seed = options.seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (i as u64 + 1);
            search::WindowSearch::new(w, seed, options.tests, perf)
        })
        .filter(|s| s.searchable())
        .collect();
    searches.par_iter_mut().for_each_init(prover, |p, s| {
        s.apply_rules(rules, p.as_mut(), perf);
    });
    // The chains of a window that counts less toward the goal (off the slowest path, seldom
    // run) take fewer steps, down to a tenth: the budget goes where the gains count.
    let heaviest = searches
        .iter()
        .map(|s| s.window.weight)
        .fold(0.0f64, f64::max);
    let steps_for = |weight: f64| {
        let share = if heaviest > 0.0 {
            (weight / heaviest).clamp(0.1, 1.0)
        } else {
            1.0
        };
        ((options.round_steps as f64 * share) as u64).max(1)
    };
    let mut rounds = 0;
    while !rules_only && options.max_rounds.is_none_or(|m| rounds < m) {
        if rounds > 0 && started.elapsed() >= options.budget {
            break;
        }
        let deadline = started + options.budget;
        searches.par_iter_mut().for_each_init(prover, |p, s| {
            // Past the budget a window is left for good: the budget caps the time even within
            // a round, which on a program of a thousand windows takes many seconds.
            if Instant::now() < deadline {
                s.run(steps_for(s.window.weight), p.as_mut(), perf);
            }
        });
        rounds += 1;
        let mut stats = SearchStats::default();
        for s in &searches {
            stats.add(&s.stats);
        }
        progress(Progress {
            round: rounds,
            elapsed: started.elapsed(),
            gain: searches.iter().map(|s| s.gain()).sum(),
            candidates: stats.candidates,
        });
    }
    let mut stats = SearchStats::default();
    for s in &searches {
        stats.add(&s.stats);
    }
    let rewrites = searches
        .iter()
        .filter(|s| s.gain() > 0.0)
        .map(|s| {
            (
                Rewrite {
                    start: s.window.start,
                    original: s.window.original.clone(),
                    replacement: s.best.clone(),
                },
                s.gain(),
            )
        })
        .collect();
    Searched {
        windows: count,
        proven: searches
            .iter()
            .flat_map(|s| {
                s.proven
                    .iter()
                    .map(|c| (s.window.original.clone(), c.clone()))
            })
            .collect(),
        rules_applied: searches.iter().map(|s| s.rules_applied).sum(),
        rewrites,
        stats,
        rounds,
        elapsed: started.elapsed(),
    }
}

/// `object` with program `program` rewritten.
pub fn apply(
    object: &Object,
    program: usize,
    rewrites: &[Rewrite],
) -> Result<(Object, Assembled), OptimizeError> {
    let prog = object
        .programs
        .get(program)
        .ok_or(OptimizeError::NoProgram(program))?;
    let assembled = assemble(prog, rewrites)?;
    let mut out = object.clone();
    out.programs[program] = assembled.program.clone();
    Ok((out, assembled))
}

/// One pass of rewriting: the program it started from, the rewrites it found, and where each
/// of the starting program's entry-function slots went.
#[derive(Clone, Debug)]
pub struct Stage {
    pub input: Object,
    pub rewrites: Vec<Rewrite>,
}

/// `map` after `first`: where each slot of the first stage's input ends up.
pub fn compose(first: &[Option<usize>], then: &[Option<usize>]) -> Vec<Option<usize>> {
    first
        .iter()
        .map(|s| s.and_then(|s| then.get(s).copied().flatten()))
        .collect()
}

/// How [`run_passes`] searches.
#[derive(Clone, Debug)]
pub struct PassOptions {
    pub passes: usize,
    /// Wall time of all passes together, shared out evenly over those left.
    pub budget: Duration,
    pub seed: u64,
    /// Rounds per pass (see [`SearchOptions::max_rounds`]).
    pub rounds: Option<u64>,
    /// The rule library alone (one pass, no chains).
    pub rules_only: bool,
    /// The input's slots the object writer must keep.
    pub pinned: Vec<usize>,
    /// Search the entry function whole after the window passes when it is eligible
    /// ([`whole::eligibility`]), with the last third of the budget.
    pub whole: bool,
}

/// What the passes found.
#[derive(Clone, Debug, Default)]
pub struct Passes {
    /// Each pass that rewrote something: its input and its rewrites.
    pub stages: Vec<Stage>,
    pub stats: SearchStats,
    pub windows: usize,
    pub rounds: u64,
    pub rules_applied: u64,
    pub elapsed: Duration,
    /// Every improvement proven (what the rule library learns from).
    pub proven: Vec<(Vec<linerate_bpf::insn::Instruction>, proposal::Candidate)>,
    /// Window tests taken from executions on the packets and witnesses, over all passes.
    pub observed_tests: usize,
    /// What the whole-program search did, when asked for.
    pub whole: Option<whole::WholeReport>,
}

/// Searches program `program` in passes: each cuts the entry function into windows at another
/// phase, observes them on `executions` (tests and how often they run), weighs them with
/// `weight`, applies `rules` and searches them with its share of the budget; a pass's result is
/// the next one's input. `progress` hears the pass and the totals.
#[allow(clippy::too_many_arguments)]
pub fn run_passes(
    object: &Object,
    program: usize,
    options: &PassOptions,
    executions: Option<&Executions>,
    rules: &[rules::Compiled],
    perf: &dyn Performance,
    prover: &(dyn Fn() -> Box<dyn Prover> + Sync),
    weight: &dyn Fn(&Window) -> f64,
    progress: &mut dyn FnMut(usize, Progress),
) -> Result<Passes, OptimizeError> {
    let passes = if options.rules_only {
        1
    } else {
        options.passes.max(1)
    };
    let started = Instant::now();
    let mut out = Passes::default();
    let mut current = object.clone();
    let mut pinned = options.pinned.clone();
    // Whether the whole program can be searched is known first (its check takes a few seconds
    // of the budget): the windows then get two thirds of the budget, the whole program the rest.
    let whole_eligible =
        (options.whole && !options.rules_only).then(|| whole::eligibility(object, object, program));
    let window_budget = match whole_eligible {
        Some(Ok(())) => options.budget.saturating_sub(started.elapsed()) * 2 / 3,
        _ => options.budget,
    };
    for pass in 0..passes {
        let left = window_budget.saturating_sub(started.elapsed());
        let search_options = SearchOptions {
            budget: left / (passes - pass) as u32,
            seed: options.seed.wrapping_add(pass as u64),
            pinned: pinned.clone(),
            phase: pass * SearchOptions::default().max_window / passes,
            max_rounds: options.rounds,
            ..SearchOptions::default()
        };
        let mut found = windows(&current, program, &search_options)?;
        if let Some(executions) = executions {
            let seen = observe::observe(&current, program, &found, executions);
            for (w, o) in found.iter_mut().zip(seen) {
                out.observed_tests += o.tests.len();
                w.observed = o.tests;
                w.per_packet = Some(o.per_packet);
            }
        }
        for w in &mut found {
            w.weight = weight(w);
        }
        let before = out.stats.candidates;
        let searched = search(
            found,
            rules,
            options.rules_only,
            &search_options,
            perf,
            prover,
            &mut |p| {
                progress(
                    pass,
                    Progress {
                        candidates: before + p.candidates,
                        elapsed: started.elapsed(),
                        ..p
                    },
                )
            },
        );
        out.stats.add(&searched.stats);
        out.windows += searched.windows;
        out.rounds += searched.rounds;
        out.rules_applied += searched.rules_applied;
        out.proven.extend(searched.proven);
        let rewrites: Vec<Rewrite> = searched.rewrites.into_iter().map(|(r, _)| r).collect();
        if rewrites.is_empty() {
            continue;
        }
        let (next, assembled) = apply(&current, program, &rewrites)?;
        pinned = pinned
            .iter()
            .filter_map(|&s| assembled.slot_map.get(s).copied().flatten())
            .collect();
        out.stages.push(Stage {
            input: std::mem::replace(&mut current, next),
            rewrites,
        });
    }
    out.whole = whole_eligible.map(|eligible| match eligible {
        Ok(()) => {
            let whole_options = whole::WholeOptions {
                budget: options.budget.saturating_sub(started.elapsed()),
                seed: options.seed,
                pinned: pinned.clone(),
                max_rounds: options.rounds,
            };
            let (report, stage) =
                whole::search_whole(object, &current, program, &whole_options, perf, executions);
            out.stages.extend(stage);
            report
        }
        Err(why) => whole::WholeReport {
            why: Some(why),
            ..whole::WholeReport::default()
        },
    });
    out.elapsed = started.elapsed();
    Ok(out)
}
