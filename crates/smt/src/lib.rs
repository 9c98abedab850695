//! The symbolic engine of `linerate bound`: the one semantics (`linerate-sem`) instantiated with
//! Z3 bit-vector formulas, checking one path of a program at a time.
//!
//! A path is a list of [`Decision`]s in execution order (each conditional jump's outcome, each
//! tail call's target). [`PathChecker::check`] executes the program along it with a symbolic
//! packet (bytes and a length of 14 to 3520 bytes), symbolic context fields (ingress device and
//! receive queue, limited to what `BPF_PROG_TEST_RUN` accepts on this host) and symbolic map
//! contents (module `maps`), and answers with a [`Verdict`]: a [`Witness`] for a path some input
//! takes, a core of conflicting decisions for one none does, or unknown after the timeout.
//!
//! Instruction and helper effects come from `linerate_sem::step` and
//! `linerate_sem::helpers::call`, never from here: this crate supplies values (module `value`),
//! memory (module `memory`), maps and the path's environment (module `machine`): plain maps with
//! two-level aliasing, LPM tries (module `lpm`), maps of maps, ring buffers, perf event arrays,
//! queues and stacks (module `streams`), and the callbacks of `bpf_loop` and
//! `bpf_for_each_map_elem` over arrays, followed per call with the branches inside chosen by the
//! solver (module `callbacks`). What it does not model — walks over hash maps, kfuncs,
//! `bpf_check_mtu`'s devices, multi-buffer packets, metadata in front of the packet — is an error
//! naming the feature and the slot.
//!
//! The same instantiation answers `linerate optimize`'s question about windows (module `window`):
//! whether a candidate straight-line run of instructions may replace one of a program's, given
//! what is known at its entry and what is live after it ([`WindowChecker`]); the answer is a
//! proof, a concrete counterexample, or unknown.
//!
//! And the whole-program question (module `equivalence`): whether a candidate program gives the
//! same observable outcome (action, packet, map contents, redirect target) as the original on
//! every input ([`check_equivalence`]). Both run on the same symbolic inputs in one session,
//! pairs of paths enumerated depth-first with shared prefixes (a loop's iterations are decisions
//! like any other); the answer is a proof, a counterexample input to replay, or unknown naming
//! what is not modelled or the bound that was reached.
//!
//! ```
//! use linerate_bpf::insn::build::{add64, exit, jmp, jmp_reg, ldx, mov64, mov64_reg};
//! use linerate_bpf::insn::{Cond, Size};
//! use linerate_bpf::Object;
//! use linerate_cfg::Decision;
//! use linerate_smt::{check, Options, Verdict};
//!
//! // r2 = ctx->data; r3 = ctx->data_end; r4 = r2 + 14;
//! // if (r4 > r3) return XDP_PASS; if (byte 12 == 0x08) return XDP_DROP; return XDP_PASS;
//! let insns = [
//!     ldx(Size::W, 2, 1, 0),
//!     ldx(Size::W, 3, 1, 4),
//!     mov64_reg(4, 2),
//!     add64(4, 14),
//!     mov64(0, 2),
//!     jmp_reg(Cond::Gt, 4, 3, 4),
//!     ldx(Size::B, 5, 2, 12),
//!     jmp(Cond::Ne, 5, 0x08, 2),
//!     mov64(0, 1),
//!     exit(),
//!     exit(),
//! ];
//! let object = Object::single("demo", &insns, Vec::new());
//! let path = [
//!     Decision::Branch { pc: 5, taken: false },
//!     Decision::Branch { pc: 7, taken: false },
//! ];
//! let Verdict::Sat(witness) = check(&object, 0, &path, &Options::default())? else {
//!     panic!("the path is feasible");
//! };
//! assert_eq!(witness.packet.len(), 14);
//! assert_eq!(witness.packet[12], 0x08);
//! assert_eq!(witness.action, "XDP_DROP");
//! # Ok::<(), linerate_smt::SmtError>(())
//! ```

mod callbacks;
mod checker;
mod conflict;
mod equivalence;
mod error;
mod helpers;
mod host;
mod lpm;
mod machine;
mod maps;
mod memory;
mod replay;
mod session;
mod streams;
mod value;
mod window;

pub use checker::{
    check, BlockRef, Options, PathChecker, PrefixVerdict, Verdict, Witness, WitnessRoute,
};
pub use equivalence::{
    check_equivalence, Equivalence, EquivalenceCounterexample, EquivalenceOptions,
};
pub use error::SmtError;
pub use linerate_cfg::Decision;
pub use replay::ReplayInput;
pub use window::{
    region_base, registers_used, EntryValue, WindowChecker, WindowCounterexample, WindowQuery,
    WindowRegion, WindowStats, WindowVerdict, CONTEXT_POINTER_FIELDS, MAX_OFFSET, STACK_BYTES,
};

/// The linked Z3's version as it reports it (`Z3 4.8.12.0`): which libz3 a build uses (Debian's
/// or the `z3-solver` wheel's, see `scripts/setup.sh`) shows in benchmark output.
pub fn solver_version() -> String {
    z3::full_version().to_string()
}
