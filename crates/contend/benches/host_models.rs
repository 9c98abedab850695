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
use linerate_colocate::memory::{label, mape, GbrConfig, MemoryModel, SlomoModel};
use linerate_colocate::profile::{
    AccessPattern, Attribute, Backend, ContentionSetting, MemoryCompetitor, Sample, TrafficProfile,
};
use linerate_colocate::record::ProfileFile;
use linerate_contend::driver::Timing;
use linerate_contend::host::{HostBackend, HostNf};
use linerate_contend::pin::available_cpus;
use linerate_kernel::usable_or_skip;

const MIB: f64 = 1024.0 * 1024.0;

/// Every profile alone, then every setting over every profile (the competitor is started once
/// per setting).
fn profile(
    host: &mut HostBackend,
    nf: &HostNf,
    profiles: &[TrafficProfile],
    settings: &[ContentionSetting],
    started: std::time::Instant,
) -> Vec<Sample> {
    let mut samples = Vec::new();
    let all = std::iter::once(ContentionSetting::solo()).chain(settings.iter().cloned());
    for (i, setting) in all.enumerate() {
        eprint!(
            "\rprofiling setting {}/{} over {} traffic profiles, {:.0} s",
            i + 1,
            settings.len() + 1,
            profiles.len(),
            started.elapsed().as_secs_f64()
        );
        let _ = std::io::stderr().flush();
        for traffic in profiles {
            samples.push(
                host.profile_one(nf, &setting, traffic)
                    .expect("profile point"),
            );
        }
    }
    eprintln!();
    samples
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
        trials: 7,
        short: 1_000,
        long: 6_000,
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
    let pairs = |predict: &dyn Fn(&linerate_colocate::memory::Labelled) -> f64| -> Vec<(f64, f64)> {
        test.iter()
            .map(|l| (predict(l), l.sample.throughput))
            .collect()
    };
    let tomur = mape(&pairs(&|l| {
        model.predict(&l.sample.features, &l.sample.traffic, l.solo)
    }));
    let slomo_mape = mape(&pairs(&|l| slomo.predict(&l.sample.features, l.solo)));
    let solo_mape = mape(&pairs(&|l| l.solo));
    let heavy = test.iter().filter(|l| l.drop() >= 0.10).count();
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
    println!("{:<28} {:>8}", "predictor", "MAPE");
    println!("{:<28} {:>7.2}%", "traffic-aware GBR (Tomur)", tomur);
    println!(
        "{:<28} {:>7.2}%",
        format!("SLOMO-style ({:.0} flows)", reference.flows),
        slomo_mape
    );
    println!("{:<28} {:>7.2}%", "solo rate", solo_mape);
    println!("\nfeature importance (Tomur):");
    for (name, share) in model.importance() {
        println!("  {name:<14} {share:.3}");
    }
    println!("\nsolo ns per packet by profile:");
    for l in labelled.iter().filter(|l| l.sample.setting.is_solo()) {
        println!(
            "  {:>9.0} flows {:>5} B  {:>7.1} ns",
            l.sample.traffic.flows,
            l.sample.traffic.packet_size,
            1e9 / l.sample.throughput
        );
    }
}
