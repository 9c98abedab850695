//! Device cost models: what executing each CFG edge of a BPF program costs on a device (x86 XDP
//! and the NFP), and the price of an executed path. This crate reads model files and prices
//! programs from their instructions and CFG alone; it does not run anything: it neither measures
//! (calibrating the x86 model through the kernel is `linerate-calibrate`) nor executes programs
//! (executed paths come in as `(program, slot)` pairs, e.g. from the interpreter's trace), and it
//! does not decide which paths a packet can take (its slowest path is over all paths, feasible or
//! not). Its models price XDP programs (the context is an `xdp_md`, the input a packet); the CLI
//! refuses other program kinds by name (`linerate_bpf::ProgramKind`).
//!
//! - [`item`]: the cost items, the vocabulary of every model (`alu64.add.imm`, `load.packet.u32`,
//!   `map.lookup.hash.k8`, ...), and the universe a complete model must price.
//! - [`model`]: model files (schema, validation, prices, packet rates).
//! - `outcome`: map operations priced by their outcome where the program tests it.
//! - [`program`]: the cost vector of every block and edge of a program under a model, with
//!   history-dependent costs over-approximated per edge (paper 000 §5.2).
//! - [`trace`]: the block sequence of one executed run, for pricing executed paths.

pub mod error;
pub mod fingerprint;
pub mod item;
pub mod model;
mod outcome;
pub mod program;
pub mod trace;

pub use error::{CostError, ModelError};
pub use item::{Item, Region};
pub use model::{Cost, Model, ModelFile, Rate};
pub use program::{BlockCost, Callees, EdgeCost, PriceOverride, ProgramCost, SlotCharge};
