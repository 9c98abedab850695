//! Model files: validation refuses incomplete or inconsistent models with a message naming the
//! cause; prices resolve `same_as`, key sizes and unknown regions as documented; shipped models
//! price every instruction the interpreter runs.

use linerate_bpf::insn::{AluOp, Cond};
use linerate_bpf::program::{Function, MapDef, MapType, Object, Program};
use linerate_cfg::Cfg;
use linerate_cost::item::{
    failed_families, failed_family_key, family_key, map_families, universe, Item, MapOp,
    LOOKUP_ONLY_MAP_TYPES,
};
use linerate_cost::model::{Component, Device, ItemPrice, Limits, ModelFile};
use linerate_cost::{CostError, Model, ProgramCost};

fn cycles(v: f64) -> ItemPrice {
    ItemPrice {
        cost: Some([("cycles".to_string(), v)].into()),
        ..Default::default()
    }
}

/// A complete model: every item costs 1 cycle, hash lookups 10 at k4 and 30 at k16.
fn complete() -> ModelFile {
    let mut items: std::collections::BTreeMap<String, ItemPrice> = universe()
        .iter()
        .map(|i| (i.to_string(), cycles(1.0)))
        .collect();
    for (op, t) in map_families() {
        items.insert(format!("{}.k4", family_key(op, t)), cycles(10.0));
        items.insert(format!("{}.k16", family_key(op, t)), cycles(30.0));
    }
    ModelFile {
        format: "linerate-cost-model".into(),
        version: 1,
        target: "test".into(),
        description: "test".into(),
        source: "test".into(),
        device: Device {
            name: "test".into(),
            cores: 2,
            ..Default::default()
        },
        components: vec![Component {
            name: "cycles".into(),
            unit: "cycles".into(),
            capacity_per_s: 2e9,
            note: None,
        }],
        limits: Limits {
            max_packet_rate_pps: Some(20e6),
            line_rate_bps: Some(40e9),
            min_frame_bytes: 60,
            wire_overhead_bytes: 24,
            note: None,
        },
        per_packet: [("cycles".to_string(), 50.0)].into(),
        gaps: Vec::new(),
        items,
    }
}

fn refused(file: ModelFile) -> String {
    Model::new(file, "m.json").unwrap_err().to_string()
}

#[test]
fn validation_names_the_problem() {
    Model::new(complete(), "m.json").expect("complete model validates");

    let mut f = complete();
    f.items.remove("alu64.xor.reg");
    assert!(refused(f).contains("item `alu64.xor.reg` has no price"));

    let mut f = complete();
    f.items.insert("alu64.frobnicate.imm".into(), cycles(1.0));
    assert!(refused(f).contains("unknown item `alu64.frobnicate.imm`"));

    let mut f = complete();
    f.items.insert(
        "ja".into(),
        ItemPrice {
            cost: Some([("dram".to_string(), 1.0)].into()),
            ..Default::default()
        },
    );
    assert!(refused(f).contains("unknown component `dram`"));

    let mut f = complete();
    f.items.insert(
        "ja".into(),
        ItemPrice {
            same_as: Some("exit".into()),
            ..Default::default()
        },
    );
    f.items.insert(
        "exit".into(),
        ItemPrice {
            same_as: Some("ja".into()),
            ..Default::default()
        },
    );
    assert!(refused(f).contains("same_as cycle"));

    let mut f = complete();
    f.items.insert("ja".into(), cycles(-1.0));
    assert!(refused(f).contains("must be finite and not negative"));

    let mut f = complete();
    f.items.insert("ja".into(), ItemPrice::default());
    assert!(refused(f).contains("exactly one of cost, same_as, unsupported"));

    let mut f = complete();
    f.items
        .retain(|k, _| !k.starts_with("map.update.lru_hash."));
    assert!(refused(f).contains("map operation `map.update.lru_hash` has no price"));

    let mut f = complete();
    f.version = 2;
    assert!(refused(f).contains("schema version 2 is not supported"));

    let err = Model::from_json("{\"format\": 1", "bad.json")
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("invalid model bad.json: line 1"), "{err}");
    assert!(Model::builtin("gpu")
        .unwrap_err()
        .to_string()
        .contains("unknown target `gpu`"));
}

#[test]
fn prices_resolve_aliases_key_sizes_and_refusals() {
    let mut f = complete();
    f.items.insert("alu64.mul.reg".into(), cycles(3.0));
    f.items.insert(
        "alu64.mul.imm".into(),
        ItemPrice {
            same_as: Some("alu64.mul.reg".into()),
            ..Default::default()
        },
    );
    f.items.insert(
        "alu64.div.reg".into(),
        ItemPrice {
            unsupported: Some("no divider".into()),
            ..Default::default()
        },
    );
    let m = Model::new(f, "m.json").unwrap();
    let alu = |op, imm| Item::Alu {
        wide: true,
        op,
        imm,
    };
    assert_eq!(m.price(&alu(AluOp::Mul, true)).unwrap().cost.0, vec![3.0]);
    assert_eq!(m.price(&alu(AluOp::Div, false)).unwrap_err(), "no divider");
    let lookup = |key_size| Item::Map {
        op: MapOp::Lookup,
        map_type: MapType::HASH,
        key_size,
    };
    assert_eq!(m.price(&lookup(4)).unwrap().cost.0, vec![10.0]);
    assert_eq!(
        m.price(&lookup(8)).unwrap().cost.0,
        vec![30.0],
        "rounds up to k16"
    );
    // Above the largest size: 30 + (30 - 10) / 12 per extra byte.
    let at_28 = m.price(&lookup(28)).unwrap().cost.0[0];
    assert!((at_28 - 50.0).abs() < 1e-9, "{at_28}");

    let rate = m.packet_rate(m.per_packet(), 60);
    assert_eq!(
        rate.pps, 20e6,
        "50 cycles at 2e9/s = 40 Mpps, capped by the 20 Mpps limit"
    );
    assert_eq!(rate.bottleneck, "max_packet_rate");
    let rate = m.packet_rate(m.per_packet(), 1500);
    assert!(
        (rate.pps - 40e9 / (1524.0 * 8.0)).abs() < 1.0,
        "line rate with wire overhead"
    );
    assert_eq!(rate.bottleneck, "line_rate");
}

fn object(text: &str, maps: Vec<MapDef>) -> (Object, Cfg) {
    let program = linerate_bpf::asm::assemble_program(text, &maps).unwrap();
    let len = program.insns.len();
    let program = Program {
        functions: vec![Function {
            name: "prog".into(),
            start: 0,
            len,
        }],
        ..program
    };
    let cfg = Cfg::build(&program).unwrap();
    let object = Object::with_programs("t", vec![program], maps);
    (object, cfg)
}

fn hash_map(key_size: u32) -> MapDef {
    MapDef::new("flows", MapType::HASH, key_size, 8, 16)
}

#[test]
fn blocks_edges_and_unknown_regions() {
    let mut f = complete();
    f.items.insert("jmp64.jgt.reg.taken".into(), cycles(7.0));
    f.items
        .insert("jmp64.jgt.reg.not_taken".into(), cycles(2.0));
    f.items.insert("load.map_value.u8".into(), cycles(40.0));
    let m = Model::new(f, "m.json").unwrap();
    let text = "
        r2 = *(u32 *)(r1 + 0x0)
        r3 = *(u32 *)(r1 + 0x4)
        if r2 > r3 goto +0x1
        r4 = *(u8 *)(r5 + 0x0)
        r1 = flows ll
        r2 = r10
        r2 += -0x8
        call 0x1
        r0 = 0x2
        exit
    ";
    let (object, cfg) = object(text, vec![hash_map(8)]);
    let cost = ProgramCost::new(&object, &cfg, &m).unwrap();
    // Block 0: two ctx loads; its edges add the jump's price per outcome.
    assert_eq!(cost.blocks[0].cost.0, vec![2.0]);
    let edge = |kind| {
        cost.edges
            .iter()
            .find(|e| e.from == 0 && e.kind == kind)
            .unwrap()
            .cost
            .0[0]
    };
    assert_eq!(edge(linerate_cfg::EdgeKind::Taken), 9.0);
    assert_eq!(edge(linerate_cfg::EdgeKind::NotTaken), 4.0);
    // r5 is unknown: the load is priced at the dearest region (map value, 40).
    assert_eq!(cost.blocks[1].cost.0, vec![40.0]);
    // ld_imm64 + mov + add + hash lookup with an 8-byte key (rounded up to k16: 30) + mov + exit.
    assert_eq!(cost.blocks[2].cost.0, vec![35.0]);
    let path = cost.path_cost(&cfg, &m, &[0, 1, 2]).unwrap();
    assert_eq!(path.0, vec![50.0 + 4.0 + 40.0 + 35.0]);
    assert!(cost
        .path_cost(&cfg, &m, &[0, 2, 1])
        .unwrap_err()
        .contains("no edge from block 2"));
    assert!(cost.function_worst[0].is_some());

    let mut f = complete();
    f.items.insert(
        "jmp64.jgt.reg.taken".into(),
        ItemPrice {
            unsupported: Some("no comparator".into()),
            ..Default::default()
        },
    );
    let m = Model::new(f, "m.json").unwrap();
    let err = ProgramCost::new(&object, &cfg, &m).unwrap_err();
    assert!(
        matches!(err, CostError::Unsupported { slot: 2, .. }),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        "insn 2 of `prog` (jmp64.jgt.reg.taken) cannot run on target test: no comparator"
    );
}

/// Every instruction kind the interpreter executes maps to an item every shipped model prices
/// (or refuses with a reason): no silent zero.
#[test]
fn shipped_models_price_every_item() {
    for (target, _) in linerate_cost::model::BUILTIN {
        let m = Model::builtin(target).unwrap_or_else(|e| panic!("{target}: {e}"));
        let mut priced = 0;
        for item in universe() {
            match m.price(&item) {
                Ok(p) => {
                    // A zero is allowed only when the model says why (x86's `le64` is no
                    // instruction at all); never by omission.
                    let explained = m.file().items[&item.to_string()]
                        .note
                        .as_ref()
                        .is_some_and(|n| n.len() > 20);
                    assert!(
                        p.cost.0.iter().any(|c| *c > 0.0) || explained,
                        "{target}: {item} costs nothing in every component, without a reason"
                    );
                    priced += 1;
                }
                Err(reason) => assert!(!reason.trim().is_empty(), "{target}: {item}"),
            }
        }
        for (op, t) in map_families() {
            for key_size in [4, 8, 13, 20, 64, 100] {
                let item = Item::Map {
                    op,
                    map_type: t,
                    key_size,
                };
                if let Ok(p) = m.price(&item) {
                    assert!(p.cost.0.iter().any(|c| *c > 0.0), "{target}: {item}");
                }
            }
        }
        assert!(priced > 150, "{target}: only {priced} items priced");
        assert!(
            m.per_packet().0.iter().any(|c| *c > 0.0),
            "{target}: per-packet cost"
        );
        // The basic classes a device must run are priced, not refused.
        for item in [
            Item::Alu {
                wide: true,
                op: AluOp::Add,
                imm: true,
            },
            Item::Jump {
                wide: true,
                cond: Cond::Eq,
                imm: true,
                taken: true,
            },
            Item::Exit,
        ] {
            assert!(m.price(&item).is_ok(), "{target}: {item} refused");
        }
    }
}

/// Device maps are looked up only (the verifier allows programs nothing else on them): x86 prices
/// the lookup as measured, the NFP refuses it (its offload takes only array and hash maps).
#[test]
fn device_and_socket_map_lookups_are_priced_on_x86_and_refused_on_nfp() {
    let x86 = Model::builtin("x86").unwrap();
    let nfp = Model::builtin("nfp").unwrap();
    for map_type in LOOKUP_ONLY_MAP_TYPES {
        let ops: Vec<MapOp> = map_families()
            .into_iter()
            .filter(|&(_, t)| t == map_type)
            .map(|(op, _)| op)
            .collect();
        assert_eq!(ops, [MapOp::Lookup], "{}", map_type.name());
        let lookup = Item::Map {
            op: MapOp::Lookup,
            map_type,
            key_size: 4,
        };
        let p = x86.price(&lookup).unwrap();
        assert!(p.cost.0[0] > 1.0, "{lookup}: {p:?}");
        let why = nfp.price(&lookup).unwrap_err();
        assert!(why.contains("nfp_bpf_map_alloc"), "{lookup}: {why}");
    }
    // The shipped x86 model was not timed with an AF_XDP socket map: its lookup (inlined by the
    // verifier) takes the device map lookup's price as an upper bound.
    let lookup_of = |map_type| Item::Map {
        op: MapOp::Lookup,
        map_type,
        key_size: 4,
    };
    assert_eq!(
        x86.price(&lookup_of(MapType::XSKMAP)).unwrap().cost,
        x86.price(&lookup_of(MapType::DEVMAP)).unwrap().cost
    );
}

/// `may_goto` is a conditional jump whose two edges carry its prices; the NFP refuses it.
#[test]
fn may_goto_is_priced_per_edge() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/tests/fixtures/may_goto.o");
    let object = linerate_bpf::object::read_object_file(&path).unwrap();
    let cfg = Cfg::build(&object.programs[0]).unwrap();
    let x86 = Model::builtin("x86").unwrap();
    let cost = ProgramCost::new(&object, &cfg, &x86).unwrap();
    let (slot, _) = cfg
        .instructions()
        .iter()
        .find(|(_, i)| matches!(i, linerate_bpf::insn::Instruction::MayGoto { .. }))
        .copied()
        .expect("the fixture has a may_goto");
    let charge = &cost.slots[&slot];
    let keys: Vec<String> = charge.items.iter().map(|i| i.to_string()).collect();
    assert!(keys.contains(&"may_goto.taken".to_string()), "{keys:?}");
    assert!(keys.contains(&"may_goto.not_taken".to_string()), "{keys:?}");
    assert!(charge.cost.0[0] > 0.0 && charge.taken.as_ref().unwrap().0[0] > 0.0);
    let block = cfg.block_of(slot).unwrap();
    let edges: Vec<_> = cost.edges.iter().filter(|e| e.from == block).collect();
    assert_eq!(edges.len(), 2, "may_goto ends its block with two edges");

    let err = ProgramCost::new(&object, &cfg, &Model::builtin("nfp").unwrap()).unwrap_err();
    assert!(err.to_string().contains("may_goto"), "{err}");
}

/// A map helper call site two maps reach pays the generic helper's dispatch on top of the map
/// operation (the verifier binds only a call site one map reaches); one map reaching it does not.
#[test]
fn call_sites_several_maps_reach_pay_the_dispatch() {
    let mut f = complete();
    f.items
        .insert("map.dispatch.map_lookup_elem".into(), cycles(500.0));
    let m = Model::new(f, "m.json").unwrap();
    let lookup_block = |second_map: &str| {
        let text = format!(
            "
            r6 = *(u32 *)(r1 + 0x10)
            r1 = flows ll
            if r6 == 0x0 goto +0x2
            r1 = {second_map} ll
            r2 = r10
            r2 += -0x8
            r3 = 0x0
            *(u64 *)(r10 - 0x8) = r3
            call 0x1
            r0 = 0x2
            exit
        "
        );
        let maps = vec![hash_map(8), MapDef::new("other", MapType::HASH, 8, 8, 16)];
        let (object, cfg) = object(&text, maps);
        let cost = ProgramCost::new(&object, &cfg, &m).unwrap();
        // The call is at slot 10 (both `ld_imm64` take two slots).
        cost.blocks[cfg.block_of(10).unwrap()].cost.0[0]
    };
    let one = lookup_block("flows");
    let two = lookup_block("other");
    assert_eq!(two - one, 500.0, "one map {one}, two maps {two}");
}

/// A hash lookup whose result the block tests against NULL is charged its miss price, and the
/// edge taken on a hit the rest; where the result is not tested (or the register was
/// overwritten first), or the model has no miss price, the call keeps the hit price.
#[test]
fn tested_map_outcomes_split_the_price_between_call_and_edge() {
    let with_failures = |file: &mut ModelFile| {
        for (op, t) in failed_families() {
            file.items
                .insert(format!("{}.k16", failed_family_key(op, t)), cycles(4.0));
        }
    };
    let lookup = |test: &str| {
        format!(
            "
            r1 = flows ll
            r2 = r10
            r2 += -0x8
            call 0x1
            r6 = r0
            {test}
            r0 = 0x1
            exit
            r0 = 0x2
            exit
        "
        )
    };
    // Every instruction 1 cycle; the lookup (8-byte key, priced at k16) 30, its miss 4.
    let split = {
        let mut f = complete();
        with_failures(&mut f);
        Model::new(f, "m.json").unwrap()
    };
    let plain = Model::new(complete(), "m.json").unwrap();
    let costs = |text: &str, m: &Model| {
        let (object, cfg) = object(text, vec![hash_map(8)]);
        let cost = ProgramCost::new(&object, &cfg, m).unwrap();
        let edge = |kind| {
            cost.edges
                .iter()
                .find(|e| e.from == 0 && e.kind == kind)
                .map(|e| e.cost.0[0])
        };
        (
            cost.blocks[0].cost.0[0],
            edge(linerate_cfg::EdgeKind::NotTaken),
            edge(linerate_cfg::EdgeKind::Taken),
        )
    };
    // ld_imm64 + mov + add + call + mov = 4 + lookup; the jump 1 per edge.
    let tested = lookup("if r6 == 0x0 goto +0x2");
    assert_eq!(
        costs(&tested, &split),
        (8.0, Some(8.0 + 1.0 + 26.0), Some(9.0))
    );
    assert_eq!(costs(&tested, &plain), (34.0, Some(35.0), Some(35.0)));
    // `r6 != 0` jumps on a hit.
    let inverted = lookup("if r6 != 0x0 goto +0x2");
    assert_eq!(
        costs(&inverted, &split),
        (8.0, Some(9.0), Some(8.0 + 1.0 + 26.0))
    );
    // r6 overwritten before the test: the test says nothing about the lookup.
    let overwritten = lookup("r6 = 0x1\n            if r6 == 0x0 goto +0x2");
    assert_eq!(costs(&overwritten, &split).0, 35.0);
    // A pointer compared on 32 bits is no null test.
    let narrow = lookup("if w6 == 0x0 goto +0x2");
    assert_eq!(costs(&narrow, &split).0, 34.0);
}

/// The comparison may come blocks after the call, with the result kept in a callee-saved
/// register across other calls and branches, as long as every path from the call reaches it
/// with the result intact and nothing else reaches it.
#[test]
fn outcomes_tested_blocks_later_split_too() {
    let mut f = complete();
    for (op, t) in failed_families() {
        f.items
            .insert(format!("{}.k16", failed_family_key(op, t)), cycles(4.0));
    }
    let m = Model::new(f, "m.json").unwrap();
    // An update (8-byte key: priced at k16, 30; failing 4) whose result is recorded through a
    // second lookup (on the array `results`, not split) before it is tested.
    let program = |between: &str| {
        format!(
            "
            r1 = flows ll
            r2 = r10
            r2 += -0x8
            r3 = r10
            r3 += -0x10
            r4 = 0x2
            call 0x2
            r6 = r0
            r1 = results ll
            r2 = r10
            r2 += -0x18
            call 0x1
            if r0 == 0x0 goto +0x1
            *(u64 *)(r0 + 0x0) = r6
            {between}
            if r6 != 0x0 goto +0x2
            r0 = 0x2
            exit
            r0 = 0x1
            exit
        "
        )
    };
    let maps = || vec![hash_map(8), MapDef::new("results", MapType::ARRAY, 4, 8, 4)];
    // The update's charge, and how much more the edge out of the block testing r6 that is
    // taken on success (falling through: r6 == 0) costs than the other.
    let charges = |text: &str| {
        let (object, cfg) = object(text, maps());
        let cost = ProgramCost::new(&object, &cfg, &m).unwrap();
        let insns = cfg.instructions();
        let call = insns
            .iter()
            .find(|(_, i)| matches!(i, linerate_bpf::insn::Instruction::Call(_)))
            .unwrap()
            .0;
        let test = insns
            .iter()
            .find(|(_, i)| matches!(i, linerate_bpf::insn::Instruction::Jump { dst: 6, .. }))
            .unwrap()
            .0;
        let block = cfg.block_of(test).unwrap();
        let edge = |kind| {
            cost.edges
                .iter()
                .find(|e| e.from == block && e.kind == kind)
                .unwrap()
                .cost
                .0[0]
        };
        (
            cost.slots[&call].cost.0[0],
            edge(linerate_cfg::EdgeKind::NotTaken) - edge(linerate_cfg::EdgeKind::Taken),
        )
    };
    assert_eq!(charges(&program("")), (4.0, 26.0));
    // r6 overwritten on one path: no longer every path keeps the result.
    let overwritten = program("if r1 == 0x0 goto +0x1\n            r6 = 0x0");
    assert_eq!(charges(&overwritten), (30.0, 0.0));
    // An exit on the way: that path never pays for a success.
    let exits = program("if r1 == 0x0 goto +0x1\n            exit");
    assert_eq!(charges(&exits), (30.0, 0.0));
}

/// A call site reaching an array and a hash map splits only where the model prices the hash
/// map's failure: the array fails at its full price, and a missing failure price never drops out
/// of the charge.
#[test]
fn call_sites_reaching_an_array_split_only_with_every_failure_priced() {
    let text = "
        r6 = *(u32 *)(r1 + 0x10)
        r1 = flows ll
        if r6 == 0x0 goto +0x2
        r1 = slots ll
        r2 = r10
        r2 += -0x8
        r3 = 0x0
        *(u64 *)(r10 - 0x8) = r3
        call 0x1
        if r0 == 0x0 goto +0x2
        r0 = 0x1
        exit
        r0 = 0x2
        exit
    ";
    let maps = vec![hash_map(8), MapDef::new("slots", MapType::ARRAY, 4, 8, 4)];
    let (object, cfg) = object(text, maps);
    let call_charge = |f: ModelFile| {
        let m = Model::new(f, "m.json").unwrap();
        let cost = ProgramCost::new(&object, &cfg, &m).unwrap();
        cost.slots[&10].cost.0[0]
    };
    // Hash lookup (k16) 30, array lookup (k4) 10, every dispatch 1.
    let mut f = complete();
    for (op, t) in failed_families() {
        f.items
            .insert(format!("{}.k16", failed_family_key(op, t)), cycles(4.0));
    }
    let mut without_hash = f.clone();
    without_hash.items.remove(&format!(
        "{}.k16",
        failed_family_key(MapOp::Lookup, MapType::HASH)
    ));
    assert_eq!(call_charge(complete()), 30.0 + 1.0);
    assert_eq!(
        call_charge(f),
        10.0 + 1.0,
        "the array's full price, the hash map's miss"
    );
    assert_eq!(call_charge(without_hash), 30.0 + 1.0);
}
