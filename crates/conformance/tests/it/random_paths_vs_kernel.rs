//! Differential test of the loop-free generator (`random_program::paths`): every generated program
//! loads in this host's kernel, and the interpreter and the kernel agree on the action, the output
//! packet, the metadata and every map after every packet, from the same map seed, packet after
//! packet with the maps persisting.
//!
//! 2,000 programs by default (`LINERATE_RANDOM_PATH_PROGRAMS` overrides), seeds `0..N` (so a failure
//! names the seed that reproduces it; `LINERATE_RANDOM_PATH_SEED` shifts the range), with branch
//! budgets from 1 to 32 (a few paths to many thousands) and every combination of the options.
//! Programs that call `bpf_ktime_get_ns` or `bpf_get_prandom_u32` and branch on the result
//! ([`GeneratedProgram::nondeterministic`]) must load and run in both engines, but their results
//! are not compared: the kernel's clock and random numbers are not the interpreter's.
//!
//! It prints how many programs per second the generator and the check handle.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use linerate_bpf::contents::MapMode;
use linerate_conformance::random_program::paths::{generate, GenOptions, GeneratedProgram};
use linerate_kernel::drive::Driver as KernelDriver;
use linerate_kernel::usable_or_skip;
use linerate_vm::drive::Driver as VmDriver;
use linerate_vm::VmOptions;

/// Packets run through each program.
const PACKETS: usize = 16;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Branch budgets 1 to 16 (up to 4,096 paths), every 17th program 32 branches and up to 20,000
/// paths; the other options in every combination.
fn options(seed: u64) -> GenOptions {
    let (branches, max_paths) = match seed % 17 {
        16 => (32, 20_000),
        n => (1 + n as usize, 4096),
    };
    GenOptions {
        branches,
        max_paths,
        time_random: seed % 5 == 4,
        map_writes: seed % 7 != 3,
        packet_writes: seed % 11 != 5,
    }
}

/// What running one program showed.
#[derive(Default)]
struct Coverage {
    /// Whether the results were compared with the kernel's.
    compared: bool,
    /// Branch outcomes (a conditional jump taken or not) the packets exercised.
    outcomes: usize,
    /// Distinct paths the packets took.
    paths: usize,
}

/// Runs `generated` in both engines.
fn check(generated: &GeneratedProgram, seed: u64) -> Result<Coverage, String> {
    let object = &generated.object;
    let seeded = &generated.seed_maps;
    let mut kernel = KernelDriver::new(object, seeded, MapMode::Persist).map_err(|e| {
        let log = e.verifier_log().unwrap_or("");
        let tail: Vec<&str> = log.lines().rev().take(12).collect::<Vec<_>>();
        format!(
            "the kernel refused it: {e}\n{}",
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        )
    })?;
    let options = VmOptions {
        record_steps: true,
        ..VmOptions::default()
    };
    let mut vm = VmDriver::new(object, seeded, options, MapMode::Persist)
        .map_err(|e| format!("the interpreter refused it: {e}"))?;
    let (mut outcomes, mut paths) = (BTreeSet::new(), BTreeSet::new());
    for (i, packet) in generated.packets(seed, PACKETS).iter().enumerate() {
        let theirs = kernel
            .run(0, packet, &[], 1)
            .map_err(|e| format!("packet {i} ({}): kernel: {e}", hex(packet)))?;
        let ours = vm
            .run(0, packet, &[])
            .map_err(|e| format!("packet {i} ({}): interpreter: {e}", hex(packet)))?;
        let decisions: Vec<(usize, bool)> = ours
            .steps
            .iter()
            .filter_map(|step| Some((step.slot, step.taken?)))
            .collect();
        outcomes.extend(decisions.iter().copied());
        paths.insert(decisions);
        if generated.nondeterministic {
            continue;
        }
        let mut differences = String::new();
        if ours.return_value != u64::from(theirs.retval) {
            differences += &format!(
                "  action: vm {}, kernel {}\n",
                ours.return_value, theirs.retval
            );
        }
        if ours.packet != theirs.packet || ours.meta != theirs.meta {
            differences += &format!(
                "  packet: vm     {} | meta {}\n          kernel {} | meta {}\n",
                hex(&ours.packet),
                hex(&ours.meta),
                hex(&theirs.packet),
                hex(&theirs.meta)
            );
        }
        let kernel_maps = kernel.maps().map_err(|e| format!("reading maps: {e}"))?;
        for ((def, mine), theirs) in object.maps.iter().zip(vm.maps()).zip(kernel_maps) {
            if mine != theirs {
                differences += &format!(
                    "  map `{}`: vm {:?}\n          kernel {:?}\n",
                    def.name,
                    mine.iter()
                        .map(|(k, v)| (hex(k), hex(v)))
                        .collect::<Vec<_>>(),
                    theirs
                        .iter()
                        .map(|(k, v)| (hex(k), hex(v)))
                        .collect::<Vec<_>>(),
                );
            }
        }
        if !differences.is_empty() {
            return Err(format!(
                "the engines disagree after packet {i} ({}):\n{differences}",
                hex(packet)
            ));
        }
    }
    Ok(Coverage {
        compared: !generated.nondeterministic,
        outcomes: outcomes.len(),
        paths: paths.len(),
    })
}

#[test]
fn interpreter_agrees_with_kernel_on_loop_free_programs() {
    if !usable_or_skip("loop-free random differential test") {
        return;
    }
    let env = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u64>().ok());
    let count = env("LINERATE_RANDOM_PATH_PROGRAMS").unwrap_or(2000);
    let first = env("LINERATE_RANDOM_PATH_SEED").unwrap_or(0);
    let (mut generating, mut checking) = (Duration::ZERO, Duration::ZERO);
    let (mut compared, mut paths, mut most_paths) = (0, 0u64, 0u64);
    let (mut outcomes, mut branches, mut taken) = (0, 0, 0);
    let mut failures = Vec::new();
    for seed in first..first + count {
        let start = Instant::now();
        let generated = generate(seed, &options(seed));
        generating += start.elapsed();
        paths += generated.paths;
        most_paths = most_paths.max(generated.paths);
        let start = Instant::now();
        match check(&generated, seed) {
            Ok(coverage) => {
                compared += usize::from(coverage.compared);
                outcomes += coverage.outcomes;
                branches += generated.branches;
                taken += coverage.paths;
            }
            Err(message) => failures.push(format!(
                "seed {seed} ({:?}, {} paths):\n{}\n{message}",
                options(seed),
                generated.paths,
                generated.description
            )),
        }
        checking += start.elapsed();
    }
    let per_second = |d: Duration| count as f64 / d.as_secs_f64().max(1e-9);
    eprintln!(
        "{count} loop-free programs ({:.0} paths on average, at most {most_paths}): {compared} \
         compared with the kernel over {PACKETS} packets each, the rest (time/random) run in both",
        paths as f64 / count.max(1) as f64
    );
    eprintln!(
        "  the packets took {:.1}% of the branch outcomes and {:.1} distinct paths per program",
        100.0 * outcomes as f64 / (2 * branches).max(1) as f64,
        taken as f64 / count.max(1) as f64
    );
    eprintln!(
        "  generation {:.0} programs/s; load, seed and run in kernel and interpreter {:.0} \
         programs/s; together {:.0} programs/s",
        per_second(generating),
        per_second(checking),
        per_second(generating + checking)
    );
    assert!(
        failures.is_empty(),
        "{} of {count} programs failed; the first:\n{}",
        failures.len(),
        failures[0]
    );
}
