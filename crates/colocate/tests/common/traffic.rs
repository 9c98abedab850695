//! Traffic-dependent NFs, the profiling spaces, and test sets for the memory model and profiling
//! tests, all on the simulated device.

use super::{MB, US};
use linerate_colocate::adaptive::{AttributeRange, ContentionSpace, TrafficSpace};
use linerate_colocate::memory::Labelled;
use linerate_colocate::profile::{
    AccessPattern, Attribute, Backend, ContentionSetting, TrafficProfile,
};
use linerate_colocate::sim::{Device, Testbed};
use linerate_colocate::sim_backend::{SimBackend, TrafficNf};
use linerate_colocate::Pattern;
use rand::rngs::StdRng;
use rand::SeedableRng;

/// A FlowStats-like NF: per-flow counters in a hash table, headers only (insensitive to packet
/// size and payload).
pub fn flowstats() -> TrafficNf {
    TrafficNf {
        name: "flowstats".to_string(),
        cores: 2,
        pattern: Pattern::RunToCompletion,
        compute_per_packet: 0.4 * US,
        compute_per_byte: 0.0,
        accesses_per_packet: 24.0,
        fixed_state: 0.25 * MB,
        bytes_per_flow: 128.0,
        accels: Vec::new(),
    }
}

/// A NAT-like NF that also checksums its payload: bigger flow entries, work per byte.
pub fn nat() -> TrafficNf {
    TrafficNf {
        name: "nat".to_string(),
        cores: 2,
        pattern: Pattern::RunToCompletion,
        compute_per_packet: 0.3 * US,
        compute_per_byte: 0.3e-9,
        accesses_per_packet: 16.0,
        fixed_state: 0.5 * MB,
        bytes_per_flow: 256.0,
        accels: Vec::new(),
    }
}

/// Flows over three decades (log scale), packet sizes from minimum to MTU, MTBR up to 1200.
pub fn traffic_space() -> TrafficSpace {
    TrafficSpace {
        ranges: vec![
            AttributeRange {
                attribute: Attribute::Flows,
                min: 1e3,
                max: 1e6,
                default: TrafficProfile::DEFAULT.flows,
                log_scale: true,
            },
            AttributeRange {
                attribute: Attribute::PacketSize,
                min: 64.0,
                max: 1500.0,
                default: TrafficProfile::DEFAULT.packet_size,
                log_scale: false,
            },
            AttributeRange {
                attribute: Attribute::Mtbr,
                min: 0.0,
                max: 1200.0,
                default: TrafficProfile::DEFAULT.mtbr,
                log_scale: false,
            },
        ],
    }
}

/// mem-bench from 1 MB to 32 MB, 10 M to 150 M accesses per second.
pub fn contention_space() -> ContentionSpace {
    ContentionSpace {
        working_set: (1.0 * MB, 32.0 * MB),
        access_rate: (10e6, 150e6),
        pattern: AccessPattern::Chase,
    }
}

pub fn backend(seed: u64) -> SimBackend {
    SimBackend::new(Testbed::new(
        Device::bluefield2_like(),
        Testbed::DEFAULT_NOISE,
        seed,
    ))
}

/// `count` held-out points: a random traffic profile and random contention each, with the
/// NF's solo throughput measured at that profile.
pub fn held_out(
    backend: &mut SimBackend,
    nf: &TrafficNf,
    count: usize,
    seed: u64,
) -> Vec<Labelled> {
    let (traffic, contention) = (traffic_space(), contention_space());
    let mut rng = StdRng::seed_from_u64(seed);
    (0..count)
        .map(|_| {
            let profile = traffic.random(&mut rng);
            let solo = backend
                .profile_one(nf, &ContentionSetting::solo(), &profile)
                .unwrap()
                .throughput;
            let sample = backend
                .profile_one(nf, &contention.random(&mut rng), &profile)
                .unwrap();
            Labelled { sample, solo }
        })
        .collect()
}
