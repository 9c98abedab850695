//! bench/colocate, host part: Tomur's traffic-aware memory model on real co-location here.
//!
//! `xdp_flow_huge` (a per-flow hash table) is profiled on this host over a grid of traffic
//! profiles (flow counts × packet sizes) and memory-competitor settings (working set × rate ×
//! pattern, on the other core), every profile also alone. A fixed 30% of the contended points
//! is held out; the traffic-aware GBR (`linerate_colocate::memory::MemoryModel`) is trained on
//! the rest and compared on the held-out points with the SLOMO-style model (trained at one
//! reference profile) and the solo rate, in the same run. Printed: MAPE of each, and how many
//! held-out points lost at least 10% (so that "no contention" cannot pass).

use std::io::Write;
use std::path::Path;

use linerate_bpf::contents::MapSeed;
use linerate_colocate::memory::{
    label, mape, GbrConfig, Labelled, MemoryModel, SlomoModel, SoloMeans,
};
use linerate_colocate::profile::{
    AccessPattern, Attribute, Backend, ContentionSetting, MemoryCompetitor, Sample, TrafficProfile,
};
use linerate_colocate::record::ProfileFile;
use linerate_contend::driver::Timing;
use linerate_contend::host::{HostBackend, HostNf};
use linerate_contend::pin::available_cpus;
use linerate_kernel::usable_or_skip;

const MIB: f64 = 1024.0 * 1024.0;

/// How many settings are profiled between two solo passes over every profile: the solo rate
/// labels every point of its profile, so it is measured again all along and averaged (a slow
/// spell of this shared machine during a single solo pass biased a whole profile).
const SOLO_EVERY: usize = 6;

/// Every profile alone, then the settings over every profile (the competitor is started once
/// per setting), with every profile alone again after each [`SOLO_EVERY`] settings.
fn profile(
    host: &mut HostBackend,
    nf: &HostNf,
    profiles: &[TrafficProfile],
    settings: &[ContentionSetting],
    started: std::time::Instant,
) -> Vec<Sample> {
    let solo = ContentionSetting::solo();
    let mut order = vec![&solo];
    for (i, setting) in settings.iter().enumerate() {
        order.push(setting);
        if (i + 1) % SOLO_EVERY == 0 || i + 1 == settings.len() {
            order.push(&solo);
        }
    }
    let mut samples = Vec::new();
    for (i, setting) in order.iter().enumerate() {
        eprint!(
            "\rprofiling pass {}/{} over {} traffic profiles, {:.0} s",
            i + 1,
            order.len(),
            profiles.len(),
            started.elapsed().as_secs_f64()
        );
        let _ = std::io::stderr().flush();
        for traffic in profiles {
            samples.push(
                host.profile_one(nf, setting, traffic)
                    .expect("profile point"),
            );
        }
    }
    eprintln!();
    samples
}

/// The held-out points measured once more, a setting at a time: how far a second measurement
/// of the same point lands from the first is the floor under any model's error.
fn remeasure(host: &mut HostBackend, nf: &HostNf, test: &[Labelled]) -> Vec<Sample> {
    let mut order: Vec<&Labelled> = test.iter().collect();
    order.sort_by_key(|l| settings_key(&l.sample.setting));
    let mut again = Vec::with_capacity(test.len());
    for (done, l) in order.iter().enumerate() {
        eprint!(
            "\rmeasuring the held-out points again: {}/{}",
            done + 1,
            test.len()
        );
        let _ = std::io::stderr().flush();
        let s = &l.sample;
        again.push(
            host.profile_one(nf, &s.setting, &s.traffic)
                .expect("profile point"),
        );
    }
    eprintln!();
    again
}

/// Which held-out point a second measurement repeats (same profile and setting).
fn second_index(test: &[Labelled], again: &Labelled) -> usize {
    test.iter()
        .position(|l| {
            l.sample.traffic == again.sample.traffic && l.sample.setting == again.sample.setting
        })
        .expect("a second measurement repeats a held-out point")
}

/// Orders settings so that points of one competitor are measured together.
fn settings_key(setting: &ContentionSetting) -> Vec<u64> {
    setting
        .memory
        .map(|m| {
            vec![
                m.working_set.to_bits(),
                m.access_rate.to_bits(),
                m.pattern as u64,
            ]
        })
        .unwrap_or_default()
}

fn main() {
    if !usable_or_skip("bench/colocate") {
        return;
    }
    if available_cpus() < 2 {
        println!("bench/colocate: needs two CPUs, this machine offers one");
        return;
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/xdp_flow_huge.o");
    let nf = HostNf {
        name: "xdp_flow_huge".into(),
        object: linerate_bpf::read_object_file(&path).expect("example reads"),
        program: 0,
        seed: MapSeed::default(),
    };
    let timing = Timing {
        trials: 9,
        short: 2_000,
        long: 20_000,
    };
    let mut host = HostBackend::new(timing).expect("two CPUs");
    let profiles: Vec<TrafficProfile> = [1e3, 4e3, 16e3, 30e3, 64e3, 256e3, 1e6]
        .iter()
        .flat_map(|&flows| {
            [64.0, 512.0].map(|packet_size| TrafficProfile {
                flows,
                packet_size,
                mtbr: 0.0,
            })
        })
        .collect();
    let mut settings = Vec::new();
    for working_set in [2.0, 16.0, 128.0, 1024.0] {
        for rate in [1e7, 1e8, 1e10] {
            for pattern in [AccessPattern::Stream, AccessPattern::Chase] {
                settings.push(ContentionSetting::memory(MemoryCompetitor {
                    working_set: working_set * MIB,
                    access_rate: rate,
                    pattern,
                }));
            }
        }
    }
    let started = std::time::Instant::now();
    let saved =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/colocate-host-profile.json");
    // BENCH_REUSE_PROFILE=1 trains on the profile the last run saved instead of measuring.
    let reuse = std::env::var_os("BENCH_REUSE_PROFILE").is_some();
    let samples: Vec<Sample> = match std::fs::read_to_string(&saved) {
        Ok(text) if reuse => ProfileFile::from_json(&text)
            .expect("saved profile")
            .samples(),
        _ => {
            let samples = profile(&mut host, &nf, &profiles, &settings, started);
            let file = ProfileFile::from_samples("host", &nf.name, samples.clone());
            if let Err(e) = std::fs::write(&saved, file.to_json().expect("serialises")) {
                println!("cannot save the profile to {}: {e}", saved.display());
            }
            samples
        }
    };
    let labelled = label(&samples);
    // Held out: a fixed 30% of the contended points (index i with 9i mod 10 below 3), spread
    // over every profile and setting.
    let (mut train, mut test) = (Vec::new(), Vec::new());
    for (i, l) in labelled.iter().enumerate() {
        if !l.sample.setting.is_solo() && (i * 9) % 10 < 3 {
            test.push(l.clone());
        } else {
            train.push(l.clone());
        }
    }
    let config = GbrConfig::default();
    let model = MemoryModel::train(&train, &[Attribute::Flows, Attribute::PacketSize], &config)
        .expect("trains");
    let reference = profiles[4];
    let slomo = SlomoModel::train(&train, &reference, &config).expect("trains");
    // Every predictor from two solo rates: the one measured beside the point (the drift of
    // this shared machine cancelled, what the paper's devices give) and the profile's mean solo
    // rate (a prediction made from the profile alone, the drift left in).
    let means = SoloMeans::of(&samples);
    let beside = |l: &Labelled| l.solo;
    let mean = |l: &Labelled| means.get(&l.sample.traffic).unwrap_or(l.solo);
    type Predictor<'a> = Box<dyn Fn(&Labelled, f64) -> f64 + 'a>;
    let predictors: [(String, Predictor); 3] = [
        (
            "traffic-aware GBR (Tomur)".into(),
            Box::new(|l, solo| model.predict(&l.sample.features, &l.sample.traffic, solo)),
        ),
        (
            format!("SLOMO-style ({:.0} flows)", reference.flows),
            Box::new(|l, solo| slomo.predict(&l.sample.features, solo)),
        ),
        ("solo rate".into(), Box::new(|_, solo| solo)),
    ];
    let heavy = test.iter().filter(|l| l.drop() >= 0.10).count();
    let again = remeasure(&mut host, &nf, &test);
    // The held-out points as measured the second time, with their own solo beside.
    let second: Vec<Labelled> = label(&again)
        .into_iter()
        .filter(|l| !l.sample.setting.is_solo())
        .collect();
    let error = |points: &[Labelled], predict: &dyn Fn(&Labelled) -> f64| -> f64 {
        let pairs: Vec<(f64, f64)> = points
            .iter()
            .map(|l| (predict(l), l.sample.throughput))
            .collect();
        mape(&pairs)
    };
    println!(
        "host profiling: {} points ({} profiles x {} settings + solo) in {:.0} s",
        samples.len(),
        profiles.len(),
        settings.len(),
        started.elapsed().as_secs_f64()
    );
    println!(
        "held out: {} points, {heavy} with a measured drop of at least 10%\n",
        test.len()
    );
    println!(
        "{:<28} {:>14} {:>16} {:>18}",
        "MAPE", "solo beside", "profile's solo", "2nd measurement"
    );
    for (name, predict) in &predictors {
        println!(
            "{name:<28} {:>13.2}% {:>15.2}% {:>17.2}%",
            error(&test, &|l| predict(l, beside(l))),
            error(&test, &|l| predict(l, mean(l))),
            error(&second, &|l| predict(l, beside(l))),
        );
    }
    // The first measurement's drop applied to the second's solo rate, and the first
    // measurement as it stands: how far apart two measurements of one point land.
    let floor_drop = error(&second, &|l| {
        let first = &test[second_index(&test, l)];
        l.solo * first.sample.throughput / first.solo
    });
    let floor_raw = error(&second, &|l| test[second_index(&test, l)].sample.throughput);
    println!(
        "{:<28} {:>50}",
        "the 1st measurement itself",
        format!("{floor_drop:.2}% (its drop), {floor_raw:.2}% (as measured)")
    );
    println!("\nfeature importance (Tomur):");
    for (name, share) in model.importance() {
        println!("  {name:<14} {share:.3}");
    }
    println!("\nsolo ns per packet by profile, each solo pass in order:");
    for traffic in &profiles {
        let passes: Vec<String> = samples
            .iter()
            .filter(|s| s.setting.is_solo() && s.traffic == *traffic)
            .map(|s| format!("{:.1}", 1e9 / s.throughput))
            .collect();
        println!(
            "  {:>9.0} flows {:>5} B  {}",
            traffic.flows,
            traffic.packet_size,
            passes.join(" ")
        );
    }
}
