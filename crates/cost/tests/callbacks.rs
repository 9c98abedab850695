//! How helpers with callbacks are priced, on the examples `xdp_bpf_loop` and `xdp_for_each`
//! with the shipped x86 model (which has no stalls): the block holding such a call costs its
//! other instructions plus, per call of the callback the analysis allows, one local call and the
//! callback's worst case — 6 calls for `bpf_loop(MAX_EXT = 6, ...)`, 2^23 for a count read from
//! the packet, 8 for `bpf_for_each_map_elem` over an 8-entry array.

use linerate_analysis::{Analysis, Fact};
use linerate_bpf::facts::helper::{FOR_EACH_MAP_ELEM, LOOP};
use linerate_bpf::insn::{CallTarget, Instruction};
use linerate_cfg::Cfg;
use linerate_conformance::examples::{examples_dir, load};
use linerate_cost::{Cost, Model, ProgramCost};

/// For every call of `helper` in example `name`: (most callback calls, the block's cost, the
/// block's cost worked out from the slot prices and the callback's worst case).
fn priced_calls(name: &str, helper: u32) -> Vec<(u64, f64, f64)> {
    let example = load(&examples_dir().join(format!("{name}.o"))).expect("example loads");
    let object = example.object;
    let cfg = Cfg::build(&object.programs[example.entry]).expect("cfg");
    let analysis = Analysis::run(&object, &cfg);
    let model = Model::builtin("x86").expect("shipped model");
    let cost = ProgramCost::with_analysis(&object, &cfg, &analysis, &model).expect("priced");
    let call = Instruction::Call(CallTarget::Helper(helper));
    let mut out = Vec::new();
    for &(slot, insn) in cfg.instructions() {
        if insn != call {
            continue;
        }
        let Some(Fact::Callback {
            function: Some(start),
            max_calls,
        }) = analysis.fact(slot)
        else {
            panic!("slot {slot}: no callback fact");
        };
        let callee = cfg
            .functions()
            .iter()
            .find(|f| f.start == start)
            .expect("callback function")
            .index;
        let worst = cost.function_worst[callee]
            .clone()
            .expect("loop-free callback");
        let block = cfg.block_of(slot).expect("in a block");
        let mut expected = Cost::zero(model.components().len());
        for &(s, i) in cfg.block_instructions(block) {
            if matches!(i, Instruction::Jump { .. }) {
                continue;
            }
            let Some(charge) = cost.slots.get(&s) else {
                continue;
            };
            if s == slot {
                let mut once = charge.cost.clone();
                once.add(&worst);
                expected.add(&Cost(once.0.iter().map(|c| c * max_calls as f64).collect()));
            } else {
                expected.add(&charge.cost);
            }
        }
        out.push((max_calls, cost.blocks[block].cost.0[0], expected.0[0]));
    }
    out
}

fn assert_priced(calls: &[(u64, f64, f64)], max_calls: &[u64]) {
    let mut counts: Vec<u64> = calls.iter().map(|c| c.0).collect();
    counts.sort_unstable();
    assert_eq!(counts, max_calls);
    for &(n, got, expected) in calls {
        assert!(
            (got - expected).abs() <= 1e-6 * expected.abs(),
            "{n} calls: block costs {got}, expected {expected}"
        );
    }
}

#[test]
fn bpf_loop_costs_count_times_its_callback() {
    let calls = priced_calls("xdp_bpf_loop", LOOP);
    assert_priced(&calls, &[6, 1 << 23]);
    // The unknown count dominates: over a million times the six-call walk's callback share.
    let small = calls.iter().find(|c| c.0 == 6).expect("walk").1;
    let large = calls.iter().find(|c| c.0 == 1 << 23).expect("loop").1;
    assert!(large > 1e5 * small, "{large} vs {small}");
}

#[test]
fn for_each_costs_max_entries_times_its_callback() {
    assert_priced(&priced_calls("xdp_for_each", FOR_EACH_MAP_ELEM), &[8, 8]);
}
