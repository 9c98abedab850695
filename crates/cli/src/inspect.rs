//! `linerate inspect`: what an object contains — programs, maps, global data, CFG summaries and
//! disassembly — as tables or JSON.

use std::path::PathBuf;

use anyhow::{anyhow, Result};
use clap::Args;
use linerate_bpf::program::MapOrigin;
use linerate_bpf::{MapDef, Object};
use linerate_cfg::Cfg;
use serde_json::{json, Value};

use crate::output::{emit, table};

#[derive(Args)]
pub struct InspectArgs {
    /// BPF object (.o) or `llvm-objdump -d` text.
    pub object: PathBuf,
    /// Target BTF of CO-RE relocations (raw BTF such as /sys/kernel/btf/vmlinux); default: the
    /// running kernel's.
    #[arg(long, value_name = "PATH")]
    pub btf: Option<PathBuf>,
    /// Only this program (function or section name).
    #[arg(long)]
    pub prog: Option<String>,
    /// Leave out the disassembly.
    #[arg(long)]
    pub no_disasm: bool,
    /// Print the CFG of each program in Graphviz dot format instead.
    #[arg(long, conflicts_with = "json")]
    pub dot: bool,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

pub fn inspect(args: &InspectArgs) -> Result<()> {
    let object = crate::load_object(&args.object, args.btf.as_deref())?;
    let selected: Vec<usize> = match &args.prog {
        Some(name) => vec![crate::select_program(&object, Some(name))?],
        None => (0..object.programs.len()).collect(),
    };
    let mut cfgs = Vec::new();
    for &i in &selected {
        let program = &object.programs[i];
        let cfg = Cfg::build(program)
            .map_err(|e| anyhow!("{}: program `{}`: {e}", args.object.display(), program.name))?;
        cfgs.push(cfg);
    }
    if args.dot {
        let dot: String = cfgs.iter().map(Cfg::to_dot).collect();
        return emit(&dot);
    }
    if args.json {
        let json = to_json(&object, &selected, &cfgs, !args.no_disasm)?;
        return emit(&format!("{}\n", serde_json::to_string_pretty(&json)?));
    }
    emit(&to_text(&object, &selected, &cfgs, !args.no_disasm)?)
}

/// A program's kind as the programs table shows it: `xdp.frags` for XDP programs that take
/// multi-buffer packets.
fn kind_label(p: &linerate_bpf::Program) -> String {
    if p.has_frags() {
        "xdp.frags".into()
    } else {
        p.kind().name().into()
    }
}

fn origin_name(origin: &MapOrigin) -> String {
    match origin {
        MapOrigin::Btf => "btf".into(),
        MapOrigin::Legacy => "legacy".into(),
        MapOrigin::GlobalData { section, .. } => format!("global {section}"),
    }
}

/// Bytes of a global data section's initial value shown in the table.
const GLOBAL_BYTES_SHOWN: usize = 24;

/// The global data sections and the maps holding them.
fn global_data(object: &Object) -> impl Iterator<Item = (&MapDef, &str, bool)> {
    object.maps.iter().filter_map(|m| match &m.origin {
        MapOrigin::GlobalData { section, read_only } => Some((m, section.as_str(), *read_only)),
        _ => None,
    })
}

fn to_json(object: &Object, selected: &[usize], cfgs: &[Cfg], disasm: bool) -> Result<Value> {
    let programs: Vec<Value> = selected
        .iter()
        .zip(cfgs)
        .map(|(&i, cfg)| {
            let p = &object.programs[i];
            let mut v = json!({
                "name": p.name,
                "section": p.section,
                "type": p.kind().name(),
                "frags": p.has_frags(),
                "insns": p.insns.len(),
                "subprograms": p.subprograms().collect::<Vec<_>>(),
                "functions": p.functions.iter().map(|f| json!({"name": f.name, "start": f.start, "len": f.len})).collect::<Vec<_>>(),
                "cfg": serde_json::to_value(cfg.summary()).unwrap_or(Value::Null),
            });
            if disasm {
                v["disassembly"] = json!(linerate_bpf::disasm::disassemble_in(object, p)
                    .lines()
                    .collect::<Vec<_>>());
            }
            if !p.line_info.is_empty() {
                v["source_lines"] = p
                    .line_info
                    .iter()
                    .map(|l| {
                        json!({
                            "slot": l.slot,
                            "file": l.source.file,
                            "line": l.source.line,
                            "column": l.source.column,
                            "text": l.source.text,
                        })
                    })
                    .collect();
            }
            v
        })
        .collect();
    let maps: Vec<Value> = object
        .maps
        .iter()
        .map(|m| {
            let mut v = json!({
                "name": m.name,
                "type": m.map_type.name(),
                "type_id": m.map_type.0,
                "key_size": m.key_size,
                "value_size": m.value_size,
                "max_entries": m.max_entries,
                "flags": m.flags,
                "origin": origin_name(&m.origin),
            });
            if let Some(inner) = &m.inner {
                let t = &inner.template;
                v["inner"] = json!({
                    "template": {
                        "type": t.map_type.name(),
                        "key_size": t.key_size,
                        "value_size": t.value_size,
                        "max_entries": t.max_entries,
                        "flags": t.flags,
                    },
                    "initial": inner.initial.iter().map(|&(key, map)| json!({
                        "key": key,
                        "inner": object.maps.get(map).map(|m| m.name.as_str()),
                    })).collect::<Vec<_>>(),
                });
            }
            v
        })
        .collect();
    let globals: Vec<Value> = global_data(object)
        .map(|(m, section, read_only)| {
            json!({
                "section": section,
                "map": m.name,
                "size": m.value_size,
                "read_only": read_only,
                "initial_value": m.initial_value.as_deref().map(linerate_io::to_hex),
            })
        })
        .collect();
    Ok(json!({
        "object": object.name,
        "license": object.license,
        "programs": programs,
        "maps": maps,
        "global_data": globals,
    }))
}

fn to_text(object: &Object, selected: &[usize], cfgs: &[Cfg], disasm: bool) -> Result<String> {
    let mut out = format!(
        "object {} (license {})\n\nprograms\n",
        object.name,
        object.license.as_deref().unwrap_or("none")
    );
    let rows: Vec<Vec<String>> = selected
        .iter()
        .zip(cfgs)
        .map(|(&i, cfg)| {
            let p = &object.programs[i];
            let s = cfg.summary();
            let subs: Vec<&str> = p.subprograms().collect();
            vec![
                p.name.clone(),
                p.section.clone(),
                kind_label(p),
                p.insns.len().to_string(),
                if subs.is_empty() {
                    "-".into()
                } else {
                    subs.join(",")
                },
                s.blocks.to_string(),
                s.edges.to_string(),
                s.loops.len().to_string(),
            ]
        })
        .collect();
    out.push_str(&indent(&table(
        &[
            "name",
            "section",
            "type",
            "insns",
            "sub-programs",
            "blocks",
            "edges",
            "loops",
        ],
        &rows,
    )));
    out.push_str("\nmaps\n");
    if object.maps.is_empty() {
        out.push_str("  (none)\n");
    } else {
        let rows: Vec<Vec<String>> = object
            .maps
            .iter()
            .map(|m| {
                vec![
                    m.name.clone(),
                    m.map_type.name().to_string(),
                    m.key_size.to_string(),
                    m.value_size.to_string(),
                    m.max_entries.to_string(),
                    format!("{:#x}", m.flags),
                    origin_name(&m.origin),
                ]
            })
            .collect();
        out.push_str(&indent(&table(
            &[
                "name",
                "type",
                "key",
                "value",
                "max_entries",
                "flags",
                "origin",
            ],
            &rows,
        )));
    }
    let globals: Vec<Vec<String>> = global_data(object)
        .map(|(m, section, read_only)| {
            let value = m.initial_value.as_deref().unwrap_or_default();
            let shown = linerate_io::to_hex(&value[..value.len().min(GLOBAL_BYTES_SHOWN)]);
            vec![
                section.to_string(),
                m.name.clone(),
                m.value_size.to_string(),
                if read_only { "read-only" } else { "writable" }.to_string(),
                if value.len() > GLOBAL_BYTES_SHOWN {
                    format!("{shown}…")
                } else {
                    shown
                },
            ]
        })
        .collect();
    if !globals.is_empty() {
        out.push_str("\nglobal data\n");
        out.push_str(&indent(&table(
            &["section", "map", "bytes", "access", "initial value"],
            &globals,
        )));
    }
    for (&i, cfg) in selected.iter().zip(cfgs) {
        let p = &object.programs[i];
        let s = cfg.summary();
        out.push_str(&format!(
            "\ncfg of {}: {} functions, {} blocks, {} edges, {} loops (max depth {}), {} unreachable blocks{}{}\n",
            p.name,
            s.functions,
            s.blocks,
            s.edges,
            s.loops.len(),
            s.max_loop_depth,
            s.unreachable_blocks,
            if s.is_loop_free { ", loop-free" } else { "" },
            match s.per_function.first().and_then(|f| f.paths) {
                Some(n) if n >= 1e6 => format!(", 2^{:.1} paths through the entry function", n.log2()),
                Some(n) => format!(", {n} paths through the entry function"),
                None => String::new(),
            }
        ));
        for l in &s.loops {
            out.push_str(&format!(
                "  loop at insn {} ({} blocks)\n",
                l.header_slot, l.blocks
            ));
        }
        if disasm {
            out.push_str(&format!(
                "\ndisassembly of {} (section {}):\n",
                p.name, p.section
            ));
            out.push_str(&linerate_bpf::disasm::disassemble_in_with_source(object, p));
        }
    }
    Ok(out)
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("  {l}\n")).collect()
}
