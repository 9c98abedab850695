//! The compiler's instruction passes (paper 003 §3.1–§3.2): each rewrites a [`Lowered`] program
//! into one that behaves exactly like it on every packet under the hardware model, with fewer
//! instructions.
//!
//! **The hardware model the passes rely on** (linerate's reading of §4.2, "program state
//! self-reset", plus one assumption the paper leaves open):
//! - at program start every register and all 512 stack bytes are zero, except `r1` (the context)
//!   and `r10` (the frame pointer);
//! - an access beyond the packet's end drops the packet: the program stops at once with
//!   `XDP_DROP`, and nothing after the access happens (see [`bounds`]).
//!
//! Every removal or fusion is proved for the instruction at hand (from the abstract analysis of
//! the original program, liveness, and the paths of the current program), never by pattern alone;
//! when a proof fails the instruction stays.
//!
//! Passes, in the order [`run_passes`] runs them (each can be turned off, for the ablation of the
//! paper's Fig. 7): [`bounds`], [`zeroing`], [`constant_store`], [`reload`], [`six_byte`],
//! [`three_operand`], [`exit`] (`constant_store` and `reload` are linerate's). Each
//! returns how many source instructions it removed (a fusion of k instructions into one removes
//! k − 1).

mod bounds;
mod constant_store;
mod exit;
mod reload;
mod six_byte;
mod three_operand;
mod zeroing;

use std::collections::BTreeMap;

use serde::Serialize;

use crate::program::Lowered;

pub use crate::liveness::live_out;
use crate::source::SourceFacts;

/// The passes' names, in the order they run.
pub const PASS_NAMES: [&str; 7] = [
    "bounds",
    "zeroing",
    "constant_store",
    "reload",
    "six_byte",
    "three_operand",
    "exit",
];

/// Which passes run (all by default; the CLI's `--no-<pass>` turns one off).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct PassOptions {
    /// Remove packet bounds checks the hardware's drop-on-overrun makes redundant (§3.1).
    pub bounds: bool,
    /// Remove stores of zero to never-written stack bytes and redundant `mov rX, 0` (§3.1).
    pub zeroing: bool,
    /// Store constants as immediates instead of through a register (a linerate addition).
    pub constant_store: bool,
    /// Reload what a store put in a stack slot from its register (a linerate addition).
    pub reload: bool,
    /// Fuse 6-byte copies into `Load48` + `Store48` (§3.2).
    pub six_byte: bool,
    /// Fuse `rD = rS; rD op= imm` into `rD = rS op imm` (§3.2).
    pub three_operand: bool,
    /// Fuse `r0 = K; exit` into a parametrized exit (§3.2).
    pub exit: bool,
}

impl Default for PassOptions {
    fn default() -> PassOptions {
        PassOptions {
            bounds: true,
            zeroing: true,
            constant_store: true,
            reload: true,
            six_byte: true,
            three_operand: true,
            exit: true,
        }
    }
}

impl PassOptions {
    /// No pass at all.
    pub fn none() -> PassOptions {
        PassOptions {
            bounds: false,
            zeroing: false,
            constant_store: false,
            reload: false,
            six_byte: false,
            three_operand: false,
            exit: false,
        }
    }

    /// The switch of the pass named `name` (one of [`PASS_NAMES`]).
    pub fn switch(&mut self, name: &str) -> Option<&mut bool> {
        Some(match name {
            "bounds" => &mut self.bounds,
            "zeroing" => &mut self.zeroing,
            "constant_store" => &mut self.constant_store,
            "reload" => &mut self.reload,
            "six_byte" => &mut self.six_byte,
            "three_operand" => &mut self.three_operand,
            "exit" => &mut self.exit,
            _ => return None,
        })
    }

    /// Turns the pass named `name` on or off; an unknown name changes nothing.
    pub fn set(&mut self, name: &str, on: bool) {
        if let Some(flag) = self.switch(name) {
            *flag = on;
        }
    }
}

/// One pass: rewrites the program and returns how many source instructions it removed.
type Pass = fn(&mut Lowered, &SourceFacts) -> usize;

/// Source instructions each pass removed, by pass name (every pass listed, 0 when it was off).
pub type Removed = BTreeMap<&'static str, usize>;

/// Runs the enabled passes on `lowered`, which must be a program as [`Lowered::new`] made it
/// (its `from` slots name the original program's instructions, about which `facts`, the
/// analysis of that program, speaks).
pub fn run_passes(lowered: &mut Lowered, facts: &SourceFacts, options: &PassOptions) -> Removed {
    let mut removed: Removed = PASS_NAMES.iter().map(|&n| (n, 0)).collect();
    let runs: [(&'static str, bool, Pass); 7] = [
        ("bounds", options.bounds, bounds::run),
        ("zeroing", options.zeroing, zeroing::run),
        (
            "constant_store",
            options.constant_store,
            constant_store::run,
        ),
        ("reload", options.reload, reload::run),
        ("six_byte", options.six_byte, six_byte::run),
        ("three_operand", options.three_operand, three_operand::run),
        ("exit", options.exit, exit::run),
    ];
    for (name, enabled, pass) in runs {
        if enabled {
            let count = pass(lowered, facts);
            tracing::debug!(pass = name, removed = count, "hxdp pass");
            removed.insert(name, count);
        }
    }
    removed
}
