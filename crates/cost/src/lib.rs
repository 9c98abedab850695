//! Device cost models: what executing each CFG edge of a BPF program costs on a device.
//!
//! - [`item`]: the cost items, the vocabulary of every model (`alu64.add.imm`, `load.packet.u32`,
//!   `map.lookup.hash.k8`, ...), and the universe a complete model must price.
//! - [`model`]: model files (schema, validation, prices, packet rates).
//! - [`program`]: the cost vector of every block and edge of a program under a model, with
//!   history-dependent costs over-approximated per edge (paper 000 §5.2).
//! - [`trace`]: the instruction trace and block sequence of one interpreter run, for pricing
//!   executed paths.
//! - [`calibrate`]: measures this host's XDP costs through `BPF_PROG_TEST_RUN` and writes an x86
//!   model.

pub mod calibrate;
pub mod error;
pub mod item;
pub mod model;
pub mod program;
pub mod trace;

pub use error::{CostError, ModelError};
pub use item::{Item, Region};
pub use model::{Cost, Model, ModelFile, Rate};
pub use program::{BlockCost, EdgeCost, ProgramCost, SlotCharge};
