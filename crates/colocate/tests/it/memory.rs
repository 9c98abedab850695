//! The memory-subsystem model on the simulated device (paper 004 §5.1.2, §7.4): trained on
//! random traffic profiles and contention, it must beat the SLOMO-style model (trained at the
//! default profile, rescaled by the solo throughput) and the solo rate on held-out points, many
//! of which lose at least 10% of their throughput.

use crate::common;

use common::traffic::{backend, contention_space, flowstats, held_out, nat, traffic_space};
use linerate_colocate::adaptive::random_profile;
use linerate_colocate::memory::{
    label, mape, solo_rate, GbrConfig, Labelled, MemoryModel, SlomoModel,
};
use linerate_colocate::profile::{Attribute, Backend, ContentionSetting, Sample, TrafficProfile};
use linerate_colocate::sim_backend::{SimBackend, TrafficNf};
use rand::rngs::StdRng;
use rand::SeedableRng;

const TRAINING: usize = 540;
const PER_TRAFFIC: usize = 8;

/// SLOMO's training set: the same number of samples, all at the default profile.
fn at_default(backend: &mut SimBackend, nf: &TrafficNf, seed: u64) -> Vec<Sample> {
    let mut rng = StdRng::seed_from_u64(seed);
    let contention = contention_space();
    let default = TrafficProfile::DEFAULT;
    let mut samples = Vec::new();
    while samples.len() < TRAINING {
        samples.push(
            backend
                .profile_one(nf, &ContentionSetting::solo(), &default)
                .unwrap(),
        );
        for _ in 0..PER_TRAFFIC {
            samples.push(
                backend
                    .profile_one(nf, &contention.random(&mut rng), &default)
                    .unwrap(),
            );
        }
    }
    samples
}

struct Figures {
    points: usize,
    heavy: usize,
    tomur: (f64, f64),
    slomo: (f64, f64),
    solo: (f64, f64),
}

fn errors(test: &[Labelled], predict: impl Fn(&Labelled) -> f64) -> (f64, f64) {
    let pairs: Vec<(f64, f64)> = test
        .iter()
        .map(|l| (predict(l), l.sample.throughput))
        .collect();
    let heavy: Vec<(f64, f64)> = test
        .iter()
        .zip(&pairs)
        .filter(|(l, _)| l.drop() >= 0.10)
        .map(|(_, p)| *p)
        .collect();
    (mape(&pairs), mape(&heavy))
}

fn study(nf: &TrafficNf, seed: u64) -> Figures {
    let mut bed = backend(seed);
    let config = GbrConfig::default();
    let training = random_profile(
        &mut bed,
        nf,
        &traffic_space(),
        &contention_space(),
        TRAINING,
        PER_TRAFFIC,
        seed + 1,
    )
    .unwrap();
    let tomur = MemoryModel::train(&label(&training), &Attribute::ALL, &config).unwrap();
    let slomo = SlomoModel::train(
        &label(&at_default(&mut bed, nf, seed + 2)),
        &TrafficProfile::DEFAULT,
        &config,
    )
    .unwrap();
    let test = held_out(&mut bed, nf, 300, seed + 3);
    let figures = Figures {
        points: test.len(),
        heavy: test.iter().filter(|l| l.drop() >= 0.10).count(),
        tomur: errors(&test, |l| {
            tomur.predict(&l.sample.features, &l.sample.traffic, l.solo)
        }),
        slomo: errors(&test, |l| slomo.predict(&l.sample.features, l.solo)),
        solo: errors(&test, |l| solo_rate(l.solo)),
    };
    println!(
        "{:<10} held-out {:>3}, drop >= 10%: {:>3} | MAPE all / drop>=10%: traffic-aware {:5.2} / {:5.2}, SLOMO-style {:5.2} / {:5.2}, solo rate {:5.2} / {:5.2}",
        nf.name,
        figures.points,
        figures.heavy,
        figures.tomur.0,
        figures.tomur.1,
        figures.slomo.0,
        figures.slomo.1,
        figures.solo.0,
        figures.solo.1
    );
    println!("{:<10} importance: {:?}", nf.name, tomur.importance());
    figures
}

#[test]
fn traffic_aware_model_beats_slomo_style_and_solo_rate_on_held_out_points() {
    for (nf, seed) in [(flowstats(), 11), (nat(), 23)] {
        let f = study(&nf, seed);
        assert!(f.heavy * 4 >= f.points, "too few heavy cases: {}", f.heavy);
        assert!(f.tomur.0 < f.slomo.0 && f.tomur.0 < f.solo.0, "{}", nf.name);
        assert!(f.tomur.1 < f.slomo.1 && f.tomur.1 < f.solo.1, "{}", nf.name);
    }
}
