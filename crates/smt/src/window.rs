//! Window equivalence: whether a candidate straight-line run of instructions may replace a window
//! of a program (K2's modular verification, paper 002 §5 IV and appendix C.2).
//!
//! Both windows execute through `linerate_sem::step` on the same symbolic entry state: the
//! registers' values (scalars, inferred constants, pointers into a region at a known or unknown
//! offset) and the memory they read. The check asks Z3 for an entry state on which a live-out
//! register, or a byte either window stored (stack bytes only where code after the window may
//! read them), differs at the end. None: [`WindowVerdict::Equivalent`]; one: a
//! [`WindowCounterexample`] in concrete terms, absolute addresses laid out by [`region_base`].
//! What the model cannot decide soundly (a read of an unreadable register, a store through a
//! value not known to point into a region, a store into the context, a live value that is a
//! pointer in one window and a number in the other) is [`WindowVerdict::Unknown`], never
//! equivalent.
//!
//! Memory is one byte store per region (K2 C.1 I): regions never alias. Offsets stay concrete
//! wherever the pointer's is (C.1 II), so most loads are a lookup among the written bytes with no
//! solver work; a load at a symbolic offset compares it with the bytes written before, newest
//! first, and the initial bytes at symbolic offsets are tied to the others by Ackermann's
//! reduction (equal offsets read equal bytes), shared by both windows.
//!
//! The precondition also assumes what the verifier guarantees of a safe program: every pointer's
//! offset from its region's base stays within `BPF_MAX_VAR_OFF` (2^29) bytes. Whether the
//! candidate is safe (bounds, alignment, pointer arithmetic the verifier allows) is not checked
//! here: the optimizer's safety checks do that.

mod machine;
mod memory;
mod post;
mod value;

use std::collections::BTreeMap;

use linerate_bpf::insn::{Imm64, Instruction, NUM_REGS};
use linerate_sem::Flow;
use z3::ast::{Ast, Bool, BV};
use z3::{Params, SatResult, Solver};

use crate::value::Bits;
use crate::SmtError;
pub use machine::CTX_POINTERS as CONTEXT_POINTER_FIELDS;
use machine::{Unmodelled, WindowMachine, CTX_POINTERS};
use memory::{Inputs, Variable, Writes};
use value::WinValue;

/// A memory region a pointer at the window's entry points into. Different regions never alias.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum WindowRegion {
    /// The stack frame: offsets from the frame pointer r10.
    Stack,
    /// The packet: offsets from `data`.
    Packet,
    /// The metadata in front of the packet: offsets from `data_meta`.
    PacketMeta,
    /// The `struct xdp_md` context (read-only).
    Ctx,
    /// The value of an entry of map `i` (object map index).
    MapValue(usize),
    /// Any other memory a helper hands out, numbered by the caller.
    Other(u32),
}

/// What is known of a register when the window starts (from `linerate-analysis`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EntryValue {
    /// Not readable (the verifier rejects a read): the candidate must not read it.
    Uninit,
    /// Any 64-bit scalar.
    Scalar,
    /// A scalar known to be this constant (K2's inferred concrete valuations).
    Constant(u64),
    /// A pointer into `region` at `offset` from the region's base where known (stack offsets
    /// count from the frame pointer r10, so r10 itself is `Pointer { Stack, Some(0) }`; packet
    /// offsets from `data`), at an unknown offset otherwise. `data_end` is given as `Scalar`.
    Pointer {
        region: WindowRegion,
        offset: Option<i64>,
    },
}

/// Bytes of the stack frame, `r10 - 512 .. r10`.
pub const STACK_BYTES: usize = 512;

/// One equivalence question.
#[derive(Clone, Debug)]
pub struct WindowQuery<'a> {
    pub original: &'a [Instruction],
    pub candidate: &'a [Instruction],
    pub entry: [EntryValue; NUM_REGS],
    /// Bit i set: register ri is read after the window before being written.
    pub live_out: u16,
    /// Stack bytes (index 0 = r10-512 ... 511 = r10-1) that code after the window may read.
    pub live_stack: [bool; STACK_BYTES],
}

/// The answer to a [`WindowQuery`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WindowVerdict {
    /// The candidate computes the same live outputs on every entry state the precondition allows.
    Equivalent,
    /// An entry state on which they differ.
    Different(WindowCounterexample),
    /// No answer: why (a construct the check does not model soundly, or the solver's timeout).
    Unknown(String),
}

/// An entry state on which the two windows' live outputs differ, in concrete terms: register
/// values (a pointer is its region's [`region_base`] plus its offset) and the initial bytes of
/// memory the windows read, at absolute addresses (every other byte may be anything, 0 say).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WindowCounterexample {
    pub regs: [u64; NUM_REGS],
    pub memory: Vec<(u64, u8)>,
}

/// How far a pointer's offset may stray from its region's base: the verifier's
/// `BPF_MAX_VAR_OFF` (include/linux/bpf_verifier.h, `1 << 29`) bounds every pointer offset it
/// accepts, so regions whose bases lie at least 2^31 apart can never meet.
pub const MAX_OFFSET: i64 = 1 << 29;

/// Distance between region bases: two [`MAX_OFFSET`]s and more.
const SPACING: u64 = 1 << 31;

/// The concrete address a region starts at in counterexamples (for the stack: the frame pointer
/// r10's value). Bases are distinct, 8-aligned and `SPACING` apart; the packet's and the
/// metadata's lie below 2^32, because the context holds them as 32-bit fields that a window may
/// load (the kernel rewrites those loads into loads of the full pointer). Map values are distinct
/// for map indexes below 2^24, other regions for every number.
pub fn region_base(region: WindowRegion) -> u64 {
    match region {
        WindowRegion::Packet => SPACING / 2,
        WindowRegion::PacketMeta => SPACING + SPACING / 2,
        WindowRegion::Stack => 2 * SPACING + SPACING / 2,
        WindowRegion::Ctx => 3 * SPACING + SPACING / 2,
        WindowRegion::MapValue(i) => (1u64 << 39).wrapping_add((i as u64).wrapping_mul(SPACING)),
        WindowRegion::Other(k) => (1u64 << 56) + u64::from(k) * SPACING,
    }
}

/// The registers `insn` reads (bit i: ri) and writes, for an instruction a window may hold
/// (ALU, byte swaps, loads, stores, atomics, 64-bit constants); `None` for the others (jumps,
/// calls, exits, map and function references). Decoding only: what the instruction does with
/// them is `linerate_sem::step`'s.
pub fn registers_used(insn: &Instruction) -> Option<(u16, u16)> {
    match insn {
        Instruction::Alu { .. }
        | Instruction::Endian { .. }
        | Instruction::LoadImm64 {
            imm: Imm64::Const(_),
            ..
        }
        | Instruction::Load { .. }
        | Instruction::Store { .. }
        | Instruction::Atomic { .. } => Some((insn.reads(), insn.writes())),
        _ => None,
    }
}

/// Checks that every instruction of `window` may be in a window and reads only registers that
/// are readable when it starts or written before; the reason otherwise.
fn readable(window: &[Instruction], entry: &[EntryValue; NUM_REGS], which: &str) -> Option<String> {
    let mut init: u16 = entry
        .iter()
        .enumerate()
        .filter(|(_, e)| **e != EntryValue::Uninit)
        .fold(0, |m, (i, _)| m | 1 << i);
    for (i, insn) in window.iter().enumerate() {
        let Some((reads, writes)) = registers_used(insn) else {
            return Some(format!(
                "{which} insn {i}: {insn:?} cannot be part of a window"
            ));
        };
        let unreadable = reads & !init;
        if unreadable != 0 {
            return Some(format!(
                "{which} insn {i} reads r{}, which is not readable there",
                unreadable.trailing_zeros()
            ));
        }
        init |= writes;
    }
    None
}

/// Counts of what a [`WindowChecker`] answered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WindowStats {
    pub checks: u64,
    /// Checks the solver was asked (the others were decided by folding constants).
    pub solver_calls: u64,
    pub equivalent: u64,
    pub different: u64,
    pub unknown: u64,
}

/// Checks window equivalence with one Z3 solver, reset for each query.
///
/// ```
/// use linerate_bpf::insn::build::{alu64, alu64_reg};
/// use linerate_bpf::insn::{AluOp, NUM_REGS};
/// use linerate_smt::{EntryValue, WindowChecker, WindowQuery, WindowRegion, WindowVerdict};
///
/// // r1 *= r3 where r3 is known to be 4, against r1 <<= 2; only r1 is read afterwards.
/// let mut entry = [EntryValue::Uninit; NUM_REGS];
/// entry[1] = EntryValue::Scalar;
/// entry[3] = EntryValue::Constant(4);
/// entry[10] = EntryValue::Pointer { region: WindowRegion::Stack, offset: Some(0) };
/// let (original, candidate) = ([alu64_reg(AluOp::Mul, 1, 3)], [alu64(AluOp::Lsh, 1, 2)]);
/// let query = WindowQuery {
///     original: &original,
///     candidate: &candidate,
///     entry,
///     live_out: 1 << 1,
///     live_stack: [false; 512],
/// };
/// let mut checker = WindowChecker::new(1_000);
/// assert_eq!(checker.check(&query)?, WindowVerdict::Equivalent);
///
/// // Without the inferred constant, a counterexample: r1 and r3 at the entry.
/// entry[3] = EntryValue::Scalar;
/// let WindowVerdict::Different(cex) = checker.check(&WindowQuery { entry, ..query })? else {
///     panic!("r1 * r3 is not r1 << 2 for every r3");
/// };
/// assert_ne!(cex.regs[1].wrapping_mul(cex.regs[3]), cex.regs[1] << 2);
/// # Ok::<(), linerate_smt::SmtError>(())
/// ```
pub struct WindowChecker {
    solver: Solver,
    stats: WindowStats,
}

impl WindowChecker {
    /// A checker whose solver gives up after `timeout_ms` per query (then: unknown).
    pub fn new(timeout_ms: u32) -> Self {
        let solver = Solver::new_for_logic("QF_BV").unwrap_or_default();
        let mut params = Params::new();
        params.set_u32("timeout", timeout_ms);
        solver.set_params(&params);
        WindowChecker {
            solver,
            stats: WindowStats::default(),
        }
    }

    /// What the checker answered so far.
    pub fn stats(&self) -> WindowStats {
        self.stats
    }

    /// Whether `q.candidate` may replace `q.original`.
    pub fn check(&mut self, q: &WindowQuery) -> Result<WindowVerdict, SmtError> {
        let verdict = self.decide(q);
        self.stats.checks += 1;
        match verdict {
            WindowVerdict::Equivalent => self.stats.equivalent += 1,
            WindowVerdict::Different(_) => self.stats.different += 1,
            WindowVerdict::Unknown(_) => self.stats.unknown += 1,
        }
        Ok(verdict)
    }

    fn decide(&mut self, q: &WindowQuery) -> WindowVerdict {
        let unknown = |why: String| WindowVerdict::Unknown(why);
        for (window, which) in [(q.original, "original"), (q.candidate, "candidate")] {
            if let Some(why) = readable(window, &q.entry, which) {
                return unknown(why);
            }
        }
        let mut inputs = Inputs::default();
        let entry = match entry_state(&q.entry, &mut inputs) {
            Ok(regs) => regs,
            Err(why) => return unknown(why),
        };
        let original = match run(q.original, entry.clone(), &mut inputs) {
            Ok(end) => end,
            Err(why) => return unknown(format!("original: {why}")),
        };
        let candidate = match run(q.candidate, entry.clone(), &mut inputs) {
            Ok(end) => end,
            Err(why) => return unknown(format!("candidate: {why}")),
        };
        let differs = match post::differences(q, &original, &candidate, &mut inputs) {
            Ok(d) => d,
            Err(why) => return unknown(why),
        };
        let goal = Bool::or(&differs.iter().collect::<Vec<_>>()).simplify();
        if goal.as_bool() == Some(false) {
            return WindowVerdict::Equivalent;
        }
        if let Some(cex) = guess(&goal, &entry, &inputs, self.stats.checks) {
            return WindowVerdict::Different(cex);
        }
        self.stats.solver_calls += 1;
        // A fresh start rather than push/pop: in incremental mode Z3 leaves its bit-vector
        // preprocessing aside, and proofs about 64-bit division that took it 0.7 s ran into a
        // 10 s timeout (random windows of the tests); easy checks lose ~0.7 ms.
        self.solver.reset();
        for c in &inputs.constraints {
            self.solver.assert(c);
        }
        self.solver.assert(&goal);
        let verdict = match self.solver.check() {
            SatResult::Unsat => WindowVerdict::Equivalent,
            SatResult::Sat => match self.solver.get_model() {
                Some(model) => {
                    let eval = |bv: &BV| model.eval(bv, true).and_then(|v| v.as_u64()).unwrap_or(0);
                    WindowVerdict::Different(counterexample(&eval, &entry, &inputs))
                }
                None => unknown("the solver found a difference but gave no model".into()),
            },
            SatResult::Unknown => unknown(format!(
                "the solver gave up: {}",
                self.solver
                    .get_reason_unknown()
                    .unwrap_or_else(|| "no reason given".into())
            )),
        };
        verdict
    }
}

/// A window's end state.
pub(crate) struct End {
    regs: [WinValue; NUM_REGS],
    writes: Writes,
}

/// The registers at the window's entry; unknown pointer offsets are bounded in `inputs`.
fn entry_state(
    entry: &[EntryValue; NUM_REGS],
    inputs: &mut Inputs,
) -> Result<[WinValue; NUM_REGS], String> {
    let mut regs: [WinValue; NUM_REGS] =
        std::array::from_fn(|_| WinValue::Invalid("an unreadable register"));
    for (i, e) in entry.iter().enumerate() {
        regs[i] = match *e {
            EntryValue::Uninit => WinValue::Invalid("an unreadable register"),
            EntryValue::Scalar => {
                let v = BV::new_const(format!("r{i}"), 64);
                inputs.variables.push((v.clone(), Variable::Scalar));
                WinValue::Scalar(Bits::Sym(v))
            }
            EntryValue::Constant(c) => WinValue::Scalar(Bits::Const(c)),
            EntryValue::Pointer {
                region,
                offset: Some(o),
            } => {
                if !(-MAX_OFFSET..=MAX_OFFSET).contains(&o) {
                    return Err(format!(
                        "r{i} points {o} bytes from {region:?}'s base, beyond any the verifier allows"
                    ));
                }
                WinValue::Ptr {
                    region,
                    offset: Bits::Const(o as u64),
                }
            }
            EntryValue::Pointer {
                region,
                offset: None,
            } => {
                let o = BV::new_const(format!("r{i}.offset"), 64);
                inputs.variables.push((o.clone(), Variable::Offset));
                inputs
                    .constraints
                    .push(BV::from_i64(-MAX_OFFSET, 64).bvsle(&o));
                inputs
                    .constraints
                    .push(o.bvsle(BV::from_i64(MAX_OFFSET, 64)));
                WinValue::Ptr {
                    region,
                    offset: Bits::Sym(o),
                }
            }
        };
    }
    Ok(regs)
}

/// Runs `window` from `regs` through the one semantics.
fn run(
    window: &[Instruction],
    regs: [WinValue; NUM_REGS],
    inputs: &mut Inputs,
) -> Result<End, String> {
    let mut m = WindowMachine::new(regs, inputs);
    for (pc, insn) in window.iter().enumerate() {
        match linerate_sem::step(&mut m, pc, insn) {
            Ok(Flow::Next(_)) => {}
            Ok(_) => return Err(format!("insn {pc}: control flow inside a window")),
            Err(Unmodelled(why)) => return Err(why),
        }
        if let Some(why) = m.domain.fault.take() {
            return Err(format!("insn {pc}: {why}"));
        }
    }
    Ok(End {
        regs: m.regs,
        writes: m.writes,
    })
}

/// Entry states tried on the formula before the solver is asked.
const GUESSES: u64 = 4;

/// A counterexample found by evaluating the formula on a few pseudo-random entry states (seeded
/// by `seed`), as K2's search tries test inputs before the solver: most different windows
/// differ almost everywhere, and substituting numbers costs a fraction of bit-blasting a 64-bit
/// division.
fn guess(
    goal: &Bool,
    entry: &[WinValue; NUM_REGS],
    inputs: &Inputs,
    seed: u64,
) -> Option<WindowCounterexample> {
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut next = move || {
        // splitmix64
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    for round in 0..GUESSES {
        let values: Vec<(BV, BV)> = inputs
            .variables
            .iter()
            .map(|(var, kind)| {
                let r = next();
                let value = match kind {
                    // Small numbers every other round: divisors, shift amounts, offsets.
                    Variable::Scalar if round % 2 == 0 => BV::from_u64(r % 64, 64),
                    Variable::Scalar => BV::from_u64(r, 64),
                    Variable::Offset => BV::from_i64((r % 128) as i64 - 64, 64),
                    Variable::Byte => BV::from_u64(r & 0xff, 8),
                };
                (var.clone(), value)
            })
            .collect();
        let pairs: Vec<(&BV, &BV)> = values.iter().map(|(v, x)| (v, x)).collect();
        let holds = |c: &Bool| c.substitute(&pairs).simplify().as_bool() == Some(true);
        if holds(goal) && inputs.constraints.iter().all(holds) {
            let eval = |bv: &BV| bv.substitute(&pairs).simplify().as_u64().unwrap_or(0);
            return Some(counterexample(&eval, entry, inputs));
        }
    }
    None
}

/// The concrete entry state given by `eval`, the value of every input.
fn counterexample(
    eval: &dyn Fn(&BV) -> u64,
    entry: &[WinValue; NUM_REGS],
    inputs: &Inputs,
) -> WindowCounterexample {
    let bits = |b: &Bits| match b {
        Bits::Const(v) => *v,
        Bits::Sym(bv) => eval(bv),
    };
    let regs = std::array::from_fn(|i| match &entry[i] {
        WinValue::Scalar(b) => bits(b),
        WinValue::Ptr { region, offset } => region_base(*region).wrapping_add(bits(offset)),
        WinValue::Invalid(_) => 0,
    });
    let mut memory = BTreeMap::new();
    for (region, offset, byte) in inputs.concrete() {
        memory.insert(region_base(region).wrapping_add(offset), eval(byte) as u8);
    }
    for (region, offset, byte) in inputs.symbolic() {
        memory
            .entry(region_base(*region).wrapping_add(eval(offset)))
            .or_insert(eval(byte) as u8);
    }
    // The context's pointer fields hold the low halves of the bases (below 2^32).
    for (field, region) in CTX_POINTERS.into_iter().filter(|_| inputs.context_pointers) {
        let base = region_base(region) as u32;
        for (i, b) in base.to_le_bytes().into_iter().enumerate() {
            memory.insert(region_base(WindowRegion::Ctx) + field + i as u64, b);
        }
    }
    WindowCounterexample {
        regs,
        memory: memory.into_iter().collect(),
    }
}
