//! `linerate run`: execute a program on packets, in the interpreter or in this host's kernel.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Result};
use clap::Args;
use linerate_bpf::contents::{MapContents, MapMode, MapSeed};
use linerate_bpf::facts::test_run_buffer::{FRAG_SIZE, MAX_DATA, MAX_FRAGS, MAX_PACKET};
use linerate_bpf::records::Records;
use linerate_bpf::Object;
use linerate_cfg::Cfg;
use linerate_io::{
    encode_maps, encode_records, inner_map_name, parse_hex, read_fib_file, read_maps_file,
    read_packets_file, read_pcap, to_hex,
};
use linerate_vm::drive::{DriveError, Driver};
use linerate_vm::{xdp_action_name, VmOptions};
use serde_json::{json, Value};

use crate::output::{emit, hexdump};

/// The shortest frame `BPF_PROG_TEST_RUN` accepts for XDP.
const ETH_HEADER_LEN: usize = 14;

#[derive(Args)]
#[command(group(clap::ArgGroup::new("input").required(true).args(["packet", "packets", "pcap"])))]
pub struct RunArgs {
    /// BPF object (.o) or `llvm-objdump -d` text.
    pub object: PathBuf,
    /// Target BTF of CO-RE relocations (raw BTF such as /sys/kernel/btf/vmlinux); default: the
    /// running kernel's.
    #[arg(long, value_name = "PATH")]
    pub btf: Option<PathBuf>,
    /// Program to run (function or section name); default: the first.
    #[arg(long)]
    pub prog: Option<String>,
    /// The packet, in hex. Up to 73,152 bytes: past 3,520 the rest goes into fragments, as the
    /// kernel builds a multi-buffer packet. One command-line argument holds at most 128 KiB, so
    /// give packets above 65,535 bytes with --packets or --pcap.
    #[arg(long)]
    pub packet: Option<String>,
    /// Run every packet of this file in order: one packet in hex per line, `#` comments.
    #[arg(long)]
    pub packets: Option<PathBuf>,
    /// Run every packet of this pcap file in order (maps persist between packets).
    #[arg(long)]
    pub pcap: Option<PathBuf>,
    /// Metadata in front of the packet (hex, a multiple of 4 bytes, at most 32).
    #[arg(long, default_value = "")]
    pub meta: String,
    /// Initial map contents: {"map": [{"key": "hex", "value": "hex"}]}; a map of maps' entries
    /// name the inner map: {"outer": [{"key": "hex", "inner": "map name"}]}.
    #[arg(long)]
    pub maps: Option<PathBuf>,
    /// Routes for bpf_fib_lookup (interpreter only): [{"prefix","ifindex","smac","dmac"}].
    #[arg(long)]
    pub fib: Option<PathBuf>,
    /// Run in this host's kernel with BPF_PROG_TEST_RUN instead of the interpreter.
    #[arg(long)]
    pub kernel: bool,
    /// With --kernel: also time each packet over this many runs and report ns per run (action,
    /// packet and maps are those of a single run: repeated runs share one buffer).
    #[arg(long, default_value_t = 1, requires = "kernel")]
    pub repeat: u32,
    /// Seed of bpf_get_prandom_u32 (interpreter).
    #[arg(long, default_value_t = 0x5eed)]
    pub seed: u64,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

/// What running all packets produced, whichever engine ran them.
struct Runs {
    results: Vec<PacketResult>,
    /// Map contents after seeding, before the first packet.
    initial_maps: MapContents,
    /// Map contents after the last packet.
    final_maps: MapContents,
}

/// What one packet's run produced, whichever engine ran it.
struct PacketResult {
    return_value: u64,
    packet: Vec<u8>,
    meta: Vec<u8>,
    instructions: Option<u64>,
    blocks: Option<Vec<usize>>,
    ns_per_run: Option<u32>,
    trace: Vec<String>,
    /// Records sent to ring buffers and perf event arrays.
    records: Records,
}

pub fn run(args: &RunArgs) -> Result<()> {
    let object = crate::load_object(&args.object, args.btf.as_deref())?;
    let program = crate::select_program(&object, args.prog.as_deref())?;
    object.programs[program].require_xdp("run", "executes XDP programs")?;
    let packets = match (&args.packet, &args.packets, &args.pcap) {
        (Some(hex), _, _) => vec![parse_hex(hex).map_err(|e| anyhow!("--packet: {e}"))?],
        (_, Some(path), _) => read_packets_file(path)?,
        (_, _, Some(path)) => {
            let packets = read_pcap(path)?;
            if packets.is_empty() {
                bail!("pcap file {}: holds no packets", path.display());
            }
            packets
        }
        _ => bail!("give --packet HEX, --packets FILE or --pcap FILE"),
    };
    if packets.is_empty() {
        bail!("no packets to run");
    }
    // The kernel refuses frames shorter than an Ethernet header with a bare EINVAL; say why, the
    // same way for both engines.
    if let Some((i, p)) = packets
        .iter()
        .enumerate()
        .find(|(_, p)| p.len() < ETH_HEADER_LEN)
    {
        bail!(
            "packet {i}: {} bytes is shorter than an Ethernet header ({ETH_HEADER_LEN} bytes)",
            p.len()
        );
    }
    // Above the largest multi-buffer packet the kernel answers a bare ENOMEM.
    if let Some((i, p)) = packets
        .iter()
        .enumerate()
        .find(|(_, p)| p.len() as u64 > MAX_PACKET)
    {
        bail!(
            "packet {i}: {} bytes is larger than the {MAX_PACKET} bytes BPF_PROG_TEST_RUN takes \
             ({MAX_DATA} in the buffer, then at most {MAX_FRAGS} fragments of {FRAG_SIZE} bytes)",
            p.len()
        );
    }
    let meta = parse_hex(&args.meta).map_err(|e| anyhow!("--meta: {e}"))?;
    let seed = match &args.maps {
        Some(path) => read_maps_file(path, &object)?,
        None => MapSeed::new(),
    };
    let runs = if args.kernel {
        run_in_kernel(&object, program, &packets, &meta, &seed, args.repeat)?
    } else {
        let mut options = VmOptions {
            prandom_seed: args.seed,
            record_steps: true,
            ..VmOptions::default()
        };
        if let Some(path) = &args.fib {
            options.fib = read_fib_file(path)?;
        }
        run_in_vm(
            &args.object,
            &object,
            program,
            &packets,
            &meta,
            &seed,
            options,
        )?
    };
    let results = &runs.results;
    let maps = encode_maps(&object, &runs.final_maps);
    if args.json {
        let runs: Vec<Value> = results
            .iter()
            .map(|r| {
                let mut v = json!({
                    "action": xdp_action_name(r.return_value),
                    "return_value": r.return_value,
                    "packet": to_hex(&r.packet),
                    "meta": to_hex(&r.meta),
                    "maps": maps,
                    "engine": if args.kernel { "kernel" } else { "vm" },
                });
                if let Some(n) = r.instructions {
                    v["instructions"] = json!(n);
                }
                if let Some(b) = &r.blocks {
                    v["blocks"] = json!(b);
                }
                if let Some(ns) = r.ns_per_run {
                    v["ns_per_run"] = json!(ns);
                }
                if !r.trace.is_empty() {
                    v["trace"] = json!(r.trace);
                }
                if !r.records.is_empty() {
                    v["records"] = json!(encode_records(&object, &r.records));
                }
                v
            })
            .collect();
        let json = if runs.len() == 1 {
            runs.into_iter().next().unwrap_or(Value::Null)
        } else {
            Value::Array(runs)
        };
        return emit(&format!("{}\n", serde_json::to_string_pretty(&json)?));
    }
    let p = &object.programs[program];
    let mut out = String::new();
    writeln!(
        out,
        "program {} (section {}) in {}",
        p.name,
        p.section,
        if args.kernel {
            "the kernel (BPF_PROG_TEST_RUN)"
        } else {
            "the linerate interpreter"
        }
    )?;
    for (i, (r, input)) in results.iter().zip(&packets).enumerate() {
        if results.len() > 1 {
            writeln!(out, "\npacket {i}")?;
        }
        writeln!(
            out,
            "action   {} ({})",
            xdp_action_name(r.return_value),
            r.return_value
        )?;
        if let Some(n) = r.instructions {
            writeln!(out, "executed {n} instructions")?;
        }
        if let Some(ns) = r.ns_per_run {
            writeln!(out, "time     {ns} ns per run ({} runs)", args.repeat)?;
        }
        if let Some(blocks) = &r.blocks {
            let path: Vec<String> = blocks.iter().map(|b| b.to_string()).collect();
            writeln!(out, "blocks   {}", path.join(" → "))?;
        }
        if r.packet == *input {
            writeln!(out, "packet   {} bytes, unchanged", r.packet.len())?;
        } else if r.packet.len() == input.len() {
            writeln!(
                out,
                "packet   {} bytes, changed at {}:",
                r.packet.len(),
                changed_ranges(input, &r.packet)
            )?;
            write!(out, "{}", hexdump(&r.packet, "  "))?;
        } else {
            writeln!(
                out,
                "packet   {} bytes (input {} bytes):",
                r.packet.len(),
                input.len()
            )?;
            write!(out, "{}", hexdump(&r.packet, "  "))?;
        }
        if !r.meta.is_empty() {
            writeln!(out, "meta     {}", to_hex(&r.meta))?;
        }
        for line in &r.trace {
            writeln!(out, "trace    {line}")?;
        }
        for map in encode_records(&object, &r.records) {
            for record in &map.records {
                writeln!(out, "record   {}: {record}", map.map)?;
            }
        }
    }
    write!(
        out,
        "{}",
        map_changes(&object, &runs.initial_maps, &runs.final_maps)
    )?;
    emit(&out)
}

/// Byte ranges where two equally long packets differ, e.g. `bytes 0-11, 22, 24-25`.
fn changed_ranges(before: &[u8], after: &[u8]) -> String {
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    for i in (0..before.len()).filter(|&i| before[i] != after[i]) {
        match ranges.last_mut() {
            Some((_, end)) if *end + 1 == i => *end = i,
            _ => ranges.push((i, i)),
        }
    }
    let parts: Vec<String> = ranges
        .iter()
        .map(|&(a, b)| {
            if a == b {
                a.to_string()
            } else {
                format!("{a}-{b}")
            }
        })
        .collect();
    format!(
        "byte{} {}",
        if parts.len() == 1 && ranges[0].0 == ranges[0].1 {
            ""
        } else {
            "s"
        },
        parts.join(", ")
    )
}

/// What the packets did to each map: entries added, changed and removed.
fn map_changes(object: &Object, before: &MapContents, after: &MapContents) -> String {
    use std::collections::BTreeMap;
    const SHOWN: usize = 16;
    let mut out = String::from("\nmap changes\n");
    let mut unchanged = Vec::new();
    for ((def, old), new) in object.maps.iter().zip(before).zip(after) {
        // A queue or stack has no keys: its values are listed in pop order.
        if def.map_type.is_queue() {
            if old == new {
                unchanged.push(def.name.as_str());
            } else {
                let values = |e: &[(Vec<u8>, Vec<u8>)]| -> Vec<String> {
                    e.iter().map(|(_, v)| to_hex(v)).collect()
                };
                out.push_str(&format!(
                    "  {} ({} values now, in pop order)\n    [{}] (was [{}])\n",
                    def.name,
                    new.len(),
                    values(new).join(", "),
                    values(old).join(", ")
                ));
            }
            continue;
        }
        let old: BTreeMap<&[u8], &[u8]> = old
            .iter()
            .map(|(k, v)| (k.as_slice(), v.as_slice()))
            .collect();
        let new: BTreeMap<&[u8], &[u8]> = new
            .iter()
            .map(|(k, v)| (k.as_slice(), v.as_slice()))
            .collect();
        let mut lines = Vec::new();
        // A map of maps' values show as the inner map's name.
        let shown = |v: &[u8]| match inner_map_name(object, def, v) {
            Some(name) => name.to_string(),
            None => to_hex(v),
        };
        for (k, v) in &new {
            match old.get(k) {
                None => lines.push(format!("    + {} => {}", to_hex(k), shown(v))),
                Some(was) if was != v => lines.push(format!(
                    "    ~ {} => {} (was {})",
                    to_hex(k),
                    shown(v),
                    shown(was)
                )),
                Some(_) => {}
            }
        }
        for k in old.keys().filter(|k| !new.contains_key(*k)) {
            lines.push(format!("    - {}", to_hex(k)));
        }
        if lines.is_empty() {
            unchanged.push(def.name.as_str());
            continue;
        }
        out.push_str(&format!("  {} ({} entries now)\n", def.name, new.len()));
        for line in lines.iter().take(SHOWN) {
            out.push_str(line);
            out.push('\n');
        }
        if lines.len() > SHOWN {
            out.push_str(&format!(
                "    ... {} more changes (use --json)\n",
                lines.len() - SHOWN
            ));
        }
    }
    if !unchanged.is_empty() {
        out.push_str(&format!("  unchanged: {}\n", unchanged.join(", ")));
    }
    out.push_str(&inner_maps(object, after));
    out
}

/// Which inner map sits at which key of each map of maps, e.g. `  vip_pools: 00000000 => pool_web`.
fn inner_maps(object: &Object, contents: &MapContents) -> String {
    let mut out = String::new();
    for (def, entries) in object.maps.iter().zip(contents) {
        if !def.map_type.is_map_in_map() {
            continue;
        }
        let slots: Vec<String> = entries
            .iter()
            .map(|(k, v)| match inner_map_name(object, def, v) {
                Some(name) => format!("{} => {name}", to_hex(k)),
                None => format!("{} => map id {}", to_hex(k), to_hex(v)),
            })
            .collect();
        let slots = if slots.is_empty() {
            "empty".to_string()
        } else {
            slots.join(", ")
        };
        out.push_str(&format!("  {} holds {slots}\n", def.name));
    }
    if out.is_empty() {
        out
    } else {
        format!("\ninner maps\n{out}")
    }
}

/// Runs the packets in the interpreter, maps persisting from packet to packet, with the blocks
/// each packet entered.
fn run_in_vm(
    source: &Path,
    object: &Object,
    program: usize,
    packets: &[Vec<u8>],
    meta: &[u8],
    seed: &MapSeed,
    options: VmOptions,
) -> Result<Runs> {
    let mut driver = Driver::new(object, seed, options, MapMode::Persist).map_err(|e| match e {
        DriveError::Build(_) => anyhow::Error::new(e).context(source.display().to_string()),
        e => e.into(),
    })?;
    let cfgs: Vec<Cfg> = object
        .programs
        .iter()
        .map(|p| {
            Cfg::build(p).map_err(|e| anyhow!("{}: program `{}`: {e}", source.display(), p.name))
        })
        .collect::<Result<_>>()?;
    let runs = driver.run_packets(program, packets, meta)?;
    let results = runs
        .outcomes
        .into_iter()
        .map(|out| PacketResult {
            return_value: out.return_value,
            blocks: Some(executed_blocks(&cfgs, &out.steps)),
            packet: out.packet,
            meta: out.meta,
            instructions: Some(out.instructions),
            ns_per_run: None,
            trace: out.trace,
            records: out.records,
        })
        .collect();
    Ok(Runs {
        results,
        initial_maps: runs.initial_maps,
        final_maps: runs.final_maps,
    })
}

/// Runs the packets in the kernel, maps persisting from packet to packet, each timed over
/// `repeat` runs.
fn run_in_kernel(
    object: &Object,
    program: usize,
    packets: &[Vec<u8>],
    meta: &[u8],
    seed: &MapSeed,
    repeat: u32,
) -> Result<Runs> {
    let runs = linerate_kernel::drive::run_packets(
        object,
        seed,
        MapMode::Persist,
        program,
        packets,
        meta,
        repeat,
    )
    .map_err(|e| match e.verifier_log() {
        Some(log) => anyhow::Error::new(crate::Detail(format!("verifier log:\n{log}")))
            .context(e.to_string()),
        None => anyhow::Error::new(e),
    })?;
    let results = runs
        .outcomes
        .into_iter()
        .zip(runs.ns_per_run)
        .map(|(out, ns)| PacketResult {
            return_value: out.retval as u64,
            packet: out.packet,
            meta: out.meta,
            instructions: None,
            blocks: None,
            ns_per_run: Some(ns),
            trace: Vec::new(),
            records: out.records,
        })
        .collect();
    Ok(Runs {
        results,
        initial_maps: runs.initial_maps,
        final_maps: runs.final_maps,
    })
}

/// The blocks a run entered, in order (a return lands inside its caller's block, which is not
/// listed again), from the instruction trace of the run.
fn executed_blocks(cfgs: &[Cfg], steps: &[linerate_vm::trace::Step]) -> Vec<usize> {
    steps
        .iter()
        .filter_map(|s| {
            let cfg = &cfgs[s.program];
            let b = cfg.block_of(s.slot)?;
            (cfg.blocks()[b].first == s.slot).then_some(b)
        })
        .collect()
}
