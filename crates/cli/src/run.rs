//! `linerate run`: execute a program on packets, in the interpreter or in this host's kernel.

use std::path::PathBuf;

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
use crate::output::hexdump;

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
    /// With --kernel: run each packet this many times and report ns per run.
    #[arg(long, default_value_t = 1, requires = "kernel")]
    pub repeat: u32,
    /// Seed of bpf_get_prandom_u32 (interpreter).
    #[arg(long, default_value_t = 0x5eed)]
    pub seed: u64,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
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
}

pub fn run(args: &RunArgs) -> Result<()> {
    let object = crate::load_object(&args.object)?;
    let program = crate::select_program(&object, args.prog.as_deref())?;
    let packets = match (&args.packet, &args.packets, &args.pcap) {
        (Some(hex), _, _) => vec![parse_hex(hex).map_err(|e| anyhow!("--packet: {e}"))?],
        (_, Some(path), _) => read_packets_file(path)?,
        (_, _, Some(path)) => crate::pcap::read_pcap(path)?,
        _ => bail!("give --packet HEX, --packets FILE or --pcap FILE"),
    };
    if packets.is_empty() {
        bail!("no packets to run");
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
        run_in_vm(&object, program, &packets, &meta, &seed, options)?
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
        let out = if runs.len() == 1 {
            runs.into_iter().next().unwrap_or(Value::Null)
        } else {
            Value::Array(runs)
        };
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    let p = &object.programs[program];
    println!(
        "program {} (section {}) in {}",
        p.name,
        p.section,
        if args.kernel {
            "the kernel (BPF_PROG_TEST_RUN)"
        } else {
            "the linerate interpreter"
        }
    );
    for (i, (r, input)) in results.iter().zip(&packets).enumerate() {
        if results.len() > 1 {
            println!("\npacket {i}");
        }
        println!(
            "action   {} ({})",
            xdp_action_name(r.return_value),
            r.return_value
        );
        if let Some(n) = r.instructions {
            println!("executed {n} instructions");
        }
        if let Some(ns) = r.ns_per_run {
            println!("time     {ns} ns per run ({} runs)", args.repeat);
        }
        if let Some(blocks) = &r.blocks {
            let path: Vec<String> = blocks.iter().map(|b| b.to_string()).collect();
            println!("blocks   {}", path.join(" → "));
        }
        if r.packet == *input {
            println!("packet   {} bytes, unchanged", r.packet.len());
        } else {
            println!(
                "packet   {} bytes (input {} bytes), changed:",
                r.packet.len(),
                input.len()
            );
            print!("{}", hexdump(&r.packet, "  "));
        }
        if !r.meta.is_empty() {
            println!("meta     {}", to_hex(&r.meta));
        }
        for line in &r.trace {
            println!("trace    {line}");
        }
    }
    println!("\nmaps after the run");
    for (name, entries) in &maps {
        println!("  {name}: {} entries", entries.len());
        for e in entries.iter().take(16) {
            println!("    {} => {}", e.key, e.value);
        }
        if entries.len() > 16 {
            println!("    ... {} more (use --json)", entries.len() - 16);
        }
    }
    Ok(())
}

fn run_in_vm(
    object: &Object,
    program: usize,
    packets: &[Vec<u8>],
    meta: &[u8],
    seed: &MapSeed,
    options: VmOptions,
) -> Result<(Vec<PacketResult>, Vec<Vec<(Vec<u8>, Vec<u8>)>>)> {
    let mut vm = Vm::new(object, options)?;
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
        .map(|p| Cfg::build(p).map_err(|e| anyhow!("program `{}`: {e}", p.name)))
        .collect::<Result<_>>()?;
    let mut results = Vec::new();
    for (i, packet) in packets.iter().enumerate() {
        let out = vm.run(program, packet, meta).with_context(|| {
            if packets.len() > 1 {
                format!("packet {i}")
            } else {
                "run".into()
            }
        })?;
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
) -> Result<(Vec<PacketResult>, Vec<Vec<(Vec<u8>, Vec<u8>)>>)> {
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
    for packet in packets {
        let out = loaded.test_run(
            program,
            &linerate_kernel::TestRunInput {
                packet: packet.clone(),
                meta: meta.to_vec(),
                repeat,
                ..linerate_kernel::TestRunInput::default()
            },
        )?;
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
    Ok((results, maps))
}
