//! The host as a profiling backend: a point's throughput follows its traffic profile (a flow
//! table NF slows by an order of magnitude once its flows outgrow the caches), a competitor's
//! achievements become the sample's features, and what the host cannot realize is refused.

use linerate_bpf::contents::MapSeed;
use linerate_colocate::profile::{
    AccelCompetitor, AccessPattern, Backend, ContentionSetting, MemoryCompetitor, TrafficProfile,
};
use linerate_colocate::sim::AccelKind;
use linerate_contend::driver::Timing;
use linerate_contend::host::{HostBackend, HostNf};
use linerate_kernel::usable_or_skip;
use std::path::Path;

fn flow_table() -> HostNf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/xdp_flow_huge.o");
    HostNf {
        name: "xdp_flow_huge".into(),
        object: linerate_bpf::read_object_file(&path).expect("example reads"),
        program: 0,
        seed: MapSeed::default(),
    }
}

fn traffic(flows: f64) -> TrafficProfile {
    TrafficProfile {
        flows,
        packet_size: 64.0,
        mtbr: 0.0,
    }
}

const QUICK: Timing = Timing {
    trials: 5,
    short: 1_000,
    long: 6_000,
};

#[test]
fn throughput_follows_the_flow_count() {
    let _alone = crate::timing_alone();
    if !usable_or_skip("contend host_backend") {
        return;
    }
    let mut host = HostBackend::new(QUICK).expect("two CPUs");
    let nf = flow_table();
    let few = host
        .profile_one(&nf, &ContentionSetting::solo(), &traffic(500.0))
        .expect("profiles");
    let many = host
        .profile_one(&nf, &ContentionSetting::solo(), &traffic(200_000.0))
        .expect("profiles");
    assert!(few.throughput > 2.0 * many.throughput, "{few:?} {many:?}");
    assert_eq!(few.features.bandwidth, 0.0);
    assert_eq!(host.samples_taken(), 2);
}

#[test]
fn a_competitor_becomes_the_features() {
    let _alone = crate::timing_alone();
    if !usable_or_skip("contend host_backend") {
        return;
    }
    let mut host = HostBackend::new(QUICK).expect("two CPUs");
    let setting = ContentionSetting::memory(MemoryCompetitor {
        working_set: (64 << 20) as f64,
        access_rate: 5e7,
        pattern: AccessPattern::Stream,
    });
    let sample = host
        .profile_one(&flow_table(), &setting, &traffic(1000.0))
        .expect("profiles");
    let f = sample.features;
    // It held its target rate (within sleep granularity) and says how much it moved.
    assert!((f.access_rate - 5e7).abs() < 0.25 * 5e7, "{f:?}");
    assert!((f.bandwidth - 64.0 * f.access_rate).abs() < 1e-6 * f.bandwidth);
    assert_eq!(f.working_set, (64 << 20) as f64);
    assert_eq!(f.occupancy, None);
    assert!(sample.throughput > 0.0);
    // The NF alone was timed beside it, trial by trial; a solo point has no such pair.
    let beside = sample
        .solo_beside
        .expect("a solo rate beside the contended one");
    assert!(beside > 0.0);
    let solo = host
        .profile_one(&flow_table(), &ContentionSetting::solo(), &traffic(1000.0))
        .expect("profiles");
    assert_eq!(solo.solo_beside, None);
}

#[test]
fn what_the_host_cannot_realize_is_refused() {
    if !usable_or_skip("contend host_backend") {
        return;
    }
    let mut host = HostBackend::new(QUICK).expect("two CPUs");
    let nf = flow_table();
    let regex = ContentionSetting {
        memory: None,
        accelerators: vec![AccelCompetitor {
            kind: AccelKind::Regex,
            queues: 1,
            request_time: 1e-6,
        }],
    };
    let e = host.profile_one(&nf, &regex, &traffic(10.0)).unwrap_err();
    assert!(e.to_string().contains("no accelerators"), "{e}");
    let e = host
        .profile_one(&nf, &ContentionSetting::solo(), &traffic(1e9))
        .unwrap_err();
    assert!(e.to_string().contains("flow count"), "{e}");
    let e = host
        .profile_one(
            &nf,
            &ContentionSetting::solo(),
            &TrafficProfile {
                packet_size: 9000.0,
                ..traffic(10.0)
            },
        )
        .unwrap_err();
    assert!(e.to_string().contains("packet size"), "{e}");
    assert_eq!(host.samples_taken(), 0);
}
