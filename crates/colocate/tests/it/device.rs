//! The simulated SoC SmartNIC on scenarios whose outcome can be worked out by hand: solo
//! throughputs from the stage timings, the cache and bandwidth models' effects, refusals, and
//! the measurement noise.

use crate::common;

use common::{MB, US};
use linerate_colocate::sim::{
    AccelBench, AccelDemand, AccelKind, Device, MemBench, Nf, Testbed, Workload,
};
use linerate_colocate::{ColocateError, Pattern, ServiceTime};

fn nf(pattern: Pattern) -> Nf {
    Nf {
        name: "nf".to_string(),
        cores: 2,
        compute_time: 0.5 * US,
        accesses_per_packet: 20.0,
        working_set: 1.0 * MB,
        accels: vec![AccelDemand {
            kind: AccelKind::Regex,
            queues: 2,
            requests_per_packet: 1.0,
            work: ServiceTime {
                base: 0.2 * US,
                per_match: 0.5e-9,
            },
            mtbr: 400.0,
        }],
        pattern,
        offered_rate: None,
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs())
}

#[test]
fn solo_throughput_follows_the_stage_timings() {
    let device = Device::bluefield2_like();
    let hit = device.cache.hit_time;
    // The working set fits, so every access hits.
    let core_time = 0.5 * US + 20.0 * hit;
    let request_time = 0.2 * US + 0.5e-9 * 400.0;
    let pipeline = device.run(&[Workload::Nf(nf(Pattern::Pipeline))]).unwrap()[0];
    assert!(close(pipeline, (2.0 / core_time).min(1.0 / request_time)));
    // Run to completion: each core waits one scheduler round (two queues) per packet.
    let rtc = device
        .run(&[Workload::Nf(nf(Pattern::RunToCompletion))])
        .unwrap()[0];
    assert!(close(rtc, 2.0 / (core_time + 2.0 * request_time)));
}

#[test]
fn memory_contention_grows_with_the_competitors_rate_and_working_set() {
    let device = Device::bluefield2_like();
    // Run to completion, so that every stage's slowdown shows in the throughput.
    let target = Workload::Nf(nf(Pattern::RunToCompletion));
    let solo = device.run(std::slice::from_ref(&target)).unwrap()[0];
    let rate_with = |working_set: f64, access_rate: f64| {
        let bench = Workload::MemBench(MemBench {
            working_set,
            access_rate,
        });
        device.run(&[target.clone(), bench]).unwrap()[0]
    };
    // Both working sets fit in the 6 MB cache: no contention at any rate.
    assert!(close(rate_with(4.0 * MB, 200e6), solo));
    // Past the cache size, throughput falls as the competitor's rate and working set grow
    // (Appendix B, Figure 9's shape).
    let mut last = solo;
    for access_rate in [20e6, 60e6, 120e6, 200e6] {
        let rate = rate_with(16.0 * MB, access_rate);
        assert!(rate < last, "{access_rate}: {rate} !< {last}");
        last = rate;
    }
    assert!(rate_with(32.0 * MB, 120e6) < rate_with(8.0 * MB, 120e6));
}

#[test]
fn regex_bench_takes_a_round_robin_share() {
    let device = Device::bluefield2_like();
    // An accelerator-bound pipeline: a backlogged one-queue bench of request time t_c leaves
    // the NF n/(n·t + t_c) requests per second (Eq. 2), and takes 1/(n·t + t_c) itself.
    let mut target = nf(Pattern::Pipeline);
    target.compute_time = 0.01 * US;
    target.accesses_per_packet = 0.0;
    let t = 0.2 * US + 0.5e-9 * 400.0;
    let bench = AccelBench::backlogged(AccelKind::Regex, 1, 3.0 * US);
    let rates = device
        .run(&[Workload::Nf(target), Workload::AccelBench(bench)])
        .unwrap();
    let round = 2.0 * t + 3.0 * US;
    assert!(close(rates[0], 2.0 / round));
    assert!(close(rates[1], 1.0 / round));
}

#[test]
fn a_workload_set_larger_than_the_device_is_refused() {
    let device = Device::bluefield2_like();
    let many: Vec<Workload> = (0..9)
        .map(|_| Workload::Nf(nf(Pattern::Pipeline)))
        .collect();
    assert!(matches!(
        device.run(&many),
        Err(ColocateError::Placement { .. })
    ));
    let mut no_compression = device.clone();
    no_compression
        .accelerators
        .retain(|a| a.kind != AccelKind::Compression);
    let mut user = nf(Pattern::Pipeline);
    user.accels[0].kind = AccelKind::Compression;
    assert!(matches!(
        no_compression.run(&[Workload::Nf(user)]),
        Err(ColocateError::Placement { .. })
    ));
    let mut broken = nf(Pattern::Pipeline);
    broken.compute_time = f64::NAN;
    assert!(matches!(
        device.run(&[Workload::Nf(broken)]),
        Err(ColocateError::Invalid { .. })
    ));
}

#[test]
fn offered_rate_caps_an_nf_and_frees_the_accelerator() {
    let device = Device::bluefield2_like();
    let bench = Workload::AccelBench(AccelBench::backlogged(AccelKind::Regex, 1, 1.0 * US));
    let mut target = nf(Pattern::Pipeline);
    let full = device
        .run(&[Workload::Nf(target.clone()), bench.clone()])
        .unwrap();
    target.offered_rate = Some(0.3 * full[0]);
    let capped = device.run(&[Workload::Nf(target), bench]).unwrap();
    assert!(close(capped[0], 0.3 * full[0]));
    assert!(capped[1] > full[1] * 1.1, "{capped:?} vs {full:?}");
}

#[test]
fn measurement_noise_is_seeded_and_about_its_nominal_size() {
    let device = Device::bluefield2_like();
    let scenario = [Workload::Nf(nf(Pattern::RunToCompletion))];
    let exact = device.run(&scenario).unwrap()[0];
    let sample = |seed: u64| -> Vec<f64> {
        let mut bed = Testbed::new(device.clone(), Testbed::DEFAULT_NOISE, seed);
        (0..2000)
            .map(|_| bed.measure(&scenario).unwrap()[0] / exact - 1.0)
            .collect()
    };
    let first = sample(5);
    assert_eq!(first, sample(5));
    assert_ne!(first, sample(6));
    let mean = first.iter().sum::<f64>() / first.len() as f64;
    let sd = (first.iter().map(|e| (e - mean).powi(2)).sum::<f64>() / first.len() as f64).sqrt();
    assert!(mean.abs() < 0.001, "mean relative error {mean}");
    assert!((sd - 0.01).abs() < 0.001, "relative sd {sd}");
    let mut quiet = Testbed::new(device, 0.0, 5);
    assert_eq!(quiet.measure(&scenario).unwrap()[0], exact);
}
