//! Regressions found by the `commands` fuzz target (`fuzz/fuzz_targets/commands.rs`, see
//! `fuzz/README.md`) and the `linerate-cost` test `arbitrary_programs`.

use linerate_analysis::{Analysis, Fact, Region};
use linerate_bpf::program::{Function, MapDef, MapOrigin, MapType, Object, Program};
use linerate_cfg::Cfg;

fn object(text: &str) -> Object {
    object_with_maps(text, Vec::new())
}

fn object_with_maps(text: &str, maps: Vec<MapDef>) -> Object {
    let program = linerate_bpf::asm::assemble_program(text, &maps).expect("assembles");
    Object {
        name: "t".into(),
        programs: vec![Program {
            functions: vec![Function {
                name: "t".into(),
                start: 0,
                len: program.insns.len(),
            }],
            ..program
        }],
        maps,
        license: None,
        kfuncs: Vec::new(),
        btf: None,
    }
}

/// A counter in an irreducible cycle (entered at two blocks, so no natural loop): the fixpoint
/// widened only at natural loop headers and counted the interval up one step per round, 2^64
/// rounds (found as a libFuzzer timeout: a clang object's slots with the final jump retargeted).
#[test]
fn irreducible_cycles_are_widened() {
    let obj = object(
        "
        r2 = *(u32 *)(r1 + 0x0)
        r3 = 0x0
        if r2 == 0x0 goto +0x1
        r3 += 0x1
        r3 += 0x1
        if r3 != 0x0 goto -0x3
        r0 = r3
        exit
        ",
    );
    let cfg = Cfg::build(&obj.programs[0]).unwrap();
    assert!(!cfg.functions()[0].is_reducible());
    let analysis = Analysis::run(&obj, &cfg);
    // The exit is reached, with the counter anywhere.
    let exit = cfg.block_of(6).unwrap();
    assert!(analysis.block_state(exit).is_some());
}

/// `r1 = 0; loop: <body_len ALU instructions>; r1 += 1; if r1 < trips goto loop`.
fn counted_loop(body_len: usize, trips: u32) -> Object {
    let body = "        r2 += 0x1\n".repeat(body_len);
    let back = body_len + 2;
    object(&format!(
        "
        r1 = 0x0
{body}        r1 += 0x1
        if r1 < {trips:#x} goto -{back:#x}
        r0 = 0x2
        exit
        "
    ))
}

/// Abstract unrolling ran up to 2^16 iterations of a loop whose state changes every time before
/// calling it unbounded, whatever the body's size (a libFuzzer timeout: a mutated `xdp_cms` loop
/// of 59 instructions took 1.2 s in a release build, over 10 s in the fuzzer's). All loops of a
/// program now share the verifier's budget of a million instructions: a loop the verifier could
/// have walked is still bounded, a longer one is unbounded.
#[test]
fn loop_unrolling_stops_at_the_verifiers_instruction_budget() {
    let bound = |body_len, trips| {
        let obj = counted_loop(body_len, trips);
        let cfg = Cfg::build(&obj.programs[0]).unwrap();
        let analysis = Analysis::run(&obj, &cfg);
        assert_eq!(analysis.loop_bounds().len(), 1);
        analysis.loop_bounds()[0].max_header_runs
    };
    // 5,000 iterations of 102 instructions: within the budget.
    assert_eq!(bound(100, 5_000), Some(5_000));
    // 20,000 iterations (fewer than 2^16) of 102 instructions: past it.
    assert_eq!(bound(100, 20_000), None);
}

/// Map helpers read the key (and an update's value) as one abstract value per byte, and a map's
/// sizes are whatever the object says: `call map_lookup_elem` on a map with 1.9 GB keys
/// allocated 154 GB and aborted (found by libFuzzer, minimised to `r1 = map0 ll; call 0x1;
/// exit`). Such calls are now havocked like calls on an unknown map; a lookup in a map with
/// large values still yields a pointer to its value.
#[test]
fn map_helpers_on_maps_with_huge_keys_or_values() {
    let map = |name: &str, key_size, value_size| MapDef {
        name: name.into(),
        map_type: MapType::HASH,
        key_size,
        value_size,
        max_entries: 1,
        flags: 0,
        origin: MapOrigin::Btf,
        initial_value: None,
        initial_programs: Vec::new(),
        inner: None,
        spin_lock: None,
    };
    let text = "
        r1 = huge_keys ll
        call 0x1
        r1 = huge_values ll
        r2 = r10
        r2 += -0x8
        r3 = r10
        r3 += -0x10
        r4 = 0x0
        call 0x2
        r1 = huge_values ll
        r2 = r10
        r2 += -0x8
        call 0x3
        r1 = huge_values ll
        r2 = r10
        r2 += -0x8
        call 0x1
        if r0 == 0x0 goto +0x1
        r0 = *(u8 *)(r0 + 0x0)
        exit
    ";
    let obj = object_with_maps(
        text,
        vec![
            map("huge_keys", 0x7300_0000, 8),
            map("huge_values", 4, u32::MAX),
        ],
    );
    let cfg = Cfg::build(&obj.programs[0]).unwrap();
    let analysis = Analysis::run(&obj, &cfg);
    for slot in [2, 10, 15, 20] {
        assert!(
            matches!(analysis.fact(slot), Some(Fact::MapCall(Some(_)))),
            "slot {slot}: {:?}",
            analysis.fact(slot)
        );
    }
    assert_eq!(
        analysis.fact(22),
        Some(Fact::Memory(Some(Region::MapValue { map: Some(1) })))
    );
}
