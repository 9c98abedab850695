//! `linerate run`: execute a program on packets, in the interpreter or in this host's kernel.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use linerate_bpf::Object;
use linerate_cfg::Cfg;
use linerate_vm::maps::normalize_entries;
use linerate_vm::{xdp_action_name, Vm, VmOptions};
use serde_json::{json, Value};

use crate::input::{
    encode_maps, parse_hex, read_fib_file, read_maps_file, read_packets_file, to_hex, MapSeed,
};
use crate::output::{emit, hexdump};

/// The shortest frame `BPF_PROG_TEST_RUN` accepts for XDP.
const ETH_HEADER_LEN: usize = 14;

#[derive(Args)]
#[command(group(clap::ArgGroup::new("input").required(true).args(["packet", "packets", "pcap"])))]
pub struct RunArgs {
    /// BPF object (.o) or `llvm-objdump -d` text.
    pub object: PathBuf,
    /// Program to run (function or section name); default: the first.
    #[arg(long)]
    pub prog: Option<String>,
    /// The packet, in hex.
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
    /// Initial map contents: {"map": [{"key": "hex", "value": "hex"}]}.
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

/// Every map's `(key, value)` entries after a run, in the object's map order.
type MapContents = Vec<Vec<(Vec<u8>, Vec<u8>)>>;

/// What one packet's run produced, whichever engine ran it.
struct PacketResult {
    return_value: u64,
    packet: Vec<u8>,
    meta: Vec<u8>,
    instructions: Option<u64>,
    blocks: Option<Vec<usize>>,
    ns_per_run: Option<u32>,
    trace: Vec<String>,
}

pub fn run(args: &RunArgs) -> Result<()> {
    let object = crate::load_object(&args.object)?;
    let program = crate::select_program(&object, args.prog.as_deref())?;
    let packets = match (&args.packet, &args.packets, &args.pcap) {
        (Some(hex), _, _) => vec![parse_hex(hex).map_err(|e| anyhow!("--packet: {e}"))?],
        (_, Some(path), _) => read_packets_file(path)?,
        (_, _, Some(path)) => {
            let packets = crate::pcap::read_pcap(path)?;
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
    let meta = parse_hex(&args.meta).map_err(|e| anyhow!("--meta: {e}"))?;
    let seed = match &args.maps {
        Some(path) => read_maps_file(path, &object)?,
        None => Vec::new(),
    };
    let (results, final_maps) = if args.kernel {
        run_in_kernel(&object, program, &packets, &meta, &seed, args.repeat)?
    } else {
        let mut options = VmOptions {
            prandom_seed: args.seed,
            record_path: true,
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
    let maps = encode_maps(&object, &final_maps);
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
        } else {
            writeln!(
                out,
                "packet   {} bytes (input {} bytes), changed:",
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
    }
    writeln!(out, "\nmaps after the run")?;
    for (name, entries) in &maps {
        writeln!(out, "  {name}: {} entries", entries.len())?;
        for e in entries.iter().take(16) {
            writeln!(out, "    {} => {}", e.key, e.value)?;
        }
        if entries.len() > 16 {
            writeln!(out, "    ... {} more (use --json)", entries.len() - 16)?;
        }
    }
    emit(&out)
}

fn run_in_vm(
    source: &Path,
    object: &Object,
    program: usize,
    packets: &[Vec<u8>],
    meta: &[u8],
    seed: &MapSeed,
    options: VmOptions,
) -> Result<(Vec<PacketResult>, MapContents)> {
    let mut vm = Vm::new(object, options).with_context(|| source.display().to_string())?;
    for (map, entries) in seed {
        for (key, value) in entries {
            let rc = vm.maps[*map].update(key, value, 0);
            if rc != 0 {
                bail!(
                    "cannot seed map `{}` with key {}: error {rc}",
                    object.maps[*map].name,
                    to_hex(key)
                );
            }
        }
    }
    let cfgs: Vec<Cfg> = object
        .programs
        .iter()
        .map(|p| {
            Cfg::build(p).map_err(|e| anyhow!("{}: program `{}`: {e}", source.display(), p.name))
        })
        .collect::<Result<_>>()?;
    let mut results = Vec::new();
    for (i, packet) in packets.iter().enumerate() {
        let out = vm
            .run(program, packet, meta)
            .with_context(|| format!("packet {i}"))?;
        let blocks = out
            .path
            .iter()
            .filter_map(|&(prog, slot)| cfgs[prog].block_of(slot))
            .collect();
        results.push(PacketResult {
            return_value: out.return_value,
            packet: out.packet,
            meta: out.meta,
            instructions: Some(out.instructions),
            blocks: Some(blocks),
            ns_per_run: None,
            trace: out.trace,
        });
    }
    let maps = vm.maps.iter().map(|m| m.entries()).collect();
    Ok((results, maps))
}

fn run_in_kernel(
    object: &Object,
    program: usize,
    packets: &[Vec<u8>],
    meta: &[u8],
    seed: &MapSeed,
    repeat: u32,
) -> Result<(Vec<PacketResult>, MapContents)> {
    linerate_kernel::check_access()?;
    let loaded = linerate_kernel::load_object(object).map_err(|e| {
        let log = e
            .verifier_log()
            .map(|l| crate::Detail(format!("verifier log:\n{l}")));
        match log {
            Some(detail) => anyhow::Error::new(detail).context(e.to_string()),
            None => anyhow::Error::new(e),
        }
    })?;
    for (map, entries) in seed {
        for (key, value) in entries {
            loaded.update(*map, key, value)?;
        }
    }
    let mut results = Vec::new();
    let input = |packet: &[u8], repeat: u32| linerate_kernel::TestRunInput {
        packet: packet.to_vec(),
        meta: meta.to_vec(),
        repeat,
        ..linerate_kernel::TestRunInput::default()
    };
    // What a packet does comes from a single run: repeated runs share one buffer, so a program
    // that rewrites the packet (a TTL decrement) would be reported on its own output, and
    // counters would count every repetition.
    for packet in packets {
        let out = loaded.test_run(program, &input(packet, 1))?;
        results.push(PacketResult {
            return_value: out.retval as u64,
            packet: out.packet,
            meta: out.meta,
            instructions: None,
            blocks: None,
            ns_per_run: Some(out.duration_ns),
            trace: Vec::new(),
        });
    }
    let maps = (0..object.maps.len())
        .map(|i| Ok(normalize_entries(&object.maps[i], loaded.entries(i)?)))
        .collect::<Result<Vec<_>>>()?;
    // The timing runs come after the results and the maps are taken.
    if repeat > 1 {
        for (result, packet) in results.iter_mut().zip(packets) {
            let out = loaded.test_run(program, &input(packet, repeat))?;
            result.ns_per_run = Some(out.duration_ns);
        }
    }
    Ok((results, maps))
}
