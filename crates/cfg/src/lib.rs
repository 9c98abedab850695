//! Control-flow graphs of linked BPF programs, and the static analyses on them.
//!
//! [`Cfg::build`] takes a linked [`linerate_bpf::Program`] and splits every function into basic
//! blocks joined by typed edges ([`EdgeKind`]). The graph is intra-procedural: a BPF-to-BPF call
//! stays inside its block and is recorded as a [`CallSite`] naming the callee, which is what an
//! inter-procedural analysis follows. Building also runs the analyses every later stage wants:
//! reachability, a topological order of the acyclic part, dominators, back edges, natural loops
//! with their nesting, and irreducible-flow detection. On top of those sit cheap longest/shortest
//! instruction-count paths for loop-free functions, a serialisable [`CfgSummary`] and Graphviz
//! output.
//!
//! This crate knows the *shape* of a program, not what its instructions compute (that is
//! `linerate-sem`) or cost (that is `linerate-cost`); unrolling loops and symbolic paths live in
//! the crates that need them.
//!
//! ```
//! use linerate_bpf::insn::build::{exit, ja, jmp, mov64};
//! use linerate_bpf::insn::Cond;
//! use linerate_bpf::Program;
//! use linerate_cfg::Cfg;
//!
//! // if (r1 == 0) r0 = 1; else r0 = 2; return r0;
//! let insns = [jmp(Cond::Eq, 1, 0, 2), mov64(0, 2), ja(1), mov64(0, 1), exit()];
//! let program = Program::from_instructions("diamond", "xdp", &insns);
//! let cfg = Cfg::build(&program)?;
//! assert_eq!(cfg.blocks().len(), 4);
//! assert_eq!(cfg.block_of(3), Some(2));
//! assert!(cfg.is_loop_free());
//! assert_eq!(cfg.longest_path(0).map(|p| p.insns), Some(4));
//! # Ok::<(), linerate_cfg::CfgError>(())
//! ```

mod analysis;
mod decision;
mod dot;
mod error;
mod graph;
mod paths;
mod summary;
mod trace;

pub use analysis::immediate_dominators;
pub use decision::Decision;
pub use error::CfgError;
pub use graph::{
    Block, BlockId, CallKind, CallSite, Cfg, Edge, EdgeId, EdgeKind, FuncId, FunctionCfg, Loop,
};
pub use paths::PathLength;
pub use summary::{CfgSummary, FunctionSummary, LoopSummary};
pub use trace::block_starts;
