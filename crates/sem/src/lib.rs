//! The one semantics of BPF instructions.
//!
//! Every instruction's effect is defined exactly once, in [`exec::step`], generic over a value
//! [`domain::Domain`] and an execution environment [`exec::Machine`]. The interpreter
//! (`linerate-vm`) instantiates it with machine integers ([`domain::Concrete`]); [`expr`] provides
//! a symbolic instantiation with expression trees, and the Z3 engine of `linerate bound` is a third.
//! This crate holds no memory model, maps or helpers: those belong to each machine.

pub mod domain;
pub mod exec;
pub mod expr;

pub use domain::{BinOp, CmpOp, Concrete, Domain};
pub use exec::{step, Flow, Frame, HelperOutcome, Machine, SemError};
