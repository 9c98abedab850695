//! Interpreter speed next to the kernel's JIT, per example, measured in the same run.
//!
//! For every `examples/*.o` (its entry program), on its crafted packets with its seeded maps: the
//! interpreter's instructions per second and ns per packet, both for a full run (`Vm::run`, which
//! copies the packet out into a new outcome) and for a run in place (`Vm::run_in_place`, the
//! optimizer's path: the packet stays in the interpreter), the kernel's `BPF_PROG_TEST_RUN` ns per
//! packet (average over `repeat` runs, as the kernel reports; the kernel times only the program's
//! runs, not copying the packet in or out), and the ratios of the interpreter figures to it. Each
//! figure is the median of five rounds.
//!
//! The kernel's figure is for the work its repeated runs do: `BPF_PROG_TEST_RUN` copies the
//! packet in once and runs the program `repeat` times on the same buffer, so a program that
//! rewrites the packet (the transcoders turn PCMA payloads into PCMU, which they then pass
//! unchanged) is timed mostly on the path its own output takes. The interpreter's "repeat"
//! columns do the same work: per packet, a run in place followed by `VM_REPEAT - 1` reruns on
//! the packet it left (`Vm::rerun_in_place`, checked against the kernel's repeated runs by
//! tests/it/repeat_vs_kernel.rs), with the instructions per run that sequence executes; `rep/jit`
//! is the like-for-like ratio. Run with `bench/vm` or `cargo bench -p linerate-conformance --bench vm`;
//! with `BENCH_VM_ONLY=NAME,...` only those examples run (to profile one), and with
//! `BENCH_VM_PASSES=N` the interpreter makes one round of exactly `N` passes over each example's
//! packets (and of `VM_REPEAT` runs per packet in the repeat columns) and the kernel does not run (a fixed amount of work, for counting machine instructions
//! with callgrind on a machine too busy for timings to compare).

use std::time::Instant;

use linerate_bpf::contents::MapMode;
use linerate_conformance::examples::load_all;
use linerate_vm::drive::Driver;
use linerate_vm::VmOptions;

const ROUNDS: usize = 5;
const KERNEL_REPEAT: u32 = 20_000;
/// Interpreter time per round and example.
const VM_ROUND_SECONDS: f64 = 0.2;
/// Runs per packet in the interpreter's repeat columns (the first on the packet, the rest on what
/// it left); fewer than the kernel's, as the later runs settle on one path within a few.
const VM_REPEAT: u64 = 200;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    let passes: Option<u64> = std::env::var("BENCH_VM_PASSES")
        .ok()
        .map(|n| n.parse().expect("BENCH_VM_PASSES is a number"));
    let kernel = passes.is_none() && linerate_kernel::usable_or_skip("bench/vm kernel column");
    let examples = load_all().expect("example corpus");
    println!(
        "{:<18} {:>8} {:>10} {:>10} {:>10} {:>8} {:>10} {:>10} {:>7} {:>8} {:>7}",
        "example",
        "insns/pkt",
        "vm Minsn/s",
        "vm ns/pkt",
        "inplace ns",
        "rep insn",
        "repeat ns",
        "kernel ns",
        "vm/jit",
        "inpl/jit",
        "rep/jit"
    );
    let only = std::env::var("BENCH_VM_ONLY").ok();
    let (mut ratios, mut in_place_ratios, mut repeat_ratios) = (Vec::new(), Vec::new(), Vec::new());
    for example in &examples {
        let name = example
            .path
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        if only
            .as_ref()
            .is_some_and(|only| !only.split(',').any(|n| n == name))
        {
            continue;
        }
        let (obj, seed, entry) = (&example.object, &example.seed, example.entry);
        let packets = example.packet_bytes();
        let mut vm = Driver::new(obj, seed, VmOptions::default(), MapMode::Persist)
            .expect("interpreter accepts the example and its maps");
        let (mut vm_ns, mut vm_rate, mut per_packet) = (Vec::new(), Vec::new(), 0.0);
        let (mut in_place_ns, mut repeat_ns, mut repeat_insns) = (Vec::new(), Vec::new(), 0.0);
        for _ in 0..passes.map_or(ROUNDS, |_| 1) {
            let (mut runs, mut insns, mut pass) = (0u64, 0u64, 0u64);
            let start = Instant::now();
            while passes.map_or(start.elapsed().as_secs_f64() < VM_ROUND_SECONDS, |n| {
                pass < n
            }) {
                pass += 1;
                for p in &packets {
                    if let Ok(out) = vm.run(entry, p, &[]) {
                        insns += out.instructions;
                    }
                    runs += 1;
                }
            }
            let secs = start.elapsed().as_secs_f64();
            vm_ns.push(secs * 1e9 / runs as f64);
            vm_rate.push(insns as f64 / secs / 1e6);
            per_packet = insns as f64 / runs as f64;
            let (mut runs, mut pass) = (0u64, 0u64);
            let start = Instant::now();
            while passes.map_or(start.elapsed().as_secs_f64() < VM_ROUND_SECONDS, |n| {
                pass < n
            }) {
                pass += 1;
                for p in &packets {
                    // Failing packets count as runs in both columns alike.
                    let _ = vm.run_in_place(entry, p, &[]);
                    runs += 1;
                }
            }
            in_place_ns.push(start.elapsed().as_secs_f64() * 1e9 / runs as f64);
            let (mut runs, mut insns) = (0u64, 0u64);
            let start = Instant::now();
            for p in &packets {
                let mut ran = vm.run_in_place(entry, p, &[]);
                for _ in 1..VM_REPEAT {
                    if let Ok(summary) = &ran {
                        insns += summary.instructions;
                    }
                    ran = vm.rerun_in_place(entry);
                }
                if let Ok(summary) = &ran {
                    insns += summary.instructions;
                }
                runs += VM_REPEAT;
            }
            repeat_ns.push(start.elapsed().as_secs_f64() * 1e9 / runs as f64);
            repeat_insns = insns as f64 / runs as f64;
        }
        let vm_ns = median(vm_ns);
        let in_place_ns = median(in_place_ns);
        let repeat_ns = median(repeat_ns);
        let mut kernel_cell = "skipped".to_string();
        let (mut ratio_cell, mut in_place_cell, mut repeat_cell) =
            ("-".to_string(), "-".to_string(), "-".to_string());
        if kernel {
            if let Ok(mut loaded) = linerate_kernel::drive::Driver::new(obj, seed, MapMode::Persist)
            {
                let mut rounds = Vec::new();
                for _ in 0..ROUNDS {
                    let mut total = 0.0;
                    for p in &packets {
                        total += loaded
                            .run(entry, p, &[], KERNEL_REPEAT)
                            .map(|o| o.duration_ns as f64)
                            .unwrap_or(f64::NAN);
                    }
                    rounds.push(total / packets.len() as f64);
                }
                let k = median(rounds);
                kernel_cell = format!("{k:.1}");
                ratio_cell = format!("{:.1}x", vm_ns / k);
                ratios.push(vm_ns / k);
                in_place_cell = format!("{:.1}x", in_place_ns / k);
                in_place_ratios.push(in_place_ns / k);
                repeat_cell = format!("{:.1}x", repeat_ns / k);
                repeat_ratios.push(repeat_ns / k);
            }
        }
        println!(
            "{name:<18} {per_packet:>8.1} {:>10.1} {vm_ns:>10.1} {in_place_ns:>10.1} {repeat_insns:>8.1} {repeat_ns:>10.1} {kernel_cell:>10} {ratio_cell:>7} {in_place_cell:>8} {repeat_cell:>7}",
            median(vm_rate)
        );
    }
    if !ratios.is_empty() {
        let worst = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
        println!(
            "median vm/jit ratio over examples: {:.1}x (worst {:.1}x); in place: {:.1}x (worst {:.1}x); \
             repeated as the kernel does: {:.1}x (worst {:.1}x)",
            median(ratios.clone()),
            worst(&ratios),
            median(in_place_ratios.clone()),
            worst(&in_place_ratios),
            median(repeat_ratios.clone()),
            worst(&repeat_ratios)
        );
    }
}
