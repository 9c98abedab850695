//! `linerate measure`: the N slowest satisfiable paths `linerate bound` reports, each witness
//! run and timed in this host's kernel, estimate against measurement (paper 000 §6.1). The
//! measuring is `linerate_bound::measure`; this is its command line.

use std::fmt::Write as _;

use anyhow::{anyhow, bail, Result};
use clap::Args;
use linerate_bound::enumerate::Metric;
use linerate_bound::measure::{self, Check, HostNow, Method, PathMeasurement, Summary};
use linerate_bpf::Object;
use serde_json::{json, Value};

use crate::output::emit;

/// The only device model this host can measure: its own CPU.
const HOST_TARGET: &str = "x86";

#[derive(Args)]
pub struct MeasureArgs {
    #[command(flatten)]
    pub input: crate::args::ObjectArgs,
    /// Program to measure (function or section name); default: the first XDP program.
    #[arg(long)]
    pub prog: Option<String>,
    /// The model to compare with: only x86 (this host) can be measured here.
    #[command(flatten)]
    pub device: crate::args::ModelArgs,
    /// Measure the N slowest satisfiable paths.
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub paths: usize,
    #[command(flatten)]
    pub search: crate::args::SearchArgs,
    /// Runs per trial (BPF_PROG_TEST_RUN's repeat; the kernel reports their average).
    #[arg(long, default_value_t = measure::Options::default().repeat, value_name = "R")]
    pub repeat: u32,
    /// Trials per path, in rounds over the paths (a trial takes about 55 ms of the kernel's
    /// whatever the repeat); the measurement is their 90th percentile (this host's slow
    /// moments, which x86 estimates hold in), the median is shown beside it.
    #[arg(long, default_value_t = measure::Options::default().trials, value_name = "T")]
    pub trials: usize,
    /// Single runs per trial of a path that repeated runs do not repeat (it rewrites the packet
    /// or changes a map it depends on): each from the witness's maps, the trial their median.
    #[arg(long, default_value_t = measure::Options::default().single_runs, value_name = "K")]
    pub single_runs: usize,
    /// Time every path in single runs from restored maps (to compare with repeated runs).
    #[arg(long)]
    pub fresh: bool,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

pub fn measure(args: &MeasureArgs) -> Result<()> {
    if args.device.model.is_none() && args.device.target != HOST_TARGET {
        bail!(
            "measure runs paths on this host's CPU; target `{}` has no hardware here (only \
             `{HOST_TARGET}` can be measured)",
            args.device.target
        );
    }
    if args.paths == 0 || args.repeat == 0 || args.trials == 0 || args.single_runs == 0 {
        bail!("--paths, --repeat, --trials and --single-runs must each be at least 1");
    }
    let object = args.input.load()?;
    let program = crate::select_program(&object, args.prog.as_deref())?;
    object.programs[program].require_xdp("measure", "measures XDP programs")?;
    let device = args.device.load(args.json)?;
    let model = &device.model;
    if model.target() != HOST_TARGET {
        bail!(
            "measure runs paths on this host's CPU; the model is for target `{}`, which has no \
             hardware here (only `{HOST_TARGET}` models can be measured)",
            model.target()
        );
    }
    linerate_kernel::check_access().map_err(|e| anyhow!("measure needs BPF: {e}"))?;
    let (prepared, result) = args.search.search(
        &args.input.object,
        &object,
        program,
        model,
        None,
        Metric::PacketRate,
        args.paths,
        false,
        |_| {},
    )?;
    let found = &result.outcome.found;
    let measured = measure::measure(
        &object,
        program,
        &prepared,
        model,
        found,
        &measure::Options {
            repeat: args.repeat,
            trials: args.trials,
            single_runs: args.single_runs,
            always_fresh: args.fresh,
            ..measure::Options::default()
        },
    )
    .map_err(|e| anyhow!("{}: {e}", args.input.object.display()))?;
    let summary = measure::summarize(&measured);
    let host = measure::host_now(model, &measured);
    let text = if args.json {
        let mut document = to_json(&object, model, &measured, &summary, host, args);
        device.annotate_json(&mut document);
        serde_json::to_string_pretty(&document)? + "\n"
    } else {
        device.annotate_text(to_text(
            &object, program, model, &measured, &summary, host, args,
        ))
    };
    emit(&text)
}

fn check_name(check: &Check) -> &'static str {
    match check {
        Check::Confirmed => "confirmed",
        Check::Unrepeatable(_) => "unrepeatable",
        Check::NoWitness(_) => "no witness",
        Check::Differs(_) => "differs",
        Check::Drifts(_) => "drifts",
    }
}

fn method_name(method: Method) -> &'static str {
    match method {
        Method::Repeated => "repeated",
        Method::Fresh => "fresh",
        Method::Driven => "driven",
    }
}

fn check_detail(check: &Check) -> Option<String> {
    match check {
        Check::Confirmed => None,
        Check::Unrepeatable(values) => Some(format!("relies on {}", values.join(", "))),
        Check::NoWitness(why) | Check::Differs(why) | Check::Drifts(why) => Some(why.clone()),
    }
}

fn to_json(
    object: &Object,
    model: &linerate_cost::Model,
    measured: &[PathMeasurement],
    summary: &Summary,
    host: Option<HostNow>,
    args: &MeasureArgs,
) -> Value {
    let blocks = |b: &[linerate_smt::BlockRef]| -> Vec<Value> {
        b.iter()
            .map(|b| {
                let program = object.programs.get(b.program).map_or("?", |p| &p.name);
                json!({"program": program, "slot": b.slot})
            })
            .collect()
    };
    let paths: Vec<Value> = measured
        .iter()
        .map(|p| {
            json!({
                "rank": p.rank,
                "blocks": blocks(&p.blocks),
                "action": p.action,
                "estimate_pps": p.estimate_pps,
                "bottleneck": p.bottleneck,
                "measured_pps": p.measured_pps(),
                "slow_ns": p.slow_ns(),
                "median_ns": p.median_ns(),
                "trials_ns": p.trials_ns,
                "driver_ns": p.driver_ns,
                "reference_ns": p.reference_ns,
                "ratio": p.ratio(),
                "method": p.method.map(method_name),
                "drift": p.drift,
                "single_run_offset_ns": p.single_run_offset_ns,
                "check": check_name(&p.check),
                "check_detail": check_detail(&p.check),
                "counted": p.counts(),
                "not_comparable": p.not_comparable(),
                "summarised": p.summarised,
                "vm_blocks_match": p.action.is_some() && p.vm_blocks == p.blocks,
                "vm_action": p.vm_action,
                "kernel_action": p.kernel_action,
            })
        })
        .collect();
    json!({
        "target": model.target(),
        "repeat": args.repeat,
        "trials": args.trials,
        "host_now": host.map(|h| json!({
            "reference_median_ns": h.reference_median_ns,
            "reference_slow_ns": h.reference_slow_ns,
            "model_per_packet_ns": h.model_per_packet_ns,
            "slower_than_model": h.slower_than_model(),
        })),
        "paths": paths,
        "summary": {
            "paths": summary.paths,
            "counted": summary.counted,
            "under_share": summary.under_share,
            "over_share": summary.over_share,
            "largest_over": summary.largest_over,
            "median_under": summary.median_under,
            "largest_under": summary.largest_under,
            "ssp_is_slowest": summary.ssp_is_slowest,
            "ssp_is_slowest_within_resolution": summary.ssp_is_slowest_within_resolution,
            "slowest_rank": summary.slowest_rank,
            "not_comparable": summary.not_comparable.iter().map(|(rank, why)| json!({
                "rank": rank,
                "reason": why,
            })).collect::<Vec<_>>(),
        },
    })
}

fn mpps(pps: f64) -> String {
    if pps.is_finite() {
        format!("{:.3} Mpps", pps / 1e6)
    } else {
        "unlimited".into()
    }
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

fn to_text(
    object: &Object,
    program: usize,
    model: &linerate_cost::Model,
    measured: &[PathMeasurement],
    summary: &Summary,
    host: Option<HostNow>,
    args: &MeasureArgs,
) -> String {
    let mut out = String::new();
    let name = &object.programs[program].name;
    let _ = writeln!(
        out,
        "{name} on {} against BPF_PROG_TEST_RUN: {} slowest satisfiable paths, {} trials of {} \
         runs each, in rounds over the paths; measured: the {}th percentile of the trials (this \
         host's slow moments, which the estimate holds in), median beside it",
        model.target(),
        measured.len(),
        args.trials,
        args.repeat,
        linerate_cost::model::SLOW_QUANTILE * 100.0,
    );
    let _ = writeln!(
        out,
        "  {:>4} {:>6} {:<12} {:>14} {:>14} {:>15} {:>9} {:<8}  check",
        "path", "blocks", "action", "estimate", "measured", "ns/run p90/p50", "est/meas", "timed"
    );
    for p in measured {
        let _ = writeln!(
            out,
            "  {:>4} {:>6} {:<12} {:>14} {:>14} {:>15} {:>9} {:<8}  {}",
            p.rank + 1,
            p.blocks.len(),
            p.action.unwrap_or("-"),
            mpps(p.estimate_pps),
            p.measured_pps().map_or("-".into(), mpps),
            p.slow_ns()
                .zip(p.median_ns())
                .map_or("-".into(), |(slow, median)| format!(
                    "{slow:.1} / {median:.1}"
                )),
            p.ratio().map_or("-".into(), |r| format!("{r:.3}")),
            p.method.map_or("-", method_name),
            check_name(&p.check)
        );
        if let Some(detail) = check_detail(&p.check) {
            let _ = writeln!(out, "         {detail}");
        }
        if let Some(why) = p.not_comparable() {
            if !matches!(p.check, Check::Unrepeatable(_) | Check::NoWitness(_)) {
                let _ = writeln!(out, "         not counted: {why}");
            }
        }
    }
    if summary.counted == 0 {
        let _ = writeln!(
            out,
            "  summary: none of the {} paths counts, so estimate and measurement are not \
             compared (each path says why)",
            summary.paths
        );
    } else {
        let _ = writeln!(
            out,
            "  summary over {} counted paths of {}: under-estimated {}, over-estimated {}; \
             largest over-estimate {}; under-estimate median {}, largest {}",
            summary.counted,
            summary.paths,
            pct(summary.under_share),
            pct(summary.over_share),
            pct(summary.largest_over),
            pct(summary.median_under),
            pct(summary.largest_under)
        );
    }
    if !summary.not_comparable.is_empty() {
        let ranks: Vec<String> = summary
            .not_comparable
            .iter()
            .map(|(rank, _)| (rank + 1).to_string())
            .collect();
        let _ = writeln!(
            out,
            "  not counted: path{} {}",
            if ranks.len() == 1 { "" } else { "s" },
            ranks.join(", ")
        );
    }
    let _ = writeln!(
        out,
        "  estimated SSP is the measured slowest (within {}): {}",
        pct(measure::SLOWEST_TOLERANCE),
        match (summary.ssp_is_slowest, summary.slowest_rank) {
            (Some(true), _) => "yes".to_string(),
            (Some(false), Some(r)) => format!(
                "no (path {} is slower){}",
                r + 1,
                if summary.ssp_is_slowest_within_resolution == Some(true) {
                    format!(
                        ", but by no more than the kernel's {} ns resolution",
                        measure::RESOLUTION_NS
                    )
                } else {
                    String::new()
                }
            ),
            _ => "not known (the SSP was not measured)".to_string(),
        }
    );
    if let Some(h) = host {
        let _ = writeln!(
            out,
            "  this host meanwhile: the empty program took {:.1} ns per run (p{:.0}; median \
             {:.1}), the model's per-packet work is {:.1} ns",
            h.reference_slow_ns,
            linerate_cost::model::SLOW_QUANTILE * 100.0,
            h.reference_median_ns,
            h.model_per_packet_ns
        );
        if let Some(slower) = h.slower_than_model() {
            let _ = writeln!(
                out,
                "  warning: this host runs {} slower than when its model was calibrated; the \
                 estimates describe the host as it was (`linerate calibrate --check` says what \
                 moved, `linerate calibrate` measures it again)",
                pct(slower)
            );
        }
    }
    out
}
