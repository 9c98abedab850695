//! What the analysis states about helpers with callbacks, on the examples `xdp_bpf_loop` and
//! `xdp_for_each`: which callback each call makes and how often at most (`Fact::Callback`), the
//! arguments the callback is entered with, and the helper's result. The interpreter's states
//! inside the callbacks are checked against these by `soundness.rs`.

use linerate_analysis::{Analysis, Fact, Interval, Region, Shape};
use linerate_bpf::facts::helper::{FOR_EACH_MAP_ELEM, LOOP};
use linerate_bpf::insn::{CallTarget, Instruction};
use linerate_bpf::Object;
use linerate_cfg::Cfg;
use linerate_conformance::examples::{examples_dir, load};

fn example(name: &str) -> (Object, Cfg, Analysis) {
    let example = load(&examples_dir().join(format!("{name}.o"))).expect("example loads");
    let object = example.object;
    let cfg = Cfg::build(&object.programs[example.entry]).expect("cfg");
    let analysis = Analysis::run(&object, &cfg);
    (object, cfg, analysis)
}

/// Slots of the calls of `helper`, in order.
fn calls_of(cfg: &Cfg, helper: u32) -> Vec<usize> {
    cfg.instructions()
        .iter()
        .filter(|(_, insn)| *insn == Instruction::Call(CallTarget::Helper(helper)))
        .map(|(slot, _)| *slot)
        .collect()
}

/// The function starting at `slot`.
fn function_at(cfg: &Cfg, slot: usize) -> usize {
    cfg.functions()
        .iter()
        .find(|f| f.start == slot)
        .map(|f| f.index)
        .expect("a function starts there")
}

fn scalar(shape: Shape) -> Option<Interval> {
    match shape {
        Shape::Scalar(i) => Some(i),
        _ => None,
    }
}

#[test]
fn bpf_loop_calls_are_bounded_by_their_count() {
    let (_, cfg, analysis) = example("xdp_bpf_loop");
    let calls = calls_of(&cfg, LOOP);
    assert_eq!(
        calls.len(),
        2,
        "the IPv6 walk and the packet-controlled loop"
    );
    let facts: Vec<Fact> = calls
        .iter()
        .map(|&s| analysis.fact(s).expect("reached"))
        .collect();
    let skip_ext = cfg
        .functions()
        .iter()
        .find(|f| f.name == "skip_ext")
        .expect("callback");
    let add_index = cfg
        .functions()
        .iter()
        .find(|f| f.name == "add_index")
        .expect("callback");
    // bpf_loop(MAX_EXT = 6, skip_ext, ...) and bpf_loop(u32 from the packet, add_index, ...).
    let mut expected = vec![
        Fact::Callback {
            starts: Some((skip_ext.start, skip_ext.start)),
            max_calls: 6,
        },
        Fact::Callback {
            starts: Some((add_index.start, add_index.start)),
            max_calls: 1 << 23,
        },
    ];
    let mut got = facts.clone();
    got.sort_by_key(|f| format!("{f:?}"));
    expected.sort_by_key(|f| format!("{f:?}"));
    assert_eq!(got, expected);

    // skip_ext is entered with its index in [0, 5] and the walk state on the caller's stack.
    let entry = analysis
        .block_state(cfg.functions()[function_at(&cfg, skip_ext.start)].entry)
        .expect("callback reached");
    assert_eq!(scalar(entry.regs[1].shape), Some(Interval { lo: 0, hi: 5 }));
    assert!(matches!(
        entry.regs[2].shape,
        Shape::Pointer {
            region: Region::Stack { depth: Some(0) },
            maybe_null: false,
            ..
        }
    ));
    assert!(matches!(
        entry.regs[10].shape,
        Shape::Pointer {
            region: Region::Stack { depth: Some(1) },
            ..
        }
    ));
    // add_index: any index below 2^23.
    let entry = analysis
        .block_state(cfg.functions()[function_at(&cfg, add_index.start)].entry)
        .expect("callback reached");
    assert_eq!(
        scalar(entry.regs[1].shape),
        Some(Interval {
            lo: 0,
            hi: (1 << 23) - 1
        })
    );
}

#[test]
fn for_each_over_an_array_visits_at_most_its_entries() {
    let (object, cfg, analysis) = example("xdp_for_each");
    let rules = object
        .maps
        .iter()
        .position(|m| m.name == "port_rules")
        .expect("map");
    let calls = calls_of(&cfg, FOR_EACH_MAP_ELEM);
    assert_eq!(calls.len(), 2);
    for slot in calls {
        let Some(Fact::Callback {
            starts: Some((start, end)),
            max_calls: 8,
        }) = analysis.fact(slot)
        else {
            panic!("slot {slot}: {:?}", analysis.fact(slot));
        };
        assert_eq!(start, end, "slot {slot}: one callback");
        let entry = analysis
            .block_state(cfg.functions()[function_at(&cfg, start)].entry)
            .expect("callback reached");
        // (map, key, value, ctx): the value is a non-null pointer into the array's values.
        assert_eq!(
            entry.regs[3].shape,
            Shape::Pointer {
                region: Region::MapValue { map: Some(rules) },
                offset: Interval::exactly(0),
                maybe_null: false
            }
        );
        assert!(matches!(
            entry.regs[1].shape,
            Shape::Pointer {
                region: Region::MapHandle { map: Some(m) },
                ..
            } if m == rules
        ));
    }
}
