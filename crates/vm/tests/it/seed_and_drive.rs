//! Seeding the interpreter's maps and driving packets with persistent or fresh maps.

use crate::common;

use linerate_bpf::contents::{MapMode, MapSeed, SeedError};
use linerate_bpf::{MapDef, MapType, Object};
use linerate_vm::drive::{run_packets, DriveError, Driver};
use linerate_vm::{Vm, VmOptions};

/// `counts[1] += 1; return XDP_PASS`, with a one-entry hash map `one` beside it.
fn counter() -> Object {
    let maps = vec![
        MapDef::new("counts", MapType::ARRAY, 4, 8, 4),
        MapDef::new("one", MapType::HASH, 2, 1, 1),
    ];
    Object::single("count", &common::counter_program(), maps)
}

const PACKET: [u8; 20] = [0; 20];

fn counts(n: u64) -> Vec<(Vec<u8>, Vec<u8>)> {
    vec![(1u32.to_le_bytes().to_vec(), n.to_le_bytes().to_vec())]
}

#[test]
fn persistent_maps_accumulate_and_fresh_maps_start_over() {
    let obj = counter();
    let seed: MapSeed = [(0, 1u32.to_le_bytes().to_vec(), 10u64.to_le_bytes().to_vec())]
        .into_iter()
        .collect();
    let packets = vec![PACKET.to_vec(); 3];
    let options = VmOptions {
        record_steps: true,
        ..VmOptions::default()
    };
    let persist = run_packets(
        &obj,
        &seed,
        options.clone(),
        MapMode::Persist,
        0,
        &packets,
        &[],
    )
    .unwrap();
    assert_eq!(persist.initial_maps[0], counts(10));
    assert_eq!(persist.final_maps[0], counts(13));
    let fresh = run_packets(&obj, &seed, options, MapMode::Fresh, 0, &packets, &[]).unwrap();
    assert_eq!(fresh.final_maps[0], counts(11));
    for (p, f) in persist.outcomes.iter().zip(&fresh.outcomes) {
        assert_eq!(p.return_value, 2);
        assert_eq!(p.steps.len(), 10, "every instruction recorded");
        assert_eq!(p.steps, f.steps);
    }
}

#[test]
fn a_refused_entry_names_map_entry_and_errno_and_a_bad_seed_writes_nothing() {
    let obj = counter();
    let mut seed = MapSeed::new();
    seed.push(1, vec![1, 0], vec![7]);
    seed.push(1, vec![2, 0], vec![8]);
    let err = Driver::new(&obj, &seed, VmOptions::default(), MapMode::Persist).unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot seed map `one` with key 0200 (entry 1): error -7"
    );
    assert!(matches!(
        err,
        DriveError::Seed(SeedError::Refused { errno: -7, .. })
    ));

    let mut past_end = MapSeed::new();
    past_end.push(0, 9u32.to_le_bytes().to_vec(), vec![0; 8]);
    let mut vm = Vm::new(&obj, VmOptions::default()).unwrap();
    assert_eq!(
        vm.seed(&past_end).unwrap_err().to_string(),
        "cannot seed map `counts` with key 09000000 (entry 0): error -7"
    );

    let mut bad_size = MapSeed::new();
    bad_size.push(1, vec![3, 0], vec![1]);
    bad_size.push(1, vec![3], vec![1]);
    assert_eq!(
        vm.seed(&bad_size).unwrap_err().to_string(),
        "map `one` entry 1: key has 1 bytes, the map's keys have 2"
    );
    assert!(vm.maps[1].entries().is_empty(), "nothing written");
}

#[test]
fn a_failing_packet_is_named() {
    let obj = counter();
    let mut driver =
        Driver::new(&obj, &MapSeed::new(), VmOptions::default(), MapMode::Fresh).unwrap();
    driver.run(0, &PACKET, &[]).unwrap();
    let err = driver.run(1, &PACKET, &[]).unwrap_err();
    assert!(
        matches!(err, DriveError::Packet { index: 1, .. }),
        "{err:?}"
    );
    assert_eq!(err.to_string(), "packet 1");
}
