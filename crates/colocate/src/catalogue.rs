//! A small catalogue of simulated NFs shaped after paper 004's (§7.1: FlowStats, NAT,
//! FlowMonitor, NIDS, IPComp Gateway), the profiling spaces they are trained over, and the
//! training plan for the simulated device: what prediction and placement studies draw from.
//!
//! The demands are illustrative, chosen so that every resource matters somewhere: two NFs use
//! memory only, three also an accelerator (regex, compression or both), with both execution
//! patterns. An NF's queue count equals its core count (one queue per core, as a DOCA NF
//! would open them).

use crate::adaptive::TrafficSpace;
use crate::adaptive::{
    AdaptiveConfig, AttributeRange, ContentionSpace, SplitOrder, SplitShape, SplitSignal,
};
use crate::compose::Pattern;
use crate::memory::GbrConfig;
use crate::profile::{AccessPattern, Attribute, MemoryCompetitor, TrafficProfile};
use crate::sim::{AccelDemand, AccelKind};
use crate::sim_backend::TrafficNf;
use crate::train::{MemoryProfiling, TrainingPlan};
use crate::ServiceTime;

const MB: f64 = 1024.0 * 1024.0;
const US: f64 = 1e-6;

fn accel(kind: AccelKind, queues: u32, base: f64, per_thousand_matches: f64) -> AccelDemand {
    AccelDemand {
        kind,
        queues,
        requests_per_packet: 1.0,
        work: ServiceTime {
            base,
            per_match: per_thousand_matches / 1000.0,
        },
        mtbr: 0.0,
    }
}

/// The catalogue, in a fixed order.
pub fn catalogue() -> Vec<TrafficNf> {
    vec![
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
        },
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
        },
        TrafficNf {
            name: "flowmonitor".to_string(),
            cores: 2,
            pattern: Pattern::Pipeline,
            compute_per_packet: 0.5 * US,
            compute_per_byte: 0.0,
            accesses_per_packet: 30.0,
            fixed_state: 0.5 * MB,
            bytes_per_flow: 192.0,
            accels: vec![accel(AccelKind::Regex, 2, 0.35 * US, 0.5 * US)],
        },
        TrafficNf {
            name: "nids".to_string(),
            cores: 2,
            pattern: Pattern::RunToCompletion,
            compute_per_packet: 0.6 * US,
            compute_per_byte: 0.2e-9,
            accesses_per_packet: 20.0,
            fixed_state: 1.0 * MB,
            bytes_per_flow: 64.0,
            accels: vec![accel(AccelKind::Regex, 2, 0.3 * US, 0.4 * US)],
        },
        TrafficNf {
            name: "ipcomp".to_string(),
            cores: 1,
            pattern: Pattern::Pipeline,
            compute_per_packet: 0.5 * US,
            compute_per_byte: 0.1e-9,
            accesses_per_packet: 12.0,
            fixed_state: 0.5 * MB,
            bytes_per_flow: 96.0,
            accels: vec![accel(AccelKind::Compression, 1, 0.6 * US, 0.0)],
        },
    ]
}

/// Flows over three decades (log scale), packet sizes from minimum to MTU, MTBR up to 1200
/// matches/MB; defaults at paper 004's default profile.
pub fn traffic_space() -> TrafficSpace {
    let range = |attribute, min, max, log_scale| AttributeRange {
        attribute,
        min,
        max,
        default: TrafficProfile::DEFAULT.get(attribute),
        log_scale,
    };
    TrafficSpace {
        ranges: vec![
            range(Attribute::Flows, 1e3, 1e6, true),
            range(Attribute::PacketSize, 64.0, 1500.0, false),
            range(Attribute::Mtbr, 0.0, 1200.0, false),
        ],
    }
}

/// mem-bench from 0.5 MB to 256 MB, 10 M to 300 M accesses per second: as far as the
/// catalogue's NFs together reach (three NFs at 1M flows hold hundreds of MB and make over
/// 100 M accesses per second each when they fit the cache).
pub fn contention_space() -> ContentionSpace {
    ContentionSpace {
        working_set: (0.5 * MB, 256.0 * MB),
        access_rate: (10e6, 300e6),
        pattern: AccessPattern::Chase,
    }
}

/// The training plan used on the simulated device: a 19 × 4 × 4 solo grid, memory profiling
/// with a quota of `quota` (`adaptive`: Algorithm 1 breadth first with the solo and contended
/// split signal; otherwise random profiles with 8 competitors each), as many samples at
/// the default profile for the SLOMO-style model, accelerator inference against three
/// backlogged benchmarks at four MTBRs, pattern detection over 3 × 2 benchmark levels.
pub fn sim_plan(quota: usize, adaptive: bool, seed: u64) -> TrainingPlan {
    let contention = contention_space();
    TrainingPlan {
        traffic: traffic_space(),
        contention,
        solo_grid: vec![
            (Attribute::Flows, 19),
            (Attribute::PacketSize, 4),
            (Attribute::Mtbr, 4),
        ],
        memory_profiling: if adaptive {
            MemoryProfiling::Adaptive(AdaptiveConfig {
                quota,
                prune_threshold: 0.05,
                split_threshold: 0.05,
                per_split: 8,
                signal: SplitSignal::SoloAndContended(contention.heaviest()),
                order: SplitOrder::BreadthFirst,
                split: SplitShape::Orthants,
                seed,
            })
        } else {
            MemoryProfiling::Random {
                quota,
                per_traffic: 8,
                seed,
            }
        },
        slomo_samples: quota,
        gbr: GbrConfig::default(),
        accelerators: vec![AccelKind::Regex, AccelKind::Compression],
        accel_benches: vec![(2, 2.0 * US), (4, 2.0 * US), (4, 4.0 * US)],
        accel_mtbrs: vec![0.0, 400.0, 800.0, 1200.0],
        usage_threshold: 0.05,
        detection_memory: [(8.0, 60e6), (16.0, 120e6), (32.0, 150e6)]
            .iter()
            .map(|&(ws, rate)| MemoryCompetitor {
                working_set: ws * MB,
                access_rate: rate,
                pattern: AccessPattern::Chase,
            })
            .collect(),
        detection_accel: vec![(1, 1.0 * US), (2, 1.5 * US)],
    }
}
