//! The import backend: the shipped sample CSV reads, round-trips and answers the points it
//! holds; malformed CSV is refused with its line; and the sample is what the simulated device
//! measures (so it can be regenerated).

use crate::common;

use common::traffic::flowstats;
use common::traffic::nat;
use common::MB;
use linerate_colocate::counters::SoloCounters;
use linerate_colocate::import::{csv_row, profile_file, read_csv, ImportBackend, CSV_HEADER};
use linerate_colocate::predict::{predict, Placed, Predictor};
use linerate_colocate::profile::{
    AccessPattern, Backend, ContentionSetting, Features, MemoryCompetitor, Sample, TrafficProfile,
};
use linerate_colocate::sim::{Device, Testbed};
use linerate_colocate::sim_backend::SimBackend;
use linerate_colocate::train::train_profile;
use std::path::Path;

fn sample_path() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/colocate/sim-flowstats.csv")
}

/// The sample's points: the FlowStats-like and NAT-like NFs at six flow counts and two packet
/// sizes, alone (with their own counters) and next to six mem-bench settings, on the simulated
/// BlueField-2-like device with 1% noise (seed 7).
fn generate() -> String {
    let mut backend = SimBackend::new(Testbed::new(Device::bluefield2_like(), 0.01, 7));
    let mut text = String::from(
        "# A sample in linerate's profile CSV schema (version 1, crates/colocate/src/import.rs),\n\
         # written from linerate's simulated device, not measured on a real NIC:\n\
         # crates/colocate/tests/it/import.rs regenerates it.\n",
    );
    text += CSV_HEADER;
    text += "\n";
    let settings: Vec<ContentionSetting> = [
        (2.0, 5e7, AccessPattern::Chase),
        (8.0, 2e8, AccessPattern::Chase),
        (16.0, 1e8, AccessPattern::Stream),
        (32.0, 3e8, AccessPattern::Chase),
        (64.0, 5e8, AccessPattern::Stream),
        (128.0, 1.5e8, AccessPattern::Chase),
    ]
    .iter()
    .map(|&(ws, rate, pattern)| {
        ContentionSetting::memory(MemoryCompetitor {
            working_set: ws * MB,
            access_rate: rate,
            pattern,
        })
    })
    .collect();
    for nf in [flowstats(), nat()] {
        for flows in [1e3, 4e3, 16e3, 64e3, 256e3, 1e6] {
            for packet_size in [64.0, 1500.0] {
                let traffic = TrafficProfile {
                    flows,
                    packet_size,
                    mtbr: 0.0,
                };
                let (counters, throughput) = backend.nf_counters(&nf, &traffic).expect("simulates");
                let alone = Sample {
                    nf: nf.name.clone(),
                    traffic,
                    setting: ContentionSetting::solo(),
                    throughput,
                    features: counters.expect("the simulator has counters"),
                    solo_beside: None,
                };
                text += &csv_row(&alone);
                text += "\n";
                for setting in &settings {
                    let sample = backend
                        .profile_one(&nf, setting, &traffic)
                        .expect("simulates");
                    text += &csv_row(&sample);
                    text += "\n";
                }
            }
        }
    }
    text
}

#[test]
fn the_sample_is_what_the_simulated_device_measures() {
    let generated = generate();
    if std::env::var_os("LINERATE_REGENERATE").is_some() {
        std::fs::write(sample_path(), &generated).expect("writes the sample");
    }
    let shipped = std::fs::read_to_string(sample_path()).unwrap_or_default();
    assert!(
        shipped == generated,
        "examples/colocate/sim-flowstats.csv differs from what the simulator gives; \
         regenerate it: LINERATE_REGENERATE=1 cargo test -p linerate-colocate --test it import::"
    );
}

#[test]
fn the_sample_reads_round_trips_and_answers_its_points() {
    let text = std::fs::read_to_string(sample_path()).expect("the sample ships");
    let samples = read_csv("sim-flowstats.csv", &text).expect("reads");
    assert_eq!(samples.len(), 2 * 12 * 7);
    for s in &samples {
        let again = read_csv("row", &format!("{CSV_HEADER}\n{}\n", csv_row(s))).expect("reads");
        assert_eq!(&again[0], s);
    }
    // Contention costs the big table throughput: at a million flows, the 64 MB stream
    // competitor's point (the fifth setting) is slower than alone.
    let at_million: Vec<&Sample> = samples
        .iter()
        .filter(|s| s.nf == "flowstats" && s.traffic.flows == 1e6 && s.traffic.packet_size == 64.0)
        .collect();
    assert!(at_million[5].throughput < at_million[0].throughput);
    let mut backend = ImportBackend::new(samples.clone());
    let got = backend
        .profile_one(
            &"flowstats".to_string(),
            &samples[4].setting,
            &samples[4].traffic,
        )
        .expect("a point of the file");
    assert_eq!(got, samples[4]);
    // A solo row answers as a solo point: its counters are the NF's own, not competitors'.
    let alone = backend
        .profile_one(
            &"flowstats".to_string(),
            &samples[0].setting,
            &samples[0].traffic,
        )
        .expect("a point of the file");
    assert_eq!(alone.features, Features::default());
    assert!(samples[0].features.access_rate > 0.0);
    assert_eq!(backend.samples_taken(), 2);
    let missing = TrafficProfile {
        flows: 5.0,
        ..samples[0].traffic
    };
    let e = backend
        .profile_one(
            &"flowstats".to_string(),
            &ContentionSetting::solo(),
            &missing,
        )
        .unwrap_err();
    assert!(
        e.to_string()
            .starts_with("import backend: no sample of flowstats"),
        "{e}"
    );
}

#[test]
fn malformed_csv_is_refused_with_its_line() {
    let row = "f,1000,64,0,,,,,,,1000000,0,0,";
    let cases = [
        ("nf,flows\n", "t.csv:1: the header must be"),
        (
            &format!("# c\n{CSV_HEADER}\n{row}\nf,1\n") as &str,
            "t.csv:4: 2 cells",
        ),
        (
            &format!("{CSV_HEADER}\n{}\n", row.replace("1000,64", "x,64")),
            "t.csv:2: flows `x`",
        ),
        (
            &format!("{CSV_HEADER}\n{}\n", row.replace(",,,,,,,", ",8e6,,,,,,")),
            "t.csv:2: the memory competitor's three cells",
        ),
        (
            &format!(
                "{CSV_HEADER}\n{}\n",
                row.replace(",,,,,,,", ",8e6,1e8,zigzag,,,,")
            ),
            "t.csv:2: mem_pattern `zigzag`",
        ),
        (
            &format!(
                "{CSV_HEADER}\n{}\n",
                row.replace(",,,,,,,", ",,,,gpu,1,1e-6,")
            ),
            "t.csv:2: accel `gpu`",
        ),
        (
            &format!("{CSV_HEADER}\n{}\n", row.replace("1000000", "0")),
            "t.csv:2: throughput_pps must be positive",
        ),
        ("", "t.csv:1: no header line"),
    ];
    for (text, expected) in cases {
        let e = read_csv("t.csv", text).unwrap_err().to_string();
        assert!(e.starts_with(expected), "{e} (expected {expected})");
    }
}

/// Imported profiles train without a plan: the solo curve over the rows' grid with the NFs' own
/// counters, the memory model over the attributes that vary; a trained NAT-like NF then
/// predicts next to the FlowStats-like one within the simulator's truth's reach, and an NF
/// with no rows is refused naming the file's NFs.
#[test]
fn imported_profiles_train_and_predict() {
    let text = std::fs::read_to_string(sample_path()).expect("the sample ships");
    let samples = read_csv("sim-flowstats.csv", &text).expect("reads");
    let models: Vec<_> = ["flowstats", "nat"]
        .iter()
        .map(|nf| train_profile(&profile_file(nf, &samples).expect("rows"), None).expect("fits"))
        .collect();
    assert_eq!(models[0].backend, "import");
    assert_eq!(models[0].solo.axes.len(), 2, "flows and packet size vary");
    let traffic = TrafficProfile {
        flows: 256e3,
        packet_size: 64.0,
        mtbr: 0.0,
    };
    let target = Placed {
        model: &models[1],
        traffic,
    };
    let competitor = Placed {
        model: &models[0],
        traffic,
    };
    let predicted = predict(Predictor::Tomur, target, &[competitor]).expect("predicts");
    let solo = samples
        .iter()
        .find(|s| s.nf == "nat" && s.traffic == traffic && s.setting.is_solo())
        .expect("a solo row")
        .throughput;
    assert!(
        (predicted.solo_pps / solo - 1.0).abs() < 1e-9,
        "a grid point"
    );
    assert!(
        predicted.drop > 0.01 && predicted.drop < 0.9,
        "two big tables contend: {}",
        predicted.drop
    );
    let e = profile_file("nids", &samples).unwrap_err().to_string();
    assert!(
        e.contains("no rows of nids (NFs in the file: flowstats, nat)"),
        "{e}"
    );
}
