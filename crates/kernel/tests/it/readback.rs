//! `LoadedObject::contents` (bulk read-back: a mapping of mmapable arrays, batch lookups) lists
//! exactly what the element-by-element `LoadedObject::entries` lists once normalized, for every
//! map kind and read-back path, including a hash map read in several batches.

use crate::common;

use common::*;
use linerate_bpf::contents::normalize_entries;
use linerate_bpf::{MapDef, MapType};
use linerate_kernel::{load_object, TestRunInput};

#[test]
fn bulk_readback_equals_element_by_element() {
    if !bpf_available() {
        return;
    }
    let maps = vec![
        MapDef::new("counts", MapType::ARRAY, 4, 8, 1 << 16),
        MapDef::new("pcpu", MapType::PERCPU_ARRAY, 4, 12, 300),
        MapDef::new("flows", MapType::HASH, 8, 4, 100_000),
        MapDef::new("lru", MapType::LRU_HASH, 4, 4, 1000),
        MapDef::new("pcpu_hash", MapType::PERCPU_HASH, 4, 8, 64),
        MapDef::new("lpm", MapType::LPM_TRIE, 8, 4, 16),
        MapDef::new("progs", MapType::PROG_ARRAY, 4, 4, 8),
    ];
    let loaded = load_object(&single(&counter_program(), maps)).unwrap();
    assert!(loaded.is_mapped(0), "a plain array is created mmapable");
    assert!((1..7).all(|m| !loaded.is_mapped(m)));

    for run in 0..3 {
        let out = loaded.test_run(0, &TestRunInput::new(packet(64))).unwrap();
        assert_eq!(out.retval, XDP_PASS, "run {run}");
    }
    for index in [5u32, 4095, 65535] {
        loaded
            .update(0, &index.to_le_bytes(), &u64::from(index).to_le_bytes())
            .unwrap();
    }
    loaded.update(1, &299u32.to_le_bytes(), &[9; 12]).unwrap();
    // More entries than one batch holds.
    for i in 0..40_000u64 {
        loaded
            .update(2, &(i * 7919).to_le_bytes(), &(i as u32).to_le_bytes())
            .unwrap();
    }
    for i in 0..10u32 {
        loaded.update(3, &i.to_le_bytes(), &[1, 2, 3, 4]).unwrap();
        loaded.update(4, &i.to_le_bytes(), &[i as u8; 8]).unwrap();
    }
    loaded
        .update(5, &[24, 0, 0, 0, 10, 1, 2, 0], &[7, 0, 0, 0])
        .unwrap();
    loaded
        .update(6, &3u32.to_le_bytes(), &0u32.to_le_bytes())
        .unwrap();

    for m in 0..loaded.num_maps() {
        let def = loaded.map_def(m).unwrap().clone();
        let bulk = loaded.contents(m).unwrap();
        let one_by_one = normalize_entries(&def, loaded.entries(m).unwrap());
        assert_eq!(bulk, one_by_one, "map `{}`", def.name);
    }
    let counts = loaded.contents(0).unwrap();
    let expected: Vec<(Vec<u8>, Vec<u8>)> = [(0u32, 3u64), (5, 5), (4095, 4095), (65535, 65535)]
        .iter()
        .map(|(k, v)| (k.to_le_bytes().to_vec(), v.to_le_bytes().to_vec()))
        .collect();
    let mut expected = expected;
    expected.sort();
    assert_eq!(
        counts, expected,
        "only the non-zero elements, sorted by key bytes"
    );
    assert_eq!(loaded.contents(2).unwrap().len(), 40_000);
    assert_eq!(
        loaded.contents(6).unwrap(),
        vec![(3u32.to_le_bytes().to_vec(), vec![0; 4])]
    );
}

/// Seeds written in batches (plain hashes and arrays) land exactly as element by element, and a
/// refused entry is still named with its own errno, the entries before it written.
#[test]
fn batch_seeding_writes_in_order_and_names_the_refused_entry() {
    if !bpf_available() {
        return;
    }
    use linerate_bpf::contents::{MapSeed, SeedError};
    let maps = vec![
        MapDef::new("arr", MapType::ARRAY, 4, 4, 100),
        MapDef::new("flows", MapType::HASH, 4, 4, 20_000),
    ];
    let obj = single(&[mov64(0, XDP_PASS as i32), exit()], maps);
    let mut seed = MapSeed::new();
    // Two batches' worth of flows, one key written twice (the later value wins).
    for i in 0..20_000u32 {
        seed.push(1, i.to_le_bytes().to_vec(), i.to_le_bytes().to_vec());
    }
    seed.push(1, 7u32.to_le_bytes().to_vec(), 70u32.to_le_bytes().to_vec());
    for i in [3u32, 99, 3] {
        seed.push(0, i.to_le_bytes().to_vec(), (i + 1).to_le_bytes().to_vec());
    }
    let loaded = load_object(&obj).unwrap();
    loaded.seed(&seed).unwrap();
    let flows = loaded.contents(1).unwrap();
    assert_eq!(flows.len(), 20_000);
    assert!(flows.contains(&(7u32.to_le_bytes().to_vec(), 70u32.to_le_bytes().to_vec())));
    assert!(flows.contains(&(
        19_999u32.to_le_bytes().to_vec(),
        19_999u32.to_le_bytes().to_vec()
    )));
    assert_eq!(loaded.contents(0).unwrap().len(), 2);

    // One flow more than the table holds, and an index past the array's end.
    let loaded = load_object(&obj).unwrap();
    let mut full = MapSeed::new();
    for i in 0..20_001u32 {
        full.push(1, i.to_le_bytes().to_vec(), vec![1; 4]);
    }
    let err = loaded.seed(&full).unwrap_err();
    assert!(
        matches!(
            err,
            SeedError::Refused {
                entry: 20_000,
                errno: -7,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(loaded.contents(1).unwrap().len(), 20_000);
    let mut past_end = MapSeed::new();
    for i in [1u32, 2, 100, 4] {
        past_end.push(0, i.to_le_bytes().to_vec(), vec![1; 4]);
    }
    let err = loaded.seed(&past_end).unwrap_err();
    assert!(
        matches!(
            err,
            SeedError::Refused {
                entry: 2,
                errno: -7,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(
        loaded.contents(0).unwrap().len(),
        2,
        "entries before it written"
    );
}
