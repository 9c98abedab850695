//! How helpers with callbacks are priced, on the examples `xdp_bpf_loop` and `xdp_for_each`
//! with the shipped x86 model (which has no stalls): the block holding such a call costs its
//! other instructions, the helper's own price (`helper.loop`, `helper.for_each_map_elem`) and,
//! per call of the callback the analysis allows, one `call.local` and the callback's worst case
//! — 6 calls for `bpf_loop(MAX_EXT = 6, ...)`, 2^23 for a count read from the packet, 8 for
//! `bpf_for_each_map_elem` over an 8-entry array. A hand-built `bpf_loop` of 4 is priced from the
//! model's numbers directly, and the NFP model refuses it, as the NFP offload does. A run that
//! stops such a loop early is priced with the callback calls it made (`trace::run_cost`).

use linerate_analysis::{Analysis, Fact};
use linerate_bpf::facts::helper::{FOR_EACH_MAP_ELEM, LOOP};
use linerate_bpf::insn::build::*;
use linerate_bpf::insn::encode_all;
use linerate_bpf::insn::{CallTarget, Instruction};
use linerate_bpf::program::Function;
use linerate_bpf::{Object, Program};
use linerate_cfg::Cfg;
use linerate_conformance::examples::{examples_dir, load};
use linerate_cost::{Cost, Item, Model, ProgramCost};

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
            starts: Some((start, end)),
            max_calls,
        }) = analysis.fact(slot)
        else {
            panic!("slot {slot}: no callback fact");
        };
        assert_eq!(start, end, "slot {slot}: one callback");
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
                assert_eq!(charge.items, vec![Item::Helper(helper)]);
                let mut once = model.price(&Item::Callback(helper)).expect("priced").cost;
                once.add(&worst);
                expected.add(&Cost(once.0.iter().map(|c| c * max_calls as f64).collect()));
                expected.add(&charge.cost);
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

/// A program of `main` followed by the function `callback` (which starts at slot 8).
fn with_callback(name: &str, main: &[Instruction], callback: &[Instruction]) -> (Object, Cfg) {
    let (main, callback) = (encode_all(main), encode_all(callback));
    let functions = vec![
        Function {
            name: "main".into(),
            start: 0,
            len: main.len(),
        },
        Function {
            name: "callback".into(),
            start: main.len(),
            len: callback.len(),
        },
    ];
    let program = Program {
        name: "main".into(),
        section: "xdp".into(),
        insns: [main, callback].concat(),
        functions,
        func_info: Vec::new(),
        line_info: Vec::new(),
    };
    let cfg = Cfg::build(&program).expect("cfg");
    (Object::with_programs(name, vec![program], Vec::new()), cfg)
}

/// `main` calling `bpf_loop(4, callback, 0, 0)`, then `r0 = 2; exit`.
fn main_looping_four_times() -> Vec<Instruction> {
    vec![
        mov64(1, 4),
        // The callback starts after this function's 8 slots: 8 - 1 - 1.
        ld_func(2, 6),
        mov64(3, 0),
        mov64(4, 0),
        call_helper(LOOP),
        mov64(0, 2),
        exit(),
    ]
}

/// `bpf_loop(4, callback, 0, 0)` whose callback is `r0 = 0; exit`, then `r0 = 2; exit`.
fn loop_of_four() -> (Object, Cfg) {
    with_callback("loop4", &main_looping_four_times(), &[mov64(0, 0), exit()])
}

#[test]
fn a_loop_of_four_is_priced_from_the_model() {
    let (object, cfg) = loop_of_four();
    assert_eq!(cfg.functions()[1].start, 8, "the callback follows main");
    let model = Model::builtin("x86").expect("shipped model");
    let cost = ProgramCost::new(&object, &cfg, &model).expect("priced");
    let price = |key: &str| {
        let item = linerate_cost::item::universe()
            .into_iter()
            .find(|i| i.to_string() == key)
            .expect("an item");
        model.price(&item).expect("priced").cost.0[0]
    };
    let mov = price("alu64.mov.imm");
    // Main: mov, ld_imm64, 2 movs, the helper and 4 calls of the callback (a
    // `callback.loop`, `mov` and `exit`), then `mov` and `exit`.
    let callback = mov + price("exit");
    let expected = mov
        + price("ld_imm64")
        + 2.0 * mov
        + price("helper.loop")
        + 4.0 * (price("callback.loop") + callback)
        + mov
        + price("exit");
    let got = cost.blocks[0].cost.0[0];
    assert!((got - expected).abs() < 1e-9, "{got} vs {expected}");
}

#[test]
fn the_nfp_offload_refuses_bpf_loop() {
    let (object, cfg) = loop_of_four();
    let model = Model::builtin("nfp").expect("shipped model");
    let err = ProgramCost::new(&object, &cfg, &model).expect_err("refused");
    assert!(
        err.to_string()
            .starts_with("insn 5 of `main` (helper.loop) cannot run on target nfp"),
        "{err}"
    );
}

#[test]
fn a_run_is_priced_with_the_callback_calls_it_made() {
    use linerate_bpf::contents::{MapMode, MapSeed};
    use linerate_bpf::insn::Cond;
    use linerate_cost::trace::run_cost;
    use linerate_vm::drive::run_packets;
    use linerate_vm::VmOptions;

    // `bpf_loop(4, callback, 0, 0)` whose callback stops the loop at index 1: two calls.
    let callback = [
        mov64(0, 0),
        jmp(Cond::Eq, 1, 1, 1),
        exit(),
        mov64(0, 1),
        exit(),
    ];
    let (object, cfg) = with_callback("stop", &main_looping_four_times(), &callback);
    let model = Model::builtin("x86").expect("shipped model");
    let options = VmOptions {
        record_steps: true,
        ..VmOptions::default()
    };
    let runs = run_packets(
        &object,
        &MapSeed::new(),
        options,
        MapMode::Fresh,
        0,
        &[vec![0; 64]],
        &[],
    )
    .expect("runs");
    let steps = runs.outcomes[0].steps.iter().map(|s| (s.program, s.slot));

    // Against the worst-case pricing's 4 calls, the run made two: index 0 exits at once, index 1
    // takes the branch and stops the loop.
    let apart = ProgramCost::for_runs(&object, &cfg, &model).expect("priced");
    let got = run_cost(&apart, &cfg, &model, steps)
        .expect("no tail call")
        .expect("priced")
        .0[0];
    let block = |slot: usize| cfg.block_of(slot).expect("a block");
    let path = |blocks: &[usize]| {
        apart.path_cost(&cfg, &model, blocks).expect("a path").0[0] - model.per_packet().0[0]
    };
    let callback_call = model.price(&Item::Callback(LOOP)).expect("priced").cost.0[0];
    let expected = model.per_packet().0[0]
        + path(&[block(0)])
        + 2.0 * callback_call
        + path(&[block(8), block(10)])
        + path(&[block(8), block(11)]);
    assert!((got - expected).abs() < 1e-9, "{got} vs {expected}");
    let worst = ProgramCost::new(&object, &cfg, &model).expect("priced");
    let worst = worst.worst_cost(&model).expect("loop-free").0[0];
    assert!(
        got < worst,
        "two calls ({got}) cost less than four ({worst})"
    );
}
