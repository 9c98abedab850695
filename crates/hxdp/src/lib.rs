//! `linerate hxdp`: XDP programs on the hXDP FPGA core (paper 003, "hXDP: Efficient Software
//! Packet Processing on FPGA NICs", OSDI '20).
//!
//! - [`isa`]: the extended instruction set, its encoding and its meaning (through `linerate-sem`).
//! - [`schedule`]: VLIW rows of lanes, and what a row means.
//! - [`program`]: the compiler's working form, a lowered instruction list.
//! - [`liveness`], [`deps`]: register liveness and dependences (Bernstein's conditions, memory
//!   disambiguated by region and offset).
//! - [`scheduler`]: packing into rows with parallel branching; [`compile`]: the whole compiler.
//!
//! This crate compiles and models; it does not load anything onto a device.

pub mod compile;
pub mod deps;
mod error;
pub mod isa;
pub mod liveness;
pub mod passes;
pub mod program;
pub mod rename;
pub mod schedule;
pub mod scheduler;

pub use error::HxdpError;
