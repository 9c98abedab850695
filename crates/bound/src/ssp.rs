//! The slowest satisfiable path (paper 000 §5.5): paths of the prepared graph in order of
//! throughput, each checked for satisfiability, until the first satisfiable one.
//!
//! Checks run in parallel on worker threads, each with its own checker (a Z3 context lives in
//! one thread; a search that stops does not wait for the checks in progress); the enumeration stays on the calling thread and hands paths out in order. A
//! verdict becomes final only in enumeration order: a satisfiable path checked ahead of slower
//! candidates waits until every one of them is refuted. Every refuted prefix of the order proves
//! a bound: no satisfiable path is slower than the first path not yet refuted, so the bound
//! improves with each impossible path ([`Outcome::improvements`]) and stays valid when the search
//! stops early (time or memory cap: [`Outcome::complete`] is then false).
//!
//! An unsatisfiable path's core — the decisions that conflict — prunes later paths: every path
//! that starts with the same edges up to the core's last decision executes the same
//! instructions on the same symbolic state up to there and on to its next decision, and the
//! checker's cores claim no more than that stretch asserts (`linerate_smt`'s core shrinking
//! checks each trial with only the assertions of the trial's own prefix), so it is unsatisfiable
//! too and the enumeration drops it ([`crate::enumerate::Enumerator::forbid`] of that prefix: a
//! path holding every edge of a prefix from the source starts with that prefix). With
//! [`search_learning`] a core prunes by
//! edge set instead where that is sound: when every decision of the core is at an edge whose
//! condition is the same formula over the inputs on every path reaching it
//! ([`crate::invariant`]), and the checker finds those formulas conflicting on their own — over
//! input symbols only, with only the axioms every path shares ([`PathChecker::input_conflicts`],
//! which also finds the path's other such conflicts besides the core)
//! — then every path holding all the core's edges asserts the same conflicting formulas, so the
//! enumeration drops every such path, whatever its prefix. A core with a decision at another edge
//! (a tail call, a branch on a map value or a helper result, a branch after a packet write), or
//! one the checker widened because an outcome chosen inside a helper was in the conflict (its
//! conditions then mention helper variables), or one that needs what the path asserted besides
//! its decisions, falls back to its prefix. A decision whose condition is not the same formula
//! on every path may still be the same on every path through a stretch of this one (its window,
//! [`Invariance::windows`]: the compared values were made by a few instructions before it, a
//! constant, an array lookup by a constant key, a value stored on the stack and loaded back); a
//! conflict of such decisions forbids the edges of their windows together, which prunes every
//! path holding those stretches whatever it did before them. A check that gives no verdict (a timeout, a
//! program part the checker cannot follow) counts as satisfiable without a witness: the bound
//! stays sound, and the report says the path was not confirmed.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use linerate_cfg::Decision;
use linerate_cost::Model;

use crate::dag::EdgeId;
use crate::enumerate::{
    rank, EnumerateError, Enumerator, Exhaustive, Metric, ModelRates, Paused, RankedPath,
};
use crate::implied::single_edge;
use crate::invariant::{Invariance, Window};
use crate::prepare::Prepared;

/// Forbidden paths the enumeration may skip before the search checks its time and memory limits
/// (a skip costs microseconds).
const SKIPS_BETWEEN_CHECKS: u64 = 4096;

/// What a checker says about one path.
#[derive(Clone, Debug)]
pub enum Verdict<W> {
    /// Some input takes the path; `W` shows one.
    Sat(W),
    /// No input takes the path; `core` holds indices into the decision list of a subset that
    /// already conflicts.
    Unsat { core: Vec<usize> },
    /// No verdict (why).
    Unknown(String),
}

/// Checks paths given as decision lists. One checker per worker thread; it may keep state
/// between calls (solver scopes of a shared prefix).
pub trait PathChecker {
    /// What a satisfiable path's check yields.
    type Witness: Send + 'static;
    fn check(&mut self, decisions: &[Decision]) -> Verdict<Self::Witness>;

    /// After [`PathChecker::check`] answered `Unsat { core }` for `decisions`: sets of
    /// decisions among `candidates` (those at invariant edges, [`crate::invariant::Invariance`])
    /// whose conditions mention only the program's inputs and conflict on their own, under only
    /// the axioms every path shares (no other assertion of the path); each set sorted indices
    /// into `decisions`. Each prunes every path holding its edges. The default finds none, which
    /// keeps pruning by prefix.
    fn input_conflicts(
        &mut self,
        _decisions: &[Decision],
        _candidates: &[usize],
        _core: &[usize],
    ) -> Vec<Vec<usize>> {
        Vec::new()
    }
}

/// How far to search.
#[derive(Clone, Debug)]
pub struct Options {
    pub metric: Metric,
    /// Satisfiable paths to find, slowest first (`--paths N`; 1: the SSP).
    pub paths: usize,
    /// Stop with the best bound so far after this long.
    pub timeout: Option<Duration>,
    /// Stop with the best bound so far when the enumeration holds this many bytes.
    pub max_memory: usize,
    /// Worker threads checking paths.
    pub threads: usize,
    /// Keep every claim the search makes that some paths are impossible ([`Outcome::claims`]),
    /// for checking them against runs (`crate::attack`).
    pub record_claims: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            metric: Metric::PacketRate,
            paths: 1,
            timeout: None,
            max_memory: 1 << 30,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            record_claims: false,
        }
    }
}

/// A path found satisfiable (or left without a verdict).
#[derive(Clone, Debug)]
pub struct Found<W> {
    pub path: RankedPath,
    pub decisions: Vec<Decision>,
    /// The witness, or why the checker gave no verdict.
    pub witness: Result<W, String>,
}

/// The bound after some refuted paths: `rate` (packets/s or bits/s, as the metric) at `t_s`
/// seconds into the search.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Improvement {
    pub t_s: f64,
    pub rate: f64,
}

/// Why the search ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// Found the paths asked for.
    Found,
    /// No more paths: fewer satisfiable paths exist than asked for.
    Exhausted,
    Timeout,
    MemoryCap,
}

/// What the search found.
#[derive(Clone, Debug)]
pub struct Outcome<W> {
    /// The slowest path of the graph, satisfiable or not.
    pub naive: Option<RankedPath>,
    /// Satisfiable paths, slowest first.
    pub found: Vec<Found<W>>,
    /// A rate no satisfiable path beyond `found` falls below (the rate of the first path not
    /// refuted), `None` when no path remains.
    pub bound: Option<f64>,
    pub complete: bool,
    pub stop: Stop,
    pub paths_checked: u64,
    pub improvements: Vec<Improvement>,
    pub elapsed: Duration,
    /// Largest enumeration memory seen, bytes.
    pub peak_memory: usize,
    /// Conflicts learned as edge sets (each pruning every path holding its edges).
    pub learned: u64,
    /// With [`Options::record_claims`]: every set of edges the search took no run to hold all
    /// of, in the order it concluded them.
    pub claims: Vec<Claim>,
}

/// A conclusion of the search: no run takes every edge of `edges`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claim {
    pub edges: Vec<EdgeId>,
    pub why: ClaimReason,
    /// The decisions of the path whose check concluded it (empty for the analysis's).
    pub path: Vec<Decision>,
}

/// What a [`Claim`] rests on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClaimReason {
    /// A pair of edges the analysis found no run takes both of ([`Prepared::conflicts`]).
    Analysis,
    /// A whole path the checker found unsatisfiable.
    Refuted,
    /// The prefix of a refuted path up to its core's last decision.
    CorePrefix,
    /// A conflict over the inputs learned from a refuted path (the edges of its decisions'
    /// windows).
    Learned,
}

impl ClaimReason {
    /// How a report names it.
    pub fn name(self) -> &'static str {
        match self {
            ClaimReason::Analysis => "analysis",
            ClaimReason::Refuted => "refuted path",
            ClaimReason::CorePrefix => "core prefix",
            ClaimReason::Learned => "learned conflict",
        }
    }
}

/// Progress the search reports as it goes.
#[derive(Clone, Copy, Debug)]
pub enum Event {
    /// The bound rose to `rate` after `checked` paths.
    Improved { rate: f64, checked: u64 },
}

/// An enumerated path with its decisions, each with the edge that makes it.
type Candidate = (RankedPath, Vec<(Decision, EdgeId)>);

/// A path handed to a worker: its place in the order, its decisions, and for each whether it is
/// at an invariant edge (a core of only such decisions is worth asking
/// [`PathChecker::input_conflicts`] about).
struct Job {
    seq: u64,
    decisions: Vec<Decision>,
    invariant: Vec<bool>,
}

/// A worker's answer: the path's place in the order, its verdict, and the sets of its decisions
/// that conflict on their own over the inputs ([`PathChecker::input_conflicts`]).
type Answer<W> = (u64, Verdict<W>, Vec<Vec<usize>>);

/// Makes one checker per worker thread.
pub type MakeChecker<C> = Arc<dyn Fn() -> C + Send + Sync>;

/// Worker threads of every search of this process that have not ended yet.
static LIVE_WORKERS: AtomicUsize = AtomicUsize::new(0);

/// Counts a worker thread as live while it exists.
struct LiveWorker;

impl LiveWorker {
    fn new() -> LiveWorker {
        LIVE_WORKERS.fetch_add(1, Ordering::SeqCst);
        LiveWorker
    }
}

impl Drop for LiveWorker {
    fn drop(&mut self) {
        LIVE_WORKERS.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Waits until the worker threads of earlier searches (which end after the check they are in,
/// see [`with_workers`]) have ended, at most `limit`; whether they have. Timing a program right
/// after a search (`measure`) needs the cores to itself.
pub fn wait_for_workers(limit: Duration) -> bool {
    let start = Instant::now();
    while LIVE_WORKERS.load(Ordering::SeqCst) > 0 {
        if start.elapsed() >= limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

/// Runs `body` with `threads` worker threads, each checking the jobs it receives with its own
/// checker from `make_checker` and sending back an [`Answer`].
///
/// The workers are not joined: when `body` returns, the job channel closes and each worker ends
/// after the check it is in, so a search that stops at its time limit answers at once instead of
/// waiting for checks it no longer needs (a check can take many solver calls).
fn with_workers<C: PathChecker + 'static, T>(
    threads: usize,
    make_checker: &MakeChecker<C>,
    body: impl FnOnce(&mpsc::Sender<Job>, &mpsc::Receiver<Answer<C::Witness>>) -> T,
) -> T {
    let (job_tx, job_rx) = mpsc::channel::<Job>();
    let job_rx = Arc::new(Mutex::new(job_rx));
    let (verdict_tx, verdict_rx) = mpsc::channel::<Answer<C::Witness>>();
    for _ in 0..threads.max(1) {
        let verdict_tx = verdict_tx.clone();
        let job_rx = Arc::clone(&job_rx);
        let make_checker = Arc::clone(make_checker);
        let live = LiveWorker::new();
        std::thread::spawn(move || {
            let _live = live;
            let mut checker = make_checker();
            loop {
                let job = match job_rx.lock() {
                    Ok(rx) => rx.recv(),
                    Err(_) => return,
                };
                let Ok(job) = job else { return };
                let verdict = checker.check(&job.decisions);
                let candidates: Vec<usize> = (0..job.decisions.len())
                    .filter(|&i| job.invariant.get(i) == Some(&true))
                    .collect();
                let learned = match &verdict {
                    Verdict::Unsat { core } if !candidates.is_empty() => {
                        checker.input_conflicts(&job.decisions, &candidates, core)
                    }
                    _ => Vec::new(),
                };
                if verdict_tx.send((job.seq, verdict, learned)).is_err() {
                    return;
                }
            }
        });
    }
    drop(verdict_tx);
    body(&job_tx, &verdict_rx)
}

fn empty_outcome<W>(naive: Option<RankedPath>) -> Outcome<W> {
    Outcome {
        naive,
        found: Vec::new(),
        bound: None,
        complete: true,
        stop: Stop::Exhausted,
        paths_checked: 0,
        improvements: Vec::new(),
        elapsed: Duration::ZERO,
        peak_memory: 0,
        learned: 0,
        claims: Vec::new(),
    }
}

/// Searches `prepared`'s graph for its slowest satisfiable paths under `model`, pruning by the
/// prefixes of unsatisfiable cores.
pub fn search<C: PathChecker + 'static>(
    prepared: &Prepared,
    model: &Model,
    options: &Options,
    make_checker: &MakeChecker<C>,
    progress: impl FnMut(Event),
) -> Result<Outcome<C::Witness>, EnumerateError> {
    let none = Invariance::none(prepared.dag.edges.len());
    search_learning(prepared, model, options, make_checker, &none, progress)
}

/// [`search`], also pruning by edge sets: a set of an unsatisfiable path's decisions, all at
/// edges `invariant` holds, that the checker finds conflicting on their own over the inputs
/// ([`PathChecker::input_conflicts`]) forbids every later path holding all of its edges.
pub fn search_learning<C: PathChecker + 'static>(
    prepared: &Prepared,
    model: &Model,
    options: &Options,
    make_checker: &MakeChecker<C>,
    invariant: &Invariance,
    mut progress: impl FnMut(Event),
) -> Result<Outcome<C::Witness>, EnumerateError> {
    let started = Instant::now();
    let naive = Enumerator::with_model(&prepared.dag, model, options.metric)?.next_path();
    let mut enumerator = Enumerator::with_model(&prepared.dag, model, options.metric)?;
    let mut claims = Vec::new();
    for set in &prepared.conflicts {
        enumerator.forbid(set.clone())?;
        if options.record_claims {
            claims.push(Claim {
                edges: set.clone(),
                why: ClaimReason::Analysis,
                path: Vec::new(),
            });
        }
    }
    let threads = options.threads.max(1);
    with_workers(threads, make_checker, |jobs, verdicts| {
        let mut driver = Driver {
            prepared,
            invariant,
            learned: 0,
            options,
            started,
            enumerator: &mut enumerator,
            in_flight: BTreeMap::new(),
            windows: BTreeMap::new(),
            done: BTreeMap::new(),
            next_seq: 0,
            next_final: 0,
            exhausted: false,
            outcome: Outcome {
                claims,
                ..empty_outcome(naive)
            },
        };
        let result = driver.run(jobs, verdicts, threads, &mut progress);
        let mut outcome = driver.outcome;
        outcome.learned = driver.learned;
        outcome.elapsed = started.elapsed();
        result.map(|()| outcome)
    })
}

/// Checks every path of the graph, in no particular order, and keeps the `options.paths`
/// slowest satisfiable ones: the baseline the ordered search is measured against
/// (`--exhaustive`). A path without a verdict counts as satisfiable, as in [`search`].
pub fn exhaustive<C: PathChecker + 'static>(
    prepared: &Prepared,
    model: &Model,
    options: &Options,
    make_checker: &MakeChecker<C>,
) -> Result<Outcome<C::Witness>, EnumerateError> {
    let started = Instant::now();
    let rates = ModelRates::new(model, options.metric);
    rates.check(&prepared.dag)?;
    let naive = Enumerator::with_model(&prepared.dag, model, options.metric)?.next_path();
    let mut paths = Exhaustive::new(&prepared.dag)?;
    let threads = options.threads.max(1);
    with_workers(threads, make_checker, |jobs, verdicts| {
        let mut outcome = empty_outcome(naive);
        let mut in_flight: BTreeMap<u64, Candidate> = BTreeMap::new();
        let mut next_seq = 0u64;
        loop {
            while in_flight.len() < 2 * threads {
                let Some(edges) = paths.next() else { break };
                let path = rank(&prepared.dag, &rates, edges);
                let decisions = prepared.decision_edges(&path.edges);
                let job = Job {
                    seq: next_seq,
                    decisions: decisions.iter().map(|(d, _)| *d).collect(),
                    invariant: Vec::new(),
                };
                in_flight.insert(next_seq, (path, decisions));
                next_seq += 1;
                if jobs.send(job).is_err() {
                    break;
                }
            }
            if in_flight.is_empty() {
                break;
            }
            if options.timeout.is_some_and(|t| started.elapsed() >= t) {
                outcome.stop = Stop::Timeout;
                outcome.complete = false;
                break;
            }
            let (seq, verdict, _) = match verdicts.recv_timeout(Duration::from_millis(100)) {
                Ok(answer) => answer,
                Err(mpsc::RecvTimeoutError::Timeout) => continue,
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            };
            outcome.paths_checked += 1;
            let Some((path, decisions)) = in_flight.remove(&seq) else {
                continue;
            };
            let witness = match verdict {
                Verdict::Unsat { .. } => match prepared.summarised_loop_in(&path.edges) {
                    Some(header) => Err(not_refuted_through(header)),
                    None => continue,
                },
                Verdict::Sat(w) => Ok(w),
                Verdict::Unknown(why) => Err(why),
            };
            let decisions = decisions.into_iter().map(|(d, _)| d).collect();
            outcome.found.push(Found {
                path,
                decisions,
                witness,
            });
            outcome
                .found
                .sort_by(|a, b| a.path.rate.total_cmp(&b.path.rate));
            outcome.found.truncate(options.paths.max(1));
        }
        if outcome.complete && !outcome.found.is_empty() {
            outcome.stop = Stop::Found;
        }
        outcome.elapsed = started.elapsed();
        Ok(outcome)
    })
}

/// The reason given for a path not refuted because it crosses the middle iterations of the loop
/// at slot `header`.
fn not_refuted_through(header: usize) -> String {
    format!(
        "not refuted: the path runs the middle iterations of the loop at insn {header}, which \
         the checker does not follow"
    )
}

/// One past the position in `path` of the edge of `core`'s last decision (indices into
/// `decisions`, each decision with its edge): the prefix the core claims impossible; the whole
/// path where the core names none.
fn core_end(path: &RankedPath, decisions: &[(Decision, EdgeId)], core: &[usize]) -> usize {
    core.iter()
        .filter_map(|&i| decisions.get(i))
        .filter_map(|d| path.edges.iter().position(|&e| e == d.1))
        .max()
        .map_or(path.edges.len(), |last| last + 1)
}

/// The search's state on the calling thread.
struct Driver<'a, 'd, W> {
    prepared: &'a Prepared,
    invariant: &'a Invariance,
    /// Cores learned as edge sets.
    learned: u64,
    options: &'a Options,
    started: Instant,
    enumerator: &'a mut Enumerator<'d, crate::enumerate::ModelRates<'a>>,
    /// Paths handed out and not yet answered, by sequence number.
    in_flight: BTreeMap<u64, Candidate>,
    /// For each path in flight, each decision's window (`Invariance::windows`) and the position
    /// of its edge in the path: the stretches of the path its condition is the same formula on
    /// every path holding; `None` where not known.
    windows: BTreeMap<u64, Vec<Option<(Window, usize)>>>,
    /// Answered paths waiting for every earlier one.
    done: BTreeMap<u64, (Candidate, Verdict<W>)>,
    next_seq: u64,
    /// Sequence number of the first path whose verdict is not final.
    next_final: u64,
    exhausted: bool,
    outcome: Outcome<W>,
}

impl<W> Driver<'_, '_, W> {
    fn run(
        &mut self,
        jobs: &mpsc::Sender<Job>,
        verdicts: &mpsc::Receiver<Answer<W>>,
        threads: usize,
        progress: &mut impl FnMut(Event),
    ) -> Result<(), EnumerateError> {
        // Enough paths in flight to keep every worker busy while verdicts come back.
        let window = 2 * threads;
        loop {
            while !self.exhausted && self.in_flight.len() + self.done.len() < window {
                let path = match self.enumerator.next_path_within(SKIPS_BETWEEN_CHECKS) {
                    Ok(Some(path)) => path,
                    Ok(None) => {
                        self.exhausted = true;
                        break;
                    }
                    // Learned conflicts forbid the paths the search walks: keep to the limits
                    // while it looks for the next allowed one.
                    Err(Paused) => match self.limit_reached() {
                        Some(stop) => {
                            self.outcome.stop = stop;
                            self.outcome.complete = false;
                            self.outcome.bound = self.first_open_rate();
                            return Ok(());
                        }
                        None => continue,
                    },
                };
                let decisions = self.prepared.decision_edges(&path.edges);
                let windows = self.windows(&path, &decisions);
                let job = Job {
                    seq: self.next_seq,
                    decisions: decisions.iter().map(|(d, _)| *d).collect(),
                    invariant: windows.iter().map(Option::is_some).collect(),
                };
                self.windows.insert(self.next_seq, windows);
                self.in_flight.insert(self.next_seq, (path, decisions));
                self.next_seq += 1;
                if jobs.send(job).is_err() {
                    return Ok(());
                }
            }
            self.outcome.peak_memory = self.outcome.peak_memory.max(self.enumerator.memory_bytes());
            if self.in_flight.is_empty() {
                self.outcome.stop = Stop::Exhausted;
                self.outcome.bound = None;
                return Ok(());
            }
            if let Some(stop) = self.limit_reached() {
                self.outcome.stop = stop;
                self.outcome.complete = false;
                self.outcome.bound = self.first_open_rate();
                return Ok(());
            }
            let wait = Duration::from_millis(100);
            let (seq, verdict, learned) = match verdicts.recv_timeout(wait) {
                Ok(answer) => answer,
                Err(mpsc::RecvTimeoutError::Timeout) => continue,
                Err(mpsc::RecvTimeoutError::Disconnected) => return Ok(()),
            };
            self.outcome.paths_checked += 1;
            if let Some((path, decisions)) = self.in_flight.remove(&seq) {
                let windows = self.windows.remove(&seq).unwrap_or_default();
                let (verdict, learned) = match verdict {
                    Verdict::Unsat { core } => {
                        match self.summarised_before_core(&path, &decisions, &core) {
                            Some(why) => (Verdict::Unknown(why), Vec::new()),
                            None => (Verdict::Unsat { core }, learned),
                        }
                    }
                    other => (other, learned),
                };
                if let Verdict::Unsat { core } = &verdict {
                    // A learned set within the core prunes all the core's prefix would.
                    let mut covered = false;
                    for set in &learned {
                        // Each decision's window: the stretches of the path its condition is the
                        // same formula on every path holding.
                        let Some(stretches) = set
                            .iter()
                            .map(|&i| windows.get(i).cloned().flatten())
                            .collect::<Option<Vec<(Window, usize)>>>()
                        else {
                            continue;
                        };
                        let mut edges: Vec<EdgeId> = stretches
                            .iter()
                            .flat_map(|(window, end)| window.edges(&path.edges, *end))
                            .collect();
                        edges.sort_unstable();
                        edges.dedup();
                        covered |= !set.is_empty() && set.iter().all(|i| core.contains(i));
                        self.learned += 1;
                        let edges = match single_edge(&self.prepared.dag, &edges) {
                            Some(e) => vec![e],
                            None => edges,
                        };
                        self.claim(&edges, ClaimReason::Learned, &decisions);
                        self.enumerator.forbid(edges)?;
                    }
                    self.claim(&path.edges, ClaimReason::Refuted, &decisions);
                    if !covered {
                        self.prune(&path, &decisions, core)?;
                    }
                }
                self.done.insert(seq, ((path, decisions), verdict));
            }
            if self.finalize(progress) {
                self.outcome.stop = Stop::Found;
                self.outcome.bound = self.first_open_rate();
                return Ok(());
            }
        }
    }

    /// Each decision's window on `path` ([`Invariance::windows`]): a decision at an edge whose
    /// condition is the same on every path is its own window.
    fn windows(
        &self,
        path: &RankedPath,
        decisions: &[(Decision, EdgeId)],
    ) -> Vec<Option<(Window, usize)>> {
        let starts = self.invariant.windows(self.prepared, &path.edges);
        decisions
            .iter()
            .map(|&(_, e)| {
                let end = path.edges.iter().position(|&p| p == e)?;
                if self.invariant.edge(e) {
                    let own = Window {
                        heads: Vec::new(),
                        start: end,
                    };
                    return Some((own, end));
                }
                starts.get(&end).map(|window| (window.clone(), end))
            })
            .collect()
    }

    /// Why an unsatisfiable verdict on `path` proves nothing, if it does not: the path crosses a
    /// summarised loop's middle iterations before the core's last decision
    /// ([`Prepared::summarised_loop_in`]); that no run of two iterations takes the decisions
    /// after the summary says nothing of runs that iterate longer (a loop that ends by its
    /// counter needs every iteration). The path then counts as satisfiable without a witness,
    /// and nothing is pruned or learned from it.
    fn summarised_before_core(
        &self,
        path: &RankedPath,
        decisions: &[(Decision, EdgeId)],
        core: &[usize],
    ) -> Option<String> {
        let end = core_end(path, decisions, core);
        let header = self.prepared.summarised_loop_in(&path.edges[..end])?;
        Some(not_refuted_through(header))
    }

    /// Keeps a claim when the options ask for them.
    fn claim(&mut self, edges: &[EdgeId], why: ClaimReason, decisions: &[(Decision, EdgeId)]) {
        if self.options.record_claims {
            self.outcome.claims.push(Claim {
                edges: edges.to_vec(),
                why,
                path: decisions.iter().map(|(d, _)| *d).collect(),
            });
        }
    }

    /// Time or memory cap reached.
    fn limit_reached(&self) -> Option<Stop> {
        if self
            .options
            .timeout
            .is_some_and(|t| self.started.elapsed() >= t)
        {
            return Some(Stop::Timeout);
        }
        (self.enumerator.memory_bytes() > self.options.max_memory).then_some(Stop::MemoryCap)
    }

    /// Drops from the enumeration every path that starts like `path` up to the last decision of
    /// `core`: such a path executes the same instructions on the same symbolic state up to
    /// there and on to the next decision, so the core's conflict holds on it too.
    fn prune(
        &mut self,
        path: &RankedPath,
        decisions: &[(Decision, EdgeId)],
        core: &[usize],
    ) -> Result<(), EnumerateError> {
        let prefix = path.edges[..core_end(path, decisions, core)].to_vec();
        self.claim(&prefix, ClaimReason::CorePrefix, decisions);
        self.enumerator.forbid(prefix)
    }

    /// Makes verdicts final in order; true when the paths asked for are found.
    fn finalize(&mut self, progress: &mut impl FnMut(Event)) -> bool {
        let mut improved = false;
        while let Some(((path, decisions), verdict)) = self.done.remove(&self.next_final) {
            self.next_final += 1;
            let decisions = decisions.into_iter().map(|(d, _)| d).collect();
            match verdict {
                Verdict::Unsat { .. } => improved = true,
                Verdict::Sat(w) => self.outcome.found.push(Found {
                    path,
                    decisions,
                    witness: Ok(w),
                }),
                Verdict::Unknown(why) => self.outcome.found.push(Found {
                    path,
                    decisions,
                    witness: Err(why),
                }),
            }
            if self.outcome.found.len() >= self.options.paths {
                return true;
            }
        }
        if improved && self.outcome.found.is_empty() {
            let before = self.outcome.improvements.last().map(|i| i.rate);
            let rose = |rate: &f64| before.is_none_or(|b| *rate > b);
            if let Some(rate) = self.first_open_rate().filter(rose) {
                let t_s = self.started.elapsed().as_secs_f64();
                self.outcome.improvements.push(Improvement { t_s, rate });
                progress(Event::Improved {
                    rate,
                    checked: self.outcome.paths_checked,
                });
            }
        }
        false
    }

    /// The rate of the first path whose verdict is not final (or, with none handed out, the
    /// enumeration's lower bound on the paths to come): every path not yet refuted is at least
    /// this fast. Never below a bound reported before, which stays valid.
    fn first_open_rate(&mut self) -> Option<f64> {
        let open = self
            .in_flight
            .values()
            .map(|(p, _)| p.rate)
            .chain(self.done.values().map(|((p, _), _)| p.rate))
            .min_by(f64::total_cmp)
            .or_else(|| self.enumerator.next_bound())?;
        let before = self.outcome.improvements.last().map(|i| i.rate);
        Some(before.map_or(open, |b| b.max(open)))
    }
}
