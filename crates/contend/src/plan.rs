//! What profiling an XDP NF on this host measures (`linerate colocate profile --backend host`):
//! the traffic space the host realizes, the memory competitors drawn, and the training plan.
//!
//! Flow counts from a thousand (state in L1/L2) to a million (tens of MiB of flow state, well
//! past this host's last-level cache), packets from minimum size to 1500 bytes; match-to-byte
//! ratio is not varied (no regex accelerator here). Competitors walk 0.5 to 256 MiB by pointer
//! chase (cache occupancy, no prefetching), from 10 M accesses per second to as fast as the other
//! core goes. The solo curve is a 7 × 2 grid; no accelerator is probed.

use linerate_colocate::adaptive::{
    AdaptiveConfig, AttributeRange, ContentionSpace, SplitOrder, SplitShape, SplitSignal,
    TrafficSpace,
};
use linerate_colocate::memory::GbrConfig;
use linerate_colocate::profile::{AccessPattern, Attribute};
use linerate_colocate::train::{MemoryProfiling, TrainingPlan};

const MIB: f64 = 1024.0 * 1024.0;

/// Flows (log scale) and packet size; defaults 16,000 flows and 512 bytes.
pub fn host_traffic_space() -> TrafficSpace {
    TrafficSpace {
        ranges: vec![
            AttributeRange {
                attribute: Attribute::Flows,
                min: 1e3,
                max: 1e6,
                default: 16e3,
                log_scale: true,
            },
            AttributeRange {
                attribute: Attribute::PacketSize,
                min: 64.0,
                max: 1500.0,
                default: 512.0,
                log_scale: false,
            },
        ],
    }
}

/// Pointer-chasing competitors, 0.5–256 MiB, 10⁷–10¹⁰ accesses per second (the top is more
/// than a core achieves: unthrottled).
pub fn host_contention_space() -> ContentionSpace {
    ContentionSpace {
        working_set: (0.5 * MIB, 256.0 * MIB),
        access_rate: (1e7, 1e10),
        pattern: AccessPattern::Chase,
    }
}

/// The host's training plan: `quota` memory samples drawn by Algorithm 1 (`adaptive`, with the
/// contended split signal, breadth first) or at random (4 competitors per profile), a third as
/// many at the default profile for the SLOMO-style baseline.
pub fn host_plan(quota: usize, adaptive: bool, seed: u64) -> TrainingPlan {
    let contention = host_contention_space();
    TrainingPlan {
        traffic: host_traffic_space(),
        contention,
        solo_grid: vec![(Attribute::Flows, 7), (Attribute::PacketSize, 2)],
        memory_profiling: if adaptive {
            MemoryProfiling::Adaptive(AdaptiveConfig {
                quota,
                prune_threshold: 0.05,
                split_threshold: 0.05,
                per_split: 4,
                signal: SplitSignal::SoloAndContended(contention.heaviest()),
                order: SplitOrder::BreadthFirst,
                split: SplitShape::Orthants,
                seed,
            })
        } else {
            MemoryProfiling::Random {
                quota,
                per_traffic: 4,
                seed,
            }
        },
        slomo_samples: quota.div_ceil(3),
        gbr: GbrConfig::default(),
        accelerators: Vec::new(),
        accel_benches: Vec::new(),
        accel_mtbrs: Vec::new(),
        usage_threshold: 0.05,
        detection_memory: Vec::new(),
        detection_accel: Vec::new(),
    }
}
