//! Windows as real executions reach them: tests seeded from the program's runs on the test
//! packets and on `bound`'s path witnesses (issue 10 item 2, "so that every path is
//! exercised"), and how often each window runs per packet (what the latency goal weighs).
//!
//! The program runs in the interpreter with its state recorded before every instruction. Each
//! time the entry function reaches a window's first slot, the registers there become a test of
//! that window, translated into the window runner's layout ([`crate::search::place_base`]):
//! a pointer keeps its offset from its place's base (the frame pointer, `data`, `data_meta`, the
//! context), and the packet's bytes are the test's packet memory. What the recorded state does
//! not hold (stack and map bytes) comes from the test's pseudo-random fill, as in random tests.

use std::collections::HashMap;

use linerate_bpf::contents::{MapMode, MapSeed};
use linerate_bpf::insn::NUM_REGS;
use linerate_bpf::program::Object;
use linerate_vm::drive::Driver;
use linerate_vm::memory::split;
use linerate_vm::trace::StepState;
use linerate_vm::{RunOutcome, VmOptions};

use crate::run::WindowTest;
use crate::search::{place_base, put_context};
use crate::window::{EntryFact, Place, Window};

/// What the program is run on to observe its windows.
#[derive(Clone, Copy, Debug)]
pub struct Executions<'a> {
    /// Maps' contents for `packets`.
    pub seed: &'a MapSeed,
    /// Representative traffic: how often a window runs is counted on these.
    pub packets: &'a [Vec<u8>],
    /// Path witnesses with their own maps: tests only.
    pub witnesses: &'a [(Vec<u8>, MapSeed)],
}

/// Packets of [`Executions::packets`] observed (the first ones: the state of every instruction
/// is recorded, so observing all ten thousand would cost more than it tells).
pub const OBSERVED_PACKETS: usize = 64;
/// Most observed tests a window keeps (distinct register states, first seen first).
pub const TESTS_PER_WINDOW: usize = 16;
/// A run longer than this is not observed (a long callback loop would record too much).
const MAX_OBSERVED_INSTRUCTIONS: u64 = 200_000;

/// What was observed of one window.
#[derive(Clone, Debug, Default)]
pub struct Observed {
    /// Distinct entry states, at most [`TESTS_PER_WINDOW`].
    pub tests: Vec<WindowTest>,
    /// Mean executions per packet of [`Executions::packets`] observed.
    pub per_packet: f64,
}

/// Observes `windows` (all of the entry function of program `program` of `object`) on
/// `executions`: one entry per window, in order. Inputs the interpreter refuses (a packet
/// shorter than an Ethernet header) are skipped.
pub fn observe(
    object: &Object,
    program: usize,
    windows: &[Window],
    executions: &Executions,
) -> Vec<Observed> {
    let mut out = vec![Observed::default(); windows.len()];
    let by_start: HashMap<usize, usize> = windows
        .iter()
        .enumerate()
        .map(|(i, w)| (w.start, i))
        .collect();
    let options = VmOptions {
        record_steps: true,
        record_states: true,
        max_instructions: MAX_OBSERVED_INSTRUCTIONS,
        ..VmOptions::default()
    };
    let packets = &executions.packets[..executions.packets.len().min(OBSERVED_PACKETS)];
    // Witnesses first: they reach the rare paths, whose windows random packets leave without
    // tests of their own.
    for (packet, seed) in executions.witnesses {
        let Ok(mut driver) = Driver::new(object, seed, options.clone(), MapMode::Persist) else {
            continue;
        };
        if let Ok(run) = driver.run(program, packet, &[]) {
            record(&run, packet, program, windows, &by_start, &mut out, false);
        }
    }
    let Ok(mut driver) = Driver::new(object, executions.seed, options, MapMode::Persist) else {
        return out;
    };
    let mut runs = 0usize;
    for packet in packets {
        if let Ok(run) = driver.run(program, packet, &[]) {
            record(&run, packet, program, windows, &by_start, &mut out, true);
            runs += 1;
        }
    }
    for o in &mut out {
        o.per_packet /= runs.max(1) as f64;
    }
    out
}

/// Adds the window entries of one run.
fn record(
    run: &RunOutcome,
    packet: &[u8],
    program: usize,
    windows: &[Window],
    by_start: &HashMap<usize, usize>,
    out: &mut [Observed],
    count: bool,
) {
    for (step, state) in run.steps.iter().zip(&run.states) {
        if step.program != program || state.depth != 0 {
            continue;
        }
        let Some(&w) = by_start.get(&step.slot) else {
            continue;
        };
        if count {
            out[w].per_packet += 1.0;
        }
        let observed = &mut out[w];
        if observed.tests.len() >= TESTS_PER_WINDOW {
            continue;
        }
        let test = test_of(&windows[w], state, packet, observed.tests.len() as u64);
        if !observed.tests.iter().any(|t| t.regs == test.regs) {
            observed.tests.push(test);
        }
    }
}

/// The window test for the interpreter's state `state` at the window's entry.
fn test_of(window: &Window, state: &StepState, packet: &[u8], k: u64) -> WindowTest {
    let packet_base = place_base(Place::Packet);
    let frame = split(state.regs[10]).1;
    let packet_len = state.data_end.saturating_sub(state.data);
    let mut regs = [0u64; NUM_REGS];
    for (r, fact) in window.entry.iter().enumerate() {
        let value = state.regs[r];
        let offset = split(value).1;
        regs[r] = match *fact {
            EntryFact::Constant(c) => c,
            EntryFact::Scalar | EntryFact::Uninit => value,
            EntryFact::Pointer {
                place: Place::PacketEnd,
                ..
            } => packet_base + packet_len,
            EntryFact::Pointer {
                place,
                offset: known,
            } => {
                let from_base = match place {
                    Place::Stack => offset.wrapping_sub(frame),
                    Place::Packet => offset.wrapping_sub(state.data),
                    Place::PacketMeta => offset.wrapping_sub(state.data_meta),
                    Place::Ctx => offset,
                    // A map value's offset inside its slab is not its offset in the value: the
                    // analysis's, or the value's start.
                    Place::MapValue(_) | Place::Other(_) | Place::PacketEnd => {
                        known.unwrap_or(0) as u64
                    }
                };
                place_base(place).wrapping_add(from_base)
            }
        };
    }
    let mut memory = std::collections::BTreeMap::new();
    for (i, b) in packet.iter().enumerate().take(packet_len as usize) {
        memory.insert(packet_base + i as u64, *b);
    }
    put_context(&mut memory, packet_len);
    WindowTest {
        regs,
        memory,
        fill: 0x9e37_79b9_7f4a_7c15u64.wrapping_mul(k + 1) | 1,
    }
}
