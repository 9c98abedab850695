//! Loading the selected programs into the kernel, checking them, and timing them in rounds.

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use linerate_bpf::facts::xdp::XDP_PASS;
use linerate_bpf::program::{FuncInfo, Function};
use linerate_bpf::{Object, Program};
use linerate_kernel::{load_entry, LoadedObject, TestRunInput};

use crate::programs::{Group, Prog, Role, Suite, LOOP_COUNT_OFFSET, LOOP_EXHAUSTED, PROBE_FAIL};
use crate::{CalibrateError, Options, Progress};

/// Repeat count of the pilot run that checks a plain timed program and estimates its time.
const PILOT_REPEAT: u32 = 64;

/// What timing produced.
pub(crate) struct Samples {
    /// Per timed program, by (group index, program name): per round the fastest of its runs, ns
    /// per iteration (looped programs) or per run.
    pub times: HashMap<(usize, String), Vec<f64>>,
    /// Per timed program: every run, in order (prices come from these).
    pub every: HashMap<(usize, String), Vec<f64>>,
    /// What each probe returned, by bench key.
    pub probes: HashMap<String, u32>,
    /// Whether `bpf_fib_lookup` ran with IPv4 forwarding on `lo`, or why not.
    pub forwarding: Result<(), String>,
    /// Number of programs loaded.
    pub programs: usize,
}

/// A group loaded into the kernel: which of its programs, at which index of the object.
struct LoadedGroup<'a> {
    group: usize,
    object: LoadedObject,
    programs: Vec<&'a Prog>,
    /// How each timed program (by index into `programs`) is run.
    runs: HashMap<usize, Runs>,
}

/// Whether a program of `suite` takes part, given the benches needed.
pub(crate) fn included(
    prog: &Prog,
    group_benches: &[&crate::programs::Bench],
    needed: &HashSet<String>,
) -> bool {
    match &prog.role {
        Role::Timed(Some(b)) if needed.contains(&b.key) => true,
        Role::Timed(_) => group_benches
            .iter()
            .any(|b| needed.contains(&b.key) && b.baseline.as_deref() == Some(prog.name.as_str())),
        Role::Probe { of, .. } => needed.contains(of),
    }
}

fn build_object(name: &str, group: &Group, programs: &[&Prog]) -> Object {
    let mut maps = group.maps.clone();
    for &(map, slot, ref prog) in &group.slots {
        if let Some(index) = programs.iter().position(|p| &p.name == prog) {
            maps[map].initial_programs.push((slot, index));
        }
    }
    let programs = programs
        .iter()
        .map(|p| {
            let insns = p.insns.clone();
            let functions = match p.subprog {
                None => vec![Function {
                    name: p.name.clone(),
                    start: 0,
                    len: insns.len(),
                }],
                Some(sub) => vec![
                    Function {
                        name: p.name.clone(),
                        start: 0,
                        len: sub,
                    },
                    Function {
                        name: format!("{}.callee", p.name),
                        start: sub,
                        len: insns.len() - sub,
                    },
                ],
            };
            let func_info = match (p.func_types, &functions[..]) {
                (Some(types), [main, sub]) => vec![
                    FuncInfo {
                        slot: main.start,
                        type_id: types[0],
                    },
                    FuncInfo {
                        slot: sub.start,
                        type_id: types[1],
                    },
                ],
                _ => Vec::new(),
            };
            Program {
                name: p.name.clone(),
                section: "xdp".into(),
                insns,
                functions,
                func_info,
                line_info: Vec::new(),
            }
        })
        .collect();
    let mut object = Object::with_programs(name, programs, maps);
    object.btf = group.btf.clone();
    object
}

/// IPv4 forwarding on `lo`, which `bpf_fib_lookup` requires of the ingress device before it looks
/// anything up. Enabled for the duration of the guard when it was off, then restored.
struct Forwarding {
    restore: bool,
}

const LO_FORWARDING: &str = "/proc/sys/net/ipv4/conf/lo/forwarding";

impl Forwarding {
    fn enable() -> Result<Forwarding, String> {
        let current = std::fs::read_to_string(LO_FORWARDING)
            .map_err(|e| format!("cannot read {LO_FORWARDING}: {e}"))?;
        if current.trim() != "0" {
            return Ok(Forwarding { restore: false });
        }
        std::fs::write(LO_FORWARDING, "1")
            .map_err(|e| format!("cannot enable {LO_FORWARDING}: {e}"))?;
        Ok(Forwarding { restore: true })
    }
}

impl Drop for Forwarding {
    fn drop(&mut self) {
        if self.restore {
            let _ = std::fs::write(LO_FORWARDING, "0");
        }
    }
}

fn kernel_err(context: String) -> impl FnOnce(linerate_kernel::KernelError) -> CalibrateError {
    move |source| CalibrateError::Kernel { context, source }
}

/// Loads the programs taking part, runs the probes, and times every timed program in
/// `opts.rounds` rounds.
pub(crate) fn measure(
    suite: &Suite,
    needed: &HashSet<String>,
    opts: &Options,
    progress: &mut dyn FnMut(&Progress),
) -> Result<Samples, CalibrateError> {
    let mut forwarding: Result<(), String> = if opts.enable_forwarding {
        Ok(())
    } else {
        Err("not enabled (calibration was told to leave sysctls alone)".into())
    };
    let fib_needed = suite.groups.iter().any(|g| {
        g.programs.iter().any(|p| {
            p.needs_forwarding && matches!(&p.role, Role::Timed(Some(b)) if needed.contains(&b.key))
        })
    });
    if fib_needed && opts.enable_forwarding {
        progress(&Progress::Note(&format!(
            "bpf_fib_lookup is timed with IPv4 forwarding on lo ({LO_FORWARDING} set to 1 during \
             those runs only, then restored)"
        )));
    }

    let taking_part: Vec<(usize, &Group, Vec<&Prog>)> = suite
        .groups
        .iter()
        .enumerate()
        .map(|(gi, group)| {
            let benches: Vec<&crate::programs::Bench> = group
                .programs
                .iter()
                .filter_map(|p| match &p.role {
                    Role::Timed(Some(b)) => Some(b),
                    _ => None,
                })
                .collect();
            let programs: Vec<&Prog> = group
                .programs
                .iter()
                .filter(|p| included(p, &benches, needed))
                .collect();
            (gi, group, programs)
        })
        .filter(|(_, _, programs)| !programs.is_empty())
        .collect();
    // Steps: loading each group, then each round.
    let total = taking_part.len() + opts.rounds;
    let mut done = 0;
    let mut step = |what: String| {
        done += 1;
        progress(&Progress::Step {
            done,
            total,
            what: &what,
        });
    };
    let mut loaded = Vec::new();
    let mut probes = HashMap::new();
    let mut count = 0;
    for (gi, group, programs) in taking_part {
        let started = Instant::now();
        let object = build_object(group.name, group, &programs);
        let lo = load_entry(&object, 0)
            .map_err(kernel_err(format!("loading the {} benchmarks", group.name)))?;
        for (map, key, value) in &group.populate {
            lo.update(*map, key, value).map_err(kernel_err(format!(
                "populating map `{}`",
                group.maps[*map].name
            )))?;
        }
        count += programs.len();
        let mut runs = HashMap::new();
        for (pi, prog) in programs.iter().enumerate() {
            let guard = if prog.needs_forwarding {
                with_forwarding(&mut forwarding)
            } else {
                None
            };
            match &prog.role {
                Role::Probe { of, expect } => {
                    for _ in 0..2 {
                        let input = TestRunInput {
                            packet: prog.packet.clone(),
                            repeat: 1,
                            ..Default::default()
                        };
                        let got = lo
                            .test_run(pi, &input)
                            .map_err(kernel_err(format!("running `{}`", prog.name)))?
                            .retval;
                        if let Some(e) = expect {
                            if got != *e {
                                return Err(probe_error(of, got, *e));
                            }
                        }
                        probes.insert(of.clone(), got);
                    }
                }
                Role::Timed(_) => {
                    runs.insert(pi, pilot(&lo, pi, prog, opts.call_ns)?);
                }
            }
            drop(guard);
        }
        step(format!(
            "loaded and checked {} ({} programs, {:.1} s)",
            group.name,
            programs.len(),
            started.elapsed().as_secs_f64()
        ));
        loaded.push(LoadedGroup {
            group: gi,
            object: lo,
            programs,
            runs,
        });
    }

    let mut times: HashMap<(usize, String), Vec<f64>> = HashMap::new();
    let mut every: HashMap<(usize, String), Vec<f64>> = HashMap::new();
    for round in 0..opts.rounds {
        let started = Instant::now();
        let n = loaded.len();
        for offset in 0..n {
            let lg = &loaded[(offset + round) % n];
            // Baselines before and after the group's benches; a program's time in the round is
            // the fastest of its runs in the round.
            let is_baseline = |i: &usize| matches!(lg.programs[*i].role, Role::Timed(None));
            let is_bench = |i: &usize| matches!(lg.programs[*i].role, Role::Timed(Some(_)));
            let all = 0..lg.programs.len();
            let order: Vec<(usize, usize)> = all
                .clone()
                .filter(is_baseline)
                .map(|i| (i, 0))
                .chain(all.clone().filter(is_bench).map(|i| (i, 0)))
                .chain(all.filter(is_baseline).map(|i| (i, 1)))
                .collect();
            let mut best: HashMap<(usize, usize), f64> = HashMap::new();
            for (pi, pass) in order {
                let prog = lg.programs[pi];
                let guard = if prog.needs_forwarding {
                    with_forwarding(&mut forwarding)
                } else {
                    None
                };
                // A plain program's run waits ~16 ms for the XDP dispatcher update: half as many.
                let runs = if prog.looped {
                    opts.runs_per_sample.max(1)
                } else {
                    opts.runs_per_sample.div_ceil(2).max(1)
                };
                for _ in 0..runs {
                    let t = timed_run(&lg.object, pi, prog, lg.runs[&pi])?;
                    every
                        .entry((lg.group, prog.name.clone()))
                        .or_default()
                        .push(t);
                    let e = best.entry((pi, pass)).or_insert(f64::INFINITY);
                    *e = e.min(t);
                }
                drop(guard);
            }
            let mut merged: HashMap<usize, f64> = HashMap::new();
            for ((pi, _), t) in best {
                let m = merged.entry(pi).or_insert(f64::INFINITY);
                *m = m.min(t);
            }
            for (pi, t) in merged {
                times
                    .entry((lg.group, lg.programs[pi].name.clone()))
                    .or_default()
                    .push(t);
            }
        }
        step(format!(
            "round {}/{} ({:.1} s)",
            round + 1,
            opts.rounds,
            started.elapsed().as_secs_f64()
        ));
    }
    Ok(Samples {
        times,
        every,
        probes,
        forwarding,
        programs: count,
    })
}

/// How a timed program is run: the iteration count of a looped program (one test run), or the
/// repeat count of a plain one.
#[derive(Clone, Copy, Debug)]
enum Runs {
    Looped(u32),
    Repeated(u32),
}

/// Largest iteration count of a looped program (runs stay far below the kernel's `may_goto` time
/// limit).
const MAX_ITERATIONS: u32 = 4_000_000;

/// One timed run: ns per iteration (looped) or per run (repeated; the kernel's average, rounded
/// down, plus the expected 0.5 ns).
fn timed_run(lo: &LoadedObject, pi: usize, prog: &Prog, runs: Runs) -> Result<f64, CalibrateError> {
    let expect = match &prog.role {
        Role::Timed(Some(b)) => b.expect_retval,
        _ => XDP_PASS as u32,
    };
    let mut packet = prog.packet.clone();
    let repeat = match runs {
        Runs::Looped(count) => {
            packet[LOOP_COUNT_OFFSET..LOOP_COUNT_OFFSET + 4].copy_from_slice(&count.to_le_bytes());
            1
        }
        Runs::Repeated(r) => r,
    };
    let out = lo
        .test_run(
            pi,
            &TestRunInput {
                packet,
                repeat,
                ..Default::default()
            },
        )
        .map_err(kernel_err(format!("running `{}`", prog.name)))?;
    if out.retval != expect {
        let why = if matches!(runs, Runs::Looped(_)) && out.retval == LOOP_EXHAUSTED {
            "its loop ran out of the kernel's may_goto budget".to_string()
        } else {
            format!("it returned {} instead of {expect}", out.retval)
        };
        return Err(CalibrateError::Check {
            what: prog.name.clone(),
            message: format!("{why}: the benchmark does not run as designed on this kernel"),
        });
    }
    Ok(match runs {
        Runs::Looped(count) => out.duration_ns as f64 / count as f64,
        Runs::Repeated(_) => out.duration_ns as f64 + 0.5,
    })
}

/// Checks a timed program and chooses its iteration or repeat count so that one run takes about
/// `call_ns`.
fn pilot(lo: &LoadedObject, pi: usize, prog: &Prog, call_ns: u64) -> Result<Runs, CalibrateError> {
    let target = call_ns as f64;
    if prog.looped {
        let mut count = 4u32;
        for _ in 0..2 {
            let per = timed_run(lo, pi, prog, Runs::Looped(count))?.max(0.1);
            count = ((target / 10.0) / per).clamp(1.0, MAX_ITERATIONS as f64) as u32;
        }
        let per = timed_run(lo, pi, prog, Runs::Looped(count))?.max(0.1);
        Ok(Runs::Looped(
            (target / per).clamp(1.0, MAX_ITERATIONS as f64) as u32,
        ))
    } else {
        let per = timed_run(lo, pi, prog, Runs::Repeated(PILOT_REPEAT))?.max(1.0);
        Ok(Runs::Repeated(
            (target / per).clamp(PILOT_REPEAT as f64, 50_000_000.0) as u32,
        ))
    }
}

/// Forwarding for a run that needs it, unless enabling it failed before (then the run goes ahead
/// without, and `state` says why).
fn with_forwarding(state: &mut Result<(), String>) -> Option<Forwarding> {
    if state.is_err() {
        return None;
    }
    match Forwarding::enable() {
        Ok(f) => Some(f),
        Err(e) => {
            *state = Err(e);
            None
        }
    }
}

fn probe_error(of: &str, got: u32, expect: u32) -> CalibrateError {
    let detail = if got >= PROBE_FAIL && expect == XDP_PASS as u32 {
        format!(
            "a call returned {} instead of the expected result",
            got.wrapping_sub(PROBE_FAIL) as i32
        )
    } else if got >= PROBE_FAIL {
        format!(
            "the first call of a pair returned {}",
            got.wrapping_sub(PROBE_FAIL) as i32
        )
    } else {
        format!("the call returned {} instead of {expect}", got as i32)
    };
    CalibrateError::Check {
        what: of.into(),
        message: format!("{detail}: the benchmark would not measure what it should"),
    }
}
