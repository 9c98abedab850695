//! The hXDP compiler (paper 003 §3.4): a program's instructions lowered, reduced by the passes of
//! §3.1–§3.2, and scheduled into the rows of the Sephirot instruction memory.

use std::ops::Range;

use linerate_bpf::Object;
use serde::Serialize;

use crate::deps;
use crate::liveness::Liveness;
use crate::passes::{run_passes, PassOptions, Removed};
use crate::program::Lowered;
use crate::rom::IMEM_ROWS;
use crate::schedule::Schedule;
use crate::scheduler::{schedule, ScheduleOptions};
use crate::source::SourceFacts;
use crate::HxdpError;

/// How to compile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompileOptions {
    pub passes: PassOptions,
    pub schedule: ScheduleOptions,
    /// Rename registers to break false dependences (§3.4).
    pub rename: bool,
    /// Move instructions up into earlier superblocks where that saves rows (§3.4, Fig. 9).
    pub code_motion: bool,
    /// Rows the instruction memory holds: a longer schedule is an error.
    pub imem_rows: usize,
}

impl Default for CompileOptions {
    fn default() -> CompileOptions {
        CompileOptions {
            passes: PassOptions::default(),
            schedule: ScheduleOptions::default(),
            rename: true,
            code_motion: true,
            imem_rows: IMEM_ROWS,
        }
    }
}

/// A compiled program.
#[derive(Clone, Debug)]
pub struct Compiled {
    /// The program's name.
    pub name: String,
    /// Instructions of the source program.
    pub ebpf_insns: usize,
    /// Source instructions each pass removed, `unreachable`: those no path reached any more (and
    /// jumps to the next instruction left behind), and
    /// `dead`: those computing registers nothing read any more.
    pub removed: Removed,
    /// Instructions moved up into an earlier superblock ([`crate::motion`]), by the first source
    /// slot each came from.
    pub hoisted: Vec<usize>,
    /// The program after the passes, before scheduling.
    pub lowered: Lowered,
    /// The rows.
    pub schedule: Schedule,
    /// The rows of each superblock (a stretch entered only at its first row), in order.
    pub superblocks: Vec<Range<usize>>,
}

/// Headline figures of a compilation (part of `linerate hxdp --json`).
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    pub ebpf_insns: usize,
    pub removed: Removed,
    /// Instructions moved up into an earlier superblock.
    pub hoisted: usize,
    pub vliw_rows: usize,
    pub static_ipc: f64,
    pub lanes: usize,
}

impl Compiled {
    /// The headline figures.
    pub fn summary(&self) -> Summary {
        Summary {
            ebpf_insns: self.ebpf_insns,
            removed: self.removed.clone(),
            hoisted: self.hoisted.len(),
            vliw_rows: self.schedule.rows.len(),
            static_ipc: self.schedule.static_ipc(),
            lanes: self.schedule.lanes,
        }
    }
}

/// Compiles program `program` of `object`.
pub fn compile(
    object: &Object,
    program: usize,
    options: &CompileOptions,
) -> Result<Compiled, HxdpError> {
    let mut lowered = Lowered::new(object, program)?;
    let lanes = options.schedule.lanes.max(1);
    if let Some(wide) = lowered.insns.iter().find(|l| l.insn.lanes() > lanes) {
        return Err(HxdpError::Unsupported {
            program: object.programs[program].name.clone(),
            slot: wide.from.first().copied().unwrap_or(0),
            what: format!(
                "`{}` with {lanes} lane(s): a 64-bit immediate load that does not fit one \
                 word takes {}",
                wide.insn,
                wide.insn.lanes()
            ),
        });
    }
    let source = SourceFacts::compute(object, program)?;
    let mut removed = run_passes(&mut lowered, &source, &options.passes);
    // Code a removed check guarded goes, then the jumps over it, which may strand more.
    let mut unreachable = 0;
    loop {
        lowered.straighten_jumps();
        let gone = lowered.remove_unreachable() + lowered.remove_trivial_jumps();
        if gone == 0 {
            break;
        }
        unreachable += gone;
    }
    removed.insert("unreachable", unreachable);
    removed.insert("dead", lowered.remove_dead());
    if options.rename {
        crate::rename::rename(&mut lowered);
    }
    let hoisted = if options.code_motion {
        crate::motion::hoist(&mut lowered, &source, |p, facts| {
            schedule(p, facts, &Liveness::of(p), &options.schedule)
                .0
                .rows
                .len()
        })
    } else {
        Vec::new()
    };
    let name = object.programs[program].name.clone();
    let facts = deps::facts(&source, &lowered);
    let liveness = Liveness::of(&lowered);
    let (schedule, superblocks) = schedule(&lowered, &facts, &liveness, &options.schedule);
    if schedule.rows.len() > options.imem_rows {
        return Err(HxdpError::TooLong {
            program: name,
            rows: schedule.rows.len(),
            capacity: options.imem_rows,
        });
    }
    Ok(Compiled {
        name,
        ebpf_insns: lowered.source_instructions,
        removed,
        hoisted,
        lowered,
        schedule,
        superblocks,
    })
}

/// The compilation of program `program` of `object` that produced `schedule` (word for word),
/// tried over the ablation's option sets ([`crate::study::variants`]) at the
/// schedule's lane count: so that a ROM read back can be checked with the source slots and the
/// source analysis its compiler had (`hxdp check` on linerate's own ROMs). `None` for a schedule
/// linerate would not produce.
pub fn recognise(object: &Object, program: usize, schedule: &Schedule) -> Option<Compiled> {
    let mut base = CompileOptions::default();
    base.schedule.lanes = schedule.lanes;
    base.imem_rows = usize::MAX;
    let variants = crate::study::variants(&base);
    let words = |s: &Schedule| -> Vec<Vec<Vec<u64>>> {
        s.rows
            .iter()
            .map(|r| {
                r.slots
                    .iter()
                    .map(|slot| slot.as_ref().map_or(vec![0], |s| s.insn.encode()))
                    .collect()
            })
            .collect()
    };
    let wanted = words(schedule);
    variants.into_iter().find_map(|(_, options)| {
        let compiled = compile(object, program, &options).ok()?;
        (words(&compiled.schedule) == wanted).then_some(compiled)
    })
}
