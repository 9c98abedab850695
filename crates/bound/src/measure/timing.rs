//! Timing one path in the kernel, two ways.
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
//! * **Driven** (for a path whose repeated runs stray only because the program rewrites its
//!   packet's headers): the program runs behind linerate's traffic driver
//!   (`linerate_contend::driver`), which writes the witness's headers back before every run and
//!   then tail-calls it. A trial is `repeat` driven runs less `repeat` runs of the driver with a
//!   program behind it that only returns, plus that program's own repeated time: what a repeated
//!   run of the path takes, with warm caches, as the model was calibrated.

use linerate_bpf::contents::{Entries, MapContents};
use linerate_bpf::facts::xdp::XDP_PASS;
use linerate_bpf::MapType;
use linerate_contend::driver::{pass_object, DriverError, TrafficDriver};
use linerate_kernel::{KernelError, LoadedObject, TestRunInput};

use super::median;

/// ns per run of a test run: the kernel's average rounded down, plus the expected half.
fn ns(duration_ns: u32) -> f64 {
    f64::from(duration_ns) + 0.5
}

/// Trials of `repeat` runs each: their ns per run, and a return value of the last repeated run
/// other than `expect` if a trial ended on one.
pub(super) fn repeated(
    loaded: &LoadedObject,
    program: usize,
    input: &TestRunInput,
    repeat: u32,
    trials: usize,
    expect: u32,
) -> Result<(Vec<f64>, Option<u32>), KernelError> {
    let input = TestRunInput {
        repeat,
        ..input.clone()
    };
    let mut out = Vec::with_capacity(trials);
    let mut other = None;
    for _ in 0..trials {
        let run = loaded.test_run(program, &input)?;
        out.push(ns(run.duration_ns));
        if run.retval != expect {
            other = Some(run.retval);
        }
    }
    Ok((out, other))
}

/// Trials of `repeat` driven runs of `program` (see the module comment): their ns per run, and a
/// return value other than `expect` if a trial ended on one.
pub(super) fn driven(
    loaded: &LoadedObject,
    program: usize,
    traffic: &TrafficDriver,
    empty: &LoadedObject,
    repeat: u32,
    trials: usize,
) -> Result<(Vec<f64>, Vec<u32>), DriverError> {
    let empty_input = TestRunInput {
        packet: vec![0; 64],
        repeat,
        ..TestRunInput::default()
    };
    let mut out = Vec::with_capacity(trials);
    let mut returned = Vec::with_capacity(trials);
    for _ in 0..trials {
        traffic.attach(empty, 0)?;
        let driver_alone = ns(traffic.run(repeat)?.duration_ns);
        traffic.attach(loaded, program)?;
        let run = traffic.run(repeat)?;
        let empty_alone = ns(empty.test_run(0, &empty_input)?.duration_ns);
        out.push(ns(run.duration_ns) - driver_alone + empty_alone);
        returned.push(run.retval);
    }
    Ok((out, returned))
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

/// Puts maps `changed` back to `initial`: deletes the keys a run added, writes the entries it
/// changed or removed. Arrays cannot delete: their canonical contents leave out zero elements,
/// so an element that became non-zero is written back as zeros.
fn restore(loaded: &LoadedObject, initial: &MapContents, changed: &[usize]) -> Result<(), String> {
    let name = |map: usize| {
        loaded
            .map_def(map)
            .map_or("?", |d| d.name.as_str())
            .to_string()
    };
    for &map in changed {
        let now: Entries = loaded
            .contents(map)
            .map_err(|e| format!("map {} cannot be read back: {e}", name(map)))?;
        let want = &initial[map];
        if now == *want {
            continue;
        }
        let array = loaded
            .map_def(map)
            .is_some_and(|d| matches!(d.map_type, MapType::ARRAY | MapType::PERCPU_ARRAY));
        for (key, value) in &now {
            if !want.iter().any(|(k, _)| k == key) {
                let done = if array {
                    loaded.update(map, key, &vec![0; value.len()])
                } else {
                    loaded.delete(map, key).map(|_| ())
                };
                done.map_err(|e| format!("map {} cannot be restored: {e}", name(map)))?;
            }
        }
        for (key, value) in want {
            if !now.iter().any(|(k, v)| k == key && v == value) {
                loaded
                    .update(map, key, value)
                    .map_err(|e| format!("map {} cannot be restored: {e}", name(map)))?;
            }
        }
    }
    Ok(())
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
    let (repeated, _) = repeated(&loaded, 0, &input, repeat, trials, XDP_PASS as u32)?;
    let single: Vec<f64> = (0..runs * trials)
        .map(|_| loaded.test_run(0, &input).map(|r| ns(r.duration_ns)))
        .collect::<Result<_, _>>()?;
    Ok(median(&single).unwrap_or(0.0) - median(&repeated).unwrap_or(0.0))
}
