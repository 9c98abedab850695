//! `colocate predict`: one NF's throughput next to competitors, the drop each resource costs
//! and the bottleneck (paper 004 §4, Table 7's diagnosis), by the chosen predictor, with every
//! other predictor's answer beside it. For models of the simulated SmartNIC, the co-location is
//! also run on the device (the ground truth placement judges SLAs by), so the prediction can be
//! compared with what the device does. `--html` writes the page of the `--json` document
//! (`linerate_report::colocate::predict_page`).

use std::path::PathBuf;

use anyhow::{anyhow, bail, Result};
use clap::{Args, ValueEnum};
use linerate_colocate::catalogue::catalogue;
use linerate_colocate::predict::{
    predict as predict_with, predict_next_to_benchmark, NfModel, Placed, Prediction, Predictor,
};
use linerate_colocate::profile::{AccessPattern, MemoryCompetitor, TrafficProfile};
use linerate_colocate::sim::{Device, MemBench, Workload};
use serde_json::{json, Value};

use super::{read_models, si};
use crate::output::emit;

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PredictorArg {
    /// Per-resource models composed by the detected execution pattern.
    Tomur,
    /// The solo rate: contention costs nothing.
    SoloRate,
    /// Memory only, learnt at one traffic profile (SLOMO-style).
    Slomo,
    /// Per-resource drops summed.
    Sum,
    /// The smallest per-resource throughput.
    Min,
}

impl From<PredictorArg> for Predictor {
    fn from(p: PredictorArg) -> Predictor {
        match p {
            PredictorArg::Tomur => Predictor::Tomur,
            PredictorArg::SoloRate => Predictor::SoloRate,
            PredictorArg::Slomo => Predictor::Slomo,
            PredictorArg::Sum => Predictor::Sum,
            PredictorArg::Min => Predictor::Min,
        }
    }
}

#[derive(Args)]
pub struct PredictArgs {
    /// The model file (`colocate train`).
    pub models: PathBuf,
    /// The NF whose throughput is predicted.
    #[arg(long)]
    pub target: String,
    /// A competitor NF on the same NIC, `NAME` (the target's traffic) or
    /// `NAME@FLOWS[,PACKET_SIZE[,MTBR]]`; repeat for several.
    #[arg(long = "competitor", value_name = "NF")]
    pub competitors: Vec<String>,
    /// A memory benchmark as the competitor, `WORKING_SET_MIB,ACCESSES_PER_S[,stream|chase]`:
    /// predicted with the counters profiling measured of the nearest benchmark it ran against
    /// (for models from this host, whose NFs have no counters to compete with).
    #[arg(long, value_name = "SETTING", conflicts_with = "competitors")]
    pub membench: Option<String>,
    /// The target's flow count.
    #[arg(long, default_value_t = TrafficProfile::DEFAULT.flows)]
    pub flows: f64,
    /// The target's packet size, bytes.
    #[arg(long, default_value_t = TrafficProfile::DEFAULT.packet_size)]
    pub packet_size: f64,
    /// The target's match-to-byte ratio, matches per MB.
    #[arg(long, default_value_t = TrafficProfile::DEFAULT.mtbr)]
    pub mtbr: f64,
    #[arg(long, value_enum, default_value = "tomur")]
    pub predictor: PredictorArg,
    /// Machine-readable output: `{"target","competitors","traffic","solo_pps","predicted_pps",
    /// "drop","bottleneck","per_resource","predictor","baselines"}`, and `"measured"` for models
    /// of the simulated SmartNIC.
    #[arg(long)]
    pub json: bool,
    /// Also write the prediction as a self-contained HTML page.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

fn number(text: &str, what: &str, spec: &str) -> Result<f64> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
        .ok_or_else(|| anyhow!("`{spec}`: {what} `{text}` is not a non-negative number"))
}

/// `NAME` or `NAME@FLOWS[,SIZE[,MTBR]]`, unspecified attributes the target's.
fn competitor(spec: &str, target: TrafficProfile) -> Result<(String, TrafficProfile)> {
    let Some((name, traffic)) = spec.split_once('@') else {
        return Ok((spec.to_string(), target));
    };
    let mut profile = target;
    let parts: Vec<&str> = traffic.split(',').collect();
    if parts.len() > 3 {
        bail!("`{spec}`: at most flows, packet size and MTBR after `@`");
    }
    if let Some(p) = parts.first() {
        profile.flows = number(p, "flow count", spec)?;
    }
    if let Some(p) = parts.get(1) {
        profile.packet_size = number(p, "packet size", spec)?;
    }
    if let Some(p) = parts.get(2) {
        profile.mtbr = number(p, "MTBR", spec)?;
    }
    profile.validate().map_err(|e| anyhow!("`{spec}`: {e}"))?;
    Ok((name.to_string(), profile))
}

fn membench(spec: &str) -> Result<MemoryCompetitor> {
    let parts: Vec<&str> = spec.split(',').collect();
    let (Some(ws), Some(rate)) = (parts.first(), parts.get(1)) else {
        bail!("--membench `{spec}`: expected WORKING_SET_MIB,ACCESSES_PER_S[,stream|chase]");
    };
    let pattern = match parts.get(2).map(|p| p.trim()) {
        None | Some("chase") => AccessPattern::Chase,
        Some("stream") => AccessPattern::Stream,
        Some(other) => bail!("--membench `{spec}`: pattern `{other}` is not stream or chase"),
    };
    if parts.len() > 3 {
        bail!("--membench `{spec}`: at most three fields");
    }
    Ok(MemoryCompetitor {
        working_set: number(ws, "working set", spec)? * 1024.0 * 1024.0,
        access_rate: number(rate, "access rate", spec)?,
        pattern,
    })
}

pub fn predict(args: &PredictArgs) -> Result<()> {
    let file = read_models(&args.models)?;
    let traffic = TrafficProfile {
        flows: args.flows,
        packet_size: args.packet_size,
        mtbr: args.mtbr,
    };
    traffic.validate()?;
    let target = file.get(&args.target)?;
    let mut competitors: Vec<(&NfModel, TrafficProfile)> = Vec::new();
    for spec in &args.competitors {
        let (name, profile) = competitor(spec, traffic)?;
        let model = file.get(&name)?;
        if model.backend != target.backend {
            bail!(
                "{name} was profiled on {} and {} on {}: models from different backends \
                 describe different machines",
                model.backend,
                target.name,
                target.backend
            );
        }
        competitors.push((model, profile));
    }
    let benchmark = args.membench.as_deref().map(membench).transpose()?;
    let placed = Placed {
        model: target,
        traffic,
    };
    let run = |predictor: Predictor| -> Result<Prediction> {
        Ok(match &benchmark {
            Some(setting) => predict_next_to_benchmark(predictor, placed, setting)?,
            None => {
                let others: Vec<Placed> = competitors
                    .iter()
                    .map(|(model, traffic)| Placed {
                        model,
                        traffic: *traffic,
                    })
                    .collect();
                predict_with(predictor, placed, &others)?
            }
        })
    };
    let chosen: Predictor = args.predictor.into();
    let prediction = run(chosen)?;
    let mut baselines = Vec::new();
    for other in Predictor::ALL.into_iter().filter(|p| *p != chosen) {
        baselines.push((other, run(other)?));
    }
    let measured = if target.backend == "sim" {
        Some(on_the_device(&placed, &competitors, benchmark.as_ref()))
    } else {
        None
    };
    let mut document = serde_json::to_value(&prediction)?;
    document["predictor"] = json!(chosen.name());
    document["baselines"] = Value::Object(
        baselines
            .iter()
            .map(|(p, b)| {
                (
                    p.name().to_string(),
                    json!({"predicted_pps": b.predicted_pps, "drop": b.drop}),
                )
            })
            .collect(),
    );
    if let Some(Ok(measured)) = &measured {
        document["measured"] = json!({
            "on": "the simulated SmartNIC",
            "solo_pps": measured.solo_pps,
            "pps": measured.pps,
            "drop": measured.drop(),
        });
    }
    if let Some(path) = &args.html {
        let page = linerate_report::colocate::predict_page(&document)?;
        linerate_io::write_atomically(path, page.as_bytes())?;
    }
    let text = if args.json {
        serde_json::to_string_pretty(&document)? + "\n"
    } else {
        render(&prediction, chosen, &baselines, measured.as_ref())
    };
    emit(&text)
}

/// The target's rate on the simulated SmartNIC, alone and next to its competitors.
struct Measured {
    solo_pps: f64,
    pps: f64,
}

impl Measured {
    fn drop(&self) -> f64 {
        if self.solo_pps > 0.0 {
            1.0 - self.pps / self.solo_pps
        } else {
            0.0
        }
    }
}

/// Runs the co-location on the simulated SmartNIC models of the `sim` backend were profiled on
/// (without the profiling's measurement noise). Fails when the device cannot run it, e.g. when
/// the NFs need more cores than it has: the prediction stands without a measurement then.
fn on_the_device(
    target: &Placed,
    competitors: &[(&NfModel, TrafficProfile)],
    benchmark: Option<&MemoryCompetitor>,
) -> Result<Measured> {
    let known = catalogue();
    let workload = |name: &str, traffic: &TrafficProfile| -> Result<Workload> {
        let nf = known
            .iter()
            .find(|nf| nf.name == name)
            .ok_or_else(|| anyhow!("{name} is not an NF of the simulated device"))?;
        Ok(Workload::Nf(nf.at(traffic)?))
    };
    let alone = workload(&target.model.name, &target.traffic)?;
    let mut together = vec![alone.clone()];
    for (model, traffic) in competitors {
        together.push(workload(&model.name, traffic)?);
    }
    if let Some(setting) = benchmark {
        together.push(Workload::MemBench(MemBench {
            working_set: setting.working_set,
            access_rate: setting.access_rate,
        }));
    }
    let device = Device::bluefield2_like();
    let first = |rates: Vec<f64>| rates.first().copied().unwrap_or(0.0);
    Ok(Measured {
        solo_pps: first(device.run(&[alone])?),
        pps: first(device.run(&together)?),
    })
}

fn render(
    p: &Prediction,
    chosen: Predictor,
    baselines: &[(Predictor, Prediction)],
    measured: Option<&Result<Measured>>,
) -> String {
    let competitors = if p.competitors.is_empty() {
        "alone".to_string()
    } else {
        format!("next to {}", p.competitors.join(", "))
    };
    let mut out = format!(
        "{} {competitors}, at {} flows, {} B, {} matches/MB ({}):\n",
        p.target,
        p.traffic.flows,
        p.traffic.packet_size,
        p.traffic.mtbr,
        chosen.name()
    );
    out += &format!("  solo        {}\n", si(p.solo_pps, "pps"));
    out += &format!(
        "  predicted   {}  (drop {:.1}%)\n",
        si(p.predicted_pps, "pps"),
        100.0 * p.drop
    );
    let resources: Vec<String> = p
        .per_resource
        .iter()
        .map(|(r, d)| format!("{} {:.1}%", resource_name(r), 100.0 * d))
        .collect();
    if !resources.is_empty() {
        out += &format!("  resources   {}\n", resources.join(", "));
    }
    out += &format!(
        "  bottleneck  {}\n",
        p.bottleneck
            .as_ref()
            .map_or("none (no resource costs 1%)", resource_name)
    );
    let others: Vec<String> = baselines
        .iter()
        .map(|(predictor, b)| format!("{} {}", predictor.name(), si(b.predicted_pps, "pps")))
        .collect();
    out += &format!("  others      {}\n", others.join(", "));
    match measured {
        Some(Ok(m)) => {
            out += &format!(
                "  measured    {}  (drop {:.1}%) on the simulated SmartNIC, solo {}\n",
                si(m.pps, "pps"),
                100.0 * m.drop(),
                si(m.solo_pps, "pps")
            )
        }
        Some(Err(e)) => out += &format!("  measured    none: {e:#}\n"),
        None => {}
    }
    out
}

fn resource_name(r: &linerate_colocate::predict::Resource) -> &'static str {
    use linerate_colocate::predict::Resource;
    match r {
        Resource::Memory => "memory",
        Resource::Regex => "regex",
        Resource::Compression => "compression",
    }
}
