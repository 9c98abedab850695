//! Profile files: what a profiling run measured, kept so that training is a separate step
//! (`linerate colocate profile`, then `colocate train`; issue 13, item 8).
//!
//! Profiling an NF is training's backend work ([`crate::train::train_bundle`]) recorded: a
//! [`Recorder`] passes every measurement training asks of a backend through and keeps it, in
//! order. Training from the file runs the same plan against a [`Replay`], which answers each
//! request with the next recorded measurement after checking that it is the one asked for. So
//! the file holds measurements only (no fitted state), training can be rerun with other
//! regression settings without touching the device, and a plan that asks for something the
//! profile did not measure fails with the first difference.
//!
//! Imported measurements have no plan: their file holds samples only, and training fits the
//! models the samples support ([`crate::train::fit_samples`]).
//!
//! # File format (version 2)
//!
//! JSON: `{"version": 2, "backend", "nf", "plan", "measurements": [...]}`, where `plan` is the
//! [`TrainingPlan`] (or `null` for imported samples) and each measurement is an object tagged by
//! `"kind"`:
//!
//! - `"point"`: a [`Sample`] (the NF at a traffic profile next to a contention setting);
//! - `"nf_alone"`: `traffic`, the NF's `counters` alone (`null` without counters) and its
//!   `throughput`;
//! - `"competitor_alone"`: a `setting`'s memory competitor alone, its `counters`;
//! - `"accel_co_run"`: `setting`, `traffic`, the NF's `throughput` and the accelerator
//!   benchmarks' own rates `bench_rates`.

use crate::counters::SoloCounters;
use crate::error::ColocateError;
use crate::profile::{Backend, ContentionSetting, Features, Sample, TrafficProfile};
use crate::train::TrainingPlan;
use serde::{Deserialize, Serialize};

/// The version written in and required of profile files.
pub const PROFILE_VERSION: u32 = 2;

/// One measurement a backend made for training.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Measurement {
    Point(Sample),
    NfAlone {
        traffic: TrafficProfile,
        counters: Option<Features>,
        throughput: f64,
    },
    CompetitorAlone {
        setting: ContentionSetting,
        counters: Features,
    },
    AccelCoRun {
        setting: ContentionSetting,
        traffic: TrafficProfile,
        throughput: f64,
        bench_rates: Vec<f64>,
    },
}

impl Measurement {
    fn kind(&self) -> &'static str {
        match self {
            Measurement::Point(_) => "profile point",
            Measurement::NfAlone { .. } => "solo run with counters",
            Measurement::CompetitorAlone { .. } => "competitor alone",
            Measurement::AccelCoRun { .. } => "accelerator co-run",
        }
    }
}

/// A profile file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProfileFile {
    pub version: u32,
    /// Which backend measured (`"sim"`, `"host"`, `"import"`).
    pub backend: String,
    pub nf: String,
    /// The plan profiling followed; `None` for imported samples.
    pub plan: Option<TrainingPlan>,
    pub measurements: Vec<Measurement>,
}

fn file_error(reason: impl std::fmt::Display) -> ColocateError {
    ColocateError::Format {
        what: "profile file".to_string(),
        reason: reason.to_string(),
    }
}

impl ProfileFile {
    pub fn new(
        backend: &str,
        nf: &str,
        plan: Option<TrainingPlan>,
        measurements: Vec<Measurement>,
    ) -> ProfileFile {
        ProfileFile {
            version: PROFILE_VERSION,
            backend: backend.to_string(),
            nf: nf.to_string(),
            plan,
            measurements,
        }
    }

    /// A plan-less file of samples (imported, or profiled outside a plan).
    pub fn from_samples(backend: &str, nf: &str, samples: Vec<Sample>) -> ProfileFile {
        let measurements = samples.into_iter().map(Measurement::Point).collect();
        ProfileFile::new(backend, nf, None, measurements)
    }

    /// The profile points among the measurements.
    pub fn samples(&self) -> Vec<Sample> {
        self.measurements
            .iter()
            .filter_map(|m| match m {
                Measurement::Point(sample) => Some(sample.clone()),
                _ => None,
            })
            .collect()
    }

    pub fn to_json(&self) -> Result<String, ColocateError> {
        serde_json::to_string_pretty(self).map_err(file_error)
    }

    /// Reads a profile file, refusing versions other than [`PROFILE_VERSION`].
    pub fn from_json(text: &str) -> Result<ProfileFile, ColocateError> {
        let file: ProfileFile = serde_json::from_str(text).map_err(file_error)?;
        if file.version != PROFILE_VERSION {
            return Err(file_error(format!(
                "version {} (this build reads version {PROFILE_VERSION})",
                file.version
            )));
        }
        Ok(file)
    }
}

/// A backend whose measurements are kept, in order; `progress` hears the count after each.
pub struct Recorder<'a, B> {
    pub backend: B,
    pub measurements: Vec<Measurement>,
    progress: Box<dyn FnMut(usize) + 'a>,
}

impl<'a, B: SoloCounters> Recorder<'a, B> {
    pub fn new(backend: B, progress: impl FnMut(usize) + 'a) -> Recorder<'a, B> {
        Recorder {
            backend,
            measurements: Vec::new(),
            progress: Box::new(progress),
        }
    }

    fn keep(&mut self, measurement: Measurement) {
        self.measurements.push(measurement);
        (self.progress)(self.measurements.len());
    }
}

impl<B: SoloCounters> Backend for Recorder<'_, B> {
    type Nf = B::Nf;

    fn profile_one(
        &mut self,
        nf: &B::Nf,
        setting: &ContentionSetting,
        traffic: &TrafficProfile,
    ) -> Result<Sample, ColocateError> {
        let sample = self.backend.profile_one(nf, setting, traffic)?;
        self.keep(Measurement::Point(sample.clone()));
        Ok(sample)
    }

    fn samples_taken(&self) -> usize {
        self.backend.samples_taken()
    }

    fn name(&self) -> &str {
        self.backend.name()
    }
}

impl<B: SoloCounters> SoloCounters for Recorder<'_, B> {
    fn nf_counters(
        &mut self,
        nf: &B::Nf,
        traffic: &TrafficProfile,
    ) -> Result<(Option<Features>, f64), ColocateError> {
        let (counters, throughput) = self.backend.nf_counters(nf, traffic)?;
        self.keep(Measurement::NfAlone {
            traffic: *traffic,
            counters,
            throughput,
        });
        Ok((counters, throughput))
    }

    fn competitor_counters(
        &mut self,
        setting: &ContentionSetting,
    ) -> Result<Features, ColocateError> {
        let counters = self.backend.competitor_counters(setting)?;
        self.keep(Measurement::CompetitorAlone {
            setting: setting.clone(),
            counters,
        });
        Ok(counters)
    }

    fn accel_co_run(
        &mut self,
        nf: &B::Nf,
        setting: &ContentionSetting,
        traffic: &TrafficProfile,
    ) -> Result<(f64, Vec<f64>), ColocateError> {
        let (throughput, bench_rates) = self.backend.accel_co_run(nf, setting, traffic)?;
        self.keep(Measurement::AccelCoRun {
            setting: setting.clone(),
            traffic: *traffic,
            throughput,
            bench_rates: bench_rates.clone(),
        });
        Ok((throughput, bench_rates))
    }
}

/// A profile file's measurements answering training's requests, in order.
pub struct Replay<'a> {
    file: &'a ProfileFile,
    next: usize,
    points: usize,
}

impl<'a> Replay<'a> {
    pub fn new(file: &'a ProfileFile) -> Replay<'a> {
        Replay {
            file,
            next: 0,
            points: 0,
        }
    }

    /// What `extract` takes from the next measurement, which must be a `wanted` one at `query`
    /// (described for errors).
    fn take<T>(
        &mut self,
        wanted: &'static str,
        query: String,
        extract: impl Fn(&'a Measurement) -> Option<T>,
    ) -> Result<T, ColocateError> {
        let file: &'a ProfileFile = self.file;
        let index = self.next;
        let Some(measurement) = file.measurements.get(index) else {
            return Err(file_error(format!(
                "{} has {index} measurements; training needs more (a {wanted} {query}): was it \
                 profiled with a smaller quota or another plan?",
                file.nf
            )));
        };
        let Some(found) = extract(measurement) else {
            return Err(file_error(format!(
                "measurement {} of {} is a {}, training asks for a {wanted} {query}: the \
                 plan differs from the one it was profiled with",
                index + 1,
                file.nf,
                measurement.kind()
            )));
        };
        self.next = index + 1;
        Ok(found)
    }

    /// Measurements not used by training (a longer profile than the plan needs).
    pub fn unused(&self) -> usize {
        self.file.measurements.len().saturating_sub(self.next)
    }
}

/// Equal up to what a decimal round trip may change.
fn close(a: f64, b: f64) -> bool {
    a == b || (a - b).abs() <= 1e-9 * a.abs().max(b.abs())
}

fn same_traffic(a: &TrafficProfile, b: &TrafficProfile) -> bool {
    close(a.flows, b.flows) && close(a.packet_size, b.packet_size) && close(a.mtbr, b.mtbr)
}

fn same_setting(a: &ContentionSetting, b: &ContentionSetting) -> bool {
    let memory = match (&a.memory, &b.memory) {
        (None, None) => true,
        (Some(x), Some(y)) => {
            x.pattern == y.pattern
                && close(x.working_set, y.working_set)
                && close(x.access_rate, y.access_rate)
        }
        _ => false,
    };
    memory
        && a.accelerators.len() == b.accelerators.len()
        && a.accelerators.iter().zip(&b.accelerators).all(|(x, y)| {
            x.kind == y.kind && x.queues == y.queues && close(x.request_time, y.request_time)
        })
}

fn describe(traffic: &TrafficProfile) -> String {
    format!(
        "at {} flows, {} B, {} matches/MB",
        traffic.flows, traffic.packet_size, traffic.mtbr
    )
}

impl Backend for Replay<'_> {
    /// Replays answer for the file's NF whatever it is called.
    type Nf = ();

    fn profile_one(
        &mut self,
        _: &(),
        setting: &ContentionSetting,
        traffic: &TrafficProfile,
    ) -> Result<Sample, ColocateError> {
        let sample = self.take("profile point", describe(traffic), |m| match m {
            Measurement::Point(s)
                if same_traffic(&s.traffic, traffic) && same_setting(&s.setting, setting) =>
            {
                Some(s.clone())
            }
            _ => None,
        })?;
        self.points = self.points.saturating_add(1);
        Ok(sample)
    }

    fn samples_taken(&self) -> usize {
        self.points
    }

    fn name(&self) -> &str {
        &self.file.backend
    }
}

impl SoloCounters for Replay<'_> {
    fn nf_counters(
        &mut self,
        _: &(),
        traffic: &TrafficProfile,
    ) -> Result<(Option<Features>, f64), ColocateError> {
        self.take("solo run with counters", describe(traffic), |m| match m {
            Measurement::NfAlone {
                traffic: t,
                counters,
                throughput,
            } if same_traffic(t, traffic) => Some((*counters, *throughput)),
            _ => None,
        })
    }

    fn competitor_counters(
        &mut self,
        setting: &ContentionSetting,
    ) -> Result<Features, ColocateError> {
        self.take("competitor alone", String::new(), |m| match m {
            Measurement::CompetitorAlone {
                setting: s,
                counters,
            } if same_setting(s, setting) => Some(*counters),
            _ => None,
        })
    }

    fn accel_co_run(
        &mut self,
        _: &(),
        setting: &ContentionSetting,
        traffic: &TrafficProfile,
    ) -> Result<(f64, Vec<f64>), ColocateError> {
        let found = self.take("accelerator co-run", describe(traffic), |m| match m {
            Measurement::AccelCoRun {
                setting: s,
                traffic: t,
                throughput,
                bench_rates,
            } if same_setting(s, setting) && same_traffic(t, traffic) => {
                Some((*throughput, bench_rates.clone()))
            }
            _ => None,
        })?;
        // A co-run is a profile point, as the backends count it.
        self.points = self.points.saturating_add(1);
        Ok(found)
    }
}
