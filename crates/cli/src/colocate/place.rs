//! `colocate place`: arrival sequences of NFs with SLAs placed on NICs by monopolization,
//! greedy, and contention-aware placement with Tomur's and the SLOMO-style predictor (paper 004
//! §7.5.1, Table 6). The ground truth that judges SLAs is linerate's simulated SmartNIC, so the
//! models must be of its catalogue's NFs profiled on it (`colocate profile --backend sim`).
//! Waste is against the exact optimum on sequences of at most `--optimum-up-to` arrivals, else
//! against first fit on the ground truth. `--html` writes the page of the `--json` document
//! (`linerate_report::colocate::place_page`).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use linerate_colocate::catalogue::{catalogue, traffic_space};
use linerate_colocate::optimum::{optimum, oracle_first_fit};
use linerate_colocate::place::{arrivals, report, Arrival, Fleet, Strategy};
use linerate_colocate::predict::{NfModel, Predictor};
use linerate_colocate::profile::TrafficProfile;
use linerate_colocate::sim::Device;
use linerate_colocate::sim_backend::TrafficNf;
use rayon::prelude::*;
use serde::Deserialize;
use serde_json::json;

use super::read_models;
use crate::output::{emit, table, ProgressBar};

#[derive(Args)]
pub struct PlaceArgs {
    /// The model file (`colocate train` on simulated-device profiles).
    pub models: PathBuf,
    /// An arrival sequence, JSON: `[{"nf": "nat", "flows": 64000, "packet_size": 512,
    /// "mtbr": 0, "sla": 0.1}, ...]` (`sla`: the largest drop against its solo rate accepted).
    #[arg(long, conflicts_with = "random")]
    pub arrivals: Option<PathBuf>,
    /// This many random sequences of the models' NFs over the catalogue's traffic space.
    #[arg(long, required_unless_present = "arrivals")]
    pub random: Option<usize>,
    /// Arrivals per random sequence.
    #[arg(long, default_value_t = 500)]
    pub length: usize,
    /// Random SLAs are drawn uniformly between these drops.
    #[arg(long, value_delimiter = ',', num_args = 2, default_values_t = [0.05, 0.20])]
    pub sla: Vec<f64>,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Sequences of at most this many arrivals get the exact optimum as the waste reference.
    #[arg(long, default_value_t = 30)]
    pub optimum_up_to: usize,
    /// Machine-readable output: `{"strategies":[{"name","nics","waste","sla_violations"}],
    /// "sequences","arrivals","reference","reference_nics"}` (totals over the sequences).
    #[arg(long)]
    pub json: bool,
    /// Also write the outcomes as a self-contained HTML page.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

const STRATEGIES: [Strategy; 4] = [
    Strategy::Monopolization,
    Strategy::Greedy,
    Strategy::ContentionAware(Predictor::Slomo),
    Strategy::ContentionAware(Predictor::Tomur),
];

/// Search nodes the exact optimum may visit per sequence before it settles for the best found.
const OPTIMUM_BUDGET: usize = 2_000_000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ArrivalEntry {
    nf: String,
    flows: f64,
    packet_size: f64,
    mtbr: f64,
    sla: f64,
}

fn read_arrivals(path: &PathBuf, names: &[String]) -> Result<Vec<Arrival>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read arrivals file {}", path.display()))?;
    let entries: Vec<ArrivalEntry> =
        serde_json::from_str(&text).with_context(|| format!("{}", path.display()))?;
    entries
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let at = || format!("{}: arrival {}", path.display(), i + 1);
            let nf = names
                .iter()
                .position(|n| *n == e.nf)
                .ok_or_else(|| anyhow!("{}: no model of `{}`", at(), e.nf))?;
            let traffic = TrafficProfile {
                flows: e.flows,
                packet_size: e.packet_size,
                mtbr: e.mtbr,
            };
            traffic.validate().with_context(at)?;
            if !(e.sla > 0.0 && e.sla < 1.0) {
                bail!("{}: sla {} is not a drop in (0, 1)", at(), e.sla);
            }
            Ok(Arrival {
                nf,
                traffic,
                sla: e.sla,
            })
        })
        .collect()
}

/// The models in file order and the catalogue NF each stands for on the ground truth.
fn fleet_members(models: Vec<NfModel>) -> Result<(Vec<TrafficNf>, Vec<NfModel>)> {
    let known = catalogue();
    let mut nfs = Vec::new();
    for model in &models {
        if model.backend != "sim" {
            bail!(
                "{} was profiled on {}: placement is judged on the simulated SmartNIC, so its \
                 models must come from `colocate profile --backend sim`",
                model.name,
                model.backend
            );
        }
        let nf = known
            .iter()
            .find(|nf| nf.name == model.name)
            .ok_or_else(|| anyhow!("{} is not an NF of the simulated device", model.name))?;
        nfs.push(nf.clone());
    }
    if models.is_empty() {
        bail!("the model file holds no models");
    }
    Ok((nfs, models))
}

pub fn place(args: &PlaceArgs) -> Result<()> {
    let (nfs, models) = fleet_members(read_models(&args.models)?.models)?;
    let names: Vec<String> = models.iter().map(|m| m.name.clone()).collect();
    let sequences: Vec<Vec<Arrival>> = match (&args.arrivals, args.random) {
        (Some(path), _) => vec![read_arrivals(path, &names)?],
        (None, Some(count)) => {
            let sla = (args.sla[0], args.sla[1]);
            (0..count as u64)
                .map(|k| {
                    arrivals(
                        args.length,
                        models.len(),
                        &traffic_space(),
                        sla,
                        args.seed.wrapping_add(k),
                    )
                })
                .collect::<Result<_, _>>()?
        }
        (None, None) => bail!("give --arrivals FILE or --random N"),
    };
    let device = Device::bluefield2_like();
    let fleet = Fleet {
        device: &device,
        catalogue: &nfs,
        models: &models,
    };
    let exact = sequences.iter().all(|s| s.len() <= args.optimum_up_to);
    let bar = ProgressBar::new(
        "place",
        sequences.len(),
        !args.json && std::io::stderr().is_terminal(),
    );
    // Sequences are independent: they are placed in parallel, and summed in their order.
    let done = AtomicUsize::new(0);
    let outcomes = sequences
        .par_iter()
        .map(|sequence| {
            let solo = fleet.true_solo(sequence)?;
            let (reference, proven) = if exact {
                let found = optimum(&fleet, sequence, &solo, OPTIMUM_BUDGET)?;
                (found.plan.len(), found.proven)
            } else {
                (oracle_first_fit(&fleet, sequence, &solo)?.len(), true)
            };
            let one = report(&fleet, sequence, &STRATEGIES, Some(reference))?;
            bar.set(done.fetch_add(1, Ordering::Relaxed) + 1);
            Ok((reference, proven, one))
        })
        .collect::<Result<Vec<_>>>()?;
    let mut totals = vec![(0usize, 0usize); STRATEGIES.len()];
    let (mut reference_nics, mut unproven) = (0usize, 0usize);
    for (reference, proven, one) in &outcomes {
        reference_nics += reference;
        unproven += usize::from(!proven);
        for (total, strategy) in totals.iter_mut().zip(&one.strategies) {
            total.0 += strategy.nics;
            total.1 += strategy.sla_violations;
        }
    }
    bar.finish();
    let reference_name = if exact {
        "optimum"
    } else {
        "first fit on the ground truth"
    };
    let waste =
        |nics: usize| (reference_nics > 0).then(|| nics as f64 / reference_nics as f64 - 1.0);
    let arrivals_total: usize = sequences.iter().map(Vec::len).sum();
    let strategies: Vec<_> = STRATEGIES
        .iter()
        .zip(&totals)
        .map(|(s, (nics, violations))| {
            json!({
                "name": s.name(),
                "nics": nics,
                "waste": waste(*nics),
                "sla_violations": violations,
            })
        })
        .collect();
    let document = json!({
        "strategies": strategies,
        "sequences": sequences.len(),
        "arrivals": arrivals_total,
        "reference": reference_name,
        "reference_nics": reference_nics,
        "reference_unproven": unproven,
    });
    if let Some(path) = &args.html {
        let page = linerate_report::colocate::place_page(&document)?;
        linerate_io::write_atomically(path, page.as_bytes())?;
    }
    let text = if args.json {
        serde_json::to_string_pretty(&document)? + "\n"
    } else {
        let rows: Vec<Vec<String>> = STRATEGIES
            .iter()
            .zip(&totals)
            .map(|(s, (nics, violations))| {
                vec![
                    s.name(),
                    nics.to_string(),
                    waste(*nics).map_or("-".into(), |w| format!("{:+.1}%", 100.0 * w)),
                    format!(
                        "{violations} ({:.1}%)",
                        100.0 * *violations as f64 / arrivals_total.max(1) as f64
                    ),
                ]
            })
            .collect();
        let mut out = format!(
            "{} sequence(s), {arrivals_total} arrivals; reference: {reference_name}, {reference_nics} NICs{}\n",
            sequences.len(),
            if unproven > 0 {
                format!(" ({unproven} not proven optimal within the search budget)")
            } else {
                String::new()
            }
        );
        out += &table(&["strategy", "NICs", "waste", "SLA violations"], &rows);
        out
    };
    emit(&text)
}
