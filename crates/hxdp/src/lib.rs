//! `linerate hxdp`: XDP programs on the hXDP FPGA core (paper 003, "hXDP: Efficient Software
//! Packet Processing on FPGA NICs", OSDI '20).
//!
//! - [`isa`]: the extended instruction set, its encoding and its meaning (through `linerate-sem`).
//! - [`schedule`]: VLIW rows of lanes, and what a row means.
//! - [`program`]: the compiler's working form, a lowered instruction list.
//! - [`passes`]: the instruction reductions of §3.1–§3.2 (bounds checks, zeroing, 6-byte
//!   accesses, three-operand ALU, parametrized exit).
//! - [`source`]: what the analysis of the source program says at each of its instructions.
//! - [`liveness`], [`deps`]: register liveness and dependences (Bernstein's conditions, memory
//!   disambiguated by region and offset).
//! - [`rename`], [`scheduler`]: register renaming and packing into rows with parallel branching;
//!   [`motion`]: code motion into earlier superblocks; [`compile`]: the whole compiler.
//! - [`rom`]: Sephirot instruction ROM images of a schedule, and back.
//! - [`sephirot`]: the cycle-level model of the core running a schedule on packets.
//! - [`check`]: a schedule's static row rules, and the model against the interpreter.
//! - [`perf`]: rows per edge as prices for `linerate bound`, and the fit of the I/O cycles.
//! - [`study`]: the lanes sweep (Fig. 8) and the per-pass ablation (Figs. 7 and 9).
//!
//! This crate compiles and models; it does not load anything onto a device.

pub mod check;
pub mod compile;
pub mod deps;
mod error;
pub mod isa;
pub mod liveness;
pub mod motion;
pub mod passes;
pub mod perf;
pub mod program;
pub mod rename;
pub mod rom;
pub mod schedule;
pub mod scheduler;
pub mod sephirot;
pub mod source;
pub mod study;

pub use error::HxdpError;
