//! Path-invariant branch conditions: which conditional-branch edges of a prepared graph test the
//! same formula over the program's inputs on every path that reaches them.
//!
//! The search uses this to turn an unsatisfiable core into a conflict between edges
//! ([`crate::ssp`]): if the conditions at a set of edges are each the same formula on every path,
//! and those formulas conflict on their own over the inputs (checked by
//! `linerate_smt::PathChecker::input_conflicts`), then every path holding all those edges asserts
//! that conflicting conjunction and is impossible, wherever it comes from and whatever else it
//! does. Without the first half a core proves only that paths sharing its prefix are impossible.
//!
//! The analysis is reaching definitions over the graph's instruction instances (a node is a copy
//! of a piece of a block, so one instruction has an instance per copy). Each register holds, at
//! each point, either one definition instance — the same on every path from the source to that
//! point — whose value is the same formula on every such path, or nothing known ("varying").
//! Walking the nodes in their (topological) order:
//!
//! - At a node's entry a register keeps an instance only when every edge into the node delivers
//!   that same instance. Edges that inline a call or return from one, that enter another program
//!   by a tail call, or that stand for summarised work (callbacks, a loop's middle iterations)
//!   make every register varying: the analysis does not follow values across them.
//! - An instruction defining a register gives it a new instance, invariant when its operands are:
//!   constants (immediates, 64-bit constant loads); ALU and byte-order operations on invariant
//!   registers (each is a function of its operands, so the same operands give the same formula);
//!   loads from the context or the packet (per the analysis's region fact of the load) at an
//!   invariant address, provided no path to the load may have written or moved the packet; loads
//!   from a stack slot at a known offset of the frame (the frame pointer plus constants) that
//!   every path to the load last wrote with the same store of the same width, of an invariant
//!   value (the load reads back what that store wrote). A load from anywhere else (map values,
//!   the stack elsewhere), a helper's or kfunc's result and the registers they clobber are
//!   varying. Stack slots are forgotten at a store or atomic the analysis does not place off the
//!   stack at a known offset, at helpers that may write through their arguments, and across
//!   calls, returns and summarised work.
//! - "May have written the packet" is true past any store or atomic the analysis does not place
//!   on the stack or in a map value, any helper not known to leave packet data and bounds alone
//!   ([`leaves_packet`]: `bpf_xdp_adjust_head`, `bpf_xdp_store_bytes`, `bpf_fib_lookup` writing
//!   its parameters, ... are not), any kfunc, and any summarised callback or loop; it flows along
//!   every edge, so it holds at a point when it holds on some path to it.
//!
//! The argument, by induction over the instances in graph order: if a register holds instance
//! `d` at a point, every path to that point last defined the register at `d`, which each path
//! reaches at most once (the graph has no cycles) with its operands holding the same instances,
//! hence the same formulas; a load reads input bytes that nothing on any path before it changed.
//! So a conditional jump whose compared registers are invariant asserts the same condition, one
//! formula over the inputs, on every path taking a given outcome edge.

use std::collections::BTreeMap;

use linerate_analysis::{Analysis, Fact, Region};
use linerate_bpf::facts::helper;
use linerate_bpf::insn::{AluOp, CallTarget, Imm64, Instruction, Operand, NUM_REGS};
use linerate_bpf::program::MapType;
use linerate_bpf::Object;
use linerate_cfg::{Cfg, EdgeKind};

use crate::dag::{EdgeId, Step};
use crate::prepare::Prepared;

/// What a register holds: an invariant definition instance, or [`VARYING`].
type Def = u32;
const VARYING: Def = u32::MAX;
/// The context pointer `r1` at the program's entry.
const CONTEXT: Def = 0;

mod gap;
mod window;

pub use window::Window;

/// The branch edges of a prepared graph whose conditions are invariant.
#[derive(Clone, Debug, Default)]
pub struct Invariance {
    edges: Vec<bool>,
    /// What holds at each node's entry (empty where not analysed), and the programs' decoded
    /// slots and analyses: the start of [`Invariance::windows`]' walk along one path.
    entries: Vec<Point>,
    programs: Vec<Option<Program>>,
    /// For each map of the object, its key size where it is an array (`BPF_MAP_TYPE_ARRAY`,
    /// `PERCPU_ARRAY`: every index below `max_entries` present, whatever the path did).
    arrays: Vec<Option<u32>>,
}

/// Register contents and whether the packet may have been written, at one point; which
/// registers hold the frame pointer plus a known offset, and the stack slots at known offsets of
/// the current frame (offset -> width and the definition instance stored there).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Point {
    regs: [Def; NUM_REGS],
    dirty: bool,
    fp: [Option<i64>; NUM_REGS],
    slots: BTreeMap<i64, (u32, Def)>,
}

impl Point {
    fn varying(dirty: bool) -> Point {
        let mut fp = [None; NUM_REGS];
        fp[10] = Some(0);
        Point {
            regs: [VARYING; NUM_REGS],
            dirty,
            fp,
            slots: BTreeMap::new(),
        }
    }

    fn join(&mut self, other: &Point) {
        for (a, b) in self.regs.iter_mut().zip(&other.regs) {
            if *a != *b {
                *a = VARYING;
            }
        }
        for (a, b) in self.fp.iter_mut().zip(&other.fp) {
            if *a != *b {
                *a = None;
            }
        }
        self.slots.retain(|o, v| other.slots.get(o) == Some(v));
        self.dirty |= other.dirty;
    }

    fn reg(&self, r: u8) -> Def {
        self.regs.get(r as usize).copied().unwrap_or(VARYING)
    }

    fn set(&mut self, r: u8, d: Def) {
        if let Some(slot) = self.regs.get_mut(r as usize) {
            *slot = d;
        }
        if let Some(fp) = self.fp.get_mut(r as usize) {
            *fp = None;
        }
    }

    fn fp_of(&self, r: u8) -> Option<i64> {
        self.fp.get(r as usize).copied().flatten()
    }

    /// Forgets the slots overlapping `width` bytes at frame offset `at`.
    fn forget(&mut self, at: i64, width: u32) {
        let end = at + i64::from(width);
        self.slots
            .retain(|&o, &mut (w, _)| o + i64::from(w) <= at || o >= end);
    }

    fn clobber_call(&mut self) {
        for r in 0..=5 {
            self.regs[r] = VARYING;
            self.fp[r] = None;
        }
    }
}

/// Whether helper `id` neither writes packet data (nor any other memory: the stack) through any
/// pointer argument nor moves the packet's bounds. Only helpers known to be so; every other one counts as writing the packet.
/// Sources: the helpers' descriptions in `include/uapi/linux/bpf.h` (map helpers copy from
/// their key and value arguments into the map, output helpers read their data argument).
pub fn leaves_packet(id: u32) -> bool {
    matches!(
        id,
        helper::MAP_LOOKUP_ELEM
            | helper::MAP_UPDATE_ELEM
            | helper::MAP_DELETE_ELEM
            | helper::MAP_PUSH_ELEM
            | helper::KTIME_GET_NS
            | helper::KTIME_GET_BOOT_NS
            | helper::TRACE_PRINTK
            | helper::GET_PRANDOM_U32
            | helper::GET_SMP_PROCESSOR_ID
            | helper::TAIL_CALL
            | helper::REDIRECT
            | helper::REDIRECT_MAP
            | helper::CSUM_DIFF
            | helper::XDP_GET_BUFF_LEN
            | helper::PERF_EVENT_OUTPUT
            | helper::RINGBUF_OUTPUT
    )
}

/// Whether a store or atomic the analysis places in `fact` certainly leaves the packet alone.
fn off_packet(fact: Option<Fact>) -> bool {
    matches!(
        fact,
        Some(Fact::Memory(Some(
            Region::Stack { .. } | Region::MapValue { .. }
        )))
    )
}

impl Invariance {
    /// No edge invariant: the search then prunes by prefixes only.
    pub fn none(edges: usize) -> Invariance {
        Invariance {
            edges: vec![false; edges],
            ..Invariance::default()
        }
    }

    /// Whether edge `e` is a conditional branch outcome whose condition is the same formula over
    /// the inputs on every path reaching it.
    pub fn edge(&self, e: EdgeId) -> bool {
        self.edges.get(e).copied().unwrap_or(false)
    }

    /// Edges found invariant.
    pub fn count(&self) -> usize {
        self.edges.iter().filter(|&&b| b).count()
    }

    /// Analyses `prepared`, the graph of a program of `object`. A program of a node that cannot
    /// be decoded or analysed leaves that node's branches varying.
    pub fn analyse(object: &Object, prepared: &Prepared) -> Invariance {
        let dag = &prepared.dag;
        let mut programs: Vec<Option<Program>> = (0..object.programs.len()).map(|_| None).collect();
        let mut into: Vec<Vec<EdgeId>> = vec![Vec::new(); dag.nodes.len()];
        for (e, edge) in dag.edges.iter().enumerate() {
            into[edge.to].push(e);
        }
        let mut exits: Vec<Point> = Vec::with_capacity(dag.nodes.len());
        let mut entries: Vec<Point> = Vec::with_capacity(dag.nodes.len());
        let mut out = Invariance::none(dag.edges.len());
        let mut next_def: Def = CONTEXT + 1;
        for (n, node) in dag.nodes.iter().enumerate() {
            let mut point = if n == crate::dag::PathDag::SOURCE {
                let mut p = Point::varying(false);
                p.regs[1] = CONTEXT;
                p
            } else {
                let mut joined: Option<Point> = None;
                for &e in &into[n] {
                    let edge = &dag.edges[e];
                    let Some(before) = exits.get(edge.from) else {
                        continue;
                    };
                    let along = across(before, edge.step);
                    match &mut joined {
                        Some(j) => j.join(&along),
                        None => joined = Some(along),
                    }
                }
                joined.unwrap_or_else(|| Point::varying(true))
            };
            let program = node.program.and_then(|p| {
                if programs.get(p).is_some_and(Option::is_none) {
                    programs[p] = Program::load(object, p);
                }
                programs.get(p).and_then(Option::as_ref)
            });
            entries.push(point.clone());
            let Some(program) = program else {
                exits.push(Point::varying(true));
                continue;
            };
            let end = prepared.ends.get(n).copied().unwrap_or(node.slot);
            let mut branch = false;
            for slot in node.slot..end {
                let Some(Some(insn)) = program.slots.get(slot) else {
                    continue;
                };
                if prepared.branch_pc(n) == Some(slot) {
                    branch = invariant_jump(&point, insn);
                }
                transfer(&mut point, insn, program.analysis.fact(slot), &mut next_def);
            }
            if branch {
                for &e in &node.out {
                    if matches!(
                        dag.edges[e].step,
                        Step::Flow(EdgeKind::Taken | EdgeKind::NotTaken)
                    ) {
                        out.edges[e] = true;
                    }
                }
            }
            exits.push(point);
        }
        out.entries = entries;
        out.programs = programs;
        out.arrays = object
            .maps
            .iter()
            .map(|m| {
                matches!(m.map_type, MapType::ARRAY | MapType::PERCPU_ARRAY).then_some(m.key_size)
            })
            .collect();
        out
    }
}

/// A program's decoded slots and its analysis.
#[derive(Clone, Debug)]
struct Program {
    slots: Vec<Option<Instruction>>,
    analysis: Analysis,
}

impl Program {
    fn load(object: &Object, p: usize) -> Option<Program> {
        let program = object.programs.get(p)?;
        let decoded = program.decode().ok()?;
        let mut slots = vec![None; program.insns.len()];
        for (i, insn) in decoded {
            *slots.get_mut(i)? = Some(insn);
        }
        let cfg = Cfg::build(program).ok()?;
        let analysis = Analysis::run(object, &cfg);
        Some(Program { slots, analysis })
    }
}

/// The point after an edge of kind `step` leaves a node whose exit is `before`.
fn across(before: &Point, step: Step) -> Point {
    match step {
        Step::Flow(_) | Step::Exit | Step::TailCall { program: None, .. } => before.clone(),
        Step::Call { .. } | Step::Return { .. } | Step::TailCall { .. } => {
            Point::varying(before.dirty)
        }
        Step::Callbacks { .. } | Step::Loop { .. } => Point::varying(true),
    }
}

/// Whether the conditional jump `insn` compares invariant registers (false for anything else).
fn invariant_jump(point: &Point, insn: &Instruction) -> bool {
    match *insn {
        Instruction::Jump { dst, src, .. } => {
            point.reg(dst) != VARYING
                && match src {
                    Operand::Imm(_) => true,
                    Operand::Reg(s) => point.reg(s) != VARYING,
                }
        }
        _ => false,
    }
}

/// Applies `insn` (whose analysis fact is `fact`) to `point`; new invariant instances get ids
/// from `next`.
fn transfer(point: &mut Point, insn: &Instruction, fact: Option<Fact>, next: &mut Def) {
    let mut fresh = || {
        let d = *next;
        *next = next.saturating_add(1).min(VARYING - 1);
        d
    };
    let stack = matches!(fact, Some(Fact::Memory(Some(Region::Stack { .. }))));
    // A store the analysis places nowhere known may hit the stack.
    let elsewhere =
        matches!(fact, Some(Fact::Memory(Some(r))) if !matches!(r, Region::Stack { .. }));
    match *insn {
        Instruction::Alu { wide, op, dst, src } => {
            let dst_ok = matches!(op, AluOp::Mov | AluOp::MovSx(_)) || point.reg(dst) != VARYING;
            let src_ok = match src {
                Operand::Imm(_) => true,
                Operand::Reg(s) => point.reg(s) != VARYING,
            };
            let fp = match (op, src) {
                (AluOp::Mov, Operand::Reg(s)) if wide => point.fp_of(s),
                (AluOp::Add, Operand::Imm(i)) if wide => {
                    point.fp_of(dst).map(|o| o.wrapping_add(i64::from(i)))
                }
                (AluOp::Sub, Operand::Imm(i)) if wide => {
                    point.fp_of(dst).map(|o| o.wrapping_sub(i64::from(i)))
                }
                _ => None,
            };
            let d = if dst_ok && src_ok { fresh() } else { VARYING };
            point.set(dst, d);
            if let Some(f) = point.fp.get_mut(dst as usize) {
                *f = fp;
            }
        }
        Instruction::Endian { dst, .. } => {
            let d = if point.reg(dst) != VARYING {
                fresh()
            } else {
                VARYING
            };
            point.set(dst, d);
        }
        Instruction::LoadImm64 { dst, imm } => {
            let d = if matches!(imm, Imm64::Const(_)) {
                fresh()
            } else {
                VARYING
            };
            point.set(dst, d);
        }
        Instruction::Load {
            size,
            signed,
            dst,
            src,
            off,
        } => {
            let input = matches!(fact, Some(Fact::Memory(Some(Region::Ctx | Region::Packet))));
            let from_slot = stack
                && !signed
                && point
                    .fp_of(src)
                    .and_then(|o| point.slots.get(&(o + i64::from(off))))
                    .is_some_and(|&(w, d)| w == size.bytes() && d != VARYING);
            let d = if (input && !point.dirty && point.reg(src) != VARYING) || from_slot {
                fresh()
            } else {
                VARYING
            };
            point.set(dst, d);
        }
        Instruction::Store {
            size,
            dst,
            off,
            src,
        } => {
            if !off_packet(fact) {
                point.dirty = true;
            }
            match (stack, point.fp_of(dst)) {
                (true, Some(o)) => {
                    let at = o + i64::from(off);
                    point.forget(at, size.bytes());
                    let d = match src {
                        Operand::Imm(_) => fresh(),
                        Operand::Reg(r) => point.reg(r),
                    };
                    point.slots.insert(at, (size.bytes(), d));
                }
                _ if elsewhere => {}
                _ => point.slots.clear(),
            }
        }
        Instruction::Atomic {
            size,
            src,
            fetch,
            dst,
            off,
            ..
        } => {
            if !off_packet(fact) {
                point.dirty = true;
            }
            match (stack, point.fp_of(dst)) {
                (true, Some(o)) => point.forget(o + i64::from(off), size.bytes()),
                _ if elsewhere => {}
                _ => point.slots.clear(),
            }
            if fetch {
                point.set(src, VARYING);
            }
            point.set(0, VARYING);
        }
        Instruction::LegacyPacketLoad { .. } => point.clobber_call(),
        Instruction::Call(target) => {
            match target {
                CallTarget::Helper(id) if leaves_packet(id) => {}
                CallTarget::Helper(_) | CallTarget::Kfunc(_) => {
                    point.dirty = true;
                    point.slots.clear();
                }
                CallTarget::Local(_) => {}
            }
            point.clobber_call();
        }
        Instruction::Ja { .. }
        | Instruction::MayGoto { .. }
        | Instruction::Jump { .. }
        | Instruction::Exit => {}
    }
}
