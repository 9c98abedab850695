//! Static analyses of BPF programs, as one more instantiation of `linerate-sem`.
//!
//! The analyses run the one semantics over abstract values ([`value`]): each register and spilled
//! stack slot is a scalar interval or a pointer into a known region at an interval of offsets.
//! The abstract machine ([`machine`]) is driven through each function's CFG to a fixpoint
//! ([`fixpoint`]), assuming each branch condition on its edges ([`refine`]). From that come what
//! the capabilities need: the region each load, store and atomic touches and the map each map
//! helper uses (cost models, hXDP), the packet length each edge requires (the shortest packet of
//! a path, for `bound`), and how often each loop can run ([`loops`]).
//!
//! Everything it states holds for every concrete run of the interpreter (the soundness tests check
//! it against the interpreter's recorded states). It is not a verifier: it accepts programs the
//! kernel would refuse and says nothing about whether a program is safe. It analyses XDP programs:
//! the context is an `xdp_md` and the packet the one region behind `data` (other program kinds,
//! `linerate_bpf::ProgramKind`, are not its input).

mod fixpoint;
pub mod loops;
pub mod machine;
pub mod refine;
pub mod value;

use std::collections::HashMap;

use linerate_bpf::program::Object;
use linerate_cfg::{BlockId, Cfg, EdgeId};

pub use loops::LoopBound;
pub use machine::{Fact, State};
pub use value::{AbsDomain, AbsValue, Interval, Region, Shape};

use fixpoint::{arguments, callee_depth, function_fixpoint, FunctionStates};
use machine::Facts;

/// The analyses of one program.
#[derive(Clone, Debug, Default)]
pub struct Analysis {
    facts: Facts,
    blocks: HashMap<BlockId, State>,
    edges: HashMap<EdgeId, State>,
    loops: Vec<LoopBound>,
    /// The domain the states were made in, for re-running blocks ([`Analysis::slot_states`]).
    domain: AbsDomain,
}

impl Analysis {
    /// Analyses the program whose CFG is `cfg` (`object` supplies its maps).
    pub fn run(object: &Object, cfg: &Cfg) -> Analysis {
        let n = cfg.functions().len();
        let mut d = AbsDomain::default();
        let mut entries: Vec<Option<State>> = vec![None; n];
        if n > 0 {
            entries[0] = Some(State::program_entry(&mut d));
        }
        // Callees' entry states grow with what their callers pass; a verified program's call
        // graph is acyclic, so n + 1 rounds reach every chain.
        let mut facts = Facts::default();
        let mut last: Vec<(usize, Option<u8>, FunctionStates)> = Vec::new();
        for _ in 0..=n {
            facts = Facts::default();
            last.clear();
            let mut next: Vec<Option<State>> = vec![None; n];
            next[0] = entries[0].clone();
            for (f, entry) in entries.iter().enumerate() {
                let Some(entry) = entry else { continue };
                let depth = callee_depth(entry);
                let states =
                    function_fixpoint(object, cfg, &mut d, &mut facts, f, depth, entry.clone());
                for (callee, at_call) in &states.calls {
                    let callee_entry =
                        State::entry(&mut d, callee_depth(at_call), arguments(at_call));
                    next[*callee] = Some(match next[*callee].take() {
                        Some(old) => old.join(&callee_entry, &mut d, false),
                        None => callee_entry,
                    });
                }
                last.push((f, depth, states));
            }
            let stable = next.iter().zip(&entries).all(|(a, b)| match (a, b) {
                (Some(a), Some(b)) => a.same_facts(b),
                (None, None) => true,
                _ => false,
            });
            entries = next;
            if stable {
                break;
            }
        }
        // Loops are bounded once, from the last round's states, within one budget.
        let mut out = Analysis {
            facts,
            ..Analysis::default()
        };
        let mut budget = loops::UNROLL_BUDGET;
        for (f, depth, states) in last {
            out.loops.extend(loops::loop_bounds(
                object,
                cfg,
                &mut d,
                f,
                depth,
                &states,
                &mut budget,
            ));
            out.blocks.extend(states.blocks);
            out.edges.extend(states.edges);
        }
        out.domain = d;
        out
    }

    /// What the instruction at `slot` touches, if it accesses memory or calls a map helper and
    /// the analysis reached it.
    pub fn fact(&self, slot: usize) -> Option<Fact> {
        self.facts.get(&slot).copied()
    }

    /// The state at the entry of block `b`; `None` if no path reaches it.
    pub fn block_state(&self, b: BlockId) -> Option<&State> {
        self.blocks.get(&b)
    }

    /// The state along edge `e`; `None` if it cannot be taken.
    pub fn edge_state(&self, e: EdgeId) -> Option<&State> {
        self.edges.get(&e)
    }

    /// The fewest packet bytes (from `data` to `data_end`) any packet taking edge `e` has;
    /// `None` if no packet takes it.
    pub fn min_packet_len(&self, e: EdgeId) -> Option<u64> {
        self.edges.get(&e).map(|s| s.packet_len.lo.max(0) as u64)
    }

    /// Runs block `b` of `cfg` from `state` (at call depth `depth` of the block's function) and
    /// returns the state along each of its edges that can be taken from there: the transfer the
    /// fixpoint uses, for a caller that keeps its own states (per context of a path graph). The
    /// states' identities come from `d`, which must be the domain `state` was made in. A
    /// BPF-to-BPF call in the block is not followed (its effect over-approximated, as in the
    /// fixpoint).
    pub fn run_block(
        object: &Object,
        cfg: &Cfg,
        d: &mut AbsDomain,
        depth: Option<u8>,
        b: BlockId,
        state: State,
    ) -> Vec<(EdgeId, State)> {
        let mut facts = Facts::default();
        fixpoint::run_block(object, cfg, d, &mut facts, depth, b, state).edges
    }

    /// The state in front of each instruction of block `b` (of the entry function: call depth
    /// 0), in slot order, from the fixpoint's state at the block's entry; empty where no path
    /// reaches the block. What an optimizer asks about the registers where a window of code
    /// starts.
    pub fn slot_states(&self, object: &Object, cfg: &Cfg, b: BlockId) -> Vec<(usize, State)> {
        let Some(entry) = self.blocks.get(&b) else {
            return Vec::new();
        };
        let mut d = self.domain.clone();
        let mut facts = Facts::default();
        let mut states = Vec::new();
        fixpoint::run_block_observed(
            object,
            cfg,
            &mut d,
            &mut facts,
            Some(0),
            b,
            entry.clone(),
            &mut |slot, state| states.push((slot, state.clone())),
        );
        states
    }

    /// Every loop with its bound, outer loops first within each function.
    pub fn loop_bounds(&self) -> &[LoopBound] {
        &self.loops
    }
}
