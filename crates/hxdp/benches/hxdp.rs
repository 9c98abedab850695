//! bench/hxdp: the hXDP compiler and core model on every example (paper 003 §5.1–§5.2).
//!
//! 1. Per example: eBPF instructions, after the passes, VLIW rows, the rows-to-instructions
//!    ratio (target 2–3×, Fig. 9), static IPC (Table 3: 1.70–2.83), compile time (median of 21),
//!    and `hxdp check` on the output (row-rule violations, packets disagreeing with the
//!    interpreter out of at least 200). Baselines from the same run: one instruction per row
//!    (the sequential core of §2.3) and the compiler with every pass and step off.
//! 2. The lanes sweep (Fig. 8) and the ablation (Figs. 7 and 9), as tables.
//! 3. The paper's throughput points (§5.2.1–§5.2.2) on the programs written to match them: the
//!    per-packet I/O cycles fitted to XDP_DROP with and without early exit and XDP_TX, and the
//!    redirect (15 Mpps) and simple firewall (6.53 Mpps) predicted with them, with their errors.

use std::time::Instant;

use linerate_bpf::contents::MapSeed;
use linerate_bpf::Object;
use linerate_hxdp::check::{check, packet_variants};
use linerate_hxdp::compile::{compile, CompileOptions};
use linerate_hxdp::perf::{fit_io_cycles, Point};
use linerate_hxdp::sephirot::{leaves, simulate, PacketRun, Timing};
use linerate_hxdp::study::{ablation, lanes_sweep};
use linerate_vm::VmOptions;

struct Example {
    name: String,
    object: Object,
    seed: MapSeed,
    packets: Vec<Vec<u8>>,
}

/// Every example with its crafted packets, grown to 200 by variants.
fn load_examples() -> Vec<Example> {
    linerate_conformance::examples::load_all()
        .expect("the examples load")
        .into_iter()
        .map(|ex| {
            let name = ex
                .path
                .file_stem()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            let packets = packet_variants(&ex.packet_bytes(), 200, name.len() as u64 + 7);
            Example {
                name,
                object: ex.object,
                seed: ex.seed,
                packets,
            }
        })
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        return f64::NAN;
    }
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

fn main() {
    let examples = load_examples();
    let default = CompileOptions::default();

    println!("## Compiler (4 lanes) and hxdp check on every example\n");
    println!(
        "{:<24} {:>5} {:>6} {:>5} {:>6} {:>5} {:>8} {:>9} {:>5} {:>9}",
        "example", "insns", "passes", "rows", "ratio", "IPC", "none", "ms", "viol", "mismatch"
    );
    let mut ratios = Vec::new();
    let mut ipcs = Vec::new();
    let mut none_ratios = Vec::new();
    let mut compile_ms = Vec::new();
    let (mut violations, mut mismatches, mut checked) = (0, 0, 0);
    let mut studied = Vec::new();
    for ex in &examples {
        let Some(program) = ex
            .object
            .programs
            .iter()
            .position(|p| p.kind() == linerate_bpf::ProgramKind::Xdp)
        else {
            continue;
        };
        let compiled = match compile(&ex.object, program, &default) {
            Ok(c) => c,
            Err(e) => {
                println!("{:<24} ({e})", ex.name);
                continue;
            }
        };
        let times: Vec<f64> = (0..21)
            .map(|_| {
                let t = Instant::now();
                let _ = compile(&ex.object, program, &default);
                t.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        let ms = median(times);
        let none = ablation(&ex.object, program, &default)
            .ok()
            .and_then(|a| a.into_iter().find(|a| a.config == "none"))
            .map_or(0, |a| a.rows);
        let report = check(
            &compiled.schedule,
            &ex.object,
            program,
            &ex.packets,
            &ex.seed,
            &VmOptions::default(),
        );
        let (viol, mism, n) = match &report {
            Ok(r) => (r.violations.len(), r.mismatches.len(), r.packets_checked),
            Err(e) => {
                println!("{:<24} check failed: {e}", ex.name);
                (0, 0, 0)
            }
        };
        violations += viol;
        mismatches += mism;
        checked += n;
        let rows = compiled.schedule.rows.len();
        let ratio = compiled.ebpf_insns as f64 / rows as f64;
        ratios.push(ratio);
        ipcs.push(compiled.schedule.static_ipc());
        none_ratios.push(compiled.ebpf_insns as f64 / none.max(1) as f64);
        compile_ms.push(ms);
        println!(
            "{:<24} {:>5} {:>6} {:>5} {:>5.2}x {:>5.2} {:>8} {:>9.2} {:>5} {:>5}/{:<3}",
            ex.name,
            compiled.ebpf_insns,
            compiled.lowered.len(),
            rows,
            ratio,
            compiled.schedule.static_ipc(),
            none,
            ms,
            viol,
            mism,
            n
        );
        studied.push((ex, program));
    }
    let at_least_two = ratios.iter().filter(|&&r| r >= 2.0).count();
    println!(
        "\n{} programs: instructions per row median {:.2}x (every pass and step off: {:.2}x; one \
         instruction per row: 1.00x), {at_least_two} at 2x or more; static IPC median {:.2}, \
         range {:.2}-{:.2} (paper Table 3: 1.70-2.83); compile time median {:.2} ms, max {:.2} ms; \
         {violations} row-rule violations, {mismatches} of {checked} packets disagreeing",
        ratios.len(),
        median(ratios.clone()),
        median(none_ratios),
        median(ipcs.clone()),
        ipcs.iter().copied().fold(f64::INFINITY, f64::min),
        ipcs.iter().copied().fold(0.0, f64::max),
        median(compile_ms.clone()),
        compile_ms.iter().copied().fold(0.0, f64::max),
    );

    println!("\n## Rows by lane count (Fig. 8)\n");
    print!("{:<24}", "example");
    for l in 1..=8 {
        print!(" {l:>5}");
    }
    println!();
    let mut relative: Vec<Vec<f64>> = vec![Vec::new(); 8];
    for (ex, program) in &studied {
        let Ok(sweep) = lanes_sweep(&ex.object, *program, &default, 1..=8) else {
            continue;
        };
        print!("{:<24}", ex.name);
        for p in &sweep {
            print!(" {:>5}", p.rows);
            relative[p.lanes - 1].push(p.rows as f64 / sweep[0].rows as f64);
        }
        println!();
    }
    print!("{:<24}", "median, of 1 lane");
    for r in &relative {
        print!(" {:>5.2}", median(r.clone()));
    }
    println!();

    println!("\n## Ablation: instructions/rows with each pass or step off (Figs. 7, 9)\n");
    let mut header_done = false;
    for (ex, program) in &studied {
        let Ok(abl) = ablation(&ex.object, *program, &default) else {
            continue;
        };
        if !header_done {
            print!("{:<24}", "example");
            for a in &abl {
                print!(" {:>14}", a.config);
            }
            println!();
            header_done = true;
        }
        print!("{:<24}", ex.name);
        for a in &abl {
            print!(" {:>14}", format!("{}/{}", a.instructions, a.rows));
        }
        println!();
    }

    throughput_points(&examples);
}

/// The runs of `name`'s first program on its packets of 64 bytes or fewer that stay inside the
/// packet, with `timing` (without early exit the parametrized exit is off too, as on the paper's
/// core); `None` if the example is missing or no packet qualifies.
fn small_packet_runs(examples: &[Example], name: &str, timing: &Timing) -> Option<Vec<PacketRun>> {
    let ex = examples.iter().find(|e| e.name == name)?;
    let program = ex
        .object
        .programs
        .iter()
        .position(|p| p.kind() == linerate_bpf::ProgramKind::Xdp)?;
    let mut options = CompileOptions::default();
    options.passes.exit = timing.early_exit;
    let compiled = compile(&ex.object, program, &options).ok()?;
    let packets: Vec<Vec<u8>> = ex
        .packets
        .iter()
        .filter(|p| p.len() <= 64)
        .cloned()
        .collect();
    let sim = simulate(
        &compiled.schedule,
        &ex.object,
        program,
        &packets,
        &ex.seed,
        VmOptions::default(),
        timing,
    )
    .ok()?;
    let runs: Vec<PacketRun> = sim
        .packets
        .into_iter()
        .filter(|p| !p.out_of_bounds)
        .collect();
    (!runs.is_empty()).then_some(runs)
}

/// Mean execution cycles of `name` (see [`small_packet_runs`]).
fn exec_cycles(examples: &[Example], name: &str, timing: &Timing) -> Option<f64> {
    let runs = small_packet_runs(examples, name, timing)?;
    Some(runs.iter().map(|p| p.exec_cycles as f64).sum::<f64>() / runs.len() as f64)
}

fn throughput_points(examples: &[Example]) {
    println!("\n## Throughput points (paper §5.2): I/O fitted to the microbenchmarks\n");
    let timing = Timing::default();
    let no_early = Timing {
        early_exit: false,
        ..Timing::default()
    };
    let points = [
        (
            "xdp_hxdp_drop",
            &timing,
            52e6,
            false,
            "XDP_DROP, early exit",
        ),
        (
            "xdp_hxdp_drop",
            &no_early,
            22e6,
            false,
            "XDP_DROP, no early exit",
        ),
        ("xdp_hxdp_tx", &timing, 22.5e6, true, "XDP_TX"),
    ];
    let mut fit_points = Vec::new();
    for (name, t, pps, leaves, label) in points {
        match exec_cycles(examples, name, t) {
            Some(c) => fit_points.push((label, c, pps, leaves)),
            None => println!("{label}: {name} missing or not compilable"),
        }
    }
    let fitted = fit_io_cycles(
        &fit_points
            .iter()
            .map(|&(_, c, pps, leaves)| Point {
                exec_cycles: c,
                measured_pps: pps,
                leaves,
            })
            .collect::<Vec<_>>(),
        timing.clock_hz,
    );
    let Some((io_in, io_out)) = fitted else {
        return;
    };
    println!(
        "fitted I/O: {io_in:.2} cycles per packet, {io_out:.2} more for a packet that leaves \
         (the model's defaults: {:.2} and {:.2})\n",
        timing.io_in_cycles, timing.io_out_cycles
    );
    println!(
        "{:<28} {:>11} {:>12} {:>12} {:>8}",
        "point", "exec cycles", "model Mpps", "paper Mpps", "error"
    );
    let row = |label: &str, c: f64, pps: f64, leaves: bool| {
        let io = if leaves { io_in + io_out } else { io_in };
        let model = timing.clock_hz / (c + io);
        println!(
            "{:<28} {:>11.2} {:>12.2} {:>12.2} {:>7.1}%",
            label,
            c,
            model / 1e6,
            pps / 1e6,
            (model - pps) / pps * 100.0
        );
    };
    for &(label, c, pps, leaves) in &fit_points {
        row(label, c, pps, leaves);
    }
    // §5.2.2's fourth point, not fitted: XDP_TX with the helper call a redirect takes.
    match exec_cycles(examples, "xdp_hxdp_redirect", &timing) {
        Some(c) => row("redirect (predicted)", c, 15e6, true),
        None => println!("redirect: xdp_hxdp_redirect missing or not compilable"),
    }
    match firewall(examples) {
        Some((c, leaving)) => {
            let io = io_in + io_out * leaving;
            let model = timing.clock_hz / (c + io);
            println!(
                "{:<28} {:>11.2} {:>12.2} {:>12.2} {:>7.1}%",
                "simple firewall (predicted)",
                c,
                model / 1e6,
                6.53,
                (model - 6.53e6) / 6.53e6 * 100.0
            );
        }
        None => println!("simple firewall: xdp_simple_firewall missing or not compilable"),
    }
}

/// The simple firewall's mean execution cycles over its packets of 64 bytes or fewer, and the
/// share of them that leave.
fn firewall(examples: &[Example]) -> Option<(f64, f64)> {
    let runs = small_packet_runs(examples, "xdp_simple_firewall", &Timing::default())?;
    let n = runs.len() as f64;
    let cycles = runs.iter().map(|p| p.exec_cycles as f64).sum::<f64>() / n;
    let leaving = runs.iter().filter(|p| leaves(p.action)).count() as f64 / n;
    Some((cycles, leaving))
}
