//! What the analysis states on small hand-written programs: regions through moves, spills and
//! joins; map helper calls; packet lengths from bounds checks; loop bounds; and instructions that
//! once broke a hand-written copy of the semantics.

use linerate_analysis::{Analysis, Fact, Region};
use linerate_bpf::program::{Function, MapDef, MapOrigin, MapType, Object, Program};
use linerate_cfg::Cfg;

fn assemble(text: &str, maps: Vec<MapDef>) -> (Object, Cfg) {
    let program: Program = linerate_bpf::asm::assemble_program(text, &maps).expect("assembles");
    let cfg = Cfg::build(&program).expect("cfg");
    let program = Program {
        functions: vec![Function {
            name: "t".into(),
            start: 0,
            len: program.insns.len(),
        }],
        ..program
    };
    let object = Object {
        license: None,
        ..Object::with_programs("t", vec![program], maps)
    };
    (object, cfg)
}

fn map(name: &str, origin: MapOrigin) -> MapDef {
    MapDef {
        origin,
        ..MapDef::new(name, MapType::ARRAY, 4, 8, 1)
    }
}

#[test]
fn finds_regions_through_moves_spills_and_joins() {
    let text = "
        r2 = *(u32 *)(r1 + 0x0)
        r3 = *(u32 *)(r1 + 0x4)
        *(u64 *)(r10 - 0x10) = r2
        r4 = r2
        r4 += 0xe
        if r4 > r3 goto +0xd
        r5 = *(u64 *)(r10 - 0x10)
        r0 = *(u8 *)(r5 + 0xc)
        r1 = counters ll
        r2 = r10
        r2 += -0x4
        *(u32 *)(r2 + 0x0) = 0x0
        call 0x1
        if r0 == 0x0 goto +0x1
        r1 = *(u64 *)(r0 + 0x0)
        r6 = .rodata + 0x0 ll
        r7 = *(u32 *)(r6 + 0x0)
        r0 = 0x2
        exit
    ";
    let (object, cfg) = assemble(
        text,
        vec![
            map("counters", MapOrigin::Btf),
            map(
                ".rodata",
                MapOrigin::GlobalData {
                    section: ".rodata".into(),
                    read_only: true,
                },
            ),
        ],
    );
    let a = Analysis::run(&object, &cfg);
    let stack = Region::Stack { depth: Some(0) };
    assert_eq!(a.fact(0), Some(Fact::Memory(Some(Region::Ctx))));
    assert_eq!(a.fact(2), Some(Fact::Memory(Some(stack))));
    assert_eq!(a.fact(6), Some(Fact::Memory(Some(stack))));
    assert_eq!(
        a.fact(7),
        Some(Fact::Memory(Some(Region::Packet))),
        "spilled packet pointer"
    );
    assert_eq!(a.fact(12), Some(Fact::Memory(Some(stack))));
    assert_eq!(a.fact(13), Some(Fact::MapCall(Some(0))));
    assert_eq!(
        a.fact(15),
        Some(Fact::Memory(Some(Region::MapValue { map: Some(0) })))
    );
    assert_eq!(
        a.fact(18),
        Some(Fact::Memory(Some(Region::MapValue { map: Some(1) }))),
        "global data is the value of its map"
    );
    // The bounds check `data + 14 > data_end` falls through only for packets of 14 bytes or more.
    let fallthrough = cfg.blocks()[cfg.block_of(5).expect("block")].succs[1];
    assert_eq!(a.min_packet_len(fallthrough), Some(14));
}

#[test]
fn a_stack_pointer_moved_by_the_most_negative_immediate_stays_on_the_stack() {
    // `r1 -= -0x80000000` once overflowed a hand-written copy of `sub` in the cost crate.
    let text = "
        r1 = r10
        r1 -= -0x80000000
        r1 += -0x7fffffff
        r1 += -0x9
        goto +0x0
        *(u64 *)(r1 + 0x0) = 0x1
        r0 = 0x2
        exit
    ";
    let (object, cfg) = assemble(text, Vec::new());
    let a = Analysis::run(&object, &cfg);
    assert_eq!(
        a.fact(5),
        Some(Fact::Memory(Some(Region::Stack { depth: Some(0) })))
    );
    let store = cfg.block_of(5).expect("block");
    let state = a.block_state(store).expect("reached");
    assert_eq!(
        state.regs[1].shape,
        linerate_analysis::Shape::Pointer {
            region: Region::Stack { depth: Some(0) },
            offset: linerate_analysis::Interval::exactly(-8),
            maybe_null: false
        }
    );
}

#[test]
fn counted_loops_are_bounded_and_may_goto_loops_are_not() {
    let text = "
        r1 = 0x0
        r1 += 0x1
        if r1 < 0x7 goto -0x2
        r0 = 0x2
        exit
    ";
    let (object, cfg) = assemble(text, Vec::new());
    let a = Analysis::run(&object, &cfg);
    let bounds = a.loop_bounds();
    assert_eq!(bounds.len(), 1);
    // r1 = 1, 2, ..., 7: the header (slot 1) runs 7 times.
    assert_eq!(bounds[0].max_header_runs, Some(7));

    let text = "
        r1 = 0x0
        may_goto +0x2
        r1 += 0x1
        goto -0x3
        r0 = 0x2
        exit
    ";
    let (object, cfg) = assemble(text, Vec::new());
    let a = Analysis::run(&object, &cfg);
    assert_eq!(a.loop_bounds().len(), 1);
    assert_eq!(a.loop_bounds()[0].max_header_runs, None);
}

/// The example programs' loops, bounded as their C sources bound them.
#[test]
fn example_loops_get_their_source_bounds() {
    let expected: &[(&str, &[u64])] = &[
        // One pass per Count-Min row.
        ("xdp_cms_d2.o", &[2]),
        ("xdp_cms_d5.o", &[5]),
        ("xdp_cms_d10.o", &[10]),
        ("xdp_cms_d20.o", &[20]),
        ("xdp_cms_nfp_d20.o", &[20]),
        // One pass per payload byte of the 160-byte window.
        ("xdp_transcoder.o", &[160]),
        // Connection-id bytes.
        ("xdp_quic_lb_v4.o", &[20]),
        ("xdp_quic_lb_v6.o", &[20]),
        // Query name bytes and labels.
        ("xdp_dns.o", &[64, 32]),
        // Loop-free.
        ("xdp_router.o", &[]),
    ];
    let corpus = linerate_conformance::examples::load_all().expect("example corpus");
    for (name, bounds) in expected {
        let example = corpus
            .iter()
            .find(|e| e.name() == *name)
            .unwrap_or_else(|| panic!("{name} is in the corpus"));
        let cfg = Cfg::build(&example.object.programs[example.entry]).expect("cfg");
        let found: Vec<Option<u64>> = Analysis::run(&example.object, &cfg)
            .loop_bounds()
            .iter()
            .map(|b| b.max_header_runs)
            .collect();
        let expected: Vec<Option<u64>> = bounds.iter().map(|b| Some(*b)).collect();
        assert_eq!(found, expected, "{name}");
    }
}
