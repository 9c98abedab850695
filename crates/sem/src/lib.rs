//! The one semantics of BPF instructions and helpers.
//!
//! Every instruction's effect is defined exactly once, in [`exec::step`], generic over a value
//! [`domain::Domain`] and an execution environment [`exec::Machine`]; every helper's, in
//! [`helpers::call`], generic over a [`helpers::HelperMachine`]; every modelled kernel function's
//! (kfunc's), in [`kfuncs::call`], the same way. The interpreter (`linerate-vm`)
//! instantiates them with machine integers ([`domain::Concrete`]), the static analyses
//! (`linerate-analysis`) with abstract values, [`expr`] with expression trees, and the Z3 engine of
//! `linerate bound` will be another. A conditional jump comes back as data ([`exec::Flow::Branch`])
//! for the machine to evaluate, follow or merge. This crate holds no memory model and no map
//! store: those belong to each machine.

pub mod domain;
pub mod exec;
pub mod expr;
pub mod helpers;
pub mod kfuncs;
pub mod op;

pub use domain::{BinOp, CmpOp, Concrete, Domain};
pub use exec::{step, Flow, Frame, HelperOutcome, Machine, SemError};
pub use op::{step_op, Op};
