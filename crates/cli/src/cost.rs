//! `linerate cost`: a program's cost under a device model — per block, per edge, and for a block
//! sequence given with `--path` — so that models can be inspected on real programs.

use std::path::PathBuf;

use anyhow::{anyhow, Context, Result};
use clap::Args;
use linerate_bpf::contents::{MapMode, MapSeed};
use linerate_bpf::ProgramKind;
use linerate_cfg::{Cfg, EdgeKind};
use linerate_cost::trace::{entry_blocks, run_cost};
use linerate_cost::{Cost, Model, ProgramCost};
use linerate_vm::drive::{run_packets, DriveError};
use linerate_vm::VmOptions;
use serde_json::{json, Value};

use crate::output::{emit, table};

#[derive(Args)]
pub struct CostArgs {
    #[command(flatten)]
    pub input: crate::args::ObjectArgs,
    /// Only this program (function or section name); default: every program.
    #[arg(long)]
    pub prog: Option<String>,
    #[command(flatten)]
    pub device: crate::args::ModelArgs,
    /// Cost of this block sequence (comma-separated block ids as listed, e.g. `0,2,5`), with its
    /// packet rate; needs a single program (--prog when the object has several).
    #[arg(long, value_delimiter = ',')]
    pub path: Option<Vec<usize>>,
    /// Cost of the path each of these packets takes (one hex packet per line, as `run
    /// --packets`), run in the interpreter against freshly seeded maps; needs a single program.
    #[arg(long)]
    pub packets: Option<PathBuf>,
    /// Initial map contents for --packets (as `run --maps`).
    #[arg(long, requires = "packets")]
    pub maps: Option<PathBuf>,
    /// Also list every instruction with the item(s) it was priced as and its cost.
    #[arg(long)]
    pub insns: bool,
    /// Frame size for the line-rate limit of `--path` (default: the model's minimum frame).
    #[arg(long)]
    pub frame_bytes: Option<u32>,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

fn format_amount(v: f64) -> String {
    if v == v.trunc() && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v:.2}")
    }
}

fn format_rate(pps: f64) -> String {
    if pps.is_infinite() {
        "unlimited".into()
    } else if pps >= 1e6 {
        format!("{:.2} Mpps", pps / 1e6)
    } else {
        format!("{:.1} kpps", pps / 1e3)
    }
}

fn cost_cells(cost: &Cost) -> Vec<String> {
    cost.0.iter().map(|v| format_amount(*v)).collect()
}

/// Whether the jump ending the source block is taken along the edge (`ja` counts as taken).
fn taken(kind: EdgeKind) -> bool {
    matches!(kind, EdgeKind::Taken | EdgeKind::Unconditional)
}

fn kind_name(kind: EdgeKind) -> &'static str {
    match kind {
        EdgeKind::Fallthrough => "fallthrough",
        EdgeKind::Taken => "taken",
        EdgeKind::NotTaken => "not_taken",
        EdgeKind::Unconditional => "unconditional",
    }
}

/// The model's description: target, device, components, limits.
fn model_json(model: &Model) -> Value {
    let file = model.file();
    json!({
        "target": model.target(),
        "device": file.device,
        "components": model.components().iter().map(|c| json!({
            "name": c.name, "unit": c.unit, "capacity_per_s": c.capacity_per_s,
        })).collect::<Vec<_>>(),
        "limits": file.limits,
        "per_packet": file.per_packet,
    })
}

struct Costed {
    name: String,
    cfg: Cfg,
    cost: ProgramCost,
    path: Option<(Vec<usize>, Cost)>,
    /// With `--insns`: each instruction's slot and disassembly.
    listing: Option<Vec<(usize, String)>>,
    /// With `--packets`: each packet's action and executed path with its cost, `None` when the
    /// run left the program (a tail call).
    packets: Option<Vec<PacketPath>>,
}

/// The path one packet took and its cost.
struct PacketPath {
    action: u64,
    path: Option<(Vec<usize>, Cost)>,
}

/// Runs each packet against freshly seeded maps and prices the run as it executed: the path it
/// takes through the entry function, and the paths its sub-programs and callbacks took, as
/// often as they ran.
fn packet_paths(
    args: &CostArgs,
    object: &linerate_bpf::Object,
    program: usize,
    cfg: &Cfg,
    model: &Model,
) -> Result<Vec<PacketPath>> {
    let Some(file) = &args.packets else {
        return Ok(Vec::new());
    };
    let packets = linerate_io::read_packets_file(file)?;
    let seed = match &args.maps {
        Some(path) => linerate_io::read_maps_file(path, object)?,
        None => MapSeed::new(),
    };
    let options = VmOptions {
        record_steps: true,
        ..Default::default()
    };
    let runs = run_packets(
        object,
        &seed,
        options,
        MapMode::Fresh,
        program,
        &packets,
        &[],
    )
    .map_err(|e| match e {
        DriveError::Packet { .. } => anyhow::Error::new(e).context(file.display().to_string()),
        e => e.into(),
    })?;
    let apart = ProgramCost::for_runs(object, cfg, model)?;
    let mut out = Vec::new();
    for (i, run) in runs.outcomes.iter().enumerate() {
        let steps = || run.steps.iter().map(|s| (s.program, s.slot));
        let path = match (
            entry_blocks(cfg, steps()),
            run_cost(&apart, cfg, model, steps()),
        ) {
            (Some(blocks), Some(c)) => Some((blocks, c.map_err(|e| anyhow!("packet {i}: {e}"))?)),
            _ => None,
        };
        out.push(PacketPath {
            action: run.return_value,
            path,
        });
    }
    Ok(out)
}

/// What one instruction was priced as: item keys, cost (not taken, for a conditional jump) and a
/// conditional jump's cost when taken.
fn slot_pricing(c: &Costed, slot: usize) -> (Vec<String>, Option<&Cost>, Option<&Cost>) {
    match c.cost.slots.get(&slot) {
        Some(charge) => (
            {
                // Not-taken before taken, as the costs are shown.
                let mut keys: Vec<String> = charge.items.iter().map(|i| i.to_string()).collect();
                keys.sort_by_key(|k| !k.ends_with(".not_taken"));
                keys
            },
            Some(&charge.cost),
            charge.taken.as_ref(),
        ),
        None => (Vec::new(), None, None),
    }
}

pub fn cost(args: &CostArgs) -> Result<()> {
    let object = args.input.load()?;
    let device = args.device.load(args.json)?;
    let model = &device.model;
    // Cost models price XDP programs; without --prog, other kinds are left out.
    let selected: Vec<usize> = match &args.prog {
        Some(name) => {
            let i = crate::select_program(&object, Some(name))?;
            object.programs[i].require_xdp("cost", "prices XDP programs")?;
            vec![i]
        }
        None => (0..object.programs.len())
            .filter(|&i| object.programs[i].kind() == ProgramKind::Xdp)
            .collect(),
    };
    if selected.is_empty() {
        return Err(anyhow!(
            "{} holds no XDP program: cost prices XDP programs",
            args.input.object.display()
        ));
    }
    for (given, flag) in [
        (args.path.is_some(), "--path"),
        (args.packets.is_some(), "--packets"),
    ] {
        if given && selected.len() != 1 {
            return Err(anyhow!(
                "{flag} needs one program: {} has {}; choose one with --prog",
                args.input.object.display(),
                selected.len()
            ));
        }
    }
    let mut costed = Vec::new();
    for &i in &selected {
        let program = &object.programs[i];
        let cfg = Cfg::build(program).map_err(|e| {
            anyhow!(
                "{}: program `{}`: {e}",
                args.input.object.display(),
                program.name
            )
        })?;
        let cost = ProgramCost::new(&object, &cfg, model).with_context(|| {
            format!(
                "{}: program `{}` on target {}",
                args.input.object.display(),
                program.name,
                model.target()
            )
        })?;
        let path = match &args.path {
            Some(blocks) => {
                let c = cost
                    .path_cost(&cfg, model, blocks)
                    .map_err(|e| anyhow!("--path: {e}"))?;
                Some((blocks.clone(), c))
            }
            None => None,
        };
        let listing = args.insns.then(|| {
            cfg.instructions()
                .iter()
                .map(|(slot, insn)| {
                    (
                        *slot,
                        linerate_bpf::disasm::format_instruction(insn, &object.maps),
                    )
                })
                .collect()
        });
        let packets = match &args.packets {
            Some(_) => Some(packet_paths(args, &object, i, &cfg, model)?),
            None => None,
        };
        costed.push(Costed {
            name: program.name.clone(),
            cfg,
            cost,
            path,
            listing,
            packets,
        });
    }
    let frame = args.frame_bytes.unwrap_or(model.limits().min_frame_bytes);
    if args.json {
        let mut json = json_output(model, &costed, frame);
        device.annotate_json(&mut json);
        emit(&format!("{}\n", serde_json::to_string_pretty(&json)?))
    } else {
        emit(&device.annotate_text(human_output(model, &costed, frame)))
    }
}

fn worst_json(model: &Model, c: &Costed, frame: u32) -> Value {
    match c.cost.worst_cost(model) {
        Some(total) => {
            let rate = model.packet_rate(&total, frame);
            json!({"cost": model.named(&total), "pps": rate.pps, "bottleneck": rate.bottleneck})
        }
        None => Value::Null,
    }
}

fn program_json(model: &Model, c: &Costed, frame: u32) -> Value {
    let mut out = json!({
        "program": c.name,
        "blocks": c.cost.blocks.iter().map(|b| json!({
            "id": b.id,
            "function": c.cfg.function_of(b.id).map(|f| f.name.clone()),
            "first_insn": b.first_insn,
            "insns": b.insns,
            "reachable": b.reachable,
            "cost": model.named(&b.cost),
        })).collect::<Vec<_>>(),
        "edges": c.cost.edges.iter().map(|e| json!({
            "from": e.from,
            "to": e.to,
            "taken": taken(e.kind),
            "kind": kind_name(e.kind),
            "cost": model.named(&e.cost),
        })).collect::<Vec<_>>(),
        "worst_path": worst_json(model, c, frame),
    });
    if let Some(packets) = &c.packets {
        out["packets"] = packets
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let mut v = json!({
                    "index": i,
                    "action": linerate_vm::xdp_action_name(p.action),
                });
                if let Some((blocks, cost)) = &p.path {
                    let rate = model.packet_rate(cost, frame);
                    v["blocks"] = json!(blocks);
                    v["cost"] = json!(model.named(cost));
                    v["pps"] = json!(rate.pps);
                    v["bottleneck"] = json!(rate.bottleneck);
                }
                v
            })
            .collect();
        if let Some((i, rate)) = slowest_packet(model, packets, frame) {
            out["slowest_packet"] =
                json!({"index": i, "pps": rate.pps, "bottleneck": rate.bottleneck});
        }
    }
    if let Some(listing) = &c.listing {
        out["insns"] = listing
            .iter()
            .map(|(slot, text)| {
                let (items, cost, taken) = slot_pricing(c, *slot);
                let mut v = json!({
                    "slot": slot,
                    "text": text,
                    "block": c.cfg.block_of(*slot),
                    "items": items,
                    "cost": cost.map(|x| model.named(x)),
                });
                if let Some(t) = taken {
                    v["taken_cost"] = json!(model.named(t));
                }
                v
            })
            .collect();
    }
    if let Some((blocks, cost)) = &c.path {
        let rate = model.packet_rate(cost, frame);
        out["path"] = json!({
            "blocks": blocks,
            "cost": model.named(cost),
            "pps": rate.pps,
            "bottleneck": rate.bottleneck,
            "frame_bytes": frame,
        });
    }
    out
}

fn json_output(model: &Model, costed: &[Costed], frame: u32) -> Value {
    let mut out = model_json(model);
    if let [single] = costed {
        // One program: its fields at the top level, as the JSON contract shows.
        if let (Value::Object(top), Value::Object(program)) =
            (&mut out, program_json(model, single, frame))
        {
            top.extend(program);
        }
    } else {
        out["programs"] = costed
            .iter()
            .map(|c| program_json(model, c, frame))
            .collect();
    }
    out
}

fn human_output(model: &Model, costed: &[Costed], frame: u32) -> String {
    let file = model.file();
    let mut out = format!(
        "target {}: {}\n  device: {} ({} core{}{})\n",
        model.target(),
        file.description,
        file.device.name,
        file.device.cores,
        if file.device.cores == 1 { "" } else { "s" },
        file.device
            .frequency_hz
            .map(|f| format!(", {:.0} MHz", f / 1e6))
            .unwrap_or_default()
    );
    let rows: Vec<Vec<String>> = model
        .components()
        .iter()
        .map(|c| {
            vec![
                c.name.clone(),
                c.unit.clone(),
                format!("{:.4e}", c.capacity_per_s),
                file.per_packet
                    .get(&c.name)
                    .map_or("0".into(), |v| format_amount(*v)),
            ]
        })
        .collect();
    out.push_str(&table(
        &["component", "unit", "capacity/s", "per packet"],
        &rows,
    ));
    let limits = &file.limits;
    out.push_str(&format!(
        "  limits: packet rate {}, line rate {}, min frame {} B\n",
        limits
            .max_packet_rate_pps
            .map_or("none".into(), format_rate),
        limits
            .line_rate_bps
            .map_or("none".into(), |b| format!("{:.0} Gbit/s", b / 1e9)),
        limits.min_frame_bytes
    ));
    let names: Vec<&str> = model.components().iter().map(|c| c.name.as_str()).collect();
    for c in costed {
        out.push_str(&format!("\nprogram {}\n", c.name));
        let mut header = vec!["block", "function", "first insn", "insns"];
        header.extend(&names);
        let rows: Vec<Vec<String>> = c
            .cost
            .blocks
            .iter()
            .map(|b| {
                let mut row = vec![
                    format!(
                        "{}{}",
                        b.id,
                        if b.reachable { "" } else { " (unreachable)" }
                    ),
                    c.cfg
                        .function_of(b.id)
                        .map_or(String::new(), |f| f.name.clone()),
                    b.first_insn.to_string(),
                    b.insns.to_string(),
                ];
                row.extend(cost_cells(&b.cost));
                row
            })
            .collect();
        out.push_str(&table(&header, &rows));
        if let Some(listing) = &c.listing {
            let mut header = vec!["insn", "block", "instruction", "priced as"];
            header.extend(&names);
            let rows: Vec<Vec<String>> = listing
                .iter()
                .map(|(slot, text)| {
                    let (items, cost, taken) = slot_pricing(c, *slot);
                    let mut row = vec![
                        slot.to_string(),
                        c.cfg
                            .block_of(*slot)
                            .map_or(String::new(), |b| b.to_string()),
                        text.clone(),
                        items.join(" | "),
                    ];
                    row.extend(model.components().iter().enumerate().map(|(i, _)| {
                        match (cost, taken) {
                            (Some(n), Some(t)) => {
                                format!("{}/{}", format_amount(n.0[i]), format_amount(t.0[i]))
                            }
                            (Some(n), None) => format_amount(n.0[i]),
                            _ => "-".into(),
                        }
                    }));
                    row
                })
                .collect();
            out.push('\n');
            out.push_str(&table(&header, &rows));
            out.push_str(
                "  (conditional jumps: not taken/taken; a local call without its callee)\n",
            );
        }
        let mut header = vec!["edge", "kind"];
        header.extend(&names);
        let rows: Vec<Vec<String>> = c
            .cost
            .edges
            .iter()
            .map(|e| {
                let mut row = vec![format!("{} -> {}", e.from, e.to), kind_name(e.kind).into()];
                row.extend(cost_cells(&e.cost));
                row
            })
            .collect();
        out.push('\n');
        out.push_str(&table(&header, &rows));
        match c.cost.worst_cost(model) {
            Some(total) => {
                let rate = model.packet_rate(&total, frame);
                out.push_str(&format!(
                    "\nslowest path, feasible or not (per component, per packet work included): {}\n  -> {} ({}-bound)\n",
                    describe(model, &total),
                    format_rate(rate.pps),
                    rate.bottleneck
                ));
            }
            None => out
                .push_str("\nslowest path: the program has loops; `linerate bound` unrolls them\n"),
        }
        if let Some(packets) = &c.packets {
            let mut header = vec!["packet", "action", "blocks"];
            header.extend(&names);
            header.extend(["rate", "bound by"]);
            let rows: Vec<Vec<String>> = packets
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    let mut row = vec![
                        i.to_string(),
                        linerate_vm::xdp_action_name(p.action).to_string(),
                    ];
                    match &p.path {
                        Some((blocks, cost)) => {
                            let rate = model.packet_rate(cost, frame);
                            row.push(blocks.len().to_string());
                            row.extend(cost_cells(cost));
                            row.extend([format_rate(rate.pps), rate.bottleneck]);
                        }
                        None => row.push("left the program (tail call)".into()),
                    }
                    row
                })
                .collect();
            out.push('\n');
            out.push_str(&table(&header, &rows));
            if let Some((i, rate)) = slowest_packet(model, packets, frame) {
                out.push_str(&format!(
                    "slowest packet: {i}, {} ({}-bound)\n",
                    format_rate(rate.pps),
                    rate.bottleneck
                ));
            }
        }
        if let Some((blocks, cost)) = &c.path {
            let rate = model.packet_rate(cost, frame);
            out.push_str(&format!(
                "\npath {}: {}\n  -> {} ({}-bound, {frame}-byte frames)\n",
                blocks
                    .iter()
                    .map(|b| b.to_string())
                    .collect::<Vec<_>>()
                    .join(","),
                describe(model, cost),
                format_rate(rate.pps),
                rate.bottleneck
            ));
        }
    }
    out
}

/// The packet whose path has the lowest packet rate.
fn slowest_packet(
    model: &Model,
    packets: &[PacketPath],
    frame: u32,
) -> Option<(usize, linerate_cost::Rate)> {
    packets
        .iter()
        .enumerate()
        .filter_map(|(i, p)| Some((i, model.packet_rate(&p.path.as_ref()?.1, frame))))
        .min_by(|a, b| a.1.pps.total_cmp(&b.1.pps))
}

fn describe(model: &Model, cost: &Cost) -> String {
    model
        .components()
        .iter()
        .zip(&cost.0)
        .map(|(c, v)| format!("{} {}", format_amount(*v), c.name))
        .collect::<Vec<_>>()
        .join(", ")
}
