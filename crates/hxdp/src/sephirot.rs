//! A cycle-level model of Sephirot, the hXDP VLIW core (paper 003 §4): it runs a [`Schedule`] on
//! packets and says what each packet's program did and how many cycles it took.
//!
//! **One meaning.** Every lane instruction runs through `linerate_sem::step` (by way of
//! [`HxInsn::as_ebpf`] and a [`linerate_vm::Session`] over the interpreter's memory, maps and
//! helpers); this module decides only *when* each instruction runs and *which* register values it
//! sees, never what an opcode does.
//!
//! **The model**, each rule with where it comes from:
//! - Per packet the program state resets itself (§4.2): registers zero but r1 (the context) and
//!   r10 (the frame pointer), a zeroed 512-byte stack. Maps persist across packets, seeded as the
//!   interpreter is seeded.
//! - Rows (the module comment of [`crate::schedule`], §4.1.3, §4.2): all lanes read their operands
//!   as the row starts. A register result reaches the same lane in the next row (per-lane
//!   forwarding) and every lane two rows later; another lane reading it in the next row gets the
//!   value from before (stale), so a schedule that breaks the rule computes a wrong result here,
//!   as it would on the core. Stores commit like register results: visible from two rows later,
//!   with no memory forwarding (they are buffered here). Within a row, loads and ALU lanes run
//!   first and the helper call (one per row at most, the helper module of §4.1.4) last: it reads
//!   r1–r5 as the row starts and acts on memory and maps at once, its r0–r5 following the
//!   register rule. A row's stores are not visible to its own helper call.
//! - Control (§4.2, parallel branching): jumps and exits are ordered by lane, lane 0 first; the
//!   first taken jump or reached exit decides; with none, control falls to the next row.
//! - Packet access through the active packet selector (§4.1.2): an access beyond the packet's
//!   end drops the packet (XDP_DROP), the program stopping before the row that tried it. The paper
//!   does not say what the core does; this is linerate's assumption, and the compiler relies on it
//!   to remove bounds checks. Any other memory fault is an error naming the row and lane.
//! - Timing ([`Timing`]): one row per cycle at 156.25 MHz (§4.3); a taken jump costs
//!   [`Timing::taken_branch_penalty`] more cycles (linerate's assumption: the branch resolves in
//!   the execute stage and the two younger rows already fetched are flushed); an exit ends the
//!   program at its row with early exit (§4.2), otherwise the pipeline drains
//!   [`Timing::drain_cycles`] more; the packet's I/O (§4.3: the packet buffer moves 32 bytes a
//!   cycle) bounds the cycles a packet takes from below.

use std::collections::VecDeque;

use linerate_bpf::contents::{MapContents, MapSeed};
use linerate_bpf::facts::xdp;
use linerate_bpf::insn::regs::members;
use linerate_bpf::insn::NUM_REGS;
use linerate_bpf::Object;
use linerate_vm::{Redirect, Session, Stepped, Vm, VmError, VmOptions};

use crate::program::Lowered;
use crate::schedule::{Row, Schedule, Slot};

/// The fitted per-packet input cycles ([`Timing::io_in_cycles`]): `bench/hxdp` prints the fit.
pub const IO_IN_CYCLES: f64 = 2.05;
/// The fitted per-packet emission cycles ([`Timing::io_out_cycles`]).
pub const IO_OUT_CYCLES: f64 = 0.89;

/// The timing parameters of the core.
#[derive(Clone, Debug, PartialEq)]
pub struct Timing {
    /// Core clock in Hz: 156.25 MHz (§4.3).
    pub clock_hz: f64,
    /// Extra cycles a taken jump costs: 2 (our assumption, see the module documentation).
    pub taken_branch_penalty: u64,
    /// Whether an exit ends the program at its row (§4.2's early exit): true.
    pub early_exit: bool,
    /// Cycles the pipeline drains after an exit without early exit: 3.
    pub drain_cycles: u64,
    /// Cycles of packet I/O every packet costs besides the program (the packet selected into the
    /// packet buffer, the action handed over), fitted by `bench/hxdp` to the paper's
    /// microbenchmarks (§5.2.2; see [`crate::perf::fit_io_cycles`]).
    pub io_in_cycles: f64,
    /// Cycles a packet that leaves (every action but XDP_DROP and XDP_ABORTED) costs more: its
    /// emission (§4.1.2), fitted the same way.
    pub io_out_cycles: f64,
    /// Bytes the packet buffer moves per cycle: 32 (§4.3).
    pub frame_bytes: usize,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            clock_hz: 156.25e6,
            taken_branch_penalty: 2,
            early_exit: true,
            drain_cycles: 3,
            io_in_cycles: IO_IN_CYCLES,
            io_out_cycles: IO_OUT_CYCLES,
            frame_bytes: 32,
        }
    }
}

impl Timing {
    /// The I/O cycles of a packet the program gives `action`.
    pub fn io_cycles(&self, action: u32) -> f64 {
        if leaves(action) {
            self.io_in_cycles + self.io_out_cycles
        } else {
            self.io_in_cycles
        }
    }
}

/// Whether a packet with `action` leaves the core (is emitted) rather than being dropped.
pub fn leaves(action: u32) -> bool {
    !matches!(u64::from(action), xdp::XDP_DROP | xdp::XDP_ABORTED)
}

/// What the core did with one packet.
#[derive(Clone, Debug, PartialEq)]
pub struct PacketRun {
    /// The XDP action (low 32 bits of r0 at the exit).
    pub action: u32,
    /// Whether the packet was dropped because the program accessed beyond its end.
    pub out_of_bounds: bool,
    /// The packet after the program's changes.
    pub packet: Vec<u8>,
    /// Where a redirect sends it.
    pub redirect: Option<Redirect>,
    /// Rows executed (the exit's included).
    pub rows: u64,
    /// Taken jumps.
    pub taken_jumps: u64,
    /// Cycles of execution: rows, taken-jump penalties, and the drain without early exit.
    pub exec_cycles: u64,
    /// Cycles the packet occupies the core: `max(exec_cycles + Timing::io_cycles(action),
    /// ceil(len / frame_bytes))`.
    pub packet_cycles: f64,
    /// Packets per second at this rate: `clock_hz / packet_cycles`.
    pub pps: f64,
}

/// A run of packets through the model.
#[derive(Clone, Debug)]
pub struct Simulation {
    /// One per packet, in order.
    pub packets: Vec<PacketRun>,
    /// Every map's entries after the last packet.
    pub final_maps: MapContents,
}

/// Why the model could not run a packet.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("building the interpreter: {0}")]
    Build(VmError),
    #[error("seeding the maps: {0}")]
    Seed(#[from] linerate_bpf::contents::SeedError),
    #[error("packet {packet}: {source}")]
    Start {
        packet: usize,
        #[source]
        source: VmError,
    },
    #[error("packet {packet}, row {row}, lane {lane}: {reason}")]
    Fault {
        packet: usize,
        row: usize,
        lane: usize,
        reason: String,
    },
    #[error("packet {packet}: control reached row {row}, past the program's {rows} rows")]
    PastEnd {
        packet: usize,
        row: usize,
        rows: usize,
    },
    #[error("packet {packet}: more than {limit} rows executed")]
    RowLimit { packet: usize, limit: u64 },
}

/// The schedule that runs `lowered` one instruction per row in lane 0 (a wide 64-bit immediate
/// load with its second word in lane 1), jumps aimed at the rows of their targets, and an empty
/// row after a store that the next instruction may read (a load, an atomic or a helper call:
/// stores have no forwarding, so a store reaches a read only two rows later). Always correct,
/// the baseline a compiled schedule is checked against.
pub fn one_per_row(lowered: &Lowered, lanes: usize) -> Schedule {
    let lanes = lanes.max(2);
    let insns = &lowered.insns;
    let stalls = |i: usize| {
        let writes = insns[i].insn.memory().is_some_and(|m| m.writes);
        let next_reads = insns
            .get(i + 1)
            .is_some_and(|n| n.insn.memory().is_some() || n.insn.is_call());
        writes && next_reads
    };
    let mut row_of = Vec::with_capacity(insns.len());
    let mut next = 0usize;
    for i in 0..insns.len() {
        row_of.push(next);
        next += if stalls(i) { 2 } else { 1 };
    }
    let mut rows = vec![Row::empty(lanes); next];
    for (i, l) in insns.iter().enumerate() {
        rows[row_of[i]].put(
            0,
            Slot {
                insn: l.insn,
                from: l.from.clone(),
                target: l.target.and_then(|t| row_of.get(t).copied()),
                order: Some(i),
            },
        );
    }
    Schedule { lanes, rows }
}

/// The core loaded with a schedule of one program, its maps seeded, ready for packets.
pub struct Sephirot<'s> {
    schedule: &'s Schedule,
    program: usize,
    vm: Vm,
    timing: Timing,
    /// Packets run so far (for error messages).
    packets: usize,
}

/// A register result waiting to reach the register file: (lane, register, value).
type Pending = Vec<(usize, usize, u64)>;

/// A row's buffered stores: (address, bytes).
type Stores = Vec<(u64, Vec<u8>)>;

/// What a lane's instruction decided about control.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Decision {
    Jump(usize),
    Exit(u64),
}

impl<'s> Sephirot<'s> {
    /// The core running `schedule` as program `program` of `object`, with the interpreter options
    /// `options` (helpers' environment, and `max_instructions` as the limit of rows per packet)
    /// and the maps seeded with `seed`.
    pub fn new(
        schedule: &'s Schedule,
        object: &Object,
        program: usize,
        seed: &MapSeed,
        options: VmOptions,
        timing: Timing,
    ) -> Result<Sephirot<'s>, ModelError> {
        let mut vm = Vm::new(object, options).map_err(ModelError::Build)?;
        vm.seed(seed)?;
        Ok(Sephirot {
            schedule,
            program,
            vm,
            timing,
            packets: 0,
        })
    }

    /// Every map's entries now.
    pub fn maps(&self) -> MapContents {
        self.vm.maps.iter().map(|m| m.entries()).collect()
    }

    /// Runs one packet.
    pub fn run(&mut self, packet: &[u8]) -> Result<PacketRun, ModelError> {
        let index = self.packets;
        self.packets += 1;
        let limit = self.vm.options.max_instructions;
        let schedule = self.schedule;
        let mut session = self
            .vm
            .session(self.program, packet, &[])
            .map_err(|source| ModelError::Start {
                packet: index,
                source,
            })?;
        let fault = |row: usize, lane: usize, reason: String| ModelError::Fault {
            packet: index,
            row,
            lane,
            reason,
        };
        let mut committed: [u64; NUM_REGS] = *session.regs();
        let mut pending: Pending = Vec::new();
        let mut stores: VecDeque<Stores> = VecDeque::new();
        let (mut rows, mut taken_jumps) = (0u64, 0u64);
        let mut row = 0usize;
        let (action, out_of_bounds) = loop {
            let Some(current) = schedule.rows.get(row) else {
                return Err(ModelError::PastEnd {
                    packet: index,
                    row,
                    rows: schedule.rows.len(),
                });
            };
            rows += 1;
            if rows > limit {
                return Err(ModelError::RowLimit {
                    packet: index,
                    limit,
                });
            }
            if stores.len() >= 2 {
                if let Some(due) = stores.pop_front() {
                    commit(&mut session, &due).map_err(|e| fault(row, 0, e))?;
                }
            }
            let view = |lane: usize| {
                let mut regs = committed;
                for &(l, r, v) in &pending {
                    if l == lane {
                        regs[r] = v;
                    }
                }
                regs
            };
            // The access beyond the packet's end that drops it, found before the row runs.
            if current.filled().any(|(lane, slot)| {
                slot.insn.memory().is_some_and(|m| {
                    let base = view(lane)[m.base as usize];
                    session.outside_packet(base.wrapping_add(m.off as u64), m.len as usize)
                })
            }) {
                break (xdp::XDP_DROP, true);
            }
            let mut produced: Pending = Vec::new();
            let mut row_stores: Stores = Vec::new();
            let mut decision: Option<(usize, Decision)> = None;
            // Loads and ALU lanes first, the helper call last (see the module documentation).
            let order = current
                .filled()
                .filter(|(_, s)| !s.insn.is_call())
                .chain(current.filled().filter(|(_, s)| s.insn.is_call()));
            for (lane, slot) in order {
                let ran = run_lane(&mut session, slot, view(lane), row)
                    .map_err(|e| fault(row, lane, e))?;
                produced.extend(ran.results.into_iter().map(|(r, v)| (lane, r, v)));
                row_stores.extend(ran.stores);
                let chosen = match ran.control {
                    Stepped::Taken => Some(Decision::Jump(slot.target.ok_or_else(|| {
                        fault(
                            row,
                            lane,
                            format!("{} is taken but has no target row", slot.insn),
                        )
                    })?)),
                    Stepped::Exit => Some(Decision::Exit(ran.r0)),
                    Stepped::Next => None,
                };
                if let Some(d) = chosen {
                    if decision.is_none_or(|(l, _)| lane < l) {
                        decision = Some((lane, d));
                    }
                }
            }
            for (_, r, v) in pending.drain(..) {
                committed[r] = v;
            }
            pending = produced;
            stores.push_back(row_stores);
            match decision {
                Some((_, Decision::Exit(r0))) => break (r0, false),
                Some((_, Decision::Jump(target))) => {
                    taken_jumps += 1;
                    row = target;
                }
                None => row += 1,
            }
        };
        while let Some(due) = stores.pop_front() {
            commit(&mut session, &due).map_err(|e| fault(row, 0, e))?;
        }
        let outcome = session.finish(action);
        let exec_cycles = rows
            .saturating_add(taken_jumps.saturating_mul(self.timing.taken_branch_penalty))
            .saturating_add(if self.timing.early_exit {
                0
            } else {
                self.timing.drain_cycles
            });
        let io_cycles = packet.len().div_ceil(self.timing.frame_bytes.max(1)) as f64;
        let io = self.timing.io_cycles(outcome.return_value as u32);
        let packet_cycles = (exec_cycles as f64 + io).max(io_cycles);
        Ok(PacketRun {
            action: outcome.return_value as u32,
            out_of_bounds,
            packet: outcome.packet,
            redirect: outcome.redirect,
            rows,
            taken_jumps,
            exec_cycles,
            packet_cycles,
            pps: self.timing.clock_hz / packet_cycles,
        })
    }
}

/// What one lane's instruction did.
struct LaneRun {
    /// Its register results.
    results: Vec<(usize, u64)>,
    /// Its stores, held back.
    stores: Stores,
    control: Stepped,
    /// r0 as an exit left it.
    r0: u64,
}

/// Runs `slot`'s instruction on the registers `regs` (the lane's view as the row starts), its
/// stores captured instead of committed.
fn run_lane(
    session: &mut Session<'_>,
    slot: &Slot,
    regs: [u64; NUM_REGS],
    row: usize,
) -> Result<LaneRun, String> {
    let insn = slot.insn;
    let pc = slot.from.first().copied().unwrap_or(row);
    *session.regs_mut() = regs;
    let write = insn.memory().filter(|m| m.writes).map(|m| {
        (
            regs[m.base as usize].wrapping_add(m.off as u64),
            m.len as usize,
        )
    });
    let before = match write {
        Some((addr, len)) => Some(session.read(pc, addr, len).map_err(|e| e.to_string())?),
        None => None,
    };
    let mut control = Stepped::Next;
    for e in insn.as_ebpf(insn.scratch()) {
        control = session.step(pc, &e).map_err(|e| e.to_string())?;
        if control == Stepped::Exit {
            break;
        }
    }
    if !insn.is_control() {
        control = Stepped::Next;
    }
    let mut stores = Vec::new();
    if let (Some((addr, len)), Some(old)) = (write, before) {
        let new = session.read(pc, addr, len).map_err(|e| e.to_string())?;
        session.write(pc, addr, &old).map_err(|e| e.to_string())?;
        stores.push((addr, new));
    }
    let after = session.regs();
    let results = members(insn.writes()).map(|r| (r, after[r])).collect();
    Ok(LaneRun {
        results,
        stores,
        control,
        r0: after[0],
    })
}

/// Commits a row's buffered stores.
fn commit(session: &mut Session<'_>, stores: &Stores) -> Result<(), String> {
    for (addr, bytes) in stores {
        session
            .write(0, *addr, bytes)
            .map_err(|e| format!("committing a store: {e}"))?;
    }
    Ok(())
}

/// Runs every packet through the core loaded with `schedule` (program `program` of `object`,
/// maps seeded with `seed`, maps persisting from packet to packet).
pub fn simulate(
    schedule: &Schedule,
    object: &Object,
    program: usize,
    packets: &[Vec<u8>],
    seed: &MapSeed,
    options: VmOptions,
    timing: &Timing,
) -> Result<Simulation, ModelError> {
    let mut core = Sephirot::new(schedule, object, program, seed, options, timing.clone())?;
    let runs = packets
        .iter()
        .map(|p| core.run(p))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Simulation {
        packets: runs,
        final_maps: core.maps(),
    })
}
