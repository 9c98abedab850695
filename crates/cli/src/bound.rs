//! `linerate bound`: a program's worst-case throughput on a device model — the naive bound (the
//! slowest path, possible or not) and the slowest satisfiable path with a witness packet and the
//! map entries that make the program take it (paper 000).

use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use linerate_bound::enumerate::{model_rates, Metric, RankedPath};
use linerate_bound::prepare::Prepared;
use linerate_bound::solve::Guarantee;
use linerate_bound::ssp::{Event, Found, Stop};
use linerate_bpf::contents::MapContents;
use linerate_bpf::Object;
use linerate_cost::Model;
use linerate_smt::Witness;
use serde_json::{json, Value};

use crate::output::emit;

#[derive(Args)]
pub struct BoundArgs {
    #[command(flatten)]
    pub input: crate::args::ObjectArgs,
    /// Program to bound (function or section name); default: the first XDP program.
    #[arg(long)]
    pub prog: Option<String>,
    #[command(flatten)]
    pub device: crate::args::ModelArgs,
    /// Order paths by bit rate (the frame size each path needs counts) instead of packet rate.
    #[arg(long)]
    pub bit_rate: bool,
    /// Report the N slowest satisfiable paths instead of the slowest one.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub paths: usize,
    /// Check every path instead of the slowest first (slow: the benchmark's baseline).
    #[arg(long)]
    pub exhaustive: bool,
    #[command(flatten)]
    pub search: crate::args::SearchArgs,
    /// Write the witness packets (one per reported path, in order) to this pcap file.
    #[arg(long, value_name = "FILE.pcap")]
    pub witness: Option<PathBuf>,
    /// Write a JSON array whose element i holds path i's map entries (the `run --maps` shape).
    #[arg(long, value_name = "FILE.json")]
    pub witness_maps: Option<PathBuf>,
    /// Write a JSON array whose element i holds the routes `bpf_fib_lookup` must find for path i
    /// (the `run --fib` shape).
    #[arg(long, value_name = "FILE.json")]
    pub witness_fib: Option<PathBuf>,
    /// After the search, attack its claims that paths are impossible with RUNS runs of the
    /// interpreter (random packets and mutations of solver-built inputs): a run that takes such
    /// a path means the guarantee rests on a wrong refutation, and the command fails.
    #[arg(long, value_name = "RUNS")]
    pub attack: Option<u64>,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

/// One reported path: its rates in both units, its witness.
struct Reported<'a> {
    found: &'a Found<Box<Witness>>,
    pps: f64,
    bps: f64,
    bottleneck: String,
}

pub fn bound(args: &BoundArgs) -> Result<()> {
    if args.attack == Some(0) {
        anyhow::bail!("--attack must be at least 1 run");
    }
    let object = args.input.load()?;
    let program = crate::select_program(&object, args.prog.as_deref())?;
    object.programs[program].require_xdp("bound", "bounds XDP programs")?;
    let device = args.device.load(args.json)?;
    let model = &device.model;
    let prices = crate::hxdp::schedule_prices(&args.input.object, &object, program, model)?;
    let metric = if args.bit_rate {
        Metric::BitRate
    } else {
        Metric::PacketRate
    };
    // A progress line on a terminal; nothing in --json or in a pipe.
    let show_progress = !args.json && std::io::stderr().is_terminal();
    let unit = if args.bit_rate { "bit/s" } else { "pps" };
    let progress = |event: Event| {
        if show_progress {
            let Event::Improved { rate, checked } = event;
            eprint!(
                "\rbound: {} after {checked} impossible paths   ",
                format_rate(rate, unit)
            );
        }
    };
    let search = crate::args::SearchArgs {
        record_claims: args.attack.is_some(),
        ..args.search.clone()
    };
    let (prepared, result) = search.search(
        &args.input.object,
        &object,
        program,
        model,
        prices,
        metric,
        args.paths,
        args.exhaustive,
        progress,
    )?;
    if show_progress {
        eprint!("\r\x1b[2K");
    }
    let reported: Vec<Reported> = result
        .outcome
        .found
        .iter()
        .map(|found| report(model, found))
        .collect();
    write_witnesses(args, &object, &reported)?;
    let attacked = args
        .attack
        .map(|runs| attack(&object, program, &prepared, &result, runs, show_progress));
    let text = if args.json {
        let mut document = to_json(
            &object, program, &prepared, model, &result, &reported, metric,
        );
        if let Some(report) = &attacked {
            document["attack"] = attack_json(report);
        }
        device.annotate_json(&mut document);
        serde_json::to_string_pretty(&document)? + "\n"
    } else {
        let mut text = to_text(
            &object, program, &prepared, model, &result, &reported, metric,
        );
        if let Some(report) = &attacked {
            text.push_str(&attack_text(report));
        }
        device.annotate_text(text)
    };
    emit(&text)?;
    match attacked.as_ref().and_then(|r| r.findings.first()) {
        Some(f) => Err(anyhow::anyhow!(
            "the refutation attack found a run the search called impossible: {} (a {}-byte \
             packet); the guarantee is not to be trusted",
            f.what,
            f.packet.len()
        )),
        None => Ok(()),
    }
}

/// Solver-built inputs reaching refuted prefixes, at most this many, within this long.
const ATTACK_GUIDES: usize = 64;
const ATTACK_GUIDE_BUDGET: std::time::Duration = std::time::Duration::from_secs(20);

/// `--attack RUNS`: the search's claims attacked with runs of the interpreter, guided by the
/// witnesses found and by inputs the solver builds up to refuted decisions.
fn attack(
    object: &Object,
    program: usize,
    prepared: &Prepared,
    result: &Guarantee,
    runs: u64,
    show_progress: bool,
) -> linerate_bound::attack::Report {
    use linerate_bound::attack;
    if show_progress {
        eprint!("\rattack: building inputs   ");
    }
    let outcome = &result.outcome;
    let reach = attack::Reach {
        limit: ATTACK_GUIDES,
        budget: ATTACK_GUIDE_BUDGET,
        check_timeout: std::time::Duration::from_secs(10),
    };
    let guides = attack::guides(object, program, prepared, outcome, &reach);
    if show_progress {
        eprint!("\rattack: {runs} runs   ");
    }
    let options = attack::Options {
        runs,
        ..attack::Options::default()
    };
    let report = attack::attack(
        object,
        program,
        prepared,
        &outcome.claims,
        &guides,
        &options,
    );
    if show_progress {
        eprint!("\r\x1b[2K");
    }
    report
}

fn attack_text(report: &linerate_bound::attack::Report) -> String {
    let mut out = format!(
        "  attack: {} runs ({} guides), {} distinct paths, {} claims of impossibility \
         ({} refuted paths and prefixes, {} of them approached within an edge): ",
        report.runs,
        report.guides,
        report.distinct_paths,
        report.claims,
        report.prefix_claims,
        report.approached
    );
    if report.findings.is_empty() {
        out.push_str("no run takes what the search called impossible\n");
    } else {
        out.push_str(&format!("{} FOUND\n", report.findings.len()));
        for f in &report.findings {
            out.push_str(&format!(
                "    {}: packet {}\n",
                f.what,
                linerate_bpf::contents::hex(&f.packet)
            ));
        }
    }
    out
}

fn attack_json(report: &linerate_bound::attack::Report) -> Value {
    json!({
        "runs": report.runs,
        "failed_runs": report.failed,
        "guides": report.guides,
        "distinct_paths": report.distinct_paths,
        "claims": report.claims,
        "prefix_claims": report.prefix_claims,
        "approached": report.approached,
        "findings": report.findings.iter().map(|f| json!({
            "what": f.what,
            "packet": linerate_bpf::contents::hex(&f.packet),
            "claim": f.claim.as_ref().map(|c| c.why.name()),
        })).collect::<Vec<_>>(),
    })
}

fn report<'a>(model: &Model, found: &'a Found<Box<Witness>>) -> Reported<'a> {
    let (pps, bps, bottleneck) = model_rates(model, &found.path);
    Reported {
        found,
        pps,
        bps,
        bottleneck,
    }
}

/// Writes `--witness`, `--witness-maps` and `--witness-fib`, each atomically.
fn write_witnesses(args: &BoundArgs, object: &Object, reported: &[Reported]) -> Result<()> {
    let witnesses: Vec<&Witness> = reported
        .iter()
        .filter_map(|r| r.found.witness.as_ref().ok().map(|w| &**w))
        .collect();
    if let Some(path) = &args.witness {
        let packets: Vec<Vec<u8>> = witnesses.iter().map(|w| w.packet.clone()).collect();
        linerate_io::write_atomically(path, &linerate_io::pcap::encode_pcap(&packets))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if let Some(path) = &args.witness_maps {
        let all: Vec<Value> = witnesses
            .iter()
            .map(|w| maps_json(object, w))
            .collect::<Result<_>>()?;
        let text = serde_json::to_string_pretty(&all)? + "\n";
        linerate_io::write_atomically(path, text.as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if let Some(path) = &args.witness_fib {
        let all: Vec<Value> = witnesses.iter().map(|w| fib_json(w)).collect();
        let text = serde_json::to_string_pretty(&all)? + "\n";
        linerate_io::write_atomically(path, text.as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

/// The routes a witness needs, in the `run --fib` shape.
fn fib_json(witness: &Witness) -> Value {
    linerate_io::encode_fib(&linerate_bound::measure::witness_fib(witness))
}

/// A witness's map entries in the `run --maps` shape.
fn maps_json(object: &Object, witness: &Witness) -> Result<Value> {
    let mut contents: MapContents = vec![Vec::new(); object.maps.len()];
    for entry in witness.maps.entries() {
        if let Some(map) = contents.get_mut(entry.map) {
            map.push((entry.key.clone(), entry.value.clone()));
        }
    }
    let encoded = linerate_io::maps::encode_maps(object, &contents);
    Ok(serde_json::to_value(encoded)?)
}

fn format_rate(rate: f64, unit: &str) -> String {
    if rate.is_infinite() {
        return "unlimited".into();
    }
    let (scaled, prefix) = if rate >= 1e9 {
        (rate / 1e9, "G")
    } else if rate >= 1e6 {
        (rate / 1e6, "M")
    } else if rate >= 1e3 {
        (rate / 1e3, "k")
    } else {
        (rate, "")
    };
    format!("{scaled:.3} {prefix}{unit}")
}

/// The blocks of a path: `(program name, first slot)` of each graph node it enters, the sink
/// left out.
fn path_blocks<'a>(
    object: &'a Object,
    prepared: &Prepared,
    path: &RankedPath,
) -> Vec<(&'a str, usize)> {
    path.edges
        .iter()
        .filter_map(|&e| {
            let node = &prepared.dag.nodes[prepared.dag.edges[e].from];
            let program = object.programs.get(node.program?)?;
            Some((program.name.as_str(), node.slot))
        })
        .collect()
}

/// Source lines a path crosses (from BTF line info), each once, in order.
fn path_lines(object: &Object, prepared: &Prepared, path: &RankedPath) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for &e in &path.edges {
        let node = &prepared.dag.nodes[prepared.dag.edges[e].from];
        let Some(program) = node.program.and_then(|p| object.programs.get(p)) else {
            continue;
        };
        if let Some(line) = program.line_at(node.slot) {
            let text = format!("{}:{}", line.file, line.line);
            if lines.last() != Some(&text) {
                lines.push(text);
            }
        }
    }
    lines
}

/// `a.c:1, a.c:5, b.h:2` as `a.c:1,5 b.h:2`.
fn compact_lines(lines: &[String]) -> String {
    let mut out = String::new();
    let mut file = "";
    for l in lines {
        let (f, n) = l.rsplit_once(':').unwrap_or(("", l));
        if f == file {
            out.push(',');
        } else {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(f);
            out.push(':');
            file = f;
        }
        out.push_str(n);
    }
    out
}

fn metric_name(metric: Metric) -> &'static str {
    match metric {
        Metric::PacketRate => "pps",
        Metric::BitRate => "bps",
    }
}

fn to_json(
    object: &Object,
    _program: usize,
    prepared: &Prepared,
    model: &Model,
    result: &Guarantee,
    reported: &[Reported],
    metric: Metric,
) -> Value {
    let outcome = &result.outcome;
    let blocks = |path: &RankedPath| -> Vec<Value> {
        path_blocks(object, prepared, path)
            .into_iter()
            .map(|(program, slot)| json!({"program": program, "slot": slot}))
            .collect()
    };
    let naive = outcome.naive.as_ref().map(|path| {
        let (pps, bps, bottleneck) = model_rates(model, path);
        json!({"pps": pps, "bps": bps, "bottleneck": bottleneck,
               "min_packet_size": path.min_packet, "blocks": blocks(path)})
    });
    let path_json = |r: &Reported| {
        let witness = match &r.found.witness {
            Ok(w) => json!({
                "packet": hex(&w.packet),
                "meta": hex(&w.meta),
                "ctx": {"ingress_ifindex": w.ingress_ifindex, "rx_queue_index": w.rx_queue_index},
                "maps": maps_json(object, w).unwrap_or(Value::Null),
                "action": w.action,
                "minimal": w.minimal,
                "unrepeatable": w.unrepeatable,
                "routes": fib_json(w),
            }),
            Err(why) => json!({"unconfirmed": why}),
        };
        let size = r
            .found
            .witness
            .as_ref()
            .map_or(r.found.path.min_packet, |w| w.packet.len() as u32);
        json!({
            "pps": r.pps, "bps": r.bps, "bottleneck": r.bottleneck,
            "min_packet_size": size,
            "blocks": blocks(&r.found.path),
            "source_lines": path_lines(object, prepared, &r.found.path),
            "witness": witness,
        })
    };
    let bound_in = |rate: f64| match metric {
        Metric::PacketRate => json!({"pps": rate}),
        Metric::BitRate => json!({"bps": rate}),
    };
    let mut out = json!({
        "target": model.target(),
        "metric": metric_name(metric),
        "complete": outcome.complete,
        "stop": format!("{:?}", outcome.stop).to_lowercase(),
        "elapsed_s": outcome.elapsed.as_secs_f64(),
        "paths_checked": outcome.paths_checked,
        "conflicts_learned": outcome.learned,
        "solver_checks": result.solver_checks,
        "naive": naive,
        "ssp": reported.first().map(path_json),
        "bound": outcome.bound.map(bound_in),
        "improvements": outcome.improvements.iter().map(|i| {
            let mut v = bound_in(i.rate);
            v["t_s"] = json!(i.t_s);
            v
        }).collect::<Vec<_>>(),
        "assumed_loop_bounds": prepared.assumed.iter().map(|a| json!({
            "function": a.function, "header_slot": a.header_slot, "max_header_runs": a.max_header_runs,
        })).collect::<Vec<_>>(),
    });
    if reported.len() > 1 || outcome.found.len() > 1 {
        out["paths"] = reported.iter().map(path_json).collect();
    }
    out
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn to_text(
    object: &Object,
    program: usize,
    prepared: &Prepared,
    model: &Model,
    result: &Guarantee,
    reported: &[Reported],
    metric: Metric,
) -> String {
    let outcome = &result.outcome;
    let mut out = String::new();
    let name = &object.programs[program].name;
    let mode = match metric {
        Metric::PacketRate => "packet rate",
        Metric::BitRate => "bit rate",
    };
    out.push_str(&format!("{name} on {} ({mode})\n", model.target()));
    for a in &prepared.assumed {
        out.push_str(&format!(
            "  assumed: the loop at slot {} of `{}` runs its header at most {} times (--max-unroll)\n",
            a.header_slot, a.function, a.max_header_runs
        ));
    }
    if let Some(naive) = &outcome.naive {
        let (pps, bps, bottleneck) = model_rates(model, naive);
        out.push_str(&format!(
            "  naive bound: {} ({}), bottleneck {bottleneck}, {} blocks, packets of at least {} bytes\n",
            format_rate(pps, "pps"),
            format_rate(bps, "bit/s"),
            path_blocks(object, prepared, naive).len(),
            naive.min_packet
        ));
    }
    let status = match outcome.stop {
        Stop::Found | Stop::Exhausted => "complete".to_string(),
        Stop::Timeout => "incomplete: time limit reached".to_string(),
        Stop::MemoryCap => "incomplete: memory cap reached".to_string(),
    };
    out.push_str(&format!(
        "  search: {status}, {:.3} s, {} paths checked, {} solver checks, {} conflicts learned\n",
        outcome.elapsed.as_secs_f64(),
        outcome.paths_checked,
        result.solver_checks,
        outcome.learned
    ));
    if reported.is_empty() {
        match outcome.bound {
            Some(b) => out.push_str(&format!(
                "  guarantee: at least {} (no satisfiable path found yet)\n",
                format_rate(b, metric_name(metric))
            )),
            None => out.push_str("  no satisfiable path: no packet completes the program\n"),
        }
    }
    for (i, r) in reported.iter().enumerate() {
        let label = if i == 0 {
            "slowest satisfiable path".to_string()
        } else {
            format!("satisfiable path {}", i + 1)
        };
        out.push_str(&format!(
            "  {label}: {} ({}), bottleneck {}\n",
            format_rate(r.pps, "pps"),
            format_rate(r.bps, "bit/s"),
            r.bottleneck
        ));
        let blocks: Vec<String> = path_blocks(object, prepared, &r.found.path)
            .iter()
            .map(|(p, s)| {
                if p == name {
                    s.to_string()
                } else {
                    format!("{p}:{s}")
                }
            })
            .collect();
        out.push_str(&format!("    blocks (first slots): {}\n", blocks.join(" ")));
        let lines = path_lines(object, prepared, &r.found.path);
        if !lines.is_empty() {
            out.push_str(&format!("    source lines: {}\n", compact_lines(&lines)));
        }
        match &r.found.witness {
            Ok(w) => {
                out.push_str(&format!(
                    "    witness: {} packet of {} bytes{}, ingress ifindex {}, rx queue {}\n      {}\n",
                    w.action,
                    w.packet.len(),
                    if w.minimal { " (shortest)" } else { "" },
                    w.ingress_ifindex,
                    w.rx_queue_index,
                    hex(&w.packet)
                ));
                for entry in w.maps.entries() {
                    let map = object.maps.get(entry.map).map_or("?", |m| m.name.as_str());
                    out.push_str(&format!(
                        "      map {map}: {} => {}\n",
                        hex(&entry.key),
                        hex(&entry.value)
                    ));
                }
                for u in &w.unrepeatable {
                    out.push_str(&format!("      relies on {u}\n"));
                }
                if !w.routes.is_empty() {
                    out.push_str(&format!(
                        "      routes for the interpreter: {} (--witness-fib writes them)\n",
                        w.routes.len()
                    ));
                }
            }
            Err(why) => out.push_str(&format!("    not confirmed: {why}\n")),
        }
    }
    if let (Some(first), Some(last)) = (outcome.improvements.first(), outcome.improvements.last()) {
        out.push_str(&format!(
            "  bound rose {} times: {} at {:.3} s, {} at {:.3} s (--json lists each)\n",
            outcome.improvements.len(),
            format_rate(first.rate, metric_name(metric)),
            first.t_s,
            format_rate(last.rate, metric_name(metric)),
            last.t_s
        ));
    }
    out
}
