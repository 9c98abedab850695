//! `linerate p4`: P4-16 programs (paper 001). `p4 latency` extracts the paper's parameters from a
//! program and estimates its latency with a target model (§V-E); `p4 fit` builds a target model
//! from measurements (the paper's method, for any target). `p4 compile` writes a program as an
//! XDP object and its table contents as the object's `--maps` file. `--html` writes what
//! `latency` and `fit` computed as a page (`linerate_report::p4`), rendered from the same JSON
//! document `--json` prints.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use linerate_p4::latency::{fit, read_measurements, Estimate, LatencyModel, Measurement};
use linerate_p4::params::{analyze, Analysis};
use serde_json::{json, Value};

use crate::output::emit;

#[derive(Args)]
pub struct P4Args {
    #[command(subcommand)]
    pub command: P4Command,
}

#[derive(Subcommand)]
pub enum P4Command {
    /// The paper's parameters of a program (α parsed headers, β modified headers, γ added
    /// tables) and its latency on a target model (Table II plus Eq. 1).
    Latency(LatencyArgs),
    /// Fit a target's latency model (cells and table curve) from measurements.
    Fit(FitArgs),
    /// Compile a program to an XDP object (`-o X.o`) and its table contents to `X.maps.json`.
    Compile(CompileArgs),
}

#[derive(Args)]
pub struct CompileArgs {
    /// The P4-16 program.
    pub program: PathBuf,
    /// Where to write the object; the maps file goes beside it as `<stem>.maps.json`.
    #[arg(short = 'o', long)]
    pub output: PathBuf,
    /// Table entries (control plane), JSON; without it, the program's const entries only.
    #[arg(long)]
    pub entries: Option<PathBuf>,
    /// Machine-readable output: `{"object","programs","maps","insns"}`.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct LatencyArgs {
    /// The P4-16 program.
    pub program: PathBuf,
    /// The target model: `agilio-cx` (the paper's) or a model file `p4 fit` wrote.
    #[arg(long, default_value = "agilio-cx")]
    pub model: String,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
    /// Also write the estimate's breakdown as a self-contained HTML page.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

#[derive(Args)]
pub struct FitArgs {
    /// Measurements, CSV with the header `case,alpha,beta,gamma,actions,latency_ns`.
    pub measurements: PathBuf,
    /// Where to write the model (JSON).
    #[arg(short = 'o', long)]
    pub output: PathBuf,
    /// The model's name.
    #[arg(long, default_value = "host")]
    pub name: String,
    /// Machine-readable output (the model).
    #[arg(long)]
    pub json: bool,
    /// Also write the model against the measurements as a self-contained HTML page.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

pub fn p4(args: &P4Args) -> Result<()> {
    match &args.command {
        P4Command::Latency(a) => latency(a),
        P4Command::Fit(a) => fit_model(a),
        P4Command::Compile(a) => compile(a),
    }
}

/// The program's name in the object: the output's stem as a C identifier.
fn program_name(output: &std::path::Path) -> String {
    let stem = output
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut name: String = stem
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if !name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        name.insert_str(0, "p4_");
    }
    name
}

fn compile(args: &CompileArgs) -> Result<()> {
    let checked = linerate_p4::load(&args.program)?;
    let entries = match &args.entries {
        Some(path) => linerate_p4::entries::Entries::load(&checked, path)?,
        None => linerate_p4::entries::Entries::from_program(&checked)?,
    };
    let name = program_name(&args.output);
    let compiled = linerate_p4::compile::compile(&checked, &entries, &name).map_err(|e| {
        // Refusals of a construct carry their file:line:col; a whole-program one only its cause.
        match e {
            linerate_p4::compile::CompileError::Program(_) => {
                anyhow::anyhow!("{}: {e}", args.program.display())
            }
            e => e.into(),
        }
    })?;
    let bytes = compiled.object_bytes()?;
    let maps_path = args.output.with_extension("maps.json");
    let maps: linerate_io::MapsJson = compiled
        .contents
        .iter()
        .map(|c| {
            let entries = c
                .entries
                .iter()
                .map(|(key, value)| linerate_io::HexEntry {
                    key: linerate_io::to_hex(key),
                    value: Some(linerate_io::to_hex(value)),
                    inner: None,
                })
                .collect();
            (c.map.clone(), entries)
        })
        .collect();
    // The maps file first: an object is never left beside a missing or stale maps file.
    linerate_io::write_atomically(
        &maps_path,
        (serde_json::to_string_pretty(&maps)? + "\n").as_bytes(),
    )?;
    linerate_io::write_atomically(&args.output, &bytes)?;
    let spec = &compiled.spec;
    let text = if args.json {
        let out = json!({
            "object": args.output.display().to_string(),
            "programs": spec.programs.iter().map(|p| p.name.clone()).collect::<Vec<_>>(),
            "maps": spec.maps.iter().map(|m| json!({
                "name": m.name,
                "type": m.map_type.name(),
                "key_size": m.key_size,
                "value_size": m.value_size,
                "max_entries": m.max_entries,
                "entries": maps.get(&m.name).map_or(0, Vec::len),
            })).collect::<Vec<_>>(),
            "maps_file": maps_path.display().to_string(),
            "insns": compiled.insns(),
        });
        serde_json::to_string_pretty(&out)? + "\n"
    } else {
        let mut text = format!(
            "{} -> {} (program {name}, {} instructions)\n",
            args.program.display(),
            args.output.display(),
            compiled.insns()
        );
        for m in &spec.maps {
            text += &format!(
                "  map {}: {}, key {} B, value {} B, {} max, {} entries\n",
                m.name,
                m.map_type.name(),
                m.key_size,
                m.value_size,
                m.max_entries,
                maps.get(&m.name).map_or(0, Vec::len)
            );
        }
        text += &format!("  maps file: {}\n", maps_path.display());
        text
    };
    emit(&text)
}

/// The model named `name`: a shipped one, else a model file.
fn model(name: &str) -> Result<LatencyModel> {
    if let Some(m) = LatencyModel::builtin(name) {
        return Ok(m);
    }
    let text = std::fs::read_to_string(name).with_context(|| {
        format!("no model `{name}`: not a shipped model (agilio-cx) nor a readable model file")
    })?;
    Ok(LatencyModel::parse(&text, name)?)
}

fn latency(args: &LatencyArgs) -> Result<()> {
    let model = model(&args.model)?;
    let checked = linerate_p4::load(&args.program)?;
    let analysis = analyze(&checked);
    let estimate = model.estimate(analysis.params())?;
    let mut document = serde_json::to_value(&estimate)?;
    document["program"] = json!(args.program.display().to_string());
    document["paths"] = json!(analysis.paths);
    document["modified"] = json!(analysis.modified);
    document["tables"] = json!(analysis.tables);
    document["operations"] = json!(analysis.operations);
    if let Some(path) = &args.html {
        let page = linerate_report::p4::latency_page(&document)?;
        linerate_io::write_atomically(path, page.as_bytes())?;
    }
    let text = if args.json {
        serde_json::to_string_pretty(&document)? + "\n"
    } else {
        latency_text(args, &model, &analysis, &estimate)
    };
    emit(&text)
}

fn latency_text(args: &LatencyArgs, model: &LatencyModel, a: &Analysis, e: &Estimate) -> String {
    let list = |items: &[String]| {
        if items.is_empty() {
            "none".to_string()
        } else {
            items.join(", ")
        }
    };
    let worst = a.worst_path().map_or_else(
        || "no parser".to_string(),
        |p| format!("{}: {}", p.states.join(" -> "), list(&p.headers)),
    );
    let modified: Vec<String> = a
        .modified
        .iter()
        .map(|m| format!("{} ({})", m.header, m.actions))
        .collect();
    let plural = |n: u32, one: &str, many: &str| {
        if n == 1 {
            format!("{n} {one}")
        } else {
            format!("{n} {many}")
        }
    };
    format!(
        "{} on {} ({})\n  α = {} (worst of {} parser paths, {worst})\n  β = {}, {} actions\n  \
         γ = {} beyond the forwarding table (applied: {})\n  operations: {} arithmetic, {} \
         binary (not in the model: §V-A/B found no effect)\n  latency: {:.0} ns = {:.0} \
         (parsing and modification) + {:.0} (tables)\n",
        args.program.display(),
        model.name,
        model.source,
        plural(e.alpha, "parsed header", "parsed headers"),
        a.paths.len(),
        plural(e.beta, "modified header", "modified headers")
            + &if modified.is_empty() {
                String::new()
            } else {
                format!(" ({})", modified.join(", "))
            },
        e.actions,
        plural(e.gamma, "table", "tables"),
        list(&a.tables),
        a.operations.arithmetic,
        a.operations.binary,
        e.latency_ns,
        e.breakdown.parse_and_modify_ns,
        e.breakdown.tables_ns,
    )
}

fn fit_model(args: &FitArgs) -> Result<()> {
    let origin = args.measurements.display().to_string();
    let text = std::fs::read_to_string(&args.measurements)
        .with_context(|| format!("cannot read measurements {origin}"))?;
    let measured = read_measurements(&text, &origin)?;
    let model = fit(&measured, &args.name, &format!("fitted to {origin}"))?;
    let document = serde_json::to_value(&model)?;
    let json = serde_json::to_string_pretty(&document)? + "\n";
    // The page first, so that a page that cannot be written leaves no model behind either; a
    // model that cannot be written takes its page with it.
    if let Some(path) = &args.html {
        let page = linerate_report::p4::fit_page(&document, &estimated(&model, &measured)?)?;
        linerate_io::write_atomically(path, page.as_bytes())?;
    }
    if let Err(e) = linerate_io::write_atomically(&args.output, json.as_bytes()) {
        if let Some(path) = &args.html {
            let _ = std::fs::remove_file(path);
        }
        return Err(e.into());
    }
    let text = if args.json {
        json
    } else {
        let mut out = format!(
            "{}: {} measurements, {} cells; tables: f(γ) = {:.2}·γ² + {:.2}·γ ns for γ ≤ {}\n",
            args.output.display(),
            measured.len(),
            model.base.len(),
            model.tables.quadratic,
            model.tables.linear,
            model.tables.max_gamma
        );
        for c in &model.base {
            out += &format!(
                "  α = {}, β = {}, {}: {:.0} ns\n",
                c.alpha, c.beta, c.actions, c.ns
            );
        }
        out
    };
    emit(&text)
}

/// The measurements as the fit page reads them: each row of the CSV with the fitted model's
/// estimate of it (the `p4 latency --json` estimate object).
fn estimated(model: &LatencyModel, measured: &[Measurement]) -> Result<Value> {
    let rows = measured
        .iter()
        .map(|m| {
            let mut row = serde_json::to_value(m.params)?;
            row["case"] = json!(m.case);
            row["latency_ns"] = json!(m.latency_ns);
            row["estimate"] = serde_json::to_value(model.estimate(m.params)?)?;
            Ok(row)
        })
        .collect::<Result<Vec<Value>>>()?;
    Ok(Value::Array(rows))
}
