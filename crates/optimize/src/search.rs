//! The stochastic search over one window: Metropolis–Hastings chains with K2's cost function
//! (paper 002 §3.2–§3.3) and its five best parameter settings (Table 8).
//!
//! A chain's state is a candidate window. Its cost is `α·err + β·perf + γ·unsafe`:
//! `err` from the window's tests (Eq. 1: per-test distance of the live outputs, by popcount or
//! absolute difference, optionally averaged over the tests, plus the number of failing tests
//! when the candidate is not proven equal), `perf` the goal's cost relative to the original
//! (instructions, or the latency model's nanoseconds), `unsafe` a large constant when a test
//! shows an access the kernel's checker would refuse ([`crate::run::safety_violation`]). A
//! candidate that passes every test and would improve on the best is handed to the [`Prover`];
//! a counterexample becomes a new test, a proof makes it the new best. Proofs are cached by the
//! candidate's canonical form (removed slots and dead instructions dropped: §5 V).

use std::collections::HashMap;

use linerate_bpf::facts::xdp_md;
use linerate_bpf::insn::{Instruction, NUM_REGS};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::proposal::{draw_rule, propose, Candidate, RuleWeights, Vocabulary};
use crate::rules::{instantiate, Compiled};
use crate::run::{run_window, safety_violation, Outcome, Tag, WindowTest};
use crate::window::{EntryFact, Place, Window};

/// One parameter setting of a chain (a column of paper 002 Table 8).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Setting {
    /// Absolute difference (ABS) rather than popcount (POP) as the distance of two values.
    pub absolute: bool,
    /// Average the error over the tests (`c = 1/|T|`) rather than add it up.
    pub average: bool,
    /// Weight of the error cost.
    pub alpha: f64,
    /// Weight of the performance cost.
    pub beta: f64,
    pub rules: RuleWeights,
}

/// K2's five best-performing settings (paper 002, Table 8).
pub const SETTINGS: [Setting; 5] = [
    Setting {
        absolute: true,
        average: false,
        alpha: 0.5,
        beta: 5.0,
        rules: [0.2, 0.4, 0.15, 0.2, 0.0, 0.05],
    },
    Setting {
        absolute: false,
        average: false,
        alpha: 0.5,
        beta: 5.0,
        rules: [0.17, 0.33, 0.15, 0.17, 0.0, 0.18],
    },
    Setting {
        absolute: false,
        average: false,
        alpha: 0.5,
        beta: 5.0,
        rules: [0.2, 0.4, 0.15, 0.2, 0.0, 0.05],
    },
    Setting {
        absolute: true,
        average: false,
        alpha: 0.5,
        beta: 5.0,
        rules: [0.17, 0.33, 0.15, 0.0, 0.17, 0.18],
    },
    Setting {
        absolute: true,
        average: true,
        alpha: 0.5,
        beta: 1.5,
        rules: [0.17, 0.33, 0.15, 0.0, 0.17, 0.18],
    },
];

/// Cost of an unsafe candidate (K2's ERR_MAX: large, but not infinite, so that a chain can pass
/// through an unsafe program on its way to a better safe one).
const UNSAFE_COST: f64 = 10_000.0;

/// What the prover says of a candidate.
#[derive(Clone, Debug)]
pub enum Proof {
    Equivalent,
    /// An entry state on which the windows differ: a new test.
    Counterexample(WindowTest),
    /// No answer (timeout, something unmodelled): never used.
    Unknown,
}

/// Proves candidates equivalent to a window's original under K2's window condition.
pub trait Prover {
    fn prove(&mut self, window: &Window, candidate: &[Instruction]) -> Proof;
}

/// How a candidate's cost is measured against the goal.
pub trait Performance: Sync {
    /// The cost of the window's instructions; `places` holds the place of each memory access in
    /// order, where a test run found it.
    fn cost(&self, insns: &[Instruction], places: &[Place]) -> f64;
}

/// Counters of one window's search.
#[derive(Clone, Copy, Debug, Default)]
pub struct SearchStats {
    pub candidates: u64,
    pub proofs_asked: u64,
    pub cache_hits: u64,
    pub proven: u64,
    pub counterexamples: u64,
    pub unknown: u64,
}

impl SearchStats {
    pub fn add(&mut self, o: &SearchStats) {
        self.candidates += o.candidates;
        self.proofs_asked += o.proofs_asked;
        self.cache_hits += o.cache_hits;
        self.proven += o.proven;
        self.counterexamples += o.counterexamples;
        self.unknown += o.unknown;
    }
}

struct Chain {
    setting: Setting,
    rng: StdRng,
    current: Candidate,
    cost: f64,
}

/// The search state of one window: its tests, chains, proof cache and best proven candidate.
pub struct WindowSearch {
    pub window: Window,
    tags: [Tag; NUM_REGS],
    tests: Vec<WindowTest>,
    expected: Vec<Outcome>,
    vocab: Vocabulary,
    chains: Vec<Chain>,
    cache: HashMap<Vec<Instruction>, bool>,
    pub best: Candidate,
    pub best_perf: f64,
    original_perf: f64,
    pub stats: SearchStats,
    /// Every improvement proven, in order (the rule library learns from them).
    pub proven: Vec<Candidate>,
    /// Rules of the library applied to this window.
    pub rules_applied: u64,
}

/// The provenance tags of a window's entry registers.
pub fn entry_tags(window: &Window) -> [Tag; NUM_REGS] {
    let mut tags = [Tag::Scalar; NUM_REGS];
    for (t, f) in tags.iter_mut().zip(&window.entry) {
        if let EntryFact::Pointer { place, .. } = f {
            *t = Tag::Pointer(*place);
        }
    }
    tags
}

/// Where each place starts in test states: the symbolic checker's layout
/// (`linerate_smt::region_base`), so that its counterexamples and the random tests agree.
pub fn place_base(place: Place) -> u64 {
    linerate_smt::region_base(crate::prove::region(place))
}

/// Puts the context's pointer fields into a test's memory for a packet of `packet_len` bytes:
/// the low halves of the packet's addresses, as the checker's layout has them.
pub fn put_context(memory: &mut std::collections::BTreeMap<u64, u8>, packet_len: u64) {
    let ctx = place_base(Place::Ctx);
    let packet = place_base(Place::Packet);
    for (field, value) in [
        (xdp_md::DATA, packet),
        (xdp_md::DATA_END, packet + packet_len),
        (xdp_md::DATA_META, place_base(Place::PacketMeta)),
    ] {
        for (k, b) in (value as u32).to_le_bytes().into_iter().enumerate() {
            memory.insert(ctx + field + k as u64, b);
        }
    }
}

/// `count` random tests of a window: registers by their entry facts (pointers at their known
/// offset, or a random one nearby), memory pseudo-random.
pub fn random_tests(window: &Window, count: usize, rng: &mut StdRng) -> Vec<WindowTest> {
    (0..count)
        .map(|i| {
            let packet = place_base(Place::Packet);
            let packet_len: u64 = rng.gen_range(14..1600);
            let mut regs = [0u64; NUM_REGS];
            for (r, fact) in window.entry.iter().enumerate() {
                regs[r] = match *fact {
                    EntryFact::Constant(c) => c,
                    EntryFact::Pointer {
                        place: Place::PacketEnd,
                        ..
                    } => packet + packet_len,
                    EntryFact::Pointer { place, offset } => {
                        let off = offset.unwrap_or_else(|| rng.gen_range(0..256));
                        place_base(place).wrapping_add(off as u64)
                    }
                    // Small values first: they exercise the common header fields and counters.
                    EntryFact::Scalar | EntryFact::Uninit => match i % 3 {
                        0 => rng.gen_range(0..256),
                        1 => rng.gen::<u32>() as u64,
                        _ => rng.gen(),
                    },
                };
            }
            let mut memory = std::collections::BTreeMap::new();
            put_context(&mut memory, packet_len);
            WindowTest {
                regs,
                memory,
                fill: rng.gen::<u64>() | 1,
            }
        })
        .collect()
}

/// A window's candidate without removed slots.
pub fn kept(candidate: &[Option<Instruction>]) -> Vec<Instruction> {
    candidate.iter().flatten().copied().collect()
}

impl WindowSearch {
    /// A search of `window` seeded with `seed`, with its observed tests, `tests_count` random
    /// ones and one chain per setting.
    pub fn new(
        window: Window,
        seed: u64,
        tests_count: usize,
        perf: &dyn Performance,
    ) -> WindowSearch {
        let mut rng = StdRng::seed_from_u64(seed);
        let tags = entry_tags(&window);
        let original: Candidate = window.original.iter().map(|i| Some(*i)).collect();
        // Observed states the runner cannot model (one that faults) say nothing: left out.
        let (mut tests, mut expected): (Vec<WindowTest>, Vec<Outcome>) = window
            .observed
            .iter()
            .map(|t| (t.clone(), run_window(&original, &tags, t)))
            .filter(|(_, o)| o.fault.is_none())
            .unzip();
        for t in random_tests(&window, tests_count, &mut rng) {
            expected.push(run_window(&original, &tags, &t));
            tests.push(t);
        }
        let places = places_of(expected.first());
        let original_perf = window.weight * perf.cost(&window.original, &places);
        let chains = SETTINGS
            .iter()
            .enumerate()
            .map(|(k, s)| Chain {
                setting: *s,
                rng: StdRng::seed_from_u64(
                    seed ^ (0x5851_f42d_4c95_7f2d_u64.wrapping_mul(k as u64 + 1)),
                ),
                current: original.clone(),
                cost: 0.0,
            })
            .collect();
        WindowSearch {
            vocab: Vocabulary::of(&window),
            window,
            tags,
            tests,
            expected,
            chains,
            cache: HashMap::new(),
            best: original,
            best_perf: original_perf,
            original_perf,
            stats: SearchStats::default(),
            proven: Vec::new(),
            rules_applied: 0,
        }
    }

    /// Applies the library's rules to the best candidate while one proves an improvement, and
    /// starts every chain from the result.
    pub fn apply_rules(
        &mut self,
        rules: &[Compiled],
        prover: &mut dyn Prover,
        perf: &dyn Performance,
    ) {
        if !self.searchable() || rules.is_empty() {
            return;
        }
        let width = self.window.original.len();
        'improve: for _ in 0..width {
            let current = kept(&self.best);
            for at in 0..current.len() {
                for rule in rules {
                    let Some(instance) = instantiate(rule, &current[at..]) else {
                        continue;
                    };
                    let mut next: Vec<Instruction> = current[..at].to_vec();
                    next.extend(&instance);
                    next.extend(&current[at + rule.pattern.len()..]);
                    if next.len() > width {
                        continue;
                    }
                    let mut candidate: Candidate = next.iter().map(|i| Some(*i)).collect();
                    candidate.resize(width, None);
                    let before = (self.best_perf, self.proven.len());
                    self.cost(&candidate, SETTINGS[0], prover, perf);
                    if self.proven.len() > before.1 && self.best_perf < before.0 {
                        self.rules_applied += 1;
                        continue 'improve;
                    }
                }
            }
            break;
        }
        for chain in &mut self.chains {
            chain.current = self.best.clone();
            chain.cost = chain.setting.beta * (self.best_perf - self.original_perf);
        }
    }

    /// Whether the original run faulted on some test: the window is outside what the runner
    /// models (its tests would mean nothing), so it is not searched.
    pub fn searchable(&self) -> bool {
        self.expected.iter().all(|o| o.fault.is_none())
    }

    /// The improvement found so far, in the goal's units.
    pub fn gain(&self) -> f64 {
        self.original_perf - self.best_perf
    }

    /// Runs every chain `iterations` steps.
    pub fn run(&mut self, iterations: u64, prover: &mut dyn Prover, perf: &dyn Performance) {
        if !self.searchable() {
            return;
        }
        for c in 0..self.chains.len() {
            for _ in 0..iterations {
                self.step(c, prover, perf);
            }
        }
    }

    fn step(&mut self, c: usize, prover: &mut dyn Prover, perf: &dyn Performance) {
        let setting = self.chains[c].setting;
        let rule = draw_rule(&mut self.chains[c].rng, &setting.rules);
        let chain = &mut self.chains[c];
        let proposal = propose(&chain.current, rule, &self.vocab, &mut chain.rng);
        if proposal == self.chains[c].current {
            return;
        }
        self.stats.candidates += 1;
        let cost = self.cost(&proposal, setting, prover, perf);
        let chain = &mut self.chains[c];
        // Metropolis–Hastings acceptance (Eq. 3) with symmetric proposals.
        let accept = cost <= chain.cost || chain.rng.gen::<f64>() < (chain.cost - cost).exp();
        if accept {
            chain.current = proposal;
            chain.cost = cost;
        }
    }

    fn cost(
        &mut self,
        candidate: &Candidate,
        s: Setting,
        prover: &mut dyn Prover,
        perf: &dyn Performance,
    ) -> f64 {
        let insns = kept(candidate);
        let mut err = 0.0;
        let mut failing = 0usize;
        let mut places = Vec::new();
        for (i, (test, expected)) in self.tests.iter().zip(&self.expected).enumerate() {
            let got = run_window(candidate, &self.tags, test);
            if safety_violation(expected, &got).is_some() {
                return UNSAFE_COST
                    + s.beta * (self.window.weight * perf.cost(&insns, &[]) - self.original_perf);
            }
            if i == 0 {
                places = places_of(Some(&got));
            }
            let d = distance(&self.window, test, expected, &got, s.absolute);
            if d > 0.0 {
                failing += 1;
                err += d;
            }
        }
        if s.average && !self.tests.is_empty() {
            err /= self.tests.len() as f64;
        }
        let p = self.window.weight * perf.cost(&insns, &places);
        let mut unequal = failing > 0;
        if !unequal {
            // Canonical form (paper 002 §5 V): without instructions whose results nothing reads.
            // It behaves as the candidate on every live output, so it is what gets proven, and
            // candidates differing only in dead code share one cache entry.
            let canonical = without_dead_code(&insns, self.window.live_out);
            let places = if canonical.len() == insns.len() {
                places
            } else {
                Vec::new()
            };
            let pc = self.window.weight * perf.cost(&canonical, &places);
            if pc < self.best_perf {
                match self.proven(&canonical, prover) {
                    Some(true) => {
                        let mut best: Candidate = canonical.iter().map(|i| Some(*i)).collect();
                        best.resize(candidate.len(), None);
                        self.best = best.clone();
                        self.best_perf = pc;
                        self.proven.push(best);
                    }
                    _ => unequal = true,
                }
            } else {
                // Not better than the best: whether it is equal matters only as the error
                // term; a cached verdict is used, no solver call is made.
                unequal = !matches!(self.cache.get(&canonical), Some(true))
                    && canonical != self.window.original;
            }
        }
        let num_tests = if unequal { failing.max(1) as f64 } else { 0.0 };
        s.alpha * (err + num_tests) + s.beta * (p - self.original_perf)
    }

    /// Whether the candidate is proven equivalent (cached), adding a counterexample as a test.
    fn proven(&mut self, insns: &[Instruction], prover: &mut dyn Prover) -> Option<bool> {
        if let Some(v) = self.cache.get(insns) {
            self.stats.cache_hits += 1;
            return Some(*v);
        }
        self.stats.proofs_asked += 1;
        let verdict = match prover.prove(&self.window, insns) {
            Proof::Equivalent => {
                self.stats.proven += 1;
                Some(true)
            }
            Proof::Counterexample(test) => {
                self.stats.counterexamples += 1;
                let original: Candidate = self.window.original.iter().map(|i| Some(*i)).collect();
                let expected = run_window(&original, &self.tags, &test);
                if expected.fault.is_none() {
                    self.tests.push(test);
                    self.expected.push(expected);
                }
                Some(false)
            }
            Proof::Unknown => {
                self.stats.unknown += 1;
                None
            }
        };
        if let Some(v) = verdict {
            self.cache.insert(insns.to_vec(), v);
        }
        verdict
    }
}

/// Whether an instruction reads a register neither readable at the window's entry nor written
/// before it in the window (the checker refuses reads of unwritten registers; a register the
/// original window does not read may be anything when it starts, see [`Window`]).
pub fn reads_unreadable(insns: &[Instruction], entry: &[EntryFact; NUM_REGS]) -> bool {
    let mut readable: u16 = entry
        .iter()
        .enumerate()
        .filter(|(_, f)| **f != EntryFact::Uninit)
        .fold(0, |m, (r, _)| m | 1 << r);
    for insn in insns {
        if insn.reads() & !readable != 0 {
            return true;
        }
        readable |= insn.writes();
    }
    false
}

/// `insns` without the ALU operations, byte swaps and loads whose register nothing reads before
/// it is written again or the window ends with it dead (`live_out`).
pub fn without_dead_code(insns: &[Instruction], live_out: u16) -> Vec<Instruction> {
    let mut live = live_out;
    let mut keep = vec![true; insns.len()];
    for (k, insn) in insns.iter().enumerate().rev() {
        let pure = matches!(
            insn,
            Instruction::Alu { .. } | Instruction::Endian { .. } | Instruction::Load { .. }
        );
        if pure && insn.writes() & live == 0 {
            keep[k] = false;
            continue;
        }
        live = (live & !insn.writes()) | insn.reads();
    }
    insns
        .iter()
        .zip(keep)
        .filter_map(|(i, k)| k.then_some(*i))
        .collect()
}

/// The places of a run's memory accesses in order.
fn places_of(outcome: Option<&Outcome>) -> Vec<Place> {
    outcome.map_or_else(Vec::new, |o| o.accesses.iter().map(|a| a.place).collect())
}

/// How far a candidate's run is from the original's on a test: over the live-out registers and
/// every live byte either wrote (0 when they agree).
pub fn distance(
    window: &Window,
    test: &WindowTest,
    expected: &Outcome,
    got: &Outcome,
    absolute: bool,
) -> f64 {
    let diff = |a: u64, b: u64| -> f64 {
        if absolute {
            (a as i128 - b as i128).unsigned_abs() as f64
        } else {
            (a ^ b).count_ones() as f64
        }
    };
    let mut d = 0.0;
    for r in 0..NUM_REGS {
        if window.live_out >> r & 1 == 0 {
            continue;
        }
        let (a, b) = (expected.regs[r], got.regs[r]);
        d += diff(a.v, b.v);
        if a.tag != b.tag {
            d += 64.0;
        }
    }
    let frame = expected.regs[10].v;
    let live = |addr: u64| -> bool {
        if addr < frame && frame - addr <= 512 {
            window.live_stack.contains(addr as i64 - frame as i64)
        } else {
            true
        }
    };
    let final_byte =
        |o: &Outcome, a: u64| o.written.get(&a).copied().unwrap_or_else(|| test.byte(a));
    for &a in expected.written.keys().chain(got.written.keys()) {
        if live(a) {
            d += diff(final_byte(expected, a) as u64, final_byte(got, a) as u64);
        }
    }
    d
}
