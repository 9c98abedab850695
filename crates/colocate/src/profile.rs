//! The profiling interface (issue 13, item 6): what a profile point is, what a backend measures
//! at it, and the versioned file that holds the samples.
//!
//! A profile point is an NF, a [`TrafficProfile`] (paper 004 §5.1: flow count, packet size,
//! match-to-byte ratio) and a [`ContentionSetting`] (at most one benchmark competitor per
//! resource, as in Tomur's profiling: mem-bench, regex-bench, compression-bench). A
//! [`Backend`] runs the NF there and returns a [`Sample`]: the NF's measured throughput and the
//! contention [`Features`] observed while it ran. On the simulated device (`crate::sim_backend`)
//! those are the competitors' cache access rate, memory bandwidth and last-level cache
//! occupancy; on the host (crate `linerate-contend`) they will be what `MemBench` reports it
//! achieved (access rate, bandwidth), occupancy unknown.
//!
//! What a profiling run measured goes to a profile file ([`crate::record::ProfileFile`]).

use crate::error::{non_negative, positive, ColocateError};
use crate::sim::AccelKind;
use serde::{Deserialize, Serialize};

/// The traffic an NF is profiled under (§5.1).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrafficProfile {
    /// Distinct flows the packets are spread over, uniformly.
    pub flows: f64,
    /// Bytes per packet.
    pub packet_size: f64,
    /// Payload matches per MB (regex NFs).
    pub mtbr: f64,
}

impl TrafficProfile {
    /// Paper 004's default profile, (16K flows, 1500 B, 600 matches/MB) (§5.1, §7.1).
    pub const DEFAULT: TrafficProfile = TrafficProfile {
        flows: 16_000.0,
        packet_size: 1500.0,
        mtbr: 600.0,
    };

    pub fn get(&self, attribute: Attribute) -> f64 {
        match attribute {
            Attribute::Flows => self.flows,
            Attribute::PacketSize => self.packet_size,
            Attribute::Mtbr => self.mtbr,
        }
    }

    pub fn with(mut self, attribute: Attribute, value: f64) -> TrafficProfile {
        match attribute {
            Attribute::Flows => self.flows = value,
            Attribute::PacketSize => self.packet_size = value,
            Attribute::Mtbr => self.mtbr = value,
        }
        self
    }

    pub fn validate(&self) -> Result<(), ColocateError> {
        positive("flow count", self.flows)?;
        positive("packet size", self.packet_size)?;
        non_negative("match-to-byte ratio", self.mtbr)?;
        Ok(())
    }
}

/// One traffic attribute, a dimension of the profiling space.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Attribute {
    Flows,
    PacketSize,
    Mtbr,
}

impl Attribute {
    pub const ALL: [Attribute; 3] = [Attribute::Flows, Attribute::PacketSize, Attribute::Mtbr];

    pub fn name(self) -> &'static str {
        match self {
            Attribute::Flows => "flows",
            Attribute::PacketSize => "packet_size",
            Attribute::Mtbr => "mtbr",
        }
    }
}

/// How a memory competitor walks its working set (the host's `MemBench` patterns; the
/// simulated device's cache model treats both as uniform accesses).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AccessPattern {
    /// Address order: bandwidth pressure, prefetcher-friendly.
    Stream,
    /// A random cycle of dependent loads: latency-bound, occupies the cache.
    Chase,
}

/// mem-bench's setting.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemoryCompetitor {
    /// Bytes.
    pub working_set: f64,
    /// Cache-line accesses per second it aims at.
    pub access_rate: f64,
    pub pattern: AccessPattern,
}

/// An accelerator benchmark's setting: backlogged queues of requests of known size.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct AccelCompetitor {
    pub kind: AccelKind,
    pub queues: u32,
    /// Seconds per request at the device's reference speed.
    pub request_time: f64,
}

/// The competitors running next to the NF: at most one per resource. The empty setting is the
/// NF alone (Algorithm 1's contention level "0").
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ContentionSetting {
    pub memory: Option<MemoryCompetitor>,
    pub accelerators: Vec<AccelCompetitor>,
}

impl ContentionSetting {
    /// No competitor.
    pub fn solo() -> ContentionSetting {
        ContentionSetting::default()
    }

    /// mem-bench alone.
    pub fn memory(competitor: MemoryCompetitor) -> ContentionSetting {
        ContentionSetting {
            memory: Some(competitor),
            accelerators: Vec::new(),
        }
    }

    pub fn is_solo(&self) -> bool {
        self.memory.is_none() && self.accelerators.is_empty()
    }
}

/// The memory-subsystem contention the competitors exerted while the NF ran, as measured (the
/// memory model's input, §4.1.2 and Appendix D). Zero for the NF alone.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Features {
    /// The competitors' last-level cache accesses per second (the paper's CAR).
    pub access_rate: f64,
    /// Bytes per second the competitors moved from memory.
    pub bandwidth: f64,
    /// The competitors' working set, bytes (Table 13's WSS).
    pub working_set: f64,
    /// Bytes of the last-level cache the competitors held; `None` where no counter tells
    /// (the host).
    pub occupancy: Option<f64>,
}

impl Features {
    /// The names of [`Features::values`], in order.
    pub const NAMES: [&'static str; 4] = ["access_rate", "bandwidth", "working_set", "occupancy"];

    /// The features as model inputs; an unknown occupancy is NaN (missing for the booster).
    pub fn values(&self) -> [f64; 4] {
        [
            self.access_rate,
            self.bandwidth,
            self.working_set,
            self.occupancy.unwrap_or(f64::NAN),
        ]
    }
}

/// One measurement: the NF at a traffic profile under a contention setting.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    pub nf: String,
    pub traffic: TrafficProfile,
    pub setting: ContentionSetting,
    /// The NF's measured throughput, packets per second.
    pub throughput: f64,
    pub features: Features,
    /// The NF's throughput alone measured beside this point, where the backend alternates the
    /// two (the host does, to cancel its drift; absent in profile files written before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub solo_beside: Option<f64>,
}

/// Something that can run an NF at a profile point and measure it: the simulated device, the
/// host (BPF_PROG_TEST_RUN next to a competitor on the other core), or imported measurements.
pub trait Backend {
    /// The NF as this backend knows it (a simulated NF's demands, a loaded XDP program).
    type Nf;

    /// Runs `nf` under `traffic` next to the competitors of `setting` and measures it.
    fn profile_one(
        &mut self,
        nf: &Self::Nf,
        setting: &ContentionSetting,
        traffic: &TrafficProfile,
    ) -> Result<Sample, ColocateError>;

    /// How many profile points this backend has run (the profiling cost).
    fn samples_taken(&self) -> usize;

    /// The backend's name in files (`sim`, `host`, `import`).
    fn name(&self) -> &str;
}
