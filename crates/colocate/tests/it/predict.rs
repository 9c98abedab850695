//! Prediction and diagnosis on the simulated device (paper 004 §4.2, §7.3, §7.5.2): bundles
//! trained once per catalogue NF through `train_bundle`, then held-out co-locations of a random
//! target with two or three random competitors, every NF at its own random traffic profile, at
//! least one competitor using an accelerator. The ground truth is the noise-free device.
//!
//! Diagnosis: the true per-resource drop of the target is its throughput lost with only that
//! resource's contention, replayed by benchmarks at the competitors' co-run rates (mem-bench
//! with each competitor's working set and access rate; accelerator benchmarks offering each
//! competitor's request rate). The true bottleneck is clear when the largest true drop is at
//! least 2× the second and at least 1% of the solo rate; only targets using an accelerator
//! count (for the others memory is the only candidate).

use crate::common;

use common::{accel_replay, memory_replay};
use linerate_colocate::catalogue::{catalogue, sim_plan, traffic_space};
use linerate_colocate::memory::mape;
use linerate_colocate::predict::{predict, NfModel, Placed, Predictor, Resource};
use linerate_colocate::profile::{Attribute, TrafficProfile};
use linerate_colocate::sim::{Device, Nf, Testbed, Workload};
use linerate_colocate::sim_backend::{SimBackend, TrafficNf};
use linerate_colocate::train::train_bundle;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;

const QUOTA: usize = 800;

fn bundles(adaptive: bool, seed: u64) -> Vec<NfModel> {
    let mut backend = SimBackend::new(Testbed::new(
        Device::bluefield2_like(),
        Testbed::DEFAULT_NOISE,
        seed,
    ));
    catalogue()
        .iter()
        .enumerate()
        .map(|(index, nf)| {
            let plan = sim_plan(QUOTA, adaptive, seed + index as u64);
            let model = train_bundle(&mut backend, nf, &nf.name, &plan).unwrap();
            println!(
                "{:<12} {} samples, pattern {:?} (truth {:?}), accelerators (kind, queues, busy s, s per match/MB) {:?}, memory attributes {:?}",
                nf.name,
                model.samples_taken,
                model.pattern.map(|d| d.pattern),
                nf.pattern,
                model
                    .accelerators
                    .iter()
                    .map(|a| (a.kind, a.queues, a.busy_time.base, a.busy_time.per_match))
                    .collect::<Vec<_>>(),
                model.memory.attributes
            );
            model
        })
        .collect()
}

/// The target's true per-resource drops (share of solo) next to `competitors` at `rates`.
fn true_drops(
    device: &Device,
    target: &Nf,
    competitors: &[Nf],
    rates: &[f64],
) -> Vec<(Resource, f64)> {
    let alone = |others: Vec<Workload>| {
        let mut all = vec![Workload::Nf(target.clone())];
        all.extend(others);
        device.run(&all).unwrap()[0]
    };
    let solo = alone(Vec::new());
    let memory = memory_replay(competitors, rates);
    let mut drops = vec![(Resource::Memory, 1.0 - alone(memory) / solo)];
    for kind in target.accels.iter().map(|d| d.kind) {
        let benches = accel_replay(competitors, rates, kind);
        let drop = if benches.is_empty() {
            0.0
        } else {
            1.0 - alone(benches) / solo
        };
        drops.push((kind.into(), drop));
    }
    drops
}

/// The clear true bottleneck, if any.
fn clear_bottleneck(drops: &[(Resource, f64)]) -> Option<Resource> {
    let mut sorted = drops.to_vec();
    sorted.sort_by(|a, b| b.1.total_cmp(&a.1));
    let first = sorted.first()?;
    let second = sorted.get(1).map_or(0.0, |s| s.1.max(0.0));
    (first.1 >= 0.01 && first.1 >= 2.0 * second).then_some(first.0)
}

struct Case {
    target: usize,
    competitors: Vec<usize>,
    traffic: Vec<TrafficProfile>,
}

fn cases(count: usize, seed: u64, nfs: &[TrafficNf]) -> Vec<Case> {
    let mut rng = StdRng::seed_from_u64(seed);
    let space = traffic_space();
    let mut cases = Vec::new();
    while cases.len() < count {
        let target = rng.gen_range(0..nfs.len());
        let competitors: Vec<usize> = (0..rng.gen_range(2..=3))
            .map(|_| rng.gen_range(0..nfs.len()))
            .collect();
        if competitors.iter().all(|&c| nfs[c].accels.is_empty()) {
            continue;
        }
        let traffic = (0..=competitors.len())
            .map(|_| space.random(&mut rng))
            .collect();
        cases.push(Case {
            target,
            competitors,
            traffic,
        });
    }
    cases
}

struct Outcome {
    cases: usize,
    heavy: usize,
    mapes: BTreeMap<&'static str, f64>,
    clear: usize,
    right: usize,
}

/// Trains the catalogue's bundles and runs the held-out co-locations; prints the figures.
fn study(adaptive: bool) -> Outcome {
    let nfs = catalogue();
    let models = bundles(adaptive, 101);
    let device = Device::bluefield2_like();
    let mut pairs: BTreeMap<&str, Vec<(f64, f64)>> = BTreeMap::new();
    // Per target NF: (clear cases, Tomur correct, SLOMO-style correct).
    let mut diagnosis: BTreeMap<String, (usize, usize, usize)> = BTreeMap::new();
    let mut heavy = 0;
    let all = cases(150, 102, &nfs);
    for case in &all {
        let members: Vec<usize> = std::iter::once(case.target)
            .chain(case.competitors.iter().copied())
            .collect();
        let sim: Vec<Nf> = members
            .iter()
            .zip(&case.traffic)
            .map(|(&i, t)| nfs[i].at(t).unwrap())
            .collect();
        let workloads: Vec<Workload> = sim.iter().cloned().map(Workload::Nf).collect();
        let rates = device.run(&workloads).unwrap();
        let solo = device.run(&workloads[..1]).unwrap()[0];
        let actual = rates[0];
        if actual <= 0.9 * solo {
            heavy += 1;
        }
        let placed: Vec<Placed> = members
            .iter()
            .zip(&case.traffic)
            .map(|(&i, t)| Placed {
                model: &models[i],
                traffic: *t,
            })
            .collect();
        let mut named = BTreeMap::new();
        for predictor in Predictor::ALL {
            let p = predict(predictor, placed[0], &placed[1..]).unwrap();
            pairs
                .entry(predictor.name())
                .or_default()
                .push((p.predicted_pps, actual));
            named.insert(predictor, p.bottleneck);
        }
        if sim[0].accels.is_empty() {
            continue;
        }
        let truth = true_drops(&device, &sim[0], &sim[1..], &rates[1..]);
        if let Some(bottleneck) = clear_bottleneck(&truth) {
            let entry = diagnosis.entry(nfs[case.target].name.clone()).or_default();
            entry.0 += 1;
            entry.1 += usize::from(named[&Predictor::Tomur] == Some(bottleneck));
            entry.2 += usize::from(named[&Predictor::Slomo] == Some(bottleneck));
        }
    }
    println!(
        "{} profiling: {} held-out co-locations (2-3 competitors, an accelerator among them), {} with a true drop >= 10%",
        if adaptive { "adaptive" } else { "random" },
        all.len(),
        heavy
    );
    println!("{:<10} {:>8}", "predictor", "MAPE %");
    let mapes: BTreeMap<&'static str, f64> = pairs.iter().map(|(k, v)| (*k, mape(v))).collect();
    for (name, value) in &mapes {
        println!("{name:<10} {value:>8.2}");
    }
    println!(
        "{:<12} {:>6} {:>10} {:>10}",
        "target", "clear", "tomur %", "slomo %"
    );
    let (mut clear, mut right) = (0, 0);
    for (name, (cases, tomur, slomo)) in &diagnosis {
        println!(
            "{name:<12} {cases:>6} {:>10.1} {:>10.1}",
            100.0 * *tomur as f64 / *cases as f64,
            100.0 * *slomo as f64 / *cases as f64
        );
        clear += cases;
        right += tomur;
    }
    Outcome {
        cases: all.len(),
        heavy,
        mapes,
        clear,
        right,
    }
}

#[test]
fn tomur_beats_every_baseline_and_names_the_bottleneck() {
    let Outcome {
        cases,
        heavy,
        mapes,
        clear,
        right,
    } = study(false);
    assert!(heavy * 4 >= cases, "too few heavy cases: {heavy}");
    for other in ["solo-rate", "slomo", "sum", "min"] {
        assert!(mapes["tomur"] < mapes[other], "{mapes:?}");
    }
    assert!(mapes["tomur"] < 6.0, "{mapes:?}");
    assert!(clear >= 20, "only {clear} clear cases");
    assert!(right * 10 >= clear * 9, "diagnosis {right}/{clear}");
}

/// The same study with the memory model trained on Algorithm 1's samples (split into orthants:
/// the listing's diagonal halves gave 13.2% MAPE, orthants 9.9%, random profiles of the same
/// quota 4.2%: checking a region costs up to four points, and a split into eight regions
/// spends the quota on checks rather than contended samples).
#[test]
fn with_adaptive_profiling_tomur_still_beats_slomo_style_and_solo_rate() {
    let outcome = study(true);
    for other in ["solo-rate", "slomo"] {
        assert!(
            outcome.mapes["tomur"] < outcome.mapes[other],
            "{:?}",
            outcome.mapes
        );
    }
}

#[test]
fn bundle_round_trips_through_json_and_refuses_other_versions() {
    let nfs = catalogue();
    let mut backend = SimBackend::new(Testbed::new(Device::bluefield2_like(), 0.0, 7));
    let model = train_bundle(
        &mut backend,
        &nfs[2],
        "flowmonitor",
        &sim_plan(200, false, 7),
    )
    .unwrap();
    let text = model.to_json().unwrap();
    let restored = NfModel::from_json(&text).unwrap();
    let competitor = train_bundle(&mut backend, &nfs[3], "nids", &sim_plan(200, false, 8)).unwrap();
    let traffic = TrafficProfile::DEFAULT;
    let place = |m| Placed { model: m, traffic };
    let before = predict(Predictor::Tomur, place(&model), &[place(&competitor)]).unwrap();
    let after = predict(Predictor::Tomur, place(&restored), &[place(&competitor)]).unwrap();
    assert_eq!(before, after);
    assert!(
        before.drop > 0.05 && before.per_resource.contains_key(&Resource::Regex),
        "{before:?}"
    );
    let json = serde_json::to_value(&before).unwrap();
    for key in [
        "target",
        "competitors",
        "traffic",
        "solo_pps",
        "predicted_pps",
        "drop",
        "bottleneck",
        "per_resource",
    ] {
        assert!(json.get(key).is_some(), "{key} missing from {json}");
    }
    let future = text.replacen("\"version\":2", "\"version\":3", 1);
    assert_ne!(future, text);
    assert!(NfModel::from_json(&future).is_err());
}

/// Table 7's experiment on the simulated device: each accelerator-using NF next to a fixed
/// memory-heavy competitor (FlowStats at 60K flows) and a fixed competitor on its accelerator
/// (at the default profile), one traffic attribute of the target swept so that its bottleneck
/// moves: MTBR from 0 to 1100 matches/MB for the regex NFs (as in Table 7), the flow count from
/// 1K to 300K for IPComp, whose compression work does not depend on matches. A sweep point
/// counts when its true bottleneck is clear, here its drop at least 1.5× the other's (the
/// random co-locations above use 2×; along a sweep the two drops cross, and 2× would leave
/// too few points near the crossing).
#[test]
fn diagnosis_follows_the_bottleneck_across_a_traffic_sweep() {
    let nfs = catalogue();
    let models = bundles(false, 131);
    let device = Device::bluefield2_like();
    let index = |name: &str| nfs.iter().position(|nf| nf.name == name).unwrap();
    let memory_heavy = (
        index("flowstats"),
        TrafficProfile::DEFAULT.with(Attribute::Flows, 6e4),
    );
    println!(
        "{:<12} {:>6} {:>10} {:>10}  true bottlenecks",
        "target", "clear", "tomur %", "slomo %"
    );
    let (mut clear_all, mut right_all) = (0, 0);
    for (target, accel_competitor) in [
        ("flowmonitor", "nids"),
        ("nids", "flowmonitor"),
        ("ipcomp", "ipcomp"),
    ] {
        let members = [index(target), memory_heavy.0, index(accel_competitor)];
        let (mut clear, mut tomur, mut slomo) = (0, 0, 0);
        let mut seen = Vec::new();
        for step in 0..12 {
            let base = TrafficProfile::DEFAULT.with(Attribute::Flows, 2e4);
            let target_traffic = if target == "ipcomp" {
                base.with(Attribute::Flows, 1e3 * 300f64.powf(f64::from(step) / 11.0))
            } else {
                base.with(Attribute::Mtbr, 100.0 * f64::from(step))
            };
            let traffic = [target_traffic, memory_heavy.1, TrafficProfile::DEFAULT];
            let sim: Vec<Nf> = members
                .iter()
                .zip(&traffic)
                .map(|(&i, t)| nfs[i].at(t).unwrap())
                .collect();
            let workloads: Vec<Workload> = sim.iter().cloned().map(Workload::Nf).collect();
            let rates = device.run(&workloads).unwrap();
            let mut drops = true_drops(&device, &sim[0], &sim[1..], &rates[1..]);
            drops.sort_by(|a, b| b.1.total_cmp(&a.1));
            let (first, second) = (drops[0], drops.get(1).map_or(0.0, |d| d.1.max(0.0)));
            if first.1 < 0.01 || first.1 < 1.5 * second {
                continue;
            }
            let truth = first.0;
            seen.push(truth);
            let placed: Vec<Placed> = members
                .iter()
                .zip(&traffic)
                .map(|(&i, t)| Placed {
                    model: &models[i],
                    traffic: *t,
                })
                .collect();
            let named = |p: Predictor| predict(p, placed[0], &placed[1..]).unwrap().bottleneck;
            clear += 1;
            tomur += usize::from(named(Predictor::Tomur) == Some(truth));
            slomo += usize::from(named(Predictor::Slomo) == Some(truth));
        }
        seen.dedup();
        println!(
            "{target:<12} {clear:>6} {:>10.1} {:>10.1}  {seen:?}",
            100.0 * tomur as f64 / clear.max(1) as f64,
            100.0 * slomo as f64 / clear.max(1) as f64
        );
        clear_all += clear;
        right_all += tomur;
    }
    assert!(clear_all >= 12, "only {clear_all} clear sweep points");
    assert!(right_all * 10 >= clear_all * 9, "{right_all}/{clear_all}");
}
