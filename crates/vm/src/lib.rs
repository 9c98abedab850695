//! The linerate interpreter: concrete execution of XDP programs.
//!
//! [`Vm`] runs the programs of a [`linerate_bpf::Object`] on packets, with the maps, helpers and
//! packet buffer of the kernel's `BPF_PROG_TEST_RUN` reproduced closely enough that the kernel and
//! the interpreter agree on the action, the output packet and the final maps (the differential
//! tests pin this). Instruction effects come from `linerate-sem`, instantiated with machine
//! integers; nothing here redefines an opcode. [`Vm::seed`] writes a map seed and [`drive`] runs
//! packet after packet with persistent or fresh maps. For many runs of programs that differ in a
//! few slots (the optimizer's candidates), [`Vm::replace_instructions`] changes a decoded program
//! in place and [`Vm::run_in_place`] runs a packet without copying the result out. This crate does not load anything into the
//! kernel (`linerate-kernel` does) and does not reason symbolically.

mod decoded;
pub mod drive;
mod error;
pub mod hash_order;
pub mod helpers;
pub mod key_hash;
pub mod keyless;
mod machine;
mod map_in_map;
pub mod maps;
pub mod memory;
mod seed;
pub mod session;
pub mod slab;
pub mod trace;

pub use error::VmError;
pub use helpers::FibRoute;
pub use machine::{xdp_action_name, Redirect, RunOutcome, RunSummary, Vm, VmOptions};
pub use session::{Session, Stepped};
