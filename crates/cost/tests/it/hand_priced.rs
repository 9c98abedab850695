//! Block, edge and path costs of small hand-written programs, worked out by hand.
//!
//! `path_soundness.rs` compares summed edges with a trace priced from [`ProgramCost::slots`], so a
//! pricer that forgot every stall would agree with itself there. Here the expected figures are
//! computed in the comments, instruction by instruction, from the prices in the model files and
//! the rules of `docs/cost-models.md`:
//!
//! - an instruction with a gap `g` first stalls `max(0, g.min - d)` in `g.component`, where `d` is
//!   what that component has spent since the previous operation of the kind (`same_kind`) or of any
//!   gap kind (`any_kind`), 0 at function entry and right after a local call;
//! - a block entry's `d` is the least over its incoming edges (the jump's price counts);
//! - a block costs its instructions except a final conditional jump; an edge its source block plus
//!   that jump's price; a path `per_packet` plus its edges plus its last block.
//!
//! Distances are written `(sram, dram)` after each instruction, capped at the gap's `min`.

use std::collections::BTreeMap;

use linerate_bpf::program::{MapDef, MapType, Object};
use linerate_cfg::Cfg;
use linerate_cost::item::{family_key, map_families, universe};
use linerate_cost::model::{Component, Device, Gap, GapOrigin, ItemPrice, Limits, ModelFile};
use linerate_cost::{Model, ProgramCost};

/// One block of blocking operations at various distances, a map lookup, then a null check.
const STRAIGHT: &str = "
    r6 = *(u32 *)(r1 + 0x0)       ; 0  load.ctx.u32: r6 = data
    r2 = *(u8 *)(r6 + 0x0)        ; 1  load.packet.u8
    r3 = *(u8 *)(r6 + 0x1)        ; 2  load.packet.u8, right after the previous one
    r4 = 0x1                      ; 3  alu64.mov.imm
    r4 += 0x1                     ; 4  alu64.add.imm
    r4 += 0x1                     ; 5  alu64.add.imm
    r3 = *(u8 *)(r6 + 0x2)        ; 6  load.packet.u8, three ALU instructions later
    *(u32 *)(r10 - 0x4) = r4      ; 7  store.stack.u32
    r2 = r10                      ; 8  alu64.mov.reg
    r2 += -0x4                    ; 9  alu64.add.imm
    r1 = counters ll              ; 10 ld_imm64 (two slots)
    call bpf_map_lookup_elem      ; 12 map.lookup.array.k4
    r3 = *(u8 *)(r6 + 0x3)        ; 13 load.packet.u8, right after the lookup
    if r0 == 0x0 goto out         ; 14 jmp64.jeq.imm
    r7 = *(u32 *)(r0 + 0x0)       ; 15 load.map_value.u32
    r0 = 0x2                      ; 16 alu64.mov.imm
    exit                          ; 17 exit
out:
    r0 = 0x1                      ; 18 alu64.mov.imm
    exit                          ; 19 exit
";

const STRAIGHT_ITEMS: &[(usize, &str)] = &[
    (0, "load.ctx.u32"),
    (1, "load.packet.u8"),
    (2, "load.packet.u8"),
    (3, "alu64.mov.imm"),
    (4, "alu64.add.imm"),
    (5, "alu64.add.imm"),
    (6, "load.packet.u8"),
    (7, "store.stack.u32"),
    (8, "alu64.mov.reg"),
    (9, "alu64.add.imm"),
    (10, "ld_imm64"),
    (12, "map.lookup.array.k4"),
    (13, "load.packet.u8"),
    (15, "load.map_value.u32"),
    (16, "alu64.mov.imm"),
    (17, "exit"),
    (18, "alu64.mov.imm"),
    (19, "exit"),
];

/// A diamond: the join's packet load sees the least distance over both arms.
const DIAMOND: &str = "
    r2 = *(u32 *)(r1 + 0x0)       ; 0  load.ctx.u32: data
    r3 = *(u32 *)(r1 + 0x4)       ; 1  load.ctx.u32: data_end
    r4 = *(u8 *)(r2 + 0x0)        ; 2  load.packet.u8
    if r4 == 0x0 goto left        ; 3  jmp64.jeq.imm
    r5 = 0x1                      ; 4  alu64.mov.imm   (right arm)
    r5 += 0x1                     ; 5  alu64.add.imm
    r5 += 0x1                     ; 6
    r5 += 0x1                     ; 7
    r5 += 0x1                     ; 8
    r5 += 0x1                     ; 9
    r5 += 0x1                     ; 10
    r5 += 0x1                     ; 11
    goto join                     ; 12 ja
left:
    r5 = *(u8 *)(r2 + 0x1)        ; 13 load.packet.u8  (left arm)
join:
    r6 = *(u8 *)(r2 + 0x2)        ; 14 load.packet.u8
    r0 = 0x2                      ; 15 alu64.mov.imm
    exit                          ; 16 exit
";

const DIAMOND_ITEMS: &[(usize, &str)] = &[
    (0, "load.ctx.u32"),
    (1, "load.ctx.u32"),
    (2, "load.packet.u8"),
    (4, "alu64.mov.imm"),
    (5, "alu64.add.imm"),
    (11, "alu64.add.imm"),
    (12, "ja"),
    (13, "load.packet.u8"),
    (14, "load.packet.u8"),
    (15, "alu64.mov.imm"),
    (16, "exit"),
];

/// A local call: the callee's worst case is added and the history of blocking operations is
/// forgotten after it.
const CALL: &str = "
    r6 = *(u32 *)(r1 + 0x0)       ; 0  load.ctx.u32
    r2 = *(u8 *)(r6 + 0x0)        ; 1  load.packet.u8
    call sub                      ; 2  call.local + the worst case of `sub`
    r2 = *(u8 *)(r6 + 0x1)        ; 3  load.packet.u8
    r0 = 0x2                      ; 4  alu64.mov.imm
    exit                          ; 5  exit
<sub>:
    r0 = 0x0                      ; 6  alu64.mov.imm
    r0 += 0x1                     ; 7  alu64.add.imm, ten times
    r0 += 0x1
    r0 += 0x1
    r0 += 0x1
    r0 += 0x1
    r0 += 0x1
    r0 += 0x1
    r0 += 0x1
    r0 += 0x1
    r0 += 0x1                     ; 16
    exit                          ; 17 exit
";

const CALL_ITEMS: &[(usize, &str)] = &[
    (0, "load.ctx.u32"),
    (1, "load.packet.u8"),
    (2, "call.local"),
    (3, "load.packet.u8"),
    (4, "alu64.mov.imm"),
    (5, "exit"),
    (6, "alu64.mov.imm"),
    (7, "alu64.add.imm"),
    (16, "alu64.add.imm"),
    (17, "exit"),
];

fn array_map() -> MapDef {
    MapDef::new("counters", MapType::ARRAY, 4, 8, 4)
}

fn build(text: &str) -> (Object, Cfg) {
    let maps = vec![array_map()];
    let program = linerate_bpf::asm::assemble_program(text, &maps).expect("assembles");
    let cfg = Cfg::build(&program).expect("cfg");
    let object = Object::with_programs("hand", vec![program], maps);
    (object, cfg)
}

/// A cost vector by component name; components not named are 0.
type Named<'a> = &'a [(&'a str, f64)];

/// What a program must cost under one model, blocks and edges named by their first slot.
struct Expected<'a> {
    blocks: &'a [(usize, Named<'a>)],
    edges: &'a [(usize, usize, Named<'a>)],
    paths: &'a [(&'a [usize], Named<'a>)],
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * (1.0 + a.abs().max(b.abs()))
}

fn assert_cost(model: &Model, what: &str, got: &linerate_cost::Cost, want: Named<'_>) {
    let got = model.named(got);
    for (name, _) in want {
        assert!(got.contains_key(*name), "{what}: no component {name}");
    }
    for (name, value) in &got {
        let expected = want
            .iter()
            .find(|(n, _)| n == name)
            .map_or(0.0, |(_, v)| *v);
        assert!(
            close(*value, expected),
            "{} model, {what}: {name} is {value}, worked out by hand as {expected}",
            model.target()
        );
    }
}

fn check(text: &str, items: &[(usize, &str)], model: &Model, expected: &Expected<'_>) {
    let (object, cfg) = build(text);
    let cost = ProgramCost::new(&object, &cfg, model).expect("priced");
    // The hand figures assume these items; a different classification is a different test.
    for &(slot, item) in items {
        let charged: Vec<String> = cost.slots[&slot]
            .items
            .iter()
            .map(|i| i.to_string())
            .collect();
        assert_eq!(charged, vec![item.to_string()], "slot {slot}");
    }
    let block = |slot: usize| {
        let b = cfg.block_of(slot).expect("slot in a block");
        assert_eq!(cfg.blocks()[b].first, slot, "slot {slot} starts a block");
        b
    };
    assert_eq!(
        cfg.blocks().len(),
        expected.blocks.len(),
        "every block has a hand figure"
    );
    for &(slot, want) in expected.blocks {
        let b = block(slot);
        assert!(cost.blocks[b].reachable);
        assert_cost(
            model,
            &format!("block at slot {slot}"),
            &cost.blocks[b].cost,
            want,
        );
    }
    assert_eq!(
        cost.edges.len(),
        expected.edges.len(),
        "every edge has a hand figure"
    );
    for &(from, to, want) in expected.edges {
        let (a, b) = (block(from), block(to));
        let edge = cost
            .edges
            .iter()
            .find(|e| e.from == a && e.to == b)
            .unwrap_or_else(|| panic!("no edge from slot {from} to slot {to}"));
        assert_cost(
            model,
            &format!("edge from slot {from} to slot {to}"),
            &edge.cost,
            want,
        );
    }
    for &(slots, want) in expected.paths {
        let path: Vec<usize> = slots.iter().map(|&s| block(s)).collect();
        let got = cost.path_cost(&cfg, model, &path).expect("a path");
        assert_cost(model, &format!("path through slots {slots:?}"), &got, want);
    }
}

/// The toy model: every item 1 cycle, except packet accesses (2 cycles, gap `sram`: 10 cycles,
/// same kind), map-value loads (3 cycles + 1 `mem`, gap `dram`: 30 cycles, any kind), map
/// operations (20 cycles + 2 `mem`, gap `dram`) and taken jumps (4 cycles). Per packet 100 cycles.
fn toy() -> Model {
    let price = |cycles: f64, mem: f64, gap: Option<&str>| ItemPrice {
        cost: Some([("cycles".to_string(), cycles), ("mem".to_string(), mem)].into()),
        gap: gap.map(String::from),
        ..Default::default()
    };
    let mut items = BTreeMap::new();
    for item in universe() {
        let key = item.to_string();
        let p = if key.starts_with("load.packet.") || key.starts_with("store.packet.") {
            price(2.0, 0.0, Some("sram"))
        } else if key.starts_with("load.map_value.") {
            price(3.0, 1.0, Some("dram"))
        } else if key.ends_with(".taken") {
            price(4.0, 0.0, None)
        } else {
            price(1.0, 0.0, None)
        };
        items.insert(key, p);
    }
    for (op, map_type) in map_families() {
        items.insert(
            format!("{}.k4", family_key(op, map_type)),
            price(20.0, 2.0, Some("dram")),
        );
    }
    let component = |name: &str| Component {
        name: name.into(),
        unit: "units".into(),
        capacity_per_s: 1e9,
        note: None,
    };
    let gap = |name: &str, min: f64, measured_from: GapOrigin| Gap {
        name: name.into(),
        component: "cycles".into(),
        min,
        measured_from,
        note: None,
    };
    Model::new(
        ModelFile {
            format: linerate_cost::model::FORMAT.into(),
            version: linerate_cost::model::VERSION,
            target: "toy".into(),
            description: "hand-checkable prices".into(),
            source: "test".into(),
            device: Device {
                name: "toy".into(),
                cores: 1,
                ..Default::default()
            },
            components: vec![component("cycles"), component("mem")],
            limits: Limits {
                min_frame_bytes: 60,
                ..Default::default()
            },
            per_packet: [("cycles".to_string(), 100.0)].into(),
            gaps: vec![
                gap("sram", 10.0, GapOrigin::SameKind),
                gap("dram", 30.0, GapOrigin::AnyKind),
            ],
            items,
        },
        "toy",
    )
    .expect("toy model validates")
}

#[test]
fn toy_model_by_hand() {
    let m = toy();
    // STRAIGHT, block at 0, from (sram, dram) = (0, 0):
    //   0  ctx            1                         -> (1, 1)
    //   1  packet         2 + (10 - 1)  = 11        -> (0, 0)   (dram is any_kind: reset too)
    //   2  packet         2 + (10 - 0)  = 12        -> (0, 0)
    //   3-5  3 ALU        3                         -> (3, 3)
    //   6  packet         2 + (10 - 3)  = 9         -> (0, 0)
    //   7-10 4 others     4                         -> (4, 4)
    //   12 lookup         20 + (30 - 4) = 46, mem 2 -> (min(4 + 46, 10), 0) = (10, 0)
    //                     (sram is same_kind: a DRAM operation does not reset it)
    //   13 packet         2 + max(0, 10 - 10) = 2   -> (0, 0)
    //   block: 1 + 11 + 12 + 3 + 9 + 4 + 46 + 2 = 88 cycles, mem 2
    //   edge to 15 (not taken, 1): 89, entering 15 at (1, 1)
    //   edge to 18 (taken, 4):     92, entering 18 at (4, 4)
    // block at 15, from (1, 1):
    //   15 map value      3 + (30 - 1) = 32, mem 1
    //   16, 17            2                         -> block 34 cycles, mem 1
    // block at 18: mov + exit = 2
    // paths: 100 + 89 + 34 = 223 (mem 3); 100 + 92 + 2 = 194 (mem 2)
    check(
        STRAIGHT,
        STRAIGHT_ITEMS,
        &m,
        &Expected {
            blocks: &[
                (0, &[("cycles", 88.0), ("mem", 2.0)]),
                (15, &[("cycles", 34.0), ("mem", 1.0)]),
                (18, &[("cycles", 2.0)]),
            ],
            edges: &[
                (0, 15, &[("cycles", 89.0), ("mem", 2.0)]),
                (0, 18, &[("cycles", 92.0), ("mem", 2.0)]),
            ],
            paths: &[
                (&[0, 15], &[("cycles", 223.0), ("mem", 3.0)]),
                (&[0, 18], &[("cycles", 194.0), ("mem", 2.0)]),
            ],
        },
    );

    // DIAMOND, block at 0 from (0, 0): ctx 1 -> (1, 1), ctx 1 -> (2, 2),
    //   packet 2 + (10 - 2) = 10 -> (0, 0); block 12
    //   edge to 4 (not taken, 1): 13, entering at (1, 1)
    //   edge to 13 (taken, 4):    16, entering at (4, 4)
    // block at 4 (right arm) from (1, 1): 8 ALU + ja = 9 -> (10, 10); edge to 14: 9
    // block at 13 (left arm) from (4, 4): packet 2 + (10 - 4) = 8 -> (0, 0); edge to 14: 8
    // block at 14 from min((10, 10), (0, 0)) = (0, 0): packet 2 + 10 = 12, mov 1, exit 1 = 14
    // paths: right 100 + 13 + 9 + 14 = 136; left 100 + 16 + 8 + 14 = 138
    // (Run alone, the right arm would reach 14 at distance 10 and not stall: 126. Edge costs
    // must not depend on the path, so the join takes the least distance.)
    check(
        DIAMOND,
        DIAMOND_ITEMS,
        &m,
        &Expected {
            blocks: &[
                (0, &[("cycles", 12.0)]),
                (4, &[("cycles", 9.0)]),
                (13, &[("cycles", 8.0)]),
                (14, &[("cycles", 14.0)]),
            ],
            edges: &[
                (0, 4, &[("cycles", 13.0)]),
                (0, 13, &[("cycles", 16.0)]),
                (4, 14, &[("cycles", 9.0)]),
                (13, 14, &[("cycles", 8.0)]),
            ],
            paths: &[
                (&[0, 4, 14], &[("cycles", 136.0)]),
                (&[0, 13, 14], &[("cycles", 138.0)]),
            ],
        },
    );

    // CALL: `sub` is mov + 10 add + exit = 12 cycles.
    // main from (0, 0): ctx 1 -> (1, 1); packet 2 + 9 = 11 -> (0, 0);
    //   call 1 + 12 = 13, history forgotten -> (0, 0) (not (10, 13));
    //   packet 2 + 10 = 12; mov 1; exit 1. Block: 1 + 11 + 13 + 12 + 1 + 1 = 39; path 139.
    check(
        CALL,
        CALL_ITEMS,
        &m,
        &Expected {
            blocks: &[(0, &[("cycles", 39.0)]), (6, &[("cycles", 12.0)])],
            edges: &[],
            paths: &[(&[0], &[("cycles", 139.0)])],
        },
    );
}

/// The raw price of an item in a shipped model file, `same_as` followed by hand here.
fn file_price(m: &Model, key: &str) -> (BTreeMap<String, f64>, Option<String>) {
    let items = &m.file().items;
    let mut entry = &items[key];
    while let Some(target) = &entry.same_as {
        entry = &items[target];
    }
    let cost = entry
        .cost
        .clone()
        .unwrap_or_else(|| panic!("{}: {key} has no cost", m.target()));
    (cost, entry.gap.clone())
}

#[test]
fn nfp_model_by_hand() {
    let m = Model::builtin("nfp").expect("shipped nfp model");
    // The figures below are these, from crates/cost/models/nfp.json.
    let pinned: &[(&str, Named<'_>, Option<&str>)] = &[
        ("load.ctx.u32", &[("cycles", 2.0)], None),
        ("load.packet.u8", &[("cycles", 7.0)], Some("sram")),
        (
            "load.map_value.u32",
            &[("cycles", 8.0), ("dram_read", 1.0)],
            Some("dram"),
        ),
        (
            "map.lookup.array.k4",
            &[("cycles", 43.0), ("dram_read", 1.0)],
            Some("dram"),
        ),
        ("alu64.mov.imm", &[("cycles", 3.0)], None),
        ("alu64.mov.reg", &[("cycles", 3.0)], None),
        ("alu64.add.imm", &[("cycles", 4.0)], None),
        ("store.stack.u32", &[("cycles", 7.0)], None),
        ("ld_imm64", &[("cycles", 4.0)], None),
        ("jmp64.jeq.imm.taken", &[("cycles", 10.0)], None),
        ("jmp64.jeq.imm.not_taken", &[("cycles", 7.0)], None),
        ("ja", &[("cycles", 4.0)], None),
        ("exit", &[("cycles", 19.0)], None),
        ("call.local", &[("cycles", 28.0)], None),
    ];
    for (key, cost, gap) in pinned {
        let (file_cost, file_gap) = file_price(&m, key);
        let file_cost: Vec<(&str, f64)> = file_cost
            .iter()
            .filter(|(_, v)| **v != 0.0)
            .map(|(k, v)| (k.as_str(), *v))
            .collect();
        assert_eq!(
            (file_cost.as_slice(), file_gap.as_deref()),
            (*cost, *gap),
            "nfp.json changed {key}: update the hand figures"
        );
    }
    let gaps: Vec<(&str, &str, f64, GapOrigin)> = m
        .gaps()
        .iter()
        .map(|g| {
            (
                g.name.as_str(),
                g.component.as_str(),
                g.min,
                g.measured_from,
            )
        })
        .collect();
    assert_eq!(
        gaps,
        [
            ("sram", "cycles", 13.0, GapOrigin::AnyKind),
            ("dram", "cycles", 22.0, GapOrigin::AnyKind)
        ],
        "nfp.json changed its gaps: update the hand figures"
    );
    assert_eq!(m.named(m.per_packet()).get("cycles"), Some(&224.0));

    // STRAIGHT, block at 0, distances (sram, dram) capped at (13, 22), both any_kind:
    //   0  ctx            2                          -> (2, 2)
    //   1  packet         7 + (13 - 2) = 18          -> (0, 0)
    //   2  packet         7 + 13       = 20          -> (0, 0)
    //   3  mov 3, 4 add 4, 5 add 4 = 11              -> (11, 11)
    //   6  packet         7 + (13 - 11) = 9          -> (0, 0)
    //   7  store 7, 8 mov.reg 3, 9 add 4, 10 ld_imm64 4 = 18 -> (13, 18)
    //   12 lookup         43 + (22 - 18) = 47, dram_read 1 -> (0, 0)
    //   13 packet         7 + 13 = 20                -> (0, 0)
    //   block: 2 + 18 + 20 + 11 + 9 + 18 + 47 + 20 = 145 cycles, dram_read 1
    //   edge to 15 (not taken, 7): 152, entering 15 at (7, 7)
    //   edge to 18 (taken, 10):    155, entering 18 at (10, 10)
    // block at 15 from (7, 7): map value 8 + (22 - 7) = 23, dram_read 1; mov 3; exit 19 = 45
    // block at 18: mov 3 + exit 19 = 22
    // paths: 224 + 152 + 45 = 421 (dram_read 2); 224 + 155 + 22 = 401 (dram_read 1)
    check(
        STRAIGHT,
        STRAIGHT_ITEMS,
        &m,
        &Expected {
            blocks: &[
                (0, &[("cycles", 145.0), ("dram_read", 1.0)]),
                (15, &[("cycles", 45.0), ("dram_read", 1.0)]),
                (18, &[("cycles", 22.0)]),
            ],
            edges: &[
                (0, 15, &[("cycles", 152.0), ("dram_read", 1.0)]),
                (0, 18, &[("cycles", 155.0), ("dram_read", 1.0)]),
            ],
            paths: &[
                (&[0, 15], &[("cycles", 421.0), ("dram_read", 2.0)]),
                (&[0, 18], &[("cycles", 401.0), ("dram_read", 1.0)]),
            ],
        },
    );

    // DIAMOND, block at 0: ctx 2 -> (2, 2), ctx 2 -> (4, 4), packet 7 + (13 - 4) = 16 -> (0, 0);
    //   block 20; edge to 4 (not taken, 7): 27 entering at (7, 7); edge to 13 (taken, 10): 30
    //   entering at (10, 10)
    // block at 4 from (7, 7): mov 3 + 7 add * 4 + ja 4 = 35 -> (13, 22); edge to 14: 35
    // block at 13 from (10, 10): packet 7 + (13 - 10) = 10 -> (0, 0); edge to 14: 10
    // block at 14 from (0, 0): packet 7 + 13 = 20, mov 3, exit 19 = 42
    // paths: right 224 + 27 + 35 + 42 = 328; left 224 + 30 + 10 + 42 = 306
    check(
        DIAMOND,
        DIAMOND_ITEMS,
        &m,
        &Expected {
            blocks: &[
                (0, &[("cycles", 20.0)]),
                (4, &[("cycles", 35.0)]),
                (13, &[("cycles", 10.0)]),
                (14, &[("cycles", 42.0)]),
            ],
            edges: &[
                (0, 4, &[("cycles", 27.0)]),
                (0, 13, &[("cycles", 30.0)]),
                (4, 14, &[("cycles", 35.0)]),
                (13, 14, &[("cycles", 10.0)]),
            ],
            paths: &[
                (&[0, 4, 14], &[("cycles", 328.0)]),
                (&[0, 13, 14], &[("cycles", 306.0)]),
            ],
        },
    );

    // CALL: `sub` is mov 3 + 10 add * 4 + exit 19 = 62.
    // main: ctx 2 -> (2, 2); packet 7 + 11 = 18 -> (0, 0); call 28 + 62 = 90, forgotten ->
    //   (0, 0); packet 7 + 13 = 20; mov 3; exit 19. Block 2 + 18 + 90 + 20 + 3 + 19 = 152;
    //   path 224 + 152 = 376.
    check(
        CALL,
        CALL_ITEMS,
        &m,
        &Expected {
            blocks: &[(0, &[("cycles", 152.0)]), (6, &[("cycles", 62.0)])],
            edges: &[],
            paths: &[(&[0], &[("cycles", 376.0)])],
        },
    );
}

/// The x86 model has no gaps: every cost is a plain sum of the file's prices, read here (the
/// shipped file is recalibrated from time to time).
#[test]
fn x86_model_by_hand() {
    let m = Model::builtin("x86").expect("shipped x86 model");
    assert!(
        m.gaps().is_empty(),
        "x86.json now has gaps: price them here"
    );
    assert_eq!(m.components().len(), 1);
    let p = |key: &str| {
        let (cost, gap) = file_price(&m, key);
        assert_eq!(gap, None, "{key}");
        cost.get("cycles").copied().unwrap_or(0.0)
    };
    let per_packet = m.per_packet().0[0];
    assert_eq!(Some(&per_packet), m.file().per_packet.get("cycles"));
    let (ctx, packet, value) = (
        p("load.ctx.u32"),
        p("load.packet.u8"),
        p("load.map_value.u32"),
    );
    let (mov, mov_reg, add) = (p("alu64.mov.imm"), p("alu64.mov.reg"), p("alu64.add.imm"));
    let (taken, not_taken) = (p("jmp64.jeq.imm.taken"), p("jmp64.jeq.imm.not_taken"));
    let (exit, ja, call) = (p("exit"), p("ja"), p("call.local"));

    // STRAIGHT: slots 0-13 are ctx + 4 packet + mov + 3 add + store + mov.reg + ld_imm64 +
    // lookup.
    let b0 = ctx
        + 4.0 * packet
        + mov
        + 3.0 * add
        + p("store.stack.u32")
        + mov_reg
        + p("ld_imm64")
        + p("map.lookup.array.k4");
    let b15 = value + mov + exit;
    let b18 = mov + exit;
    let cyc = |v: f64| [("cycles", v)];
    check(
        STRAIGHT,
        STRAIGHT_ITEMS,
        &m,
        &Expected {
            blocks: &[(0, &cyc(b0)), (15, &cyc(b15)), (18, &cyc(b18))],
            edges: &[(0, 15, &cyc(b0 + not_taken)), (0, 18, &cyc(b0 + taken))],
            paths: &[
                (&[0, 15], &cyc(per_packet + b0 + not_taken + b15)),
                (&[0, 18], &cyc(per_packet + b0 + taken + b18)),
            ],
        },
    );

    // DIAMOND: 2 ctx + packet; right arm mov + 7 add + ja; left arm packet; join packet + mov +
    // exit.
    let b0 = 2.0 * ctx + packet;
    let right = mov + 7.0 * add + ja;
    let join = packet + mov + exit;
    check(
        DIAMOND,
        DIAMOND_ITEMS,
        &m,
        &Expected {
            blocks: &[
                (0, &cyc(b0)),
                (4, &cyc(right)),
                (13, &cyc(packet)),
                (14, &cyc(join)),
            ],
            edges: &[
                (0, 4, &cyc(b0 + not_taken)),
                (0, 13, &cyc(b0 + taken)),
                (4, 14, &cyc(right)),
                (13, 14, &cyc(packet)),
            ],
            paths: &[
                (
                    &[0, 4, 14],
                    &cyc(per_packet + b0 + not_taken + right + join),
                ),
                (&[0, 13, 14], &cyc(per_packet + b0 + taken + packet + join)),
            ],
        },
    );

    // CALL: `sub` is mov + 10 add + exit; main ctx + 2 packet + call + sub + mov + exit.
    let sub = mov + 10.0 * add + exit;
    let main = ctx + 2.0 * packet + call + sub + mov + exit;
    check(
        CALL,
        CALL_ITEMS,
        &m,
        &Expected {
            blocks: &[(0, &cyc(main)), (6, &cyc(sub))],
            edges: &[],
            paths: &[(&[0], &cyc(per_packet + main))],
        },
    );
}
