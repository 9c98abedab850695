//! The memory-subsystem model (paper 004 §4.1.2, §5.1.2) and the two baselines it is measured
//! against (§7.1, issue 13 item 7).
//!
//! - [`MemoryModel`], Tomur's traffic-aware model: gradient-boosted regression (the `perpetual`
//!   crate, squared loss, its `budget` as the knob) of the NF's throughput drop from the
//!   competitors' contention [`Features`] with the traffic attributes appended (§5.1.2:
//!   "appending the traffic attributes vector to the original input vector").
//! - [`SlomoModel`], the SLOMO-style baseline: the same regression on the contention features
//!   only, trained at one fixed traffic profile.
//! - [`solo_rate`]: the solo throughput as the prediction, no contention model at all.
//!
//! Every prediction takes `solo`, the NF's throughput alone at the traffic profile predicted for
//! (its solo sensitivity to traffic, measured cheaply without competitors); the models predict
//! what contention takes away from it. The drop is regressed as `ln(T/T_solo)`: the solo rate
//! moves by a factor of several across traffic profiles, the fraction lost much less, so trees
//! spend their splits on contention; and squared loss on a log ratio weighs a relative error the
//! same at a 5% drop as at a 60% one, which is what MAPE scores (regressing `1 − T/T_solo`
//! directly under-fitted the heavy drops, tests/it/memory.rs).
//!
//! **Our reading of SLOMO's extrapolation.** Paper 004 trains SLOMO "under the default traffic
//! profile" and, when the test profile deviates, applies "SLOMO's sensitivity extrapolation"
//! (§7.1), "sensitivity" being the NF's performance as a function of contention level
//! (footnote 5); §7.4 adds that it only works while the NF's sensitivity at the training
//! traffic overlaps the one at the test traffic. We take it as: the sensitivity curve learnt at
//! the reference profile keeps its shape and is rescaled to the NF's solo throughput at the new
//! profile, `T(P', c) = T_solo(P') · (1 − drop_ref(c))`. That is exact when the traffic change
//! scales every contended throughput alike and wrong where the traffic moves the NF's own
//! working set across the cache, which is where §7.4 finds SLOMO failing.

use crate::error::ColocateError;
use crate::forest::Forest;
use crate::profile::{Attribute, Features, Sample, TrafficProfile};
use perpetual::booster::config::ImportanceMethod;
use perpetual::objective::Objective;
use perpetual::{Matrix, PerpetualBooster};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::OnceLock;

/// The version written in and required of model files.
pub const MODEL_VERSION: u32 = 1;

/// The largest relative drop a model predicts: a prediction of zero throughput would make every
/// relative error of it 100%, and no co-run stops an NF outright.
const MAX_DROP: f64 = 0.99;

/// The regression's settings.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct GbrConfig {
    /// perpetual's complexity budget: higher fits more trees with a smaller step.
    pub budget: f32,
    pub seed: u64,
    /// Rounds without improvement before boosting stops; `None` leaves it to perpetual's
    /// heuristics, which on some data sets stop after a handful of trees.
    pub stopping_rounds: Option<usize>,
}

impl Default for GbrConfig {
    fn default() -> GbrConfig {
        GbrConfig {
            budget: 1.0,
            seed: 0,
            stopping_rounds: Some(20),
        }
    }
}

/// A sample with the NF's solo throughput at the same traffic profile.
#[derive(Clone, Debug, PartialEq)]
pub struct Labelled {
    pub sample: Sample,
    pub solo: f64,
}

impl Labelled {
    /// The measured relative drop `1 − T/T_solo`.
    pub fn drop(&self) -> f64 {
        1.0 - self.sample.throughput / self.solo
    }

    /// The regression target: `ln(T/T_solo)`, so that squared loss weighs relative errors of
    /// the throughput alike whether the drop is 5% or 60%.
    fn log_ratio(&self) -> f64 {
        (self.sample.throughput / self.solo)
            .max(1.0 - MAX_DROP)
            .ln()
    }
}

fn traffic_key(traffic: &TrafficProfile) -> [u64; 3] {
    [
        traffic.flows.to_bits(),
        traffic.packet_size.to_bits(),
        traffic.mtbr.to_bits(),
    ]
}

/// The mean solo throughput at each traffic profile, over every solo measurement of the
/// samples: solo samples, and the solo rates measured beside others ([`Sample::solo_beside`]).
pub struct SoloMeans(HashMap<[u64; 3], (f64, f64)>);

impl SoloMeans {
    /// The means over `samples`.
    pub fn of(samples: &[Sample]) -> SoloMeans {
        let mut sums: HashMap<[u64; 3], (f64, f64)> = HashMap::new();
        for sample in samples {
            let alone = if sample.setting.is_solo() {
                Some(sample.throughput)
            } else {
                sample.solo_beside
            };
            if let Some(alone) = alone {
                let entry = sums
                    .entry(traffic_key(&sample.traffic))
                    .or_insert((0.0, 0.0));
                entry.0 += alone;
                entry.1 += 1.0;
            }
        }
        SoloMeans(sums)
    }

    /// The mean at `traffic`, none if nothing was measured alone there.
    pub fn get(&self, traffic: &TrafficProfile) -> Option<f64> {
        let (total, count) = self.0.get(&traffic_key(traffic))?;
        Some(total / count)
    }
}

/// Pairs every sample with its solo throughput: the one measured beside it where the backend
/// measures one ([`Sample::solo_beside`]: the host alternates the NF alone and beside its
/// competitor, so that the machine's drift cancels in the drop), else its profile's
/// [`SoloMeans`] (the solo samples themselves are paired too, their drop is noise around zero).
/// Samples with neither are left out: their drop is unknown.
pub fn label(samples: &[Sample]) -> Vec<Labelled> {
    let means = SoloMeans::of(samples);
    samples
        .iter()
        .filter_map(|sample| {
            let solo = match sample.solo_beside {
                Some(beside) => beside,
                None => means.get(&sample.traffic)?,
            };
            Some(Labelled {
                sample: sample.clone(),
                solo,
            })
        })
        .collect()
}

fn booster(config: &GbrConfig) -> PerpetualBooster {
    PerpetualBooster::default()
        .set_objective(Objective::SquaredLoss)
        .set_budget(config.budget)
        .set_seed(config.seed)
        .set_stopping_rounds(config.stopping_rounds)
        // The machine is shared; one thread keeps runs reproducible and polite.
        .set_num_threads(Some(1))
}

/// A fitted booster and the input columns it was fitted on: a column no training row has a
/// value in (the host's cache occupancy, which no counter measures) is left out, since
/// perpetual cannot split on it (and fails on a column of NaN).
#[derive(Clone, Serialize, Deserialize)]
struct Fitted {
    booster: PerpetualBooster,
    columns: Vec<usize>,
    /// The booster's compiled form for prediction, built on first use (perpetual looks tree
    /// nodes up by hashing and allocates on every call).
    #[serde(skip)]
    compiled: OnceLock<Option<Forest>>,
}

impl Fitted {
    fn predict(&self, row: &[f64]) -> f64 {
        let kept: Vec<f64> = self
            .columns
            .iter()
            .map(|&c| row.get(c).copied().unwrap_or(f64::NAN))
            .collect();
        predict_one(&self.booster, &self.compiled, &kept)
    }

    /// Each input's share of the total split gain, largest first; left-out inputs get none.
    fn importance(&self, names: &[String]) -> Vec<(String, f64)> {
        let kept: Vec<String> = self
            .columns
            .iter()
            .filter_map(|&c| names.get(c).cloned())
            .collect();
        let mut ranked = importance(&self.booster, &kept);
        for (c, name) in names.iter().enumerate() {
            if !self.columns.contains(&c) {
                ranked.push((name.clone(), 0.0));
            }
        }
        ranked
    }
}

/// Fits `rows` (row-major, `width` columns) to `targets`.
fn fit(
    rows: &[Vec<f64>],
    targets: &[f64],
    width: usize,
    config: &GbrConfig,
    what: &str,
) -> Result<Fitted, ColocateError> {
    let failed = |reason: String| ColocateError::Fit {
        what: what.to_string(),
        reason,
    };
    if rows.len() < 2 {
        return Err(failed(format!(
            "{} labelled samples, needs at least 2",
            rows.len()
        )));
    }
    let columns: Vec<usize> = (0..width)
        .filter(|&c| rows.iter().any(|r| r.get(c).is_some_and(|v| v.is_finite())))
        .collect();
    if columns.is_empty() {
        return Err(failed("no input has a value in any sample".into()));
    }
    let kept: Vec<Vec<f64>> = rows
        .iter()
        .map(|r| {
            columns
                .iter()
                .map(|&c| r.get(c).copied().unwrap_or(f64::NAN))
                .collect()
        })
        .collect();
    let data = column_major(&kept, columns.len());
    let matrix = Matrix::new(&data, kept.len(), columns.len());
    let mut model = booster(config);
    // perpetual asserts on degenerate statistics instead of returning an error: a panic there
    // becomes this fit's error, not the program's end.
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        model.fit(&matrix, targets, None, None)
    }));
    match outcome {
        Ok(Ok(())) => Ok(Fitted {
            booster: model,
            columns,
            compiled: OnceLock::new(),
        }),
        Ok(Err(e)) => Err(failed(e.to_string())),
        Err(_) => Err(failed(
            "the gradient-boosting library failed on these samples".into(),
        )),
    }
}

/// perpetual's matrices are column-major.
fn column_major(rows: &[Vec<f64>], width: usize) -> Vec<f64> {
    let mut columns = Vec::with_capacity(rows.len().saturating_mul(width));
    for column in 0..width {
        columns.extend(
            rows.iter()
                .map(|row| row.get(column).copied().unwrap_or(f64::NAN)),
        );
    }
    columns
}

fn predict_one(
    booster: &PerpetualBooster,
    compiled: &OnceLock<Option<Forest>>,
    row: &[f64],
) -> f64 {
    let log_ratio = raw_prediction(booster, compiled, row);
    if log_ratio.is_finite() {
        (1.0 - log_ratio.exp()).clamp(0.0, MAX_DROP)
    } else {
        0.0
    }
}

/// The booster's output for one row: through its compiled form ([`crate::forest`], built on
/// first use), or perpetual's `predict` where it cannot be compiled.
fn raw_prediction(
    booster: &PerpetualBooster,
    compiled: &OnceLock<Option<Forest>>,
    row: &[f64],
) -> f64 {
    if let Some(forest) = compiled.get_or_init(|| Forest::compile(booster)) {
        return forest.predict(row);
    }
    let matrix = Matrix::new(row, 1, row.len());
    booster
        .predict(&matrix, false)
        .first()
        .copied()
        .unwrap_or(0.0)
}

fn importance(booster: &PerpetualBooster, names: &[String]) -> Vec<(String, f64)> {
    let gains = booster.calculate_feature_importance(ImportanceMethod::TotalGain, true);
    let mut ranked: Vec<(String, f64)> = names
        .iter()
        .enumerate()
        .map(|(index, name)| {
            let gain = gains.get(&index).copied().unwrap_or(0.0);
            (name.clone(), f64::from(gain))
        })
        .collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
    ranked
}

fn format_error(what: &str, error: impl std::fmt::Display) -> ColocateError {
    ColocateError::Format {
        what: what.to_string(),
        reason: error.to_string(),
    }
}

/// Tomur's traffic-aware memory model.
#[derive(Clone, Serialize, Deserialize)]
pub struct MemoryModel {
    pub version: u32,
    /// The traffic attributes appended to the contention features, in order (those adaptive
    /// profiling kept).
    pub attributes: Vec<Attribute>,
    pub config: GbrConfig,
    /// The booster (serialised by perpetual's own serde implementation) and its inputs.
    fitted: Fitted,
}

impl MemoryModel {
    /// Fits the drop of the labelled samples (see [`label`]) from their contention features
    /// and `attributes` of their traffic.
    pub fn train(
        samples: &[Labelled],
        attributes: &[Attribute],
        config: &GbrConfig,
    ) -> Result<MemoryModel, ColocateError> {
        let rows: Vec<Vec<f64>> = samples
            .iter()
            .map(|l| Self::row_for(attributes, &l.sample.features, &l.sample.traffic))
            .collect();
        let targets: Vec<f64> = samples.iter().map(Labelled::log_ratio).collect();
        let width = Features::NAMES.len() + attributes.len();
        let fitted = fit(&rows, &targets, width, config, "traffic-aware memory model")?;
        Ok(MemoryModel {
            version: MODEL_VERSION,
            attributes: attributes.to_vec(),
            config: *config,
            fitted,
        })
    }

    fn row_for(
        attributes: &[Attribute],
        features: &Features,
        traffic: &TrafficProfile,
    ) -> Vec<f64> {
        let mut row = features.values().to_vec();
        row.extend(attributes.iter().map(|a| traffic.get(*a)));
        row
    }

    /// The predicted relative drop under `features` at `traffic`, in `[0, 0.99]`.
    pub fn predict_drop(&self, features: &Features, traffic: &TrafficProfile) -> f64 {
        self.fitted
            .predict(&Self::row_for(&self.attributes, features, traffic))
    }

    /// The predicted throughput, from the NF's solo throughput at `traffic`.
    pub fn predict(&self, features: &Features, traffic: &TrafficProfile, solo: f64) -> f64 {
        solo * (1.0 - self.predict_drop(features, traffic))
    }

    /// The model's inputs, contention features then traffic attributes.
    pub fn feature_names(&self) -> Vec<String> {
        Features::NAMES
            .iter()
            .map(|n| n.to_string())
            .chain(self.attributes.iter().map(|a| a.name().to_string()))
            .collect()
    }

    /// Each input's share of the total split gain, largest first.
    pub fn importance(&self) -> Vec<(String, f64)> {
        self.fitted.importance(&self.feature_names())
    }

    pub fn to_json(&self) -> Result<String, ColocateError> {
        serde_json::to_string(self).map_err(|e| format_error("memory model", e))
    }

    /// Reads a model file, refusing versions other than [`MODEL_VERSION`].
    pub fn from_json(text: &str) -> Result<MemoryModel, ColocateError> {
        let model: MemoryModel =
            serde_json::from_str(text).map_err(|e| format_error("memory model", e))?;
        if model.version != MODEL_VERSION {
            return Err(format_error(
                "memory model",
                format!(
                    "version {} (this build reads {MODEL_VERSION})",
                    model.version
                ),
            ));
        }
        Ok(model)
    }
}

/// The SLOMO-style baseline: the drop learnt from contention features at one reference traffic
/// profile, rescaled to other profiles by the solo throughput (see the module comment).
#[derive(Clone, Serialize, Deserialize)]
pub struct SlomoModel {
    pub version: u32,
    pub reference: TrafficProfile,
    pub config: GbrConfig,
    fitted: Fitted,
}

impl SlomoModel {
    /// Fits the drop of the labelled samples taken at `reference` (others are ignored).
    pub fn train(
        samples: &[Labelled],
        reference: &TrafficProfile,
        config: &GbrConfig,
    ) -> Result<SlomoModel, ColocateError> {
        let at_reference: Vec<&Labelled> = samples
            .iter()
            .filter(|l| traffic_key(&l.sample.traffic) == traffic_key(reference))
            .collect();
        let rows: Vec<Vec<f64>> = at_reference
            .iter()
            .map(|l| l.sample.features.values().to_vec())
            .collect();
        let targets: Vec<f64> = at_reference.iter().map(|l| l.log_ratio()).collect();
        let fitted = fit(
            &rows,
            &targets,
            Features::NAMES.len(),
            config,
            "SLOMO-style memory model",
        )?;
        Ok(SlomoModel {
            version: MODEL_VERSION,
            reference: *reference,
            config: *config,
            fitted,
        })
    }

    pub fn predict_drop(&self, features: &Features) -> f64 {
        self.fitted.predict(&features.values())
    }

    /// `T_solo(P') · (1 − drop_ref(c))`: the traffic enters only through `solo`.
    pub fn predict(&self, features: &Features, solo: f64) -> f64 {
        solo * (1.0 - self.predict_drop(features))
    }

    pub fn importance(&self) -> Vec<(String, f64)> {
        let names: Vec<String> = Features::NAMES.iter().map(|n| n.to_string()).collect();
        self.fitted.importance(&names)
    }
}

/// The solo-rate baseline: contention costs nothing.
pub fn solo_rate(solo: f64) -> f64 {
    solo
}

/// Mean absolute percentage error of `(predicted, measured)` pairs, in percent; NaN for none.
pub fn mape(pairs: &[(f64, f64)]) -> f64 {
    let total: f64 = pairs
        .iter()
        .map(|(predicted, measured)| ((predicted - measured) / measured).abs())
        .sum();
    100.0 * total / pairs.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{AccessPattern, ContentionSetting, MemoryCompetitor};

    /// A synthetic NF: contention costs `min(bandwidth / 10 GB/s, 0.5)` of its throughput,
    /// but only above 50K flows; solo throughput 1 Mpps.
    fn samples() -> Vec<Sample> {
        let mut samples = Vec::new();
        for flows in [1e4, 3e4, 1e5, 3e5] {
            let traffic = TrafficProfile::DEFAULT.with(Attribute::Flows, flows);
            let mut push = |setting: ContentionSetting, features: Features, throughput: f64| {
                samples.push(Sample {
                    nf: "synthetic".to_string(),
                    traffic,
                    setting,
                    throughput,
                    features,
                    solo_beside: None,
                })
            };
            push(ContentionSetting::solo(), Features::default(), 1e6);
            for step in 1..=20 {
                let bandwidth = f64::from(step) * 0.5e9;
                let drop = if flows > 5e4 {
                    (bandwidth / 10e9).min(0.5)
                } else {
                    0.0
                };
                let setting = ContentionSetting::memory(MemoryCompetitor {
                    working_set: 8e6,
                    access_rate: bandwidth / 64.0,
                    pattern: AccessPattern::Stream,
                });
                let features = Features {
                    access_rate: bandwidth / 64.0,
                    bandwidth,
                    working_set: 8e6,
                    occupancy: Some(1e6),
                };
                push(setting, features, 1e6 * (1.0 - drop));
            }
        }
        samples
    }

    /// A point with a solo rate measured beside it is labelled by that rate; the others by the
    /// profile's mean over its solo points and every solo rate measured beside others; a
    /// profile with neither leaves its points out.
    #[test]
    fn labels_prefer_the_solo_rate_measured_beside() {
        let at = |flows: f64| TrafficProfile::DEFAULT.with(Attribute::Flows, flows);
        let contended = ContentionSetting::memory(MemoryCompetitor {
            working_set: 8e6,
            access_rate: 1e8,
            pattern: AccessPattern::Stream,
        });
        let sample = |traffic, setting: &ContentionSetting, throughput, beside| Sample {
            nf: "nf".into(),
            traffic,
            setting: setting.clone(),
            throughput,
            features: Features::default(),
            solo_beside: beside,
        };
        let solo = ContentionSetting::solo();
        let labelled = label(&[
            sample(at(1e4), &solo, 1.0e6, None),
            sample(at(1e4), &contended, 0.8e6, Some(1.1e6)),
            sample(at(1e4), &contended, 0.7e6, None),
            sample(at(1e5), &contended, 0.5e6, None),
        ]);
        let solos: Vec<f64> = labelled.iter().map(|l| l.solo).collect();
        assert_eq!(solos, [1.05e6, 1.1e6, 1.05e6]);
        assert!((labelled[1].drop() - (1.0 - 0.8 / 1.1)).abs() < 1e-12);
    }

    #[test]
    fn model_learns_a_traffic_dependent_drop_and_round_trips() {
        let labelled = label(&samples());
        assert_eq!(labelled.len(), 84);
        let model =
            MemoryModel::train(&labelled, &[Attribute::Flows], &GbrConfig::default()).unwrap();
        let features = Features {
            access_rate: 4e9 / 64.0,
            bandwidth: 4e9,
            working_set: 8e6,
            occupancy: Some(1e6),
        };
        let few = TrafficProfile::DEFAULT.with(Attribute::Flows, 1e4);
        let many = TrafficProfile::DEFAULT.with(Attribute::Flows, 3e5);
        assert!(model.predict_drop(&features, &few) < 0.05);
        assert!((model.predict_drop(&features, &many) - 0.4).abs() < 0.05);
        let importance = model.importance();
        let share = |name: &str| {
            importance
                .iter()
                .find(|(n, _)| n == name)
                .map_or(0.0, |(_, s)| *s)
        };
        assert!(
            share("flows") > 0.1 && share("working_set") < 0.01,
            "{importance:?}"
        );

        let restored = MemoryModel::from_json(&model.to_json().unwrap()).unwrap();
        assert_eq!(
            restored.predict(&features, &many, 1e6),
            model.predict(&features, &many, 1e6)
        );
        let text = model
            .to_json()
            .unwrap()
            .replacen("\"version\":1", "\"version\":9", 1);
        assert!(MemoryModel::from_json(&text).is_err());
    }

    #[test]
    fn compiled_forest_agrees_with_the_boosters_predict() {
        let labelled = label(&samples());
        let model =
            MemoryModel::train(&labelled, &[Attribute::Flows], &GbrConfig::default()).unwrap();
        let fitted = &model.fitted;
        for l in labelled.iter().step_by(7) {
            let full =
                MemoryModel::row_for(&model.attributes, &l.sample.features, &l.sample.traffic);
            let row: Vec<f64> = fitted.columns.iter().map(|&c| full[c]).collect();
            let reference = fitted
                .booster
                .predict(&Matrix::new(&row, 1, row.len()), false)[0];
            let walked = Forest::compile(&fitted.booster).unwrap().predict(&row);
            assert!(
                (walked - reference).abs() <= 1e-9 * reference.abs().max(1.0),
                "{walked} vs {reference}"
            );
        }
    }

    #[test]
    fn an_input_no_sample_measured_is_left_out() {
        // The host measures no cache occupancy: every sample's is missing.
        let host_like: Vec<Sample> = samples()
            .into_iter()
            .map(|mut s| {
                s.features.occupancy = None;
                s
            })
            .collect();
        let labelled = label(&host_like);
        let model =
            MemoryModel::train(&labelled, &[Attribute::Flows], &GbrConfig::default()).unwrap();
        let features = Features {
            access_rate: 4e9 / 64.0,
            bandwidth: 4e9,
            working_set: 8e6,
            occupancy: None,
        };
        let many = TrafficProfile::DEFAULT.with(Attribute::Flows, 3e5);
        assert!((model.predict_drop(&features, &many) - 0.4).abs() < 0.05);
        let importance = model.importance();
        assert!(
            importance.contains(&("occupancy".to_string(), 0.0)),
            "{importance:?}"
        );
        let slomo = SlomoModel::train(&labelled, &many, &GbrConfig::default()).unwrap();
        assert!((slomo.predict_drop(&features) - 0.4).abs() < 0.05);
    }

    #[test]
    fn slomo_style_model_rescales_the_reference_drop_by_the_solo_rate() {
        let labelled = label(&samples());
        let reference = TrafficProfile::DEFAULT.with(Attribute::Flows, 3e5);
        let slomo = SlomoModel::train(&labelled, &reference, &GbrConfig::default()).unwrap();
        let features = Features {
            access_rate: 4e9 / 64.0,
            bandwidth: 4e9,
            working_set: 8e6,
            occupancy: Some(1e6),
        };
        // It learnt the drop at 300K flows and applies it to any solo rate, also at 10K flows
        // where the true drop is zero.
        let predicted = slomo.predict(&features, 2e6);
        assert!((predicted / 2e6 - 0.6).abs() < 0.05, "{predicted}");
        assert!(
            SlomoModel::train(&labelled, &TrafficProfile::DEFAULT, &GbrConfig::default()).is_err()
        );
    }
}
