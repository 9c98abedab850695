//! The shipped Netronome Agilio CX model (`models/nfp.json`, derivation in `docs/nfp-model.md`):
//! the paper's figures, the MAC cap, and the JIT-derived prices of representative items.

use linerate_bpf::insn::{AluOp, AtomicOp, Cond, Endian};
use linerate_bpf::program::MapType;
use linerate_cost::item::{universe, Access, Item, MapOp, Region};
use linerate_cost::Model;

fn nfp() -> Model {
    Model::builtin("nfp").expect("shipped nfp model loads")
}

/// The named cost vector of an item, and its gap's name; panics when the item is refused.
fn priced(m: &Model, item: Item) -> (Vec<(String, f64)>, Option<String>) {
    let price = m
        .price(&item)
        .unwrap_or_else(|reason| panic!("{item} refused: {reason}"));
    let named = m
        .named(&price.cost)
        .into_iter()
        .filter(|(_, v)| *v != 0.0)
        .collect();
    (named, price.gap.map(|g| m.gaps()[g].name.clone()))
}

fn cycles(m: &Model, item: Item) -> f64 {
    let (cost, _) = priced(m, item);
    cost.iter()
        .find(|(k, _)| k == "cycles")
        .map_or(0.0, |(_, v)| *v)
}

fn capacity(m: &Model, name: &str) -> f64 {
    m.components()
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no component {name}"))
        .capacity_per_s
}

fn jump(wide: bool, cond: Cond, imm: bool, taken: bool) -> Item {
    Item::Jump {
        wide,
        cond,
        imm,
        taken,
    }
}

fn load(region: Region, bytes: u8) -> Item {
    Item::Load {
        region,
        access: Access {
            bytes,
            signed: false,
        },
    }
}

fn atomic(op: AtomicOp, fetch: bool, bytes: u8) -> Item {
    Item::Atomic {
        region: Region::MapValue,
        op,
        fetch,
        bytes,
    }
}

fn map(op: MapOp, map_type: MapType, key_size: u32) -> Item {
    Item::Map {
        op,
        map_type,
        key_size,
    }
}

#[test]
fn pins_the_papers_figures() {
    let m = nfp();
    assert_eq!(m.target(), "nfp");
    let file = m.file();
    assert_eq!(file.device.cores, 50, "paper 000 §2, §4.1");
    assert_eq!(file.device.frequency_hz, Some(800e6), "artifact README");
    assert_eq!(m.named(m.per_packet()).get("cycles"), Some(&224.0), "§4.1");
    assert_eq!(
        m.per_packet().0.iter().filter(|c| **c != 0.0).count(),
        1,
        "the firmware overhead is core cycles only"
    );
    assert_eq!(capacity(&m, "cycles"), 50.0 * 800e6);
    assert_eq!(capacity(&m, "dram_read"), 197.4e6, "§4.2 Fig. 5, lower end");
    assert_eq!(capacity(&m, "dram_atomic"), 248.5e6, "§4.2, lower end");
    let limits = m.limits();
    assert_eq!(limits.max_packet_rate_pps, Some(54.4e6), "§4.1 MAC limit");
    assert_eq!(limits.line_rate_bps, Some(80e9), "2 x 40 GbE");
    assert_eq!(limits.min_frame_bytes, 60, "§3");
    assert_eq!(limits.wire_overhead_bytes, 24);
    let gap = |name: &str| {
        m.gaps()
            .iter()
            .find(|g| g.name == name)
            .unwrap_or_else(|| panic!("no gap {name}"))
    };
    // The artifact's estimator: a swapping command costs max(3, 16 - s) (CTM/SRAM) or
    // max(3, 25 - s) (DRAM); items carry the 3 issue cycles, gaps the rest.
    assert_eq!(
        (gap("sram").component.as_str(), gap("sram").min),
        ("cycles", 13.0)
    );
    assert_eq!(
        (gap("dram").component.as_str(), gap("dram").min),
        ("cycles", 22.0)
    );
}

#[test]
fn per_packet_work_alone_is_capped_by_the_mac() {
    let m = nfp();
    // 224 cycles on 50 cores at 800 MHz would be 178.6 Mpps; the MAC accepts 54.4 Mpps.
    assert!(capacity(&m, "cycles") / 224.0 > 54.4e6);
    let rate = m.packet_rate(m.per_packet(), 60);
    assert_eq!(rate.pps, 54.4e6);
    assert_eq!(rate.bottleneck, "max_packet_rate");
    // Large frames hit the 80 Gbit/s line rate first.
    let rate = m.packet_rate(m.per_packet(), 1500);
    assert!(
        (rate.pps - 80e9 / (1524.0 * 8.0)).abs() < 1.0,
        "{}",
        rate.pps
    );
    assert_eq!(rate.bottleneck, "line_rate");
}

#[test]
fn alu_prices_follow_the_jit() {
    let m = nfp();
    let alu = |wide, op, imm| Item::Alu { wide, op, imm };
    // add_imm64: per half wrp_alu_imm, at most 2 immed + alu on the low half, 1 alu on the high.
    assert_eq!(
        priced(&m, alu(true, AluOp::Add, true)).0,
        [("cycles".to_string(), 4.0)]
    );
    assert_eq!(cycles(&m, alu(true, AluOp::Add, false)), 2.0);
    // 32-bit: one alu plus the zero extension of the high register.
    assert_eq!(cycles(&m, alu(false, AluOp::Add, false)), 2.0);
    // Multiplication by mul_step sequences, division by reciprocal multiplication.
    assert_eq!(cycles(&m, alu(true, AluOp::Mul, false)), 7.0);
    assert_eq!(cycles(&m, alu(true, AluOp::Div, true)), 13.0);
    // 64-bit shifts by a register of unknown range branch on bit 5 of the amount.
    assert_eq!(cycles(&m, alu(true, AluOp::Lsh, false)), 10.0);
    assert_eq!(cycles(&m, alu(true, AluOp::Lsh, true)), 2.0);
    assert_eq!(
        cycles(
            &m,
            Item::Endian {
                kind: Endian::ToBe,
                bits: 16
            }
        ),
        3.0
    );
    for refused in [
        alu(true, AluOp::Mod, false),
        alu(false, AluOp::SDiv, true),
        alu(true, AluOp::MovSx(8), false),
        Item::Endian {
            kind: Endian::ToLe,
            bits: 16,
        },
        Item::Endian {
            kind: Endian::Swap,
            bits: 32,
        },
    ] {
        let reason = m.price(&refused).expect_err("refused");
        assert!(reason.contains("jit.c"), "{refused}: {reason}");
    }
}

#[test]
fn taken_branches_cost_more() {
    let m = nfp();
    // cmp_imm: <= 5 instructions, then one branch: taken 4 cycles, not taken 1.
    assert_eq!(cycles(&m, jump(true, Cond::Gt, true, true)), 9.0);
    assert_eq!(cycles(&m, jump(true, Cond::Gt, true, false)), 6.0);
    // cmp_reg on 32 bits: SUB + branch.
    assert_eq!(cycles(&m, jump(false, Cond::Slt, false, true)), 5.0);
    assert_eq!(cycles(&m, jump(false, Cond::Slt, false, false)), 2.0);
    // Every condition shares the rule.
    for wide in [true, false] {
        for cond in Cond::ALL {
            for imm in [true, false] {
                let t = cycles(&m, jump(wide, cond, imm, true));
                let n = cycles(&m, jump(wide, cond, imm, false));
                assert!(t >= n + 3.0, "{}: {t} vs {n}", jump(wide, cond, imm, true));
            }
        }
    }
    assert_eq!(cycles(&m, Item::Ja), 4.0);
}

#[test]
fn memory_prices_name_their_region() {
    let m = nfp();
    // Packet data: one blocking CTM/SRAM command, no DRAM engine load.
    let (cost, gap) = priced(&m, load(Region::Packet, 4));
    assert_eq!(cost, [("cycles".to_string(), 8.0)]);
    assert_eq!(gap.as_deref(), Some("sram"));
    let (_, gap) = priced(
        &m,
        Item::Store {
            region: Region::Packet,
            bytes: 2,
        },
    );
    assert_eq!(gap.as_deref(), Some("sram"));
    // Map values: one blocking 40-bit read command, one memory-engine read, for every width.
    for bytes in [1, 2, 4, 8] {
        let (cost, gap) = priced(&m, load(Region::MapValue, bytes));
        assert_eq!(
            cost,
            [("cycles".to_string(), 8.0), ("dram_read".to_string(), 1.0)],
            "u{}",
            bytes * 8
        );
        assert_eq!(gap.as_deref(), Some("dram"));
    }
    // The stack is local memory: no command, no gap.
    let (cost, gap) = priced(&m, load(Region::Stack, 8));
    assert_eq!(cost, [("cycles".to_string(), 8.0)]);
    assert_eq!(gap, None);
    // Atomic add on a map value: one memory-engine atomic, no read.
    for bytes in [4, 8] {
        let (cost, gap) = priced(&m, atomic(AtomicOp::Add, false, bytes));
        let dram: Vec<_> = cost.iter().filter(|(k, _)| k != "cycles").collect();
        assert_eq!(dram, [&("dram_atomic".to_string(), 1.0)]);
        assert_eq!(gap.as_deref(), Some("dram"));
    }
    for refused in [
        atomic(AtomicOp::Add, true, 4),
        atomic(AtomicOp::Xchg, true, 8),
        Item::Atomic {
            region: Region::Stack,
            op: AtomicOp::Add,
            fetch: false,
            bytes: 8,
        },
        Item::Store {
            region: Region::MapValue,
            bytes: 4,
        },
        load(Region::Global, 4),
        Item::Load {
            region: Region::Packet,
            access: Access {
                bytes: 1,
                signed: true,
            },
        },
    ] {
        assert!(m.price(&refused).is_err(), "{refused} should be refused");
    }
}

#[test]
fn maps_helpers_and_calls() {
    let m = nfp();
    let (cost, gap) = priced(&m, map(MapOp::Lookup, MapType::ARRAY, 4));
    assert!(cost.contains(&("dram_read".into(), 1.0)), "{cost:?}");
    assert_eq!(gap.as_deref(), Some("dram"));
    // Hash lookups read descriptor, bucket and entry, and cost more with longer keys.
    let (cost, _) = priced(&m, map(MapOp::Lookup, MapType::HASH, 4));
    assert!(cost.contains(&("dram_read".into(), 3.0)), "{cost:?}");
    let k4 = cycles(&m, map(MapOp::Lookup, MapType::HASH, 4));
    let k16 = cycles(&m, map(MapOp::Lookup, MapType::HASH, 16));
    assert!(k16 > k4);
    assert!(cycles(&m, map(MapOp::Update, MapType::HASH, 16)) > k16);
    for t in [
        MapType::PERCPU_ARRAY,
        MapType::PERCPU_HASH,
        MapType::LRU_HASH,
        MapType::LRU_PERCPU_HASH,
        MapType::LPM_TRIE,
    ] {
        assert!(m.price(&map(MapOp::Lookup, t, 8)).is_err());
        let reason = m.price(&map(MapOp::Update, t, 8)).unwrap_err();
        assert!(reason.contains("offload.c"), "{reason}");
    }
    // Helpers the NFP verifier accepts are priced, the rest refused.
    assert_eq!(cycles(&m, Item::Helper(7)), 3.0, "get_prandom_u32");
    assert!(m.price(&Item::Helper(44)).is_ok(), "xdp_adjust_head");
    for refused in [23, 28, 51, 69] {
        let reason = m.price(&Item::Helper(refused)).unwrap_err();
        assert!(reason.contains("nfp_bpf_check_helper_call"), "{reason}");
    }
    assert!(m.price(&Item::TailCall).is_err());
    assert_eq!(cycles(&m, Item::Exit), 19.0);
    assert!(cycles(&m, Item::CallLocal) > 0.0);
}

/// No silent zero: every priced item costs cycles and says why; every refusal names a reason;
/// every blocking item names a gap and every DRAM read blocks.
#[test]
fn every_price_is_explained() {
    let m = nfp();
    let file = m.file();
    for (key, entry) in &file.items {
        assert!(
            entry.note.as_deref().is_some_and(|n| !n.trim().is_empty())
                || entry
                    .unsupported
                    .as_deref()
                    .is_some_and(|r| !r.trim().is_empty()),
            "{key} has neither a note nor a reason"
        );
    }
    let mut priced_items = 0;
    for item in universe() {
        let Ok(price) = m.price(&item) else { continue };
        priced_items += 1;
        let named = m.named(&price.cost);
        assert!(named["cycles"] > 0.0, "{item} costs no cycles");
        if named["dram_read"] > 0.0 {
            assert!(price.gap.is_some(), "{item} reads DRAM without blocking");
        }
    }
    assert!(priced_items > 150, "only {priced_items} items priced");
}
