//! Maps of maps against the kernel on a hand-built program: lookups through an outer array into
//! inner arrays (values, empty slots, keys out of range) agree with the kernel on the action and
//! on every map; a program that updates an outer map is refused by both; a seed that places a
//! map not fitting the inner template is refused by both with the same error.

use linerate_bpf::contents::{MapMode, MapSeed};
use linerate_bpf::facts::helper;
use linerate_bpf::insn::build::{
    add64, alu64, atomic, call_helper, exit, jmp, jmp_reg, ld_map, ldx, mov64, mov64_reg, stx,
};
use linerate_bpf::insn::{AluOp, AtomicOp, Cond, Size};
use linerate_bpf::program::InnerMaps;
use linerate_bpf::{MapDef, MapType, Object};
use linerate_kernel::usable_or_skip;
use linerate_vm::drive::Driver;
use linerate_vm::VmOptions;

const OUTER: usize = 0;
const POOL_A: usize = 1;
const POOL_B: usize = 2;
const WRONG: usize = 3;

fn maps() -> Vec<MapDef> {
    let mut outer = MapDef::new("outer", MapType::ARRAY_OF_MAPS, 4, 4, 4);
    outer.inner = Some(Box::new(InnerMaps {
        template: MapDef::new("outer.inner", MapType::ARRAY, 4, 8, 4),
        initial: vec![(0, POOL_A)],
    }));
    vec![
        outer,
        MapDef::new("pool_a", MapType::ARRAY, 4, 8, 4),
        MapDef::new("pool_b", MapType::ARRAY, 4, 8, 4),
        MapDef::new("wrong", MapType::HASH, 4, 8, 4),
    ]
}

/// Looks up `outer[packet[14]]`, then `[packet[15]]` in the inner map it yields; increments that
/// value and returns `XDP_PASS` or `XDP_TX` by its parity. An empty outer slot returns
/// `XDP_DROP`, an inner key out of range `XDP_ABORTED`.
fn lookup_program() -> Object {
    let insns = [
        ldx(Size::W, 2, 1, 0),
        ldx(Size::W, 3, 1, 4),
        mov64_reg(4, 2),
        add64(4, 16),
        mov64(0, 1),
        jmp_reg(Cond::Gt, 4, 3, 23),
        ldx(Size::B, 5, 2, 14),
        stx(Size::W, 10, -4, 5),
        ldx(Size::B, 5, 2, 15),
        stx(Size::W, 10, -8, 5),
        ld_map(1, OUTER as u32),
        mov64_reg(2, 10),
        add64(2, -4),
        call_helper(helper::MAP_LOOKUP_ELEM),
        mov64_reg(1, 0),
        mov64(0, 1),
        jmp(Cond::Eq, 1, 0, 11),
        mov64_reg(2, 10),
        add64(2, -8),
        call_helper(helper::MAP_LOOKUP_ELEM),
        mov64_reg(1, 0),
        mov64(0, 0),
        jmp(Cond::Eq, 1, 0, 5),
        mov64(2, 1),
        atomic(Size::Dw, AtomicOp::Add, false, 1, 0, 2),
        ldx(Size::Dw, 0, 1, 0),
        alu64(AluOp::And, 0, 1),
        add64(0, 2),
        exit(),
    ];
    Object::single("map_in_map", &insns, maps())
}

fn packet(outer_key: u8, inner_key: u8) -> Vec<u8> {
    let mut p = vec![0u8; 60];
    p[12..14].copy_from_slice(&[0x08, 0x00]);
    p[14] = outer_key;
    p[15] = inner_key;
    p
}

fn value(v: u64) -> Vec<u8> {
    v.to_le_bytes().to_vec()
}

#[test]
fn lookups_through_an_outer_array_agree_with_the_kernel() {
    if !usable_or_skip("map-in-map differential test") {
        return;
    }
    let object = lookup_program();
    let seed: MapSeed = [
        (
            OUTER,
            2u32.to_le_bytes().to_vec(),
            (POOL_B as u32).to_le_bytes().to_vec(),
        ),
        (POOL_A, 1u32.to_le_bytes().to_vec(), value(5)),
        (POOL_B, 3u32.to_le_bytes().to_vec(), value(6)),
    ]
    .into_iter()
    .collect();
    let mut kernel = linerate_kernel::drive::Driver::new(&object, &seed, MapMode::Persist)
        .unwrap_or_else(|e| panic!("{e}\n{}", e.verifier_log().unwrap_or("")));
    let mut vm = Driver::new(&object, &seed, VmOptions::default(), MapMode::Persist).unwrap();
    // (outer key, inner key, expected action)
    let cases = [
        (0, 1, 2), // pool_a[1]: 5 -> 6, even: XDP_PASS
        (0, 1, 3), // 6 -> 7: XDP_TX
        (2, 3, 3), // pool_b[3]: 6 -> 7
        (2, 0, 3), // pool_b[0]: 0 -> 1
        (1, 0, 1), // empty slot: XDP_DROP
        (3, 3, 1),
        (9, 0, 1), // outer key out of range: NULL
        (0, 7, 0), // inner key out of range: XDP_ABORTED
    ];
    for (i, &(outer_key, inner_key, action)) in cases.iter().enumerate() {
        let p = packet(outer_key, inner_key);
        let k = kernel.run(0, &p, &[], 1).unwrap();
        let v = vm.run(0, &p, &[]).unwrap();
        assert_eq!(
            (k.retval as u64, v.return_value),
            (action, action),
            "case {i}"
        );
        assert_eq!(kernel.maps().unwrap(), vm.maps(), "case {i}");
    }
    let maps = vm.maps();
    let slot = |i: u32, map: usize| {
        (
            i.to_le_bytes().to_vec(),
            (map as u32).to_le_bytes().to_vec(),
        )
    };
    assert_eq!(maps[OUTER], [slot(0, POOL_A), slot(2, POOL_B)]);
    assert_eq!(maps[POOL_A], [(1u32.to_le_bytes().to_vec(), value(7))]);
}

#[test]
fn a_program_cannot_update_an_outer_map() {
    if !usable_or_skip("map-in-map verifier test") {
        return;
    }
    let insns = [
        mov64(1, 0),
        stx(Size::W, 10, -4, 1),
        stx(Size::W, 10, -8, 1),
        ld_map(1, OUTER as u32),
        mov64_reg(2, 10),
        add64(2, -4),
        mov64_reg(3, 10),
        add64(3, -8),
        mov64(4, 0),
        call_helper(helper::MAP_UPDATE_ELEM),
        mov64(0, 2),
        exit(),
    ];
    let object = Object::single("update_outer", &insns, maps());
    let err = linerate_kernel::load_entry(&object, 0).unwrap_err();
    let log = err.verifier_log().unwrap_or_default();
    assert!(
        log.contains("cannot pass map_type 12 into func bpf_map_update_elem"),
        "{log}"
    );
    let mut vm = Driver::new(
        &object,
        &MapSeed::new(),
        VmOptions::default(),
        MapMode::Persist,
    )
    .unwrap();
    let err = vm.run(0, &packet(0, 0), &[]).unwrap_err();
    let message = error_chain(&err);
    assert!(
        message.contains("a program can only look up a map of maps, not change it"),
        "{message}"
    );
}

#[test]
fn a_map_not_fitting_the_template_is_refused_by_both_engines() {
    if !usable_or_skip("map-in-map seeding test") {
        return;
    }
    let object = lookup_program();
    let seed: MapSeed = [(
        OUTER,
        1u32.to_le_bytes().to_vec(),
        (WRONG as u32).to_le_bytes().to_vec(),
    )]
    .into_iter()
    .collect();
    let expected =
        "map `outer` entry 0: `wrong` has type hash, but the inner map template `outer.inner` has \
         array";
    let kernel = linerate_kernel::drive::Driver::new(&object, &seed, MapMode::Persist)
        .err()
        .map(|e| e.to_string());
    let vm = Driver::new(&object, &seed, VmOptions::default(), MapMode::Persist)
        .err()
        .map(|e| e.to_string());
    assert_eq!(kernel.as_deref(), Some(expected));
    assert_eq!(vm.as_deref(), Some(expected));
}

#[test]
fn an_outer_map_without_a_template_is_refused_by_both_engines() {
    if !usable_or_skip("map-in-map template test") {
        return;
    }
    let mut maps = maps();
    maps[OUTER].inner = None;
    let object = Object::single("no_template", &[mov64(0, 2), exit()], maps);
    let kernel = linerate_kernel::load_object(&object)
        .unwrap_err()
        .to_string();
    assert!(kernel.contains("needs its inner map template"), "{kernel}");
    let vm = linerate_vm::Vm::new(&object, VmOptions::default())
        .unwrap_err()
        .to_string();
    assert!(vm.contains("needs its inner map template"), "{vm}");
}

/// The error and its sources, one after the other.
fn error_chain(err: &dyn std::error::Error) -> String {
    let mut out = err.to_string();
    let mut source = err.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}
