//! Timing one path in the kernel, three ways.
//!
//!
//! * **Repeated** (the default): one `BPF_PROG_TEST_RUN` with `repeat` runs per trial; the
//!   kernel reports their average (rounded down to whole ns). This is how the x86 model's
//!   per-packet work was calibrated, so it is what the estimates mean.
//! * **Fresh** (for a path repeated runs do not repeat): the repeated runs share the packet
//!   buffer and the maps, so a program that rewrites the packet (an `XDP_TX` reply), inserts or
//!   deletes a flow, or counts towards a threshold takes other paths from the second run on.
//!   Then every timed run is a single run (`repeat` 1) on the witness's packet, after the maps
//!   the previous run changed were put back as the witness left them. A single run pays more
//!   fixed overhead than one of many repeated ones (the kernel's timer around one run, the call
//!   not going through the XDP dispatcher): that difference is measured once on the empty
//!   program `r0 = XDP_PASS; exit` (single minus repeated, medians) and subtracted, so both
//!   methods give the time a repeated run would take. Cache state is not restored: a single run
//!   after the restoring system calls may find less of its code and data cached, which makes
//!   fresh figures, if anything, slower (the safe side for a check of the estimates).
//! * **Driven** (for a path whose repeated runs stray: it rewrites its packet, moves its head or
//!   tail, counts or inserts in a map): the program runs behind linerate's traffic driver
//!   (`linerate_contend::driver`), which puts back before every run what the kernel's single
//!   run changed ([`restore_plan`]: the rewritten bytes, the head, length and metadata, the map
//!   entries) and then tail-calls it, so every run starts where the first did. The driver
//!   alternates ([`TrafficDriver::alternating`]): by turns it tail-calls the program and a
//!   program that only returns, and times both sides within the one call, so both see the same
//!   moments of this host (every `BPF_PROG_TEST_RUN` with `repeat > 1` waits about 55 ms for
//!   the kernel to add the program to the XDP dispatcher and remove it, long enough for this
//!   host's speed to change between two calls). A trial's figure is the program's side less
//!   the empty side plus the empty program's own repeated time in the round (the
//!   [`Reference`]): what a repeated run of the path takes, with warm caches, as the model was
//!   calibrated. The driver does the same work either way:
//!   its helpers run whatever changed, and it puts entries back in ways that cost it the same
//!   whatever ran before (`linerate_contend::driver::Change`). Fresh timing is the last
//!   resort: for maps a program cannot write back (ring buffers, program arrays) or more than
//!   [`MAX_RESTORED_ENTRIES`] changed entries.
//!
//! Repeated and driven timing give a [`Timer`], of which the caller takes one trial per round
//! beside the [`Reference`]; fresh timing gives its figures at once.

use linerate_bpf::contents::{Entries, MapContents};
use linerate_bpf::helpers::id::{XDP_ADJUST_HEAD, XDP_ADJUST_META, XDP_ADJUST_TAIL};
use linerate_bpf::insn::{CallTarget, Instruction};
use linerate_bpf::{MapType, Object};
use linerate_contend::driver::{pass_object, Change, Restore, RestoredEntry, TrafficDriver};
use linerate_kernel::drive::Driver;
use linerate_kernel::{KernelError, LoadedObject, TestRunInput, TestRunOutput};

use super::{median, MeasureError, Method};

/// ns per run of a test run: the kernel's average rounded down, plus the expected half.
fn ns(duration_ns: u32) -> f64 {
    f64::from(duration_ns) + 0.5
}

/// A path set up to be timed, one trial per round ([`super::measure`] interleaves the trials of
/// every path of a program, so that all of them sample the same moments of this host).
pub(super) struct Timer<'a> {
    driver: Driver<'a>,
    program: usize,
    /// The action every run must return.
    expect: u32,
    how: How,
}

/// What one trial runs.
enum How {
    /// `repeat` runs of the witness's input on one buffer.
    Repeated(TestRunInput),
    /// `repeat` runs behind the alternating restoring driver, by turns the program and the
    /// empty program.
    Driven(Box<TrafficDriver>),
}

/// One trial: ns per run, and the action of its last run.
pub(super) struct Trial {
    pub ns: f64,
    pub retval: u32,
    /// Driven: ns per run of the driver's runs with the empty program behind it, in the same
    /// call.
    pub driver_ns: Option<f64>,
}

impl<'a> Timer<'a> {
    /// Repeated runs of `input` through `driver`'s program `program`.
    pub fn repeated(driver: Driver<'a>, program: usize, input: &TestRunInput, expect: u32) -> Self {
        Timer {
            driver,
            program,
            expect,
            how: How::Repeated(input.clone()),
        }
    }

    /// Runs behind `traffic`, the alternating restoring driver of `driver`'s program `program`
    /// ([`TrafficDriver::alternating`]).
    pub fn driven(driver: Driver<'a>, program: usize, traffic: TrafficDriver, expect: u32) -> Self {
        Timer {
            driver,
            program,
            expect,
            how: How::Driven(Box::new(traffic)),
        }
    }

    /// The loaded object back, for another way of timing.
    pub fn into_driver(self) -> Driver<'a> {
        self.driver
    }

    /// The action every run must return.
    pub fn expect(&self) -> u32 {
        self.expect
    }

    /// How the trials run.
    pub fn method(&self) -> Method {
        match self.how {
            How::Repeated(_) => Method::Repeated,
            How::Driven(_) => Method::Driven,
        }
    }

    /// One trial of `repeat` runs; `reference_ns` is the empty program's repeated time in this
    /// round (a driven trial times the program over the empty program behind the driver, and
    /// adds it).
    pub fn trial(&self, repeat: u32, reference_ns: f64) -> Result<Trial, MeasureError> {
        let loaded = self.driver.loaded();
        match &self.how {
            How::Repeated(input) => {
                let input = TestRunInput {
                    repeat,
                    ..input.clone()
                };
                let run = loaded.test_run(self.program, &input)?;
                Ok(Trial {
                    ns: ns(run.duration_ns),
                    retval: run.retval,
                    driver_ns: None,
                })
            }
            How::Driven(traffic) => {
                let alternated = traffic
                    .run_alternating(repeat)
                    .map_err(|e| MeasureError::Driver(e.to_string()))?;
                // The driver's calls drained its own rings, not the program's.
                loaded.discard_records()?;
                let over = alternated.nf_over_empty().ok_or_else(|| {
                    MeasureError::Driver("a driven call timed no run on one side".into())
                })?;
                Ok(Trial {
                    ns: over + reference_ns,
                    retval: alternated.retval,
                    driver_ns: alternated.empty_ns,
                })
            }
        }
    }
}

/// The empty program `r0 = XDP_PASS; exit`, timed in every round beside the paths: what the
/// model's per-packet work takes at that moment.
pub(super) struct Reference {
    loaded: LoadedObject,
    input: TestRunInput,
}

impl Reference {
    pub fn new() -> Result<Reference, KernelError> {
        Ok(Reference {
            loaded: pass_object()?,
            input: TestRunInput {
                packet: vec![0; 64],
                ..TestRunInput::default()
            },
        })
    }

    /// ns per run over `repeat` runs.
    pub fn trial(&self, repeat: u32) -> Result<f64, KernelError> {
        let input = TestRunInput {
            repeat,
            ..self.input.clone()
        };
        Ok(ns(self.loaded.test_run(0, &input)?.duration_ns))
    }
}

/// Why fresh timing could not time the path.
pub(super) enum Fresh {
    Timed(Vec<f64>),
    /// A single run from the restored maps returned another action, or the maps could not be
    /// put back (why).
    Failed(String),
}

/// Trials of `runs` single runs each, every one from the maps `initial` (the contents right
/// after seeding): each trial's median, minus `offset` (the single-run overhead).
#[allow(clippy::too_many_arguments)]
pub(super) fn fresh(
    loaded: &LoadedObject,
    program: usize,
    input: &TestRunInput,
    initial: &MapContents,
    runs: usize,
    trials: usize,
    expect: u32,
    offset: f64,
) -> Result<Fresh, KernelError> {
    let input = TestRunInput {
        repeat: 1,
        ..input.clone()
    };
    // Back to the witness's maps (earlier runs changed them); then the maps a run changes,
    // found after the first run, are the only ones read back.
    let all: Vec<usize> = (0..initial.len()).collect();
    if let Err(why) = restore(loaded, initial, &all) {
        return Ok(Fresh::Failed(why));
    }
    let first = loaded.test_run(program, &input)?;
    if first.retval != expect {
        return Ok(Fresh::Failed(format!(
            "a single run returns {}",
            linerate_bpf::facts::xdp::action_name(u64::from(first.retval))
        )));
    }
    let mut changed = Vec::new();
    for (map, want) in initial.iter().enumerate() {
        if loaded.contents(map)? != *want {
            changed.push(map);
        }
    }
    if let Err(why) = restore(loaded, initial, &changed) {
        return Ok(Fresh::Failed(why));
    }
    let mut out = Vec::with_capacity(trials);
    for _ in 0..trials {
        let mut times = Vec::with_capacity(runs);
        for _ in 0..runs {
            let run = loaded.test_run(program, &input)?;
            if run.retval != expect {
                return Ok(Fresh::Failed(format!(
                    "a single run from restored maps returns {}",
                    linerate_bpf::facts::xdp::action_name(u64::from(run.retval))
                )));
            }
            times.push(ns(run.duration_ns));
            if let Err(why) = restore(loaded, initial, &changed) {
                return Ok(Fresh::Failed(why));
            }
        }
        out.push(median(&times).unwrap_or(0.0) - offset);
    }
    Ok(Fresh::Timed(out))
}

/// Puts maps `changed` back to `initial` (see [`changes`]).
fn restore(loaded: &LoadedObject, initial: &MapContents, changed: &[usize]) -> Result<(), String> {
    for &map in changed {
        let now: Entries = loaded
            .contents(map)
            .map_err(|e| format!("map {} cannot be read back: {e}", map_name(loaded, map)))?;
        for entry in changes(loaded, map, &initial[map], &now) {
            let done = match entry.change {
                Change::Added => loaded.delete(map, &entry.key).map(|_| ()),
                Change::Changed | Change::Removed => loaded.update(map, &entry.key, &entry.value),
            };
            done.map_err(|e| format!("map {} cannot be restored: {e}", map_name(loaded, map)))?;
        }
    }
    Ok(())
}

fn map_name(loaded: &LoadedObject, map: usize) -> String {
    loaded
        .map_def(map)
        .map_or("?", |d| d.name.as_str())
        .to_string()
}

/// Whether values of maps of type `t` are plain data at every index (a program writes them back
/// with an update, never deletes them).
fn is_plain_array(t: MapType) -> bool {
    matches!(t, MapType::ARRAY | MapType::PERCPU_ARRAY)
}

/// What puts map `map`, holding `now`, back to `want`: the entries that differ, with their
/// values in `want` (for a key only `now` holds, its value there). Arrays cannot delete: their
/// canonical contents leave out zero elements, so an element that became non-zero changed from
/// zeros.
fn changes(loaded: &LoadedObject, map: usize, want: &Entries, now: &Entries) -> Vec<RestoredEntry> {
    let array = loaded
        .map_def(map)
        .is_some_and(|d| is_plain_array(d.map_type));
    let entry = |key: &[u8], value: Vec<u8>, change| RestoredEntry {
        map,
        key: key.to_vec(),
        value,
        change,
    };
    let mut out = Vec::new();
    for (key, value) in now {
        if !want.iter().any(|(k, _)| k == key) {
            out.push(match array {
                true => entry(key, vec![0; value.len()], Change::Changed),
                false => entry(key, value.clone(), Change::Added),
            });
        }
    }
    for (key, value) in want {
        match now.iter().find(|(k, _)| k == key) {
            Some((_, v)) if v == value => {}
            Some(_) => out.push(entry(key, value.clone(), Change::Changed)),
            None => out.push(entry(key, value.clone(), Change::Removed)),
        }
    }
    out
}

/// Entries the restoring driver puts back at most: each costs it a helper call per run.
pub(super) const MAX_RESTORED_ENTRIES: usize = 64;

/// What the restoring driver must put back before every run for each run of `program`'s
/// object to start as the first did (see [`TrafficDriver::restoring`]): the bytes the kernel's
/// run `single` of `input` rewrote; the whole packet, its head, length and metadata if a
/// program can move them (it calls `bpf_xdp_adjust_head`, `_tail` or `_meta`) or the run
/// changed them; and every entry of the maps that differs from `initial` now. Why not, when a
/// changed map is one the driver cannot write from a program, or too many entries changed.
pub(super) fn restore_plan(
    object: &Object,
    loaded: &LoadedObject,
    input: &TestRunInput,
    single: &TestRunOutput,
    initial: &MapContents,
) -> Result<Restore, String> {
    let moves_geometry = object.programs.iter().any(|p| {
        p.decode().is_ok_and(|insns| {
            insns.iter().any(|(_, i)| {
                matches!(
                    i,
                    Instruction::Call(CallTarget::Helper(
                        XDP_ADJUST_HEAD | XDP_ADJUST_TAIL | XDP_ADJUST_META
                    ))
                )
            })
        })
    });
    let geometry =
        moves_geometry || single.packet.len() != input.packet.len() || single.meta != input.meta;
    let bytes = if geometry {
        0..input.packet.len()
    } else {
        let differs = |(a, b): (&u8, &u8)| a != b;
        let pairs = || single.packet.iter().zip(&input.packet);
        match pairs().position(differs) {
            Some(first) => first..input.packet.len() - pairs().rev().position(differs).unwrap_or(0),
            None => 0..0,
        }
    };
    let mut entries = Vec::new();
    for (map, want) in initial.iter().enumerate() {
        let now = loaded
            .contents(map)
            .map_err(|e| format!("map {} cannot be read back: {e}", map_name(loaded, map)))?;
        if now == *want {
            continue;
        }
        let writable = loaded
            .map_def(map)
            .is_some_and(|d| is_plain_array(d.map_type) || d.map_type.is_iterable_hash());
        if !writable {
            return Err(format!(
                "the run changes map {}, which a driver cannot put back",
                map_name(loaded, map)
            ));
        }
        entries.extend(changes(loaded, map, want, &now));
    }
    if entries.len() > MAX_RESTORED_ENTRIES {
        return Err(format!(
            "the runs change {} map entries, more than the {MAX_RESTORED_ENTRIES} a driver puts back",
            entries.len()
        ));
    }
    Ok(Restore {
        bytes,
        geometry,
        entries,
    })
}

/// How much longer a single run takes than one of many repeated runs, ns: the empty program's
/// median single-run time minus its median repeated-run time.
pub(super) fn single_run_offset(
    runs: usize,
    trials: usize,
    repeat: u32,
) -> Result<f64, KernelError> {
    let loaded = pass_object()?;
    let input = TestRunInput {
        packet: vec![0; 64],
        ..TestRunInput::default()
    };
    let many = TestRunInput {
        repeat,
        ..input.clone()
    };
    let repeated: Vec<f64> = (0..trials)
        .map(|_| loaded.test_run(0, &many).map(|r| ns(r.duration_ns)))
        .collect::<Result<_, _>>()?;
    let single: Vec<f64> = (0..runs * trials)
        .map(|_| loaded.test_run(0, &input).map(|r| ns(r.duration_ns)))
        .collect::<Result<_, _>>()?;
    Ok(median(&single).unwrap_or(0.0) - median(&repeated).unwrap_or(0.0))
}
