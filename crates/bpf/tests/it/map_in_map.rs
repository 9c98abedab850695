//! Reading maps of maps: the inner map template from BTF and statically placed inner maps, on the
//! `xdp_map_in_map` example and on a fixture whose `.values` does not fit its template.

use std::path::Path;

use linerate_bpf::program::InnerMaps;
use linerate_bpf::{read_object_file, MapDef, MapType};

fn example() -> linerate_bpf::Object {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/xdp_map_in_map.o");
    read_object_file(&path).unwrap()
}

#[test]
fn outer_maps_carry_their_template_and_initial_inner_maps() {
    let obj = example();
    let idx = |n: &str| obj.map_index(n).unwrap();
    let pool = |name: &str| MapDef::new(name, MapType::ARRAY, 4, 8, 4);
    for name in ["pool_web", "pool_dns", "pool_spare"] {
        assert_eq!(obj.maps[idx(name)], pool(name));
    }
    let svc = &obj.maps[idx("svc_pools")];
    assert_eq!(
        (svc.map_type, svc.key_size, svc.value_size, svc.max_entries),
        (MapType::HASH_OF_MAPS, 4, 4, 16)
    );
    assert_eq!(
        svc.inner.as_deref(),
        Some(&InnerMaps {
            template: pool("svc_pools.inner"),
            initial: vec![(53, idx("pool_dns"))],
        })
    );
    let vip = &obj.maps[idx("vip_pools")];
    assert_eq!(vip.map_type, MapType::ARRAY_OF_MAPS);
    let vip_inner = vip.inner.as_deref().unwrap();
    assert_eq!(vip_inner.template, pool("vip_pools.inner"));
    assert_eq!(
        vip_inner.initial,
        [(0, idx("pool_web")), (1, idx("pool_dns"))]
    );
    // Plain maps have no inner side.
    assert!(obj.maps[idx("pool_web")].inner.is_none());
}

#[test]
fn template_accepts_what_the_kernel_accepts() {
    let obj = example();
    let idx = |n: &str| obj.map_index(n).unwrap();
    let inner = obj.maps[idx("vip_pools")].inner.as_deref().unwrap();
    assert_eq!(inner.mismatch(&obj.maps[idx("pool_spare")]), None);
    let mut bigger = MapDef::new("big", MapType::ARRAY, 4, 8, 5);
    assert_eq!(
        inner.mismatch(&bigger).as_deref(),
        Some("`big` has max_entries 5, but the inner map template `vip_pools.inner` has 4")
    );
    // BPF_F_INNER_MAP lets arrays of any size in.
    let mut any_size = inner.clone();
    any_size.template.flags = linerate_bpf::program::F_INNER_MAP;
    bigger.flags = linerate_bpf::program::F_INNER_MAP;
    assert_eq!(any_size.mismatch(&bigger), None);
    let hash = MapDef::new("h", MapType::HASH, 4, 8, 4);
    assert_eq!(
        inner.mismatch(&hash).as_deref(),
        Some("`h` has type hash, but the inner map template `vip_pools.inner` has array")
    );
    let outer = MapDef::new("o", MapType::ARRAY_OF_MAPS, 4, 4, 4);
    assert!(inner.mismatch(&outer).unwrap().contains("one level"));
}

#[test]
fn a_static_inner_map_that_does_not_fit_the_template_is_refused() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/map_in_map_mismatch.o");
    let err = read_object_file(&path).unwrap_err();
    assert_eq!(
        err.to_string(),
        "map `outer`: slot 1: `wide` has value size 8, but the inner map template `outer.inner` \
         has 4"
    );
}
