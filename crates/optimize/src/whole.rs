//! Whole-program search (issue 10 items 1 and 2), as K2 searches (paper 002 §3–§5): for an
//! entry function small enough, Markov chains over the whole instruction list rather than over
//! windows, so that rewrites across basic blocks — removing a branch whose two sides agree,
//! merging duplicated tails, dropping a register set on both paths, re-aiming jumps — are
//! found too.
//!
//! A candidate is the entry function's instructions ("units": one per instruction, a 64-bit
//! immediate load one unit of two slots), each kept, changed or removed (`None`, K2's NOP), with
//! jump offsets counted in the starting program's slots: a removed unit is a `ja +0` to the
//! interpreter, and [`crate::assemble`] drops it and re-aims the jumps over it, so a candidate
//! runs and is written without being laid out again. Calls, exits, 64-bit immediate loads, the
//! input's back edges (bounded loops) and pinned slots keep their instruction (they are removed
//! only where they become unreachable); jumps change target (forward, inside the function;
//! half the time to where the same code runs: tail merging), condition, or are removed; the
//! packet's bounds checks are only re-aimed to the same code; the other units take K2's proposal
//! rules ([`crate::proposal`]). A cheap first safety check ([`checks`]: register provenance on
//! every path) refuses what the kernel's checker surely would before anything runs. Every candidate is put in canonical form
//! first (unreachable units removed, jumps to removed units aimed at the next kept one, jumps to
//! where they fall through removed): the structural checks of §6 (jumps in bounds, no back
//! edges, no unreachable blocks, no falling off the end) hold by construction or the candidate
//! is not taken, and candidates differing only there share one cache entry (§5 V).
//!
//! Candidates run in the interpreter on tests (the first packets of the executions with their
//! maps, each path witness with its own, and every counterexample found) against the starting
//! program's outcomes: action, redirect, packet bytes and metadata, and the maps after each test
//! group. The cost is K2's (Eq. 1 error + performance under the goal, Table 8's settings). A
//! candidate that passes every test and beats the best must load in the kernel (the verifier
//! is the ground truth of safety, §6) and then be proven equivalent to the ORIGINAL input by
//! [`linerate_smt::check_equivalence`]; a counterexample becomes a new test group, an unknown
//! verdict is a refusal. Verdicts are cached by canonical candidate.
//!
//! A program is eligible when its entry function is at most [`MAX_WHOLE_SLOTS`] slots, has no
//! `may_goto`, and the equivalence check decides the input against itself (no tail calls,
//! callbacks, kfuncs, ...; loops it unrolls: see `linerate_smt::equivalence`).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use linerate_bpf::contents::MapSeed;
use linerate_bpf::insn::{decode_all, Cond, Instruction, Operand, Reg, FRAME_POINTER};
use linerate_bpf::Object;
use linerate_smt::{check_equivalence, Equivalence, EquivalenceOptions};
use linerate_vm::VmOptions;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;

mod checks;
mod groups;

use groups::{maps_of, Group};

use crate::assemble::with_off;
use crate::proposal::{draw_rule, propose, Candidate, Rule, Vocabulary};
use crate::search::{Performance, Setting, SETTINGS};
use crate::{apply, Executions, Rewrite, Stage};

/// Most slots of an entry function searched whole: the equivalence check's paths and the
/// proposal space grow with it; larger functions are searched window by window only.
pub const MAX_WHOLE_SLOTS: usize = 300;
/// Packets of the executions the tests take (with their maps, in order).
const TEST_PACKETS: usize = 64;
/// Cost of a candidate that faults in the interpreter (as the window search's unsafe cost).
const UNSAFE_COST: f64 = 10_000.0;
/// Error added when a test group's maps differ after the run.
const MAPS_DIFFER: f64 = 64.0;
/// Instructions after which a candidate's run is stopped (only the input's bounded loops go
/// backwards, so this is reached only when a candidate changed their bounds).
const MAX_RUN_INSTRUCTIONS: u64 = 1_000_000;
/// Steps each chain takes between looks at the clock.
const ROUND_STEPS: u64 = 200;
/// Longest single equivalence check.
const MAX_PROOF_TIME: Duration = Duration::from_secs(10);

/// How to search a whole program.
#[derive(Clone, Debug)]
pub struct WholeOptions {
    pub budget: Duration,
    pub seed: u64,
    /// Slots of the starting program's entry function the object writer must keep.
    pub pinned: Vec<usize>,
    /// Most rounds (each chain takes a fixed number of steps a round): with them, the same seed
    /// gives the same result whatever the machine's speed, the budget only caps the time.
    pub max_rounds: Option<u64>,
}

/// What the whole-program search did (the `search.whole_program` object of `--json`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct WholeReport {
    pub eligible: bool,
    /// Why not, when not eligible.
    pub why: Option<String>,
    pub candidates: u64,
    /// Candidates the first safety check refused (before any run).
    pub refused_early: u64,
    /// Candidates that passed every test and beat the best, loaded in the kernel.
    pub kernel_loads: u64,
    pub kernel_refused: u64,
    /// Equivalence checks asked and their verdicts.
    pub proofs: u64,
    pub proven: u64,
    pub counterexamples: u64,
    pub unknown: u64,
    pub cache_hits: u64,
    /// Slots of the entry function before and after the search.
    pub slots_before: usize,
    pub slots_after: usize,
    /// The goal's gain over the starting program.
    pub improvement: f64,
    pub seconds: f64,
}

/// The length of program `program`'s entry function.
fn entry_len(object: &Object, program: usize) -> usize {
    object
        .programs
        .get(program)
        .map_or(0, |p| p.functions.first().map_or(p.insns.len(), |f| f.len))
}

/// Why program `program` of `current` (the input `original`, or a rewrite of it) cannot be
/// searched whole, or `Ok` when it can.
pub fn eligibility(original: &Object, current: &Object, program: usize) -> Result<(), String> {
    let prog = current
        .programs
        .get(program)
        .ok_or_else(|| format!("no program {program}"))?;
    let len = entry_len(current, program);
    if len > MAX_WHOLE_SLOTS {
        return Err(format!(
            "the entry function has {len} instructions, more than the {MAX_WHOLE_SLOTS} searched whole"
        ));
    }
    let decoded = decode_all(&prog.insns).map_err(|e| e.to_string())?;
    for (slot, insn) in decoded.iter().filter(|(s, _)| *s < len) {
        if matches!(insn, Instruction::MayGoto { .. }) {
            return Err(format!("may_goto at insn {slot} (a loop)"));
        }
    }
    let options = EquivalenceOptions {
        timeout: Some(MAX_PROOF_TIME),
        total: Some(MAX_PROOF_TIME),
        ..EquivalenceOptions::default()
    };
    match check_equivalence(original, current, program, &options) {
        Ok(Equivalence::Equivalent { .. }) => Ok(()),
        Ok(Equivalence::Unknown(why)) => {
            Err(format!("the equivalence check does not decide it: {why}"))
        }
        Ok(Equivalence::Different(_)) => {
            Err("the starting program differs from the input on some input".into())
        }
        Err(e) => Err(format!("the equivalence check fails: {e}")),
    }
}

/// What a unit may become.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// Kept as it is (removed only where unreachable, unless pinned).
    Fixed,
    Pinned,
    /// A jump: re-aimed, another condition, or removed.
    Jump,
    /// A bounds check of the packet (a jump comparing with `data_end`): re-aimed only where the
    /// same code runs, as the kernel refuses the accesses it guards without it.
    Guard,
    /// Anything K2's rules propose, or removed.
    Plain,
}

#[derive(Clone, Copy, Debug)]
struct Unit {
    slot: usize,
    original: Instruction,
    kind: Kind,
}

/// The offset of a jump (`None`: not a jump).
fn jump_off(insn: &Instruction) -> Option<i64> {
    match *insn {
        Instruction::Ja { off, .. } => Some(off as i64),
        Instruction::Jump { off, .. } => Some(off as i64),
        _ => None,
    }
}

/// An instruction of a run of code, jumps by the unit they land on (offset 0 in the
/// instruction).
type Code = (Instruction, Option<usize>);

/// What a removed slot is to the interpreter.
const NOP: Instruction = Instruction::Ja {
    off: 0,
    long: false,
};

/// A candidate's results on the tests.
struct Tested {
    /// Eq. (1)'s error summed (or averaged) over the tests.
    err: f64,
    failing: usize,
    fault: bool,
}

/// What the kernel and the equivalence check say of a candidate that passes every test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verdict {
    /// Loads, and is equivalent to the input.
    Proven,
    /// Loads, but differs from the input or is not proven the same.
    Unproven,
    /// The kernel's checker refuses it.
    Refused,
}

struct Chain {
    setting: Setting,
    rng: StdRng,
    current: Candidate,
    cost: f64,
}

/// The search state.
struct Search<'a> {
    original: &'a Object,
    current: &'a Object,
    program: usize,
    units: Vec<Unit>,
    /// The unit starting at each slot of the entry function (and one past it).
    unit_at: Vec<Option<usize>>,
    groups: Vec<Group>,
    vocab: Vocabulary,
    start: Candidate,
    start_perf: f64,
    best: Candidate,
    best_perf: f64,
    cache: HashMap<Candidate, Verdict>,
    layout: Vec<Instruction>,
    report: WholeReport,
    deadline: Instant,
    /// Whether [`checks`] is used (it passes the starting program).
    static_checks: bool,
    /// What [`checks`] found before each unit of the starting program.
    start_states: Vec<Option<checks::State>>,
}

/// Searches program `program` of `current` (the input `original` after the window passes, or
/// the input itself) whole, for `options.budget`; `executions` give the tests. The caller has
/// checked [`eligibility`]. Returns the report and, when a proven improvement was found, the
/// stage that rewrites `current` into it.
pub fn search_whole(
    original: &Object,
    current: &Object,
    program: usize,
    options: &WholeOptions,
    perf: &dyn Performance,
    executions: Option<&Executions>,
) -> (WholeReport, Option<Stage>) {
    let started = Instant::now();
    let mut report = WholeReport {
        eligible: true,
        ..WholeReport::default()
    };
    let Some(mut search) = Search::new(original, current, program, options, perf, executions)
    else {
        report.eligible = false;
        report.why = Some("the program does not run on any test packet".into());
        return (report, None);
    };
    let mut chains: Vec<Chain> = SETTINGS
        .iter()
        .enumerate()
        .map(|(k, s)| Chain {
            setting: *s,
            rng: StdRng::seed_from_u64(
                options.seed ^ 0x2545_f491_4f6c_dd1d_u64.wrapping_mul(k as u64 + 1),
            ),
            current: search.start.clone(),
            cost: 0.0,
        })
        .collect();
    let mut rounds = 0u64;
    while Instant::now() < search.deadline && options.max_rounds.is_none_or(|m| rounds < m) {
        rounds += 1;
        for chain in &mut chains {
            for _ in 0..ROUND_STEPS {
                search.step(chain, perf);
            }
        }
    }
    let stage = search.stage();
    let mut report = search.report;
    report.slots_before = slots(&search.units, &search.start);
    report.slots_after = slots(&search.units, &search.best);
    report.improvement = search.start_perf - search.best_perf;
    report.seconds = started.elapsed().as_secs_f64();
    (report, stage)
}

/// Slots a candidate takes.
fn slots(units: &[Unit], candidate: &Candidate) -> usize {
    units
        .iter()
        .zip(candidate)
        .filter_map(|(u, c)| c.map(|_| u.original.slots()))
        .sum()
}

/// The vocabulary of the function's changeable instructions: their registers, constants and
/// memory operands.
fn vocabulary(units: &[Unit]) -> Vocabulary {
    let mut regs: Vec<Reg> = vec![0, 1, FRAME_POINTER];
    let mut imms: Vec<i32> = vec![0, 1, 2, 3, 4, 8, 14, 0xff, 0xffff, -1];
    let mut addresses = Vec::new();
    for u in units.iter().filter(|u| u.kind != Kind::Pinned) {
        match u.original {
            Instruction::Alu { dst, src, .. } => {
                regs.push(dst);
                match src {
                    Operand::Reg(r) => regs.push(r),
                    Operand::Imm(i) => imms.push(i),
                }
            }
            Instruction::Endian { dst, .. } => regs.push(dst),
            Instruction::Load { dst, src, off, .. } => {
                regs.extend([dst, src]);
                addresses.push((src, off));
            }
            Instruction::Store { dst, off, src, .. } => {
                regs.push(dst);
                addresses.push((dst, off));
                match src {
                    Operand::Reg(r) => regs.push(r),
                    Operand::Imm(i) => imms.push(i),
                }
            }
            Instruction::Jump { dst, src, .. } => {
                regs.push(dst);
                match src {
                    Operand::Reg(r) => regs.push(r),
                    Operand::Imm(i) => imms.push(i),
                }
            }
            _ => {}
        }
    }
    Vocabulary::from_parts(regs, imms, addresses)
}

impl<'a> Search<'a> {
    fn new(
        original: &'a Object,
        current: &'a Object,
        program: usize,
        options: &WholeOptions,
        perf: &dyn Performance,
        executions: Option<&Executions>,
    ) -> Option<Search<'a>> {
        let deadline = Instant::now() + options.budget;
        let prog = current.programs.get(program)?;
        let len = entry_len(current, program);
        let decoded = decode_all(&prog.insns).ok()?;
        let mut unit_at = vec![None; len + 1];
        let units: Vec<Unit> = decoded
            .into_iter()
            .filter(|(s, _)| *s < len)
            .enumerate()
            .map(|(i, (slot, insn))| {
                unit_at[slot] = Some(i);
                let kind = if options.pinned.contains(&slot) {
                    Kind::Pinned
                } else {
                    match insn {
                        _ if jump_off(&insn).is_some_and(|off| off < 0) => Kind::Fixed,
                        Instruction::Ja { .. } | Instruction::Jump { .. } => Kind::Jump,
                        Instruction::Alu { .. }
                        | Instruction::Endian { .. }
                        | Instruction::Load { .. }
                        | Instruction::Store { .. }
                        | Instruction::Atomic { .. } => Kind::Plain,
                        _ => Kind::Fixed,
                    }
                };
                Unit {
                    slot,
                    original: insn,
                    kind,
                }
            })
            .collect();
        let vm_options = VmOptions {
            max_instructions: MAX_RUN_INSTRUCTIONS,
            ..VmOptions::default()
        };
        let generated = (MapSeed::new(), crate::packets::generate(TEST_PACKETS, 1));
        let fallback = Executions {
            seed: &generated.0,
            packets: &generated.1,
            witnesses: &[],
        };
        let Executions {
            seed,
            packets,
            witnesses,
        } = executions.copied().unwrap_or(fallback);
        let mut groups: Vec<Group> = Group::new(
            current,
            program,
            seed,
            vm_options.clone(),
            packets.iter().take(TEST_PACKETS).cloned().collect(),
        )
        .into_iter()
        .collect();
        for (p, s) in witnesses {
            groups.extend(Group::new(
                current,
                program,
                s,
                vm_options.clone(),
                vec![p.clone()],
            ));
        }
        if groups.is_empty() {
            return None;
        }
        let start: Candidate = units.iter().map(|u| Some(u.original)).collect();
        let start_perf = perf.cost(&start.iter().flatten().copied().collect::<Vec<_>>(), &[]);
        let vocab = vocabulary(&units);
        let mut search = Search {
            original,
            current,
            program,
            unit_at,
            vocab,
            best: start.clone(),
            best_perf: start_perf,
            start,
            start_perf,
            units,
            groups,
            cache: HashMap::new(),
            layout: Vec::new(),
            report: WholeReport {
                eligible: true,
                ..WholeReport::default()
            },
            deadline,
            static_checks: false,
            start_states: Vec::new(),
        };
        // The first safety check is used when it passes the starting program (were it to refuse
        // what the kernel took, it would be wrong here, and the kernel alone decides). The jumps
        // comparing with `data_end` are the packet's bounds checks: the kernel refuses every
        // access they guard without them, so they stay.
        let all: Vec<Option<usize>> = (0..=search.units.len())
            .map(|i| (i < search.units.len()).then_some(i))
            .collect();
        let flowed = checks::flow(
            &search.start,
            0,
            &|i, insn| search.successors(i, insn, &all),
            None,
        );
        if let Ok(states) = flowed {
            search.static_checks = true;
            for (unit, state) in search.units.iter_mut().zip(&states) {
                let (Some(state), Instruction::Jump { dst, src, .. }) = (state, unit.original)
                else {
                    continue;
                };
                let regs = state.regs;
                let end = |r: Reg| regs[r as usize] == checks::Tag::End;
                if unit.kind == Kind::Jump && (end(dst) || matches!(src, Operand::Reg(r) if end(r)))
                {
                    unit.kind = Kind::Guard;
                }
            }
            search.start_states = states;
        }
        Some(search)
    }

    /// The unit a jump at unit `i` with offset `off` lands on: forward, inside the function, on
    /// an instruction's first slot.
    fn target(&self, i: usize, off: i64) -> Option<usize> {
        let slot = self.units[i].slot as i64 + 1 + off;
        // Only the input's own back edges (bounded loops, kept as they are) go backwards.
        if slot <= self.units[i].slot as i64 && self.units[i].kind != Kind::Fixed {
            return None;
        }
        self.unit_at
            .get(usize::try_from(slot).ok()?)
            .copied()
            .flatten()
    }

    /// Where control goes after unit `i` holding `insn` (falling through, jumping), with `next`
    /// the next kept unit at or after each; `None` when it leaves the function.
    fn successors(
        &self,
        i: usize,
        insn: &Instruction,
        next: &[Option<usize>],
    ) -> Option<[Option<usize>; 2]> {
        let fall = if matches!(insn, Instruction::Exit | Instruction::Ja { .. }) {
            None
        } else {
            Some(next[i + 1]?)
        };
        let jump = match jump_off(insn) {
            Some(off) => Some(next[self.target(i, off)?]?),
            None => None,
        };
        Some([fall, jump])
    }

    /// Whether the first safety check ([`checks`]) refuses a canonical candidate.
    fn refused(&self, c: &Candidate) -> bool {
        let n = c.len();
        let mut next = vec![None; n + 1];
        for i in (0..n).rev() {
            next[i] = if c[i].is_some() { Some(i) } else { next[i + 1] };
        }
        let Some(first) = next[0] else { return true };
        checks::flow(
            c,
            first,
            &|i, insn| self.successors(i, insn, &next),
            Some(&self.start_states),
        )
        .is_err()
    }

    /// The jump at unit `i` aimed at unit `t`.
    fn aimed(&self, i: usize, insn: Instruction, t: usize) -> Option<Instruction> {
        with_off(
            insn,
            self.units[t].slot as i64 - self.units[i].slot as i64 - 1,
        )
    }

    /// The canonical form of a candidate (see the module comment), or `None` when it is not a
    /// well-formed function (a jump out of it, a new backward jump, falling off its end, a
    /// pinned slot left unreachable).
    fn canonical(&self, candidate: &Candidate) -> Option<Candidate> {
        let n = candidate.len();
        let mut c = candidate.clone();
        let next_kept = |c: &Candidate| {
            let mut next = vec![None; n + 1];
            for i in (0..n).rev() {
                next[i] = if c[i].is_some() { Some(i) } else { next[i + 1] };
            }
            next
        };
        loop {
            let mut changed = false;
            let next = next_kept(&c);
            for i in 0..n {
                let Some(insn) = c[i] else { continue };
                let Some(off) = jump_off(&insn) else { continue };
                let t = next[self.target(i, off)?]?;
                if Some(t) == next[i + 1] && self.units[i].kind != Kind::Pinned {
                    c[i] = None;
                    changed = true;
                } else {
                    c[i] = Some(self.aimed(i, insn, t)?);
                }
            }
            let next = next_kept(&c);
            let mut reached = vec![false; n];
            let mut work = vec![next[0]?];
            while let Some(i) = work.pop() {
                if std::mem::replace(&mut reached[i], true) {
                    continue;
                }
                let insn = c[i]?;
                work.extend(self.successors(i, &insn, &next)?.into_iter().flatten());
            }
            for i in 0..n {
                if c[i].is_some() && !reached[i] {
                    if self.units[i].kind == Kind::Pinned {
                        return None;
                    }
                    c[i] = None;
                    changed = true;
                }
            }
            if !changed {
                return Some(c);
            }
        }
    }

    /// A proposal from `current`: a random changeable unit moved by `rule`.
    fn propose(&self, current: &Candidate, rule: Rule, rng: &mut StdRng) -> Candidate {
        let changeable: usize = self
            .units
            .iter()
            .filter(|u| matches!(u.kind, Kind::Jump | Kind::Guard | Kind::Plain))
            .count();
        let mut next = current.clone();
        if changeable == 0 {
            return next;
        }
        let k = rng.gen_range(0..changeable);
        let Some(i) = self
            .units
            .iter()
            .enumerate()
            .filter(|(_, u)| matches!(u.kind, Kind::Jump | Kind::Guard | Kind::Plain))
            .map(|(i, _)| i)
            .nth(k)
        else {
            return next;
        };
        let unit = self.units[i];
        if unit.kind == Kind::Guard {
            if let Some(base) = next[i] {
                let same = self.same_code(current, i, &base);
                if let Some(&t) = same.get(rng.gen_range(0..same.len().max(1))) {
                    next[i] = self.aimed(i, base, t);
                }
            }
            return next;
        }
        if unit.kind == Kind::Jump {
            let base = next[i].unwrap_or(unit.original);
            next[i] = match (rule, rng.gen_range(0..4)) {
                (Rule::Nop, _) | (_, 0) => None,
                // Half the re-aimings go where the same code runs (tail merging).
                (_, 1) if rng.gen_bool(0.5) => {
                    let same = self.same_code(current, i, &base);
                    match same.get(rng.gen_range(0..same.len().max(1))) {
                        Some(&t) => self.aimed(i, base, t),
                        None => Some(base),
                    }
                }
                (_, 1) => {
                    let t = rng.gen_range(i + 1..self.units.len().max(i + 2));
                    if t < self.units.len() {
                        self.aimed(i, base, t)
                    } else {
                        Some(base)
                    }
                }
                (_, 2) => Some(match base {
                    Instruction::Jump {
                        wide,
                        dst,
                        src,
                        off,
                        ..
                    } => Instruction::Jump {
                        wide,
                        cond: Cond::ALL[rng.gen_range(0..Cond::ALL.len())],
                        dst,
                        src,
                        off,
                    },
                    other => other,
                }),
                _ => Some(unit.original),
            };
            return next;
        }
        // Plain units: K2's rules on the unit (and the next one, for contiguous replacement).
        let width = if rule == Rule::Contiguous
            && self.units.get(i + 1).is_some_and(|u| u.kind == Kind::Plain)
        {
            2
        } else {
            1
        };
        let part: Candidate = next[i..i + width].to_vec();
        let moved = propose(&part, rule, &self.vocab, rng);
        next[i..i + width].copy_from_slice(&moved);
        next
    }

    /// The code that runs from kept unit `u` of `c` up to its first exit or unconditional jump,
    /// jumps by the unit they land on (`None` when it runs off the function or on for long).
    fn code_from(&self, c: &Candidate, next: &[Option<usize>], u: usize) -> Option<Vec<Code>> {
        const LONGEST: usize = 64;
        let mut code = Vec::new();
        let mut at = next[u]?;
        loop {
            let insn = c[at]?;
            let target = match jump_off(&insn) {
                Some(off) => Some(next[self.target(at, off)?]?),
                None => None,
            };
            code.push((with_off(insn, 0)?, target));
            if matches!(insn, Instruction::Exit | Instruction::Ja { .. }) {
                return Some(code);
            }
            if code.len() >= LONGEST {
                return None;
            }
            at = next[at + 1]?;
        }
    }

    /// The kept units after unit `i` other than its jump's target from which the same code runs
    /// as from that target: where the jump may go instead.
    fn same_code(&self, c: &Candidate, i: usize, jump: &Instruction) -> Vec<usize> {
        let n = c.len();
        let mut next = vec![None; n + 1];
        for k in (0..n).rev() {
            next[k] = if c[k].is_some() { Some(k) } else { next[k + 1] };
        }
        let Some(t) = jump_off(jump)
            .and_then(|off| self.target(i, off))
            .and_then(|t| next[t])
        else {
            return Vec::new();
        };
        let Some(code) = self.code_from(c, &next, t) else {
            return Vec::new();
        };
        (i + 1..n)
            .filter(|&u| u != t && c[u].is_some() && c[u] == c[t])
            .filter(|&u| self.code_from(c, &next, u).as_ref() == Some(&code))
            .collect()
    }

    /// The candidate laid out over the starting program's slots (removed units as `ja +0`).
    fn lay_out(&mut self, candidate: &Candidate) {
        self.layout.clear();
        for (u, c) in self.units.iter().zip(candidate) {
            match c {
                Some(insn) => self.layout.push(*insn),
                None => self
                    .layout
                    .extend(std::iter::repeat_n(NOP, u.original.slots())),
            }
        }
    }

    /// Runs a candidate on every test group.
    fn test(&mut self, candidate: &Candidate, absolute: bool) -> Tested {
        self.lay_out(candidate);
        let diff = |a: u64, b: u64| -> f64 {
            if absolute {
                (a as i128 - b as i128).unsigned_abs() as f64
            } else {
                (a ^ b).count_ones() as f64
            }
        };
        let bytes = |a: &[u8], b: &[u8]| -> f64 {
            let common: f64 = a
                .iter()
                .zip(b)
                .map(|(x, y)| diff(*x as u64, *y as u64))
                .sum();
            common + 8.0 * a.len().abs_diff(b.len()) as f64
        };
        let mut out = Tested {
            err: 0.0,
            failing: 0,
            fault: false,
        };
        let start = self.units.first().map_or(0, |u| u.slot);
        for g in &self.groups {
            let mut vm = g.vm.clone();
            if vm
                .replace_instructions(self.program, start, &self.layout)
                .is_err()
            {
                out.fault = true;
                return out;
            }
            for (p, e) in g.packets.iter().zip(&g.expected) {
                let Ok(s) = vm.run_in_place(self.program, p, &[]) else {
                    out.fault = true;
                    return out;
                };
                let buffer = vm.packet_buffer();
                let mut d = diff(s.return_value & 0xffff_ffff, e.action & 0xffff_ffff);
                if s.redirect != e.redirect {
                    d += 32.0;
                }
                d += bytes(&buffer.whole_packet(), &e.packet);
                if buffer.meta() != e.meta.as_slice() {
                    d += bytes(buffer.meta(), &e.meta);
                }
                if d > 0.0 {
                    out.failing += 1;
                    out.err += d;
                }
            }
            // Listing the maps is dear (a large array lists every entry): only for a candidate
            // that agrees on every packet so far, whose error would otherwise be zero.
            if out.failing == 0 && maps_of(&vm) != g.maps {
                out.failing += 1;
                out.err += MAPS_DIFFER;
            }
        }
        out
    }

    /// One Metropolis–Hastings step of `chain`.
    fn step(&mut self, chain: &mut Chain, perf: &dyn Performance) {
        let rule = draw_rule(&mut chain.rng, &chain.setting.rules);
        let proposal = self.propose(&chain.current, rule, &mut chain.rng);
        let Some(proposal) = self.canonical(&proposal) else {
            return;
        };
        if proposal == chain.current {
            return;
        }
        self.report.candidates += 1;
        let cost = self.cost(&proposal, chain.setting, perf);
        // Metropolis–Hastings acceptance (Eq. 3) with symmetric proposals.
        if cost <= chain.cost || chain.rng.gen::<f64>() < (chain.cost - cost).exp() {
            chain.current = proposal;
            chain.cost = cost;
        }
    }

    fn cost(&mut self, candidate: &Candidate, s: Setting, perf: &dyn Performance) -> f64 {
        let insns: Vec<Instruction> = candidate.iter().flatten().copied().collect();
        let p = perf.cost(&insns, &[]);
        if self.static_checks && self.refused(candidate) {
            self.report.refused_early += 1;
            return UNSAFE_COST + s.beta * (p - self.start_perf);
        }
        let tested = self.test(candidate, s.absolute);
        if tested.fault {
            return UNSAFE_COST + s.beta * (p - self.start_perf);
        }
        let mut err = tested.err;
        let tests: usize = self.groups.iter().map(|g| g.packets.len()).sum();
        if s.average && tests > 0 {
            err /= tests as f64;
        }
        let unequal = if tested.failing > 0 {
            true
        } else if p < self.best_perf {
            match self.verdict(candidate) {
                Verdict::Proven => {
                    self.best = candidate.clone();
                    self.best_perf = p;
                    false
                }
                Verdict::Unproven => true,
                // The kernel's checker refused it: as unsafe as a fault, so that the chains
                // move away rather than try its neighbours on the kernel one by one.
                Verdict::Refused => return UNSAFE_COST + s.beta * (p - self.start_perf),
            }
        } else {
            // Not better than the best: a cached verdict is used, no check is made.
            match self.cache.get(candidate) {
                Some(Verdict::Refused) => return UNSAFE_COST + s.beta * (p - self.start_perf),
                Some(Verdict::Proven) => false,
                _ => *candidate != self.start,
            }
        };
        let failing = if unequal {
            tested.failing.max(1) as f64
        } else {
            0.0
        };
        s.alpha * (err + failing) + s.beta * (p - self.start_perf)
    }

    /// The rewrite of the starting program into `candidate` (`None` when they are the same).
    fn rewrite(&self, candidate: &Candidate) -> Option<Rewrite> {
        let changed = |i: &usize| candidate[*i] != Some(self.units[*i].original);
        let first = (0..candidate.len()).find(changed)?;
        let last = (0..candidate.len()).rev().find(changed)?;
        Some(Rewrite {
            start: self.units[first].slot,
            original: self.units[first..=last]
                .iter()
                .map(|u| u.original)
                .collect(),
            replacement: candidate[first..=last].to_vec(),
        })
    }

    /// Whether a candidate that passes every test loads in the kernel and is proven equivalent
    /// to the input (cached); a counterexample becomes a new test group.
    fn verdict(&mut self, candidate: &Candidate) -> Verdict {
        if let Some(v) = self.cache.get(candidate) {
            self.report.cache_hits += 1;
            return *v;
        }
        let v = self.check(candidate);
        self.cache.insert(candidate.clone(), v);
        v
    }

    fn check(&mut self, candidate: &Candidate) -> Verdict {
        let Some(rewrite) = self.rewrite(candidate) else {
            return Verdict::Proven;
        };
        let Ok((object, _)) = apply(self.current, self.program, &[rewrite]) else {
            return Verdict::Refused;
        };
        self.report.kernel_loads += 1;
        if linerate_kernel::load_entry(&object, self.program).is_err() {
            self.report.kernel_refused += 1;
            return Verdict::Refused;
        }
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Verdict::Unproven;
        }
        let options = EquivalenceOptions {
            timeout: Some(left.min(MAX_PROOF_TIME)),
            total: Some(left.min(MAX_PROOF_TIME)),
            ..EquivalenceOptions::default()
        };
        self.report.proofs += 1;
        match check_equivalence(self.original, &object, self.program, &options) {
            Ok(Equivalence::Equivalent { .. }) => {
                self.report.proven += 1;
                Verdict::Proven
            }
            Ok(Equivalence::Different(cex)) => {
                self.report.counterexamples += 1;
                if cex.unrepeatable.is_empty() {
                    let options = VmOptions {
                        max_instructions: MAX_RUN_INSTRUCTIONS,
                        ingress_ifindex: cex.ingress_ifindex,
                        rx_queue_index: cex.rx_queue_index,
                        ..VmOptions::default()
                    };
                    self.groups.extend(Group::new(
                        self.current,
                        self.program,
                        &cex.maps,
                        options,
                        vec![cex.packet.clone()],
                    ));
                }
                Verdict::Unproven
            }
            Ok(Equivalence::Unknown(_)) | Err(_) => {
                self.report.unknown += 1;
                Verdict::Unproven
            }
        }
    }

    /// The stage rewriting the starting program into the best candidate, if it improved.
    fn stage(&self) -> Option<Stage> {
        if self.best_perf >= self.start_perf {
            return None;
        }
        Some(Stage {
            input: self.current.clone(),
            rewrites: vec![self.rewrite(&self.best)?],
        })
    }
}
