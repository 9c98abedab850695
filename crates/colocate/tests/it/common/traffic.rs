//! Traffic-dependent NFs, the profiling spaces, and test sets for the memory model and profiling
//! tests, all on the simulated device.

use super::MB;
use linerate_colocate::adaptive::ContentionSpace;
use linerate_colocate::catalogue::catalogue;
pub use linerate_colocate::catalogue::traffic_space;
use linerate_colocate::memory::Labelled;
use linerate_colocate::profile::{AccessPattern, Backend, ContentionSetting};
use linerate_colocate::sim::{Device, Testbed};
use linerate_colocate::sim_backend::{SimBackend, TrafficNf};
use rand::rngs::StdRng;
use rand::SeedableRng;

/// The catalogue's NF `name` (`linerate_colocate::catalogue`).
fn from_catalogue(name: &str) -> TrafficNf {
    catalogue()
        .into_iter()
        .find(|nf| nf.name == name)
        .unwrap_or_else(|| panic!("{name} is in the catalogue"))
}

/// A FlowStats-like NF: per-flow counters in a hash table, headers only (insensitive to packet
/// size and payload).
pub fn flowstats() -> TrafficNf {
    from_catalogue("flowstats")
}

/// A NAT-like NF that also checksums its payload: bigger flow entries, work per byte.
pub fn nat() -> TrafficNf {
    from_catalogue("nat")
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
