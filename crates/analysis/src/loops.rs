//! Loop trip bounds by abstract unrolling.
//!
//! For each natural loop, the state entering its header from outside is run through the body one
//! iteration at a time — the body's blocks to a fixpoint of their own, the loop's back edges not
//! followed but collected — and the states arriving on the back edges become the next iteration's
//! header state. The loop's exit conditions, assumed on every edge, shrink what can arrive; once
//! nothing can, the number of iterations so far bounds the loop. Because every state
//! over-approximates the concrete ones, so does every iteration, and the bound holds for every
//! execution. A loop whose back-edge state stops changing (a `may_goto` loop, a loop on data the
//! analysis does not follow), that runs past [`MAX_UNROLL`] iterations, or that is still running
//! when the program's unrolling budget ([`UNROLL_BUDGET`] instructions for all its loops) is
//! spent is reported unbounded.

use linerate_bpf::program::Object;
use linerate_cfg::{BlockId, Cfg, Loop};

use crate::fixpoint::{run_block, FunctionStates, Worklist};
use crate::machine::{Facts, State};
use crate::value::AbsDomain;

/// Iterations abstract unrolling tries before it calls a loop unbounded.
pub const MAX_UNROLL: u64 = 1 << 16;

/// Instructions the abstract unrolling of all loops of one program may execute: the verifier's
/// own limit, within which it walked every bounded loop it accepted. Without it, a loop whose
/// state changes on every iteration ran 2^16 iterations before it was called unbounded: 65
/// million instructions for a body of a thousand, tens of seconds for one program.
pub const UNROLL_BUDGET: u64 = linerate_bpf::facts::limits::COMPLEXITY_LIMIT_INSNS;

/// A loop and how often its body can run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoopBound {
    /// Function holding the loop.
    pub function: usize,
    /// Header block and its first slot.
    pub header: BlockId,
    pub header_slot: usize,
    /// The most times the header runs each time the loop is entered (its back edges are taken at
    /// most one time fewer); `None` where no bound was found.
    pub max_header_runs: Option<u64>,
}

/// Bounds every loop of function `f`, given the function's fixpoint `states`; the unrolling
/// executes at most `budget` instructions, and `budget` is left with what it did not use.
pub(crate) fn loop_bounds(
    object: &Object,
    cfg: &Cfg,
    d: &mut AbsDomain,
    f: usize,
    depth: Option<u8>,
    states: &FunctionStates,
    budget: &mut u64,
) -> Vec<LoopBound> {
    let func = &cfg.functions()[f];
    func.loops()
        .iter()
        .map(|l| LoopBound {
            function: f,
            header: l.header,
            header_slot: l.header_slot,
            max_header_runs: bound(object, cfg, d, depth, l, states, budget),
        })
        .collect()
}

/// The state entering `l`'s header from outside the loop.
fn entry_state(cfg: &Cfg, d: &mut AbsDomain, l: &Loop, states: &FunctionStates) -> Option<State> {
    let mut entry: Option<State> = None;
    for &e in &cfg.blocks()[l.header].preds {
        if l.back_edges.contains(&e) {
            continue;
        }
        let Some(s) = states.edges.get(&e) else {
            continue;
        };
        entry = Some(match entry {
            Some(old) => old.join(s, d, false),
            None => s.clone(),
        });
    }
    entry
}

fn bound(
    object: &Object,
    cfg: &Cfg,
    d: &mut AbsDomain,
    depth: Option<u8>,
    l: &Loop,
    states: &FunctionStates,
    budget: &mut u64,
) -> Option<u64> {
    // A loop the analysis never enters runs zero times.
    let Some(mut header) = entry_state(cfg, d, l, states) else {
        return Some(0);
    };
    let mut runs = 0u64;
    loop {
        runs += 1;
        if runs > MAX_UNROLL || *budget == 0 {
            return None;
        }
        let Some(next) = one_iteration(object, cfg, d, depth, l, header.clone(), budget) else {
            return Some(runs);
        };
        if next.same_facts(&header) {
            return None;
        }
        header = next;
    }
}

/// Runs one iteration of `l` from header state `header`; the join of the states arriving on its
/// back edges, `None` if none can. The instructions run are taken from `budget` (down to 0).
fn one_iteration(
    object: &Object,
    cfg: &Cfg,
    d: &mut AbsDomain,
    depth: Option<u8>,
    l: &Loop,
    header: State,
    budget: &mut u64,
) -> Option<State> {
    // Facts were recorded by the whole-function fixpoint; the iterations add nothing new.
    let mut facts = Facts::new();
    let mut back: Option<State> = None;
    let mut work = Worklist::new(l.header, header);
    while let Some((b, state)) = work.next() {
        let exit = run_block(object, cfg, d, &mut facts, depth, b, state);
        *budget = budget.saturating_sub(cfg.blocks()[b].insn_count as u64);
        for (e, out) in exit.edges {
            let to = cfg.edges()[e].to;
            if l.back_edges.contains(&e) {
                back = Some(match back {
                    Some(old) => old.join(&out, d, false),
                    None => out,
                });
            } else if l.body.contains(&to) {
                // Inner loops are widened so that the iteration terminates.
                work.merge(d, to, out, true);
            }
        }
    }
    back
}
