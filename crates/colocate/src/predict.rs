//! Tomur's prediction and diagnosis (paper 004 §4.2, §7.5.2; issue 13, item 4): from each NF's
//! trained model bundle, the throughput of every NF of a co-location, the per-resource drops
//! behind it and the bottleneck resource, with the baselines behind the same interface.
//!
//! **Per-resource drops.** For NF `i` at traffic `P_i` next to competitors `j`:
//! - memory: the traffic-aware model's drop (§4.1.2, §5.1.2) under the sum of the competitors'
//!   solo memory counters ([`crate::counters`]), their access rate and bandwidth scaled by how
//!   much each competitor is itself predicted to slow down;
//! - each accelerator `i` uses: the round-robin equilibrium (Eqs. 1, 2) with `i` backlogged and
//!   each competitor on that accelerator offering its predicted packet rate, every tenant at its
//!   busy time per packet `t_j(MTBR_j)` (Eq. 5's form). A pipeline NF's throughput with only
//!   that resource contended is `min(T_solo, capacity)`; a run-to-completion NF's core waits
//!   for each request, so only the wait grows: from one round alone (`n·t`, per request `t`) to
//!   `1/capacity` per request, `1/T = 1/T_solo + 1/capacity − t`.
//!
//! The drops are composed by the NF's detected pattern (Eq. 7). Competitors' rates depend on the
//! target as much as the target's on them, so all NFs of the co-location are predicted together:
//! a damped fixed point over their rates from their solo rates.
//!
//! **Bottleneck** (Table 7's diagnosis): the resource with the largest predicted per-resource
//! drop `ΔT_k`, the one whose contention, removed alone, would give back the most throughput (for
//! a pipeline NF exactly the stage Eq. 3 says sets its rate); no bottleneck when no resource
//! costs at least [`BOTTLENECK_FLOOR`] of the solo rate.
//!
//! **Baselines**, same interface: the solo rate (no contention at all), SLOMO-style (memory only,
//! learnt at the default traffic profile and rescaled by the solo rate), and Tomur's per-resource
//! drops composed by sum and by min (§2.2).

use crate::accel::{capacity_for, Tenant};
use crate::compose::{compose, min_composition, sum_composition, Detection, Pattern};
use crate::error::ColocateError;
use crate::memory::{MemoryModel, SlomoModel};
use crate::profile::{Features, MemoryCompetitor, TrafficProfile};
use crate::sim::AccelKind;
use crate::solo_curve::SoloCurve;
use crate::ServiceTime;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The version written in and required of model bundle files.
pub const BUNDLE_VERSION: u32 = 2;

/// A resource with a per-resource model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Resource {
    Memory,
    Regex,
    Compression,
}

impl From<AccelKind> for Resource {
    fn from(kind: AccelKind) -> Resource {
        match kind {
            AccelKind::Regex => Resource::Regex,
            AccelKind::Compression => Resource::Compression,
        }
    }
}

/// Below this share of the solo rate, no resource is named the bottleneck.
pub const BOTTLENECK_FLOOR: f64 = 0.01;

/// The largest per-resource drop composed, as a share of the solo rate: Eqs. 3 and 4 need each
/// resource to leave some throughput.
const MAX_RESOURCE_DROP: f64 = 0.99;

/// An NF's use of one accelerator, inferred from co-runs (§4.1.1, §5.1.1).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct AccelModel {
    pub kind: AccelKind,
    /// `n_j`, the fitted queue count rounded.
    pub queues: u32,
    /// The fitted queue counts' median, before rounding.
    pub fitted_queues: f64,
    /// `1/T_j,solo(MTBR)` as the co-run inference of §4.1.1 measures it, seconds per packet
    /// (Eq. 5's line): the accelerator's request time for a pipeline NF bound by it, the whole
    /// per-packet time for a run-to-completion NF.
    pub request_time: ServiceTime,
    /// The accelerator's time per packet of this NF, from the benchmarks' rates
    /// ([`crate::counters`]): what it takes from the others as a competitor.
    pub busy_time: ServiceTime,
}

/// Everything prediction needs of one NF, trained once ([`crate::train::train_bundle`]).
#[derive(Clone, Serialize, Deserialize)]
pub struct NfModel {
    pub version: u32,
    pub name: String,
    /// The backend that measured it (`sim`, `host`, `import`): models from different backends
    /// describe different machines and are not predicted together.
    pub backend: String,
    /// The detected execution pattern; `None` for an NF with one contended resource, where
    /// Eqs. 3 and 4 agree.
    pub pattern: Option<Detection>,
    pub memory: MemoryModel,
    /// The SLOMO-style baseline's model of the same NF.
    pub slomo: SlomoModel,
    pub accelerators: Vec<AccelModel>,
    pub solo: SoloCurve,
    /// Profile points the training took (solo grid, memory profiling, co-runs).
    pub samples_taken: usize,
    /// The memory benchmarks profiled against and their counters alone: a benchmark can be
    /// named as a competitor in prediction ([`NfModel::benchmark`]).
    pub benchmarks: Vec<BenchmarkCounters>,
}

/// A memory benchmark setting and its counters measured alone.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct BenchmarkCounters {
    pub setting: MemoryCompetitor,
    pub counters: Features,
}

/// Several NFs' models, the file `colocate train` writes (`{"version": 2, "models": [...]}`).
#[derive(Clone, Serialize, Deserialize)]
pub struct ModelFile {
    pub version: u32,
    pub models: Vec<NfModel>,
}

impl ModelFile {
    pub fn new(models: Vec<NfModel>) -> ModelFile {
        ModelFile {
            version: BUNDLE_VERSION,
            models,
        }
    }

    pub fn to_json(&self) -> Result<String, ColocateError> {
        serde_json::to_string(self).map_err(|e| ColocateError::Format {
            what: "model file".to_string(),
            reason: e.to_string(),
        })
    }

    /// Reads a model file: its version and every model's curve checked.
    pub fn from_json(text: &str) -> Result<ModelFile, ColocateError> {
        let file: ModelFile = serde_json::from_str(text).map_err(|e| ColocateError::Format {
            what: "model file".to_string(),
            reason: e.to_string(),
        })?;
        if file.version != BUNDLE_VERSION {
            return Err(ColocateError::Format {
                what: "model file".to_string(),
                reason: format!(
                    "version {} (this build reads {BUNDLE_VERSION})",
                    file.version
                ),
            });
        }
        for model in &file.models {
            model.solo.validate()?;
        }
        Ok(file)
    }

    /// The model named `name`.
    pub fn get(&self, name: &str) -> Result<&NfModel, ColocateError> {
        self.models
            .iter()
            .find(|m| m.name == name)
            .ok_or_else(|| ColocateError::Format {
                what: "model file".to_string(),
                reason: format!(
                    "no model of `{name}` (models: {})",
                    self.models
                        .iter()
                        .map(|m| m.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            })
    }
}

impl NfModel {
    pub fn to_json(&self) -> Result<String, ColocateError> {
        serde_json::to_string(self).map_err(|e| ColocateError::Format {
            what: "model bundle".to_string(),
            reason: e.to_string(),
        })
    }

    /// Reads a bundle, refusing versions other than [`BUNDLE_VERSION`] and malformed curves.
    pub fn from_json(text: &str) -> Result<NfModel, ColocateError> {
        let model: NfModel = serde_json::from_str(text).map_err(|e| ColocateError::Format {
            what: "model bundle".to_string(),
            reason: e.to_string(),
        })?;
        if model.version != BUNDLE_VERSION {
            return Err(ColocateError::Format {
                what: "model bundle".to_string(),
                reason: format!(
                    "version {} (this build reads {BUNDLE_VERSION})",
                    model.version
                ),
            });
        }
        model.solo.validate()?;
        Ok(model)
    }

    fn pattern(&self) -> Pattern {
        self.pattern
            .map_or(Pattern::RunToCompletion, |detection| detection.pattern)
    }
}

/// The predictors compared (§7.3, §7.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Predictor {
    /// Per-resource models composed by the detected execution pattern.
    Tomur,
    /// The solo rate: contention costs nothing.
    SoloRate,
    /// Memory only, learnt at the default traffic profile.
    Slomo,
    /// Tomur's per-resource drops, summed.
    Sum,
    /// Tomur's per-resource drops, the smallest per-resource throughput.
    Min,
}

impl Predictor {
    pub const ALL: [Predictor; 5] = [
        Predictor::Tomur,
        Predictor::SoloRate,
        Predictor::Slomo,
        Predictor::Sum,
        Predictor::Min,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Predictor::Tomur => "tomur",
            Predictor::SoloRate => "solo-rate",
            Predictor::Slomo => "slomo",
            Predictor::Sum => "sum",
            Predictor::Min => "min",
        }
    }
}

/// One NF of a co-location: its model and its traffic.
#[derive(Clone, Copy)]
pub struct Placed<'a> {
    pub model: &'a NfModel,
    pub traffic: TrafficProfile,
}

/// A prediction for one NF (the `colocate predict --json` contract of issue 13).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    pub target: String,
    pub competitors: Vec<String>,
    pub traffic: TrafficProfile,
    pub solo_pps: f64,
    pub predicted_pps: f64,
    /// `1 − predicted/solo`.
    pub drop: f64,
    /// Each modelled resource's drop alone, as a share of the solo rate (empty for the solo
    /// rate, memory only for SLOMO-style).
    pub per_resource: BTreeMap<Resource, f64>,
    pub bottleneck: Option<Resource>,
}

/// The fixed point first takes full steps; once a step changes the rates more than the one
/// before (an oscillation), it takes half steps.
const DAMPING: f64 = 0.5;
/// Relative change of every rate below which the fixed point stops: far below any SLA or
/// prediction error that matters.
const TOLERANCE: f64 = 1e-4;
const MAX_ROUNDS: usize = 60;

/// Predicts every NF of `nfs` running together.
pub fn predict_all(
    predictor: Predictor,
    nfs: &[Placed<'_>],
) -> Result<Vec<Prediction>, ColocateError> {
    predict_all_from(predictor, nfs, &[])
}

/// [`predict_all`], the fixed point started from `start` (packets per second, in `nfs`'
/// order; NFs past its end start from their solo rate): placement restarts from a NIC's last
/// prediction when it adds an NF.
pub fn predict_all_from(
    predictor: Predictor,
    nfs: &[Placed<'_>],
    start: &[f64],
) -> Result<Vec<Prediction>, ColocateError> {
    let solo: Vec<_> = nfs.iter().map(|nf| nf.model.solo.at(&nf.traffic)).collect();
    let mut rates: Vec<f64> = solo
        .iter()
        .enumerate()
        .map(|(i, s)| match start.get(i) {
            Some(&rate) if rate.is_finite() && rate > 0.0 => rate.min(s.solo),
            _ => s.solo,
        })
        .collect();
    let mut predictions = Vec::with_capacity(nfs.len());
    let (mut step, mut last_change) = (1.0, f64::INFINITY);
    for _ in 0..MAX_ROUNDS {
        predictions = (0..nfs.len())
            .map(|index| predict_one(predictor, nfs, &solo, &rates, index))
            .collect::<Result<Vec<_>, _>>()?;
        let mut change: f64 = 0.0;
        for (rate, prediction) in rates.iter_mut().zip(&predictions) {
            let next = *rate + step * (prediction.predicted_pps - *rate);
            change = change.max((next - *rate).abs() / rate.abs().max(f64::MIN_POSITIVE));
            *rate = next;
        }
        if change < TOLERANCE {
            break;
        }
        if change > last_change {
            step = DAMPING;
        }
        last_change = change;
    }
    Ok(predictions)
}

/// Predicts `target` next to `competitors`.
pub fn predict(
    predictor: Predictor,
    target: Placed<'_>,
    competitors: &[Placed<'_>],
) -> Result<Prediction, ColocateError> {
    let mut all = vec![target];
    all.extend_from_slice(competitors);
    predict_all(predictor, &all)?
        .into_iter()
        .next()
        .ok_or_else(|| ColocateError::Fit {
            what: "prediction".to_string(),
            reason: "no NF to predict".to_string(),
        })
}

/// `model`'s solo counters at a point of its solo curve, or why there are none: what it
/// contends with others through cannot be known from a backend without counters.
pub fn solo_counters(
    model: &NfModel,
    point: &crate::solo_curve::SoloPoint,
) -> Result<Features, ColocateError> {
    point.counters.ok_or_else(|| ColocateError::Unpredictable {
        what: format!("next to {}", model.name),
        reason: format!(
            "its model ({} backend) has no memory counters of the NF alone, so what it takes \
             from others is unknown (a memory benchmark it was profiled against can stand in)",
            if model.backend.is_empty() {
                "unnamed"
            } else {
                &model.backend
            }
        ),
    })
}

/// The competitors' summed solo counters, rates scaled by their current rate over their solo.
fn competing_features(
    nfs: &[Placed<'_>],
    solo: &[crate::solo_curve::SoloPoint],
    rates: &[f64],
    target: usize,
) -> Result<Features, ColocateError> {
    let mut sum = Features::default();
    let mut occupancy = 0.0;
    let mut any = false;
    for (index, ((point, rate), nf)) in solo.iter().zip(rates).zip(nfs).enumerate() {
        if index == target {
            continue;
        }
        let counters = solo_counters(nf.model, point)?;
        any = true;
        let scale = (rate / point.solo).clamp(0.0, 1.0);
        sum.access_rate += counters.access_rate * scale;
        sum.bandwidth += counters.bandwidth * scale;
        sum.working_set += counters.working_set;
        occupancy += counters.occupancy.unwrap_or(0.0);
    }
    sum.occupancy = any.then_some(occupancy);
    Ok(sum)
}

/// Tomur's per-resource drops of NF `target` (packets per second), memory first.
fn resource_drops(
    nfs: &[Placed<'_>],
    solo: &[crate::solo_curve::SoloPoint],
    rates: &[f64],
    target: usize,
) -> Result<Vec<(Resource, f64)>, ColocateError> {
    let (nf, own) = (&nfs[target], solo[target].solo);
    let features = competing_features(nfs, solo, rates, target)?;
    let mut drops = vec![(
        Resource::Memory,
        own * nf.model.memory.predict_drop(&features, &nf.traffic),
    )];
    let pattern = nf.model.pattern();
    for accel in &nf.model.accelerators {
        let own_time = accel.busy_time.at(nf.traffic.mtbr).max(f64::MIN_POSITIVE);
        let mut tenants = vec![Tenant {
            queues: accel.queues,
            request_time: own_time,
            offered: None,
        }];
        for (index, other) in nfs.iter().enumerate() {
            if index == target {
                continue;
            }
            for theirs in other
                .model
                .accelerators
                .iter()
                .filter(|a| a.kind == accel.kind)
            {
                tenants.push(Tenant {
                    queues: theirs.queues,
                    request_time: theirs
                        .busy_time
                        .at(other.traffic.mtbr)
                        .max(f64::MIN_POSITIVE),
                    offered: Some(rates[index].max(0.0)),
                });
            }
        }
        let capacity = capacity_for(&tenants, 0)?;
        let with_accel_contended = match pattern {
            Pattern::Pipeline => capacity.min(own),
            // The round the NF's requests wait grows from `n·t` to `n/capacity`; the core's
            // share of the per-packet time does not.
            Pattern::RunToCompletion => 1.0 / (1.0 / own + (1.0 / capacity - own_time).max(0.0)),
        };
        drops.push((accel.kind.into(), (own - with_accel_contended).max(0.0)));
    }
    Ok(drops)
}

fn predict_one(
    predictor: Predictor,
    nfs: &[Placed<'_>],
    solo: &[crate::solo_curve::SoloPoint],
    rates: &[f64],
    target: usize,
) -> Result<Prediction, ColocateError> {
    let nf = &nfs[target];
    let own = solo[target].solo;
    let drops = match predictor {
        Predictor::SoloRate => Vec::new(),
        Predictor::Slomo => {
            let features = competing_features(nfs, solo, rates, target)?;
            vec![(
                Resource::Memory,
                own * nf.model.slomo.predict_drop(&features),
            )]
        }
        Predictor::Tomur | Predictor::Sum | Predictor::Min => {
            resource_drops(nfs, solo, rates, target)?
        }
    };
    let competitors = nfs
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != target)
        .map(|(_, p)| p.model.name.clone())
        .collect();
    conclude(predictor, nf, own, &drops, competitors)
}

/// The prediction from per-resource drops (packets per second) by `predictor`'s composition.
fn conclude(
    predictor: Predictor,
    nf: &Placed<'_>,
    own: f64,
    drops: &[(Resource, f64)],
    competitors: Vec<String>,
) -> Result<Prediction, ColocateError> {
    let clamped: Vec<f64> = drops
        .iter()
        .map(|(_, d)| d.clamp(0.0, MAX_RESOURCE_DROP * own))
        .collect();
    let predicted = match predictor {
        Predictor::SoloRate => own,
        Predictor::Slomo | Predictor::Tomur => compose(nf.model.pattern(), own, &clamped)?,
        Predictor::Sum => sum_composition(own, &clamped)?,
        Predictor::Min => min_composition(own, &clamped)?,
    };
    let bottleneck = drops
        .iter()
        .filter(|(_, d)| *d >= BOTTLENECK_FLOOR * own)
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(r, _)| *r);
    Ok(Prediction {
        target: nf.model.name.clone(),
        competitors,
        traffic: nf.traffic,
        solo_pps: own,
        predicted_pps: predicted,
        drop: 1.0 - predicted / own,
        per_resource: drops.iter().map(|(r, d)| (*r, d / own)).collect(),
        bottleneck,
    })
}

/// Predicts `target` next to the memory benchmark `setting` alone, with the counters the
/// target's profiling measured of the nearest profiled setting (log distance in working set
/// and access rate; [`NfModel::benchmark`]). A benchmark is not slowed by the NF (its counters
/// are what it does alone), and contends for memory only.
pub fn predict_next_to_benchmark(
    predictor: Predictor,
    target: Placed<'_>,
    setting: &MemoryCompetitor,
) -> Result<Prediction, ColocateError> {
    let nf = &target;
    let benchmark = nf.model.benchmark(setting)?;
    let own = nf.model.solo.at(&nf.traffic).solo;
    let drops = match predictor {
        Predictor::SoloRate => Vec::new(),
        Predictor::Slomo => vec![(
            Resource::Memory,
            own * nf.model.slomo.predict_drop(&benchmark.counters),
        )],
        Predictor::Tomur | Predictor::Sum | Predictor::Min => vec![(
            Resource::Memory,
            own * nf
                .model
                .memory
                .predict_drop(&benchmark.counters, &nf.traffic),
        )],
    };
    let name = format!(
        "mem-bench {:.1} MiB at {:.3e}/s",
        benchmark.setting.working_set / (1024.0 * 1024.0),
        benchmark.setting.access_rate
    );
    conclude(predictor, nf, own, &drops, vec![name])
}

impl NfModel {
    /// The profiled memory benchmark nearest `setting` (same pattern first; log distance in
    /// working set and access rate).
    pub fn benchmark(
        &self,
        setting: &MemoryCompetitor,
    ) -> Result<BenchmarkCounters, ColocateError> {
        let distance = |b: &BenchmarkCounters| {
            let ln = |v: f64| v.max(f64::MIN_POSITIVE).ln();
            let pattern = if b.setting.pattern == setting.pattern {
                0.0
            } else {
                1e6
            };
            pattern
                + (ln(b.setting.working_set) - ln(setting.working_set)).abs()
                + (ln(b.setting.access_rate) - ln(setting.access_rate)).abs()
        };
        self.benchmarks
            .iter()
            .min_by(|a, b| distance(a).total_cmp(&distance(b)))
            .copied()
            .ok_or_else(|| ColocateError::Unpredictable {
                what: format!("{} next to a memory benchmark", self.name),
                reason: "its profile measured no memory benchmark alone".to_string(),
            })
    }
}
