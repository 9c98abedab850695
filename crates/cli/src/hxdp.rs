//! `linerate hxdp`: compile a program for the hXDP FPGA core and show its schedule, write the
//! Sephirot instruction ROM, run it on packets in the cycle model, bound its worst case;
//! `hxdp check` verifies a ROM against its source; `hxdp study` runs the paper's lanes sweep and
//! pass ablation.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};
use clap::{Args, Subcommand};
use linerate_bound::enumerate::Metric;
use linerate_bpf::contents::MapSeed;
use linerate_bpf::Object;
use linerate_cost::Model;
use linerate_hxdp::check::{check, packet_variants, simulate_against_vm, CheckReport};
use linerate_hxdp::compile::{compile, recognise, CompileOptions, Compiled};
use linerate_hxdp::passes::{PassOptions, PASS_NAMES};
use linerate_hxdp::perf::prices;
use linerate_hxdp::rom::{read_rom, write_rom};
use linerate_hxdp::scheduler::ScheduleOptions;
use linerate_hxdp::sephirot::{Simulation, Timing};
use linerate_hxdp::study::{ablation, lanes_sweep};
use linerate_vm::VmOptions;
use serde_json::{json, Value};

use crate::output::{emit, table};

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct HxdpArgs {
    #[command(subcommand)]
    pub command: Option<HxdpCommand>,
    #[command(flatten)]
    pub compile: CompileArgs,
}

#[derive(Subcommand)]
pub enum HxdpCommand {
    /// Verify an instruction ROM (ours or anyone's) against its source program: the row rules,
    /// and equal behaviour to the interpreter on packets through the cycle model.
    Check(CheckArgs),
    /// VLIW rows per lane count (paper Fig. 8) and per pass switched off (Figs. 7 and 9).
    Study(StudyArgs),
}

/// How to compile.
#[derive(Args)]
pub struct CompileArgs {
    /// BPF object (.o) or `llvm-objdump -d` text (not required by clap, so that `hxdp check`
    /// and `hxdp study` parse without it).
    pub object: Option<PathBuf>,
    /// Target BTF of CO-RE relocations (raw BTF such as /sys/kernel/btf/vmlinux); default: the
    /// running kernel's.
    #[arg(long, value_name = "PATH")]
    pub btf: Option<PathBuf>,
    /// The program (function or section name); default: the first XDP program.
    #[arg(long)]
    pub prog: Option<String>,
    /// Execution lanes per VLIW row.
    #[arg(long, default_value_t = 4)]
    pub lanes: usize,
    /// Rows the instruction memory holds.
    #[arg(long, default_value_t = linerate_hxdp::rom::IMEM_ROWS)]
    pub imem_rows: usize,
    /// Keep packet bounds checks (§3.1).
    #[arg(long)]
    pub no_bounds: bool,
    /// Keep the zeroing of fresh stack variables and registers (§3.1).
    #[arg(long)]
    pub no_zeroing: bool,
    /// Keep constants stored through a register (a linerate addition).
    #[arg(long)]
    pub no_constant_store: bool,
    /// Keep stack reloads as loads (a linerate addition).
    #[arg(long)]
    pub no_reload: bool,
    /// No 6-byte loads and stores (§3.2).
    #[arg(long)]
    pub no_six_byte: bool,
    /// No three-operand ALU instructions (§3.2).
    #[arg(long)]
    pub no_three_operand: bool,
    /// No parametrized exit (§3.2).
    #[arg(long)]
    pub no_exit: bool,
    /// One basic block per schedule unit: no parallel branching (§4.2).
    #[arg(long)]
    pub no_parallel_branching: bool,
    /// No register renaming (§3.4).
    #[arg(long)]
    pub no_rename: bool,
    /// No code motion into earlier superblocks (§3.4, Fig. 9).
    #[arg(long)]
    pub no_code_motion: bool,
    /// Write the Sephirot instruction-memory image here (the hXDP artifacts' ROM format).
    #[arg(short = 'o', long, value_name = "ROM")]
    pub output: Option<PathBuf>,
    /// Run these packets (pcap, or one hex packet per line) through the cycle model, each also
    /// checked against the interpreter.
    #[arg(long, value_name = "PACKETS")]
    pub simulate: Option<PathBuf>,
    /// Initial map contents for --simulate (as `run --maps`).
    #[arg(long)]
    pub maps: Option<PathBuf>,
    /// Model the core without early exit (§4.2).
    #[arg(long)]
    pub no_early_exit: bool,
    /// Skip the worst case (the slowest satisfiable path through `bound`).
    #[arg(long)]
    pub no_worst_case: bool,
    /// Seconds the worst-case search may take before reporting its best bound so far.
    #[arg(long, default_value_t = 60.0, value_name = "SECONDS")]
    pub timeout: f64,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct CheckArgs {
    /// The instruction ROM image.
    pub rom: PathBuf,
    /// The program the ROM was compiled from.
    #[arg(long)]
    pub source: PathBuf,
    /// The program in the source object (function or section name).
    #[arg(long)]
    pub prog: Option<String>,
    /// Packets to run (pcap, or one hex packet per line); default: the `.packets` file beside
    /// the source. Variants (truncations, bit flips) are added up to --count.
    #[arg(long)]
    pub packets: Option<PathBuf>,
    /// Packets to check, the given ones and their variants.
    #[arg(long, default_value_t = 200)]
    pub count: usize,
    /// Initial map contents (as `run --maps`); default: the `.maps.json` beside the source.
    #[arg(long)]
    pub maps: Option<PathBuf>,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct StudyArgs {
    /// Objects to study (the first XDP program of each).
    #[arg(required = true)]
    pub objects: Vec<PathBuf>,
    /// Largest lane count of the sweep (from 1).
    #[arg(long, default_value_t = 8)]
    pub max_lanes: usize,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

pub fn hxdp(args: &HxdpArgs) -> Result<()> {
    match &args.command {
        Some(HxdpCommand::Check(a)) => check_rom(a),
        Some(HxdpCommand::Study(a)) => study(a),
        None => compile_program(&args.compile),
    }
}

impl CompileArgs {
    fn options(&self) -> Result<CompileOptions> {
        if !(1..=16).contains(&self.lanes) {
            bail!("--lanes {} is out of range (1 to 16)", self.lanes);
        }
        Ok(CompileOptions {
            passes: PassOptions {
                bounds: !self.no_bounds,
                zeroing: !self.no_zeroing,
                constant_store: !self.no_constant_store,
                reload: !self.no_reload,
                six_byte: !self.no_six_byte,
                three_operand: !self.no_three_operand,
                exit: !self.no_exit,
            },
            schedule: ScheduleOptions {
                lanes: self.lanes,
                parallel_branching: !self.no_parallel_branching,
            },
            rename: !self.no_rename,
            code_motion: !self.no_code_motion,
            imem_rows: self.imem_rows,
        })
    }

    fn timing(&self) -> Timing {
        Timing {
            early_exit: !self.no_early_exit,
            ..Timing::default()
        }
    }
}

/// Packets from a pcap file or a hex packets file, by extension.
fn read_packets(path: &Path) -> Result<Vec<Vec<u8>>> {
    let packets = if path.extension().is_some_and(|e| e == "pcap") {
        linerate_io::read_pcap(path)?
    } else {
        linerate_io::read_packets_file(path)?
    };
    if packets.is_empty() {
        bail!("{}: holds no packets", path.display());
    }
    Ok(packets)
}

fn read_seed(path: Option<&Path>, object: &Object) -> Result<MapSeed> {
    Ok(match path {
        Some(p) => linerate_io::read_maps_file(p, object)?,
        None => MapSeed::new(),
    })
}

/// For the `hxdp` model, the prices of program `program` under its default compilation (rows per
/// edge, `linerate bound --target hxdp`); `None` for any other model, which prices instructions.
pub fn schedule_prices(
    source: &Path,
    object: &Object,
    program: usize,
    model: &Model,
) -> Result<Option<linerate_cost::PriceOverride>> {
    if model.target() != "hxdp" {
        return Ok(None);
    }
    let compiled = compile(object, program, &CompileOptions::default())
        .map_err(|e| anyhow!("{}: {e}", source.display()))?;
    Ok(Some(prices(
        object,
        program,
        &compiled,
        &Timing::default(),
        model,
    )?))
}

/// The worst case: the slowest satisfiable path of the source program under the schedule's rows
/// per edge, plus the core's per-packet I/O.
fn worst_case(
    args: &CompileArgs,
    source: &Path,
    object: &Object,
    program: usize,
    compiled: &Compiled,
) -> Result<Value> {
    let model = Model::builtin("hxdp")?;
    let timing = args.timing();
    let priced = prices(object, program, compiled, &timing, &model)?;
    let search = crate::args::SearchArgs::with_timeout(args.timeout);
    let (_, result) = search.search(
        source,
        object,
        program,
        &model,
        Some(priced),
        Metric::PacketRate,
        1,
        false,
        |_| {},
    )?;
    let Some(found) = result.outcome.found.first() else {
        return Ok(Value::Null);
    };
    let mut total = found.path.cost.clone();
    total.add(model.per_packet());
    let cycles = total.0.first().copied().unwrap_or(0.0);
    let rate = model.packet_rate(&total, found.path.min_packet);
    Ok(json!({
        "cycles": cycles,
        "pps": rate.pps,
        "bottleneck": rate.bottleneck,
        "complete": result.outcome.complete,
    }))
}

fn compile_program(args: &CompileArgs) -> Result<()> {
    let Some(source) = &args.object else {
        bail!("give an object to compile, or a command (check, study)");
    };
    let object = crate::load_object(source, args.btf.as_deref())?;
    let program = crate::select_program(&object, args.prog.as_deref())?;
    object.programs[program].require_xdp("hxdp", "compiles XDP programs")?;
    let options = args.options()?;
    let started = Instant::now();
    let compiled =
        compile(&object, program, &options).map_err(|e| anyhow!("{}: {e}", source.display()))?;
    let compile_ms = started.elapsed().as_secs_f64() * 1e3;
    if let Some(path) = &args.output {
        let rom = write_rom(&compiled.schedule, options.imem_rows)?;
        linerate_io::write_atomically(path, rom.as_bytes())?;
    }
    let show_progress = !args.json && std::io::stderr().is_terminal();
    let worst = if args.no_worst_case {
        Value::Null
    } else {
        if show_progress {
            eprint!("hxdp: bounding the worst case ...");
        }
        let w = worst_case(args, source, &object, program, &compiled)?;
        if show_progress {
            eprint!("\r\x1b[2K");
        }
        w
    };
    let simulation = match &args.simulate {
        Some(path) => {
            let packets = read_packets(path)?;
            let seed = read_seed(args.maps.as_deref(), &object)?;
            let (sim, comparison) = simulate_against_vm(
                &compiled.schedule,
                &object,
                program,
                &packets,
                &seed,
                &VmOptions::default(),
                &args.timing(),
            )?;
            if sim.packets.len() < packets.len() {
                let first = comparison.mismatches.first();
                bail!(
                    "{}: the cycle model could not run every packet ({})",
                    path.display(),
                    first.map_or_else(String::new, |m| format!("packet {}: {}", m.packet, m.what))
                );
            }
            Some((packets, sim, comparison))
        }
        None => None,
    };
    let text = if args.json {
        let mut out = serde_json::to_value(compiled.summary())?;
        out["program"] = json!(compiled.name);
        out["compile_ms"] = json!(compile_ms);
        out["rows"] = rows_json(&compiled);
        out["worst_case"] = worst.clone();
        if let Some((_, sim, comparison)) = &simulation {
            out["simulation"] = simulation_json(sim);
            out["simulation"]["packets_checked"] = json!(comparison.packets_checked);
            out["simulation"]["mismatches"] = json!(comparison.mismatches);
        }
        serde_json::to_string_pretty(&out)? + "\n"
    } else {
        let mut out = summary_text(args, source, &compiled, compile_ms, &worst);
        out.push_str(&format!("\n{}", compiled.schedule));
        if let Some((packets, sim, comparison)) = &simulation {
            out.push_str(&simulation_text(packets, sim));
            if comparison.mismatches.is_empty() {
                out.push_str(&format!(
                    "all {} packets agree with the interpreter\n",
                    comparison.packets_checked
                ));
            } else {
                for m in &comparison.mismatches {
                    out.push_str(&format!("packet {}: {}\n", m.packet, m.what));
                }
            }
        }
        out
    };
    emit(&text)?;
    if let Some((_, _, comparison)) = &simulation {
        if !comparison.mismatches.is_empty() {
            bail!(
                "the cycle model and the interpreter disagree on {} of {} packets",
                comparison.mismatches.len(),
                comparison.packets_checked
            );
        }
    }
    Ok(())
}

fn rows_json(compiled: &Compiled) -> Value {
    Value::Array(
        compiled
            .schedule
            .rows
            .iter()
            .map(|row| {
                Value::Array(
                    row.filled()
                        .map(|(lane, slot)| {
                            json!({"lane": lane, "text": slot.text_plain(), "from": slot.from})
                        })
                        .collect(),
                )
            })
            .collect(),
    )
}

fn summary_text(
    args: &CompileArgs,
    source: &Path,
    compiled: &Compiled,
    compile_ms: f64,
    worst: &Value,
) -> String {
    let removed: Vec<String> = PASS_NAMES
        .iter()
        .chain(["unreachable", "dead"].iter())
        .map(|p| format!("{p} {}", compiled.removed.get(p).copied().unwrap_or(0)))
        .collect();
    let rows = compiled.schedule.rows.len();
    let mut out = format!(
        "{} ({}) on hXDP, {} lanes\n  eBPF instructions: {} -> {} after the passes ({}); {} moved up into an earlier superblock\n  VLIW rows: {rows} ({:.2}x fewer than eBPF instructions), static IPC {:.2}, compiled in {compile_ms:.1} ms\n",
        compiled.name,
        source.display(),
        compiled.schedule.lanes,
        compiled.ebpf_insns,
        compiled.lowered.len(),
        removed.join(", "),
        compiled.hoisted.len(),
        compiled.ebpf_insns as f64 / rows.max(1) as f64,
        compiled.schedule.static_ipc(),
    );
    if let (Some(cycles), Some(pps)) = (worst["cycles"].as_f64(), worst["pps"].as_f64()) {
        let complete = if worst["complete"].as_bool() == Some(false) {
            " (search stopped early: a lower bound on the worst case)"
        } else {
            ""
        };
        out.push_str(&format!(
            "  worst case: {cycles} cycles per packet, {:.2} Mpps at 156.25 MHz{complete}\n",
            pps / 1e6
        ));
    }
    if let Some(path) = &args.output {
        out.push_str(&format!(
            "  instruction ROM written to {}\n",
            path.display()
        ));
    }
    out
}

fn simulation_json(sim: &Simulation) -> Value {
    let packets: Vec<Value> = sim
        .packets
        .iter()
        .map(|p| {
            json!({
                "action": linerate_bpf::facts::xdp::action_name(u64::from(p.action)),
                "out_of_bounds": p.out_of_bounds,
                "rows": p.rows,
                "exec_cycles": p.exec_cycles,
                "packet_cycles": p.packet_cycles,
                "pps": p.pps,
            })
        })
        .collect();
    let mean = mean_cycles(sim);
    json!({
        "packets": packets,
        "mean_packet_cycles": mean,
        "pps": Timing::default().clock_hz / mean,
    })
}

fn mean_cycles(sim: &Simulation) -> f64 {
    let n = sim.packets.len().max(1) as f64;
    sim.packets.iter().map(|p| p.packet_cycles).sum::<f64>() / n
}

fn simulation_text(packets: &[Vec<u8>], sim: &Simulation) -> String {
    let rows: Vec<Vec<String>> = packets
        .iter()
        .zip(&sim.packets)
        .enumerate()
        .map(|(i, (bytes, p))| {
            vec![
                i.to_string(),
                bytes.len().to_string(),
                linerate_bpf::facts::xdp::action_name(u64::from(p.action)).to_string()
                    + if p.out_of_bounds {
                        " (beyond the packet)"
                    } else {
                        ""
                    },
                p.rows.to_string(),
                p.exec_cycles.to_string(),
                format!("{:.1}", p.packet_cycles),
                format!("{:.2}", p.pps / 1e6),
            ]
        })
        .collect();
    let mean = mean_cycles(sim);
    format!(
        "\nsimulation (cycle model, 156.25 MHz):\n{}mean {mean:.1} cycles per packet: {:.2} Mpps\n",
        table(
            &[
                "packet",
                "bytes",
                "action",
                "rows",
                "exec cycles",
                "packet cycles",
                "Mpps"
            ],
            &rows
        ),
        Timing::default().clock_hz / mean / 1e6
    )
}

fn check_rom(args: &CheckArgs) -> Result<()> {
    let object = crate::load_object(&args.source, None)?;
    let program = crate::select_program(&object, args.prog.as_deref())?;
    object.programs[program].require_xdp("hxdp check", "checks XDP programs")?;
    let text = std::fs::read_to_string(&args.rom)
        .with_context(|| format!("cannot read ROM {}", args.rom.display()))?;
    let read = read_rom(&text).map_err(|e| anyhow!("{}: {e}", args.rom.display()))?;
    // linerate's own ROM: checked with the source slots its compiler had.
    let ours = recognise(&object, program, &read);
    let schedule = ours.as_ref().map_or(&read, |c| &c.schedule);
    let beside = |ext: &str| {
        let p = args.source.with_extension(ext);
        p.exists().then_some(p)
    };
    let packets_path = args.packets.clone().or_else(|| beside("packets"));
    let Some(packets_path) = packets_path else {
        bail!(
            "no packets to check with: give --packets (no {} beside the source)",
            args.source.with_extension("packets").display()
        );
    };
    let base = read_packets(&packets_path)?;
    let packets = packet_variants(&base, args.count.max(base.len()), 0x4878_6470);
    let maps = args.maps.clone().or_else(|| beside("maps.json"));
    let seed = read_seed(maps.as_deref(), &object)?;
    let report = check(
        schedule,
        &object,
        program,
        &packets,
        &seed,
        &VmOptions::default(),
    )?;
    let text = if args.json {
        serde_json::to_string_pretty(&report)? + "\n"
    } else {
        check_text(args, &report, ours.is_some())
    };
    emit(&text)?;
    if !report.violations.is_empty() || !report.mismatches.is_empty() {
        bail!(
            "{}: {} row-rule violations, {} of {} packets disagree with the interpreter",
            args.rom.display(),
            report.violations.len(),
            report.mismatches.len(),
            report.packets_checked
        );
    }
    Ok(())
}

fn check_text(args: &CheckArgs, report: &CheckReport, ours: bool) -> String {
    let whose = if ours {
        " (linerate's compilation of it: rows checked with their source instructions)"
    } else {
        ""
    };
    let mut out = format!(
        "{}: {} rows against {}{whose}\n",
        args.rom.display(),
        report.rows,
        args.source.display()
    );
    for v in &report.violations {
        out.push_str(&format!(
            "  row {} lanes {:?}: {}: {}\n",
            v.row, v.lanes, v.kind, v.detail
        ));
    }
    for m in &report.mismatches {
        out.push_str(&format!("  packet {}: {}\n", m.packet, m.what));
    }
    out.push_str(&format!(
        "  {} row-rule violations; {} packets checked through the cycle model, {} disagree with the interpreter\n",
        report.violations.len(),
        report.packets_checked,
        report.mismatches.len()
    ));
    out
}

fn study(args: &StudyArgs) -> Result<()> {
    if args.max_lanes == 0 || args.max_lanes > 16 {
        bail!("--max-lanes {} is out of range (1 to 16)", args.max_lanes);
    }
    let mut results = Vec::new();
    for path in &args.objects {
        let object = crate::load_object(path, None)?;
        let program = crate::select_program(&object, None)?;
        let name = object.programs[program].name.clone();
        let base = CompileOptions::default();
        let studied = lanes_sweep(&object, program, &base, 1..=args.max_lanes)
            .and_then(|sweep| Ok((sweep, ablation(&object, program, &base)?)));
        match studied {
            Ok((sweep, abl)) => results.push((name, Ok((sweep, abl)))),
            Err(e) => results.push((name, Err(e.to_string()))),
        }
    }
    let text = if args.json {
        let out: Vec<Value> = results
            .iter()
            .map(|(name, r)| match r {
                Ok((sweep, abl)) => json!({"program": name, "lanes": sweep, "ablation": abl}),
                Err(e) => json!({"program": name, "error": e}),
            })
            .collect();
        serde_json::to_string_pretty(&out)? + "\n"
    } else {
        study_text(&results, args.max_lanes)
    };
    emit(&text)
}

type Studied = Result<
    (
        Vec<linerate_hxdp::study::LanePoint>,
        Vec<linerate_hxdp::study::Ablation>,
    ),
    String,
>;

fn study_text(results: &[(String, Studied)], max_lanes: usize) -> String {
    let mut header: Vec<String> = vec!["program".into()];
    header.extend((1..=max_lanes).map(|l| format!("{l} lanes")));
    let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut sweep_rows = Vec::new();
    let mut ablation_rows = Vec::new();
    let mut ablation_header: Vec<String> = vec!["program".into()];
    for (name, r) in results {
        match r {
            Ok((sweep, abl)) => {
                let mut row = vec![name.clone()];
                row.extend(sweep.iter().map(|p| p.rows.to_string()));
                sweep_rows.push(row);
                if ablation_header.len() == 1 {
                    ablation_header.extend(abl.iter().map(|a| a.config.clone()));
                }
                let mut row = vec![name.clone()];
                row.extend(abl.iter().map(|a| format!("{}/{}", a.instructions, a.rows)));
                ablation_rows.push(row);
            }
            Err(e) => sweep_rows.push(vec![name.clone(), format!("({e})")]),
        }
    }
    let ablation_refs: Vec<&str> = ablation_header.iter().map(String::as_str).collect();
    format!(
        "VLIW rows by lane count (paper Fig. 8):\n{}\ninstructions/rows with each pass or step off (Figs. 7 and 9):\n{}",
        table(&header_refs, &sweep_rows),
        table(&ablation_refs, &ablation_rows)
    )
}
