//! Path checks: is a path (a list of decisions) taken by some input, and by which?
//!
//! A [`PathChecker`] is a session on one program of an object. Each [`PathChecker::check`]
//! executes the path symbolically and asks the solver whether its decisions can all hold, with
//! one assumption literal per decision: a satisfiable path yields a [`Witness`] (the shortest
//! packet that takes it, the context, the map entries to install, the action), an impossible one
//! the indices of a small set of decisions that conflict (an unsatisfiable core, shrunk by
//! dropping decisions one at a time while it stays unsatisfiable). A core is a claim about a
//! prefix: every path that takes the same decisions up to the core's last one is impossible
//! (each shrinking trial is checked with only what that prefix's execution asserts).
//! Consecutive checks share the work of their common prefix: the session keeps the machine
//! state after every decision (and the solver what was asserted along the way) and goes back to
//! the longest prefix the new path shares with the previous one.
//! Z3 contexts are per thread, so each worker thread owns its own checker.

use std::time::Duration;

use linerate_bpf::contents::{MapContents, MapSeed};
use linerate_bpf::facts::test_run_buffer::{ETH_HLEN, HEADROOM};
use linerate_bpf::Object;
use linerate_cfg::Decision;
use z3::ast::{Bool, BV};
use z3::Model;

use crate::error::SmtError;
use crate::machine::{Env, Exec, State};
use crate::replay::{replay_input, ReplayInput};
use crate::session::{Answer, Session};

/// Outcomes inside helpers tried the other way before a path counts as impossible.
const MAX_FLIPS: usize = 16;

/// Solver checks one core's shrinking makes at most: a core of hundreds of decisions (the DNS
/// label walk's) would otherwise take a check per decision, several seconds each. A core left
/// larger is still a core, it only prunes fewer paths.
const MAX_SHRINK_CHECKS: usize = 24;

/// Literals after which a checker starts over with a fresh solver: the solver keeps what every
/// earlier path asserted (guarded by literals no longer assumed), which slows its checks as it
/// grows.
pub(crate) const MAX_LITERALS: u64 = 20_000;

/// Settings of a checker.
#[derive(Clone, Debug)]
pub struct Options {
    /// Time the solver may take for one check (`None`: unlimited); a check that runs out gives
    /// [`Verdict::Unknown`].
    pub timeout: Option<Duration>,
    /// Whether to shrink unsatisfiable cores (one solver check per decision in Z3's core).
    pub minimise_cores: bool,
    /// Fixes the input packet (bytes and length) instead of leaving it symbolic: checks whether
    /// this packet takes the path, and what the program then computes.
    pub packet: Option<Vec<u8>>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            timeout: Some(Duration::from_secs(10)),
            minimise_cores: true,
            packet: None,
        }
    }
}

/// A block the path executed: the slot it starts at in program `program` of the object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct BlockRef {
    pub program: usize,
    pub slot: usize,
}

/// Inputs under which the program takes the path, and what it then does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Witness {
    /// The packet: the shortest that takes the path (at least the 14 bytes test_run accepts).
    pub packet: Vec<u8>,
    /// Whether no shorter packet takes the path (false where a check of the search for the
    /// shortest ran out of time, or where the path made choices inside helpers or callbacks,
    /// which the search keeps: the packet is then the shortest found).
    pub minimal: bool,
    /// Metadata in front of the packet: always empty (the engine starts with `data_meta ==
    /// data`, as a run without metadata does).
    pub meta: Vec<u8>,
    /// `xdp_md.ingress_ifindex` and `rx_queue_index` to give `BPF_PROG_TEST_RUN`.
    pub ingress_ifindex: u32,
    pub rx_queue_index: u32,
    /// Map entries (and global data) to install before the run, as `run --maps` takes them.
    pub maps: MapSeed,
    /// The low 32 bits of r0 at exit, and its name as `run` prints it (`XDP_DROP`, ...).
    pub return_value: u64,
    pub action: &'static str,
    /// The packet after the program's changes (`data .. data_end` at exit).
    pub output_packet: Vec<u8>,
    /// Blocks executed, in order, across tail calls.
    pub blocks: Vec<BlockRef>,
    /// Values from outside the program the path relies on (time, random numbers, routes,
    /// the CPU), which a kernel run cannot be made to repeat: `"bpf_get_prandom_u32 at insn 7
    /// = 5"`. Empty where the packet, context and maps alone decide the path.
    pub unrepeatable: Vec<String>,
    /// The routes `bpf_fib_lookup` must find for the path (`run --fib` takes them): a host route
    /// to each destination a lookup finds a route to. Empty where no lookup needs one, or where
    /// the path's lookups need answers no routing table gives (`unrepeatable` says which).
    pub routes: Vec<WitnessRoute>,
}

/// A route a witness needs: packets to `destination` leave through `ifindex` with these MAC
/// addresses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WitnessRoute {
    pub destination: std::net::IpAddr,
    pub ifindex: u32,
    pub smac: [u8; 6],
    pub dmac: [u8; 6],
}

impl Witness {
    /// The map entries per map, in `Object::maps` order (`maps` of them), as
    /// `linerate_io::encode_maps` writes them in the `run --maps` JSON shape.
    pub fn map_contents(&self, maps: usize) -> MapContents {
        let mut out: MapContents = vec![Vec::new(); maps];
        for e in self.maps.entries() {
            if let Some(entries) = out.get_mut(e.map) {
                entries.push((e.key.clone(), e.value.clone()));
            }
        }
        out
    }
}

/// The answer for one path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Some input takes the path.
    Sat(Box<Witness>),
    /// No input does; `core`: indices into the decision list of decisions that cannot all hold
    /// with what the path's execution asserts up to the decision after the core's last one, so
    /// no path that takes the decisions up to the core's last one is possible.
    Unsat { core: Vec<usize> },
    /// The solver gave up (timeout). (Outcomes chosen inside helpers that remain untried are
    /// [`SmtError::OutcomesUntried`].)
    Unknown,
}

/// The answer for a prefix of a path ([`PathChecker::check_prefix`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PrefixVerdict {
    /// Some input takes the decisions given; `exited`: the program exits after them without
    /// another decision (the prefix is a whole path).
    Holds { exited: bool },
    /// No input does; `core`: indices into the decision list of decisions that cannot all hold
    /// with what the path's execution asserts up to the decision after the core's last one, so
    /// no path that takes the decisions up to the core's last one is possible.
    Unsat { core: Vec<usize> },
    /// The solver gave up (timeout).
    Unknown,
}

/// What one check in a session found: a path's verdict, or that a prefix holds.
#[derive(Debug, PartialEq, Eq)]
enum Checked {
    Verdict(Verdict),
    /// The prefix holds; with [`Mode::Reach`], an input that takes it.
    Holds {
        exited: bool,
        input: Option<Box<ReplayInput>>,
    },
}

/// What a check in a session is of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// A whole path, with a witness where it is satisfiable.
    Path,
    /// The decisions given, the execution stopping where it needs the next one.
    Prefix,
    /// As `Prefix`, with an input that takes the decisions where they hold.
    Reach,
}

/// A session checking paths through one program of an object.
pub struct PathChecker {
    env: Env,
    options: Options,
    pub(crate) session: Session,
    program: usize,
    restarts: u64,
    /// The decisions of the previous check (their prefix is what the snapshots hold).
    pub(crate) previous: Vec<Decision>,
    /// A checker that does not follow callbacks, over-approximating them, for refuting paths
    /// through them however they go ([`crate::callbacks`]); made on first use.
    refuter: Option<Box<PathChecker>>,
}

impl PathChecker {
    /// A checker for program `program` of `object`.
    pub fn new(object: &Object, program: usize, options: Options) -> Result<PathChecker, SmtError> {
        if program >= object.programs.len() {
            return Err(SmtError::NoSuchProgram(program));
        }
        let env = Env::new(object)?;
        let session = fresh_session(&env, program, &options, false);
        Ok(PathChecker {
            env,
            options,
            session,
            program,
            previous: Vec::new(),
            restarts: 0,
            refuter: None,
        })
    }

    /// Instructions executed symbolically so far (a path sharing a prefix with the previous one
    /// executes only what follows the prefix).
    pub fn instructions_executed(&self) -> u64 {
        self.session.executed
    }

    /// Times an unknown answer made the checker retry in a fresh solver.
    pub fn restarts(&self) -> u64 {
        self.restarts
    }

    /// Solver checks made so far.
    pub fn solver_checks(&self) -> u64 {
        self.session.checks
    }

    /// Checks the path `decisions` (in execution order).
    pub fn check(&mut self, decisions: &[Decision]) -> Result<Verdict, SmtError> {
        match self.check_retrying(decisions, Mode::Path)? {
            Checked::Verdict(verdict) => Ok(verdict),
            // Only a prefix check stops short of the witness.
            Checked::Holds { .. } => Ok(Verdict::Unknown),
        }
    }

    /// Checks whether some input takes the first decisions of a path: executes the program along
    /// `decisions` up to the next place that needs a decision (or its exit) and asks the solver
    /// whether all of them can hold there. No witness is built (a check-at-every-branch search
    /// asks this at each branch); the session's prefix reuse works as for [`Self::check`], so
    /// checking a prefix and then its extensions in depth-first order redoes little.
    pub fn check_prefix(&mut self, decisions: &[Decision]) -> Result<PrefixVerdict, SmtError> {
        Ok(match self.check_retrying(decisions, Mode::Prefix)? {
            Checked::Holds { exited, .. } => PrefixVerdict::Holds { exited },
            Checked::Verdict(Verdict::Unsat { core }) => PrefixVerdict::Unsat { core },
            Checked::Verdict(_) => PrefixVerdict::Unknown,
        })
    }

    /// An input that takes the first decisions of a path ([`Self::check_prefix`] with the
    /// model's packet, map contents and context made concrete); `None` where they cannot all
    /// hold or the solver gives no answer. Values the engine keeps open (time, random numbers,
    /// helper outcomes) are not part of it: a run of the input need not take the decisions, it
    /// is only a start close to them.
    pub fn reach(&mut self, decisions: &[Decision]) -> Result<Option<ReplayInput>, SmtError> {
        Ok(match self.check_retrying(decisions, Mode::Reach)? {
            Checked::Holds { input, .. } => input.map(|i| *i),
            Checked::Verdict(_) => None,
        })
    }

    /// A check in the session, retried once in a fresh one with the general solver where it
    /// gives no verdict.
    fn check_retrying(&mut self, decisions: &[Decision], mode: Mode) -> Result<Checked, SmtError> {
        let verdict = self.check_in_session(decisions, mode)?;
        if verdict != Checked::Verdict(Verdict::Unknown) {
            return Ok(verdict);
        }
        // The incremental solver's state sometimes sends its search astray where a fresh solver
        // answers at once: retry once from scratch with the general solver before giving up.
        let (checks, executed) = (self.session.checks, self.session.executed);
        self.session = fresh_session(&self.env, self.program, &self.options, true);
        self.session.checks += checks;
        self.session.executed += executed;
        self.previous.clear();
        self.restarts += 1;
        let verdict = self.check_in_session(decisions, mode);
        let (checks, executed) = (self.session.checks, self.session.executed);
        self.session = fresh_session(&self.env, self.program, &self.options, false);
        self.session.checks += checks;
        self.session.executed += executed;
        self.previous.clear();
        verdict
    }

    /// One check in the current session, of what `mode` says.
    fn check_in_session(
        &mut self,
        decisions: &[Decision],
        mode: Mode,
    ) -> Result<Checked, SmtError> {
        let prefix = mode != Mode::Path;
        if self.session.literals_made() > MAX_LITERALS {
            let (checks, executed) = (self.session.checks, self.session.executed);
            self.session = fresh_session(&self.env, self.program, &self.options, false);
            self.session.checks += checks;
            self.session.executed += executed;
            self.previous.clear();
        }
        let common = self
            .previous
            .iter()
            .zip(decisions)
            .take_while(|(a, b)| a == b)
            .count();
        self.previous = decisions.to_vec();
        let mut start = common.min(self.session.depth());
        let (mut forced, mut flipped): (Vec<bool>, Vec<bool>) = (Vec::new(), Vec::new());
        let (mut refuted, mut prefer_calls) = (false, true);
        // The furthest decision the refutations of the outcome combinations tried reach.
        let mut reach: Option<usize> = None;
        for _ in 0..MAX_FLIPS {
            let state = self.session.rewind(start);
            let mut exec = Exec {
                env: &self.env,
                session: &mut self.session,
                decisions,
                forced: &forced,
                prefer_calls,
                s: state,
            };
            // A failure the execution met after decisions that cannot all hold (a helper's
            // outcome chosen on an impossible prefix, say) is no failure of a possible path:
            // the solver decides which it is.
            let (finished, failure) = match exec.run() {
                Ok(finished) => (Some(finished), None),
                Err(SmtError::PathEnds { .. }) if prefix => (None, None),
                Err(
                    e @ (SmtError::Unsupported { .. } | SmtError::Memory { .. } | SmtError::Sem(_)),
                ) => (None, Some(e)),
                Err(e) => return Err(e),
            };
            let state = exec.s;
            if failure.is_none() && state.next != decisions.len() {
                return Err(SmtError::PathTooLong {
                    used: state.next,
                    given: decisions.len(),
                });
            }
            let mut assumptions = self.session.lits.clone();
            let decided = assumptions.len();
            assumptions.extend(state.choices.iter().cloned());
            let answer = self.session.check(&assumptions);
            if let (Some(e), Answer::Sat(_) | Answer::Unknown) = (failure, &answer) {
                return Err(e);
            }
            match answer {
                Answer::Unknown => return Ok(Checked::Verdict(Verdict::Unknown)),
                Answer::Sat(model) => {
                    let finished = match finished {
                        Some(finished) if !prefix => finished,
                        stopped => {
                            let exited = stopped.is_some();
                            let input = (mode == Mode::Reach)
                                .then(|| Box::new(replay_input(&self.env.object, &state, &model)));
                            return Ok(Checked::Holds { exited, input });
                        }
                    };
                    let (model, minimal) = self.shortest(&assumptions, &state, model);
                    let model = self.plain_context(&assumptions, &state, model);
                    let mut witness = self.witness(&state, &finished.r0, &model);
                    // The search for the shortest packet keeps the outcomes chosen inside
                    // helpers and callbacks; others might allow a shorter one.
                    witness.minimal = minimal && state.chosen.is_empty();
                    return Ok(Checked::Verdict(Verdict::Sat(Box::new(witness))));
                }
                Answer::Unsat { core, segment } => {
                    // An outcome chosen inside a helper before the core's last decision may have
                    // made what the execution computed for the core's conditions, even where the
                    // core does not name the choice: a callback's steered it, and any other
                    // whose other outcome was possible is baked into the state (a buffer a
                    // failed load left as it was makes a comparison with it a constant). Such
                    // choices count, as do those the core names. Try the other outcome of the
                    // latest such choice not tried both ways yet. A choice made before decision
                    // `k` acts on the decisions from `k` on and on what the execution asserts
                    // from segment `k` on: it counts where the core needs either.
                    let last = core.iter().filter(|&&i| i < decided).max().copied();
                    let influenced = last.max(segment);
                    let involved = |j: usize| {
                        core.contains(&(decided + j))
                            || (state.implicit.contains(&j)
                                && influenced.is_some_and(|end| state.chosen[j].1 <= end))
                    };
                    reach = reach.max(claim_end(&core, decided, segment, &state.chosen));
                    let choice = (0..state.chosen.len())
                        .filter(|&j| involved(j))
                        .filter(|&j| !flipped.get(j).copied().unwrap_or(false))
                        .max();
                    if choice.is_some() && state.called_back && !refuted {
                        refuted = true;
                        if let Some(core) = self.refute(decisions) {
                            return Ok(Checked::Verdict(Verdict::Unsat { core }));
                        }
                    }
                    if choice.is_some() && state.called_back && prefer_calls {
                        // The most calls do not take the path: the first outcomes it allows,
                        // before trying others.
                        prefer_calls = false;
                        forced.clear();
                        flipped.clear();
                        if let Some(&(_, first)) = state.chosen.first() {
                            start = start.min(first);
                        }
                        self.previous.clear();
                        continue;
                    }
                    let Some(j) = choice else {
                        let core = if (0..state.chosen.len()).any(involved) {
                            // Every outcome of the choices involved was tried, each refuted
                            // through decision `reach` at the latest: every path that takes the
                            // decisions up to there is impossible (it makes the same choices
                            // there, and each combination of their outcomes was refuted), not
                            // the decisions alone (the core names choices, or rests on them).
                            match reach {
                                Some(end) => {
                                    (0..=end.min(decisions.len().saturating_sub(1))).collect()
                                }
                                None => (0..decisions.len()).collect(),
                            }
                        } else {
                            self.core(&assumptions, decided, decisions.len(), core, segment)
                        };
                        return Ok(Checked::Verdict(Verdict::Unsat { core }));
                    };
                    forced = state.chosen[..j].iter().map(|c| c.0).collect();
                    forced.push(!state.chosen[j].0);
                    flipped.resize(j, false);
                    flipped.push(true);
                    start = state.chosen[j].1.min(start);
                }
            }
        }
        // Out of tries before every combination of the outcomes involved was refuted: one not
        // tried may take the path.
        Err(SmtError::OutcomesUntried { tries: MAX_FLIPS })
    }

    /// An unsatisfiable core of `decisions` that holds however the path's callbacks go (the
    /// refuter's, which does not follow them); `None` where it finds the path possible or gives
    /// no answer.
    fn refute(&mut self, decisions: &[Decision]) -> Option<Vec<usize>> {
        if self.env.abstract_callbacks {
            return None;
        }
        if self.refuter.is_none() {
            let mut refuter =
                PathChecker::new(&self.env.object, self.program, self.options.clone()).ok()?;
            refuter.env.abstract_callbacks = true;
            self.refuter = Some(Box::new(refuter));
        }
        let refuter = self.refuter.as_mut()?;
        let before = refuter.session.checks;
        let verdict = refuter.check_prefix(decisions);
        self.session.checks += refuter.session.checks.saturating_sub(before);
        match verdict {
            Ok(PrefixVerdict::Unsat { core }) => Some(core),
            _ => None,
        }
    }

    /// Decision indices of an unsatisfiable core, shrunk where the options say so. A core that
    /// involves an outcome chosen inside a helper is widened to every decision: that choice was
    /// the machine's, not the path's, so only the whole path is known to be impossible.
    ///
    /// The core is a claim about a prefix: the path's decisions up to the core's last one, with
    /// what the execution asserts up to the next decision, are already impossible (the search
    /// prunes every path with that prefix). So a core that needs segment `k` (asserted after
    /// decision `k - 1`) reaches decision `k - 1`, and each trial of the shrinking is checked
    /// with only the segments its own last decision's prefix shares
    /// ([`Session::check_through`]): checked with the whole path's, dropping a core's later
    /// decisions could keep a conflict that needs what they brought in (a packet access's bounds
    /// asserted after them) and claim it for a shorter prefix.
    ///
    /// `decided`: the decisions the execution took (the first assumptions; the rest are
    /// choices), of the path's `decisions`.
    fn core(
        &mut self,
        assumptions: &[Bool],
        decided: usize,
        decisions: usize,
        core: Vec<usize>,
        segment: Option<usize>,
    ) -> Vec<usize> {
        if core.iter().any(|&i| i >= decided) {
            return (0..decisions).collect();
        }
        let core = reaching(core, segment.filter(|&k| k <= decided));
        if self.options.minimise_cores {
            return self.shrink(assumptions, core);
        }
        core
    }

    /// A smaller core within `core` (decision indices, ascending, impossible through the last
    /// one), found by deletion: the latest decisions are tried for removal first (a core that
    /// ends earlier prunes more paths). A single decision is as small as a core gets (dropping it
    /// would ask whether the path's other constraints alone conflict, a satisfiable and costly
    /// check).
    ///
    /// Two things spare checks, each of which can take a second on a long path:
    /// - A refuted trial gives its own core, which can leave out more than the decision tried.
    /// - Once a decision is known to be needed (the rest without it is possible), the needed
    ///   ones are tried alone: a core is often a decision or two late on the path, whose
    ///   earlier candidates would otherwise each take a check to drop.
    ///
    /// The candidates and needed decisions together are always a set shown impossible through
    /// its last decision, with the segments up to there ([`Session::check_through`]); a trial
    /// replaces them only where it is.
    fn shrink(&mut self, assumptions: &[Bool], core: Vec<usize>) -> Vec<usize> {
        // Decisions not yet tried, and those known to be needed (both ascending).
        let (mut candidates, mut needed) = (core, Vec::<usize>::new());
        let mut checks = 0;
        while checks < MAX_SHRINK_CHECKS && candidates.len() + needed.len() > 1 {
            let Some(tried) = candidates.pop() else {
                break;
            };
            let mut trial: Vec<usize> = candidates.iter().chain(&needed).copied().collect();
            trial.sort_unstable();
            checks += 1;
            match self.refuted_through(assumptions, &trial) {
                // The needed decisions stay whatever the solver's core says: a superset of a
                // core is still one.
                Some(refined) => {
                    candidates = refined
                        .into_iter()
                        .filter(|d| !needed.contains(d))
                        .collect()
                }
                None => {
                    let at = needed.partition_point(|&d| d < tried);
                    needed.insert(at, tried);
                    if candidates.is_empty() || checks >= MAX_SHRINK_CHECKS {
                        continue;
                    }
                    checks += 1;
                    if self.refuted_through(assumptions, &needed).is_some() {
                        candidates.clear();
                    }
                }
            }
        }
        candidates.extend(needed);
        candidates.sort_unstable();
        candidates
    }

    /// Whether the decisions `trial` (ascending) are impossible through the last of them; if so,
    /// the subset the solver's core names, extended to the decision before the latest segment it
    /// needs (a claim through an earlier decision would not have asserted that segment).
    fn refuted_through(&mut self, assumptions: &[Bool], trial: &[usize]) -> Option<Vec<usize>> {
        let &through = trial.last()?;
        let literals: Vec<Bool> = trial.iter().map(|&d| assumptions[d].clone()).collect();
        let Answer::Unsat { core, segment } = self.session.check_through(&literals, through) else {
            return None;
        };
        Some(reaching(core.iter().map(|&i| trial[i]).collect(), segment))
    }

    /// A model of the path whose packet is as short as possible, and whether that is proven
    /// (a check ran out of time otherwise). The first guess is the end of the furthest packet
    /// access under the first model (the length usually matters through bounds checks alone),
    /// then one check that a byte less is impossible, then binary search if it was not.
    fn shortest(&mut self, assumptions: &[Bool], state: &State, model: Model) -> (Model, bool) {
        let len = &state.inputs.packet_len;
        let eval = |m: &Model, bv: &BV| m.eval(bv, true).and_then(|v| v.as_u64());
        let length = |m: &Model| eval(m, len).unwrap_or(ETH_HLEN);
        let (mut lo, mut hi) = (ETH_HLEN, length(&model));
        let guess = state
            .packet_ends
            .iter()
            .filter_map(|end| eval(&model, end))
            .max()
            .map_or(lo, |end| end.saturating_sub(HEADROOM).max(lo));
        let mut best = model;
        let mut trials = vec![guess, hi.saturating_sub(1)];
        loop {
            let mid = match trials.pop() {
                _ if lo >= hi => return (best, true),
                Some(t) if t >= lo && t < hi => t,
                Some(_) => continue,
                None => lo + (hi - lo) / 2,
            };
            let mut trial = assumptions.to_vec();
            trial.push(len.bvule(BV::from_u64(mid, 64)));
            match self.session.check(&trial) {
                Answer::Sat(m) => {
                    hi = length(&m).min(mid);
                    best = m;
                    trials.push(hi.saturating_sub(1));
                }
                Answer::Unsat { .. } => lo = mid + 1,
                Answer::Unknown => return (best, false),
            }
        }
    }

    /// The model with the context of a run without one (the loopback device, queue 0; what
    /// `linerate run` and `BPF_PROG_TEST_RUN` give by default) where the path allows it, with
    /// the packet no longer.
    fn plain_context(&mut self, assumptions: &[Bool], state: &State, model: Model) -> Model {
        let inputs = &state.inputs;
        let c = |v: u64| BV::from_u64(v, 64);
        let Some(len) = model.eval(&inputs.packet_len, true) else {
            return model;
        };
        let context = [
            inputs
                .ingress_ifindex
                .eq(c(crate::host::LOOPBACK_IFINDEX.into())),
            inputs.rx_queue_index.eq(c(0)),
        ];
        // Then what a replay repeats (an empty ring buffer, CPU 0), where the path allows it.
        let replay = crate::replay::preferences(state);
        let mut trials = vec![[&context[..], &replay[..]].concat()];
        if !replay.is_empty() {
            trials.push(replay);
            trials.push(context.to_vec());
        }
        for extra in trials {
            let mut trial = assumptions.to_vec();
            trial.extend(extra);
            trial.push(inputs.packet_len.eq(&len));
            if let Answer::Sat(m) = self.session.check(&trial) {
                return m;
            }
        }
        model
    }

    fn witness(&self, state: &State, r0: &crate::value::SymValue, model: &Model) -> Witness {
        let value = |bv: &BV| crate::replay::model_u64(model, bv);
        let input = replay_input(&self.env.object, state, model);
        let mut memory = state.packet.clone();
        let (data, end) = (
            value(&state.bounds.data.bits.bv()),
            value(&state.bounds.data_end.bits.bv()),
        );
        let output_packet = (data..end.max(data))
            .map(|o| match memory.byte(&crate::value::Bits::Const(o)) {
                crate::memory::Byte::Const(b) => b,
                crate::memory::Byte::Sym(bv) => value(&bv) as u8,
                crate::memory::Byte::Pointer { .. } => 0,
            })
            .collect();
        let return_value = value(&r0.bits.bv()) & 0xffff_ffff;
        let unrepeatable = crate::replay::unrepeatable(&self.env, state, model);
        Witness {
            packet: input.packet,
            minimal: true,
            meta: Vec::new(),
            ingress_ifindex: input.ingress_ifindex,
            rx_queue_index: input.rx_queue_index,
            maps: input.maps,
            return_value,
            action: linerate_bpf::facts::xdp::action_name(return_value),
            output_packet,
            blocks: state
                .blocks
                .iter()
                .map(|&(program, slot)| BlockRef { program, slot })
                .collect(),
            unrepeatable,
            routes: crate::replay::routes(state, model).unwrap_or_default(),
        }
    }
}

/// `core` (decision indices, ascending) extended to the decision before `segment` where it ends
/// earlier: a core needing segment `k` (asserted after decision `k - 1`) is a claim through
/// decision `k - 1` at least.
fn reaching(mut core: Vec<usize>, segment: Option<usize>) -> Vec<usize> {
    if let Some(before) = segment.and_then(|k| k.checked_sub(1)) {
        if core.last().is_none_or(|&last| last < before) {
            core.push(before);
        }
    }
    core
}

/// The last decision the claim of an unsatisfiable answer reaches (`None`: none, the entry's
/// execution alone): the last decision of `core`, the one before the last segment it needs
/// (segment `k` is what the execution asserted after decision `k - 1`), and the one before each
/// choice it names (a choice made before decision `k`). `core` holds indices into the
/// assumptions: the `decided` decisions, then the choices.
fn claim_end(
    core: &[usize],
    decided: usize,
    segment: Option<usize>,
    chosen: &[(bool, usize)],
) -> Option<usize> {
    let decisions = core.iter().filter(|&&i| i < decided).copied();
    let choices = core
        .iter()
        .filter_map(|&i| i.checked_sub(decided))
        .filter_map(|j| chosen.get(j))
        .filter_map(|&(_, before)| before.checked_sub(1));
    let segment = segment.and_then(|k| k.checked_sub(1));
    decisions.chain(choices).chain(segment).max()
}

/// A solver session at the entry of `program`, its inputs constrained.
fn fresh_session(env: &Env, program: usize, options: &Options, general: bool) -> Session {
    let mut session = Session::new(options.timeout, general);
    let mut entry = State::entry(env, program, &mut session);
    if let Some(packet) = &options.packet {
        entry.fix_packet(&mut session, packet);
    }
    session.snapshot(&entry);
    session
}

/// Checks one path of program `program` of `object` in a fresh session (see [`PathChecker`] to
/// check many).
pub fn check(
    object: &Object,
    program: usize,
    decisions: &[Decision],
    options: &Options,
) -> Result<Verdict, SmtError> {
    PathChecker::new(object, program, options.clone())?.check(decisions)
}
