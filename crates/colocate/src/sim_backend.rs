//! The simulated SoC SmartNIC as a profiling [`Backend`]: an NF whose demands follow the traffic
//! profile, and the device running it next to the benchmark competitors of a setting.
//!
//! [`crate::sim::Nf`] holds one traffic profile's demands. [`TrafficNf`] says how they move with
//! the traffic, the way §5.2 explains NFs' sensitivity: the flow table grows with the flow count
//! (so the working set crosses the last-level cache somewhere), per-packet work grows with the
//! bytes an NF touches (zero for a header-only NF), and accelerator requests take longer with
//! the payload's match-to-byte ratio (Eq. 5). [`TrafficNf::at`] makes the fixed NF for one
//! profile; the device model is unchanged.

use crate::compose::Pattern;
use crate::error::{non_negative, ColocateError};
use crate::profile::{Backend, ContentionSetting, Features, Sample, TrafficProfile};
use crate::sim::{AccelBench, AccelDemand, MemBench, Nf, Testbed, Workload};
use serde::{Deserialize, Serialize};

/// A simulated NF whose demands depend on the traffic.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrafficNf {
    pub name: String,
    pub cores: u32,
    pub pattern: Pattern,
    /// Seconds of computation per packet whatever its size.
    pub compute_per_packet: f64,
    /// Seconds of computation per byte of packet (payload scanning, checksums); 0 for an NF
    /// that reads headers only.
    pub compute_per_byte: f64,
    /// Last-level cache accesses per packet into the NF's tables.
    pub accesses_per_packet: f64,
    /// Bytes of tables that do not grow with traffic (rules, routes).
    pub fixed_state: f64,
    /// Bytes of table per flow (a flow entry and its share of the hash buckets).
    pub bytes_per_flow: f64,
    /// Accelerator use; each demand's `mtbr` is replaced by the traffic's.
    pub accels: Vec<AccelDemand>,
}

impl TrafficNf {
    /// The NF's demands under `traffic`.
    pub fn at(&self, traffic: &TrafficProfile) -> Result<Nf, ColocateError> {
        traffic.validate()?;
        non_negative("compute per byte", self.compute_per_byte)?;
        non_negative("bytes per flow", self.bytes_per_flow)?;
        non_negative("fixed state", self.fixed_state)?;
        Ok(Nf {
            name: self.name.clone(),
            cores: self.cores,
            compute_time: self.compute_per_packet + self.compute_per_byte * traffic.packet_size,
            accesses_per_packet: self.accesses_per_packet,
            working_set: self.fixed_state + self.bytes_per_flow * traffic.flows,
            accels: self
                .accels
                .iter()
                .map(|demand| AccelDemand {
                    mtbr: traffic.mtbr,
                    ..*demand
                })
                .collect(),
            pattern: self.pattern,
            offered_rate: None,
        })
    }
}

/// The simulated device with measurement noise, counting the profile points it runs.
pub struct SimBackend {
    pub testbed: Testbed,
    taken: usize,
}

impl SimBackend {
    pub fn new(testbed: Testbed) -> SimBackend {
        SimBackend { testbed, taken: 0 }
    }

    /// Counts a profile point run outside [`Backend::profile_one`] (by `crate::counters`).
    pub(crate) fn count_sample(&mut self) {
        self.taken = self.taken.saturating_add(1);
    }
}

impl Backend for SimBackend {
    type Nf = TrafficNf;

    /// The NF's throughput next to the setting's benchmarks, and the memory competitor's
    /// counters at that equilibrium (access rate, bandwidth and occupancy as measured, each
    /// with the testbed's noise; the working set as configured).
    fn profile_one(
        &mut self,
        nf: &TrafficNf,
        setting: &ContentionSetting,
        traffic: &TrafficProfile,
    ) -> Result<Sample, ColocateError> {
        let mut workloads = vec![Workload::Nf(nf.at(traffic)?)];
        if let Some(memory) = setting.memory {
            workloads.push(Workload::MemBench(MemBench {
                working_set: memory.working_set,
                access_rate: memory.access_rate,
            }));
        }
        for accel in &setting.accelerators {
            workloads.push(Workload::AccelBench(AccelBench::backlogged(
                accel.kind,
                accel.queues,
                accel.request_time,
            )));
        }
        let rates = self.testbed.device.run(&workloads)?;
        let memory_use = self.testbed.device.memory_use(&workloads, &rates);
        self.taken = self.taken.saturating_add(1);
        let mut features = Features::default();
        if let (Some(competitor), Some(observed)) = (setting.memory, memory_use.get(1)) {
            features = Features {
                access_rate: self.testbed.perturb(observed.access_rate),
                bandwidth: self.testbed.perturb(observed.bandwidth),
                working_set: competitor.working_set,
                occupancy: Some(self.testbed.perturb(observed.occupancy)),
            };
        }
        let throughput = self.testbed.perturb(rates[0]);
        Ok(Sample {
            nf: nf.name.clone(),
            traffic: *traffic,
            setting: setting.clone(),
            throughput,
            features,
            solo_beside: None,
        })
    }

    fn samples_taken(&self) -> usize {
        self.taken
    }

    fn name(&self) -> &str {
        "sim"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{AccessPattern, MemoryCompetitor};
    use crate::sim::Device;

    const MB: f64 = 1024.0 * 1024.0;

    fn nf() -> TrafficNf {
        TrafficNf {
            name: "flows".to_string(),
            cores: 2,
            pattern: Pattern::RunToCompletion,
            compute_per_packet: 0.4e-6,
            compute_per_byte: 0.0,
            accesses_per_packet: 24.0,
            fixed_state: 0.25 * MB,
            bytes_per_flow: 128.0,
            accels: Vec::new(),
        }
    }

    #[test]
    fn demands_follow_the_traffic() {
        let at = nf()
            .at(&TrafficProfile {
                flows: 1e5,
                packet_size: 64.0,
                mtbr: 0.0,
            })
            .unwrap();
        assert_eq!(at.working_set, 0.25 * MB + 128.0 * 1e5);
        assert_eq!(at.compute_time, 0.4e-6);
        let bad = TrafficProfile {
            flows: -1.0,
            ..TrafficProfile::DEFAULT
        };
        assert!(nf().at(&bad).is_err());
    }

    #[test]
    fn solo_points_report_no_contention_and_contended_ones_the_competitor() {
        let mut backend = SimBackend::new(Testbed::new(Device::bluefield2_like(), 0.0, 1));
        let traffic = TrafficProfile {
            flows: 3e4,
            ..TrafficProfile::DEFAULT
        };
        let solo = backend
            .profile_one(&nf(), &ContentionSetting::solo(), &traffic)
            .unwrap();
        assert_eq!(solo.features, Features::default());
        let competitor = MemoryCompetitor {
            working_set: 16.0 * MB,
            access_rate: 100e6,
            pattern: AccessPattern::Chase,
        };
        let contended = backend
            .profile_one(&nf(), &ContentionSetting::memory(competitor), &traffic)
            .unwrap();
        assert!(contended.throughput < 0.9 * solo.throughput);
        let f = contended.features;
        assert_eq!((f.access_rate, f.working_set), (100e6, 16.0 * MB));
        let occupancy = f.occupancy.unwrap_or(0.0);
        assert!(occupancy > 0.0 && occupancy < 6.0 * MB);
        assert!(f.bandwidth > 0.0 && f.bandwidth <= 100e6 * 64.0);
        assert_eq!(backend.samples_taken(), 2);
    }
}
