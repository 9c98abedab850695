//! Seeding a loaded object's maps and driving packets with persistent or fresh maps, in the
//! kernel.

use crate::common;

use common::*;
use linerate_bpf::contents::{MapMode, MapSeed, SeedError};
use linerate_bpf::{MapDef, MapType, Object};
use linerate_kernel::drive::{DriveError, Driver};
use linerate_kernel::load_entry;

/// `counts[0] += 1; return XDP_PASS`, with a one-entry hash map `one` beside it.
fn counter() -> Object {
    single(
        &counter_program(),
        vec![
            MapDef::new("counts", MapType::ARRAY, 4, 8, 4),
            MapDef::new("one", MapType::HASH, 2, 1, 1),
        ],
    )
}

fn counts(n: u64) -> Vec<(Vec<u8>, Vec<u8>)> {
    vec![(0u32.to_le_bytes().to_vec(), n.to_le_bytes().to_vec())]
}

#[test]
fn persistent_maps_accumulate_and_fresh_maps_start_over() {
    if !bpf_available() {
        return;
    }
    let obj = counter();
    let seed: MapSeed = [(0, 0u32.to_le_bytes().to_vec(), 10u64.to_le_bytes().to_vec())]
        .into_iter()
        .collect();
    let packets = vec![packet(64); 3];
    let mut persist = Driver::new(&obj, &seed, MapMode::Persist).unwrap();
    let runs = persist.run_packets(0, &packets, &[], 4).unwrap();
    assert_eq!(runs.initial_maps[0], counts(10));
    assert_eq!(
        runs.final_maps[0],
        counts(13),
        "read before the timing runs"
    );
    assert_eq!(runs.ns_per_run.len(), 3);
    assert_eq!(persist.maps().unwrap()[0], counts(25), "3 x 4 timing runs");
    let mut fresh = Driver::new(&obj, &seed, MapMode::Fresh).unwrap();
    let runs = fresh.run_packets(0, &packets, &[], 1).unwrap();
    assert_eq!(runs.final_maps[0], counts(11));
    assert!(runs.outcomes.iter().all(|o| o.retval == XDP_PASS));
}

#[test]
fn a_refused_entry_names_map_entry_and_errno() {
    if !bpf_available() {
        return;
    }
    let obj = counter();
    let mut seed = MapSeed::new();
    seed.push(1, vec![1, 0], vec![7]);
    seed.push(1, vec![2, 0], vec![8]);
    let err = Driver::new(&obj, &seed, MapMode::Persist).unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot seed map `one` with key 0200 (entry 1): error -7"
    );
    assert!(matches!(
        err,
        DriveError::Seed(SeedError::Refused { errno: -7, .. })
    ));

    let loaded = load_entry(&obj, 0).unwrap();
    let mut bad_size = MapSeed::new();
    bad_size.push(1, vec![3, 0], vec![1]);
    bad_size.push(1, vec![3, 0], vec![1, 2]);
    assert_eq!(
        loaded.seed(&bad_size).unwrap_err().to_string(),
        "map `one` entry 1: value has 2 bytes, the map's values have 1"
    );
    assert!(loaded.entries(1).unwrap().is_empty(), "nothing written");
}
