//! Running the abstract machine over a program's CFG to a fixpoint.
//!
//! Each function is analysed on its own (context-insensitively): its entry state joins what every
//! call site passes, and a call in the caller runs through the semantics' call and return with the
//! callee's effect over-approximated (r0–r5 unknown, the caller's frame unknown where a pointer
//! into it was passed). Blocks are visited from a worklist; states join where paths meet and are
//! widened where cycles close (at the targets of retreating edges, natural loop headers and the
//! entries of irreducible cycles); each conditional jump's condition is assumed on its two edges.

use std::collections::{HashMap, HashSet};

use linerate_bpf::insn::{Instruction, FRAME_POINTER};
use linerate_bpf::program::Object;
use linerate_cfg::{BlockId, Cfg, EdgeId, EdgeKind};
use linerate_sem::exec::{step, Flow};

use crate::machine::{AbsMachine, Facts, State};
use crate::refine::assume;
use crate::value::{AbsBool, AbsDomain, AbsValue, Region, Shape};

/// Joins at a widening point before its state is widened.
const JOINS_BEFORE_WIDENING: u32 = 3;

/// What leaves a block: a state per outgoing edge (absent where the edge cannot be taken).
pub(crate) struct BlockExit {
    pub edges: Vec<(EdgeId, State)>,
    /// Entry states of callees called from the block.
    pub calls: Vec<(usize, State)>,
}

/// Executes block `b` from `state`.
pub(crate) fn run_block(
    object: &Object,
    cfg: &Cfg,
    d: &mut AbsDomain,
    facts: &mut Facts,
    depth: Option<u8>,
    b: BlockId,
    state: State,
) -> BlockExit {
    run_block_observed(object, cfg, d, facts, depth, b, state, &mut |_, _| {})
}

/// Executes block `b` from `state`, showing `before` the state in front of each instruction.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_block_observed(
    object: &Object,
    cfg: &Cfg,
    d: &mut AbsDomain,
    facts: &mut Facts,
    depth: Option<u8>,
    b: BlockId,
    state: State,
    before: &mut dyn FnMut(usize, &State),
) -> BlockExit {
    let block = &cfg.blocks()[b];
    let mut m = AbsMachine {
        object,
        domain: d,
        state,
        depth,
        facts,
        callbacks: Vec::new(),
    };
    let mut calls = Vec::new();
    let mut flow = None;
    for (slot, insn) in cfg.block_instructions(b) {
        before(*slot, &m.state);
        let f = match step(&mut m, *slot, insn) {
            Ok(f) => f,
            // The semantics refuses the instruction: nothing runs past it.
            Err(_) => {
                take_callbacks(cfg, &mut m, &mut calls);
                return BlockExit {
                    edges: Vec::new(),
                    calls,
                };
            }
        };
        if let (Instruction::Call(linerate_bpf::insn::CallTarget::Local(_)), Flow::Next(target)) =
            (insn, f)
        {
            if let Some(callee) = cfg.block_of(target).and_then(|t| cfg.function_of(t)) {
                calls.push((callee.index, m.state.clone()));
            }
            if !return_from_call(&mut m, *slot) {
                take_callbacks(cfg, &mut m, &mut calls);
                return BlockExit {
                    edges: Vec::new(),
                    calls,
                };
            }
            continue;
        }
        flow = Some(f);
    }
    take_callbacks(cfg, &mut m, &mut calls);
    let AbsMachine { state, domain, .. } = m;
    let edge_of = |kind: EdgeKind| {
        block
            .succs
            .iter()
            .copied()
            .find(|&e| cfg.edges()[e].kind == kind)
    };
    let mut edges = Vec::new();
    let mut both = |cond: Option<&AbsBool>, d: &mut AbsDomain| {
        for (kind, holds) in [(EdgeKind::Taken, true), (EdgeKind::NotTaken, false)] {
            let Some(e) = edge_of(kind) else { continue };
            let out = match cond {
                Some(c) => assume(&state, d, c, holds),
                None => Some(state.clone()),
            };
            if let Some(out) = out {
                edges.push((e, out));
            }
        }
    };
    match flow {
        Some(Flow::Branch { cond, .. }) => both(Some(&cond), domain),
        Some(Flow::LoopBudget { .. }) => both(None, domain),
        Some(Flow::Exit) | Some(Flow::TailCall) => {}
        Some(Flow::Next(_)) | None => {
            for &e in &block.succs {
                edges.push((e, state.clone()));
            }
        }
    }
    BlockExit { edges, calls }
}

/// Moves the callbacks the block's helpers may call into its callees' entry states.
fn take_callbacks(cfg: &Cfg, m: &mut AbsMachine<'_>, calls: &mut Vec<(usize, State)>) {
    for (slots, at_call) in m.callbacks.drain(..) {
        for callee in cfg.functions().iter().filter(|f| slots.contains(&f.start)) {
            calls.push((callee.index, at_call.clone()));
        }
    }
}

/// Completes a BPF-to-BPF call whose step (the semantics' call) just ran: the callee is not
/// followed ([`AbsMachine::havoc_call`]); then the semantics' return restores the caller's
/// registers. `false` if the return is refused.
fn return_from_call(m: &mut AbsMachine<'_>, slot: usize) -> bool {
    m.havoc_call();
    matches!(step(m, slot, &Instruction::Exit), Ok(Flow::Next(_)))
}

/// The fixpoint of one function.
pub(crate) struct FunctionStates {
    /// State at the entry of each reached block.
    pub blocks: HashMap<BlockId, State>,
    /// State along each edge that can be taken.
    pub edges: HashMap<EdgeId, State>,
    /// Entry states for callees, joined per callee.
    pub calls: HashMap<usize, State>,
}

/// Runs function `f` of `cfg` from `entry` to a fixpoint.
pub(crate) fn function_fixpoint(
    object: &Object,
    cfg: &Cfg,
    d: &mut AbsDomain,
    facts: &mut Facts,
    f: usize,
    depth: Option<u8>,
    entry: State,
) -> FunctionStates {
    let func = &cfg.functions()[f];
    // Widening points: the target of every retreating edge. Every cycle has one, natural loops
    // at their header and irreducible cycles where the depth-first search entered them; widening
    // only at natural loop headers left irreducible cycles to count up one step at a time.
    let headers: HashSet<BlockId> = func
        .retreating_edges()
        .iter()
        .map(|&e| cfg.edges()[e].to)
        .collect();
    let mut edges: HashMap<EdgeId, State> = HashMap::new();
    let mut calls: HashMap<usize, State> = HashMap::new();
    let mut work = Worklist::new(func.entry, entry);
    while let Some((b, state)) = work.next() {
        let exit = run_block(object, cfg, d, facts, depth, b, state);
        for (callee, s) in exit.calls {
            let joined = match calls.get(&callee) {
                Some(old) => old.join(&s, d, false),
                None => s,
            };
            calls.insert(callee, joined);
        }
        for (e, out) in exit.edges {
            edges.insert(e, out.clone());
            let to = cfg.edges()[e].to;
            work.merge(d, to, out, headers.contains(&to));
        }
    }
    FunctionStates {
        blocks: work.blocks,
        edges,
        calls,
    }
}

/// Block entry states on their way to a fixpoint: a block is (re)visited whenever what reaches
/// it adds to its state.
pub(crate) struct Worklist {
    pub blocks: HashMap<BlockId, State>,
    joins: HashMap<BlockId, u32>,
    pending: Vec<BlockId>,
}

impl Worklist {
    pub fn new(start: BlockId, state: State) -> Worklist {
        Worklist {
            blocks: HashMap::from([(start, state)]),
            joins: HashMap::new(),
            pending: vec![start],
        }
    }

    /// The next block to visit, with its entry state.
    pub fn next(&mut self) -> Option<(BlockId, State)> {
        let b = self.pending.pop()?;
        Some((b, self.blocks.get(&b)?.clone()))
    }

    /// Joins `state` into the entry of `to` (widened after a few joins where `may_widen`, so
    /// that cycles through `to` reach a fixpoint), and schedules `to` if its state grew.
    pub fn merge(&mut self, d: &mut AbsDomain, to: BlockId, state: State, may_widen: bool) {
        let merged = match self.blocks.get(&to) {
            None => state,
            Some(old) => {
                let n = self.joins.entry(to).or_insert(0);
                *n += 1;
                let merged = old.join(&state, d, may_widen && *n > JOINS_BEFORE_WIDENING);
                if merged.same_facts(old) {
                    return;
                }
                merged
            }
        };
        self.blocks.insert(to, merged);
        if !self.pending.contains(&to) {
            self.pending.push(to);
        }
    }
}

/// Argument registers r1–r5 of a state.
pub(crate) fn arguments(state: &State) -> [AbsValue; 5] {
    std::array::from_fn(|i| state.regs[i + 1])
}

/// The call depth of a callee's frame as its call sites give it.
pub(crate) fn callee_depth(state: &State) -> Option<u8> {
    match state.regs[FRAME_POINTER as usize].shape {
        Shape::Pointer {
            region: Region::Stack { depth },
            ..
        } => depth,
        _ => None,
    }
}
