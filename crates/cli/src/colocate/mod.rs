//! `linerate colocate`: contention-aware prediction, diagnosis and placement of co-located NFs
//! (paper 004, Tomur; issue 13). Profiling an NF on a backend writes a profile file
//! (`profile.rs`), training turns profile files into a model file, prediction reads models and
//! names the bottleneck (`predict.rs`), placement runs arrival sequences through the placement
//! strategies on the simulated device (`place.rs`). File formats: `docs/colocate.md`.

mod place;
mod predict;
mod profile;

use std::path::Path;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use linerate_colocate::predict::ModelFile;

#[derive(Args)]
pub struct ColocateArgs {
    #[command(subcommand)]
    pub command: ColocateCommand,
}

#[derive(Subcommand)]
pub enum ColocateCommand {
    /// Profile an NF on a backend (this host, the simulated SmartNIC, or imported CSV) and write
    /// a profile file.
    Profile(profile::ProfileArgs),
    /// Fit each profiled NF's models (solo curve, memory GBR, accelerators, execution pattern)
    /// and write a model file.
    Train(profile::TrainArgs),
    /// Predict an NF's throughput next to competitors and name the bottleneck resource.
    Predict(predict::PredictArgs),
    /// Place arriving NFs with SLAs on NICs by each strategy; NICs used, waste, SLA violations.
    Place(place::PlaceArgs),
}

pub fn colocate(args: &ColocateArgs) -> Result<()> {
    match &args.command {
        ColocateCommand::Profile(a) => profile::profile(a),
        ColocateCommand::Train(a) => profile::train(a),
        ColocateCommand::Predict(a) => predict::predict(a),
        ColocateCommand::Place(a) => place::place(a),
    }
}

/// Reads a model file `colocate train` wrote.
fn read_models(path: &Path) -> Result<ModelFile> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read model file {}", path.display()))?;
    ModelFile::from_json(&text).with_context(|| path.display().to_string())
}

/// A rate with three significant digits and an SI prefix before `unit` (`2.43 Mpps`).
fn si(value: f64, unit: &str) -> String {
    let (scaled, prefix) = match value.abs() {
        v if v >= 1e9 => (value / 1e9, "G"),
        v if v >= 1e6 => (value / 1e6, "M"),
        v if v >= 1e3 => (value / 1e3, "k"),
        _ => (value, ""),
    };
    let decimals = match scaled.abs() {
        v if v >= 100.0 => 0,
        v if v >= 10.0 => 1,
        _ => 2,
    };
    format!("{scaled:.decimals$} {prefix}{unit}")
}
