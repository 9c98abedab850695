//! Arguments several commands share, each documented once.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{anyhow, Result};
use clap::Args;
use linerate_bound::enumerate::Metric;
use linerate_bound::prepare::{prepare, Options as PrepareOptions, Prepared};
use linerate_bound::solve::{guarantee, Guarantee, GuaranteeOptions};
use linerate_bound::ssp::{self, Event};
use linerate_bpf::Object;
use linerate_cost::{Model, PriceOverride};

use crate::host_model::{DeviceModel, HostCheck, Origin};

/// The object a command reads.
#[derive(Args)]
pub struct ObjectArgs {
    /// BPF object (.o) or `llvm-objdump -d` text.
    pub object: PathBuf,
    /// Target BTF of CO-RE relocations (raw BTF such as /sys/kernel/btf/vmlinux); default: the
    /// running kernel's.
    #[arg(long, value_name = "PATH")]
    pub btf: Option<PathBuf>,
}

impl ObjectArgs {
    /// Reads the object, its CO-RE relocations applied.
    pub fn load(&self) -> Result<Object> {
        crate::load_object(&self.object, self.btf.as_deref())
    }
}

/// The device model a command prices with.
#[derive(Args)]
pub struct ModelArgs {
    /// Device: x86 (this host: its model is calibrated on first use and cached) or nfp
    /// (Netronome Agilio CX, shipped with linerate).
    #[arg(long, default_value = "x86")]
    pub target: String,
    /// A model file (written by `linerate calibrate`, or a shipped one such as
    /// crates/cost/models/x86.json) instead of the target's.
    #[arg(long, conflicts_with = "target")]
    pub model: Option<PathBuf>,
}

impl ModelArgs {
    /// The model `--model` names, this host's for `--target x86` (calibrating it on first use,
    /// with a progress bar on a terminal unless `quiet`), or the shipped one of another target.
    pub fn load(&self, quiet: bool) -> Result<DeviceModel> {
        let here = linerate_calibrate::fingerprint::current();
        let (model, origin) = match &self.model {
            Some(path) => (Model::read(path)?, Origin::File(path.clone())),
            None if self.target == "x86" => crate::host_model::this_host(quiet, &here)?,
            None => (
                Model::builtin(&self.target)?,
                Origin::Shipped { uncalibrated: None },
            ),
        };
        let host = HostCheck::of(&model, origin, &here);
        Ok(DeviceModel { model, host })
    }
}

/// Default seconds one solver check may take.
const CHECK_TIMEOUT_S: f64 = 10.0;
/// Default MiB path enumeration may hold.
const MAX_MEMORY_MIB: usize = 1024;

/// How `bound` and `measure` search for the slowest satisfiable paths.
#[derive(Args, Clone)]
pub struct SearchArgs {
    /// Stop after this many seconds with the best bound found so far, marked incomplete.
    #[arg(long, value_name = "SECONDS")]
    pub timeout: Option<f64>,
    /// Seconds one solver check may take; a path whose check runs out counts as satisfiable.
    #[arg(long, default_value_t = CHECK_TIMEOUT_S, value_name = "SECONDS")]
    pub check_timeout: f64,
    /// Stop with the best bound so far when path enumeration holds this many MiB.
    #[arg(long, default_value_t = MAX_MEMORY_MIB, value_name = "MIB")]
    pub max_memory: usize,
    /// Unroll a loop whose trip count the analysis cannot bound at most N times, assuming it
    /// never runs more often (the assumption is reported).
    #[arg(long, value_name = "N")]
    pub max_unroll: Option<u32>,
    /// Threads checking paths (default: the number of cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Keep the search's claims that paths are impossible (`bound --attack` checks them).
    #[arg(skip)]
    pub record_claims: bool,
}

impl SearchArgs {
    /// The flags' defaults with a time limit of `seconds`: for commands that search on the
    /// user's behalf (`optimize`'s worst case, `hxdp`'s).
    pub fn with_timeout(seconds: f64) -> SearchArgs {
        SearchArgs {
            timeout: Some(seconds),
            check_timeout: CHECK_TIMEOUT_S,
            max_memory: MAX_MEMORY_MIB,
            max_unroll: None,
            threads: None,
            record_claims: false,
        }
    }

    /// Prepares program `program` of `object` (read from `source`, for messages) and searches
    /// its `paths` slowest satisfiable paths under `model`, with `prices` replacing the model's
    /// for the program where given (the hXDP core's rows per edge).
    #[allow(clippy::too_many_arguments)]
    pub fn search(
        &self,
        source: &std::path::Path,
        object: &Object,
        program: usize,
        model: &Model,
        prices: Option<PriceOverride>,
        metric: Metric,
        paths: usize,
        exhaustive: bool,
        progress: impl FnMut(Event),
    ) -> Result<(Prepared, Guarantee)> {
        if paths == 0 {
            return Err(anyhow!("--paths must be at least 1"));
        }
        let seconds = |s: f64, flag: &str| {
            Duration::try_from_secs_f64(s).map_err(|_| anyhow!("{flag} {s} is not a duration"))
        };
        let timeout = self.timeout.map(|s| seconds(s, "--timeout")).transpose()?;
        let check_timeout = seconds(self.check_timeout, "--check-timeout")?;
        let prepared = prepare(
            object,
            program,
            model,
            &PrepareOptions {
                max_unroll: self.max_unroll,
                prices: prices.map(|p| (program, p)),
                ..PrepareOptions::default()
            },
        )
        .map_err(|e| anyhow!("{}: {e}", source.display()))?;
        let options = GuaranteeOptions {
            search: ssp::Options {
                metric,
                paths,
                timeout,
                max_memory: self.max_memory.saturating_mul(1 << 20),
                threads: self
                    .threads
                    .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
                record_claims: self.record_claims,
            },
            exhaustive,
            check_timeout: Some(check_timeout),
            learn: true,
        };
        let result = guarantee(object, program, &prepared, model, &options, progress)
            .map_err(|e| anyhow!("{}: {e}", source.display()))?;
        Ok((prepared, result))
    }
}
