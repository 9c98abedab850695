//! `linerate hxdp`: XDP programs on the hXDP FPGA core (paper 003, "hXDP: Efficient Software
//! Packet Processing on FPGA NICs", OSDI '20).
//!
//! - [`isa`]: the extended instruction set, its encoding and its meaning (through `linerate-sem`).
//! - [`schedule`]: VLIW rows of lanes, and what a row means.
//! - [`rom`]: Sephirot instruction ROM images of a schedule, and back.
//! - [`sephirot`]: the cycle-level model of the core running a schedule on packets.
//! - [`check`]: a schedule's static row rules, and the model against the interpreter.
//!
//! This crate compiles and models; it does not load anything onto a device.

pub mod check;
mod error;
pub mod isa;
pub mod program;
pub mod rom;
pub mod schedule;
pub mod sephirot;

pub use error::HxdpError;
