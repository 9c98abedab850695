//! The map-of-maps shape of the maps JSON on the `xdp_map_in_map` example: an outer map's entries
//! name inner maps (`"inner"`), read into seeds as map indices and written back as names; entries
//! in the wrong shape are refused naming the map and the entry.

use std::path::{Path, PathBuf};

use linerate_bpf::Object;
use linerate_io::maps::{encode_maps, parse_maps};
use linerate_io::{load_object, read_maps_file, HexEntry};

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
}

fn object() -> Object {
    load_object(&example("xdp_map_in_map.o")).unwrap()
}

#[test]
fn inner_names_read_as_map_indices_and_write_back_as_names() {
    let object = object();
    let idx = |n: &str| object.map_index(n).unwrap();
    let seed = read_maps_file(&example("xdp_map_in_map.maps.json"), &object).unwrap();
    let vip: Vec<(Vec<u8>, Vec<u8>)> = seed
        .entries()
        .iter()
        .filter(|e| e.map == idx("vip_pools"))
        .map(|e| (e.key.clone(), e.value.clone()))
        .collect();
    let slot = |k: u32, m: &str| {
        (
            k.to_le_bytes().to_vec(),
            (idx(m) as u32).to_le_bytes().to_vec(),
        )
    };
    assert_eq!(vip, [slot(1, "pool_spare"), slot(3, "pool_dns")]);

    let mut contents = vec![Vec::new(); object.maps.len()];
    contents[idx("vip_pools")] = vip;
    contents[idx("pool_web")] = vec![(vec![0; 4], vec![1, 2, 3, 4, 0, 0, 0, 0])];
    let json = encode_maps(&object, &contents);
    assert_eq!(
        json["vip_pools"],
        [
            HexEntry {
                key: "01000000".into(),
                value: None,
                inner: Some("pool_spare".into()),
            },
            HexEntry {
                key: "03000000".into(),
                value: None,
                inner: Some("pool_dns".into()),
            },
        ]
    );
    let text = serde_json::to_string(&json).unwrap();
    assert!(
        text.contains(r#"{"key":"01000000","inner":"pool_spare"}"#),
        "{text}"
    );
    assert!(
        text.contains(r#"{"key":"00000000","value":"0102030400000000"}"#),
        "{text}"
    );
    // What `run --json` writes reads back as the same seed.
    let again = parse_maps(&text, &object).unwrap();
    let vip_again: Vec<_> = again
        .entries()
        .iter()
        .filter(|e| e.map == idx("vip_pools"))
        .map(|e| e.value.clone())
        .collect();
    assert_eq!(
        vip_again,
        [
            contents[idx("vip_pools")][0].1.clone(),
            contents[idx("vip_pools")][1].1.clone()
        ]
    );
}

#[test]
fn entries_in_the_wrong_shape_name_the_map_and_entry() {
    let object = object();
    let cases = [
        (
            r#"{"vip_pools": [{"key": "00000000", "value": "02000000"}]}"#,
            "map `vip_pools` entry 0: a map of maps (array_of_maps) names the inner map at a key \
             as \"inner\", without \"value\"",
        ),
        (
            r#"{"pool_web": [{"key": "00000000", "inner": "pool_dns"}]}"#,
            "map `pool_web` entry 0: needs a hex \"value\" (\"inner\" is for maps of maps only)",
        ),
        (
            r#"{"svc_pools": [{"key": "50000000", "inner": "pool_nope"}]}"#,
            "map `svc_pools` entry 0: `inner` names no map `pool_nope` of xdp_map_in_map (maps \
             that fit: pool_dns, pool_web, pool_spare)",
        ),
        (
            r#"{"svc_pools": [{"key": "50000000", "inner": "vip_pools"}]}"#,
            "map `svc_pools` entry 0: `vip_pools` is a array_of_maps itself (one level of maps in \
             maps only)",
        ),
    ];
    for (text, message) in cases {
        let err = parse_maps(text, &object).unwrap_err().to_string();
        assert_eq!(err, message);
    }
}
