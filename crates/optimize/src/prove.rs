//! The prover of the search: K2's window condition (paper 002 §5 IV, appendix C.2) checked by Z3
//! through `linerate_smt::window`, over the same semantics the search's test runs use.

use linerate_bpf::insn::{Instruction, NUM_REGS};
use linerate_smt::{EntryValue, WindowChecker, WindowQuery, WindowRegion, WindowVerdict};

use crate::run::WindowTest;
use crate::search::{Proof, Prover};
use crate::window::{EntryFact, Place, Window};

/// Z3 behind the [`Prover`] trait, one solver context per worker thread.
pub struct Z3Prover {
    checker: WindowChecker,
}

impl Z3Prover {
    /// A prover whose every check gives up after `timeout_ms`.
    pub fn new(timeout_ms: u32) -> Z3Prover {
        Z3Prover {
            checker: WindowChecker::new(timeout_ms),
        }
    }
}

/// The checker's region of a place.
pub fn region(place: Place) -> WindowRegion {
    match place {
        Place::Stack => WindowRegion::Stack,
        Place::Packet => WindowRegion::Packet,
        Place::PacketMeta => WindowRegion::PacketMeta,
        Place::Ctx => WindowRegion::Ctx,
        Place::MapValue(m) => WindowRegion::MapValue(m),
        Place::PacketEnd => WindowRegion::Other(100),
        Place::Other(o) => WindowRegion::Other(o),
    }
}

fn entry_value(fact: EntryFact) -> EntryValue {
    match fact {
        EntryFact::Uninit => EntryValue::Uninit,
        EntryFact::Scalar => EntryValue::Scalar,
        EntryFact::Constant(c) => EntryValue::Constant(c),
        // `data_end` is a number to the window: it is compared, never dereferenced.
        EntryFact::Pointer {
            place: Place::PacketEnd,
            ..
        } => EntryValue::Scalar,
        EntryFact::Pointer { place, offset } => EntryValue::Pointer {
            region: region(place),
            offset,
        },
    }
}

impl Prover for Z3Prover {
    fn prove(&mut self, window: &Window, candidate: &[Instruction]) -> Proof {
        let mut entry = [EntryValue::Scalar; NUM_REGS];
        for (e, f) in entry.iter_mut().zip(&window.entry) {
            *e = entry_value(*f);
        }
        let query = WindowQuery {
            original: &window.original,
            candidate,
            entry,
            live_out: window.live_out,
            live_stack: window.live_stack.to_flags(),
        };
        match self.checker.check(&query) {
            Ok(WindowVerdict::Equivalent) => Proof::Equivalent,
            Ok(WindowVerdict::Different(cex)) => Proof::Counterexample(WindowTest {
                regs: cex.regs,
                memory: cex.memory.into_iter().collect(),
                fill: 0,
            }),
            Ok(WindowVerdict::Unknown(_)) | Err(_) => Proof::Unknown,
        }
    }
}
