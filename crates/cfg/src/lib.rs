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
//! use linerate_bpf::insn::{encode_all, AluOp, Cond, Instruction, Operand};
//! use linerate_bpf::Program;
//! use linerate_cfg::Cfg;
//!
//! // if (r1 == 0) r0 = 1; else r0 = 2; return r0;
//! let insns = [
//!     Instruction::Jump { wide: true, cond: Cond::Eq, dst: 1, src: Operand::Imm(0), off: 2 },
//!     Instruction::Alu { wide: true, op: AluOp::Mov, dst: 0, src: Operand::Imm(2) },
//!     Instruction::Ja { off: 1, long: false },
//!     Instruction::Alu { wide: true, op: AluOp::Mov, dst: 0, src: Operand::Imm(1) },
//!     Instruction::Exit,
//! ];
//! let program = Program {
//!     name: "diamond".into(),
//!     section: "xdp".into(),
//!     insns: encode_all(&insns),
//!     functions: vec![],
//! };
//! let cfg = Cfg::build(&program)?;
//! assert_eq!(cfg.blocks().len(), 4);
//! assert_eq!(cfg.block_of(3), Some(2));
//! assert!(cfg.is_loop_free());
//! assert_eq!(cfg.longest_path(0).map(|p| p.insns), Some(4));
//! # Ok::<(), linerate_cfg::CfgError>(())
//! ```

mod analysis;
mod dot;
mod error;
mod graph;
mod paths;
mod summary;

pub use error::CfgError;
pub use graph::{
    Block, BlockId, CallKind, CallSite, Cfg, Edge, EdgeId, EdgeKind, FuncId, FunctionCfg, Loop,
};
pub use paths::PathLength;
pub use summary::{CfgSummary, FunctionSummary, LoopSummary};
