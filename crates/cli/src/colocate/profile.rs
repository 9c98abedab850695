//! `colocate profile` and `colocate train`.
//!
//! Profiling runs the backend's training plan through a recorder and writes every measurement
//! to the profile file (`linerate_colocate::record`); training replays the file through the same
//! plan (or, for imported samples, fits what they support) and writes the model file. The split
//! lets training be rerun with other regression settings without touching the device.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};
use clap::{Args, ValueEnum};
use linerate_colocate::catalogue::{catalogue, sim_plan};
use linerate_colocate::counters::SoloCounters;
use linerate_colocate::import::{profile_file, read_csv};
use linerate_colocate::memory::GbrConfig;
use linerate_colocate::predict::{ModelFile, NfModel};
use linerate_colocate::record::{ProfileFile, Recorder};
use linerate_colocate::sim::{Device, Testbed};
use linerate_colocate::sim_backend::SimBackend;
use linerate_colocate::train::{train_bundle, train_profile, TrainingPlan};
use linerate_contend::driver::Timing;
use linerate_contend::host::{HostBackend, HostNf};
use linerate_contend::plan::host_plan;
use serde_json::json;

use crate::output::{emit, table, ProgressBar};

/// Where an NF is profiled.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BackendKind {
    /// This host: the NF (an XDP object) through BPF_PROG_TEST_RUN on CPU 0 behind linerate's
    /// traffic driver, memory competitors on CPU 1 (root, two CPUs).
    Host,
    /// linerate's simulated SoC SmartNIC; the NF is one of its catalogue's (flowstats, nat,
    /// flowmonitor, nids, ipcomp).
    Sim,
    /// Measurements made elsewhere, from a CSV (`--csv`; schema in docs/colocate.md).
    Import,
}

#[derive(Args)]
pub struct ProfileArgs {
    /// The NF: an XDP object (host), a catalogue name (sim), or the NF's name in the CSV
    /// (import).
    pub nf: String,
    #[arg(long, value_enum)]
    pub backend: BackendKind,
    /// Where to write the profile file.
    #[arg(short = 'o', long)]
    pub output: PathBuf,
    /// Host: the program in the object (default: the first XDP program).
    #[arg(long)]
    pub prog: Option<String>,
    /// Host: initial map contents (rules, routes), as `linerate run --maps` takes them.
    #[arg(long)]
    pub maps: Option<PathBuf>,
    /// Host: the NF's name in the profile (default: the object's file stem).
    #[arg(long)]
    pub name: Option<String>,
    /// Import: the CSV of measurements.
    #[arg(long, required_if_eq("backend", "import"))]
    pub csv: Option<PathBuf>,
    /// Memory samples to take (Algorithm 1's quota Q); the solo grid and the SLOMO-style
    /// baseline's samples come on top.
    #[arg(long, default_value_t = 120)]
    pub quota: usize,
    /// Draw memory samples at random instead of by adaptive profiling (Algorithm 1).
    #[arg(long)]
    pub random: bool,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Machine-readable summary: `{"nf","backend","measurements","seconds","output"}`.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct TrainArgs {
    /// Profile files (`colocate profile`), one NF each.
    #[arg(required = true)]
    pub profiles: Vec<PathBuf>,
    /// Where to write the model file.
    #[arg(short = 'o', long)]
    pub output: PathBuf,
    /// The regression's fitting budget (perpetual's; larger fits closer), instead of the one
    /// profiling planned.
    #[arg(long)]
    pub budget: Option<f32>,
    /// Machine-readable summary: one object per model.
    #[arg(long)]
    pub json: bool,
}

/// The simulated device's measurement noise (relative, one standard deviation).
const SIM_NOISE: f64 = 0.01;

/// How each host profile point is timed: slope between 2,000 and 20,000 driven runs, median of
/// 9 trials (bench/colocate's setting).
const HOST_TIMING: Timing = Timing {
    trials: 9,
    short: 2_000,
    long: 20_000,
};

pub fn profile(args: &ProfileArgs) -> Result<()> {
    if args.quota == 0 {
        bail!("--quota must be at least 1");
    }
    let started = Instant::now();
    let show = !args.json && std::io::stderr().is_terminal();
    let file = match args.backend {
        BackendKind::Import => import(args)?,
        BackendKind::Sim => {
            let nf = catalogue()
                .into_iter()
                .find(|nf| nf.name == args.nf)
                .ok_or_else(|| {
                    let names: Vec<String> = catalogue().into_iter().map(|nf| nf.name).collect();
                    anyhow!(
                        "no simulated NF `{}` (the catalogue: {})",
                        args.nf,
                        names.join(", ")
                    )
                })?;
            let backend = SimBackend::new(Testbed::new(
                Device::bluefield2_like(),
                SIM_NOISE,
                args.seed,
            ));
            let plan = sim_plan(args.quota, !args.random, args.seed);
            record(backend, &nf, &nf.name, plan, show)?
        }
        BackendKind::Host => {
            let path = PathBuf::from(&args.nf);
            let object = crate::load_object(&path, None)?;
            let program = crate::select_program(&object, args.prog.as_deref())?;
            let seed = match &args.maps {
                Some(maps) => linerate_io::read_maps_file(maps, &object)?,
                None => Default::default(),
            };
            let name = match &args.name {
                Some(name) => name.clone(),
                None => path
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_else(|| args.nf.clone()),
            };
            let nf = HostNf {
                name: name.clone(),
                object,
                program,
                seed,
            };
            let backend = HostBackend::new(HOST_TIMING)?;
            let plan = host_plan(args.quota, !args.random, args.seed);
            record(backend, &nf, &name, plan, show)?
        }
    };
    linerate_io::write_atomically(&args.output, (file.to_json()? + "\n").as_bytes())?;
    let seconds = started.elapsed().as_secs_f64();
    let text = if args.json {
        serde_json::to_string_pretty(&json!({
            "nf": file.nf,
            "backend": file.backend,
            "measurements": file.measurements.len(),
            "seconds": seconds,
            "output": args.output.display().to_string(),
        }))? + "\n"
    } else {
        format!(
            "profiled {} on {}: {} measurements in {seconds:.1} s -> {}\n",
            file.nf,
            file.backend,
            file.measurements.len(),
            args.output.display()
        )
    };
    emit(&text)
}

/// Runs `plan` for `nf` on `backend`, every measurement recorded, with a progress bar.
fn record<B: SoloCounters>(
    backend: B,
    nf: &B::Nf,
    name: &str,
    plan: TrainingPlan,
    show: bool,
) -> Result<ProfileFile> {
    let bar = ProgressBar::new(
        &format!("profile {name}"),
        plan.planned_measurements(),
        show,
    );
    let mut recorder = Recorder::new(backend, |done| bar.set(done));
    let trained = train_bundle(&mut recorder, nf, name, &plan);
    bar.finish();
    trained.with_context(|| format!("profiling {name}"))?;
    let backend_name = recorder.backend.name().to_string();
    Ok(ProfileFile::new(
        &backend_name,
        name,
        Some(plan),
        recorder.measurements,
    ))
}

fn import(args: &ProfileArgs) -> Result<ProfileFile> {
    let path = args
        .csv
        .as_ref()
        .ok_or_else(|| anyhow!("--backend import needs --csv"))?;
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let samples = read_csv(&path.display().to_string(), &text)?;
    profile_file(&args.nf, &samples).with_context(|| path.display().to_string())
}

pub fn train(args: &TrainArgs) -> Result<()> {
    let gbr = args.budget.map(|budget| GbrConfig {
        budget,
        ..GbrConfig::default()
    });
    let mut models: Vec<NfModel> = Vec::new();
    for path in &args.profiles {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read profile file {}", path.display()))?;
        let file = ProfileFile::from_json(&text).with_context(|| path.display().to_string())?;
        if models.iter().any(|m| m.name == file.nf) {
            bail!(
                "{}: a second profile of {} (one profile per NF)",
                path.display(),
                file.nf
            );
        }
        let model = train_profile(&file, gbr).with_context(|| path.display().to_string())?;
        models.push(model);
    }
    let file = ModelFile::new(models);
    linerate_io::write_atomically(&args.output, (file.to_json()? + "\n").as_bytes())?;
    let text = if args.json {
        let out: Vec<_> = file.models.iter().map(summary).collect();
        serde_json::to_string_pretty(&out)? + "\n"
    } else {
        let rows: Vec<Vec<String>> = file
            .models
            .iter()
            .map(|m| {
                vec![
                    m.name.clone(),
                    m.backend.clone(),
                    m.samples_taken.to_string(),
                    m.memory
                        .attributes
                        .iter()
                        .map(|a| a.name())
                        .collect::<Vec<_>>()
                        .join("+"),
                    m.accelerators
                        .iter()
                        .map(|a| format!("{} ({} queues)", a.kind.name(), a.queues))
                        .collect::<Vec<_>>()
                        .join(", "),
                    m.pattern
                        .map_or("-".to_string(), |d| d.pattern.name().to_string()),
                ]
            })
            .collect();
        table(
            &[
                "nf",
                "backend",
                "samples",
                "traffic attributes",
                "accelerators",
                "pattern",
            ],
            &rows,
        ) + &format!("models -> {}\n", args.output.display())
    };
    emit(&text)
}

fn summary(model: &NfModel) -> serde_json::Value {
    json!({
        "nf": model.name,
        "backend": model.backend,
        "samples": model.samples_taken,
        "attributes": model.memory.attributes.iter().map(|a| a.name()).collect::<Vec<_>>(),
        "importance": model.memory.importance(),
        "accelerators": model.accelerators.iter().map(|a| json!({
            "kind": a.kind.name(),
            "queues": a.queues,
        })).collect::<Vec<_>>(),
        "pattern": model.pattern.map(|d| d.pattern.name()),
        "counters": model.solo.points.iter().all(|p| p.counters.is_some()),
    })
}
