//! `linerate`: the command line of the linerate toolkit.
//!
//! Thin glue over the library crates: argument parsing and printing tables or JSON; inputs are
//! read by `linerate-io`, programs run by the `linerate-vm` and `linerate-kernel` drivers.
//! Every failure ends in one line `error: <cause>` on stderr (plus detail lines where there is
//! more to say, such as a verifier log) and a non-zero exit.

mod args;
mod bound;
mod calibrate;
mod colocate;
mod cost;
mod host_model;
mod hxdp;
mod inspect;
mod measure;
mod optimize;
mod output;
mod p4;
mod report;
mod rules;
mod run;

use std::path::Path;
use std::process::ExitCode;

use anyhow::{anyhow, Result};
use clap::{Parser, Subcommand};
use linerate_bpf::Object;

/// Worst-case performance, optimization and co-location of XDP programs.
#[derive(Parser)]
#[command(name = "linerate", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Show the programs, maps, global data, CFG summary and disassembly of an object.
    Inspect(inspect::InspectArgs),
    /// Run a program on packets in linerate's interpreter or (--kernel) in the kernel.
    Run(run::RunArgs),
    /// Cost of each block and edge of a program on a device model, and of a block sequence.
    Cost(cost::CostArgs),
    /// Worst-case throughput: the slowest satisfiable path on a device model, with a witness.
    Bound(bound::BoundArgs),
    /// Estimate against measurement: the slowest satisfiable paths timed in this host's kernel.
    Measure(measure::MeasureArgs),
    /// Measure this host's XDP costs through the kernel and write an x86 cost model.
    Calibrate(calibrate::CalibrateArgs),
    /// A smaller or faster program that does the same (K2-style synthesis, proven equivalent,
    /// checked in the kernel), written as a drop-in object.
    Optimize(optimize::OptimizeArgs),
    /// The rewrite-rule library of `optimize`: grow it from a corpus, show it.
    Rules(rules::RulesArgs),
    /// Compile for the hXDP FPGA core: VLIW schedule, instruction ROM, cycle model, worst case
    /// (paper 003); `hxdp check` verifies a ROM, `hxdp study` sweeps lanes and passes.
    Hxdp(hxdp::HxdpArgs),
    /// P4-16 programs (paper 001): `p4 latency` gives the paper's parameters and a target's
    /// latency estimate, `p4 fit` a target model from measurements.
    P4(p4::P4Args),
    /// Co-located NFs (paper 004, Tomur): `colocate profile` an NF on a backend, `train` its
    /// models, `predict` it next to competitors (bottleneck named), `place` arrivals on NICs.
    Colocate(colocate::ColocateArgs),
    /// One self-contained HTML page per program: worst case per device model with its CFG and
    /// bound over time, estimate against measurement, listing, optimizer, hXDP.
    Report(report::ReportArgs),
}

/// In an error's chain: a check ran and found what it checks for wanting (exit status 2), rather
/// than the command failing to run (1).
#[derive(Debug)]
pub struct CheckFailed;

impl std::fmt::Display for CheckFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("check failed")
    }
}

impl std::error::Error for CheckFailed {}

/// Detail printed after the one-line error (e.g. a verifier log).
#[derive(Debug)]
pub struct Detail(pub String);

impl std::fmt::Display for Detail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Detail {}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let detaches_threads = matches!(
        cli.command,
        Command::Bound(_)
            | Command::Measure(_)
            | Command::Optimize(_)
            | Command::Rules(_)
            | Command::Hxdp(_)
            | Command::Report(_)
    );
    let code = report(match cli.command {
        Command::Inspect(args) => inspect::inspect(&args),
        Command::Run(args) => run::run(&args),
        Command::Cost(args) => cost::cost(&args),
        Command::Bound(args) => bound::bound(&args),
        Command::Measure(args) => measure::measure(&args),
        Command::Calibrate(args) => calibrate::calibrate(&args),
        Command::Optimize(args) => optimize::optimize(&args),
        Command::Hxdp(args) => hxdp::hxdp(&args),
        Command::Rules(args) => rules::rules(&args),
        Command::P4(args) => p4::p4(&args),
        Command::Colocate(args) => colocate::colocate(&args),
        Command::Report(args) => report::report(&args),
    });
    if detaches_threads {
        // A search's checker threads may still be inside a solver call (a search does not wait
        // for checks it no longer needs). Exit handlers would tear down Z3's global state under
        // them, so the process ends without running them, its output flushed.
        use std::io::Write;
        let _ = std::io::stdout().flush();
        let _ = std::io::stderr().flush();
        // SAFETY: `_exit` ends the process at once; everything written is flushed above, and
        // files are written atomically before the command returns.
        unsafe { libc::_exit(if code == ExitCode::SUCCESS { 0 } else { 1 }) }
    }
    code
}

/// Prints a command's error as one line (plus detail lines) and gives the exit code.
fn report(result: Result<()>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {}", error_line(&err));
            if let Some(detail) = err.chain().find_map(|c| c.downcast_ref::<Detail>()) {
                eprintln!("{}", detail.0.trim_end());
            }
            if err.chain().any(|c| c.is::<CheckFailed>()) {
                ExitCode::from(2)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

/// An error's causes on one line, joined by `: `, without its [`Detail`] (the line `main`
/// prints after `error: `).
pub fn error_line(err: &anyhow::Error) -> String {
    err.chain()
        .filter(|cause| !cause.is::<Detail>() && !cause.is::<CheckFailed>())
        .map(|cause| cause.to_string())
        .collect::<Vec<_>>()
        .join(": ")
        .replace('\n', " ")
}

/// The object at `path`, its CO-RE relocations resolved against the BTF file `btf` (`--btf`), or
/// else the running kernel's.
pub fn load_object(path: &Path, btf: Option<&Path>) -> Result<Object> {
    Ok(linerate_io::load_object_with(
        path,
        target_btf(btf)?.as_ref(),
    )?)
}

/// The BTF file `--btf` names, parsed (`None`: the running kernel's, read where needed).
pub fn target_btf(btf: Option<&Path>) -> Result<Option<linerate_bpf::btf::Btf>> {
    btf.map(|p| {
        let bytes =
            std::fs::read(p).map_err(|e| anyhow!("cannot read BTF file {}: {e}", p.display()))?;
        linerate_bpf::btf::Btf::parse(&bytes).map_err(|e| anyhow!("BTF file {}: {e}", p.display()))
    })
    .transpose()
}

/// The index of the program `--prog` names, or the only/first program.
pub fn select_program(object: &Object, name: Option<&str>) -> Result<usize> {
    match name {
        // The first XDP program: the one `run` and `cost` can execute and price.
        None => object
            .programs
            .iter()
            .position(|p| p.kind() == linerate_bpf::ProgramKind::Xdp)
            .or((!object.programs.is_empty()).then_some(0))
            .ok_or_else(|| anyhow!("{} has no programs", object.name)),
        Some(name) => object
            .programs
            .iter()
            .position(|p| p.name == name)
            .or_else(|| object.programs.iter().position(|p| p.section == name))
            .ok_or_else(|| {
                let known: Vec<&str> = object.programs.iter().map(|p| p.name.as_str()).collect();
                anyhow!(
                    "no program `{name}` in {} (programs: {})",
                    object.name,
                    known.join(", ")
                )
            }),
    }
}
