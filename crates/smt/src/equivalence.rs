//! Whole-program equivalence: whether a candidate program computes the same observable outcome
//! as the original on every input (paper 002 §4; `linerate optimize`'s final proof for loop-free
//! programs, where windows ([`crate::WindowChecker`]) prove one rewrite at a time).
//!
//! Both programs run through the path machine (`crate::machine`: `linerate_sem::step` over
//! symbolic values, memory, maps and helpers) in one solver session, on the SAME inputs: the
//! packet's bytes and length, the context fields, the maps' initial contents. The search is
//! depth-first over pairs of paths: the original's paths first, and under each one the
//! candidate's, continuing the same session, so that the shared prefixes' work (the session's
//! snapshots, `crate::session`) is done once and a branch of the candidate that contradicts the
//! original's path is pruned by one check. At the end of each pair, the solver is asked for an
//! input on which the two outcomes differ ([`outcome`]): the return value (low 32 bits, the XDP
//! action), the packet (`data_meta`, `data` and `data_end`, and every byte between: one
//! symbolic offset stands for all of them), every key either program accessed in a map it may
//! write (presence and every value byte, the contents at the end as functions of the initial
//! contents and the writes), and the redirect target where the action is `XDP_REDIRECT`. One
//! such input is a [`EquivalenceCounterexample`]; none for every pair of paths is a proof.
//!
//! How the two runs share their inputs: the candidate starts from the original's entry state,
//! with the original's *reads* of the initial packet and map contents, each map's accessed keys
//! with their initial presence and slot (`SymMap::initial`), so an equal key or offset reads
//! equal initial bytes in both runs. Outcomes chosen inside helpers (a redirect's success, a
//! head adjustment's) are search branches like the jumps: each one free in a run is tried the
//! other way as its own item. Values from outside the programs (time, random numbers, routes)
//! are shared in order of their reading: the n-th of the candidate is the original's n-th, and a
//! pair of paths reading them in another order or number is unknown.
//!
//! Loops need nothing of their own: each iteration's jump is one more decision of the path, and
//! the verifier bounds every loop of a program it accepts, so the search is finite (the machine
//! gives up on a path of more than a million instructions); the search's own bound is
//! `max_paths` pairs and [`STEPS_PER_PATH`] times as many runs to a decision.
//!
//! Unknown ([`Equivalence::Unknown`], never equivalent by default): `may_goto` loops, tail calls, `bpf_loop` and `bpf_for_each_map_elem` callbacks, ring buffers, perf
//! event output, queues and stacks, trace output, maps of maps (which the comparison of map
//! contents does not cover), anything the path machine does not model, more
//! pairs of paths than [`EquivalenceOptions::max_paths`], and solver timeouts.
//!
//! The inputs are the path machine's: single-buffer packets of 14 to `MAX_DATA` (3520) bytes
//! without metadata, and the context `BPF_PROG_TEST_RUN` accepts on this host. Two programs that
//! differ only on longer (multi-buffer) frames are proven equivalent: the final differential
//! test must cover those.
//!
//! Whether the candidate is safe is not checked here: like the path checker, the machine
//! assumes what the verifier proves of a program it accepts (every access within its region),
//! so inputs on which the candidate would fault are assumed away. The optimizer's safety checks
//! and the kernel's verifier accept a candidate before this proof means anything.

mod outcome;

use std::time::{Duration, Instant};

use linerate_bpf::contents::MapSeed;
use linerate_bpf::facts::helper;
use linerate_bpf::insn::{CallTarget, Instruction};
use linerate_bpf::Object;
use linerate_cfg::Decision;
use z3::ast::{Bool, BV};

use crate::error::SmtError;
use crate::machine::{Env, Exec, State};
use crate::maps::SymMap;
use crate::session::{Answer, Session};
use crate::value::SymValue;

/// Pairs of paths compared after which the search starts over with a fresh solver: each
/// comparison asserts the pair's outcomes (a count-min sketch's every counter), which slow every
/// later check (xdp_cms_d10: 20 pairs in 19 s, 40 in 105 s in one solver).
const PAIRS_PER_SOLVER: usize = 8;

/// Settings of [`check_equivalence`].
#[derive(Clone, Debug)]
pub struct EquivalenceOptions {
    /// Time the solver may take for one check (`None`: unlimited); a check that runs out makes
    /// the answer [`Equivalence::Unknown`].
    pub timeout: Option<Duration>,
    /// Pairs of paths (an original path and a candidate path under it) compared before giving
    /// up with [`Equivalence::Unknown`].
    pub max_paths: usize,
    /// Wall time the whole check may take (`None`: unlimited); beyond it the answer is
    /// [`Equivalence::Unknown`].
    pub total: Option<Duration>,
}

impl Default for EquivalenceOptions {
    fn default() -> Self {
        EquivalenceOptions {
            timeout: Some(Duration::from_secs(10)),
            max_paths: 4096,
            total: None,
        }
    }
}

/// The answer of [`check_equivalence`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Equivalence {
    /// Every input gives both programs the same observable outcome.
    Equivalent {
        /// Pairs of paths compared (an original path and a candidate path under it).
        paths: usize,
    },
    /// A concrete input on which they differ, replayable in the interpreter.
    Different(Box<EquivalenceCounterexample>),
    /// Outside what can be decided: the reason, naming the feature and the slot.
    Unknown(String),
}

/// An input on which the two programs' outcomes differ, in the terms `linerate run` takes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EquivalenceCounterexample {
    pub packet: Vec<u8>,
    /// Map entries (and global data) to install before the run.
    pub maps: MapSeed,
    /// `xdp_md.ingress_ifindex` and `rx_queue_index`.
    pub ingress_ifindex: u32,
    pub rx_queue_index: u32,
    /// The return values (low 32 bits) the formulas give the original and the candidate.
    pub original_return: u64,
    pub candidate_return: u64,
    /// What differs on this input: `"return value"`, `"packet"`, `"map `name`"`, `"redirect"`.
    pub differs: Vec<String>,
    /// Values from outside the programs the difference relies on (time, random numbers), which
    /// a replay cannot be made to repeat; empty where the input alone decides it.
    pub unrepeatable: Vec<String>,
}

/// Whether program `program` of `candidate` computes the same observable outcome as that of
/// `original` on every input. `candidate` is `original` with that program's instructions
/// replaced (the same maps and other programs).
///
/// ```
/// use linerate_bpf::insn::build::{add64, exit, mov64, mov64_reg};
/// use linerate_bpf::Object;
/// use linerate_smt::{check_equivalence, Equivalence, EquivalenceOptions};
///
/// // r2 = 1; r0 = r2; r0 += 1 (XDP_PASS) against r0 = 1; r0 += 1, and against r0 = 3 (XDP_TX).
/// let original = Object::single("a", &[mov64(2, 1), mov64_reg(0, 2), add64(0, 1), exit()], vec![]);
/// let same = Object::single("a", &[mov64(0, 1), add64(0, 1), exit()], vec![]);
/// let other = Object::single("a", &[mov64(0, 3), exit()], vec![]);
/// let options = EquivalenceOptions::default();
/// assert!(matches!(
///     check_equivalence(&original, &same, 0, &options)?,
///     Equivalence::Equivalent { .. }
/// ));
/// let Equivalence::Different(cex) = check_equivalence(&original, &other, 0, &options)? else {
///     panic!("XDP_PASS is not XDP_TX");
/// };
/// assert_eq!((cex.original_return, cex.candidate_return), (2, 3));
/// assert_eq!(cex.differs, ["return value"]);
/// # Ok::<(), linerate_smt::SmtError>(())
/// ```
pub fn check_equivalence(
    original: &Object,
    candidate: &Object,
    program: usize,
    options: &EquivalenceOptions,
) -> Result<Equivalence, SmtError> {
    for object in [original, candidate] {
        if program >= object.programs.len() {
            return Err(SmtError::NoSuchProgram(program));
        }
    }
    if let Some(why) = different_maps(original, candidate) {
        return Ok(Equivalence::Unknown(why));
    }
    let envs = [Env::new(original)?, Env::new(candidate)?];
    for (env, which) in envs.iter().zip(["original", "candidate"]) {
        if let Some(why) = unsupported(env, program) {
            return Ok(Equivalence::Unknown(format!("{which}: {why}")));
        }
    }
    let [original, candidate] = envs;
    let mut search = Search::new(original, candidate, program, options);
    search.run()
}

/// Why the two objects' maps cannot be compared (they must be the same maps).
fn different_maps(original: &Object, candidate: &Object) -> Option<String> {
    if original.maps.len() != candidate.maps.len() {
        return Some(format!(
            "the candidate has {} maps, the original {}",
            candidate.maps.len(),
            original.maps.len()
        ));
    }
    original
        .maps
        .iter()
        .zip(&candidate.maps)
        .find(|(a, b)| a != b)
        .map(|(a, _)| format!("map `{}` differs between the objects", a.name))
}

/// A feature of program `program` the check does not decide, naming it and its slot.
fn unsupported(env: &Env, program: usize) -> Option<String> {
    let name = &env.object.programs[program].name;
    match env.cfgs.get(program) {
        Some(Ok(_)) => {}
        Some(Err(e)) => return Some(format!("program `{name}`: {e}")),
        None => return Some(format!("no program {program}")),
    }
    for (slot, insn) in env.slots[program].iter().enumerate() {
        let why = match insn {
            Some(Instruction::MayGoto { .. }) => "a loop budget (may_goto)",
            Some(Instruction::Call(CallTarget::Helper(id))) => match *id {
                helper::TAIL_CALL => "a tail call",
                helper::LOOP | helper::FOR_EACH_MAP_ELEM => "a callback helper",
                helper::PERF_EVENT_OUTPUT
                | helper::RINGBUF_OUTPUT
                | helper::RINGBUF_RESERVE
                | helper::RINGBUF_SUBMIT
                | helper::RINGBUF_DISCARD
                | helper::RINGBUF_QUERY => "a record output (ring buffer or perf event)",
                helper::MAP_PUSH_ELEM | helper::MAP_POP_ELEM | helper::MAP_PEEK_ELEM => {
                    "a queue or stack operation"
                }
                helper::TRACE_PRINTK => "trace output",
                _ => continue,
            },
            Some(Instruction::Call(CallTarget::Kfunc(_))) => "a kfunc call",
            _ => continue,
        };
        let helper = match insn {
            Some(Instruction::Call(CallTarget::Helper(id))) => {
                format!(" ({})", linerate_bpf::helpers::helper_name(*id))
            }
            _ => String::new(),
        };
        return Some(format!(
            "program `{name}` insn {slot}: {why}{helper} is not compared"
        ));
    }
    None
}

/// One item of the depth-first search: a prefix of a pair of paths.
#[derive(Clone, Debug)]
struct Item {
    /// The original's decisions, then (after `split`) the candidate's.
    decisions: Vec<Decision>,
    /// Outcomes of the first choices inside helpers (both runs' in one sequence).
    forced: Vec<bool>,
    /// `Some(k)`: `decisions[..k]` is a whole path of the original, the rest the candidate's.
    split: Option<usize>,
    /// The last decision repeats one of the original's (the same condition, the same way):
    /// the prefix is as possible as the one before it, which was checked.
    repeated: bool,
}

/// The end of the original's current path.
struct OriginalEnd {
    decisions: Vec<Decision>,
    chosen: Vec<bool>,
    state: State,
    r0: SymValue,
}

/// What visiting an item found.
enum Visit {
    /// Go on with the search.
    Continue,
    /// The answer.
    Answer(Equivalence),
}

struct Search {
    envs: [Env; 2],
    program: usize,
    options: EquivalenceOptions,
    session: Session,
    entry: State,
    previous: Vec<Decision>,
    previous_chosen: Vec<(bool, usize)>,
    end: Option<OriginalEnd>,
    pairs: usize,
    /// Search items visited, bounded by [`STEPS_PER_PATH`] times `max_paths`.
    visits: usize,
    /// `pairs` when the solver was last started afresh.
    restarted_at: usize,
    names: u64,
}

/// Search items (runs to the next decision) a search may visit per pair of paths it may compare:
/// a loop's iterations are decisions too, and a search that spends them without reaching the
/// end of pairs gives up as it does beyond `max_paths` pairs.
const STEPS_PER_PATH: usize = 64;

/// Which program a run executes.
const ORIGINAL: usize = 0;
const CANDIDATE: usize = 1;
const WHICH: [&str; 2] = ["original", "candidate"];

impl Search {
    fn new(original: Env, candidate: Env, program: usize, options: &EquivalenceOptions) -> Search {
        let envs = [original, candidate];
        let (session, entry) = fresh_session(&envs[ORIGINAL], program, options);
        Search {
            envs,
            program,
            options: options.clone(),
            session,
            entry,
            previous: Vec::new(),
            previous_chosen: Vec::new(),
            end: None,
            pairs: 0,
            visits: 0,
            restarted_at: 0,
            names: 0,
        }
    }

    fn run(&mut self) -> Result<Equivalence, SmtError> {
        let mut stack = vec![Item {
            decisions: Vec::new(),
            forced: Vec::new(),
            split: None,
            repeated: false,
        }];
        let started = Instant::now();
        while let Some(item) = stack.pop() {
            if let Some(total) = self.options.total.filter(|&t| started.elapsed() > t) {
                return Ok(Equivalence::Unknown(format!(
                    "the check ran out of its {:.1} s ({} pairs of paths compared)",
                    total.as_secs_f64(),
                    self.pairs
                )));
            }
            self.visits += 1;
            if self.visits > self.options.max_paths.saturating_mul(STEPS_PER_PATH) {
                return Ok(Equivalence::Unknown(format!(
                    "more than {} search steps ({} pairs of paths compared)",
                    self.options.max_paths.saturating_mul(STEPS_PER_PATH),
                    self.pairs
                )));
            }
            if let Visit::Answer(answer) = self.visit(&item, &mut stack)? {
                return Ok(answer);
            }
        }
        Ok(Equivalence::Equivalent { paths: self.pairs })
    }

    /// Runs `item` as far as the next decision (or the end of the pair) and pushes what follows.
    fn visit(&mut self, item: &Item, stack: &mut Vec<Item>) -> Result<Visit, SmtError> {
        if self.session.literals_made() > crate::checker::MAX_LITERALS
            || self.pairs >= self.restarted_at + PAIRS_PER_SOLVER
        {
            self.restarted_at = self.pairs;
            let (session, entry) = fresh_session(&self.envs[ORIGINAL], self.program, &self.options);
            let (checks, executed) = (self.session.checks, self.session.executed);
            self.session = session;
            self.session.checks = checks;
            self.session.executed = executed;
            self.entry = entry;
            self.previous.clear();
            self.previous_chosen.clear();
            self.end = None;
        }
        let common = self
            .previous
            .iter()
            .zip(&item.decisions)
            .take_while(|(a, b)| a == b)
            .count();
        let mut start = common.min(self.session.depth());
        // A choice forced otherwise than the previous run made it: back to before it.
        if let Some(j) = (0..item.forced.len())
            .find(|&j| self.previous_chosen.get(j).map(|c| c.0) != Some(item.forced[j]))
        {
            if let Some(&(_, before)) = self.previous_chosen.get(j) {
                start = start.min(before);
            }
        }
        self.previous = item.decisions.clone();
        let cached = match (item.split, &self.end) {
            (Some(k), Some(end)) => {
                start > k
                    && item.decisions.get(..k) == Some(&end.decisions[..])
                    && item.forced.len() >= end.chosen.len()
                    && end.chosen[..] == item.forced[..end.chosen.len()]
            }
            _ => false,
        };
        if let (Some(k), false) = (item.split, cached) {
            start = start.min(k);
        }
        let state = self.session.rewind(start);
        let state = if cached {
            state
        } else {
            let decisions = match item.split {
                Some(k) => item.decisions.get(..k).unwrap_or(&item.decisions),
                None => &item.decisions[..],
            };
            let mut exec = Exec {
                env: &self.envs[ORIGINAL],
                session: &mut self.session,
                decisions,
                forced: &item.forced,
                prefer_calls: true,
                s: state,
            };
            let result = exec.run();
            let s = exec.s;
            let finished = match result {
                Ok(finished) => finished,
                Err(e) => return self.stopped(item, s, ORIGINAL, e, None, stack),
            };
            self.end = Some(OriginalEnd {
                decisions: decisions.to_vec(),
                chosen: s.chosen.iter().map(|c| c.0).collect(),
                state: s.clone(),
                r0: finished.r0,
            });
            match candidate_entry(&self.entry, &s, &self.envs[ORIGINAL].object) {
                Ok(state) => state,
                Err(why) => return Ok(Visit::Answer(Equivalence::Unknown(why))),
            }
        };
        let Some(end) = &self.end else {
            return Ok(Visit::Answer(Equivalence::Unknown(
                "internal: the original's path was lost".into(),
            )));
        };
        let (k, original_choices) = (end.decisions.len(), end.chosen.len());
        let mut exec = Exec {
            env: &self.envs[CANDIDATE],
            session: &mut self.session,
            decisions: &item.decisions,
            forced: &item.forced,
            prefer_calls: true,
            s: state,
        };
        let result = exec.run();
        let s = exec.s;
        let item = Item {
            split: Some(k),
            ..item.clone()
        };
        match result {
            Ok(finished) => {
                self.alternatives(&item, &s, original_choices, stack);
                self.previous_chosen = s.chosen.clone();
                self.compare(s, finished.r0)
            }
            Err(e) => self.stopped(&item, s, CANDIDATE, e, Some(original_choices), stack),
        }
    }

    /// A run of `which` stopped before its end: at a decision to take (push both ways), or at a
    /// failure (which counts only where the path so far is possible).
    fn stopped(
        &mut self,
        item: &Item,
        s: State,
        which: usize,
        e: SmtError,
        original_choices: Option<usize>,
        stack: &mut Vec<Item>,
    ) -> Result<Visit, SmtError> {
        self.alternatives(item, &s, original_choices.unwrap_or(usize::MAX), stack);
        self.previous_chosen = s.chosen.clone();
        let mut assumptions = self.session.lits.clone();
        assumptions.extend(s.choices.iter().cloned());
        // A prefix whose last decision repeats the original's needs no check to go on (the
        // pair's final check has every decision): only a failure's possibility is checked.
        let repeated = item.repeated && matches!(e, SmtError::PathEnds { .. });
        let answer = if repeated {
            None
        } else {
            Some(self.session.check(&assumptions))
        };
        match answer.unwrap_or(Answer::Unknown) {
            _ if repeated => {}
            Answer::Unsat { .. } => return Ok(Visit::Continue),
            Answer::Unknown => {
                return Ok(Visit::Answer(Equivalence::Unknown(format!(
                    "the solver gave up on a path of the {} after {} decisions{}",
                    WHICH[which],
                    item.decisions.len(),
                    self.reason()
                ))))
            }
            Answer::Sat(_) => {}
        }
        let pc = match e {
            SmtError::PathEnds { pc, .. } => pc,
            e => {
                return Ok(Visit::Answer(Equivalence::Unknown(format!(
                    "{}: {e}",
                    WHICH[which]
                ))))
            }
        };
        let insn = self.envs[which]
            .slots
            .get(self.program)
            .and_then(|p| p.get(pc))
            .copied()
            .flatten();
        let (ways, repeated): (&[bool], bool) = match insn {
            // A jump to the next slot goes there either way (the machine takes it as not taken).
            Some(Instruction::Jump { off: 0, .. }) => (&[false], true),
            Some(insn @ Instruction::Jump { .. }) => {
                match self.implied(item, &s, which, pc, &insn) {
                    Some(true) => (&[true], true),
                    Some(false) => (&[false], true),
                    None => (&[false, true], false),
                }
            }
            _ => {
                return Ok(Visit::Answer(Equivalence::Unknown(format!(
                    "{} insn {pc}: a decision other than a conditional jump",
                    WHICH[which]
                ))))
            }
        };
        let forced: Vec<bool> = s.chosen.iter().map(|c| c.0).collect();
        for &taken in ways {
            let mut decisions = item.decisions.clone();
            decisions.push(Decision::Branch { pc, taken });
            stack.push(Item {
                decisions,
                forced: forced.clone(),
                split: item.split,
                repeated,
            });
        }
        Ok(Visit::Continue)
    }

    /// The way the candidate's conditional jump `insn` at `pc` must go where its condition is
    /// the very formula of a decision the original's path took (or its negation): the other way
    /// contradicts that decision. (Z3 does not always see such a contradiction at once: a
    /// checksum's condition against its negation ran into a 20 s timeout.) Only a shortcut: the
    /// pair's final check still includes every decision.
    fn implied(
        &mut self,
        item: &Item,
        s: &State,
        which: usize,
        pc: usize,
        insn: &Instruction,
    ) -> Option<bool> {
        let k = item.split.filter(|_| which == CANDIDATE)?;
        let mut exec = Exec {
            env: &self.envs[which],
            session: &mut self.session,
            decisions: &[],
            forced: &[],
            prefer_calls: true,
            s: s.clone(),
        };
        let Ok(linerate_sem::Flow::Branch { cond, .. }) = linerate_sem::step(&mut exec, pc, insn)
        else {
            return None;
        };
        let negated = cond.not();
        self.session.conds.get(..k)?.iter().find_map(|c| {
            if *c == cond {
                Some(true)
            } else if *c == negated {
                Some(false)
            } else {
                None
            }
        })
    }

    /// Pushes, for every outcome a run chose freely inside a helper, the search item that takes
    /// the other: the same decisions up to the choice, the same earlier outcomes. Choices at
    /// index `original_choices` and later are the candidate's (the item keeps its split).
    fn alternatives(&self, item: &Item, s: &State, original_choices: usize, stack: &mut Vec<Item>) {
        for j in item.forced.len()..s.chosen.len() {
            let (outcome, before) = s.chosen[j];
            let mut forced: Vec<bool> = s.chosen[..j].iter().map(|c| c.0).collect();
            forced.push(!outcome);
            stack.push(Item {
                decisions: item.decisions[..before.min(item.decisions.len())].to_vec(),
                forced,
                repeated: false,
                split: if j >= original_choices {
                    item.split
                } else {
                    None
                },
            });
        }
    }

    /// Compares the outcomes of the original's path and the candidate's (`s`, `r0`).
    fn compare(&mut self, mut s: State, r0: SymValue) -> Result<Visit, SmtError> {
        self.pairs += 1;
        if self.pairs > self.options.max_paths {
            return Ok(Visit::Answer(Equivalence::Unknown(format!(
                "more than {} pairs of paths",
                self.options.max_paths
            ))));
        }
        let Some(end) = &self.end else {
            return Ok(Visit::Answer(Equivalence::Unknown(
                "internal: the original's path was lost".into(),
            )));
        };
        let (mut original, original_r0) = (end.state.clone(), end.r0.clone());
        if let Some(why) = outcome::same_sources(&self.envs, self.program, &original, &s) {
            return Ok(Visit::Answer(Equivalence::Unknown(why)));
        }
        self.names += 1;
        let offset = BV::new_const(format!("equivalence!byte{}", self.names), 64);
        let object = &self.envs[ORIGINAL].object;
        let differences = match outcome::differences(
            object,
            [&mut original, &mut s],
            [&original_r0, &r0],
            &offset,
        ) {
            Ok(d) => d,
            Err(why) => return Ok(Visit::Answer(Equivalence::Unknown(why))),
        };
        for d in &differences.definitions {
            self.session.assert(d);
        }
        let goal = Bool::or(&differences.parts.iter().map(|(_, b)| b).collect::<Vec<_>>());
        let goal = z3::ast::Ast::simplify(&goal);
        if goal.as_bool() == Some(false) {
            return Ok(Visit::Continue);
        }
        let literal = self.session.literal("differ");
        self.session.assert(&literal.implies(&goal));
        let mut assumptions = self.session.lits.clone();
        assumptions.extend(s.choices.iter().cloned());
        assumptions.push(literal);
        let answer = self.session.check(&assumptions);
        match answer {
            Answer::Unsat { .. } => Ok(Visit::Continue),
            Answer::Unknown => Ok(Visit::Answer(Equivalence::Unknown(format!(
                "the solver gave up comparing a pair of paths ({} decisions){}",
                self.previous.len(),
                self.reason()
            )))),
            Answer::Sat(model) => {
                let value = |bv: &BV| crate::replay::model_u64(&model, bv);
                let input = crate::replay::replay_input(object, &s, &model);
                let differs = differences
                    .parts
                    .iter()
                    .filter(|(_, b)| model.eval(b, true).and_then(|b| b.as_bool()) == Some(true))
                    .map(|(what, _)| match what.as_str() {
                        "packet" => {
                            let data = value(&original.bounds.data.bits.bv());
                            format!("packet byte {}", value(&offset).wrapping_sub(data) as i64)
                        }
                        _ => what.clone(),
                    })
                    .collect();
                let unrepeatable = crate::replay::unrepeatable(&self.envs[CANDIDATE], &s, &model);
                Ok(Visit::Answer(Equivalence::Different(Box::new(
                    EquivalenceCounterexample {
                        packet: input.packet,
                        maps: input.maps,
                        ingress_ifindex: input.ingress_ifindex,
                        rx_queue_index: input.rx_queue_index,
                        original_return: value(&differences.returns[ORIGINAL]),
                        candidate_return: value(&differences.returns[CANDIDATE]),
                        differs,
                        unrepeatable,
                    },
                ))))
            }
        }
    }

    fn reason(&self) -> String {
        match self.options.timeout {
            Some(t) => format!(" (timeout {:?} per check)", t),
            None => String::new(),
        }
    }
}

/// A solver session at the entry of `program`, its inputs constrained, and the entry state.
fn fresh_session(env: &Env, program: usize, options: &EquivalenceOptions) -> (Session, State) {
    let mut session = Session::new(options.timeout, false);
    let entry = State::entry(env, program, &mut session);
    session.snapshot(&entry);
    (session, entry)
}

/// The candidate's entry state after the original's run ended in `original`: the same inputs
/// (`entry`'s packet length, context, sources in order), the original's reads of the initial
/// packet and map contents and its accessed keys, and its choices (their literals are
/// assumptions of the pair; the candidate's continue the numbering).
fn candidate_entry(entry: &State, original: &State, object: &Object) -> Result<State, String> {
    if let Some((i, _)) = original
        .maps
        .iter()
        .enumerate()
        .find(|(_, m)| !m.keyed_only())
    {
        let name = object.maps.get(i).map_or("?", |m| m.name.as_str());
        return Err(format!(
            "map `{name}` is used as a ring buffer, queue or map of maps, whose \
             contents are not compared"
        ));
    }
    let mut s = entry.clone();
    s.packet = original.packet.initial();
    s.maps = original.maps.iter().map(SymMap::initial).collect();
    s.next = original.next;
    s.choices = original.choices.clone();
    s.chosen = original.chosen.clone();
    s.implicit = original.implicit.clone();
    s.blocks = Vec::new();
    Ok(s)
}
