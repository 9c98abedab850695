//! Training an NF's model bundle ([`crate::predict::NfModel`]) from a profiling backend, as one
//! function (issue 13, item 4). What it runs, in order:
//!
//! 1. **Solo curve**: the NF alone at every profile of a traffic grid, throughput and memory
//!    counters ([`crate::solo_curve`]).
//! 2. **Memory model**: adaptive (Algorithm 1) or random profiling ([`crate::adaptive`]) under
//!    mem-bench contention; every sample's features replaced by its mem-bench's solo counters (see
//!    [`crate::counters`] for why), then the traffic-aware regression over the attributes
//!    profiling kept. The SLOMO-style baseline is trained on as many samples at the default
//!    profile.
//! 3. **Accelerators**: for each accelerator of the plan, a co-run at the default profile next to
//!    the heaviest benchmark tells whether the NF uses it (throughput down by at least
//!    `usage_threshold`); if so, at each MTBR of the plan, co-runs against backlogged benchmarks
//!    of known queue count and request time give the NF's queue count and accelerator solo rate
//!    ([`crate::accel::infer_tenant`]), and Eq. 5's line is fitted through the solo rates over
//!    MTBR; the same co-runs give the NF's busy time on the accelerator per packet from the
//!    benchmark's own rate ([`crate::counters`]), fitted over MTBR the same way. A benchmark's
//!    request time is taken as configured (the simulated device's accelerators run at the
//!    reference speed).
//! 4. **Execution pattern**, for NFs using an accelerator: §4.2's co-runs (mem-bench alone, each
//!    accelerator benchmark alone, all together, over a grid of levels) and
//!    [`crate::compose::detect_pattern`].

use crate::accel::{fit_service_time, infer_tenant, CoRun};
use crate::adaptive::{
    adaptive_profile, random_profile, AdaptiveConfig, ContentionSpace, TrafficSpace,
};
use crate::compose::{detect_pattern, BenchmarkCoRun};
use crate::counters::SoloCounters;
use crate::error::ColocateError;
use crate::memory::{label, GbrConfig, MemoryModel, SlomoModel};
use crate::predict::{AccelModel, BenchmarkCounters, NfModel, BUNDLE_VERSION};
use crate::profile::{
    AccelCompetitor, Attribute, ContentionSetting, Features, MemoryCompetitor, Sample,
    TrafficProfile,
};
use crate::record::{Measurement, ProfileFile, Replay};
use crate::sim::AccelKind;
use crate::solo_curve::{GridAxis, SoloCurve, SoloPoint};
use rand::rngs::StdRng;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};

/// How the memory model's samples are drawn ([`crate::adaptive`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryProfiling {
    /// Algorithm 1. With several kept attributes it samples the box's diagonal only (its
    /// midpoints split every kept attribute at once), so attributes vary together.
    Adaptive(AdaptiveConfig),
    /// Random traffic profiles, each solo and with `per_traffic` random competitors.
    Random {
        quota: usize,
        per_traffic: usize,
        seed: u64,
    },
}

impl MemoryProfiling {
    fn seed(&self) -> u64 {
        match self {
            MemoryProfiling::Adaptive(config) => config.seed,
            MemoryProfiling::Random { seed, .. } => *seed,
        }
    }
}

/// What training runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrainingPlan {
    pub traffic: TrafficSpace,
    pub contention: ContentionSpace,
    /// Grid points per attribute of the solo curve (an attribute not listed: its default only).
    pub solo_grid: Vec<(Attribute, usize)>,
    pub memory_profiling: MemoryProfiling,
    /// Samples at the default profile for the SLOMO-style baseline.
    pub slomo_samples: usize,
    pub gbr: GbrConfig,
    /// Accelerators to probe.
    pub accelerators: Vec<AccelKind>,
    /// Backlogged benchmarks for the co-run inference: `(queues, seconds per request)`. The
    /// last is the heaviest and decides whether the NF uses the accelerator.
    pub accel_benches: Vec<(u32, f64)>,
    /// MTBRs at which the accelerator solo rate is inferred.
    pub accel_mtbrs: Vec<f64>,
    /// Relative throughput drop next to the heaviest benchmark at or above which the NF uses an
    /// accelerator.
    pub usage_threshold: f64,
    /// Levels for pattern detection: mem-bench settings crossed with accelerator benchmarks.
    pub detection_memory: Vec<MemoryCompetitor>,
    pub detection_accel: Vec<(u32, f64)>,
}

/// Trains `nf`'s bundle on `backend` following `plan`.
pub fn train_bundle<B: SoloCounters>(
    backend: &mut B,
    nf: &B::Nf,
    name: &str,
    plan: &TrainingPlan,
) -> Result<NfModel, ColocateError> {
    plan.traffic.validate()?;
    let before = backend.samples_taken();
    let (solo, grid_runs) = solo_curve(backend, nf, plan)?;

    let (samples, kept) = match &plan.memory_profiling {
        MemoryProfiling::Adaptive(config) => {
            let outcome = adaptive_profile(backend, nf, &plan.traffic, &plan.contention, config)?;
            (outcome.samples, outcome.kept)
        }
        MemoryProfiling::Random {
            quota,
            per_traffic,
            seed,
        } => {
            let samples = random_profile(
                backend,
                nf,
                &plan.traffic,
                &plan.contention,
                *quota,
                *per_traffic,
                *seed,
            )?;
            (samples, Attribute::ALL.to_vec())
        }
    };
    let mut relabel = Relabel::default();
    let samples = relabel.all(backend, samples)?;
    let memory = MemoryModel::train(&label(&samples), &kept, &plan.gbr)?;

    let default = plan.traffic.default_profile();
    let mut rng = StdRng::seed_from_u64(plan.memory_profiling.seed().wrapping_add(1));
    let mut at_default = Vec::with_capacity(plan.slomo_samples);
    let solo_every = 9;
    for index in 0..plan.slomo_samples {
        let setting = if index % solo_every == 0 {
            ContentionSetting::solo()
        } else {
            plan.contention.random(&mut rng)
        };
        at_default.push(backend.profile_one(nf, &setting, &default)?);
    }
    let at_default = relabel.all(backend, at_default)?;
    let slomo = SlomoModel::train(&label(&at_default), &default, &plan.gbr)?;

    let solo_default = backend
        .profile_one(nf, &ContentionSetting::solo(), &default)?
        .throughput;
    let mut accelerators = Vec::new();
    for &kind in &plan.accelerators {
        if let Some(model) = accelerator(backend, nf, plan, kind, solo_default)? {
            accelerators.push(model);
        }
    }
    let pattern = if accelerators.is_empty() {
        None
    } else {
        let kinds: Vec<AccelKind> = accelerators.iter().map(|a| a.kind).collect();
        let runs = detection_runs(backend, nf, plan, &kinds)?;
        Some(detect_pattern(solo_default, &runs)?)
    };
    let taken = backend.samples_taken().saturating_sub(before);
    relabel.known.sort_by(|a, b| {
        (a.setting.working_set, a.setting.access_rate)
            .partial_cmp(&(b.setting.working_set, b.setting.access_rate))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    Ok(NfModel {
        version: BUNDLE_VERSION,
        name: name.to_string(),
        backend: backend.name().to_string(),
        pattern,
        memory,
        slomo,
        accelerators,
        solo,
        samples_taken: taken.saturating_add(grid_runs),
        benchmarks: relabel.known,
    })
}

/// The solo grid, and how many runs it took.
fn solo_curve<B: SoloCounters>(
    backend: &mut B,
    nf: &B::Nf,
    plan: &TrainingPlan,
) -> Result<(SoloCurve, usize), ColocateError> {
    let axes: Vec<GridAxis> = plan
        .traffic
        .ranges
        .iter()
        .filter_map(|range| {
            let points = plan
                .solo_grid
                .iter()
                .find(|(a, _)| *a == range.attribute)
                .map_or(1, |(_, n)| *n);
            (points > 1 && range.max > range.min).then(|| GridAxis {
                attribute: range.attribute,
                values: range.grid(points),
                log_scale: range.log_scale,
            })
        })
        .collect();
    let profiles = SoloCurve::profiles(&axes, plan.traffic.default_profile());
    let mut points = Vec::with_capacity(profiles.len());
    for profile in &profiles {
        let (counters, solo) = backend.nf_counters(nf, profile)?;
        points.push(crate::solo_curve::SoloPoint { solo, counters });
    }
    let curve = SoloCurve { axes, points };
    curve.validate()?;
    Ok((curve, profiles.len()))
}

/// Replaces samples' features by their memory competitor's solo counters, each setting's
/// counters read once.
#[derive(Default)]
struct Relabel {
    known: Vec<BenchmarkCounters>,
}

impl Relabel {
    fn all<B: SoloCounters>(
        &mut self,
        backend: &mut B,
        samples: Vec<Sample>,
    ) -> Result<Vec<Sample>, ColocateError> {
        samples
            .into_iter()
            .map(|mut sample| {
                let Some(memory) = sample.setting.memory else {
                    sample.features = backend.competitor_counters(&sample.setting)?;
                    return Ok(sample);
                };
                let features = match self.known.iter().find(|b| b.setting == memory) {
                    Some(known) => known.counters,
                    None => {
                        let counters = backend.competitor_counters(&sample.setting)?;
                        self.known.push(BenchmarkCounters {
                            setting: memory,
                            counters,
                        });
                        counters
                    }
                };
                sample.features = features;
                Ok(sample)
            })
            .collect()
    }
}

fn accel_setting(kind: AccelKind, (queues, request_time): (u32, f64)) -> ContentionSetting {
    ContentionSetting {
        memory: None,
        accelerators: vec![AccelCompetitor {
            kind,
            queues,
            request_time,
        }],
    }
}

/// The NF's model of `kind`, or `None` if the heaviest benchmark does not slow it.
fn accelerator<B: SoloCounters>(
    backend: &mut B,
    nf: &B::Nf,
    plan: &TrainingPlan,
    kind: AccelKind,
    solo_default: f64,
) -> Result<Option<AccelModel>, ColocateError> {
    let default = plan.traffic.default_profile();
    let Some(&heaviest) = plan.accel_benches.last() else {
        return Ok(None);
    };
    let loaded = backend
        .profile_one(nf, &accel_setting(kind, heaviest), &default)?
        .throughput;
    if 1.0 - loaded / solo_default < plan.usage_threshold {
        return Ok(None);
    }
    let mut solo_rates = Vec::with_capacity(plan.accel_mtbrs.len());
    let mut busy = Vec::with_capacity(plan.accel_mtbrs.len());
    let mut queues = Vec::with_capacity(plan.accel_mtbrs.len());
    for &mtbr in &plan.accel_mtbrs {
        let traffic = default.with(Attribute::Mtbr, mtbr);
        let mut runs = Vec::with_capacity(plan.accel_benches.len());
        let mut busy_times = Vec::with_capacity(plan.accel_benches.len());
        for &bench in &plan.accel_benches {
            let (observed, benches) =
                backend.accel_co_run(nf, &accel_setting(kind, bench), &traffic)?;
            runs.push(CoRun {
                competitor_queues: bench.0,
                competitor_request_time: bench.1,
                observed_rate: observed,
            });
            // The accelerator is never idle next to a backlogged benchmark (crate::counters).
            if let Some(bench_rate) = benches.first() {
                busy_times.push((1.0 - bench_rate * bench.1).max(0.0) / observed);
            }
        }
        let inferred = infer_tenant(&runs)?;
        solo_rates.push((mtbr, inferred.solo_rate));
        queues.push(inferred.queues);
        if !busy_times.is_empty() {
            let mean = busy_times.iter().sum::<f64>() / busy_times.len() as f64;
            if mean > 0.0 {
                busy.push((mtbr, 1.0 / mean));
            }
        }
    }
    queues.sort_by(f64::total_cmp);
    let fitted_queues = queues.get(queues.len() / 2).copied().unwrap_or(1.0);
    let rounded = fitted_queues.round();
    Ok(Some(AccelModel {
        kind,
        queues: if (1.0..=64.0).contains(&rounded) {
            rounded as u32
        } else {
            1
        },
        fitted_queues,
        request_time: fit_service_time(&solo_rates)?,
        busy_time: fit_service_time(&busy)?,
    }))
}

/// §4.2's co-runs at the default profile.
fn detection_runs<B: SoloCounters>(
    backend: &mut B,
    nf: &B::Nf,
    plan: &TrainingPlan,
    kinds: &[AccelKind],
) -> Result<Vec<BenchmarkCoRun>, ColocateError> {
    let default = plan.traffic.default_profile();
    let mut runs = Vec::new();
    for memory in &plan.detection_memory {
        for &level in &plan.detection_accel {
            let mut alone = vec![
                backend
                    .profile_one(nf, &ContentionSetting::memory(*memory), &default)?
                    .throughput,
            ];
            for &kind in kinds {
                alone.push(
                    backend
                        .profile_one(nf, &accel_setting(kind, level), &default)?
                        .throughput,
                );
            }
            let together = ContentionSetting {
                memory: Some(*memory),
                accelerators: kinds
                    .iter()
                    .map(|&kind| AccelCompetitor {
                        kind,
                        queues: level.0,
                        request_time: level.1,
                    })
                    .collect(),
            };
            let together = backend.profile_one(nf, &together, &default)?.throughput;
            runs.push(BenchmarkCoRun { alone, together });
        }
    }
    Ok(runs)
}

impl TrainingPlan {
    /// About how many measurements the plan takes (for a progress bar): the solo grid, the
    /// memory quota, the SLOMO-style samples, the accelerator probes and co-runs and pattern
    /// detection were every accelerator used; the competitors' solo counters are not counted
    /// (one per distinct setting, at most as many as the memory samples).
    pub fn planned_measurements(&self) -> usize {
        let grid: usize = self
            .traffic
            .ranges
            .iter()
            .map(|range| {
                self.solo_grid
                    .iter()
                    .find(|(a, _)| *a == range.attribute)
                    .map_or(1, |(_, n)| *n)
                    .max(1)
            })
            .product();
        let quota = match &self.memory_profiling {
            MemoryProfiling::Adaptive(config) => config.quota,
            MemoryProfiling::Random { quota, .. } => *quota,
        };
        let accelerators = self.accelerators.len();
        let co_runs = accelerators * (1 + self.accel_mtbrs.len() * self.accel_benches.len())
            + self.detection_memory.len() * self.detection_accel.len() * (2 + accelerators);
        grid + quota + self.slomo_samples + 1 + co_runs
    }
}

/// Trains a profile file's NF: a planned profile by replaying its measurements through
/// [`train_bundle`] with the plan it was profiled under (its regression settings replaced by
/// `gbr` when given), an unplanned one (imported samples) by [`fit_unplanned`].
pub fn train_profile(file: &ProfileFile, gbr: Option<GbrConfig>) -> Result<NfModel, ColocateError> {
    let Some(plan) = &file.plan else {
        return fit_unplanned(file, &gbr.unwrap_or_default());
    };
    let mut plan = plan.clone();
    if let Some(gbr) = gbr {
        plan.gbr = gbr;
    }
    let mut replay = Replay::new(file);
    train_bundle(&mut replay, &(), &file.nf, &plan)
}

/// Fits what a plan-less profile supports: the solo curve over the grid its solo runs form
/// (every combination of their distinct attribute values must have been measured), the
/// traffic-aware memory model over the attributes that vary, and the SLOMO-style model at the
/// profile with the most contended samples. No accelerator or pattern: imported samples carry
/// no benchmark rates.
pub fn fit_unplanned(file: &ProfileFile, gbr: &GbrConfig) -> Result<NfModel, ColocateError> {
    let no_fit = |reason: String| ColocateError::Fit {
        what: format!("{} ({} profile)", file.nf, file.backend),
        reason,
    };
    let alone: Vec<(TrafficProfile, Option<Features>, f64)> = file
        .measurements
        .iter()
        .filter_map(|m| match m {
            Measurement::NfAlone {
                traffic,
                counters,
                throughput,
            } => Some((*traffic, *counters, *throughput)),
            _ => None,
        })
        .collect();
    if alone.is_empty() {
        return Err(no_fit("no solo measurement".to_string()));
    }
    let axes: Vec<GridAxis> = Attribute::ALL
        .iter()
        .filter_map(|&attribute| {
            let mut values: Vec<f64> = alone.iter().map(|(t, _, _)| t.get(attribute)).collect();
            values.sort_by(f64::total_cmp);
            values.dedup();
            (values.len() > 1).then(|| GridAxis {
                attribute,
                log_scale: attribute == Attribute::Flows && values.iter().all(|v| *v > 0.0),
                values,
            })
        })
        .collect();
    let base = alone[0].0;
    let mut points = Vec::new();
    for profile in SoloCurve::profiles(&axes, base) {
        let here: Vec<_> = alone.iter().filter(|(t, _, _)| *t == profile).collect();
        let Some(&&(_, counters, _)) = here.first() else {
            return Err(no_fit(format!(
                "no solo measurement at {} flows, {} B, {} matches/MB, which the grid of the \
                 others needs",
                profile.flows, profile.packet_size, profile.mtbr
            )));
        };
        let solo = here.iter().map(|(_, _, rate)| rate).sum::<f64>() / here.len() as f64;
        points.push(SoloPoint { solo, counters });
    }
    let solo = SoloCurve { axes, points };
    solo.validate()?;

    let samples = file.samples();
    let labelled = label(&samples);
    let kept: Vec<Attribute> = solo.axes.iter().map(|a| a.attribute).collect();
    let memory = MemoryModel::train(&labelled, &kept, gbr)?;
    let mut counts: Vec<(TrafficProfile, usize)> = Vec::new();
    for sample in samples.iter().filter(|s| !s.setting.is_solo()) {
        match counts.iter_mut().find(|(t, _)| *t == sample.traffic) {
            Some((_, n)) => *n += 1,
            None => counts.push((sample.traffic, 1)),
        }
    }
    let reference = counts
        .iter()
        .max_by_key(|(_, n)| *n)
        .map(|(t, _)| *t)
        .ok_or_else(|| no_fit("no sample with a competitor".to_string()))?;
    let slomo = SlomoModel::train(&labelled, &reference, gbr)?;
    Ok(NfModel {
        version: BUNDLE_VERSION,
        name: file.nf.clone(),
        backend: file.backend.clone(),
        pattern: None,
        memory,
        slomo,
        accelerators: Vec::new(),
        solo,
        samples_taken: file.measurements.len(),
        benchmarks: Vec::new(),
    })
}
