//! Composition by execution pattern (paper 004 §4.2, Eqs. 3, 4, 7) against the simulated device,
//! whose throughputs emerge from stage timings: the pattern of random NFs is detected from
//! benchmark co-runs alone, and composing by the detected pattern beats the sum and min
//! compositions of §2.2 over random co-locations.

use crate::common;

use common::{accel_replay, benchmark_co_runs, memory_replay, random_nf, solo, with};
use linerate_colocate::compose::{
    compose, detect_pattern, min_composition, sum_composition, Detection,
};
use linerate_colocate::memory::mape;
use linerate_colocate::sim::{Device, MemBench, Nf, Testbed, Workload};
use linerate_colocate::Pattern;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn detect(bed: &mut Testbed, nf: &Nf) -> Detection {
    let solo = solo(bed, nf);
    let runs = benchmark_co_runs(bed, nf);
    detect_pattern(solo, &runs).unwrap()
}

#[test]
fn pattern_is_detected_for_random_hidden_nfs() {
    let mut bed = Testbed::new(Device::bluefield2_like(), Testbed::DEFAULT_NOISE, 61);
    let mut rng = StdRng::seed_from_u64(62);
    let total = 120;
    let mut correct = 0;
    let mut misses = Vec::new();
    for case in 0..total {
        let nf = random_nf(&mut rng, &format!("nf{case}"));
        let detection = detect(&mut bed, &nf);
        if detection.pattern == nf.pattern {
            correct += 1;
        } else {
            misses.push((case, nf.pattern, detection));
        }
    }
    println!("pattern detection: {correct}/{total} correct");
    for (case, truth, detection) in &misses {
        println!("  nf{case}: {truth:?} detected as {detection:?}");
    }
    assert!(
        f64::from(correct) >= 0.95 * f64::from(total),
        "{correct}/{total} detected correctly"
    );
}

/// The per-resource drops of `target` next to `competitors`: each competitor's contention on one
/// resource, as measured in the co-location, replayed by benchmarks with nothing else contended
/// (what Tomur's per-resource models are trained to predict from contention levels, §4.1).
/// Returns the drops for memory and for each accelerator the target uses.
fn per_resource_drops(bed: &mut Testbed, target: &Nf, competitors: &[Nf], solo: f64) -> Vec<f64> {
    let mut all = vec![Workload::Nf(target.clone())];
    all.extend(competitors.iter().cloned().map(Workload::Nf));
    let exact = bed.device.run(&all).unwrap();
    let rates = &exact[1..];
    let memory = memory_replay(competitors, rates);
    let mut drops = vec![(solo - with(bed, target, &memory)).max(0.0)];
    for kind in target.accels.iter().map(|d| d.kind) {
        let benches = accel_replay(competitors, rates, kind);
        let drop = if benches.is_empty() {
            0.0
        } else {
            (solo - with(bed, target, &benches)).max(0.0)
        };
        drops.push(drop);
    }
    drops
}

/// The MAPEs of the three compositions over one study.
struct Mapes {
    detected: f64,
    sum: f64,
    min: f64,
}

/// 100 random co-locations of a random target with one to three random competitors. With
/// `load`, each competitor is offered that fraction (drawn from the range) of its solo rate
/// instead of saturating traffic. Prints the MAPEs, overall and by the target's true pattern.
fn composition_study(seed: u64, load: Option<std::ops::Range<f64>>, title: &str) -> Mapes {
    let mut bed = Testbed::new(Device::bluefield2_like(), Testbed::DEFAULT_NOISE, seed);
    let mut rng = StdRng::seed_from_u64(seed + 1);
    // Per true pattern (0: pipeline, 1: run to completion) and composition (detected pattern,
    // sum, min): (predicted, measured) pairs; index 2 of the first axis holds all targets.
    let mut pairs: [[Vec<(f64, f64)>; 3]; 3] = Default::default();
    let mut by_true_pattern = Vec::new();
    let mut drops_seen = Vec::new();
    for case in 0..100 {
        let target = random_nf(&mut rng, &format!("target{case}"));
        let mut competitors: Vec<Nf> = (0..rng.gen_range(1..=3))
            .map(|k| random_nf(&mut rng, &format!("competitor{case}.{k}")))
            .collect();
        if let Some(load) = &load {
            for competitor in &mut competitors {
                let alone = bed.device.run(&[Workload::Nf(competitor.clone())]).unwrap()[0];
                competitor.offered_rate = Some(alone * rng.gen_range(load.clone()));
            }
        }
        let detection = detect(&mut bed, &target);
        let solo = solo(&mut bed, &target);
        let others: Vec<Workload> = competitors.iter().cloned().map(Workload::Nf).collect();
        let actual = with(&mut bed, &target, &others);
        let drops = per_resource_drops(&mut bed, &target, &competitors, solo);
        let predictions = [
            compose(detection.pattern, solo, &drops).unwrap(),
            sum_composition(solo, &drops).unwrap(),
            min_composition(solo, &drops).unwrap(),
        ];
        let group = usize::from(target.pattern == Pattern::RunToCompletion);
        for (slot, prediction) in predictions.iter().enumerate() {
            pairs[group][slot].push((*prediction, actual));
            pairs[2][slot].push((*prediction, actual));
        }
        by_true_pattern.push((compose(target.pattern, solo, &drops).unwrap(), actual));
        drops_seen.push(1.0 - actual / solo);
    }
    let all = &pairs[2];
    let mapes = Mapes {
        detected: mape(&all[0]),
        sum: mape(&all[1]),
        min: mape(&all[2]),
    };
    drops_seen.sort_by(f64::total_cmp);
    println!(
        "{title}: composition MAPE over {} co-locations: detected pattern {:.2}%, \
         true pattern {:.2}%, sum {:.2}%, min {:.2}%",
        all[0].len(),
        mapes.detected,
        mape(&by_true_pattern),
        mapes.sum,
        mapes.min
    );
    println!(
        "  end-to-end drop: median {:.1}%, 90th percentile {:.1}%, max {:.1}%",
        100.0 * drops_seen[drops_seen.len() / 2],
        100.0 * drops_seen[drops_seen.len() * 9 / 10],
        100.0 * drops_seen[drops_seen.len() - 1]
    );
    for (group, name) in ["pipeline", "run to completion"].iter().enumerate() {
        let [p, s, m] = &pairs[group];
        println!(
            "  {name} targets ({}): detected pattern {:.2}%, sum {:.2}%, min {:.2}%",
            p.len(),
            mape(p),
            mape(s),
            mape(m)
        );
    }
    mapes
}

/// Composition by the detected pattern has a lower MAPE than sum and than min composition.
fn assert_detected_beats_sum_and_min(m: &Mapes) {
    assert!(
        m.detected < m.sum,
        "detected {:.2}% vs sum {:.2}%",
        m.detected,
        m.sum
    );
    assert!(
        m.detected < m.min,
        "detected {:.2}% vs min {:.2}%",
        m.detected,
        m.min
    );
}

#[test]
fn composition_by_detected_pattern_beats_sum_and_min() {
    let m = composition_study(71, None, "saturated competitors");
    assert_detected_beats_sum_and_min(&m);
}

#[test]
fn composition_by_detected_pattern_beats_sum_and_min_under_lighter_load() {
    let m = composition_study(
        91,
        Some(0.2..0.6),
        "competitors at 20-60% of their solo rate",
    );
    assert_detected_beats_sum_and_min(&m);
}

#[test]
fn with_one_resource_the_device_leaves_the_patterns_indistinguishable() {
    // A sanity check of the device, not of the equations: an NF without accelerators is slowed
    // only through memory, and its two patterns give the same throughput.
    let mut rng = StdRng::seed_from_u64(81);
    let device = Device::bluefield2_like();
    let mut nf = random_nf(&mut rng, "memory-only");
    nf.accels.clear();
    let bench = Workload::MemBench(MemBench {
        working_set: 16.0 * common::MB,
        access_rate: 120e6,
    });
    let mut rates = Vec::new();
    for pattern in Pattern::ALL {
        nf.pattern = pattern;
        rates.push(
            device
                .run(&[Workload::Nf(nf.clone()), bench.clone()])
                .unwrap()[0],
        );
    }
    let solo = device.run(&[Workload::Nf(nf.clone())]).unwrap()[0];
    assert!((rates[0] - rates[1]).abs() < 1e-9 * rates[0]);
    assert!(
        rates[0] < 0.9 * solo,
        "mem-bench should cost over 10%: {rates:?} vs {solo}"
    );
}
