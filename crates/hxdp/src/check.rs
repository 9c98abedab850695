//! `hxdp check`: whether a [`Schedule`] means what its program means, statically (the row rules
//! of [`crate::schedule`]) and by running it ([`compare_with_vm`]: the Sephirot model against the
//! interpreter on the same packets and maps).
//!
//! The static rules, each a violation `kind`:
//! - `write-write`: two lanes of a row write one register.
//! - `helpers`: more than one helper call in a row (the core has one helper module, §4.1.4).
//! - `forwarding`: a lane reads a register another lane wrote in a row control can come from
//!   (the previous row falling through, or a jump): only the writer's lane sees it so soon.
//! - `memory`: two accesses in one row of which one writes and which may overlap (but for a load
//!   beside a plain store, which reads the bytes from before: a violation only where the program
//!   has the store first), or a read in a row right after a row with a store it may overlap
//!   (stores are visible two rows later). A
//!   helper call counts as reading (and, but for a few known helpers, writing) any memory; its
//!   writes happen at once, so they are visible in the next row.
//!   Overlap is judged by a small provenance analysis over the rows ([`Region`]): the same base
//!   register (unchanged between the two) with disjoint ranges, or two different known regions,
//!   are independent; anything else may overlap.
//! - `target`: a jump with no target row, or one outside the program.
//! - `read-after-write`: where slots carry their place in the compiler's program
//!   ([`Slot::order`]), a lane reading a register that another lane of the same row writes and
//!   that comes earlier in the program (it would see the value from before, the program the value
//!   after).

use linerate_bpf::contents::{MapContents, MapMode, MapSeed};
use linerate_bpf::facts::xdp;
use linerate_bpf::helpers::id;
use linerate_bpf::insn::regs::members;
use linerate_bpf::insn::{regs::RegSet, AluOp, CallTarget, Imm64, Instruction, Operand, Size};
use linerate_bpf::insn::{FRAME_POINTER, NUM_REGS};
use linerate_bpf::Object;
use linerate_vm::drive::{DriveError, Driver};
use linerate_vm::VmOptions;
use serde::Serialize;

use crate::deps;
use crate::isa::{HxInsn, MemAccess};
use crate::schedule::{Schedule, Slot};
use crate::sephirot::{ModelError, Sephirot, Simulation, Timing};
use crate::source::SourceFacts;

/// Helpers that write no memory: map lookup (reads its key), ktime, prandom, processor id,
/// redirect, redirect_map.
const NON_WRITING_HELPERS: [u32; 6] = [
    id::MAP_LOOKUP_ELEM,
    id::KTIME_GET_NS,
    id::GET_PRANDOM_U32,
    id::GET_SMP_PROCESSOR_ID,
    id::REDIRECT,
    id::REDIRECT_MAP,
];

/// A rule a schedule breaks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Violation {
    pub row: usize,
    pub lanes: Vec<usize>,
    pub kind: String,
    pub detail: String,
}

/// A packet on which the schedule and the program disagree.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Mismatch {
    pub packet: usize,
    pub what: String,
}

/// The model against the interpreter.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Comparison {
    pub packets_checked: usize,
    pub mismatches: Vec<Mismatch>,
}

/// What `hxdp check` reports (its JSON form is the contract).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CheckReport {
    pub rows: usize,
    pub violations: Vec<Violation>,
    pub packets_checked: usize,
    pub mismatches: Vec<Mismatch>,
}

/// Runs program `program` of `object` in the interpreter and `schedule` in the Sephirot model on
/// the same packets, both with maps seeded by `seed` and persisting across packets, and compares
/// after each packet the action, the output packet, the redirect target and every map. A packet
/// the model drops for an access beyond its end agrees when the interpreter's action is XDP_DROP
/// (the packet bytes then do not matter). A packet either side fails to run is a mismatch.
pub fn compare_with_vm(
    schedule: &Schedule,
    object: &Object,
    program: usize,
    packets: &[Vec<u8>],
    seed: &MapSeed,
    options: &VmOptions,
) -> Result<Comparison, ModelError> {
    let (_, comparison) = simulate_against_vm(
        schedule,
        object,
        program,
        packets,
        seed,
        options,
        &Timing::default(),
    )?;
    Ok(comparison)
}

/// [`compare_with_vm`] with the model's runs kept, timed by `timing`: one pass gives both the
/// simulation (`linerate hxdp --simulate`) and its agreement with the interpreter. The simulation
/// holds the packets the model ran; one it could not run is a mismatch.
pub fn simulate_against_vm(
    schedule: &Schedule,
    object: &Object,
    program: usize,
    packets: &[Vec<u8>],
    seed: &MapSeed,
    options: &VmOptions,
    timing: &Timing,
) -> Result<(Simulation, Comparison), ModelError> {
    let mut vm =
        Driver::new(object, seed, options.clone(), MapMode::Persist).map_err(|e| match e {
            DriveError::Seed(s) => ModelError::Seed(s),
            DriveError::Build(e) | DriveError::Packet { source: e, .. } => ModelError::Build(e),
        })?;
    let mut core = Sephirot::new(
        schedule,
        object,
        program,
        seed,
        options.clone(),
        timing.clone(),
    )?;
    let mut mismatches = Vec::new();
    let mut runs = Vec::with_capacity(packets.len());
    for (index, packet) in packets.iter().enumerate() {
        let mut differ = |what: String| {
            mismatches.push(Mismatch {
                packet: index,
                what,
            })
        };
        let expected = vm.run(program, packet, &[]);
        let got = core.run(packet);
        match (expected, got) {
            // A packet neither can start (too short for the environment) is no disagreement.
            (
                Err(DriveError::Packet { source: e, .. }),
                Err(ModelError::Start { source: m, .. }),
            ) if e.to_string() == m.to_string() => {}
            (Err(e), Err(m)) => differ(format!("both failed: interpreter {e}; model {m}")),
            (Err(e), Ok(have)) => {
                runs.push(have);
                differ(format!("the interpreter failed: {e}"))
            }
            (Ok(_), Err(m)) => differ(format!("the model failed: {m}")),
            (Ok(want), Ok(have)) => {
                runs.push(have.clone());
                if have.out_of_bounds {
                    if want.return_value != xdp::XDP_DROP {
                        differ(format!(
                            "the model dropped the packet for an access beyond its end, the \
                             interpreter returned {}",
                            linerate_vm::xdp_action_name(want.return_value)
                        ));
                    }
                } else {
                    if u64::from(have.action) != want.return_value {
                        differ(format!(
                            "action: interpreter {}, model {}",
                            linerate_vm::xdp_action_name(want.return_value),
                            linerate_vm::xdp_action_name(u64::from(have.action))
                        ));
                    }
                    if have.packet != want.packet {
                        differ(packet_difference(&want.packet, &have.packet));
                    }
                    if have.redirect != want.redirect {
                        differ(format!(
                            "redirect: interpreter {:?}, model {:?}",
                            want.redirect, have.redirect
                        ));
                    }
                }
            }
        }
        if let Some(what) = map_difference(object, &vm.maps(), &core.maps()) {
            differ(what);
        }
    }
    let simulation = Simulation {
        packets: runs,
        final_maps: core.maps(),
    };
    Ok((
        simulation,
        Comparison {
            packets_checked: packets.len(),
            mismatches,
        },
    ))
}

/// Where two output packets first differ.
fn packet_difference(want: &[u8], have: &[u8]) -> String {
    if want.len() != have.len() {
        return format!(
            "packet length: interpreter {}, model {}",
            want.len(),
            have.len()
        );
    }
    let at = want.iter().zip(have).position(|(a, b)| a != b).unwrap_or(0);
    format!(
        "packet byte {at}: interpreter {:#04x}, model {:#04x}",
        want.get(at).copied().unwrap_or(0),
        have.get(at).copied().unwrap_or(0)
    )
}

/// The first map whose entries differ.
fn map_difference(object: &Object, want: &MapContents, have: &MapContents) -> Option<String> {
    let (i, _) = want
        .iter()
        .zip(have)
        .enumerate()
        .find(|(_, (a, b))| a != b)?;
    let name = object.maps.get(i).map(|m| m.name.as_str()).unwrap_or("?");
    Some(format!("map `{name}` differs after the packet"))
}

/// The static violations of `schedule`, then [`compare_with_vm`] on `packets`.
pub fn check(
    schedule: &Schedule,
    object: &Object,
    program: usize,
    packets: &[Vec<u8>],
    seed: &MapSeed,
    options: &VmOptions,
) -> Result<CheckReport, ModelError> {
    let source = SourceFacts::compute(object, program).ok();
    let violations = static_violations(schedule, source.as_ref());
    let comparison = compare_with_vm(schedule, object, program, packets, seed, options)?;
    Ok(CheckReport {
        rows: schedule.rows.len(),
        violations,
        packets_checked: comparison.packets_checked,
        mismatches: comparison.mismatches,
    })
}

/// Where a pointer points, as far as the analysis knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Region {
    /// Not yet reached (the analysis's bottom).
    Unreached,
    /// Not a pointer to memory a program accesses (a number, a map handle).
    Scalar,
    /// A map handle, for the value a lookup in the map returns.
    MapHandle(u32),
    Stack,
    Packet,
    Context,
    MapValue(u32),
    /// Anything.
    Unknown,
}

impl Region {
    fn join(self, other: Region) -> Region {
        match (self, other) {
            (Region::Unreached, x) | (x, Region::Unreached) => x,
            (a, b) if a == b => a,
            _ => Region::Unknown,
        }
    }

    /// Whether it is memory with a known identity, distinct from other known regions.
    fn known(self) -> bool {
        matches!(
            self,
            Region::Stack | Region::Packet | Region::Context | Region::MapValue(_)
        )
    }
}

type Regions = [Region; NUM_REGS];

/// The rows control can reach row `r` from.
fn predecessors(schedule: &Schedule) -> Vec<Vec<usize>> {
    let n = schedule.rows.len();
    let mut preds = vec![Vec::new(); n];
    for (r, row) in schedule.rows.iter().enumerate() {
        let mut falls = true;
        for (_, slot) in row.filled() {
            match slot.insn {
                HxInsn::ExitWith(_) | HxInsn::Ebpf(Instruction::Exit | Instruction::Ja { .. }) => {
                    falls = false
                }
                _ => {}
            }
            if let Some(t) = slot.target.filter(|&t| t < n) {
                if !preds[t].contains(&r) {
                    preds[t].push(r);
                }
            }
        }
        if falls && r + 1 < n && !preds[r + 1].contains(&r) {
            preds[r + 1].push(r);
        }
    }
    preds
}

/// The region of every register as each row starts (a fixed point over the rows).
fn regions(schedule: &Schedule, preds: &[Vec<usize>]) -> Vec<Regions> {
    let n = schedule.rows.len();
    let mut entry = vec![[Region::Unreached; NUM_REGS]; n];
    if n == 0 {
        return entry;
    }
    let mut start = [Region::Scalar; NUM_REGS];
    start[1] = Region::Context;
    start[FRAME_POINTER as usize] = Region::Stack;
    let mut changed = true;
    while changed {
        changed = false;
        for r in 0..n {
            let mut state = if r == 0 {
                start
            } else {
                [Region::Unreached; NUM_REGS]
            };
            for &p in &preds[r] {
                let out = transfer(schedule, p, &entry[p]);
                for (s, o) in state.iter_mut().zip(out) {
                    *s = s.join(o);
                }
            }
            if state != entry[r] {
                entry[r] = state;
                changed = true;
            }
        }
    }
    entry
}

/// The regions after row `r` from those before it.
fn transfer(schedule: &Schedule, r: usize, before: &Regions) -> Regions {
    let mut after = *before;
    if before.iter().all(|&x| x == Region::Unreached) {
        return after;
    }
    for (_, slot) in schedule.rows[r].filled() {
        let writes = slot.insn.writes();
        let result = result_region(&slot.insn, before);
        for reg in members(writes) {
            after[reg] = if reg == 0 || !slot.insn.is_call() {
                result
            } else {
                Region::Unknown
            };
        }
    }
    after
}

/// The region of what `insn` writes (of r0 for a call).
fn result_region(insn: &HxInsn, regs: &Regions) -> Region {
    let of = |r: u8| regs.get(r as usize).copied().unwrap_or(Region::Unknown);
    match *insn {
        HxInsn::Alu3 { wide, op, src, .. } => match (wide, op) {
            (true, AluOp::Add | AluOp::Sub) => of(src),
            _ => Region::Scalar,
        },
        HxInsn::Load48 { .. } => Region::Scalar,
        HxInsn::Ebpf(i) => match i {
            Instruction::Alu {
                wide: true,
                op: AluOp::Mov,
                src: Operand::Reg(s),
                ..
            } => of(s),
            Instruction::Alu {
                wide: true,
                op: AluOp::Add | AluOp::Sub,
                dst,
                src,
            } => match src {
                Operand::Imm(_) => of(dst),
                Operand::Reg(s) => match (of(dst), of(s)) {
                    (d, Region::Scalar) => d,
                    (Region::Scalar, s) if op_is_add(&i) => s,
                    _ => Region::Unknown,
                },
            },
            Instruction::Alu { .. } | Instruction::Endian { .. } => Region::Scalar,
            Instruction::Load { size, src, off, .. } => match (of(src), size) {
                (Region::Context, _) => {
                    use linerate_bpf::facts::xdp_md;
                    let off = off as u64;
                    if [xdp_md::DATA, xdp_md::DATA_END, xdp_md::DATA_META].contains(&off) {
                        Region::Packet
                    } else {
                        Region::Scalar
                    }
                }
                // A 64-bit load may bring back a spilled pointer.
                (_, Size::Dw) => Region::Unknown,
                _ => Region::Scalar,
            },
            Instruction::LoadImm64 { imm, .. } => match imm {
                Imm64::Const(_) => Region::Scalar,
                Imm64::Map(m) => Region::MapHandle(m),
                Imm64::MapValue { map, .. } => Region::MapValue(map),
                _ => Region::Unknown,
            },
            Instruction::Call(CallTarget::Helper(1)) => match of(1) {
                Region::MapHandle(m) => Region::MapValue(m),
                _ => Region::Unknown,
            },
            Instruction::Call(_) => Region::Scalar,
            _ => Region::Unknown,
        },
        _ => Region::Scalar,
    }
}

fn op_is_add(i: &Instruction) -> bool {
    matches!(i, Instruction::Alu { op: AluOp::Add, .. })
}

/// A memory access of a lane for the overlap test: a plain access, or a helper call's.
#[derive(Clone, Copy)]
enum Access {
    Plain(MemAccess),
    /// A helper call: reads anything; writes anything unless the helper is known not to.
    Call {
        writes: bool,
    },
}

impl Access {
    fn of(insn: &HxInsn) -> Option<Access> {
        match insn {
            HxInsn::Ebpf(Instruction::Call(CallTarget::Helper(id))) => Some(Access::Call {
                writes: !NON_WRITING_HELPERS.contains(id),
            }),
            HxInsn::Ebpf(Instruction::Call(_)) => Some(Access::Call { writes: true }),
            _ => insn.memory().map(Access::Plain),
        }
    }

    fn writes(&self) -> bool {
        match *self {
            Access::Plain(m) => m.writes,
            Access::Call { writes } => writes,
        }
    }
}

/// Whether `a` (with registers in `ra`) and `b` (with `rb`) may touch common bytes;
/// `same_base_value` says whether a base register common to both holds the same value for both.
fn may_overlap(a: Access, ra: &Regions, b: Access, rb: &Regions, same_base_value: bool) -> bool {
    let (Access::Plain(x), Access::Plain(y)) = (a, b) else {
        return true;
    };
    if x.base == y.base && same_base_value {
        let (x_end, y_end) = (x.off + i64::from(x.len), y.off + i64::from(y.len));
        return x.off < y_end && y.off < x_end;
    }
    let (rx, ry) = (ra[x.base as usize], rb[y.base as usize]);
    !(rx.known() && ry.known() && rx != ry)
}

/// The static violations of `schedule` (see the module documentation). With the analysis of
/// the source program, two slots that both carry their source slots are placed by it (region
/// and offset, as the compiler placed them); others by the provenance over the rows.
pub fn static_violations(schedule: &Schedule, source: Option<&SourceFacts>) -> Vec<Violation> {
    let overlap =
        |a: &Slot, x: Access, ra: &Regions, b: &Slot, y: Access, rb: &Regions, same: bool| match (
            source, x, y,
        ) {
            (Some(source), Access::Plain(_), Access::Plain(_))
                if !a.from.is_empty() && !b.from.is_empty() =>
            {
                deps::may_overlap(
                    &source.place(&a.insn, &a.from),
                    &source.place(&b.insn, &b.from),
                )
            }
            _ => may_overlap(x, ra, y, rb, same),
        };
    let n = schedule.rows.len();
    let preds = predecessors(schedule);
    let entry = regions(schedule, &preds);
    let mut out = Vec::new();
    let mut report = |row: usize, lanes: Vec<usize>, kind: &str, detail: String| {
        out.push(Violation {
            row,
            lanes,
            kind: kind.to_string(),
            detail,
        })
    };
    for (r, row) in schedule.rows.iter().enumerate() {
        let filled: Vec<_> = row.filled().collect();
        // write-write and read-after-write, pairwise.
        for (i, &(la, a)) in filled.iter().enumerate() {
            for &(lb, b) in &filled[i + 1..] {
                let common = a.insn.writes() & b.insn.writes();
                if common != 0 {
                    report(
                        r,
                        vec![la, lb],
                        "write-write",
                        format!(
                            "`{}` and `{}` both write {}",
                            a.insn,
                            b.insn,
                            reg_names(common)
                        ),
                    );
                }
                for (reader, lr, writer, lw) in [(a, la, b, lb), (b, lb, a, la)] {
                    let (Some(rf), Some(wf)) = (reader.order, writer.order) else {
                        continue;
                    };
                    let raw = reader.insn.reads() & writer.insn.writes();
                    if raw != 0 && wf < rf {
                        report(
                            r,
                            vec![lw, lr],
                            "read-after-write",
                            format!(
                                "`{}` reads {} that `{}`, earlier in the program, writes in the \
                                 same row",
                                reader.insn,
                                reg_names(raw),
                                writer.insn
                            ),
                        );
                    }
                }
            }
        }
        let calls: Vec<usize> = filled
            .iter()
            .filter(|(_, s)| s.insn.is_call())
            .map(|&(l, _)| l)
            .collect();
        if calls.len() > 1 {
            report(
                r,
                calls.clone(),
                "helpers",
                format!(
                    "{} helper calls in one row; the core has one helper module",
                    calls.len()
                ),
            );
        }
        for &(lane, slot) in &filled {
            let jump = matches!(
                slot.insn,
                HxInsn::Ebpf(Instruction::Jump { .. } | Instruction::Ja { .. })
            );
            match slot.target {
                Some(t) if t >= n => report(
                    r,
                    vec![lane],
                    "target",
                    format!("`{}` jumps to row {t}, the program has {n} rows", slot.insn),
                ),
                None if jump => report(
                    r,
                    vec![lane],
                    "target",
                    format!("`{}` has no target row", slot.insn),
                ),
                _ => {}
            }
        }
        // Memory within the row.
        for (i, &(la, a)) in filled.iter().enumerate() {
            for &(lb, b) in &filled[i + 1..] {
                let (Some(x), Some(y)) = (Access::of(&a.insn), Access::of(&b.insn)) else {
                    continue;
                };
                if !(x.writes() || y.writes()) || !overlap(a, x, &entry[r], b, y, &entry[r], true) {
                    continue;
                }
                // A load and a plain store of one row: the load reads before the store commits,
                // which is right where the load comes first in the program (or where the
                // program order is not known: the run against the interpreter decides).
                let plain = matches!((x, y), (Access::Plain(_), Access::Plain(_)));
                if plain && x.writes() != y.writes() {
                    let (load, store) = if x.writes() { (b, a) } else { (a, b) };
                    match (load.order, store.order) {
                        (Some(l), Some(st)) if st < l => report(
                            r,
                            vec![la, lb],
                            "memory",
                            format!(
                                "`{}` reads what `{}` of the same row stores before it in the \
                                 program; it sees the bytes from before",
                                load.insn, store.insn
                            ),
                        ),
                        _ => {}
                    }
                    continue;
                }
                report(
                    r,
                    vec![la, lb],
                    "memory",
                    format!("`{}` and `{}` may touch the same bytes", a.insn, b.insn),
                );
            }
        }
        // Against the rows control comes from: forwarding and store visibility.
        for &p in &preds[r] {
            let prev = &schedule.rows[p];
            let prev_writes: RegSet = prev.filled().fold(0, |acc, (_, s)| acc | s.insn.writes());
            for (lw, w) in prev.filled() {
                for &(lr, reader) in &filled {
                    let stale = reader.insn.reads() & w.insn.writes();
                    if lr != lw && stale != 0 {
                        report(
                            r,
                            vec![lw, lr],
                            "forwarding",
                            format!(
                                "`{}` reads {} that `{}` in lane {lw} of row {p} writes; only \
                                 lane {lw} sees it in the next row",
                                reader.insn,
                                reg_names(stale),
                                w.insn
                            ),
                        );
                    }
                    let (Some(store), Some(load)) = (Access::of(&w.insn), Access::of(&reader.insn))
                    else {
                        continue;
                    };
                    let only_stores = matches!(
                        reader.insn,
                        HxInsn::Store48 { .. } | HxInsn::Ebpf(Instruction::Store { .. })
                    );
                    // A helper acts on memory at once: only plain stores are held back.
                    if !store.writes() || only_stores || matches!(store, Access::Call { .. }) {
                        continue;
                    }
                    let base_kept = match (store, load) {
                        (Access::Plain(s), Access::Plain(_)) => prev_writes & (1 << s.base) == 0,
                        _ => false,
                    };
                    if overlap(w, store, &entry[p], reader, load, &entry[r], base_kept) {
                        report(
                            r,
                            vec![lw, lr],
                            "memory",
                            format!(
                                "`{}` may read what `{}` in row {p} stores; a store is visible \
                                 two rows later",
                                reader.insn, w.insn
                            ),
                        );
                    }
                }
            }
        }
    }
    out
}

fn reg_names(set: RegSet) -> String {
    members(set)
        .map(|r| format!("r{r}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `base`, then variants of its packets until there are `count`: truncations (never below the
/// 14 bytes of an Ethernet header, which the interpreter and the kernel require) and bit flips,
/// chosen by a fixed stride from `seed` so that runs repeat. Packets that reach the paths the
/// originals do not: short packets for the bounds checks, other field values for the parsers.
pub fn packet_variants(base: &[Vec<u8>], count: usize, seed: u64) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = base.to_vec();
    if base.is_empty() {
        return out;
    }
    let mut state = seed | 1;
    let mut next = |bound: usize| {
        // A 64-bit linear congruential step (Knuth's MMIX constants); its high bits pick.
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((state >> 33) as usize) % bound.max(1)
    };
    while out.len() < count {
        let mut p = base[next(base.len())].clone();
        if p.len() < 14 {
            p.resize(14, 0);
        }
        match next(3) {
            0 => p.truncate(14 + next(p.len() - 13)),
            1 => {
                for _ in 0..=next(3) {
                    let at = next(p.len());
                    p[at] ^= 1 << next(8);
                }
            }
            _ => {
                let at = next(p.len());
                p[at] = next(256) as u8;
                let keep = p.len().saturating_sub(next(4)).max(14);
                p.truncate(keep);
            }
        }
        out.push(p);
    }
    out
}
