//! The import backend: the shipped sample CSV reads, round-trips and answers the points it
//! holds; malformed CSV is refused with its line; and the sample is what the simulated device
//! measures (so it can be regenerated).

mod common;

use common::traffic::flowstats;
use common::MB;
use linerate_colocate::import::{csv_row, read_csv, ImportBackend, CSV_HEADER};
use linerate_colocate::profile::{
    AccessPattern, Backend, ContentionSetting, MemoryCompetitor, TrafficProfile,
};
use linerate_colocate::sim::{Device, Testbed};
use linerate_colocate::sim_backend::SimBackend;
use std::path::Path;

fn sample_path() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/colocate/sim-flowstats.csv")
}

/// The sample's points: FlowStats-like at three flow counts, alone and next to two mem-bench
/// settings, on the simulated BlueField-2-like device with 1% noise (seed 7).
fn generate() -> String {
    let mut backend = SimBackend::new(Testbed::new(Device::bluefield2_like(), 0.01, 7));
    let nf = flowstats();
    let mut text = String::from(
        "# A sample in linerate's profile CSV schema (version 1, crates/colocate/src/import.rs),\n\
         # written from linerate's simulated device, not measured on a real NIC:\n\
         # crates/colocate/tests/import.rs regenerates it.\n",
    );
    text += CSV_HEADER;
    text += "\n";
    let settings = [
        ContentionSetting::solo(),
        ContentionSetting::memory(MemoryCompetitor {
            working_set: 8.0 * MB,
            access_rate: 2e8,
            pattern: AccessPattern::Chase,
        }),
        ContentionSetting::memory(MemoryCompetitor {
            working_set: 64.0 * MB,
            access_rate: 5e8,
            pattern: AccessPattern::Stream,
        }),
    ];
    for flows in [1e3, 16e3, 256e3] {
        let traffic = TrafficProfile {
            flows,
            packet_size: 1500.0,
            mtbr: 0.0,
        };
        for setting in &settings {
            let sample = backend
                .profile_one(&nf, setting, &traffic)
                .expect("simulates");
            text += &csv_row(&sample);
            text += "\n";
        }
    }
    text
}

#[test]
fn the_sample_is_what_the_simulated_device_measures() {
    let generated = generate();
    let shipped = std::fs::read_to_string(sample_path()).unwrap_or_default();
    assert!(
        shipped == generated,
        "examples/colocate/sim-flowstats.csv differs from what the simulator gives; \
         regenerate it with this text:\n{generated}"
    );
}

#[test]
fn the_sample_reads_round_trips_and_answers_its_points() {
    let text = std::fs::read_to_string(sample_path()).expect("the sample ships");
    let samples = read_csv("sim-flowstats.csv", &text).expect("reads");
    assert_eq!(samples.len(), 9);
    for s in &samples {
        let again = read_csv("row", &format!("{CSV_HEADER}\n{}\n", csv_row(s))).expect("reads");
        assert_eq!(&again[0], s);
    }
    // Contention costs the big table throughput: the stream competitor's point is slower.
    let at = |i: usize| samples[i].throughput;
    assert!(at(8) < at(6), "{} vs {}", at(8), at(6));
    let mut backend = ImportBackend::new(samples.clone());
    let got = backend
        .profile_one(
            &"flowstats".to_string(),
            &samples[4].setting,
            &samples[4].traffic,
        )
        .expect("a point of the file");
    assert_eq!(got, samples[4]);
    assert_eq!(backend.samples_taken(), 1);
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
