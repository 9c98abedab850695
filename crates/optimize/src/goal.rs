//! What the search minimises (issue 10 item 1): instruction count, or the calibrated latency
//! model's price of the instructions (paper 002 §3.2's `perf_lat`, with linerate's measured
//! per-instruction prices instead of K2's opcode profile).

use linerate_bpf::insn::Instruction;
use linerate_cost::{Item, Model, Region};

use crate::search::Performance;
use crate::window::Place;

/// Instruction count.
pub struct Size;

impl Performance for Size {
    fn cost(&self, insns: &[Instruction], _places: &[Place]) -> f64 {
        insns.len() as f64
    }
}

/// The cost model's price of each instruction (its first component: cycles on x86), memory
/// accesses priced by the place a test run found them to touch.
pub struct Latency {
    pub model: Model,
}

fn region(place: Option<&Place>) -> Region {
    match place {
        Some(Place::Stack) => Region::Stack,
        Some(Place::Packet | Place::PacketMeta | Place::PacketEnd) => Region::Packet,
        Some(Place::Ctx) => Region::Ctx,
        // A place no test reached is priced as the dearest common one.
        Some(Place::MapValue(_) | Place::Other(_)) | None => Region::MapValue,
    }
}

impl Latency {
    /// The price of one instruction, a memory access priced at `place`.
    pub fn price(&self, insn: &Instruction, place: Option<&Place>) -> f64 {
        // Windows hold nothing the model leaves unpriced; were one there, it would cost as much
        // as a slow instruction.
        Item::of_instruction(insn, Some(region(place)))
            .and_then(|item| self.model.price(&item).ok())
            .and_then(|p| p.cost.0.first().copied())
            .unwrap_or(10.0)
    }
}

impl Performance for Latency {
    fn cost(&self, insns: &[Instruction], places: &[Place]) -> f64 {
        let mut k = 0;
        insns
            .iter()
            .map(|insn| {
                let place = if matches!(insn, Instruction::Load { .. } | Instruction::Store { .. })
                {
                    k += 1;
                    places.get(k - 1)
                } else {
                    None
                };
                self.price(insn, place)
            })
            .sum()
    }
}
